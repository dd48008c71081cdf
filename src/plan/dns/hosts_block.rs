//! The hosts file: kOps' guarded block, read and rewritten, and the per-name changes a new set
//! of records makes. Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use crate::plan::dns::records::DesiredRecord;
use crate::report::{Action, Change, ChangeKind};

/// First line of the managed block (compared after trimming).
pub const GUARD_BEGIN: &str = "# Begin host entries managed by kops - do not edit";
/// Last line of the managed block.
pub const GUARD_END: &str = "# End host entries managed by kops";

/// Name → addresses, as the hosts block holds them.
pub type HostRecords = BTreeMap<String, Vec<IpAddr>>;

/// The lines of `content` (split on `\n`), as bytes: a hosts file need not be UTF-8 outside the
/// block, and what is outside is kept byte for byte.
fn lines(content: &[u8]) -> impl Iterator<Item = &[u8]> {
    content.split(|b| *b == b'\n')
}

/// Whether `content` looks like another writer's write caught halfway: a NUL byte (a hole two
/// writes left), or another writer's block begun and never ended (etcd-manager truncates the
/// file and writes it whole, without a lock). A plan is never made from such a read unless the
/// same bytes are read again after a pause (then that is simply what the file holds).
pub(crate) fn caught_mid_write(content: &[u8]) -> bool {
    const BEGIN: &[u8] = b"# Begin host entries managed by ";
    const END: &[u8] = b"# End host entries managed by ";
    if content.contains(&0) {
        return true;
    }
    let mut open: Vec<&[u8]> = Vec::new();
    for line in lines(content) {
        let trimmed = line.trim_ascii();
        if let Some(key) = trimmed
            .strip_prefix(BEGIN)
            .and_then(|rest| rest.strip_suffix(b" - do not edit"))
        {
            if key != b"kops" {
                open.push(key);
            }
        } else if let Some(key) = trimmed.strip_prefix(END) {
            open.retain(|k| *k != key);
        }
    }
    !open.is_empty()
}

/// The lines inside kOps' managed block(s) of `content` (every block, also broken ones;
/// guards excluded).
fn lines_in_blocks(content: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut in_block = false;
    lines(content).filter(move |line| {
        let trimmed = line.trim_ascii();
        if trimmed == GUARD_BEGIN.as_bytes() {
            in_block = true;
            false
        } else if trimmed == GUARD_END.as_bytes() {
            in_block = false;
            false
        } else {
            in_block
        }
    })
}

/// The lines of kOps' managed block in `content` (guards excluded), as text.
pub(crate) fn managed_lines(content: &[u8]) -> Vec<String> {
    lines_in_blocks(content)
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect()
}

/// The records in the managed block(s) of `content` (every block, also broken ones).
pub fn managed_records(content: &[u8]) -> HostRecords {
    let mut records = HostRecords::new();
    for line in lines_in_blocks(content) {
        let trimmed = line.trim_ascii();
        let text = String::from_utf8_lossy(trimmed);
        let mut fields = text.split_whitespace();
        let Some(Ok(address)) = fields.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        for name in fields {
            let addresses = records.entry(name.to_owned()).or_default();
            if !addresses.contains(&address) {
                addresses.push(address);
            }
        }
    }
    for addresses in records.values_mut() {
        addresses.sort();
    }
    records
}

/// The new content of a hosts file: every line outside the managed block kept byte for byte,
/// and the block's lines `addr<TAB>name name…`, one per address (names sorted, lines sorted; a
/// name without addresses gets no line). A file with one well-formed block keeps it where it
/// is: only the lines between its guards change, so a run never moves it (etcd-manager keeps
/// its own blocks in the same file and moves them last; two writers that each moved their
/// block to the end would never settle). Any other file (no block, duplicate or broken
/// blocks) gets kOps' layout: the lines outside blocks (a stray end guard dropped), trailing
/// blank lines trimmed, one blank line, the one block, and a final newline. Applying it again
/// changes nothing.
pub fn update_hosts(content: &[u8], records: &HostRecords) -> Vec<u8> {
    let block = block_lines(records);
    if let Some((begin, end)) = single_block(content) {
        let all: Vec<&[u8]> = lines(content).collect();
        let mut out: Vec<&[u8]> = all[..=begin].to_vec();
        out.extend(block.iter().map(String::as_bytes));
        if all[end + 1..]
            .iter()
            .all(|line| line.trim_ascii().is_empty())
        {
            // The block is the file's end: blanks after it (the padding of a shorter write
            // cut short) go, and the file ends with the end guard's line.
            out.extend([all[end], b"".as_slice()]);
        } else {
            out.extend(&all[end..]);
        }
        return out.join(&b'\n');
    }
    let out = unmanaged_lines(content);
    let mut text = out.join(&b'\n');
    text.extend_from_slice(b"\n\n");
    text.extend_from_slice(GUARD_BEGIN.as_bytes());
    text.push(b'\n');
    for line in &block {
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
    }
    text.extend_from_slice(GUARD_END.as_bytes());
    text.push(b'\n');
    text
}

/// The line numbers of the begin and end guards of `content`'s managed block when it has
/// exactly one, well formed (one begin guard, then one end guard).
fn single_block(content: &[u8]) -> Option<(usize, usize)> {
    let mut begins = Vec::new();
    let mut ends = Vec::new();
    for (number, line) in lines(content).enumerate() {
        let trimmed = line.trim_ascii();
        if trimmed == GUARD_BEGIN.as_bytes() {
            begins.push(number);
        } else if trimmed == GUARD_END.as_bytes() {
            ends.push(number);
        }
    }
    match (begins.as_slice(), ends.as_slice()) {
        ([begin], [end]) if begin < end => Some((*begin, *end)),
        _ => None,
    }
}

/// The block's lines for `records`: `addr<TAB>name name…`, names and lines sorted.
fn block_lines(records: &HostRecords) -> Vec<String> {
    let mut by_address: BTreeMap<IpAddr, Vec<&str>> = BTreeMap::new();
    for (name, addresses) in records {
        for address in addresses {
            let names = by_address.entry(*address).or_default();
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let mut block: Vec<String> = by_address
        .into_iter()
        .map(|(address, mut names)| {
            names.sort_unstable();
            format!("{address}\t{}", names.join(" "))
        })
        .collect();
    block.sort();
    block
}

/// The lines outside the managed block(s), trailing blank lines trimmed (as kOps does).
fn unmanaged_lines(content: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = Vec::new();
    let mut in_block = false;
    for line in lines(content) {
        let trimmed = line.trim_ascii();
        if trimmed == GUARD_BEGIN.as_bytes() {
            in_block = true;
        } else if trimmed == GUARD_END.as_bytes() {
            in_block = false;
        } else if !in_block {
            out.push(line);
        }
    }
    while out.last().is_some_and(|l| l.trim_ascii().is_empty()) {
        out.pop();
    }
    out
}

/// The names of kOps' hosts block that are protokube's for a cluster: the API names, kOps'
/// `kops-controller.internal.<cluster>` and the etcd members' names. Any other line of the
/// block (nodeup writes the load balancer's addresses there on clusters without DNS) is kept
/// as it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ManagedNames<'a> {
    pub(crate) cluster: &'a str,
    /// With its leading dot.
    pub(crate) internal_suffix: &'a str,
    pub(crate) public_name: &'a str,
    /// The API and kops-controller names are protokube's (not on a cluster without DNS, where
    /// nodeup writes them).
    pub(crate) api_names: bool,
    /// Names the gossip view holds: the member writes them, the cloud's computation yields.
    pub(crate) yielded: &'a BTreeSet<String>,
}

/// No name yielded (no gossip member).
pub(crate) static NO_NAMES: BTreeSet<String> = BTreeSet::new();

impl ManagedNames<'_> {
    pub(crate) fn manages(&self, name: &str) -> bool {
        if self.yielded.contains(name) {
            return false;
        }
        let api = name == format!("api.internal.{}", self.cluster)
            || name == format!("kops-controller.internal.{}", self.cluster)
            || name == self.public_name;
        (self.api_names && api)
            || (name.starts_with("etcd-")
                && name.ends_with(self.internal_suffix)
                && name.len() > self.internal_suffix.len())
    }
}

/// Plans the hosts file without protokube's names (`reset`): one `delete` per name it manages,
/// the block's other lines and the file's other lines kept; the block goes when nothing else
/// is left in it. A file without a block (or a guard line) is left as it is.
pub(crate) fn plan_hosts_removal(
    target: &str,
    content: &[u8],
    names: &ManagedNames<'_>,
) -> HostsPlan {
    let has_guard = lines(content).any(|line| {
        let trimmed = line.trim_ascii();
        trimmed == GUARD_BEGIN.as_bytes() || trimmed == GUARD_END.as_bytes()
    });
    if !has_guard {
        return HostsPlan {
            content: content.to_vec(),
            changes: Vec::new(),
        };
    }
    let (removed, kept): (HostRecords, HostRecords) = managed_records(content)
        .into_iter()
        .partition(|(name, _)| names.manages(name));
    let mut changes: Vec<Change> = removed
        .into_iter()
        .map(|(name, addresses)| Change {
            kind: ChangeKind::Hosts,
            target: name,
            action: Action::Delete,
            detail: format!(
                "{} -> none",
                addresses
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        })
        .collect();
    if !kept.is_empty() {
        // Others' lines stay in the block.
        let updated = update_hosts(content, &kept);
        if updated != content && changes.is_empty() {
            changes.push(Change {
                kind: ChangeKind::Hosts,
                target: target.to_owned(),
                action: Action::Update,
                detail: "repaired the managed block".to_owned(),
            });
        }
        return HostsPlan {
            content: if changes.is_empty() {
                content.to_vec()
            } else {
                updated
            },
            changes,
        };
    }
    if changes.is_empty() {
        // An empty block: the guards alone go.
        changes.push(Change {
            kind: ChangeKind::Hosts,
            target: target.to_owned(),
            action: Action::Update,
            detail: "empty managed block removed".to_owned(),
        });
    }
    let mut text = unmanaged_lines(content).join(&b'\n');
    if !text.is_empty() {
        text.push(b'\n');
    }
    HostsPlan {
        content: text,
        changes,
    }
}

/// The block's new records: the desired addresses, or for a name whose addresses are unknown
/// right now the ones it has; names the cloud no longer supports are dropped.
pub(crate) fn hosts_records(desired: &[DesiredRecord], current: &HostRecords) -> HostRecords {
    desired
        .iter()
        .filter_map(|record| {
            let addresses = if record.addresses.is_empty() {
                current.get(&record.name).cloned().unwrap_or_default()
            } else {
                record.addresses.clone()
            };
            (!addresses.is_empty()).then(|| (record.name.clone(), addresses))
        })
        .collect()
}

/// A planned rewrite of the hosts file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostsPlan {
    /// The new content (equal to the current one when nothing changes).
    pub(crate) content: Vec<u8>,
    /// One entry per name, and one for a layout-only repair.
    pub(crate) changes: Vec<Change>,
}

/// Plans the hosts file at `target` (its path, for the report) from its current `content` and the
/// desired records: one change per name (create, update, delete or unchanged), and when only the
/// block's layout needs repairing (duplicate or broken blocks), one `update` of the file itself.
pub(crate) fn plan_hosts(
    target: &str,
    content: &[u8],
    desired: &[DesiredRecord],
    names: &ManagedNames<'_>,
) -> HostsPlan {
    let all = managed_records(content);
    // Lines of the block that are not protokube's stay as they are, unreported.
    let (current, others): (HostRecords, HostRecords) = all
        .into_iter()
        .partition(|(name, _)| names.manages(name) || desired.iter().any(|d| &d.name == name));
    let wanted = hosts_records(desired, &current);
    let show = |a: Option<&Vec<IpAddr>>| {
        a.map_or_else(
            || "none".to_owned(),
            |a| {
                a.iter()
                    .map(std::string::ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
        )
    };
    let names: BTreeSet<&String> = current.keys().chain(wanted.keys()).collect();
    let mut changes = Vec::new();
    for name in names {
        let (old, new) = (current.get(name), wanted.get(name));
        let action = match (old, new) {
            (None, Some(_)) => Action::Create,
            (Some(_), None) => Action::Delete,
            (Some(a), Some(b)) if a == b => Action::Unchanged,
            _ => Action::Update,
        };
        changes.push(Change {
            kind: ChangeKind::Hosts,
            target: name.clone(),
            action,
            detail: if action == Action::Unchanged {
                show(new)
            } else {
                format!("{} -> {}", show(old), show(new))
            },
        });
    }
    let mut block = wanted;
    block.extend(others);
    let updated = update_hosts(content, &block);
    let records_changed = changes.iter().any(|c| c.action != Action::Unchanged);
    if updated != content && !records_changed {
        // Only the layout changed (duplicate or broken blocks repaired): still a change.
        changes.push(Change {
            kind: ChangeKind::Hosts,
            target: target.to_owned(),
            action: Action::Update,
            detail: "repaired the managed block".into(),
        });
    }
    HostsPlan {
        content: updated,
        changes,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::plan::dns::records::RecordRole;
    use std::path::Path;

    fn fixture(case: &str, file: &str) -> String {
        // The checkout as `cargo test` says it at run time (a shared target directory may
        // hold a build from another clone).
        let repo = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).to_owned(),
            Into::into,
        );
        let path = repo.join("tests/fixtures/kops/hosts").join(case).join(file);
        std::fs::read_to_string(path).unwrap()
    }

    /// `update_hosts` on text, giving text.
    fn update(content: &str, records: &HostRecords) -> String {
        String::from_utf8(update_hosts(content.as_bytes(), records)).unwrap()
    }

    const NAMES: ManagedNames<'static> = ManagedNames {
        cluster: "c",
        internal_suffix: ".internal.c",
        public_name: "api.c",
        api_names: true,
        yielded: &NO_NAMES,
    };
    const EXAMPLE: ManagedNames<'static> = ManagedNames {
        cluster: "example.com",
        internal_suffix: ".internal.example.com",
        yielded: &NO_NAMES,
        public_name: "a.example.com",
        api_names: true,
    };

    #[test]
    fn lines_of_the_block_that_are_not_protokube_s_are_kept() {
        // nodeup wrote the load balancer's address and a name of its own into the block.
        let nodeup = records(
            "api.internal.c: [10.1.1.1]\nnodeup.c: [10.1.1.2]\netcd-old.internal.c: [10.0.0.5]\n",
        );
        let content = update_hosts(b"127.0.0.1 localhost\n", &nodeup);
        let desired = [DesiredRecord {
            name: "etcd-a.internal.c".into(),
            role: RecordRole::EtcdMember,
            addresses: vec!["10.0.0.1".parse().unwrap()],
        }];
        let plan = plan_hosts("/etc/hosts", &content, &desired, &NAMES);
        let after = managed_records(&plan.content);
        assert_eq!(after["nodeup.c"], nodeup["nodeup.c"]);
        assert_eq!(after["etcd-a.internal.c"].len(), 1);
        // protokube's stale etcd name goes; api.internal is protokube's name, not desired here.
        assert!(!after.contains_key("etcd-old.internal.c"));
        assert!(!after.contains_key("api.internal.c"));
        assert!(plan.changes.iter().all(|c| c.target != "nodeup.c"));
        // reset takes protokube's names out and leaves nodeup's.
        let removal = plan_hosts_removal("/etc/hosts", &plan.content, &NAMES);
        assert_eq!(
            managed_records(&removal.content),
            records("nodeup.c: [10.1.1.2]\n")
        );
        let again = plan_hosts_removal("/etc/hosts", &removal.content, &NAMES);
        assert!(again.changes.is_empty());
    }

    fn records(yaml: &str) -> HostRecords {
        let raw: BTreeMap<String, Vec<String>> = yaml_serde::from_str(yaml).unwrap();
        raw.into_iter()
            .map(|(k, v)| (k, v.iter().map(|a| a.parse().unwrap()).collect()))
            .collect()
    }

    #[test]
    fn removal_drops_the_block_and_keeps_every_other_line() {
        let records = records(
            "api.internal.example.com: [10.0.0.1]\netcd-b.internal.example.com: [10.0.0.2]\n",
        );
        let original = b"127.0.0.1 localhost\r\n# keep\xff\n";
        let with_block = update_hosts(original, &records);
        let plan = plan_hosts_removal("/etc/hosts", &with_block, &EXAMPLE);
        assert_eq!(plan.content, b"127.0.0.1 localhost\r\n# keep\xff\n");
        let targets: Vec<(&str, Action)> = plan
            .changes
            .iter()
            .map(|c| (c.target.as_str(), c.action))
            .collect();
        assert_eq!(
            targets,
            [
                ("api.internal.example.com", Action::Delete),
                ("etcd-b.internal.example.com", Action::Delete)
            ]
        );
        // Removed once, nothing left to do.
        let again = plan_hosts_removal("/etc/hosts", &plan.content, &EXAMPLE);
        assert!(again.changes.is_empty());
        assert_eq!(again.content, plan.content);
        // An empty block's guards go too.
        let empty = update_hosts(b"x\n", &HostRecords::new());
        let plan = plan_hosts_removal("/etc/hosts", &empty, &EXAMPLE);
        assert_eq!(plan.content, b"x\n");
        assert_eq!(plan.changes[0].action, Action::Update);
    }

    #[test]
    fn kops_golden_cases() {
        for case in ["duplicate-guards", "bad-nesting"] {
            let input = fixture(case, "in");
            let expected = fixture(case, "expected");
            let records = records(&fixture(case, "records.yaml"));
            let once = update(&input, &records);
            assert_eq!(once, expected, "{case}");
            assert_eq!(
                update(&once, &records),
                expected,
                "{case}: second application"
            );
        }
    }

    #[test]
    fn a_well_formed_block_stays_where_it_is() {
        // etcd-manager moved its own block after kOps' one (its writer puts it last).
        let content = "127.0.0.1 localhost\n\n# Begin host entries managed by kops - do not edit\n\
                       10.0.0.1\ta\n# End host entries managed by kops\n\
                       # Begin host entries managed by etcd-manager[etcd] - do not edit\n\
                       10.0.0.9\tetcd-a.internal.c\n\
                       # End host entries managed by etcd-manager[etcd]\n";
        let same = records("a: [10.0.0.1]\n");
        assert_eq!(update(content, &same), content);
        let changed = update(content, &records("a: [10.0.0.2]\nb: [10.0.0.3]\n"));
        assert_eq!(
            changed,
            content.replace("10.0.0.1\ta\n", "10.0.0.2\ta\n10.0.0.3\tb\n")
        );
        // Nothing outside the block moves, the last line's missing newline included.
        let unterminated = content.trim_end_matches('\n');
        assert_eq!(update(unterminated, &same), unterminated);
    }

    #[test]
    fn another_writers_block_cut_short_is_a_write_caught_halfway() {
        let whole = "127.0.0.1 localhost\n# Begin host entries managed by etcd-manager[etcd] - do not edit\n\
                     10.0.0.9\tetcd-a.internal.c\n# End host entries managed by etcd-manager[etcd]\n";
        assert!(!caught_mid_write(whole.as_bytes()));
        let cut = &whole[..whole.len() - 20];
        assert!(caught_mid_write(cut.as_bytes()));
        assert!(caught_mid_write(b"127.0.0.1 localhost\n\0\0\0"));
        // kOps' own broken blocks are repaired, not waited on.
        assert!(!caught_mid_write(fixture("bad-nesting", "in").as_bytes()));
    }

    #[test]
    fn idempotent_over_a_hundred_applications() {
        let records = records("a: [10.0.0.2, 10.0.0.1]\nb: [10.0.0.1]\n");
        let mut content = "127.0.0.1 localhost\n".to_owned();
        let first = update(&content, &records);
        for _ in 0..100 {
            content = update(&content, &records);
            assert_eq!(content, first);
        }
        assert!(first.contains("10.0.0.1\ta b\n"), "{first}");
    }

    #[test]
    fn crlf_and_missing_final_newline_are_kept_outside_the_block() {
        let records = records("etcd-a.internal.c: [10.0.0.1]\n");
        let input = "127.0.0.1 localhost\r\n::1 localhost\r\n10.9.9.9 other";
        let out = update(input, &records);
        assert!(
            out.starts_with("127.0.0.1 localhost\r\n::1 localhost\r\n10.9.9.9 other\n\n"),
            "{out:?}"
        );
        assert_eq!(update(&out, &records), out);
    }

    #[test]
    fn managed_records_read_back_what_was_written() {
        let records = records("a: [10.0.0.2, 10.0.0.1]\nb: [10.0.0.1]\nc: []\n");
        let content = update_hosts(b"x\n", &records);
        let mut expected = records.clone();
        expected.remove("c");
        for addresses in expected.values_mut() {
            addresses.sort();
        }
        assert_eq!(managed_records(&content), expected);
    }

    #[test]
    fn bytes_that_are_not_utf8_outside_the_block_are_kept() {
        let records = records("a: [10.0.0.1]\n");
        let input = b"127.0.0.1 localhost # caf\xe9\n\xff\xfe raw\n";
        let out = update_hosts(input, &records);
        assert!(out.starts_with(input), "{out:?}");
        assert_eq!(update_hosts(&out, &records), out);
        assert_eq!(managed_records(&out), records);
    }

    #[test]
    fn a_layout_only_repair_is_a_change_of_the_file() {
        let desired = [DesiredRecord {
            name: "api.internal.c".into(),
            role: RecordRole::ApiInternal,
            addresses: vec!["10.0.0.9".parse().unwrap()],
        }];
        let first = plan_hosts("/etc/hosts", b"", &desired, &NAMES);
        assert_eq!(first.changes.len(), 1);
        assert_eq!(first.changes[0].action, Action::Create);
        let again = plan_hosts("/etc/hosts", &first.content, &desired, &NAMES);
        assert!(again.changes.iter().all(|c| c.action == Action::Unchanged));
        assert_eq!(again.content, first.content);
        // The same records, but the block duplicated: only the layout needs repairing.
        let doubled = [first.content.clone(), first.content.clone()].concat();
        let repaired = plan_hosts("/etc/hosts", &doubled, &desired, &NAMES);
        assert_eq!(repaired.content, first.content);
        assert!(repaired
            .changes
            .iter()
            .any(|c| c.target == "/etc/hosts" && c.detail == "repaired the managed block"));
    }

    #[test]
    fn unknown_names_keep_their_addresses_and_unsupported_ones_go() {
        let desired = [
            DesiredRecord {
                name: "etcd-a.internal.c".into(),
                role: RecordRole::EtcdMember,
                addresses: vec![],
            },
            DesiredRecord {
                name: "api.internal.c".into(),
                role: RecordRole::ApiInternal,
                addresses: vec!["10.0.0.9".parse().unwrap()],
            },
        ];
        let current: HostRecords = [
            (
                "etcd-a.internal.c".to_owned(),
                vec!["10.0.0.1".parse().unwrap()],
            ),
            (
                "etcd-z.internal.c".to_owned(),
                vec!["10.0.0.7".parse().unwrap()],
            ),
        ]
        .into();
        let records = hosts_records(&desired, &current);
        assert_eq!(records["etcd-a.internal.c"], current["etcd-a.internal.c"]);
        assert_eq!(records["api.internal.c"].len(), 1);
        assert!(!records.contains_key("etcd-z.internal.c"));
    }
}
