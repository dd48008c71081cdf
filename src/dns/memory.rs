//! A DNS service held in memory, for the unit tests of the DNS steps and the zone walk: zones
//! and their record sets, changes applied all or nothing with a real service's rules (a create
//! over an existing set is a conflict, a delete must name the set exactly), another writer's
//! change slipped in before the next batch, changes that stay pending for a number of polls,
//! and a log of every call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::{bail, Result};
use async_trait::async_trait;

use super::zoned::api::{ChangeResult, ZoneApi, ZoneGone, ZoneService};
use crate::names::is_within;
use crate::plan::dns::zone_plan::EXTERNAL_DNS_PREFIXES;
use crate::plan::dns::zones::Zone;
use crate::plan::dns::zones::{RecordAction, RecordChange, RecordSet};

/// A record set of `name` and `record_type` holding `values`, with protokube's TTL.
pub(crate) fn record_set(name: &str, record_type: &str, values: &[&str]) -> RecordSet {
    RecordSet {
        name: name.to_owned(),
        record_type: record_type.to_owned(),
        ttl: Some(60),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
        alias: false,
    }
}

/// The service's state; tests build it and read it back.
#[derive(Clone, Debug, Default)]
pub(crate) struct ZoneServiceState {
    pub(crate) zones: Vec<Zone>,
    /// Record sets by zone id, then by (name, type).
    pub(crate) records: BTreeMap<String, BTreeMap<(String, String), RecordSet>>,
    /// Applied to zone `.0` just before the next batch is judged: another writer's change.
    pub(crate) race: Option<(String, Vec<RecordSet>)>,
    /// Polls of a change that answer "pending" before it is in effect.
    pub(crate) pending_polls: u32,
    /// Changes per batch at most (the real services' limits, made small).
    pub(crate) batch_limit: Option<usize>,
    /// Every call, in order: `ListZones`, `GetZone <id>`, `Read <zone>`, `Change <zone> <n>`,
    /// `GetChange`.
    pub(crate) calls: Vec<String>,
}

impl ZoneServiceState {
    /// One public zone `name` with id `id`.
    pub(crate) fn with_zone(id: &str, name: &str) -> Self {
        let mut zones = Self::default();
        zones.add_zone(id, name, false);
        zones
    }

    pub(crate) fn add_zone(&mut self, id: &str, name: &str, private: bool) {
        self.zones.push(Zone {
            id: id.to_owned(),
            name: name.to_owned(),
            private,
        });
        self.records.entry(id.to_owned()).or_default();
    }

    /// Puts `set` into zone `zone_id` as another writer would (not logged as a call).
    pub(crate) fn put(&mut self, zone_id: &str, set: RecordSet) {
        self.records
            .entry(zone_id.to_owned())
            .or_default()
            .insert((set.name.clone(), set.record_type.clone()), set);
    }

    /// The set of `name` and `record_type` in zone `zone_id`.
    pub(crate) fn get(&self, zone_id: &str, name: &str, record_type: &str) -> Option<&RecordSet> {
        self.records
            .get(zone_id)?
            .get(&(name.to_owned(), record_type.to_owned()))
    }

    /// The calls that change a zone.
    pub(crate) fn changes(&self) -> Vec<&String> {
        self.calls
            .iter()
            .filter(|c| c.starts_with("Change "))
            .collect()
    }
}

/// The in-memory DNS service.
#[derive(Clone, Debug, Default)]
pub(crate) struct MemoryZones {
    state: Arc<Mutex<ZoneServiceState>>,
}

impl MemoryZones {
    pub(crate) fn new(zones: ZoneServiceState) -> Self {
        Self {
            state: Arc::new(Mutex::new(zones)),
        }
    }

    /// The service as it is now.
    pub(crate) fn zones(&self) -> ZoneServiceState {
        self.lock().clone()
    }

    /// Changes the service (a test's own doing, not logged as a call).
    pub(crate) fn change(&self, f: impl FnOnce(&mut ZoneServiceState)) {
        f(&mut self.lock());
    }

    fn lock(&self) -> MutexGuard<'_, ZoneServiceState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ZoneService for MemoryZones {
    async fn connect(&self, _region: &str) -> Result<Arc<dyn ZoneApi>> {
        Ok(Arc::new(self.clone()))
    }
}

/// Whether the set at `set_name` decides `name`: the name itself, its external-dns ownership
/// names, or a name above it (an NS delegating it).
fn decides(set_name: &str, name: &str) -> bool {
    set_name == name
        || is_within(name, set_name)
        || EXTERNAL_DNS_PREFIXES
            .iter()
            .any(|prefix| set_name == format!("{prefix}{name}"))
}

#[async_trait]
impl ZoneApi for MemoryZones {
    fn service(&self) -> &'static str {
        "the in-memory DNS service"
    }

    async fn zone_by_id(&self, id: &str) -> Result<Option<Zone>> {
        let mut state = self.lock();
        state.calls.push(format!("GetZone {id}"));
        Ok(state.zones.iter().find(|z| z.id == id).cloned())
    }

    async fn all_zones(&self) -> Result<Vec<Zone>> {
        let mut state = self.lock();
        state.calls.push("ListZones".to_owned());
        Ok(state.zones.clone())
    }

    async fn read(&self, zone: &Zone, names: &[&str], cluster: &str) -> Result<Vec<RecordSet>> {
        let mut state = self.lock();
        state.calls.push(format!("Read {}", zone.id));
        if !state.zones.iter().any(|z| z.id == zone.id) {
            return Err(ZoneGone {
                zone_id: zone.id.clone(),
            }
            .into());
        }
        let sets = state.records.get(&zone.id).cloned().unwrap_or_default();
        Ok(sets
            .into_values()
            .filter(|set| {
                is_within(&set.name, cluster) || names.iter().any(|n| decides(&set.name, n))
            })
            .collect())
    }

    fn batches(&self, changes: &[RecordChange]) -> Vec<Vec<RecordChange>> {
        let Some(limit) = self.lock().batch_limit else {
            return vec![changes.to_vec()];
        };
        // A name's changes stay together, as the real services' batching keeps them.
        let mut out: Vec<Vec<RecordChange>> = Vec::new();
        for change in changes {
            match out.last_mut() {
                Some(batch)
                    if batch.len() < limit
                        || batch
                            .last()
                            .is_some_and(|c| c.record.name == change.record.name) =>
                {
                    batch.push(change.clone());
                }
                _ => out.push(vec![change.clone()]),
            }
        }
        out
    }

    async fn change_records(&self, zone: &Zone, changes: &[RecordChange]) -> Result<ChangeResult> {
        let mut state = self.lock();
        state
            .calls
            .push(format!("Change {} {}", zone.id, changes.len()));
        if let Some((zone_id, sets)) = state.race.take() {
            for set in sets {
                state.put(&zone_id, set);
            }
        }
        let Some(records) = state.records.get_mut(&zone.id) else {
            return Err(ZoneGone {
                zone_id: zone.id.clone(),
            }
            .into());
        };
        // All or nothing: judged in full first.
        for change in changes {
            let key = (
                change.record.name.clone(),
                change.record.record_type.clone(),
            );
            match (change.action, records.get(&key)) {
                (RecordAction::Create, Some(_)) => {
                    return Ok(ChangeResult::Conflict(format!(
                        "`{}` {} exists already",
                        key.0, key.1
                    )))
                }
                (RecordAction::Delete, held) if held != Some(&change.record) => {
                    bail!(
                        "deleting `{}` {}: the set named is not the one held ({held:?})",
                        key.0,
                        key.1
                    )
                }
                _ => {}
            }
        }
        for change in changes {
            let key = (
                change.record.name.clone(),
                change.record.record_type.clone(),
            );
            match change.action {
                RecordAction::Delete => {
                    records.remove(&key);
                }
                RecordAction::Create | RecordAction::Upsert => {
                    records.insert(key, change.record.clone());
                }
            }
        }
        Ok(ChangeResult::Submitted {
            change_id: format!("change-{}", state.calls.len()),
        })
    }

    async fn change_in_sync(&self, _zone: &Zone, _change_id: &str) -> Result<bool> {
        let mut state = self.lock();
        state.calls.push("GetChange".to_owned());
        if state.pending_polls > 0 {
            state.pending_polls -= 1;
            return Ok(false);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn changes_are_all_or_nothing_with_a_services_rules() {
        let zones = MemoryZones::new(ZoneServiceState::with_zone("Z1", "example.com"));
        let zone = zones.zones().zones[0].clone();
        let a = record_set("a.c.example.com", "A", &["10.0.0.1"]);
        let create = |record: &RecordSet| RecordChange::create(record.clone());
        let answer = block_on(zones.change_records(&zone, &[create(&a)])).unwrap();
        assert!(matches!(answer, ChangeResult::Submitted { .. }));
        // A create over an existing set fails the whole batch: the other set is not written.
        let b = record_set("b.c.example.com", "A", &["10.0.0.2"]);
        let answer = block_on(zones.change_records(&zone, &[create(&b), create(&a)])).unwrap();
        assert!(matches!(answer, ChangeResult::Conflict(_)), "{answer:?}");
        assert!(zones.zones().get("Z1", "b.c.example.com", "A").is_none());
        // A delete must name the set exactly.
        let stale = RecordChange::delete(record_set("a.c.example.com", "A", &["10.0.0.9"]));
        assert!(block_on(zones.change_records(&zone, &[stale])).is_err());
        let delete = RecordChange::delete(a);
        block_on(zones.change_records(&zone, &[delete])).unwrap();
        assert!(zones.zones().get("Z1", "a.c.example.com", "A").is_none());
    }

    #[test]
    fn a_read_returns_what_decides_the_names_and_a_gone_zone_says_so() {
        let mut state = ZoneServiceState::with_zone("Z1", "example.com");
        state.put(
            "Z1",
            record_set("etcd-a.internal.c.example.com", "A", &["10.0.0.1"]),
        );
        state.put(
            "Z1",
            record_set("a-api.other.com", "TXT", &["\"heritage=external-dns\""]),
        );
        state.put(
            "Z1",
            record_set("unrelated.example.com", "A", &["10.9.9.9"]),
        );
        let zones = MemoryZones::new(state);
        let zone = zones.zones().zones[0].clone();
        let read = block_on(zones.read(&zone, &["api.other.com"], "c.example.com")).unwrap();
        let names: Vec<&str> = read.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a-api.other.com", "etcd-a.internal.c.example.com"]);
        let gone = Zone {
            id: "Zgone".into(),
            ..zone
        };
        let err = block_on(zones.read(&gone, &[], "c.example.com")).unwrap_err();
        assert!(err.downcast_ref::<ZoneGone>().is_some(), "{err:#}");
    }
}
