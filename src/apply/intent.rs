//! The record that protokube is formatting a volume, kept beside the state file: written
//! (synced) before `mkfs` starts, naming the volume, the device and the UUID `mkfs` is given;
//! removed once the volume carries its formatted tag. If a run is killed in between, the device
//! holds a half-made filesystem; this record proves it is protokube's own work, so the next run
//! may format it again — only it, recognised by that UUID.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::host::Files;
use crate::paths::{HostRoot, FORMATTING_DIR};
use crate::plan::blank::IntentUuid;
use crate::plan::files::{plan_file, plan_removal};

/// The largest record read (ours are under 200 bytes).
const MAX_RECORD_BYTES: u64 = 64 << 10;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    volume_id: String,
    device: PathBuf,
    uuid: String,
    /// `mkfs` finished but the cloud refused the formatted tag: the record stays as the node's
    /// witness that this filesystem is protokube's (never formatted again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    formatted: bool,
}

fn path(root: &HostRoot, volume_id: &str) -> Result<PathBuf> {
    root.own(Path::new(FORMATTING_DIR).join(volume_id))
}

/// Records the intent to format `device` of `volume_id` with filesystem UUID `uuid`.
pub(crate) fn record(
    files: &dyn Files,
    root: &HostRoot,
    volume_id: &str,
    device: &Path,
    uuid: &str,
) -> Result<()> {
    write(files, root, volume_id, device, uuid, false).context("recording the intent to format")
}

/// Records that the format of `volume_id` with `uuid` finished though the cloud refused its
/// formatted tag: from now on this record witnesses the filesystem in the tag's place.
pub(crate) fn record_formatted(
    files: &dyn Files,
    root: &HostRoot,
    volume_id: &str,
    device: &Path,
    uuid: &str,
) -> Result<()> {
    write(files, root, volume_id, device, uuid, true).context("recording the format on this node")
}

fn write(
    files: &dyn Files,
    root: &HostRoot,
    volume_id: &str,
    device: &Path,
    uuid: &str,
    formatted: bool,
) -> Result<()> {
    let record = Record {
        volume_id: volume_id.to_owned(),
        device: device.to_owned(),
        uuid: uuid.to_owned(),
        formatted,
    };
    let text = to_text(&record)?;
    let path = path(root, volume_id)?;
    files.apply(&plan_file(&path, &files.fact(&path)?, &text, 0o600))
}

/// The record an earlier run left for `volume_id`, if any, read strictly: anything but exactly
/// what protokube writes (another volume's id, a field of another type or name, trailing bytes,
/// an empty file, an older form) is [`IntentUuid::Invalid`], which permits nothing.
pub(crate) fn pending(
    files: &dyn Files,
    root: &HostRoot,
    volume_id: &str,
) -> Result<Option<IntentUuid>> {
    let path = path(root, volume_id)?;
    let Some(bytes) = files
        .read(&path, MAX_RECORD_BYTES)
        .context("reading the intent to format")?
    else {
        return Ok(None);
    };
    let invalid = |why: String| {
        IntentUuid::Invalid(format!(
            "the format record `{}` on this node {why}",
            root.host_path_of(&path).display()
        ))
    };
    let record = match serde_json::from_slice::<Record>(&bytes) {
        Ok(record) => record,
        Err(err) => {
            return Ok(Some(invalid(format!(
                "is not one protokube writes ({err})"
            ))))
        }
    };
    if record.volume_id != volume_id {
        return Ok(Some(invalid(format!(
            "names volume `{}`, not `{volume_id}`",
            record.volume_id.escape_debug()
        ))));
    }
    if uuid::Uuid::parse_str(&record.uuid).is_err() || !record.device.is_absolute() {
        return Ok(Some(invalid(
            "does not name a filesystem UUID and a device path".to_owned(),
        )));
    }
    // Exactly the bytes protokube writes for it (its final newline may be missing): nothing
    // before, between or after.
    let text = to_text(&record)?;
    if text.as_bytes() != bytes.as_slice() && text.trim_end().as_bytes() != bytes.as_slice() {
        return Ok(Some(invalid(
            "is not exactly what protokube writes (extra bytes or another layout)".to_owned(),
        )));
    }
    Ok(Some(if record.formatted {
        IntentUuid::Formatted(record.uuid)
    } else {
        IntentUuid::Uuid(record.uuid)
    }))
}

/// A record's text: one line of JSON.
fn to_text(record: &Record) -> Result<String> {
    let mut text = serde_json::to_string(record)?;
    text.push('\n');
    Ok(text)
}

/// Removes the record once the format is finished.
pub(crate) fn clear(files: &dyn Files, root: &HostRoot, volume_id: &str) -> Result<()> {
    let path = path(root, volume_id)?;
    files
        .apply(&plan_removal(&path, &files.fact(&path)?))
        .context("clearing the intent to format")
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::host::linux::LinuxHost;

    const UUID: &str = "0b5e4f2c-8f3e-4e0a-9c55-3f5f0b1d2a11";

    #[test]
    fn round_trip_with_the_uuid() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::host::linux::root(dir.path()).unwrap();
        assert_eq!(pending(&LinuxHost, &root, "vol-1").unwrap(), None);
        record(&LinuxHost, &root, "vol-1", Path::new("/dev/xvdu"), UUID).unwrap();
        assert_eq!(
            pending(&LinuxHost, &root, "vol-1").unwrap(),
            Some(IntentUuid::Uuid(UUID.into()))
        );
        assert_eq!(pending(&LinuxHost, &root, "vol-2").unwrap(), None);
        record_formatted(&LinuxHost, &root, "vol-1", Path::new("/dev/xvdu"), UUID).unwrap();
        assert_eq!(
            pending(&LinuxHost, &root, "vol-1").unwrap(),
            Some(IntentUuid::Formatted(UUID.into()))
        );
        clear(&LinuxHost, &root, "vol-1").unwrap();
        clear(&LinuxHost, &root, "vol-1").unwrap();
        assert_eq!(pending(&LinuxHost, &root, "vol-1").unwrap(), None);
        // Anything but exactly what protokube writes permits nothing.
        let dir = root.path(FORMATTING_DIR);
        record(&LinuxHost, &root, "vol-1", Path::new("/dev/xvdu"), UUID).unwrap();
        let good = std::fs::read_to_string(dir.join("vol-1")).unwrap();
        for (bad, why) in [
            ("/dev/xvdu\n".to_owned(), "not one protokube writes"),
            (String::new(), "not one protokube writes"),
            (
                good.replace("\"vol-1\"", "\"vol-2\""),
                "names volume `vol-2`",
            ),
            (
                good.replace('}', ",\"formatted\":\"true\"}"),
                "not one protokube writes",
            ),
            (
                good.replace('}', ",\"extra\":1}"),
                "not one protokube writes",
            ),
            (format!("{good}{good}"), "not one protokube writes"),
            (format!("{good}\n"), "not exactly"),
            (format!(" {good}"), "not exactly"),
            (
                good.replace("\"uuid\":\"0b5e", "\"uuid\":\"xxxx"),
                "filesystem UUID",
            ),
        ] {
            std::fs::write(dir.join("vol-1"), &bad).unwrap();
            match pending(&LinuxHost, &root, "vol-1").unwrap() {
                Some(IntentUuid::Invalid(message)) => {
                    assert!(message.contains(why), "{bad:?}: {message}");
                    assert!(
                        message.contains("/var/lib/protokube/formatting/vol-1"),
                        "{message}"
                    );
                }
                other => panic!("{bad:?} read as {other:?}"),
            }
        }
    }
}
