//! Block devices and mounts on this host. This module is the only place that reads the mount table
//! (and, later, the only user of `sys-mount`).

use std::path::Path;

use anyhow::{Context as _, Result};

/// One line of `/proc/self/mountinfo`, the parts we use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
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
            let mountpoint = before.split(' ').nth(4)?;
            let mut rest = after.split(' ');
            let fstype = rest.next()?;
            let source = rest.next()?;
            Some(MountEntry {
                mountpoint: unescape_mountinfo(mountpoint),
                fstype: unescape_mountinfo(fstype),
                source: unescape_mountinfo(source),
            })
        })
        .collect()
}

/// The current mounts of this process's mount namespace.
pub fn mount_table() -> Result<Vec<MountEntry>> {
    let text = fs_err::read_to_string("/proc/self/mountinfo").context("reading the mount table")?;
    Ok(parse_mountinfo(&text))
}

/// What is mounted at `mountpoint` (the last mount wins, as it hides earlier ones).
pub fn mounted_at<'a>(table: &'a [MountEntry], mountpoint: &Path) -> Option<&'a MountEntry> {
    let wanted = mountpoint.to_string_lossy();
    table.iter().rev().find(|m| m.mountpoint == wanted)
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
        let entry = mounted_at(&table, Path::new("/tmp/r x/mnt/master-vol-1")).unwrap();
        assert_eq!(entry.source, "/dev/loop3");
        assert_eq!(entry.fstype, "ext4");
        let entry = mounted_at(&table, Path::new("/tmp/r/mnt/master-vol-2")).unwrap();
        assert_eq!(entry.source, "/dev/loop5");
        assert!(mounted_at(&table, Path::new("/tmp/r/mnt/master-vol-3")).is_none());
    }
}
