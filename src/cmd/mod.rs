//! The subcommands, one file each: its clap `Args` and its `run`.

pub mod discover_volumes;
pub mod mount;
pub mod publish_dns;
pub mod render_manifests;
pub mod sync;
