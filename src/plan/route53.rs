//! Route53 planning: the minimal changes for the names of one zone from what the zone holds,
//! with an external-dns style ownership TXT record beside each name protokube manages. Pure.

use crate::cloud::{RecordAction, RecordChange, RecordSet};
use crate::names::is_within;
use crate::plan::records::DesiredRecord;
use crate::report::Action;

/// TTL of every record protokube writes.
pub const TTL: i64 = 60;
/// The address kOps puts in records before the cluster is up; protokube replaces it.
pub const PLACEHOLDER: &str = "203.0.113.123";

/// The ownership TXT value beside each name protokube manages (with its quotes, as Route53
/// stores TXT values).
pub fn ownership_value(cluster: &str) -> String {
    format!("\"heritage=protokube,protokube/cluster={cluster}\"")
}

/// The record types protokube writes; a name holding any other type is someone else's.
pub const WRITTEN_TYPES: [&str; 3] = ["A", "AAAA", "TXT"];

/// Route53's limits on one change batch: resource record values (an UPSERT counts twice) and
/// characters of those values (likewise).
pub const BATCH_MAX_RECORDS: usize = 1000;
pub const BATCH_MAX_CHARS: usize = 32_000;

/// Splits the changes of a zone into batches within Route53's limits, in order, keeping the
/// changes of one name (its address records and its TXT) in the same batch.
pub fn batches(changes: &[RecordChange]) -> Vec<Vec<RecordChange>> {
    let weight = |c: &RecordChange| {
        let factor = if c.action == RecordAction::Upsert {
            2
        } else {
            1
        };
        let chars: usize = c.record.values.iter().map(String::len).sum();
        (c.record.values.len().max(1) * factor, chars * factor)
    };
    // Group by name, in order of first appearance.
    let mut groups: Vec<Vec<RecordChange>> = Vec::new();
    for change in changes {
        match groups
            .iter_mut()
            .find(|g| g[0].record.name == change.record.name)
        {
            Some(group) => group.push(change.clone()),
            None => groups.push(vec![change.clone()]),
        }
    }
    let mut out: Vec<Vec<RecordChange>> = Vec::new();
    let (mut records, mut chars) = (0, 0);
    for group in groups {
        let (r, c) = group
            .iter()
            .map(weight)
            .fold((0, 0), |a, w| (a.0 + w.0, a.1 + w.1));
        let fits = records + r <= BATCH_MAX_RECORDS && chars + c <= BATCH_MAX_CHARS;
        match out.last_mut() {
            Some(batch) if fits => batch.extend(group),
            _ => {
                out.push(group);
                (records, chars) = (0, 0);
            }
        }
        records += r;
        chars += c;
    }
    out
}

/// What happens to one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameOutcome {
    pub name: String,
    pub action: Action,
    pub from: Vec<String>,
    pub to: Vec<String>,
    /// Set when the name is left alone because someone else owns it.
    pub warning: Option<String>,
}

/// Plans the changes for the names of one zone against what the zone holds. Pure.
pub fn plan_zone(
    desired: &[&DesiredRecord],
    existing: &[RecordSet],
    cluster: &str,
) -> (Vec<RecordChange>, Vec<NameOutcome>) {
    let owner = ownership_value(cluster);
    let mut changes = Vec::new();
    let mut outcomes = Vec::new();
    for record in desired {
        let find = |t: &str| {
            existing
                .iter()
                .find(|r| r.name == record.name && r.record_type == t)
        };
        let (a, aaaa, txt) = (find("A"), find("AAAA"), find("TXT"));
        let held_otherwise: Vec<String> = existing
            .iter()
            .filter(|r| r.name == record.name)
            .filter_map(|r| {
                if r.alias {
                    Some(format!("an alias {} record", r.record_type))
                } else if !WRITTEN_TYPES.contains(&r.record_type.as_str()) {
                    Some(format!("a {} record", r.record_type))
                } else {
                    None
                }
            })
            .collect();
        let current: Vec<String> = a.map(|a| a.values.clone()).unwrap_or_default();
        let wanted: Vec<String> = record.addresses.iter().map(|a| a.to_string()).collect();
        let mut outcome = NameOutcome {
            name: record.name.clone(),
            action: Action::Unchanged,
            from: current.clone(),
            to: wanted.clone(),
            warning: None,
        };
        let owned = txt.is_some_and(|t| t.values.contains(&owner));
        let placeholder = current == [PLACEHOLDER];
        if wanted.is_empty() {
            // Unknown right now (no master running, volume attached nowhere): keep what is there.
            outcome.to = current;
            outcomes.push(outcome);
            continue;
        }
        if !held_otherwise.is_empty() {
            outcome.to = current;
            outcome.warning = Some(format!(
                "DNS name `{}` is held through {}, which protokube does not write; left alone",
                record.name,
                held_otherwise.join(" and ")
            ));
            outcomes.push(outcome);
            continue;
        }
        let foreign_addresses = (a.is_some() && !placeholder) || aaaa.is_some();
        if !owned && (txt.is_some() || foreign_addresses) {
            outcome.to = current;
            outcome.warning = Some(format!(
                "DNS record `{}` exists and is not owned by cluster `{cluster}` (no ownership TXT \
                 record {owner}); left alone",
                record.name
            ));
            outcomes.push(outcome);
            continue;
        }
        let a_record = RecordSet {
            name: record.name.clone(),
            record_type: "A".into(),
            ttl: Some(TTL),
            values: wanted.clone(),
            alias: false,
        };
        match a {
            None => {
                outcome.action = Action::Create;
                changes.push(RecordChange {
                    action: RecordAction::Create,
                    record: a_record,
                });
            }
            Some(a) if same_values(&a.values, &wanted) && a.ttl == Some(TTL) && owned => {}
            Some(_) => {
                outcome.action = Action::Update;
                changes.push(RecordChange {
                    action: RecordAction::Upsert,
                    record: a_record,
                });
            }
        }
        if !owned {
            changes.push(RecordChange {
                action: RecordAction::Create,
                record: RecordSet {
                    name: record.name.clone(),
                    record_type: "TXT".into(),
                    ttl: Some(TTL),
                    values: vec![owner.clone()],
                    alias: false,
                },
            });
        }
        outcomes.push(outcome);
    }
    (changes, outcomes)
}

/// Record values compared as sets (Route53 keeps them in the order they were written).
fn same_values(a: &[String], b: &[String]) -> bool {
    let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    set(a) == set(b)
}

/// The subtrees to read in a zone: the cluster's own names under one read from the cluster
/// name; any other name (a custom public name or suffix) from itself.
pub fn apexes(names: &[&str], cluster: &str) -> Vec<String> {
    let mut apexes: Vec<String> = names
        .iter()
        .map(|n| {
            if is_within(n, cluster) {
                cluster.to_owned()
            } else {
                (*n).to_owned()
            }
        })
        .collect();
    apexes.sort();
    apexes.dedup();
    apexes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::records::RecordRole;

    fn desired(name: &str, addresses: &[[u8; 4]]) -> DesiredRecord {
        DesiredRecord {
            name: name.into(),
            role: RecordRole::EtcdMember,
            addresses: addresses.iter().map(|a| (*a).into()).collect(),
        }
    }

    fn set(name: &str, t: &str, values: &[&str]) -> RecordSet {
        RecordSet {
            name: name.into(),
            record_type: t.into(),
            ttl: Some(TTL),
            values: values.iter().map(|v| v.to_string()).collect(),
            alias: false,
        }
    }

    #[test]
    fn names_held_through_an_alias_or_another_type_are_left_alone() {
        let owner = ownership_value(C);
        let records = [
            desired("api.c.example.com", &[[54, 0, 0, 1]]),
            desired("mx.c.example.com", &[[10, 0, 0, 1]]),
            desired("v6.c.example.com", &[[10, 0, 0, 2]]),
        ];
        let mut alias = set("api.c.example.com", "A", &[]);
        alias.alias = true;
        let existing = [
            alias,
            set("api.c.example.com", "TXT", &[&owner]),
            set("mx.c.example.com", "MX", &["10 mail.example.com"]),
            set("mx.c.example.com", "TXT", &[&owner]),
            set("v6.c.example.com", "AAAA", &["fd00::1"]),
        ];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, outcomes) = plan_zone(&refs, &existing, C);
        assert!(changes.is_empty(), "{changes:#?}");
        let warning = |n: &str| {
            outcomes
                .iter()
                .find(|o| o.name == n)
                .unwrap()
                .warning
                .clone()
                .unwrap()
        };
        assert!(warning("api.c.example.com").contains("alias A"));
        assert!(warning("mx.c.example.com").contains("MX"));
        assert!(warning("v6.c.example.com").contains("not owned"));
    }

    #[test]
    fn batches_stay_within_route53_limits_and_keep_names_whole() {
        let owner = ownership_value(C);
        let records: Vec<DesiredRecord> = (0..700)
            .map(|i| {
                desired(
                    &format!("etcd-k{i}-a.internal.c.example.com"),
                    &[[10, 0, (i / 250) as u8, (i % 250) as u8]],
                )
            })
            .collect();
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, _) = plan_zone(&refs, &[], C);
        assert_eq!(changes.len(), 1400);
        let split = batches(&changes);
        assert!(split.len() > 1);
        assert_eq!(split.iter().map(Vec::len).sum::<usize>(), 1400);
        for batch in &split {
            let values: usize = batch.iter().map(|c| c.record.values.len()).sum();
            let chars: usize = batch
                .iter()
                .flat_map(|c| &c.record.values)
                .map(String::len)
                .sum();
            assert!(
                values <= BATCH_MAX_RECORDS && chars <= BATCH_MAX_CHARS,
                "{values} {chars}"
            );
            // Each name's A and TXT travel together.
            for change in batch {
                assert_eq!(
                    batch
                        .iter()
                        .filter(|c| c.record.name == change.record.name)
                        .count(),
                    2
                );
            }
        }
        assert!(
            owner.len() * 700 > BATCH_MAX_CHARS,
            "the TXT values alone exceed one batch"
        );
        // Upserts count twice.
        let upserts: Vec<RecordChange> = changes
            .iter()
            .filter(|c| c.record.record_type == "A")
            .map(|c| RecordChange {
                action: RecordAction::Upsert,
                record: c.record.clone(),
            })
            .collect();
        assert!(batches(&upserts)
            .iter()
            .all(|b| b.len() * 2 <= BATCH_MAX_RECORDS));
        assert!(batches(&[]).is_empty());
    }

    const C: &str = "c.example.com";

    #[test]
    fn create_take_over_placeholder_update_and_leave_foreign_alone() {
        let owner = ownership_value(C);
        let records = [
            desired("new.c.example.com", &[[10, 0, 0, 1]]),
            desired("placeholder.c.example.com", &[[10, 0, 0, 2]]),
            desired("ours.c.example.com", &[[10, 0, 0, 3]]),
            desired("same.c.example.com", &[[10, 0, 0, 4]]),
            desired("foreign.c.example.com", &[[10, 0, 0, 5]]),
            desired("unknown.c.example.com", &[]),
        ];
        let existing = [
            set("placeholder.c.example.com", "A", &[PLACEHOLDER]),
            set("ours.c.example.com", "A", &["10.9.9.9"]),
            set("ours.c.example.com", "TXT", &[&owner]),
            set("same.c.example.com", "A", &["10.0.0.4"]),
            set("same.c.example.com", "TXT", &[&owner]),
            set("foreign.c.example.com", "A", &["1.2.3.4"]),
            set("unknown.c.example.com", "A", &["10.7.7.7"]),
            set("unknown.c.example.com", "TXT", &[&owner]),
        ];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, outcomes) = plan_zone(&refs, &existing, C);
        let summary: Vec<(RecordAction, &str, &str)> = changes
            .iter()
            .map(|c| {
                (
                    c.action,
                    c.record.name.as_str(),
                    c.record.record_type.as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (RecordAction::Create, "new.c.example.com", "A"),
                (RecordAction::Create, "new.c.example.com", "TXT"),
                (RecordAction::Upsert, "placeholder.c.example.com", "A"),
                (RecordAction::Create, "placeholder.c.example.com", "TXT"),
                (RecordAction::Upsert, "ours.c.example.com", "A"),
            ]
        );
        assert!(changes.iter().all(|c| c.record.ttl == Some(TTL)));
        let action = |n: &str| outcomes.iter().find(|o| o.name == n).unwrap();
        assert_eq!(action("same.c.example.com").action, Action::Unchanged);
        assert!(action("foreign.c.example.com").warning.is_some());
        assert_eq!(action("unknown.c.example.com").to, ["10.7.7.7"]);
        assert_eq!(action("ours.c.example.com").from, ["10.9.9.9"]);
    }

    #[test]
    fn a_second_plan_after_applying_is_empty() {
        let owner = ownership_value(C);
        let records = [desired(
            "etcd-a.internal.c.example.com",
            &[[10, 0, 0, 2], [10, 0, 0, 1]],
        )];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, _) = plan_zone(&refs, &[], C);
        let applied: Vec<RecordSet> = changes.into_iter().map(|c| c.record).collect();
        assert_eq!(applied[1].values, [owner]);
        let (changes, outcomes) = plan_zone(&refs, &applied, C);
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(outcomes[0].action, Action::Unchanged);
    }

    #[test]
    fn reads_stay_inside_the_cluster_subtree() {
        assert_eq!(
            apexes(
                &[
                    "api.c.example.com",
                    "etcd-a.internal.c.example.com",
                    "api.other.com"
                ],
                C
            ),
            ["api.other.com", "c.example.com"]
        );
    }
}
