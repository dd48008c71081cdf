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
pub fn record(
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
pub fn record_formatted(
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
    let mut text = serde_json::to_string(&record)?;
    text.push('\n');
    let path = path(root, volume_id)?;
    files.apply(&plan_file(&path, &files.fact(&path)?, &text, 0o600))
}

/// The intent an earlier run left for `volume_id` and did not finish, if any.
pub fn pending(files: &dyn Files, root: &HostRoot, volume_id: &str) -> Result<Option<IntentUuid>> {
    let Some(bytes) = files
        .read(&path(root, volume_id)?, MAX_RECORD_BYTES)
        .context("reading the intent to format")?
    else {
        return Ok(None);
    };
    Ok(Some(match serde_json::from_slice::<Record>(&bytes) {
        Ok(record) if record.volume_id == volume_id && record.formatted => {
            IntentUuid::Formatted(record.uuid)
        }
        Ok(record) if record.volume_id == volume_id => IntentUuid::Uuid(record.uuid),
        // An older protokube wrote only the device path.
        _ => IntentUuid::Unknown,
    }))
}

/// Removes the record once the format is finished.
pub fn clear(files: &dyn Files, root: &HostRoot, volume_id: &str) -> Result<()> {
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

    #[test]
    fn round_trip_with_the_uuid() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::host::linux::root(dir.path()).unwrap();
        assert_eq!(pending(&LinuxHost, &root, "vol-1").unwrap(), None);
        record(&LinuxHost, &root, "vol-1", Path::new("/dev/xvdu"), "u-1").unwrap();
        assert_eq!(
            pending(&LinuxHost, &root, "vol-1").unwrap(),
            Some(IntentUuid::Uuid("u-1".into()))
        );
        assert_eq!(pending(&LinuxHost, &root, "vol-2").unwrap(), None);
        record_formatted(&LinuxHost, &root, "vol-1", Path::new("/dev/xvdu"), "u-1").unwrap();
        assert_eq!(
            pending(&LinuxHost, &root, "vol-1").unwrap(),
            Some(IntentUuid::Formatted("u-1".into()))
        );
        clear(&LinuxHost, &root, "vol-1").unwrap();
        clear(&LinuxHost, &root, "vol-1").unwrap();
        assert_eq!(pending(&LinuxHost, &root, "vol-1").unwrap(), None);
        // A record from an older protokube: the device path alone.
        let legacy = root.path(FORMATTING_DIR).join("vol-3");
        std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
        std::fs::write(&legacy, "/dev/xvdu\n").unwrap();
        assert_eq!(
            pending(&LinuxHost, &root, "vol-3").unwrap(),
            Some(IntentUuid::Unknown)
        );
    }
}
