//! The record that protokube is formatting a volume, kept beside the state file.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::apply::files::write_atomic;
use crate::paths::{HostRoot, FORMATTING_DIR};

/// The record that protokube is formatting a volume: written before `mkfs` starts and removed
/// when the new filesystem has been verified. If a run is killed in between, the device holds a
/// half-made filesystem that no probe recognises; this record is the proof that the data is
/// protokube's own interrupted work, so the next run may format it again.
pub struct FormatIntent;

impl FormatIntent {
    fn path(root: &HostRoot, volume_id: &str) -> PathBuf {
        root.path(Path::new(FORMATTING_DIR).join(volume_id))
    }

    /// Records the intent (atomically, synced) before formatting `device`.
    pub fn record(root: &HostRoot, volume_id: &str, device: &Path) -> Result<()> {
        write_atomic(
            &Self::path(root, volume_id),
            format!("{}\n", device.display()).as_bytes(),
            0o600,
        )
        .context("recording the intent to format")?;
        Ok(())
    }

    /// Whether an earlier run started formatting the volume and did not finish.
    pub fn pending(root: &HostRoot, volume_id: &str) -> bool {
        Self::path(root, volume_id).exists()
    }

    /// Removes the record once the filesystem is verified.
    pub fn clear(root: &HostRoot, volume_id: &str) -> Result<()> {
        let path = Self::path(root, volume_id);
        match fs_err::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err).context("clearing the intent to format"),
        }
        if let Some(dir) = path.parent() {
            fs_err::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_intent_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        assert!(!FormatIntent::pending(&root, "vol-1"));
        FormatIntent::record(&root, "vol-1", Path::new("/dev/xvdu")).unwrap();
        assert!(FormatIntent::pending(&root, "vol-1"));
        assert!(!FormatIntent::pending(&root, "vol-2"));
        FormatIntent::clear(&root, "vol-1").unwrap();
        FormatIntent::clear(&root, "vol-1").unwrap();
        assert!(!FormatIntent::pending(&root, "vol-1"));
    }
}
