//! The effects, one module each: attaching volumes (EC2), block devices and mounts (the only
//! user of `sys-mount`), files (atomic writes, the lock), Route53, the hosts file.

pub mod attach;
pub mod blockdev;
pub mod files;
pub mod hosts;
pub mod intent;
pub mod route53;
