//! Planning, without I/O: from the settings and the snapshot's facts to changes as data. Every
//! domain rule lives here, with unit tests; `apply/` makes the changes.

pub(crate) mod blank;
pub(crate) mod dns;
pub(crate) mod etcd_owner;
pub(crate) mod files;
pub(crate) mod kops;
pub(crate) mod manifests;
pub(crate) mod mounts;
pub(crate) mod reset;
pub(crate) mod state;
pub(crate) mod static_pods;
pub(crate) mod verify;
pub(crate) mod volumes;
