//! Mounts and devices as the host shows them: the mount table, where a volume's device stands
//! in it, which device a volume's paths lead to (an NVMe namespace must carry the volume's
//! serial; partitions are refused), the report entries of a mount decision, and the state file.
//! Pure.

use std::path::Path;

use anyhow::{Context as _, Result};

use crate::cloud::{DeviceCandidate, DeviceHint};
use crate::plan::blank::{DeviceDecision, FormatReason};
use crate::plan::files::{plan_file, FileChange, FileFact};
use crate::plan::state::State;
use crate::report::{Action, Change, ChangeKind};

/// One line of `/proc/self/mountinfo`, the parts we use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// `(major, minor)` of the mounted device.
    pub(crate) devno: (u32, u32),
    pub(crate) mountpoint: String,
    pub(crate) fstype: String,
    pub(crate) source: String,
    /// In a peer group (`shared:N`): mounts below it propagate to the group's other members.
    pub(crate) shared: bool,
}

/// Undoes the octal escapes (`\040` for space, …) the kernel uses in mountinfo fields.
fn unescape_mountinfo(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|b| (b'0'..=b'7').contains(b)) {
                let value = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                if let Ok(byte) = u8::try_from(value) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses the text of `/proc/self/mountinfo`; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let (major, minor) = fields.get(2)?.split_once(':')?;
            let mountpoint = fields.get(4)?;
            let mut rest = after.split(' ');
            let fstype = rest.next()?;
            let source = rest.next()?;
            Some(MountEntry {
                devno: (major.parse().ok()?, minor.parse().ok()?),
                mountpoint: unescape_mountinfo(mountpoint),
                fstype: unescape_mountinfo(fstype),
                source: unescape_mountinfo(source),
                shared: fields.iter().skip(6).any(|f| f.starts_with("shared:")),
            })
        })
        .collect()
}

/// What is mounted at `mountpoint` (the last mount wins, as it hides earlier ones).
pub(crate) fn mounted_at<'a>(table: &'a [MountEntry], mountpoint: &Path) -> Option<&'a MountEntry> {
    let wanted = mountpoint.to_string_lossy();
    table.iter().rev().find(|m| m.mountpoint == wanted)
}

/// The mount `path` lies on: the one with the longest mount point that contains it (of mounts
/// stacked there, the last, which hides the others).
pub(crate) fn mount_containing<'a>(table: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    table
        .iter()
        .filter(|m| path.starts_with(&m.mountpoint))
        .max_by_key(|m| m.mountpoint.len())
}

/// Where the device `devno` stands relative to `mountpoint` in the mount `table`.
pub(crate) fn mount_state(
    table: &[MountEntry],
    mountpoint: &Path,
    devno: (u32, u32),
) -> MountState {
    if let Some(entry) = mounted_at(table, mountpoint) {
        return if entry.devno == devno {
            MountState::MountedHere
        } else {
            MountState::MountPointTaken {
                source: entry.source.clone(),
                devno: entry.devno,
            }
        };
    }
    match table.iter().find(|e| e.devno == devno) {
        Some(elsewhere) => MountState::MountedElsewhere(elsewhere.mountpoint.clone()),
        None => MountState::NotMounted,
    }
}

/// Where the volume's device stands relative to the mount table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MountState {
    /// Mounted at its mount point from this very device.
    MountedHere,
    /// Its mount point holds another device (`source`, `major:minor`).
    MountPointTaken { source: String, devno: (u32, u32) },
    /// The device is mounted somewhere else.
    MountedElsewhere(String),
    /// Not mounted anywhere.
    NotMounted,
}

/// The refusal the mount table alone justifies, if any.
pub(crate) fn refusal_from_mounts(state: &MountState, mountpoint: &str) -> Option<String> {
    match state {
        MountState::MountPointTaken { source, devno } => Some(format!(
            "`{mountpoint}` is already mounted from `{source}` (device {}:{}), not from this \
             volume's device; unmount it and run again",
            devno.0, devno.1
        )),
        MountState::MountedElsewhere(elsewhere) => Some(format!(
            "the device is already mounted at `{elsewhere}`; unmount it so protokube can mount \
             it at `{mountpoint}`"
        )),
        MountState::MountedHere | MountState::NotMounted => None,
    }
}

/// What a device node is, by its kernel name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeviceKind {
    /// An NVMe namespace (`nvme1n1`): a cloud volume on NVMe; its serial may name the volume.
    NvmeNamespace,
    /// A partition (`nvme1n1p1`, `sda2`, `vdb1`): never a volume as attached.
    Partition,
    /// A whole disk of another kind (`sdu`, `vdb`, a loop device).
    Disk,
}

/// The kind of the device named `name` (the last component of its resolved path): NVMe
/// namespaces and their partitions by their `nvme<c>n<n>[p<p>]` form; a disk of the `…d<letters>`
/// families (`sd`, `vd`, `hd` and the like) followed by digits is a partition.
pub(crate) fn device_kind(name: &str) -> DeviceKind {
    let digits_then = |s: &str, sep: char| -> Option<(bool, bool)> {
        let (a, b) = s.split_once(sep)?;
        let all = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
        Some((all(a), all(b)))
    };
    if let Some(rest) = name.strip_prefix("nvme") {
        if let Some((controller_ns, partition)) = rest.split_once('p') {
            if digits_then(controller_ns, 'n') == Some((true, true))
                && partition.bytes().all(|c| c.is_ascii_digit())
                && !partition.is_empty()
            {
                return DeviceKind::Partition;
            }
        }
        if digits_then(rest, 'n') == Some((true, true)) {
            return DeviceKind::NvmeNamespace;
        }
    }
    let letters = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let disk_family = letters
        .rsplit_once('d')
        .is_some_and(|(_, slot)| !slot.is_empty() && slot.bytes().all(|c| c.is_ascii_lowercase()));
    if disk_family && letters.len() < name.len() && letters.bytes().all(|c| c.is_ascii_lowercase())
    {
        return DeviceKind::Partition;
    }
    DeviceKind::Disk
}

/// Checks that the device named `name` may be the block device of the volume `hint` describes,
/// found through `found_by` (one of its candidates). The serial is the NVMe controller's
/// (`None` when sysfs has none).
pub(crate) fn check_device(
    hint: &DeviceHint,
    name: &str,
    found_by: &DeviceCandidate,
    serial: Option<&str>,
) -> Result<(), String> {
    let volume_id = &hint.volume_id;
    let kind = device_kind(name);
    if kind == DeviceKind::Partition {
        return Err(format!(
            "`{name}` is a partition, not a whole volume; refusing to touch it"
        ));
    }
    if found_by.nvme_link && kind != DeviceKind::NvmeNamespace {
        return Err(format!(
            "the NVMe by-id link of volume `{volume_id}` leads to `{name}`, which is not an NVMe \
             namespace; refusing to touch it (a stale or planted link?)"
        ));
    }
    if let (DeviceKind::NvmeNamespace, Some(expected)) = (&kind, &hint.nvme_serial) {
        match serial.map(str::trim) {
            Some(serial) if serial == expected => {}
            Some(serial) => {
                return Err(format!(
                    "device `{name}` has NVMe serial `{}`, but volume `{volume_id}` has \
                     `{expected}`; refusing to touch it (stale /dev/disk/by-id link?)",
                    serial.escape_debug()
                ))
            }
            None => {
                return Err(format!(
                    "device `{name}` is an NVMe namespace but its serial cannot be read from sysfs \
                     (/sys/block/{name}/device/serial); refusing to touch it without knowing it is \
                     volume `{volume_id}`"
                ))
            }
        }
    }
    Ok(())
}

/// One action of the mount step on a device that is not mounted, in the order made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeviceAction {
    /// `mkfs.ext4` with a new UUID (recorded first), then the volume's formatted tag.
    Format(FormatReason),
    /// `fsck -a` the existing ext4; `finish`: it is protokube's interrupted format, which a clean
    /// check finishes (the tag) and a failed one formats again.
    Check { uuid: Option<String>, finish: bool },
    /// Mount it at its mount point.
    Mount,
    /// Grow the mounted ext4 to its device's size, online (the kernel's journal keeps a grow
    /// that is cut short safe); a failure is a warning that never unmounts it.
    GrowOnline { from: u64, to: u64 },
}

/// The actions a device decision makes, in order (the one plan of both the dry run and the
/// run); `grow` is what an existing filesystem its device outgrew needs, once mounted.
pub(crate) fn plan_device(decision: &DeviceDecision, grow: Grow) -> Vec<DeviceAction> {
    let mut actions = Vec::new();
    match decision {
        DeviceDecision::Refuse(_) => return actions,
        DeviceDecision::Format(reason) => actions.push(DeviceAction::Format(reason.clone())),
        DeviceDecision::CheckAndMount { uuid, unfinished } => actions.push(DeviceAction::Check {
            uuid: uuid.clone(),
            finish: *unfinished,
        }),
    }
    actions.push(DeviceAction::Mount);
    if let (DeviceDecision::CheckAndMount { .. }, Grow::Online { from, to }) = (decision, grow) {
        actions.push(DeviceAction::GrowOnline { from, to });
    }
    actions
}

impl DeviceAction {
    /// The report entry this action makes when it is done as planned (a check that finishes
    /// nothing has none).
    pub(crate) fn change(&self, volume_id: &str, mountpoint: &str, device: &str) -> Option<Change> {
        match self {
            Self::Format(reason) => Some(format_change(volume_id, reason, device)),
            Self::Check { uuid, finish } => {
                finish.then(|| finish_change(volume_id, uuid.as_deref().unwrap_or_default()))
            }
            Self::Mount => Some(mount_change(
                Action::Mount,
                mountpoint,
                format!("{volume_id} from {device}"),
            )),
            Self::GrowOnline { from, to } => Some(grow_change(volume_id, device, *from, *to)),
        }
    }
}

/// The report entries of a device decision, as its plan makes them.
pub(crate) fn decision_changes(
    decision: &DeviceDecision,
    volume_id: &str,
    mountpoint: &str,
    device: &str,
) -> Vec<Change> {
    plan_device(decision, Grow::No)
        .iter()
        .filter_map(|action| action.change(volume_id, mountpoint, device))
        .collect()
}

/// The report entry of a mount point.
pub(crate) fn mount_change(action: Action, mountpoint: &str, detail: String) -> Change {
    Change {
        kind: ChangeKind::Mount,
        target: mountpoint.to_owned(),
        action,
        detail,
    }
}

/// The report entry of a format, targeted by the volume id (a device path may not exist yet).
pub(crate) fn format_change(volume_id: &str, reason: &FormatReason, device: &str) -> Change {
    Change {
        kind: ChangeKind::Filesystem,
        target: volume_id.to_owned(),
        action: Action::Format,
        detail: format!(
            "ext4 on {} device {device}; the volume is then tagged `{}`",
            reason.describe(),
            crate::plan::blank::FORMATTED_TAG
        ),
    }
}

/// The report entry of finishing an interrupted format: the volume gets its formatted tag.
pub(crate) fn finish_change(volume_id: &str, uuid: &str) -> Change {
    Change {
        kind: ChangeKind::Volume,
        target: volume_id.to_owned(),
        action: Action::Update,
        detail: format!(
            "tag `{}={uuid}` (finishing a format an earlier run began)",
            crate::plan::blank::FORMATTED_TAG
        ),
    }
}

/// The change that writes `state` to the state file at `path` (mode 0644) given what is there
/// now. An empty state and no file are the same: nothing is created for it.
pub(crate) fn state_file_change(
    state: &State,
    path: &Path,
    current: &FileFact,
) -> Result<FileChange> {
    let text = String::from_utf8(state.to_bytes()?).context("serializing the state")?;
    let mut change = plan_file(path, current, &text, 0o644);
    if state.volumes.is_empty() && *current == FileFact::Missing {
        change.action = Action::Unchanged;
    }
    change.detail = format!("{} mounted volume(s)", state.volumes.len());
    Ok(change)
}

/// A filesystem is grown when its device is larger by at least this much: less could be
/// a partial last block group `resize2fs` would not add, and the run would never converge.
pub(crate) const GROW_MIN_BYTES: u64 = 16 << 20;

/// The size in bytes of the ext2/3/4 filesystem whose superblock (the 1 024 bytes at offset
/// 1 024) is `superblock`; `None` when it is not one.
pub(crate) fn ext4_size(superblock: &[u8]) -> Option<u64> {
    let u32_at = |at: usize| -> Option<u64> {
        let bytes: [u8; 4] = superblock.get(at..at + 4)?.try_into().ok()?;
        Some(u64::from(u32::from_le_bytes(bytes)))
    };
    let magic = superblock.get(0x38..0x3a)?;
    if magic != [0x53, 0xef] {
        return None;
    }
    let log_block_size = u32_at(0x18)?;
    if log_block_size > 6 {
        return None;
    }
    let block_size = 1024u64 << log_block_size;
    const INCOMPAT_64BIT: u64 = 0x80;
    let mut blocks = u32_at(0x4)?;
    if u32_at(0x60)? & INCOMPAT_64BIT != 0 {
        blocks |= u32_at(0x150)? << 32;
    }
    blocks.checked_mul(block_size)
}

/// What growing a filesystem to its device's size takes. A filesystem is grown only online,
/// once mounted (as Kubernetes and etcd-manager do): an offline `resize2fs` cut short (a
/// timeout, a stop, an OOM kill) can leave a half-grown ext4 that `fsck -a` then refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grow {
    /// It fills its device.
    No,
    /// `resize2fs` on the mounted filesystem (the kernel grows it).
    Online { from: u64, to: u64 },
    /// This process may not grow it online (no `CAP_SYS_RESOURCE`): a warning.
    Refused { from: u64, to: u64 },
}

/// Whether and how a filesystem of `fs_bytes` on a device of `device_bytes` is grown. Pure.
pub(crate) fn plan_grow(fs_bytes: u64, device_bytes: u64, may_grow_online: bool) -> Grow {
    if device_bytes < fs_bytes.saturating_add(GROW_MIN_BYTES) {
        return Grow::No;
    }
    let (from, to) = (fs_bytes, device_bytes);
    if may_grow_online {
        Grow::Online { from, to }
    } else {
        Grow::Refused { from, to }
    }
}

/// The report entry of a grow, targeted by the volume id.
pub(crate) fn grow_change(volume_id: &str, device: &str, from: u64, to: u64) -> Change {
    Change {
        kind: ChangeKind::Filesystem,
        target: volume_id.to_owned(),
        action: Action::Resize,
        detail: format!(
            "ext4 on {device} grown online from {} MiB to {} MiB",
            from >> 20,
            to >> 20
        ),
    }
}

/// The warning for a filesystem smaller than its device that is not grown now: `why` (no
/// `CAP_SYS_RESOURCE`, or the grow's own error). etcd runs on it meanwhile.
pub(crate) fn grow_warning(volume_id: &str, device: &str, from: u64, to: u64, why: &str) -> String {
    format!(
        "the filesystem of volume `{volume_id}` on `{device}` ({} MiB) is smaller than its \
         device ({} MiB) and was not grown: {why}; it stays mounted as it is, and the next run \
         tries again",
        from >> 20,
        to >> 20
    )
}

/// Why a grow is refused without `CAP_SYS_RESOURCE`.
pub(crate) const NO_CAP_SYS_RESOURCE: &str =
    "growing a mounted ext4 needs CAP_SYS_RESOURCE, which protokube does not have here (run it \
     as root on the host)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_sizes_come_from_the_superblock() {
        let mut sb = vec![0u8; 1024];
        sb[0x38] = 0x53;
        sb[0x39] = 0xef;
        sb[0x18..0x1c].copy_from_slice(&2u32.to_le_bytes()); // 4 KiB blocks
        sb[0x4..0x8].copy_from_slice(&65_536u32.to_le_bytes());
        assert_eq!(ext4_size(&sb), Some(256 << 20));
        // 64-bit: the high half counts.
        sb[0x60..0x64].copy_from_slice(&0x80u32.to_le_bytes());
        sb[0x150..0x154].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(ext4_size(&sb), Some(((1u64 << 32) + 65_536) * 4096));
        sb[0x38] = 0;
        assert_eq!(ext4_size(&sb), None);
        assert_eq!(ext4_size(&[]), None);
    }

    #[test]
    fn grows_only_what_its_device_outgrew_and_only_where_it_may() {
        let mib = 1u64 << 20;
        assert_eq!(plan_grow(256 * mib, 256 * mib, true), Grow::No);
        assert_eq!(plan_grow(256 * mib, 260 * mib, true), Grow::No);
        let (from, to) = (256 * mib, 512 * mib);
        assert_eq!(plan_grow(from, to, true), Grow::Online { from, to });
        assert_eq!(plan_grow(from, to, false), Grow::Refused { from, to });
        // A device smaller than its filesystem is never "grown".
        assert_eq!(plan_grow(to, from, true), Grow::No);
        // Only after mounting, never before.
        let check = DeviceDecision::CheckAndMount {
            uuid: None,
            unfinished: false,
        };
        assert_eq!(
            plan_device(&check, Grow::Online { from, to }),
            [
                DeviceAction::Check {
                    uuid: None,
                    finish: false
                },
                DeviceAction::Mount,
                DeviceAction::GrowOnline { from, to }
            ]
        );
    }

    const SAMPLE: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
36 22 7:3 / /tmp/r\\040x/mnt/master-vol-1 rw,relatime shared:9 - ext4 /dev/loop3 rw
37 22 7:4 / /tmp/r/mnt/master-vol-2 rw - ext4 /dev/loop4 rw
38 22 7:5 / /tmp/r/mnt/master-vol-2 rw - ext4 /dev/loop5 rw
garbage line
";

    #[test]
    fn parses_mountinfo_with_escapes_and_stacked_mounts() {
        let table = parse_mountinfo(SAMPLE);
        assert_eq!(table.len(), 4);
        assert_eq!(table[1].devno, (7, 3));
        let entry = mounted_at(&table, Path::new("/tmp/r x/mnt/master-vol-1")).unwrap();
        assert_eq!(entry.source, "/dev/loop3");
        assert_eq!(entry.fstype, "ext4");
        let entry = mounted_at(&table, Path::new("/tmp/r/mnt/master-vol-2")).unwrap();
        assert_eq!(entry.source, "/dev/loop5");
        assert!(mounted_at(&table, Path::new("/tmp/r/mnt/master-vol-3")).is_none());
    }

    #[test]
    fn propagation_and_the_containing_mount() {
        let table = parse_mountinfo(SAMPLE);
        let root = mount_containing(&table, Path::new("/var/lib/x")).unwrap();
        assert_eq!((root.mountpoint.as_str(), root.shared), ("/", true));
        let inner = mount_containing(&table, Path::new("/tmp/r/mnt/master-vol-2/k8s.io")).unwrap();
        assert_eq!((inner.devno, inner.shared), ((7, 5), false));
        assert!(table[1].shared);
    }

    #[test]
    fn mount_states_from_the_table() {
        let table = parse_mountinfo(SAMPLE);
        let mp = Path::new("/tmp/r/mnt/master-vol-2");
        assert_eq!(mount_state(&table, mp, (7, 5)), MountState::MountedHere);
        assert!(matches!(
            mount_state(&table, mp, (7, 9)),
            MountState::MountPointTaken { devno: (7, 5), .. }
        ));
        assert_eq!(
            mount_state(&table, Path::new("/tmp/r/mnt/master-vol-9"), (7, 3)),
            MountState::MountedElsewhere("/tmp/r x/mnt/master-vol-1".into())
        );
        assert_eq!(
            mount_state(&table, Path::new("/tmp/r/mnt/master-vol-9"), (7, 8)),
            MountState::NotMounted
        );
        assert!(
            refusal_from_mounts(&MountState::MountedElsewhere("/x".into()), "/m")
                .unwrap()
                .contains("`/x`")
        );
        assert!(refusal_from_mounts(&MountState::NotMounted, "/m").is_none());
    }

    #[test]
    fn device_kinds_by_name() {
        for (name, kind) in [
            ("nvme1n1", DeviceKind::NvmeNamespace),
            ("nvme12n3", DeviceKind::NvmeNamespace),
            ("nvme1n1p1", DeviceKind::Partition),
            ("xvdu1", DeviceKind::Partition),
            ("sda2", DeviceKind::Partition),
            ("vdb1", DeviceKind::Partition),
            ("hdc12", DeviceKind::Partition),
            ("xvdu", DeviceKind::Disk),
            ("sdu", DeviceKind::Disk),
            ("loop3", DeviceKind::Disk),
            ("md0", DeviceKind::Disk),
            ("dm-1", DeviceKind::Disk),
            ("nvme", DeviceKind::Disk),
            ("nvme1", DeviceKind::Disk),
        ] {
            assert_eq!(device_kind(name), kind, "{name}");
        }
    }

    #[test]
    fn nvme_devices_must_carry_the_volumes_serial() {
        let hint = DeviceHint {
            volume_id: "vol-0abc".into(),
            candidates: Vec::new(),
            nvme_serial: Some("vol0abc".into()),
        };
        let link = DeviceCandidate {
            path: "/dev/disk/by-id/x".into(),
            nvme_link: true,
        };
        let name = DeviceCandidate {
            path: "/dev/xvdu".into(),
            nvme_link: false,
        };
        assert!(check_device(&hint, "nvme1n1", &link, Some("vol0abc\n")).is_ok());
        assert!(check_device(&hint, "nvme1n1", &name, Some("vol0abc")).is_ok());
        let err = check_device(&hint, "nvme1n1", &link, Some("vol0fff")).unwrap_err();
        assert!(err.contains("vol0fff"), "{err}");
        let err = check_device(&hint, "nvme1n1", &name, None).unwrap_err();
        assert!(err.contains("serial cannot be read"), "{err}");
        let err = check_device(&hint, "loop3", &link, None).unwrap_err();
        assert!(err.contains("not an NVMe namespace"), "{err}");
        let err = check_device(&hint, "nvme1n1p1", &link, Some("vol0abc")).unwrap_err();
        assert!(err.contains("partition"), "{err}");
        assert!(check_device(&hint, "xvdu", &name, None).is_ok());
        // A provider whose NVMe devices carry no serial naming the volume: its link is trusted.
        let unnamed = DeviceHint {
            nvme_serial: None,
            ..hint
        };
        assert!(check_device(&unnamed, "nvme0n2", &name, None).is_ok());
    }

    #[test]
    fn decisions_are_reported_by_volume_id_and_mount_point() {
        let summary = |d: &DeviceDecision| -> Vec<(ChangeKind, String, Action)> {
            decision_changes(d, "vol-1", "/r/mnt/master-vol-1", "/dev/xvdu")
                .into_iter()
                .map(|c| (c.kind, c.target, c.action))
                .collect()
        };
        assert_eq!(
            summary(&DeviceDecision::Format(FormatReason::IfBlank)),
            [
                (ChangeKind::Filesystem, "vol-1".to_owned(), Action::Format),
                (
                    ChangeKind::Mount,
                    "/r/mnt/master-vol-1".to_owned(),
                    Action::Mount
                )
            ]
        );
        assert_eq!(
            summary(&DeviceDecision::CheckAndMount {
                uuid: Some("u".into()),
                unfinished: true
            }),
            [
                (ChangeKind::Volume, "vol-1".to_owned(), Action::Update),
                (
                    ChangeKind::Mount,
                    "/r/mnt/master-vol-1".to_owned(),
                    Action::Mount
                )
            ]
        );
        assert!(summary(&DeviceDecision::Refuse("no".into())).is_empty());
    }

    #[test]
    fn an_empty_state_creates_no_file_and_an_equal_one_is_unchanged() {
        let path = Path::new("/r/var/lib/protokube/state.json");
        let empty = State::default();
        assert_eq!(
            state_file_change(&empty, path, &FileFact::Missing)
                .unwrap()
                .action,
            Action::Unchanged
        );
        let state = State::new(vec![crate::plan::state::MountedVolume {
            volume_id: "vol-1".into(),
            device: "/dev/xvdu".into(),
            mountpoint: "/mnt/master-vol-1".into(),
            etcd: vec![],
        }]);
        let created = state_file_change(&state, path, &FileFact::Missing).unwrap();
        assert_eq!(
            (created.action, created.detail.as_str()),
            (Action::Create, "1 mounted volume(s)")
        );
        let written = FileFact::File {
            bytes: state.to_bytes().unwrap(),
            mode: 0o644,
        };
        assert_eq!(
            state_file_change(&state, path, &written).unwrap().action,
            Action::Unchanged
        );
        // Unmounting the last volume empties an existing file rather than leaving it stale.
        assert_eq!(
            state_file_change(&empty, path, &written).unwrap().action,
            Action::Update
        );
    }
}
