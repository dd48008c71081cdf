//! What the member knows, shared by its protocols and its hosts writer: each protocol's kOps
//! state (with where each key came from), its peers, this node's own records, and a
//! generation that moves on every change (watched by the hosts writer and the broadcasters).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::view::{view, Protocol, ProtocolState, View};
use super::wire::protobuf::{KvRecord, KvState};

/// The member's shared knowledge.
pub(crate) struct Store {
    inner: Mutex<Inner>,
    /// Moves on every change of any protocol's state.
    changed: watch::Sender<u64>,
    /// Moves when this node's own records change (each protocol broadcasts them).
    published: watch::Sender<u64>,
    /// The protocols, primary first.
    protocols: Vec<Protocol>,
}

struct Inner {
    states: BTreeMap<Protocol, ProtocolState>,
    peers: BTreeMap<Protocol, usize>,
    changed_at: SystemTime,
}

/// Counts for the metrics file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Figures {
    pub(crate) peers: BTreeMap<Protocol, usize>,
    pub(crate) records: usize,
    pub(crate) changed_at: SystemTime,
}

impl Store {
    /// A store for `protocols` (primary first).
    pub(crate) fn new(protocols: Vec<Protocol>) -> Self {
        let states = protocols
            .iter()
            .map(|p| (*p, ProtocolState::default()))
            .collect();
        let peers = protocols.iter().map(|p| (*p, 0)).collect();
        Self {
            inner: Mutex::new(Inner {
                states,
                peers,
                changed_at: SystemTime::now(),
            }),
            changed: watch::channel(0).0,
            published: watch::channel(0).0,
            protocols,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Merges what `peer` sent on `protocol`; returns the delta (empty when nothing was new).
    pub(crate) fn merge(&self, protocol: Protocol, peer: &str, incoming: &KvState) -> KvState {
        let delta = {
            let mut inner = self.lock();
            let delta = inner
                .states
                .entry(protocol)
                .or_default()
                .merge_from(peer, incoming);
            if !delta.records.is_empty() {
                inner.changed_at = SystemTime::now();
            }
            delta
        };
        if !delta.records.is_empty() {
            self.changed.send_modify(|g| *g += 1);
        }
        delta
    }

    /// `protocol`'s whole state, to send.
    pub(crate) fn state(&self, protocol: Protocol) -> KvState {
        self.lock()
            .states
            .get(&protocol)
            .map(|s| s.state.clone())
            .unwrap_or_default()
    }

    /// Sets this node's own records (a value, or `None` for a deletion) in every protocol's
    /// state, each at a version newer than the one it holds (Unix seconds, as kOps).
    pub(crate) fn publish(&self, records: &[(String, Option<Vec<u8>>)], node: &str) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut changed = false;
        {
            let mut inner = self.lock();
            for held in inner.states.values_mut() {
                for (key, value) in records {
                    let current = held.state.records.get(key);
                    let unchanged = current.is_some_and(|r| match value {
                        Some(data) => !r.tombstone && &r.data == data,
                        None => r.tombstone,
                    });
                    if unchanged || (value.is_none() && current.is_none()) {
                        continue;
                    }
                    let version = current.map_or(now, |r| now.max(r.version + 1));
                    let record = KvRecord {
                        data: value.clone().unwrap_or_default(),
                        tombstone: value.is_none(),
                        version,
                    };
                    held.state.records.insert(key.clone(), record);
                    held.origin.insert(key.clone(), node.to_owned());
                    changed = true;
                }
            }
            if changed {
                inner.changed_at = SystemTime::now();
            }
        }
        if changed {
            self.changed.send_modify(|g| *g += 1);
            self.published.send_modify(|g| *g += 1);
        }
    }

    /// The view of both protocols, merged by version (the primary's on a tie).
    pub(crate) fn view(&self) -> View {
        let inner = self.lock();
        let states: Vec<(Protocol, &ProtocolState)> = self
            .protocols
            .iter()
            .filter_map(|p| inner.states.get(p).map(|s| (*p, s)))
            .collect();
        view(&states)
    }

    /// Records how many peers `protocol` has now.
    pub(crate) fn set_peers(&self, protocol: Protocol, count: usize) {
        self.lock().peers.insert(protocol, count);
    }

    /// Peers of every protocol together.
    pub(crate) fn peer_count(&self) -> usize {
        self.lock().peers.values().sum()
    }

    pub(crate) fn figures(&self) -> Figures {
        let view = self.view();
        let inner = self.lock();
        Figures {
            peers: inner.peers.clone(),
            records: view.records.len(),
            changed_at: inner.changed_at,
        }
    }

    /// Watches every change of the view.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Watches changes of this node's own records.
    pub(crate) fn publications(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishing_bumps_the_version_and_a_deletion_is_a_tombstone() {
        let store = Store::new(vec![Protocol::Mesh, Protocol::Memberlist]);
        let mut changes = store.changes();
        let key = "dns/local/NS/local".to_owned();
        store.publish(&[(key.clone(), Some(b"gossip".to_vec()))], "me");
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        store.publish(&[(key.clone(), Some(b"gossip".to_vec()))], "me");
        assert!(
            !changes.has_changed().unwrap(),
            "the same value is no change"
        );
        let first = store.state(Protocol::Memberlist).records[&key].version;
        store.publish(&[(key.clone(), None)], "me");
        let gone = &store.state(Protocol::Mesh).records[&key];
        assert!(gone.tombstone && gone.version > first);
        let mut theirs = KvState::default();
        theirs.records.insert(
            key.clone(),
            KvRecord {
                data: b"x".to_vec(),
                tombstone: false,
                version: first,
            },
        );
        assert!(
            store
                .merge(Protocol::Mesh, "peer", &theirs)
                .records
                .is_empty(),
            "older loses"
        );
    }
}
