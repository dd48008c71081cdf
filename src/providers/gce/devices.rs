//! Persistent disk device naming: a disk is attached under its own name as device name (as kOps
//! and its older protokube did), and appears at `/dev/disk/by-id/google-<device name>` (the
//! link of Google's guest udev rules, on SCSI and NVMe alike) or
//! `/dev/disk/by-id/scsi-0Google_PersistentDisk_<device name>` (systemd's stock rules, on images
//! without Google's guest environment).

use std::path::PathBuf;

use crate::cloud::{DeviceCandidate, DeviceHint, DeviceNaming};

/// Compute Engine's naming.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PersistentDiskDevices;

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

    /// Nothing is told by a device name (a boot disk is `persistent-disk-0` from kOps, the
    /// instance's name from gcloud): the instance says which disk it boots from, and the
    /// attachment carries it.
    fn is_root_device(&self, _device: &str) -> bool {
        false
    }

    /// The by-id links udev makes from the attachment's device name (`requested`: the real
    /// one, a disk attached by hand keeps its own); an NVMe disk's serial does not name the
    /// disk, so the link is what identifies it.
    fn hint(&self, volume_id: &str, requested: &str) -> DeviceHint {
        DeviceHint {
            volume_id: volume_id.to_owned(),
            candidates: [
                format!("/dev/disk/by-id/google-{requested}"),
                format!("/dev/disk/by-id/scsi-0Google_PersistentDisk_{requested}"),
            ]
            .into_iter()
            .map(|path| DeviceCandidate {
                path: PathBuf::from(path),
                nvme_link: false,
            })
            .collect(),
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
        assert_eq!(
            hint.candidates[1].path,
            PathBuf::from("/dev/disk/by-id/scsi-0Google_PersistentDisk_a-etcd-main-ha")
        );
        assert_eq!(hint.nvme_serial, None);
    }
}
