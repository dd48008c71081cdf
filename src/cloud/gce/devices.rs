//! Persistent disk device naming: a disk is attached under its own name as device name (as kOps
//! and its older protokube did), and appears at `/dev/disk/by-id/google-<device name>` (udev's
//! link, on SCSI and NVMe alike).

use std::path::PathBuf;

use crate::cloud::{DeviceCandidate, DeviceHint, DeviceNaming};

/// Compute Engine's naming.
#[derive(Clone, Copy, Debug, Default)]
pub struct PersistentDiskDevices;

impl DeviceNaming for PersistentDiskDevices {
    fn free_name(&self, volume_id: &str, in_use: &[String]) -> Option<String> {
        (!in_use.iter().any(|name| name == volume_id)).then(|| volume_id.to_owned())
    }

    fn names(&self) -> String {
        "the disk's own name".to_owned()
    }

    fn name_count(&self) -> usize {
        1
    }

    /// A boot disk is never labelled as an etcd volume; nothing is told by its device name.
    fn is_root_device(&self, _device: &str) -> bool {
        false
    }

    /// The by-id link udev makes from the device name; an NVMe disk's serial does not name
    /// the disk, so the link is what identifies it.
    fn hint(&self, volume_id: &str, requested: &str) -> DeviceHint {
        DeviceHint {
            volume_id: volume_id.to_owned(),
            candidates: vec![DeviceCandidate {
                path: PathBuf::from(format!("/dev/disk/by-id/google-{requested}")),
                nvme_link: false,
            }],
            nvme_serial: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_is_attached_and_found_under_its_own_name() {
        let devices = PersistentDiskDevices;
        assert_eq!(
            devices.free_name("a-etcd-main-ha", &[]).as_deref(),
            Some("a-etcd-main-ha")
        );
        assert_eq!(
            devices.free_name("a-etcd-main-ha", &["a-etcd-main-ha".to_owned()]),
            None
        );
        let hint = devices.hint("a-etcd-main-ha", "a-etcd-main-ha");
        assert_eq!(
            hint.candidates[0].path,
            PathBuf::from("/dev/disk/by-id/google-a-etcd-main-ha")
        );
        assert_eq!(hint.nvme_serial, None);
    }
}
