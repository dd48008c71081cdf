//! The `/etc/hosts` provider: kOps' guarded block (pure editing) and the file write (atomic
//! rename, or in place with re-read verification where `/etc/hosts` is a bind mount).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{bail, Context as _, Result};

use crate::fsutil::{write_atomic, WriteOutcome};

/// First line of the managed block (compared after trimming).
pub const GUARD_BEGIN: &str = "# Begin host entries managed by kops - do not edit";
/// Last line of the managed block.
pub const GUARD_END: &str = "# End host entries managed by kops";

/// Name → addresses, as the hosts block holds them.
pub type HostRecords = BTreeMap<String, Vec<Ipv4Addr>>;

/// The records in the managed block(s) of `content` (every block, also broken ones).
pub fn managed_records(content: &str) -> HostRecords {
    let mut records = HostRecords::new();
    let mut in_block = false;
    for line in content.split('\n') {
        let trimmed = line.trim();
        if trimmed == GUARD_BEGIN {
            in_block = true;
            continue;
        }
        if trimmed == GUARD_END {
            in_block = false;
            continue;
        }
        if !in_block {
            continue;
        }
        let mut fields = trimmed.split_whitespace();
        let Some(Ok(address)) = fields.next().map(str::parse::<Ipv4Addr>) else {
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

/// The new content of a hosts file: every line outside managed blocks kept (a stray end guard
/// dropped, duplicate and broken blocks collapsed), trailing blank lines trimmed, one blank line,
/// then one block with a line `addr<TAB>name name…` per address (names sorted, lines sorted), and
/// a final newline. A name without addresses gets no line. Applying it again changes nothing.
pub fn update_hosts(content: &str, records: &HostRecords) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut in_block = false;
    for line in content.split('\n') {
        let trimmed = line.trim();
        if trimmed == GUARD_BEGIN {
            in_block = true;
        } else if trimmed == GUARD_END {
            in_block = false;
        } else if !in_block {
            out.push(line);
        }
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    let mut by_address: BTreeMap<Ipv4Addr, Vec<&str>> = BTreeMap::new();
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
            names.sort();
            format!("{address}\t{}", names.join(" "))
        })
        .collect();
    block.sort();
    let mut text = out.join("\n");
    text.push('\n');
    text.push('\n');
    text.push_str(GUARD_BEGIN);
    text.push('\n');
    for line in &block {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(GUARD_END);
    text.push('\n');
    text
}

/// Writes `/etc/hosts` (at `path`) when its bytes change: by atomic rename where possible; where
/// the file is a bind mount (rename fails with EBUSY), in place, then read back to verify.
pub fn write_hosts(path: &Path, content: &str) -> Result<WriteOutcome> {
    let current = match fs_err::read(path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err).context("reading the hosts file"),
    };
    if current.as_deref() == Some(content.as_bytes()) {
        return Ok(WriteOutcome::Unchanged);
    }
    let mode = {
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644)
    };
    match write_atomic(path, content.as_bytes(), mode) {
        Ok(outcome) => Ok(outcome),
        Err(err) if is_busy(&err) => {
            tracing::debug!("`{}` is a mount point; writing in place", path.display());
            let mut file = fs_err::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)
                .context("opening the hosts file for an in-place write")?;
            file.write_all(content.as_bytes())?;
            file.sync_all()?;
            let written = fs_err::read(path)?;
            if written != content.as_bytes() {
                bail!(
                    "`{}` does not hold what was written (another writer?); run again",
                    path.display()
                );
            }
            Ok(WriteOutcome::Updated)
        }
        Err(err) => Err(err),
    }
}

/// Rename onto a mount point fails with EBUSY (or EXDEV): the file is a bind mount.
fn is_busy(err: &anyhow::Error) -> bool {
    use std::io::ErrorKind;
    err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                ErrorKind::ResourceBusy | ErrorKind::CrossesDevices
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(case: &str, file: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kops/hosts")
            .join(case)
            .join(file);
        std::fs::read_to_string(path).unwrap()
    }

    fn records(yaml: &str) -> HostRecords {
        let raw: BTreeMap<String, Vec<String>> = serde_yaml::from_str(yaml).unwrap();
        raw.into_iter()
            .map(|(k, v)| (k, v.iter().map(|a| a.parse().unwrap()).collect()))
            .collect()
    }

    #[test]
    fn kops_golden_cases() {
        for case in ["duplicate-guards", "bad-nesting"] {
            let input = fixture(case, "in");
            let expected = fixture(case, "expected");
            let records = records(&fixture(case, "records.yaml"));
            let once = update_hosts(&input, &records);
            assert_eq!(once, expected, "{case}");
            assert_eq!(
                update_hosts(&once, &records),
                expected,
                "{case}: second application"
            );
        }
    }

    #[test]
    fn idempotent_over_a_hundred_applications() {
        let records = records("a: [10.0.0.2, 10.0.0.1]\nb: [10.0.0.1]\n");
        let mut content = "127.0.0.1 localhost\n".to_owned();
        let first = update_hosts(&content, &records);
        for _ in 0..100 {
            content = update_hosts(&content, &records);
            assert_eq!(content, first);
        }
        assert!(first.contains("10.0.0.1\ta b\n"), "{first}");
    }

    #[test]
    fn crlf_and_missing_final_newline_are_kept_outside_the_block() {
        let records = records("etcd-a.internal.c: [10.0.0.1]\n");
        let input = "127.0.0.1 localhost\r\n::1 localhost\r\n10.9.9.9 other";
        let out = update_hosts(input, &records);
        assert!(
            out.starts_with("127.0.0.1 localhost\r\n::1 localhost\r\n10.9.9.9 other\n\n"),
            "{out:?}"
        );
        assert_eq!(update_hosts(&out, &records), out);
    }

    #[test]
    fn managed_records_read_back_what_was_written() {
        let records = records("a: [10.0.0.2, 10.0.0.1]\nb: [10.0.0.1]\nc: []\n");
        let content = update_hosts("x\n", &records);
        let mut expected = records.clone();
        expected.remove("c");
        for addresses in expected.values_mut() {
            addresses.sort();
        }
        assert_eq!(managed_records(&content), expected);
    }

    #[test]
    fn in_place_write_when_rename_is_impossible() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "old\n").unwrap();
        assert_eq!(
            write_hosts(&path, "old\n").unwrap(),
            WriteOutcome::Unchanged
        );
        assert_eq!(write_hosts(&path, "new\n").unwrap(), WriteOutcome::Updated);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    }
}
