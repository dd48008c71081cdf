//! Route53 publishing against a stricter double of protokube's `DnsApi` trait, for what the local
//! AWS emulator cannot show: another writer creating a name between our read and our CREATE
//! (the emulator accepts a CREATE over an existing record), and a change that stays `PENDING`
//! before it is `INSYNC` (the emulator is always `INSYNC`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use async_trait::async_trait;
use protokube::apply::route53::{publish, PublishOptions, Published, Remembered};
use protokube::cloud::{
    ChangeResult, DnsApi, HostedZone, RecordAction, RecordChange, RecordSet, ZoneGone,
};
use protokube::error::NotReady;
use protokube::plan::records::{DesiredRecord, RecordRole};
use protokube::plan::route53::ownership_value;
use protokube::plan::state::LeftAlone;
use protokube::plan::zones::ZoneRule;
use protokube::report::{Action, Report};
use protokube::wait::{Backoff, Progress};

const CLUSTER: &str = "c.example.com";

#[derive(Default)]
struct StrictDns {
    records: Mutex<BTreeMap<(String, String), RecordSet>>,
    /// Applied just before our first change batch: another master's write.
    race: Mutex<Vec<RecordSet>>,
    /// GetChange answers PENDING this many times before INSYNC.
    pending_polls: Mutex<u32>,
    calls: Mutex<Vec<String>>,
}

impl StrictDns {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
    fn get(&self, name: &str, t: &str) -> Option<RecordSet> {
        self.records
            .lock()
            .unwrap()
            .get(&(name.into(), t.into()))
            .cloned()
    }
}

#[async_trait]
impl DnsApi for StrictDns {
    async fn zone_by_id(&self, id: &str) -> Result<Option<HostedZone>> {
        self.calls.lock().unwrap().push(format!("zone {id}"));
        Ok((id == "Z1").then(|| HostedZone {
            id: "Z1".into(),
            name: "example.com".into(),
            private: false,
        }))
    }
    async fn all_zones(&self) -> Result<Vec<HostedZone>> {
        unreachable!("rules are by id")
    }
    async fn records_under(&self, zone_id: &str, apex: &str) -> Result<Vec<RecordSet>> {
        self.calls.lock().unwrap().push(format!("read {apex}"));
        if zone_id != "Z1" {
            // Route53's NoSuchHostedZone.
            return Err(ZoneGone {
                zone_id: zone_id.into(),
            }
            .into());
        }
        Ok(self.records.lock().unwrap().values().cloned().collect())
    }
    async fn change_records(
        &self,
        _zone_id: &str,
        changes: &[RecordChange],
    ) -> Result<ChangeResult> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("change {}", changes.len()));
        let mut records = self.records.lock().unwrap();
        for raced in self.race.lock().unwrap().drain(..) {
            records.insert((raced.name.clone(), raced.record_type.clone()), raced);
        }
        // Route53 semantics: the batch is all or nothing; CREATE of an existing record fails it.
        for change in changes {
            let key = (
                change.record.name.clone(),
                change.record.record_type.clone(),
            );
            if change.action == RecordAction::Create && records.contains_key(&key) {
                return Ok(ChangeResult::Conflict(format!(
                    "Tried to create resource record set [name='{}.', type='{}'] but it already exists",
                    key.0, key.1
                )));
            }
        }
        for change in changes {
            records.insert(
                (
                    change.record.name.clone(),
                    change.record.record_type.clone(),
                ),
                change.record.clone(),
            );
        }
        Ok(ChangeResult::Submitted {
            change_id: "C1".into(),
        })
    }
    async fn change_in_sync(&self, _change_id: &str) -> Result<bool> {
        self.calls.lock().unwrap().push("get-change".into());
        let mut pending = self.pending_polls.lock().unwrap();
        if *pending > 0 {
            *pending -= 1;
            return Ok(false);
        }
        Ok(true)
    }
}

fn desired(name: &str, ip: [u8; 4]) -> DesiredRecord {
    DesiredRecord {
        name: name.into(),
        role: RecordRole::EtcdMember,
        addresses: vec![ip.into()],
    }
}

/// Publishes `desired` into zone `Z1` for the test cluster as the publish step does, waiting up
/// to `wait` for Route53 to apply it: what it published, and the report it made.
fn publish_to_z1(
    dns: &StrictDns,
    desired: &[DesiredRecord],
    wait: Option<Duration>,
    remembered: Remembered<'_>,
) -> (Result<Published>, Report) {
    let mut report = Report::new("publish-dns", false);
    let published = block_on(publish(
        dns,
        desired,
        &[ZoneRule::Id("Z1".into())],
        CLUSTER,
        &options(wait),
        remembered,
        &mut report,
    ));
    (published, report)
}

fn options(wait: Option<Duration>) -> PublishOptions {
    PublishOptions {
        dry_run: false,
        wait,
        progress: Progress::Log,
        wait_backoff: Backoff::new(Duration::from_millis(5), Duration::from_millis(20)),
        policy: Default::default(),
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn set(name: &str, t: &str, values: &[&str]) -> RecordSet {
    RecordSet {
        name: name.into(),
        record_type: t.into(),
        ttl: Some(60),
        values: values
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        alias: false,
    }
}

#[test]
fn a_create_conflict_with_our_own_cluster_is_re_read_and_upserted() {
    let dns = StrictDns::default();
    let name = "etcd-a.internal.c.example.com";
    // Another master of the same cluster creates the name first, with an older address.
    *dns.race.lock().unwrap() = vec![
        set(name, "A", &["10.0.0.9"]),
        set(name, "TXT", &[&ownership_value(CLUSTER)]),
    ];
    let (published, report) = publish_to_z1(
        &dns,
        &[desired(name, [10, 0, 0, 1])],
        None,
        Remembered::default(),
    );
    published.unwrap();
    assert_eq!(dns.get(name, "A").unwrap().values, ["10.0.0.1"]);
    assert_eq!(
        dns.calls(),
        [
            "zone Z1",
            "read c.example.com",
            "change 2",
            "read c.example.com",
            "change 1"
        ]
    );
    assert_eq!(report.changes[0].action, Action::Update);
}

#[test]
fn a_create_conflict_with_a_foreign_record_leaves_it_alone() {
    let dns = StrictDns::default();
    let name = "etcd-a.internal.c.example.com";
    *dns.race.lock().unwrap() = vec![set(name, "A", &["192.0.2.1"])];
    let (published, report) = publish_to_z1(
        &dns,
        &[desired(name, [10, 0, 0, 1])],
        None,
        Remembered::default(),
    );
    published.unwrap();
    assert_eq!(dns.get(name, "A").unwrap().values, ["192.0.2.1"]);
    assert!(dns.get(name, "TXT").is_none());
    assert_eq!(report.warnings.len(), 1, "{report:?}");
}

#[test]
fn wait_polls_a_pending_change_until_insync_and_gives_up_with_75() {
    let dns = StrictDns::default();
    *dns.pending_polls.lock().unwrap() = 3;
    let (published, _) = publish_to_z1(
        &dns,
        &[desired("api.internal.c.example.com", [10, 0, 0, 1])],
        Some(Duration::from_secs(5)),
        Remembered::default(),
    );
    published.unwrap();
    assert_eq!(dns.calls().iter().filter(|c| *c == "get-change").count(), 4);

    let dns = StrictDns::default();
    *dns.pending_polls.lock().unwrap() = u32::MAX;
    let (published, _) = publish_to_z1(
        &dns,
        &[desired("api.internal.c.example.com", [10, 0, 0, 1])],
        Some(Duration::from_millis(100)),
        Remembered::default(),
    );
    let err = published.unwrap_err();
    assert!(err.is::<NotReady>(), "{err:#}");
    assert!(err.to_string().contains("INSYNC"), "{err}");
}

#[test]
fn a_remembered_zone_is_not_looked_up_and_a_gone_one_is_looked_up_again_before_any_write() {
    let name = "etcd-a.internal.c.example.com";
    let zone = |id: &str| HostedZone {
        id: id.into(),
        name: "example.com".into(),
        private: false,
    };
    let publish_with = |dns: &StrictDns, remembered: &[HostedZone]| {
        let remembered = Remembered {
            zones: Some(remembered),
            names: None,
            left_alone: &[],
        };
        let (published, report) =
            publish_to_z1(dns, &[desired(name, [10, 0, 0, 1])], None, remembered);
        (published.unwrap(), report)
    };
    let dns = StrictDns::default();
    let (published, _) = publish_with(&dns, &[zone("Z1")]);
    assert_eq!(dns.calls(), ["read c.example.com", "change 2"]);
    assert!(published.left_alone.is_empty());
    // The remembered zone was deleted (and the cluster's zone made again as Z1).
    let dns = StrictDns::default();
    let (published, report) = publish_with(&dns, &[zone("Zgone")]);
    assert_eq!(
        dns.calls(),
        [
            "read c.example.com",
            "zone Z1",
            "read c.example.com",
            "change 2"
        ]
    );
    assert_eq!(published.zones, [zone("Z1")]);
    assert_eq!(report.changes[0].action, Action::Create);
}

#[test]
fn names_a_trusted_check_found_in_place_are_reported_without_asking_route53() {
    let dns = StrictDns::default();
    let records = [desired("etcd-a.internal.c.example.com", [10, 0, 0, 1])];
    let zones = [HostedZone {
        id: "Z1".into(),
        name: "example.com".into(),
        private: false,
    }];
    // Publishes `desired` with the trusted check's names (`records`) and the names it left alone.
    let publish_trusted = |desired: &[DesiredRecord], left_alone: &[LeftAlone]| {
        let remembered = Remembered {
            zones: Some(&zones),
            names: Some(&records),
            left_alone,
        };
        let (published, report) = publish_to_z1(&dns, desired, None, remembered);
        (published.unwrap(), report)
    };
    let (published, report) = publish_trusted(&records, &[]);
    assert!(dns.calls().is_empty(), "{:?}", dns.calls());
    assert!(published.left_alone.is_empty());
    assert_eq!(report.changes[0].action, Action::Unchanged);
    assert_eq!(report.changes[0].detail, "A 10.0.0.1");
    // A name that check left to its holder: kept as left, not reported as ours, no warning.
    let left = [LeftAlone {
        name: records[0].name.clone(),
        reason: "DNS record exists and is not owned; left alone".into(),
    }];
    let (published, report) = publish_trusted(&records, &left);
    assert!(dns.calls().is_empty(), "{:?}", dns.calls());
    assert_eq!(published.left_alone, left);
    assert!(report.changes.is_empty() && report.warnings.is_empty());
    // Other names than the trusted ones: Route53 is read.
    let moved = [desired("etcd-a.internal.c.example.com", [10, 0, 0, 2])];
    publish_trusted(&moved, &[]);
    assert_eq!(dns.calls(), ["read c.example.com", "change 2"]);
}
