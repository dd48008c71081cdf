//! The proof that a device is blank before anything formats it, and the decision what to do
//! with a device that is not mounted. Every witness must agree before `mkfs` runs (docs/safety.md):
//! the cloud (no `k8s.io/protokube/formatted` tag, not made from a snapshot or anything else), `blkid -p`
//! (no signature), the backup superblocks a filesystem keeps elsewhere on the device (ext2/3/4
//! backups, xfs secondary superblocks, btrfs mirrors: a filesystem whose start was wiped still
//! has them; a backup GPT header), and the bytes read (all zero). Pure: `apply::blockdev` reads the device.

/// The tag protokube writes on a volume it formatted (see [`crate::cloud::tags::FORMATTED`]).
pub(crate) use crate::cloud::tags::FORMATTED as FORMATTED_TAG;

/// Bytes the sampled zero check reads at most; a device no larger is read whole.
pub(crate) const SAMPLE_BUDGET: u64 = 64 << 20;
/// The sampled check reads the first and last bytes of the device whole…
pub(crate) const SAMPLE_HEAD: u64 = 4 << 20;
pub(crate) const SAMPLE_TAIL: u64 = 1 << 20;
/// …and the rest of its budget in chunks of this size spread evenly between.
pub(crate) const SAMPLE_CHUNK: u64 = 16 << 10;

/// What `blkid -p` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Signature {
    /// Nothing (blkid exit 2).
    None,
    /// An ext4 filesystem and nothing else, with its UUID.
    Ext4 { uuid: String },
    /// Anything else: another filesystem, a partition table, several signatures. Never mounted,
    /// never formatted.
    Other(String),
}

/// Reads `blkid -p -o export`'s exit code and output. Every doubt is [`Signature::Other`].
pub(crate) fn parse_blkid(code: Option<i32>, stdout: &str, stderr: &str) -> Signature {
    let fields: Vec<(&str, &str)> = stdout.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    match code {
        Some(2) => Signature::None,
        Some(0) => {
            if let Some(table) = get("PTTYPE") {
                return Signature::Other(format!("a `{table}` partition table"));
            }
            match (get("TYPE"), get("UUID")) {
                (Some("ext4"), Some(uuid)) if !uuid.is_empty() => Signature::Ext4 {
                    uuid: uuid.to_owned(),
                },
                (Some("ext4"), _) => Signature::Other("an ext4 filesystem without a UUID".into()),
                (Some(other), _) => Signature::Other(format!("a `{other}` signature")),
                (None, _) => Signature::Other(format!(
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
            Signature::Other("several conflicting signatures (blkid: ambivalent result)".into())
        }
        code => Signature::Other(format!(
            "nothing blkid could read ({}: {})",
            code.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}")),
            stderr.trim()
        )),
    }
}

/// What the bytes read said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Zeros {
    /// Every byte read was zero (`bytes` of them).
    All { bytes: u64 },
    /// A non-zero byte at this offset.
    NonZeroAt(u64),
}

/// How much of a device the zero check reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum BlankCheck {
    /// The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all
    /// (a device no larger is read whole).
    #[default]
    Sampled,
    /// Every byte of the device.
    Full,
}

/// The byte ranges the zero check reads on a device of `size` bytes: `(offset, length)`.
pub(crate) fn zero_check_ranges(size: u64, check: BlankCheck) -> Vec<(u64, u64)> {
    if check == BlankCheck::Full || size <= SAMPLE_BUDGET {
        return vec![(0, size)];
    }
    let mut ranges = vec![(0, SAMPLE_HEAD)];
    let middle_start = SAMPLE_HEAD;
    let middle_end = size - SAMPLE_TAIL;
    let chunks = (SAMPLE_BUDGET - SAMPLE_HEAD - SAMPLE_TAIL) / SAMPLE_CHUNK;
    let span = middle_end - middle_start;
    for i in 0..chunks {
        let offset = middle_start + span / chunks * i;
        ranges.push((offset, SAMPLE_CHUNK.min(middle_end - offset)));
    }
    ranges.push((middle_end, SAMPLE_TAIL));
    ranges
}

/// A place on the device where a filesystem keeps a copy of its superblock, and how to
/// recognise it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackupProbe {
    /// An ext2/3/4 backup superblock of block group `group` with blocks of `block_size` bytes.
    Ext { group: u64, block_size: u64 },
    /// An xfs secondary superblock at the start of allocation group `ag`, AG size `ag_bytes`.
    Xfs {
        ag: u64,
        block_size: u64,
        ag_bytes: u64,
    },
    /// A btrfs superblock mirror.
    Btrfs,
    /// The backup GPT header in the last sector (read with the sector before it).
    GptBackup,
}

/// The smallest filesystem mkfs.xfs has ever made.
const XFS_MIN_SIZE: u64 = 16 << 20;

/// Bytes read at each backup-superblock offset.
pub(crate) const BACKUP_READ: u64 = 1024;

/// Every offset (below `size`) at which a filesystem whose start was wiped may still keep a
/// superblock, with what to look for there.
pub(crate) fn backup_superblock_offsets(size: u64) -> Vec<(u64, BackupProbe)> {
    let mut out = Vec::new();
    // ext2/3/4: groups 1, 3^n, 5^n, 7^n (sparse_super) and the last group (sparse_super2),
    // blocks_per_group = 8 × block size (the default of every block size).
    for block_size in [1024u64, 2048, 4096, 65536] {
        let per_group = 8 * block_size;
        let first_block = u64::from(block_size == 1024);
        let blocks = size / block_size;
        if blocks <= first_block + per_group {
            continue;
        }
        let groups = (blocks - first_block).div_ceil(per_group);
        let mut candidates = vec![1, groups - 1];
        for base in [3u64, 5, 7] {
            let mut g = base;
            while g < groups {
                candidates.push(g);
                g = g.saturating_mul(base);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        for group in candidates.into_iter().filter(|g| *g >= 1 && *g < groups) {
            let offset = (first_block + group * per_group) * block_size;
            if offset + BACKUP_READ <= size {
                out.push((offset, BackupProbe::Ext { group, block_size }));
            }
        }
    }
    // xfs: AG 1 and the last AG, for the AG counts mkfs.xfs picks (1 to 32 as powers of two,
    // rounding the AG size up) and the largest AG size (1 TiB).
    for block_size in [4096u64, 512, 1024, 2048, 8192, 16384, 32768, 65536] {
        let dblocks = size / block_size;
        if size < XFS_MIN_SIZE || dblocks == 0 {
            continue;
        }
        let mut ag_blocks: Vec<u64> = (0..=5).map(|shift| dblocks.div_ceil(1 << shift)).collect();
        ag_blocks.push((1u64 << 40) / block_size);
        ag_blocks.sort_unstable();
        ag_blocks.dedup();
        for agb in ag_blocks {
            let ag_bytes = agb * block_size;
            if ag_bytes == 0 || ag_bytes >= size {
                continue;
            }
            let ags = dblocks.div_ceil(agb);
            for ag in [1, ags - 1] {
                let offset = ag * ag_bytes;
                if ag >= 1 && offset + BACKUP_READ <= size {
                    out.push((
                        offset,
                        BackupProbe::Xfs {
                            ag,
                            block_size,
                            ag_bytes,
                        },
                    ));
                }
            }
        }
    }
    // btrfs: mirrors at 64 MiB and 256 GiB (the superblock is 64 KiB into its block).
    for mirror in [64u64 << 20, 256u64 << 30] {
        if mirror + BACKUP_READ <= size {
            out.push((mirror, BackupProbe::Btrfs));
        }
    }
    // GPT: the backup header in the last 512-byte sector.
    if size >= 2 * BACKUP_READ {
        out.push((size - BACKUP_READ, BackupProbe::GptBackup));
    }
    out.sort_by_key(|(offset, _)| *offset);
    out.dedup();
    out
}

/// What `bytes` (read at a backup offset) hold, if it is the superblock `probe` looks for: a
/// description naming the filesystem, where it was found and its UUID.
pub(crate) fn recognise_backup(offset: u64, probe: BackupProbe, bytes: &[u8]) -> Option<String> {
    let u16le = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32le = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u32be = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let uuid = |at: usize| bytes.get(at..at + 16).map(format_uuid).unwrap_or_default();
    let mib = offset as f64 / f64::from(1 << 20);
    match probe {
        BackupProbe::Ext { group, block_size } => {
            let magic = u16le(56)?;
            let log_block = u32le(24)?;
            let group_nr = u16le(90)?;
            (magic == 0xEF53
                && 1024u64.checked_shl(log_block) == Some(block_size)
                && u64::from(group_nr) == group % 65536)
                .then(|| {
                    format!(
                        "an ext2/3/4 backup superblock of block group {group} at {mib:.1} MiB \
                         (filesystem UUID {})",
                        uuid(104)
                    )
                })
        }
        BackupProbe::Xfs {
            ag,
            block_size,
            ag_bytes,
        } => {
            let agblocks = u64::from(u32be(84)?);
            (bytes.get(..4) == Some(b"XFSB".as_slice())
                && u64::from(u32be(4)?) == block_size
                && agblocks * block_size == ag_bytes)
                .then(|| {
                    format!(
                        "an xfs secondary superblock of allocation group {ag} at {mib:.1} MiB \
                         (filesystem UUID {})",
                        uuid(32)
                    )
                })
        }
        BackupProbe::GptBackup => (bytes.get(512..520) == Some(b"EFI PART".as_slice()))
            .then(|| "a backup GPT partition table header in the last sector".to_owned()),
        BackupProbe::Btrfs => (bytes.get(64..72) == Some(b"_BHRfS_M".as_slice())).then(|| {
            format!(
                "a btrfs superblock mirror at {mib:.1} MiB (filesystem UUID {})",
                uuid(32)
            )
        }),
    }
}

/// 16 bytes as a UUID string.
pub(crate) fn format_uuid(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if hex.len() != 32 {
        return hex;
    }
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The cloud's witness: the volume's `k8s.io/protokube/formatted` tag and what it was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CloudWitness {
    pub(crate) formatted_tag: Option<String>,
    /// The formatted tag's key as the provider spells it (a label key where tags are labels)
    /// and what the provider calls it (`tag`, `label`).
    pub(crate) formatted_key: String,
    pub(crate) noun: &'static str,
    /// What the volume was made from, in the provider's words (``snapshot `snap-1` ``).
    pub(crate) made_from: Option<String>,
}

impl Default for CloudWitness {
    fn default() -> Self {
        Self {
            formatted_tag: None,
            formatted_key: FORMATTED_TAG.to_owned(),
            noun: "tag",
            made_from: None,
        }
    }
}

/// Everything known about an unmounted device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceFacts {
    pub(crate) cloud: CloudWitness,
    pub(crate) signature: Signature,
    /// Backup superblocks found (read only when blkid found nothing).
    pub(crate) backups: Vec<String>,
    /// The zero check (read only when blkid found nothing).
    pub(crate) zeros: Option<Zeros>,
    /// The UUID an interrupted `mkfs` of protokube's was given (its intent record).
    pub(crate) intent: Option<IntentUuid>,
}

/// The format intent record of an interrupted format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IntentUuid {
    Uuid(String),
    /// A record that is not exactly one protokube writes (the text names it and says how):
    /// it permits nothing, and the volume is refused.
    Invalid(String),
    /// The format with this UUID finished, but the cloud refused the formatted tag (kOps' IRSA
    /// control-plane role may not tag volumes): this record is the node's witness instead.
    Formatted(String),
}

/// Why a device is formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FormatReason {
    /// Every witness agrees it is blank.
    Blank,
    /// protokube's own format, interrupted by a kill (its intent record is there).
    Interrupted,
    /// With `--dry-run`, a volume not attached yet: formatted only if it then proves blank.
    IfBlank,
}

impl FormatReason {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            FormatReason::Blank => "blank",
            FormatReason::Interrupted => "half-formatted (an earlier run was killed formatting it)",
            FormatReason::IfBlank => "not yet attached (formatted only if proven blank)",
        }
    }
}

/// What happens to a device that is not mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeviceDecision {
    /// Format it (ext4, then tag the volume), then mount it.
    Format(FormatReason),
    /// `fsck` the ext4 and mount it. `unfinished`: it is protokube's own format, interrupted
    /// before the volume was tagged: a clean fsck finishes it (tag), a failed one allows
    /// formatting it again.
    CheckAndMount {
        uuid: Option<String>,
        unfinished: bool,
    },
    /// Touch nothing; the text says why.
    Refuse(String),
}

const REFUSE_TAIL: &str = "protokube only formats a device every witness proves blank; check \
                           the volume by hand";

/// The decision for an unmounted device (docs/safety.md).
pub(crate) fn decide_device(facts: &DeviceFacts) -> DeviceDecision {
    if let Some(IntentUuid::Invalid(why)) = &facts.intent {
        return DeviceDecision::Refuse(format!(
            "refusing to format or mount: {why}, and a record that does not parse permits \
             nothing; check the volume by hand, then remove the record"
        ));
    }
    let tag = facts.cloud.formatted_tag.as_deref();
    let intent_uuid = match &facts.intent {
        Some(IntentUuid::Uuid(uuid)) => Some(uuid.as_str()),
        _ => None,
    };
    let recorded_format = match &facts.intent {
        Some(IntentUuid::Formatted(uuid)) => Some(uuid.as_str()),
        _ => None,
    };
    match &facts.signature {
        Signature::Ext4 { uuid } => match tag {
            Some(tag) if tag != uuid => DeviceDecision::Refuse(format!(
                "the volume carries {} `{}={tag}` but the device holds an ext4 filesystem with \
                 UUID {uuid}; if that filesystem is the right one, set the {} to its UUID",
                facts.cloud.noun, facts.cloud.formatted_key, facts.cloud.noun
            )),
            Some(_) => DeviceDecision::CheckAndMount {
                uuid: Some(uuid.clone()),
                unfinished: false,
            },
            None => DeviceDecision::CheckAndMount {
                uuid: Some(uuid.clone()),
                unfinished: intent_uuid == Some(uuid.as_str()),
            },
        },
        Signature::Other(found) => DeviceDecision::Refuse(format!(
            "refusing to format or mount: the device holds {found}; protokube only mounts ext4 \
             and only formats blank devices, check the volume by hand"
        )),
        Signature::None => {
            if let Some(uuid) = recorded_format {
                return DeviceDecision::Refuse(format!(
                    "protokube formatted this volume (UUID {uuid}, recorded on this node since \
                     the cloud refused its `{}` {}) but the device has no \
                     filesystem; it is never formatted again: restore the volume from a \
                     snapshot, or remove the record under `/var/lib/protokube/formatting/` if \
                     its data is truly gone",
                    facts.cloud.formatted_key, facts.cloud.noun
                ));
            }
            if let Some(tag) = tag {
                return DeviceDecision::Refuse(format!(
                    "the volume carries {} `{}={tag}` (protokube formatted it) but the device \
                     has no filesystem; it is never formatted again: restore the volume from a \
                     snapshot, or remove the {} if its data is truly gone",
                    facts.cloud.noun, facts.cloud.formatted_key, facts.cloud.noun
                ));
            }
            if let Some(source) = &facts.cloud.made_from {
                return DeviceDecision::Refuse(format!(
                    "the volume was made from {source} but the device has no \
                     filesystem blkid knows; {REFUSE_TAIL}"
                ));
            }
            let ours = |backup: &String| intent_uuid.is_some_and(|uuid| backup.contains(uuid));
            if let Some(backup) = facts.backups.iter().find(|b| !ours(b)) {
                return DeviceDecision::Refuse(format!(
                    "refusing to format: blkid finds no signature but the device holds {backup} \
                     (a filesystem whose start was wiped); {REFUSE_TAIL}"
                ));
            }
            match (facts.zeros, &facts.intent) {
                (Some(Zeros::All { .. }), None) => DeviceDecision::Format(FormatReason::Blank),
                (Some(_), Some(_)) => DeviceDecision::Format(FormatReason::Interrupted),
                (Some(Zeros::NonZeroAt(offset)), None) => DeviceDecision::Refuse(format!(
                    "refusing to format: blkid finds no signature but the device holds non-zero \
                     data at byte {offset} (unknown format or encrypted data); {REFUSE_TAIL}"
                )),
                (None, _) => DeviceDecision::Refuse(format!(
                    "refusing to format: the device's data was not read; {REFUSE_TAIL}"
                )),
            }
        }
    }
}

/// The decision for a volume a dry run has not attached: only the cloud's witness is known.
pub(crate) fn predict_device(cloud: &CloudWitness) -> DeviceDecision {
    match (&cloud.formatted_tag, &cloud.made_from) {
        (Some(tag), _) => DeviceDecision::CheckAndMount {
            uuid: Some(tag.clone()),
            unfinished: false,
        },
        (None, Some(_)) => DeviceDecision::CheckAndMount {
            uuid: None,
            unfinished: false,
        },
        (None, None) => DeviceDecision::Format(FormatReason::IfBlank),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(signature: Signature) -> DeviceFacts {
        DeviceFacts {
            cloud: CloudWitness::default(),
            signature,
            backups: vec![],
            zeros: Some(Zeros::All { bytes: 1 }),
            intent: None,
        }
    }

    #[test]
    fn blkid_output_is_read_strictly() {
        assert_eq!(parse_blkid(Some(2), "", ""), Signature::None);
        assert_eq!(
            parse_blkid(
                Some(0),
                "DEVNAME=/dev/loop1\nUUID=u-1\nTYPE=ext4\nUSAGE=filesystem\n",
                ""
            ),
            Signature::Ext4 { uuid: "u-1".into() }
        );
        for (out, needle) in [
            ("TYPE=xfs\n", "`xfs`"),
            ("TYPE=swap\n", "`swap`"),
            ("TYPE=crypto_LUKS\n", "`crypto_LUKS`"),
            ("TYPE=LVM2_member\n", "`LVM2_member`"),
            ("TYPE=linux_raid_member\n", "`linux_raid_member`"),
            ("TYPE=ext3\n", "`ext3`"),
            ("TYPE=ext4\n", "without a UUID"),
            ("PTUUID=1\nPTTYPE=dos\n", "`dos` partition table"),
            ("PTTYPE=gpt\nUUID=x\nTYPE=ext4\n", "`gpt` partition table"),
            ("UUID=1\n", "unrecognised"),
        ] {
            match parse_blkid(Some(0), out, "") {
                Signature::Other(message) => assert!(message.contains(needle), "{out}: {message}"),
                other => panic!("{out}: {other:?}"),
            }
        }
        assert!(matches!(parse_blkid(Some(8), "", ""), Signature::Other(_)));
        assert!(
            matches!(parse_blkid(Some(4), "", "bad usage"), Signature::Other(m) if m.contains("bad usage"))
        );
        assert!(matches!(parse_blkid(None, "", ""), Signature::Other(_)));
    }

    #[test]
    fn every_witness_must_agree_before_a_format() {
        assert_eq!(
            decide_device(&facts(Signature::None)),
            DeviceDecision::Format(FormatReason::Blank)
        );
        // The cloud says it was formatted, or restored from a snapshot.
        let mut tagged = facts(Signature::None);
        tagged.cloud.formatted_tag = Some("u".into());
        assert!(
            matches!(decide_device(&tagged), DeviceDecision::Refuse(m) if m.contains("never formatted again"))
        );
        let mut restored = facts(Signature::None);
        restored.cloud.made_from = Some("snapshot `snap-1`".into());
        assert!(
            matches!(decide_device(&restored), DeviceDecision::Refuse(m) if m.contains("snap-1"))
        );
        // A backup superblock, and data where blkid sees nothing.
        let mut wiped = facts(Signature::None);
        wiped.backups = vec!["an ext2/3/4 backup superblock of block group 1".into()];
        assert!(
            matches!(decide_device(&wiped), DeviceDecision::Refuse(m) if m.contains("start was wiped"))
        );
        let mut data = facts(Signature::None);
        data.zeros = Some(Zeros::NonZeroAt(5 << 20));
        assert!(matches!(decide_device(&data), DeviceDecision::Refuse(m) if m.contains("5242880")));
        let mut unread = facts(Signature::None);
        unread.zeros = None;
        assert!(matches!(decide_device(&unread), DeviceDecision::Refuse(_)));
    }

    #[test]
    fn a_format_recorded_on_the_node_is_a_witness_like_the_tag() {
        // The cloud refused the tag (IRSA): the node's record says protokube formatted it.
        let mut ext4 = facts(Signature::Ext4 {
            uuid: "ours".into(),
        });
        ext4.intent = Some(IntentUuid::Formatted("ours".into()));
        assert_eq!(
            decide_device(&ext4),
            DeviceDecision::CheckAndMount {
                uuid: Some("ours".into()),
                unfinished: false
            }
        );
        // Its filesystem gone: never formatted again, even though every byte reads zero.
        let mut wiped = facts(Signature::None);
        wiped.intent = Some(IntentUuid::Formatted("ours".into()));
        assert!(
            matches!(decide_device(&wiped), DeviceDecision::Refuse(m) if m.contains("never formatted again"))
        );
    }

    #[test]
    fn an_intent_allows_reformatting_only_what_its_mkfs_began() {
        let mut half = facts(Signature::None);
        half.zeros = Some(Zeros::NonZeroAt(0));
        half.intent = Some(IntentUuid::Uuid("ours".into()));
        assert_eq!(
            decide_device(&half),
            DeviceDecision::Format(FormatReason::Interrupted)
        );
        // Its own backup superblocks do not stop it; another filesystem's do.
        half.backups = vec!["backup (filesystem UUID ours)".into()];
        assert_eq!(
            decide_device(&half),
            DeviceDecision::Format(FormatReason::Interrupted)
        );
        half.backups = vec!["backup (filesystem UUID theirs)".into()];
        assert!(matches!(decide_device(&half), DeviceDecision::Refuse(_)));
        // An ext4 that the intent's mkfs made is unfinished; another one is not.
        let mut ext4 = facts(Signature::Ext4 {
            uuid: "ours".into(),
        });
        ext4.intent = Some(IntentUuid::Uuid("ours".into()));
        assert_eq!(
            decide_device(&ext4),
            DeviceDecision::CheckAndMount {
                uuid: Some("ours".into()),
                unfinished: true
            }
        );
        ext4.intent = Some(IntentUuid::Uuid("other".into()));
        assert_eq!(
            decide_device(&ext4),
            DeviceDecision::CheckAndMount {
                uuid: Some("ours".into()),
                unfinished: false
            }
        );
        // A record that does not parse permits nothing, whatever the device holds.
        for content in [
            Signature::Ext4 {
                uuid: "ours".into(),
            },
            Signature::None,
        ] {
            for zeros in [Some(Zeros::All { bytes: 1 }), Some(Zeros::NonZeroAt(7))] {
                let mut garbled = facts(content.clone());
                garbled.zeros = zeros;
                garbled.intent = Some(IntentUuid::Invalid("the format record `r` …".into()));
                assert!(
                    matches!(decide_device(&garbled), DeviceDecision::Refuse(m) if m.contains("permits nothing")),
                    "{garbled:?}"
                );
            }
        }
    }

    #[test]
    fn the_formatted_tag_must_name_the_filesystem() {
        let mut ext4 = facts(Signature::Ext4 { uuid: "u1".into() });
        ext4.cloud.formatted_tag = Some("u1".into());
        assert_eq!(
            decide_device(&ext4),
            DeviceDecision::CheckAndMount {
                uuid: Some("u1".into()),
                unfinished: false
            }
        );
        ext4.cloud.formatted_tag = Some("u2".into());
        assert!(matches!(decide_device(&ext4), DeviceDecision::Refuse(m) if m.contains("u2")));
    }

    #[test]
    fn predictions_follow_the_cloud() {
        assert_eq!(
            predict_device(&CloudWitness::default()),
            DeviceDecision::Format(FormatReason::IfBlank)
        );
        let tagged = CloudWitness {
            formatted_tag: Some("u".into()),
            ..CloudWitness::default()
        };
        assert!(matches!(
            predict_device(&tagged),
            DeviceDecision::CheckAndMount { .. }
        ));
    }

    #[test]
    fn sampling_reads_small_devices_whole_and_spreads_over_large_ones() {
        assert_eq!(
            zero_check_ranges(64 << 20, BlankCheck::Sampled),
            [(0, 64 << 20)]
        );
        assert_eq!(
            zero_check_ranges(20 << 30, BlankCheck::Full),
            [(0, 20 << 30)]
        );
        let size = 20u64 << 30;
        let ranges = zero_check_ranges(size, BlankCheck::Sampled);
        let total: u64 = ranges.iter().map(|r| r.1).sum();
        assert!(total <= SAMPLE_BUDGET, "{total}");
        assert_eq!(ranges[0], (0, SAMPLE_HEAD));
        assert_eq!(*ranges.last().unwrap(), (size - SAMPLE_TAIL, SAMPLE_TAIL));
        assert!(ranges.iter().all(|(o, l)| o + l <= size));
        // Spread evenly: no gap larger than the stride.
        let stride = (size - SAMPLE_HEAD - SAMPLE_TAIL)
            / ((SAMPLE_BUDGET - SAMPLE_HEAD - SAMPLE_TAIL) / SAMPLE_CHUNK);
        for pair in ranges.windows(2) {
            assert!(
                pair[1].0 - pair[0].0 <= stride.max(SAMPLE_HEAD) + SAMPLE_CHUNK,
                "{pair:?}"
            );
        }
    }

    #[test]
    fn backup_offsets_of_common_layouts() {
        let offsets = backup_superblock_offsets(1000 << 20);
        // mkfs.ext4 on 1000 MiB: 4 KiB blocks, group 1 at 128 MiB, group 3 at 384 MiB.
        assert!(offsets.contains(&(
            128 << 20,
            BackupProbe::Ext {
                group: 1,
                block_size: 4096
            }
        )));
        assert!(offsets.contains(&(
            384 << 20,
            BackupProbe::Ext {
                group: 3,
                block_size: 4096
            }
        )));
        // 1 KiB blocks: group 1 starts at block 8193.
        assert!(offsets.contains(&(
            8193 * 1024,
            BackupProbe::Ext {
                group: 1,
                block_size: 1024
            }
        )));
        // mkfs.xfs on 1000 MiB: 4 AGs of 250 MiB.
        assert!(offsets.iter().any(|(o, p)| *o == 250 << 20
            && matches!(
                p,
                BackupProbe::Xfs {
                    ag: 1,
                    block_size: 4096,
                    ..
                }
            )));
        assert!(offsets.contains(&(64 << 20, BackupProbe::Btrfs)));
        assert!(offsets.contains(&((1000 << 20) - 1024, BackupProbe::GptBackup)));
        assert!(offsets.iter().all(|(o, _)| o + BACKUP_READ <= 1000 << 20));
        assert_eq!(
            backup_superblock_offsets(4096),
            [(3072, BackupProbe::GptBackup)]
        );
        assert!(backup_superblock_offsets(1024).is_empty());
    }

    #[test]
    fn backup_superblocks_are_recognised_only_where_they_belong() {
        let mut ext = vec![0u8; 1024];
        ext[56..58].copy_from_slice(&0xEF53u16.to_le_bytes());
        ext[24..28].copy_from_slice(&2u32.to_le_bytes());
        ext[90..92].copy_from_slice(&3u16.to_le_bytes());
        ext[104..120].copy_from_slice(&[0xab; 16]);
        let probe = BackupProbe::Ext {
            group: 3,
            block_size: 4096,
        };
        let found = recognise_backup(384 << 20, probe, &ext).unwrap();
        assert!(
            found.contains("block group 3") && found.contains("abababab-abab"),
            "{found}"
        );
        let elsewhere = BackupProbe::Ext {
            group: 5,
            block_size: 4096,
        };
        assert!(recognise_backup(0, elsewhere, &ext).is_none());
        assert!(recognise_backup(0, probe, &[0u8; 1024]).is_none());
        assert!(recognise_backup(0, probe, &[0u8; 10]).is_none());

        let mut xfs = vec![0u8; 1024];
        xfs[..4].copy_from_slice(b"XFSB");
        xfs[4..8].copy_from_slice(&4096u32.to_be_bytes());
        xfs[84..88].copy_from_slice(&64000u32.to_be_bytes());
        let probe = BackupProbe::Xfs {
            ag: 1,
            block_size: 4096,
            ag_bytes: 64000 * 4096,
        };
        assert!(recognise_backup(64000 * 4096, probe, &xfs).is_some());
        let wrong_size = BackupProbe::Xfs {
            ag: 1,
            block_size: 4096,
            ag_bytes: 4096,
        };
        assert!(recognise_backup(4096, wrong_size, &xfs).is_none());

        let mut gpt = vec![0u8; 1024];
        gpt[512..520].copy_from_slice(b"EFI PART");
        assert!(recognise_backup(0, BackupProbe::GptBackup, &gpt).is_some());
        assert!(recognise_backup(0, BackupProbe::GptBackup, &[0u8; 1024]).is_none());

        let mut btrfs = vec![0u8; 1024];
        btrfs[64..72].copy_from_slice(b"_BHRfS_M");
        assert!(recognise_backup(64 << 20, BackupProbe::Btrfs, &btrfs).is_some());
    }
}
