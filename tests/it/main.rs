//! protokube's integration tests, one test crate: the real binary (or the library's `run_with`)
//! against moto, real loop devices, namespaces, real etcd and kOps' own files, one module per
//! area, sharing `support` (the world builder, the emulators, the typed report). Tests that need
//! root (loop devices, mounts, namespaces) are `#[ignore]`d with that reason: a non-root
//! `cargo test` passes without them, and `scripts/test` (CI) runs them all as root.

// Tests set up and read files as they please; the product reaches the node through `host`.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod support;

mod architecture;
mod aws_faults;
mod blank_proof;
mod boot;
mod cli;
mod cluster;
mod containers;
mod discover_volumes;
mod dns_names;
mod dry_run;
mod egress_proxy;
mod failed_runs;
mod fleet;
mod gce;
mod gce_faults;
mod gce_fidelity;
mod generated_files;
mod gossip;
mod gossip_cluster;
mod host_paths;
mod hosts_file;
mod iam;
mod imds;
mod kops_coexist;
mod kops_nodes;
mod kops_unit_lines;
mod kops_versions;
mod legacy;
mod lifecycle;
mod member_clouds;
mod mount;
mod mount_double;
mod node_faults;
mod operators;
mod packaging;
mod properties;
mod publish_dns;
mod quiet;
mod render_golden;
mod render_manifests;
mod repeated_faults;
mod sync;
mod systemd;
mod validation;
