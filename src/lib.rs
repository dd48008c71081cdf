//! protokube: brings a Kubernetes control plane up on cloud machines before the Kubernetes API
//! exists. This crate holds everything; `main.rs` only parses, sets up logging, runs and exits.
//! This file holds the modules and the doors only.
//!
//! A run (`run`): `cli` parses the flags, `settings` validates them (and what derives from them)
//! before anything else, a command in `cmd` builds the `snapshot` of what the run knows and runs
//! its `steps`, each planning in `plan` (pure) and applying through `apply` (effects) against the
//! `cloud` traits; the `report` collects what changed. What does not end — the old daemon's loop
//! and the gossip member — lives in `serve`.

#![warn(unreachable_pub)]

mod apply;
mod cli;
mod cloud;
mod cmd;
mod dns;
mod error;
mod etcd;
mod flags;
mod gossip;
mod host;
mod identity;
mod kube;
mod logging;
mod metrics;
mod names;
mod paths;
mod plan;
mod providers;
mod proxy;
mod report;
mod run;
mod serve;
mod settings;
mod snapshot;
mod spec;
mod state;
mod steps;
mod version;
mod wait;

// The doors. Everything else is the crate's own (`pub(crate)` or narrower; `unreachable_pub`
// keeps it so): what the binary needs, and `testing` for this repository's integration tests.
pub use cli::{scan_args, usage_error_line, Cli, Command};
pub use error::ExitCode;
pub use host::linux::stderr_is_journal;
pub use logging::{init as init_logging, print_error_line, set_stderr_is_journal};
pub use report::{OutputFormat, Report, ReportError};
pub use run::{conclude, error_line, exit_code, once as run_once, record_error};
pub use serve::signals::INTERVAL as DAEMON_INTERVAL;
pub use serve::{gossip as serve_gossip, legacy as serve_legacy};
pub use version::BuildInfo;

/// What this repository's integration tests (`tests/it`) reach beyond the binary: the traits
/// their cloud doubles implement, and the pure parsers and renderers they test with arbitrary
/// input and golden files. Not an interface for anyone else; it changes with the tests.
#[doc(hidden)]
pub mod testing {
    pub use crate::cloud::tags::KopsTags;
    pub use crate::cloud::{
        AttachOutcome, AttachmentState, Cloud, CloudClients, CloudVolume, DeviceNaming,
        InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem, MetadataWords, Placement,
        VolumeApi, VolumeAttachment, VolumeQuery, VolumeState,
    };
    pub use crate::dns::zoned::api::{ZoneApi, ZoneService};
    pub use crate::error::NotReady;
    pub use crate::etcd::{parse_etcd_tag, EtcdMembership};
    pub use crate::host::linux::LinuxHost;
    pub use crate::names::is_dns1123_label;
    pub use crate::plan::dns::hosts_block::{
        managed_records, update_hosts, HostRecords, GUARD_BEGIN, GUARD_END,
    };
    pub use crate::plan::manifests::etcd::{EtcdNode, EtcdOptions, EtcdPodParams, EtcdTls};
    pub use crate::plan::manifests::flags::{format_go_duration, parse_go_duration, FlagTable};
    pub use crate::plan::manifests::templates::{
        compile_templates, quote_yaml, render, validate_pod, BUILTIN_TEMPLATES,
    };
    pub use crate::plan::manifests::{render_all, Manifest, RenderInputs};
    pub use crate::plan::mounts::parse_mountinfo;
    pub use crate::plan::state::MountedVolume;
    pub use crate::providers::aws::devices::EbsDevices;
    pub use crate::report::ChangeKind;
    pub use crate::settings::read_spec;
    pub use crate::spec::{ClusterDocument, EtcdClusterSpec};

    /// Bytes of kOps' gossip wire as a stranger on the network would send them.
    pub mod gossip {
        use std::net::SocketAddr;

        use crate::gossip::memberlist::streams::PushPull;
        use crate::gossip::memberlist::table::Table;
        use crate::gossip::wire::memberlist::{packet, stream, MessageType};
        use crate::gossip::wire::protobuf::{encode_part, FullState, KvRecord, KvState};

        /// kOps' `KVState` of `records`: key, value (`None`: a deletion), version.
        fn state(records: &[(&str, Option<&str>, u64)]) -> KvState {
            let mut state = KvState::default();
            for (key, value, version) in records {
                state.records.insert(
                    (*key).to_owned(),
                    KvRecord {
                        data: value.unwrap_or_default().as_bytes().to_vec(),
                        tombstone: value.is_none(),
                        version: *version,
                    },
                );
            }
            state
        }

        /// One memberlist datagram: a user message carrying kOps' `Part{"dns", KVState}`.
        pub fn memberlist_user_packet(records: &[(&str, Option<&str>, u64)]) -> Vec<u8> {
            let mut message = vec![MessageType::User as u8];
            message.extend(encode_part("dns", &state(records).encode()));
            packet(&[message]).expect("one message fits a packet")
        }

        /// A memberlist push/pull stream (compressed, as kOps' memberlist sends it) from
        /// `sender` at `from`, telling of `members` alive at their addresses.
        pub fn memberlist_push_pull(
            sender: &str,
            from: SocketAddr,
            members: &[(String, SocketAddr)],
        ) -> Vec<u8> {
            let me = Table::new(sender, from).push_nodes().remove(0);
            let mut nodes = vec![me.clone()];
            for (name, addr) in members {
                let mut node = me.clone();
                node.name.clone_from(name);
                node.addr = serde_bytes::ByteBuf::from(match addr.ip() {
                    std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
                    std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
                });
                node.port = addr.port();
                nodes.push(node);
            }
            let message = PushPull {
                join: false,
                nodes,
                state: FullState::default(),
            };
            stream(&message.encode().expect("a push/pull encodes")).expect("a stream encodes")
        }
    }

    /// Runs the command line `cli` on this machine, as the binary does, against a test's
    /// `cloud` and DNS service `zones`.
    pub async fn run_on_this_node(
        cli: &crate::Cli,
        cloud: &dyn Cloud,
        zones: &dyn ZoneService,
        report: &mut crate::Report,
    ) -> anyhow::Result<()> {
        let settings = crate::settings::Settings::resolve(cli.flags()?, &LinuxHost)?;
        let places = crate::dns::Places {
            zones,
            member: None,
        };
        crate::run::run_with(&cli.to_run(), &settings, cloud, places, &LinuxHost, report).await
    }
}
