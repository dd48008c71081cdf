//! Stop signals for what does not end: the old daemon's pause between runs (kOps' nodeup starts
//! protokube with no subcommand under `protokube.service`, `Restart=always`; it runs `sync` now
//! and then every minute, and ends between runs on SIGTERM or SIGINT, as the old daemon's unit
//! expects), and `protokube gossip`'s wait for a stop.

use std::time::Duration;

use anyhow::{Context as _, Result};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// How long the old daemon waits between runs (its loop).
pub const INTERVAL: Duration = Duration::from_mins(1);

/// The pause between runs, cut short by a stop signal. The signals are caught from creation
/// on, so one that arrives during a run lets the run finish and is seen at the next wait: a
/// node is never left half-changed by a stop.
pub(crate) struct Pause {
    interval: Duration,
    terminate: Signal,
    interrupt: Signal,
}

impl Pause {
    /// Catches SIGTERM and SIGINT from now on.
    pub(crate) fn new(interval: Duration) -> Result<Self> {
        Ok(Self {
            interval,
            terminate: signal(SignalKind::terminate()).context("handling SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("handling SIGINT")?,
        })
    }

    /// The pause between runs.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// Waits one interval: true to run again, false when a stop signal came.
    pub(crate) async fn next(&mut self) -> bool {
        tokio::select! {
            () = tokio::time::sleep(self.interval) => true,
            _ = self.terminate.recv() => false,
            _ = self.interrupt.recv() => false,
        }
    }
}

/// Returns when SIGTERM or SIGINT arrives (`protokube gossip` until stopped); never when
/// the signals cannot be caught (then the process ends by the default action).
pub(crate) async fn stopped() {
    let Ok(mut pause) = Pause::new(Duration::from_hours(1)) else {
        return std::future::pending().await;
    };
    while pause.next().await {}
}
