//! The effects that follow a plan through a seam: attaching volumes (EC2), the record of a format
//! in progress (the node's files), Route53's names.

pub mod attach;
pub mod intent;
pub mod route53;
