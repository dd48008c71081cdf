//! What writing a file, a symlink or a log file would change, from what is on disk now. Pure:
//! the facts come from `apply::files::read_fact`.

use std::path::{Path, PathBuf};

use crate::report::{Action, Change, ChangeKind};

/// What is at a path now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileFact {
    Missing,
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Symlink(PathBuf),
    /// A directory, device or other kind of file.
    Other,
}

/// What a path should become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Desired {
    /// A regular file with these bytes and this mode, written atomically.
    File { bytes: Vec<u8>, mode: u32 },
    /// A symlink with this target, replaced atomically.
    Symlink(PathBuf),
    /// An empty log file created when missing, never truncated.
    LogFile { mode: u32 },
    /// Nothing: the file or symlink is removed.
    Absent,
}

/// One planned file change: where, what it becomes, and how it is reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The path as seen from here (under `--root`).
    pub(crate) path: PathBuf,
    pub(crate) desired: Desired,
    pub(crate) action: Action,
    pub(crate) detail: String,
}

impl FileChange {
    /// The report entry.
    pub(crate) fn change(&self) -> Change {
        Change {
            kind: ChangeKind::File,
            target: self.path.display().to_string(),
            action: self.action,
            detail: self.detail.clone(),
        }
    }
}

/// Removing the file or symlink at `path` (`reset`); unchanged when nothing is there.
pub(crate) fn plan_removal(path: &Path, current: &FileFact) -> FileChange {
    let (action, detail) = match current {
        FileFact::Missing => (Action::Unchanged, "not there".to_owned()),
        FileFact::Symlink(target) => (Action::Delete, format!("link to {}", target.display())),
        FileFact::File { bytes, .. } => (Action::Delete, format!("{} bytes", bytes.len())),
        FileFact::Other => (Action::Delete, "not a regular file".to_owned()),
    };
    FileChange {
        path: path.to_owned(),
        desired: Desired::Absent,
        action,
        detail,
    }
}

/// Putting back what `current` was at `path` before a removal (a `reset` that could not finish
/// leaves the node as it was); `None` for what cannot be put back (nothing, a directory).
pub(crate) fn plan_restore(path: &Path, current: &FileFact) -> Option<FileChange> {
    let desired = match current {
        FileFact::File { bytes, mode } => Desired::File {
            bytes: bytes.clone(),
            mode: *mode,
        },
        FileFact::Symlink(target) => Desired::Symlink(target.clone()),
        FileFact::Missing | FileFact::Other => return None,
    };
    Some(FileChange {
        path: path.to_owned(),
        desired,
        action: Action::Create,
        detail: "restored".to_owned(),
    })
}

/// A regular file: created, updated (with a unified diff of the text, or the mode change) or
/// unchanged when bytes and mode are equal.
pub(crate) fn plan_file(path: &Path, current: &FileFact, contents: &str, mode: u32) -> FileChange {
    let (action, detail) = match current {
        FileFact::Missing => (
            Action::Create,
            format!("{} lines", contents.lines().count()),
        ),
        FileFact::File { bytes, mode: old } if bytes == contents.as_bytes() => {
            if *old == mode {
                (Action::Unchanged, String::new())
            } else {
                (Action::Update, format!("mode {old:04o} -> {mode:04o}"))
            }
        }
        FileFact::File { bytes, .. } => (
            Action::Update,
            similar::TextDiff::from_lines(String::from_utf8_lossy(bytes).as_ref(), contents)
                .unified_diff()
                .context_radius(2)
                .header("current", "rendered")
                .to_string(),
        ),
        FileFact::Symlink(_) | FileFact::Other => (
            Action::Update,
            "replaces what is there with a regular file".to_owned(),
        ),
    };
    FileChange {
        path: path.to_owned(),
        desired: Desired::File {
            bytes: contents.as_bytes().to_vec(),
            mode,
        },
        action,
        detail,
    }
}

/// A symlink to `target`: unchanged when the link already points there.
pub(crate) fn plan_symlink(path: &Path, current: &FileFact, target: &Path) -> FileChange {
    let action = match current {
        FileFact::Symlink(existing) if existing == target => Action::Unchanged,
        FileFact::Missing => Action::Create,
        _ => Action::Update,
    };
    FileChange {
        path: path.to_owned(),
        desired: Desired::Symlink(target.to_owned()),
        action,
        detail: if action == Action::Unchanged {
            String::new()
        } else {
            format!("symlink to {}", target.display())
        },
    }
}

/// A log file a pod mounts: created when missing (a missing hostPath would become a directory),
/// otherwise left alone and not reported.
pub(crate) fn plan_log_file(path: &Path, current: &FileFact, mode: u32) -> Option<FileChange> {
    (*current == FileFact::Missing).then(|| FileChange {
        path: path.to_owned(),
        desired: Desired::LogFile { mode },
        action: Action::Create,
        detail: "empty log file".into(),
    })
}

/// The relative symlink target from `link_host_path` to `target_host_path`, so the link resolves
/// the same on the host and under `--root`.
pub(crate) fn relative_target(link_host_path: &Path, target_host_path: &Path) -> PathBuf {
    let link_dir: Vec<_> = link_host_path
        .parent()
        .map(|p| p.components().skip(1).collect())
        .unwrap_or_default();
    let target: Vec<_> = target_host_path.components().skip(1).collect();
    let common = link_dir
        .iter()
        .zip(&target)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in common..link_dir.len() {
        out.push("..");
    }
    for part in &target[common..] {
        out.push(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_created_updated_with_a_diff_or_left() {
        let path = Path::new("/r/etc/x.manifest");
        let created = plan_file(path, &FileFact::Missing, "a\nb\n", 0o644);
        assert_eq!(
            (created.action, created.detail.as_str()),
            (Action::Create, "2 lines")
        );
        let same = FileFact::File {
            bytes: b"a\nb\n".to_vec(),
            mode: 0o644,
        };
        assert_eq!(
            plan_file(path, &same, "a\nb\n", 0o644).action,
            Action::Unchanged
        );
        let mode = plan_file(path, &same, "a\nb\n", 0o600);
        assert_eq!(
            (mode.action, mode.detail.as_str()),
            (Action::Update, "mode 0644 -> 0600")
        );
        let diff = plan_file(path, &same, "a\nc\n", 0o644);
        assert_eq!(diff.action, Action::Update);
        assert!(diff.detail.contains("-b\n+c"), "{}", diff.detail);
        let dir = plan_file(path, &FileFact::Other, "a", 0o644);
        assert_eq!(dir.action, Action::Update);
    }

    #[test]
    fn symlinks_and_log_files() {
        let path = Path::new("/r/etc/etcd.manifest");
        let target = Path::new("../../mnt/x");
        assert_eq!(
            plan_symlink(path, &FileFact::Symlink(target.into()), target).action,
            Action::Unchanged
        );
        assert_eq!(
            plan_symlink(path, &FileFact::Missing, target).action,
            Action::Create
        );
        assert_eq!(
            plan_symlink(path, &FileFact::Symlink("/elsewhere".into()), target).action,
            Action::Update
        );
        let file = FileFact::File {
            bytes: vec![],
            mode: 0o644,
        };
        assert_eq!(plan_symlink(path, &file, target).action, Action::Update);
        assert!(plan_log_file(path, &file, 0o644).is_none());
        assert_eq!(
            plan_log_file(path, &FileFact::Missing, 0o400)
                .unwrap()
                .desired,
            Desired::LogFile { mode: 0o400 }
        );
    }

    #[test]
    fn symlink_targets_are_relative() {
        assert_eq!(
            relative_target(
                Path::new("/etc/kubernetes/manifests/etcd.manifest"),
                Path::new("/mnt/master-vol-1/k8s.io/manifests/etcd.manifest")
            ),
            Path::new("../../../mnt/master-vol-1/k8s.io/manifests/etcd.manifest")
        );
        assert_eq!(
            relative_target(Path::new("/a/b/link"), Path::new("/a/c/file")),
            Path::new("../c/file")
        );
    }
}
