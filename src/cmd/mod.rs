//! The subcommands that end, one thin file each: settings → snapshot → steps → report (`gossip`,
//! which does not end, lives in `serve`). No command file
//! imports another; the steps they share live in `steps/`.

pub(crate) mod apply_channels;
pub(crate) mod discover_volumes;
pub(crate) mod label_node;
pub(crate) mod mount;
pub(crate) mod publish_dns;
pub(crate) mod render_manifests;
pub(crate) mod reset;
pub(crate) mod sync;
