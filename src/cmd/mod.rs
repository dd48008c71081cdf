//! The subcommands, one thin file each: settings → snapshot → steps → report. No command file
//! imports another; the steps they share live in `steps/`.

pub mod apply_channels;
pub mod discover_volumes;
pub mod label_node;
pub mod mount;
pub mod publish_dns;
pub mod render_manifests;
pub mod reset;
pub mod sync;
