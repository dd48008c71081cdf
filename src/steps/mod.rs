//! The steps a command is made of. Each plans its changes from the settings and the snapshot
//! (pure functions in `plan/`), reports them, and — unless `--dry-run` — makes them through the
//! effect modules in `apply/`, then updates the snapshot for the steps after it.

pub mod claim;
pub mod discover;
pub mod mount;
pub mod publish;
pub mod render;
pub mod reset;
pub mod verify;

use anyhow::{Context as _, Result};

use std::path::PathBuf;

use crate::apply::files::RunLock;
use crate::apply::route53::PublishOptions;
use crate::paths::MANIFEST_DIR;
use crate::plan::route53::ZonePolicy;
use crate::settings::Settings;

/// The run lock for a mutating command; none with `--dry-run`, which changes nothing.
pub fn lock(settings: &Settings) -> Result<Option<RunLock>> {
    if settings.dry_run {
        Ok(None)
    } else {
        RunLock::acquire(&settings.root, settings.waits.timeout).map(Some)
    }
}

/// The resolved manifest directory and the names of its entries (none when it is missing).
pub fn manifest_dir_entries(settings: &Settings) -> Result<(PathBuf, Vec<String>)> {
    let dir = settings.root.resolve(MANIFEST_DIR)?;
    let entries = match fs_err::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok((dir, Vec::new())),
        Err(err) => return Err(err).context("listing the static-pod manifests"),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.context("listing the static-pod manifests")?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok((dir, names))
}

/// The etcd-manager pods kOps (1.12 and later) runs on this node, if any: they own the etcd
/// volumes (same tags, same mount points), so protokube must not claim, mount or run etcd on
/// them. A sentence naming them, or `None`.
pub fn etcd_manager_runs_here(settings: &Settings) -> Result<Option<String>> {
    let (dir, names) = manifest_dir_entries(settings)?;
    let found: Vec<String> = names
        .into_iter()
        .filter(|name| name.starts_with("etcd-manager-") && name.ends_with(".manifest"))
        .collect();
    Ok((!found.is_empty()).then(|| {
        format!(
            "etcd-manager runs on this node ({} in `{}`) and owns the etcd volumes: protokube \
             leaves them, and etcd, to it",
            found.join(", "),
            dir.display()
        )
    }))
}

/// How the DNS steps talk to Route53, from the settings and the step's zone policy.
pub fn publish_options(settings: &Settings, policy: ZonePolicy) -> PublishOptions {
    PublishOptions {
        dry_run: settings.dry_run,
        wait: settings.dns_wait.then_some(settings.waits.timeout),
        progress: settings.waits.progress,
        wait_backoff: settings.waits.dns.clone(),
        policy,
    }
}

/// The first of several errors (the run's error line); the others are logged.
fn first_error(errors: Vec<anyhow::Error>) -> Result<()> {
    let mut errors = errors.into_iter();
    match errors.next() {
        Some(first) => {
            for other in errors {
                tracing::error!("{other:#}");
            }
            Err(first)
        }
        None => Ok(()),
    }
}
