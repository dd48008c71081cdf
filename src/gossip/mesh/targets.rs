//! mesh's connection maker, pure: the addresses to dial (the seeds, kept for good, and what
//! discovery offers, dropped when it no longer does), each tried again after a failure with
//! mesh's backoff (2 s, × 1.5 with jitter, up to 6 min; at once again after a connection that
//! lasted a minute), never again when it was this member itself.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

/// mesh's `initialInterval`, `maxInterval` and `resetAfter`.
const INITIAL: Duration = Duration::from_secs(2);
const MAX: Duration = Duration::from_mins(6);
const RESET_AFTER: Duration = Duration::from_mins(1);
/// The most addresses tracked.
const MAX_TARGETS: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Waiting,
    Attempting,
    Connected,
}

#[derive(Clone, Debug)]
struct Target {
    phase: Phase,
    /// When to try next; `None`: never (it was this member).
    try_after: Option<Instant>,
    interval: Duration,
}

impl Target {
    fn now(now: Instant) -> Self {
        Self {
            phase: Phase::Waiting,
            try_after: Some(now),
            interval: INITIAL,
        }
    }

    fn later(&mut self, now: Instant) {
        let jitter = self.interval.mul_f64(fastrand::f64());
        self.try_after = Some(now + self.interval / 2 + jitter);
        self.interval = (self.interval * 3 / 2).min(MAX);
    }
}

/// The addresses mesh dials.
#[derive(Debug, Default)]
pub(crate) struct Targets {
    targets: BTreeMap<SocketAddr, Target>,
}

impl Targets {
    /// The addresses to dial now among the `seeds` and the `discovered`, skipping those
    /// `connected` says a connection covers; returns them (now attempting) and when to look
    /// again.
    pub(crate) fn due(
        &mut self,
        seeds: &[SocketAddr],
        discovered: &BTreeSet<SocketAddr>,
        connected: impl Fn(SocketAddr) -> bool,
        now: Instant,
    ) -> (Vec<SocketAddr>, Option<Instant>) {
        let valid: BTreeSet<SocketAddr> = seeds
            .iter()
            .chain(discovered)
            .copied()
            .filter(|addr| !connected(*addr))
            .collect();
        for addr in &valid {
            if self.targets.len() < MAX_TARGETS || self.targets.contains_key(addr) {
                self.targets
                    .entry(*addr)
                    .or_insert_with(|| Target::now(now));
            }
        }
        // Discovered addresses no longer offered are dropped; seeds are kept.
        self.targets.retain(|addr, t| {
            t.phase != Phase::Waiting || valid.contains(addr) || seeds.contains(addr)
        });
        let (mut due, mut next) = (Vec::new(), None::<Instant>);
        for (addr, target) in &mut self.targets {
            if target.phase != Phase::Waiting || !valid.contains(addr) {
                continue;
            }
            match target.try_after {
                Some(at) if at <= now => {
                    target.phase = Phase::Attempting;
                    due.push(*addr);
                }
                Some(at) => next = Some(next.map_or(at, |n| n.min(at))),
                None => {}
            }
        }
        (due, next)
    }

    /// The dial of `addr` failed: later, with backoff.
    pub(crate) fn failed(&mut self, addr: SocketAddr, now: Instant) {
        if let Some(target) = self.targets.get_mut(&addr) {
            target.phase = Phase::Waiting;
            target.later(now);
        }
    }

    /// `addr` was this member: never again.
    pub(crate) fn ourself(&mut self, addr: SocketAddr) {
        if let Some(target) = self.targets.get_mut(&addr) {
            target.phase = Phase::Waiting;
            target.try_after = None;
        }
    }

    /// A connection dialled to `addr` is up.
    pub(crate) fn connected(&mut self, addr: SocketAddr) {
        if let Some(target) = self.targets.get_mut(&addr) {
            target.phase = Phase::Connected;
        }
    }

    /// The connection dialled to `addr` ended: at once again when it lasted past mesh's reset
    /// time since the last try, else later.
    pub(crate) fn ended(&mut self, addr: SocketAddr, now: Instant) {
        if let Some(target) = self.targets.get_mut(&addr) {
            target.phase = Phase::Waiting;
            let lasted = target.try_after.is_some_and(|at| now > at + RESET_AFTER);
            if lasted {
                *target = Target::now(now);
            } else {
                target.later(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], 3999))
    }

    #[test]
    fn a_failing_address_is_tried_with_growing_pauses() {
        let now = Instant::now();
        let mut targets = Targets::default();
        let (due, _) = targets.due(&[addr(1)], &BTreeSet::new(), |_| false, now);
        assert_eq!(due, [addr(1)]);
        let (due, _) = targets.due(&[addr(1)], &BTreeSet::new(), |_| false, now);
        assert!(due.is_empty(), "attempting");
        let mut pauses = Vec::new();
        let mut at = now;
        for _ in 0..20 {
            targets.failed(addr(1), at);
            let (due, next) = targets.due(&[addr(1)], &BTreeSet::new(), |_| false, at);
            assert!(due.is_empty());
            let next = next.unwrap();
            pauses.push(next - at);
            at = next;
            assert_eq!(
                targets.due(&[addr(1)], &BTreeSet::new(), |_| false, at).0,
                [addr(1)]
            );
        }
        assert!(
            pauses[0] >= Duration::from_secs(1) && pauses[0] <= Duration::from_secs(3),
            "{pauses:?}"
        );
        assert!(pauses.iter().all(|p| *p <= MAX * 3 / 2), "{pauses:?}");
        assert!(pauses[19] >= MAX / 2, "capped, still jittered: {pauses:?}");
    }

    #[test]
    fn discovered_addresses_come_and_go_seeds_stay_and_ourself_is_never_dialled() {
        let now = Instant::now();
        let mut targets = Targets::default();
        let found = BTreeSet::from([addr(2), addr(3)]);
        let (due, _) = targets.due(&[addr(1)], &found, |a| a == addr(3), now);
        assert_eq!(due, [addr(1), addr(2)]);
        targets.ourself(addr(1));
        targets.failed(addr(2), now);
        let (due, next) = targets.due(&[addr(1)], &BTreeSet::new(), |_| false, now + MAX);
        assert!(due.is_empty() && next.is_none(), "{due:?} {next:?}");
        assert!(targets.targets.contains_key(&addr(1)) && !targets.targets.contains_key(&addr(2)));
    }

    #[test]
    fn a_connection_that_lasted_is_tried_again_at_once() {
        let now = Instant::now();
        let mut targets = Targets::default();
        targets.due(&[addr(1)], &BTreeSet::new(), |_| false, now);
        targets.connected(addr(1));
        let later = now + Duration::from_mins(5);
        targets.ended(addr(1), later);
        assert_eq!(
            targets
                .due(&[addr(1)], &BTreeSet::new(), |_| false, later)
                .0,
            [addr(1)]
        );
        targets.connected(addr(1));
        targets.ended(addr(1), later + Duration::from_secs(1));
        assert!(targets
            .due(
                &[addr(1)],
                &BTreeSet::new(),
                |_| false,
                later + Duration::from_secs(1)
            )
            .0
            .is_empty());
    }
}
