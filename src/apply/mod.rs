//! The effects that follow a plan through a seam: attaching volumes (the cloud), the record of a
//! format in progress (the node's files). Names go through `dns/`.

pub(crate) mod attach;
pub(crate) mod intent;
