//! Planning, without I/O: from the settings and the snapshot's facts to changes as data. Every
//! domain rule lives here, with unit tests; `apply/` makes the changes.

pub mod blank;
pub mod dns;
pub mod etcd_owner;
pub mod files;
pub mod kops;
pub mod manifests;
pub mod mounts;
pub mod reset;
pub mod state;
pub mod static_pods;
pub mod verify;
pub mod volumes;
