//! What the member knows, shared by its protocols and whoever holds its handle: each protocol's
//! kOps state (with where each key came from), its peers, this node's own records, and a
//! generation that moves on every change (watched by the hosts writer and the broadcasters).
//! A record whose version lies more than an hour ahead of this node's clock is refused.

use std::collections::{BTreeMap, BTreeSet};
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
    /// Keys refused for a version from the future, each warned about once.
    refused: BTreeSet<String>,
}

/// How far ahead of this node's clock a record's version may be (kOps' versions are the
/// writer's Unix seconds): a clock a little fast is a clock; a version in the year 2^63 is an
/// attempt to win every future merge.
pub(crate) const MAX_AHEAD: u64 = 3600;
/// Refused keys remembered (so each is warned about once).
const REFUSED_REMEMBERED: usize = 1024;

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
                refused: BTreeSet::new(),
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
    /// A record versioned more than [`MAX_AHEAD`] seconds past this node's clock is refused,
    /// and named in a warning the first time.
    pub(crate) fn merge(&self, protocol: Protocol, peer: &str, incoming: &KvState) -> KvState {
        let limit = unix_now() + MAX_AHEAD;
        let (delta, refused) = {
            let mut inner = self.lock();
            let mut accepted = KvState::default();
            let mut refused = Vec::new();
            for (key, record) in &incoming.records {
                if record.version > limit {
                    if inner.refused.len() < REFUSED_REMEMBERED && inner.refused.insert(key.clone())
                    {
                        refused.push((key.clone(), record.version));
                    }
                } else {
                    accepted.records.insert(key.clone(), record.clone());
                }
            }
            let delta = inner
                .states
                .entry(protocol)
                .or_default()
                .merge_from(peer, &accepted);
            if !delta.records.is_empty() {
                inner.changed_at = SystemTime::now();
            }
            (delta, refused)
        };
        for (key, version) in refused {
            tracing::warn!(
                "gossip: record `{}` from `{}` ({}) refused: its version {version} is more than \
                 an hour ahead of this node's clock",
                key.escape_debug(),
                peer.escape_debug(),
                protocol.as_str()
            );
        }
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
        let now = unix_now();
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

    /// Sets `key` to `data` at `version` in every protocol's state as this node's own record
    /// (tests: a publisher whose clock they choose).
    #[cfg(test)]
    pub(crate) fn publish_at(&self, key: &str, data: &[u8], version: u64) {
        {
            let mut inner = self.lock();
            for held in inner.states.values_mut() {
                let record = KvRecord {
                    data: data.to_vec(),
                    tombstone: false,
                    version,
                };
                held.state.records.insert(key.to_owned(), record);
                held.origin.insert(key.to_owned(), "me".to_owned());
            }
        }
        self.changed.send_modify(|g| *g += 1);
        self.published.send_modify(|g| *g += 1);
    }

    /// The view: the primary protocol's state, as kOps reads it.
    pub(crate) fn view(&self) -> View {
        let primary = self.primary();
        let inner = self.lock();
        inner
            .states
            .get(&primary)
            .map(|held| view(primary, held))
            .unwrap_or_default()
    }

    /// The primary protocol.
    pub(crate) fn primary(&self) -> Protocol {
        self.protocols.first().copied().unwrap_or(Protocol::Mesh)
    }

    /// Records how many peers `protocol` has now (the metrics file's gauge moves with it).
    pub(crate) fn set_peers(&self, protocol: Protocol, count: usize) {
        let before = self.lock().peers.insert(protocol, count);
        if before != Some(count) {
            self.changed.send_modify(|g| *g += 1);
        }
    }

    /// Peers of `protocol`.
    pub(crate) fn peers(&self, protocol: Protocol) -> usize {
        self.lock().peers.get(&protocol).copied().unwrap_or(0)
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

/// This node's clock in Unix seconds.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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

    #[test]
    fn a_version_from_the_future_is_refused_and_the_view_is_the_primarys() {
        let store = Store::new(vec![Protocol::Mesh, Protocol::Memberlist]);
        let key = "dns/local/A/api.internal.c.k8s.local".to_owned();
        let mut poison = KvState::default();
        poison.records.insert(
            key.clone(),
            KvRecord {
                data: b"6.6.6.6".to_vec(),
                tombstone: false,
                version: 1 << 63,
            },
        );
        let delta = store.merge(Protocol::Mesh, "stranger", &poison);
        assert!(delta.records.is_empty());
        assert!(store.state(Protocol::Mesh).records.is_empty());
        let mut fair = KvState::default();
        fair.records.insert(
            key.clone(),
            KvRecord {
                data: b"10.0.0.1".to_vec(),
                tombstone: false,
                version: unix_now() + MAX_AHEAD,
            },
        );
        assert_eq!(
            store
                .merge(Protocol::Memberlist, "peer", &fair)
                .records
                .len(),
            1
        );
        assert!(store.view().records.is_empty(), "memberlist is not read");
        assert_eq!(store.merge(Protocol::Mesh, "peer", &fair).records.len(), 1);
        assert_eq!(store.view().records[0].name, "api.internal.c.k8s.local");
    }
}
