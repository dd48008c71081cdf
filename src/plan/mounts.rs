//! The mount decision for one etcd volume, from what the host shows: already mounted, to be
//! mounted after `fsck`, to be formatted first (only a device proven blank), or refused. Pure.

use std::path::Path;

use anyhow::{Context as _, Result};

use crate::plan::files::{plan_file, FileChange, FileFact};
use crate::report::{Action, Change, ChangeKind};
use crate::state::State;

/// One line of `/proc/self/mountinfo`, the parts we use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// `(major, minor)` of the mounted device.
    pub devno: (u32, u32),
    pub mountpoint: String,
    pub fstype: String,
    pub source: String,
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
            })
        })
        .collect()
}

/// What is mounted at `mountpoint` (the last mount wins, as it hides earlier ones).
pub fn mounted_at<'a>(table: &'a [MountEntry], mountpoint: &Path) -> Option<&'a MountEntry> {
    let wanted = mountpoint.to_string_lossy();
    table.iter().rev().find(|m| m.mountpoint == wanted)
}

/// Where the device `devno` stands relative to `mountpoint` in the mount `table`.
pub fn mount_state(table: &[MountEntry], mountpoint: &Path, devno: (u32, u32)) -> MountState {
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

/// What a device holds, as far as formatting is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Proven blank: no signature of any kind and the sampled data reads as zeros.
    Blank,
    /// An ext4 filesystem (and nothing else).
    Ext4,
    /// No known signature but non-zero data: never formatted, unless protokube itself was
    /// formatting this volume when an earlier run was killed (see `state::FormatIntent`).
    Unrecognised(String),
    /// Anything else: never format, never mount. The text says what was found.
    Refuse(String),
}

/// The decision from `blkid -p -o export`'s exit code and output and whether the sampled data
/// was all zeros. Pure: every doubt becomes a refusal.
pub fn decide_probe(
    blkid_code: Option<i32>,
    blkid_stdout: &str,
    blkid_stderr: &str,
    all_zero: bool,
) -> Probe {
    let fields: Vec<(&str, &str)> = blkid_stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .collect();
    let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    match blkid_code {
        Some(2) if all_zero => Probe::Blank,
        Some(2) => Probe::Unrecognised(
            "no known signature, but the device holds non-zero data (unknown format or \
             encrypted data)"
                .to_owned(),
        ),
        Some(0) => {
            if let Some(table) = get("PTTYPE") {
                return Probe::Refuse(format!("a `{table}` partition table"));
            }
            match get("TYPE") {
                Some("ext4") => Probe::Ext4,
                Some(other) => Probe::Refuse(format!("a `{other}` signature")),
                None => Probe::Refuse(format!(
                    "an unrecognised signature ({})",
                    fields
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        Some(8) => {
            Probe::Refuse("several conflicting signatures (blkid: ambivalent result)".to_owned())
        }
        code => Probe::Refuse(format!(
            "blkid failed ({}): {}",
            code.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}")),
            blkid_stderr.trim()
        )),
    }
}

/// Where the volume's device stands relative to the mount table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountState {
    /// Mounted at its mount point from this very device.
    MountedHere,
    /// Its mount point holds another device (`source`, `major:minor`).
    MountPointTaken { source: String, devno: (u32, u32) },
    /// The device is mounted somewhere else.
    MountedElsewhere(String),
    /// Not mounted anywhere.
    NotMounted,
}

/// What happens to one volume's filesystem and mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountDecision {
    /// Mounted already: nothing to do.
    Unchanged,
    /// Mount it; first format it when `format` says why (a blank or half-formatted device), else
    /// check the existing ext4 with `fsck -a`.
    Mount { format: Option<FormatReason> },
    /// Touch nothing; the text says why.
    Refuse(String),
}

/// Why a device is formatted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatReason {
    /// Proven blank.
    Blank,
    /// protokube's own format, interrupted by a kill (its intent record is there).
    Interrupted,
    /// With `--dry-run`, a volume not attached yet: formatted only if it then proves blank.
    IfBlank,
}

impl FormatReason {
    fn describe(self) -> &'static str {
        match self {
            FormatReason::Blank => "blank",
            FormatReason::Interrupted => "half-formatted",
            FormatReason::IfBlank => "not yet attached (formatted only if blank)",
        }
    }
}

/// The decision from the mount table alone: `Some` when it settles the matter.
pub fn decide_from_mounts(state: &MountState, mountpoint: &str) -> Option<MountDecision> {
    match state {
        MountState::MountedHere => Some(MountDecision::Unchanged),
        MountState::MountPointTaken { source, devno } => Some(MountDecision::Refuse(format!(
            "`{mountpoint}` is already mounted from `{source}` (device {}:{}), not from this \
             volume's device; unmount it and run again",
            devno.0, devno.1
        ))),
        MountState::MountedElsewhere(elsewhere) => Some(MountDecision::Refuse(format!(
            "the device is already mounted at `{elsewhere}`; unmount it so protokube can mount \
             it at `{mountpoint}`"
        ))),
        MountState::NotMounted => None,
    }
}

/// The decision for an unmounted device from its probe and whether protokube's own format of
/// it was interrupted.
pub fn decide_from_probe(probe: &Probe, format_interrupted: bool) -> MountDecision {
    match probe {
        Probe::Blank => MountDecision::Mount {
            format: Some(FormatReason::Blank),
        },
        Probe::Ext4 => MountDecision::Mount { format: None },
        Probe::Unrecognised(_) if format_interrupted => MountDecision::Mount {
            format: Some(FormatReason::Interrupted),
        },
        Probe::Unrecognised(found) | Probe::Refuse(found) => MountDecision::Refuse(format!(
            "refusing to format or mount: the device holds {found}; protokube only mounts ext4 \
             and only formats blank devices, check the volume by hand"
        )),
    }
}

/// The report entries of a decision for `volume_id` at `mountpoint` (a path under the root).
pub fn decision_changes(
    decision: &MountDecision,
    volume_id: &str,
    mountpoint: &str,
    device: &str,
) -> Vec<Change> {
    let mount = |action, detail: String| Change {
        kind: ChangeKind::Mount,
        target: mountpoint.to_owned(),
        action,
        detail,
    };
    match decision {
        MountDecision::Unchanged => vec![mount(
            Action::Unchanged,
            format!("{volume_id} already mounted"),
        )],
        MountDecision::Mount { format } => {
            let mut changes = Vec::new();
            if let Some(reason) = format {
                changes.push(format_change(volume_id, *reason, device));
            }
            changes.push(mount(Action::Mount, format!("{volume_id} from {device}")));
            changes
        }
        MountDecision::Refuse(_) => Vec::new(),
    }
}

/// The report entry of a format, targeted by the volume id (a device path may not exist yet).
pub fn format_change(volume_id: &str, reason: FormatReason, device: &str) -> Change {
    Change {
        kind: ChangeKind::Filesystem,
        target: volume_id.to_owned(),
        action: Action::Format,
        detail: format!("ext4 on {} device {device}", reason.describe()),
    }
}

/// The change that writes `state` to the state file at `path` (mode 0644) given what is there
/// now. An empty state and no file are the same: nothing is created for it.
pub fn state_file_change(state: &State, path: &Path, current: &FileFact) -> Result<FileChange> {
    let text = String::from_utf8(state.to_bytes()?).context("serializing the state")?;
    let mut change = plan_file(path, current, &text, 0o644);
    if state.volumes.is_empty() && *current == FileFact::Missing {
        change.action = Action::Unchanged;
    }
    change.detail = format!("{} mounted volume(s)", state.volumes.len());
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn only_proven_blank_devices_may_be_formatted() {
        assert_eq!(decide_probe(Some(2), "", "", true), Probe::Blank);
        assert!(
            matches!(decide_probe(Some(2), "", "", false), Probe::Unrecognised(m) if m.contains("non-zero"))
        );
        assert_eq!(
            decide_probe(
                Some(0),
                "DEVNAME=/dev/loop1\nUUID=x\nTYPE=ext4\nUSAGE=filesystem\n",
                "",
                false
            ),
            Probe::Ext4
        );
        for (out, needle) in [
            ("TYPE=xfs\n", "`xfs`"),
            ("TYPE=swap\n", "`swap`"),
            ("TYPE=crypto_LUKS\n", "`crypto_LUKS`"),
            ("TYPE=LVM2_member\n", "`LVM2_member`"),
            ("TYPE=linux_raid_member\n", "`linux_raid_member`"),
            ("TYPE=ext3\n", "`ext3`"),
            ("PTUUID=1\nPTTYPE=dos\n", "`dos` partition table"),
            ("PTTYPE=gpt\nTYPE=ext4\n", "`gpt` partition table"),
            ("UUID=1\n", "unrecognised"),
        ] {
            match decide_probe(Some(0), out, "", true) {
                Probe::Refuse(message) => assert!(message.contains(needle), "{out}: {message}"),
                other => panic!("{out}: {other:?}"),
            }
        }
        assert!(matches!(
            decide_probe(Some(8), "", "", true),
            Probe::Refuse(_)
        ));
        assert!(
            matches!(decide_probe(Some(4), "", "bad usage", true), Probe::Refuse(m) if m.contains("bad usage"))
        );
        assert!(matches!(decide_probe(None, "", "", true), Probe::Refuse(_)));
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
    }

    #[test]
    fn the_mount_table_settles_mounted_and_taken_mount_points() {
        assert_eq!(
            decide_from_mounts(&MountState::MountedHere, "/m"),
            Some(MountDecision::Unchanged)
        );
        assert_eq!(decide_from_mounts(&MountState::NotMounted, "/m"), None);
        let taken = MountState::MountPointTaken {
            source: "/dev/loop9".into(),
            devno: (7, 9),
        };
        assert!(
            matches!(decide_from_mounts(&taken, "/m"), Some(MountDecision::Refuse(m)) if m.contains("/dev/loop9"))
        );
        assert!(matches!(
            decide_from_mounts(&MountState::MountedElsewhere("/x".into()), "/m"),
            Some(MountDecision::Refuse(m)) if m.contains("`/x`")
        ));
    }

    #[test]
    fn only_blank_or_own_interrupted_formats_are_formatted() {
        let unknown = Probe::Unrecognised("data".into());
        assert_eq!(
            decide_from_probe(&Probe::Blank, false),
            MountDecision::Mount {
                format: Some(FormatReason::Blank)
            }
        );
        assert_eq!(
            decide_from_probe(&Probe::Ext4, true),
            MountDecision::Mount { format: None }
        );
        assert_eq!(
            decide_from_probe(&unknown, true),
            MountDecision::Mount {
                format: Some(FormatReason::Interrupted)
            }
        );
        assert!(matches!(
            decide_from_probe(&unknown, false),
            MountDecision::Refuse(_)
        ));
        assert!(matches!(
            decide_from_probe(&Probe::Refuse("xfs".into()), true),
            MountDecision::Refuse(_)
        ));
    }

    #[test]
    fn formats_are_reported_by_volume_id() {
        let changes = decision_changes(
            &MountDecision::Mount {
                format: Some(FormatReason::IfBlank),
            },
            "vol-1",
            "/r/mnt/master-vol-1",
            "/dev/xvdu",
        );
        let summary: Vec<_> = changes
            .iter()
            .map(|c| (c.kind, c.target.as_str(), c.action))
            .collect();
        assert_eq!(
            summary,
            [
                (ChangeKind::Filesystem, "vol-1", Action::Format),
                (ChangeKind::Mount, "/r/mnt/master-vol-1", Action::Mount)
            ]
        );
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
        let state = State::new(vec![crate::state::MountedVolume {
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
