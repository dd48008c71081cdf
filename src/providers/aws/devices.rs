//! EBS device naming: the names protokube requests for etcd volumes (`/dev/xvdu` … `/dev/xvdz`),
//! the root device's names, and where an attached volume's block device appears (the NVMe by-id
//! link on Nitro, named after the volume, else the requested name or its `sd` alias).

use std::path::PathBuf;

use crate::cloud::{DeviceCandidate, DeviceHint, DeviceNaming};

/// Device names under which a volume is the instance's root device; never touched (kops#3167).
const ROOT_DEVICE_NAMES: &[&str] = &["/dev/sda", "/dev/sda1", "/dev/xvda", "/dev/xvda1"];

/// Device names requested for etcd volumes, in order (kOps listed `xvdx` twice and skipped
/// `xvdw`; all six are used here).
const DEVICE_NAMES: &[&str] = &[
    "/dev/xvdu",
    "/dev/xvdv",
    "/dev/xvdw",
    "/dev/xvdx",
    "/dev/xvdy",
    "/dev/xvdz",
];

/// EBS's naming.
#[derive(Clone, Copy, Debug, Default)]
pub struct EbsDevices;

/// `/dev/xvdu`, `/dev/sdu` and `xvdu` all name slot `u`.
fn device_slot(name: &str) -> &str {
    let base = name.strip_prefix("/dev/").unwrap_or(name);
    base.strip_prefix("xvd")
        .or_else(|| base.strip_prefix("sd"))
        .unwrap_or(base)
}

impl DeviceNaming for EbsDevices {
    /// `in_use` holds names as EC2 reports them; `/dev/sdX` and `/dev/xvdX` name the same slot.
    fn free_name(&self, _volume_id: &str, in_use: &[String]) -> Option<String> {
        let used: Vec<&str> = in_use.iter().map(|n| device_slot(n)).collect();
        DEVICE_NAMES
            .iter()
            .find(|name| !used.contains(&device_slot(name)))
            .map(|name| (*name).to_owned())
    }

    fn names(&self) -> String {
        format!(
            "{} to {}",
            DEVICE_NAMES[0],
            DEVICE_NAMES[DEVICE_NAMES.len() - 1]
        )
    }

    fn name_count(&self) -> usize {
        DEVICE_NAMES.len()
    }

    fn is_root_device(&self, device: &str) -> bool {
        ROOT_DEVICE_NAMES.contains(&device)
    }

    /// The NVMe by-id link (kops#4844), the requested name, its `sd*` alias; an NVMe namespace
    /// carries the volume id without its `-` as its serial.
    fn hint(&self, volume_id: &str, requested: &str) -> DeviceHint {
        let serial = volume_id.replace('-', "");
        let mut candidates = vec![DeviceCandidate {
            path: PathBuf::from(format!(
                "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{serial}"
            )),
            nvme_link: true,
        }];
        candidates.push(DeviceCandidate {
            path: PathBuf::from(requested),
            nvme_link: false,
        });
        if let Some(slot) = requested.strip_prefix("/dev/xvd") {
            candidates.push(DeviceCandidate {
                path: PathBuf::from(format!("/dev/sd{slot}")),
                nvme_link: false,
            });
        }
        DeviceHint {
            volume_id: volume_id.to_owned(),
            candidates,
            nvme_serial: Some(serial),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(in_use: &[&str]) -> Option<String> {
        let in_use: Vec<String> = in_use.iter().map(|n| (*n).to_owned()).collect();
        EbsDevices.free_name("vol-1", &in_use)
    }

    #[test]
    fn device_names_skip_slots_in_use() {
        assert_eq!(free(&[]).as_deref(), Some("/dev/xvdu"));
        assert_eq!(
            free(&["/dev/sda1", "/dev/xvdu"]).as_deref(),
            Some("/dev/xvdv")
        );
        assert_eq!(
            free(&["/dev/sdu", "/dev/xvdv"]).as_deref(),
            Some("/dev/xvdw")
        );
        assert_eq!(free(DEVICE_NAMES), None);
        assert_eq!(EbsDevices.name_count(), 6);
        assert_eq!(EbsDevices.names(), "/dev/xvdu to /dev/xvdz");
    }

    #[test]
    fn root_devices_are_known_by_name() {
        assert!(EbsDevices.is_root_device("/dev/xvda"));
        assert!(EbsDevices.is_root_device("/dev/sda1"));
        assert!(!EbsDevices.is_root_device("/dev/xvdu"));
    }

    #[test]
    fn device_candidates_in_kops_order() {
        let hint = EbsDevices.hint("vol-0abc", "/dev/xvdu");
        let names: Vec<_> = hint
            .candidates
            .iter()
            .map(|c| (c.path.display().to_string(), c.nvme_link))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0abc".to_owned(),
                    true
                ),
                ("/dev/xvdu".to_owned(), false),
                ("/dev/sdu".to_owned(), false),
            ]
        );
        assert_eq!(hint.nvme_serial.as_deref(), Some("vol0abc"));
    }
}
