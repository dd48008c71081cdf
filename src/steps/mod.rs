//! The steps a command is made of. Each plans its changes from the settings and the snapshot
//! (pure functions in `plan/`), reports them, and — unless `--dry-run` — makes them through the
//! effect modules in `apply/`, then updates the snapshot for the steps after it.

pub mod claim;
pub mod discover;
pub mod mount;
pub mod publish;
pub mod render;

use anyhow::Result;

use crate::apply::files::RunLock;
use crate::settings::Settings;

/// The run lock for a mutating command; none with `--dry-run`, which changes nothing.
pub fn lock(settings: &Settings) -> Result<Option<RunLock>> {
    if settings.dry_run {
        Ok(None)
    } else {
        RunLock::acquire(&settings.root, settings.waits.timeout).map(Some)
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
