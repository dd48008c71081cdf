//! A zone's plan: the minimal changes for the names of one zone from what the zone holds, with
//! an external-dns style ownership TXT record beside each name protokube manages; kOps'
//! placeholders, external-dns' names, `--adopt` and the deletion guard. Pure, and the same for
//! every DNS service with zones.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use super::zones::{RecordChange, RecordSet};
use crate::plan::dns::records::DesiredRecord;
use crate::plan::state::MissingName;
use crate::report::Action;

/// TTL of every record protokube writes.
pub(crate) const TTL: i64 = 60;
/// The address kOps puts in `A` records before the cluster is up; protokube replaces it.
pub(crate) const PLACEHOLDER: &str = "203.0.113.123";
/// The address kOps puts in `AAAA` records of IPv6 clusters before the cluster is up.
pub(crate) const PLACEHOLDER_V6: &str = "fd00:dead:add::";

/// Whether a record set holds nothing but kOps' placeholder address of its family.
fn is_placeholder(set: &RecordSet) -> bool {
    let placeholder = match set.record_type.as_str() {
        "A" => PLACEHOLDER,
        "AAAA" => PLACEHOLDER_V6,
        _ => return false,
    };
    let Ok(placeholder) = placeholder.parse::<IpAddr>() else {
        return false;
    };
    !set.alias
        && !set.values.is_empty()
        && set
            .values
            .iter()
            .all(|v| v.parse::<IpAddr>().is_ok_and(|a| a == placeholder))
}

/// The prefixes current external-dns puts before a name to hold its ownership TXT there.
pub(crate) const EXTERNAL_DNS_PREFIXES: [&str; 3] = ["a-", "aaaa-", "cname-"];

/// The external-dns ownership record of `name`, if any: a TXT with `heritage=external-dns` at
/// the name or at `a-`/`aaaa-`/`cname-<name>` (the prefix on the first label).
pub(crate) fn external_dns_owner<'a>(
    name: &str,
    existing: &'a [RecordSet],
) -> Option<&'a RecordSet> {
    let at: Vec<String> = std::iter::once(name.to_owned())
        .chain(EXTERNAL_DNS_PREFIXES.iter().map(|p| format!("{p}{name}")))
        .collect();
    existing.iter().find(|r| {
        r.record_type == "TXT"
            && at.contains(&r.name)
            && r.values.iter().any(|v| v.contains("heritage=external-dns"))
    })
}

/// The ownership TXT value beside each name protokube manages (with its quotes, as DNS services
/// store TXT values).
pub(crate) fn ownership_value(cluster: &str) -> String {
    format!("\"heritage=protokube,protokube/cluster={cluster}\"")
}

/// The record types protokube writes; a name holding any other type is someone else's.
pub(crate) const WRITTEN_TYPES: [&str; 3] = ["A", "AAAA", "TXT"];

/// What happens to one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameOutcome {
    pub(crate) name: String,
    pub(crate) action: Action,
    pub(crate) from: Vec<String>,
    pub(crate) to: Vec<String>,
    /// Set when the name is left alone because someone else owns it.
    pub(crate) warning: Option<String>,
    /// Taken over with `--adopt` (its ownership TXT written now).
    pub(crate) adopted: bool,
    /// An owned name the cluster no longer has, kept until it has been missing long enough:
    /// since when, with which values (for the state file).
    pub(crate) missing: Option<MissingName>,
}

impl NameOutcome {
    /// A name that stands as desired.
    pub(crate) fn unchanged(record: &DesiredRecord) -> Self {
        let addresses: Vec<String> = record
            .addresses
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        Self {
            name: record.name.clone(),
            action: Action::Unchanged,
            from: addresses.clone(),
            to: addresses,
            warning: None,
            adopted: false,
            missing: None,
        }
    }
}

/// What a zone's plan may do beyond writing the desired names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ZonePolicy {
    /// `--adopt`: take over a name of the cluster's own set that holds only A/AAAA records and
    /// no ownership TXT at all (left by kOps' dns-controller or the old protokube).
    pub(crate) adopt: bool,
    /// When an owned name the cluster no longer has may go.
    pub(crate) deletion: DeletionGuard,
}

/// When an owned name the cluster no longer has is deleted (docs/safety.md): never on a partial
/// view. A deleted name is cached as NXDOMAIN for the zone's SOA minimum, so in doubt, keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeletionGuard {
    /// The etcd names of every member some volume of the full answer lists (in any volume's
    /// member list, not only its own volume's tag): only an etcd name outside this set goes.
    /// `None`: the answer named no etcd member at all (a glitch, a permission gone, etcd-manager
    /// owning etcd): no etcd name goes.
    pub(crate) listed_etcd_names: Option<BTreeSet<String>>,
    /// Any other name goes once missing on consecutive full reads spanning `grace`: the names
    /// found missing before, since when and with which values (from the state file).
    pub(crate) missing: BTreeMap<String, MissingName>,
    pub(crate) now: SystemTime,
    /// `--verify-interval`.
    pub(crate) grace: Duration,
}

impl Default for DeletionGuard {
    /// Deletes nothing: no etcd name listed, every other name missing only from now.
    fn default() -> Self {
        Self {
            listed_etcd_names: None,
            missing: BTreeMap::new(),
            now: SystemTime::UNIX_EPOCH,
            grace: Duration::MAX,
        }
    }
}

/// What the guard says of an owned name the cluster no longer has, holding `values` now.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    Delete,
    /// Kept; `Some` when the name is waited out (to remember), `None` for an etcd name kept
    /// because its member is still listed (or no member is known).
    Keep(Option<MissingName>),
}

impl DeletionGuard {
    fn verdict(&self, name: &str, values: &[String]) -> Verdict {
        if is_etcd_name(name) {
            return match &self.listed_etcd_names {
                Some(listed) if !listed.contains(name) => Verdict::Delete,
                _ => Verdict::Keep(None),
            };
        }
        let mut values = values.to_vec();
        values.sort();
        match self.missing.get(name) {
            // Missed since a moment that has come (a first miss dated in the future — a clock
            // that was ahead — is no miss yet: it restarts now, as a future `verified.at` does).
            Some(seen) if seen.values == values && seen.since <= self.now => {
                let missing_for = self.now.duration_since(seen.since).unwrap_or_default();
                if missing_for >= self.grace {
                    Verdict::Delete
                } else {
                    Verdict::Keep(Some(seen.clone()))
                }
            }
            // First missed now, its values changed since (another master publishes it), or
            // its first miss recorded in the future.
            _ => Verdict::Keep(Some(MissingName {
                since: self.now,
                values,
            })),
        }
    }
}

/// Whether a record set is one protokube writes: A or AAAA (not an alias), or its TXT holding
/// exactly the ownership value.
fn protokube_wrote(set: &RecordSet, owner: &str) -> bool {
    match set.record_type.as_str() {
        "A" | "AAAA" => !set.alias,
        "TXT" => set.values == [owner],
        _ => false,
    }
}

/// Whether `name` is an etcd member's name (`etcd-…` in its first label).
fn is_etcd_name(name: &str) -> bool {
    name.starts_with("etcd-")
}

/// Names `existing` marks as owned by `cluster` (our TXT beside them).
fn owned_names<'a>(existing: &'a [RecordSet], owner: &str) -> BTreeSet<&'a str> {
    existing
        .iter()
        .filter(|r| r.record_type == "TXT" && r.values.iter().any(|v| v == owner))
        .map(|r| r.name.as_str())
        .collect()
}

/// Plans the changes for the names of one zone against what the zone holds: the desired names
/// written, and the names this cluster owns that it no longer has deleted with their TXT.
/// Pure.
pub(crate) fn plan_zone(
    desired: &[&DesiredRecord],
    existing: &[RecordSet],
    cluster: &str,
    policy: &ZonePolicy,
) -> (Vec<RecordChange>, Vec<NameOutcome>) {
    let owner = ownership_value(cluster);
    let mut changes = Vec::new();
    let mut outcomes = Vec::new();
    for record in desired {
        let name = NameInZone::read(record, existing, &owner, policy.adopt);
        outcomes.push(plan_name(&name, cluster, &owner, &mut changes));
    }
    plan_names_gone(
        desired,
        existing,
        &owner,
        policy,
        &mut changes,
        &mut outcomes,
    );
    (changes, outcomes)
}

/// What one zone holds at a desired name, and whose it is.
struct NameInZone<'a> {
    record: &'a DesiredRecord,
    a: Option<&'a RecordSet>,
    aaaa: Option<&'a RecordSet>,
    txt: Option<&'a RecordSet>,
    /// Record sets there protokube never writes (aliases, other types), described.
    held_otherwise: Vec<String>,
    external_dns: Option<&'a RecordSet>,
    /// Our ownership TXT is there.
    owned: bool,
    /// Taken over (`--adopt`): no ownership record of anyone, only address records.
    adopted: bool,
    /// Address records other than kOps' placeholders (which count as unset).
    foreign_addresses: bool,
}

impl<'a> NameInZone<'a> {
    fn read(
        record: &'a DesiredRecord,
        existing: &'a [RecordSet],
        owner: &str,
        adopt: bool,
    ) -> Self {
        let find = |t: &str| {
            existing
                .iter()
                .find(|r| r.name == record.name && r.record_type == t)
        };
        let (a, aaaa, txt) = (find("A"), find("AAAA"), find("TXT"));
        let held_otherwise = existing
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
        let owned = txt.is_some_and(|t| t.values.iter().any(|v| v == owner));
        let external_dns = external_dns_owner(&record.name, existing);
        Self {
            record,
            a,
            aaaa,
            txt,
            held_otherwise,
            external_dns,
            owned,
            adopted: !owned && txt.is_none() && external_dns.is_none() && adopt,
            foreign_addresses: [a, aaaa]
                .into_iter()
                .flatten()
                .any(|set| !is_placeholder(set)),
        }
    }

    /// The addresses the zone holds at the name.
    fn current(&self) -> Vec<String> {
        [self.a, self.aaaa]
            .into_iter()
            .flatten()
            .flat_map(|set| set.values.clone())
            .collect()
    }

    /// Why the name is left alone, if it is: held through records protokube does not write,
    /// owned by external-dns, or held by someone else.
    fn refusal(&self, cluster: &str, owner: &str) -> Option<String> {
        let name = &self.record.name;
        if !self.held_otherwise.is_empty() {
            return Some(format!(
                "DNS name `{name}` is held through {}, which protokube does not write; left alone",
                self.held_otherwise.join(" and ")
            ));
        }
        if let (false, Some(ownership)) = (self.owned, self.external_dns) {
            return Some(format!(
                "DNS name `{name}` is owned by external-dns (ownership TXT at `{}`); left alone",
                ownership.name
            ));
        }
        if !self.owned && !self.adopted && (self.txt.is_some() || self.foreign_addresses) {
            let hint = if self.txt.is_none() {
                "; if it is this cluster's (written by kOps' dns-controller or the old \
                 protokube), pass --adopt to take it over"
            } else {
                ""
            };
            return Some(format!(
                "DNS record `{name}` exists and is not owned by cluster `{cluster}` (no ownership \
                 TXT record {owner}); left alone{hint}"
            ));
        }
        None
    }
}

/// Plans one desired name: its address record sets (one per family) and our TXT beside them,
/// or why it is left alone.
fn plan_name(
    name: &NameInZone<'_>,
    cluster: &str,
    owner: &str,
    changes: &mut Vec<RecordChange>,
) -> NameOutcome {
    let record = name.record;
    let current = name.current();
    let mut outcome = NameOutcome {
        name: record.name.clone(),
        action: Action::Unchanged,
        from: current.clone(),
        to: record.addresses.iter().map(ToString::to_string).collect(),
        warning: None,
        adopted: false,
        missing: None,
    };
    if record.addresses.is_empty() {
        // Unknown right now (no master running, volume attached nowhere): keep what is there.
        outcome.to = current;
        return outcome;
    }
    if let Some(warning) = name.refusal(cluster, owner) {
        outcome.to = current;
        outcome.warning = Some(warning);
        return outcome;
    }
    let before = changes.len();
    changes.extend(address_changes(name));
    if changes.len() > before || name.adopted {
        outcome.action = if name.a.is_none() && name.aaaa.is_none() {
            Action::Create
        } else {
            Action::Update
        };
    }
    outcome.adopted = name.adopted && name.foreign_addresses;
    if !name.owned {
        changes.push(RecordChange::create(RecordSet {
            name: record.name.clone(),
            record_type: "TXT".into(),
            ttl: Some(TTL),
            values: vec![owner.to_owned()],
            alias: false,
        }));
    }
    outcome
}

/// One record set per address family: A for IPv4, AAAA for IPv6; a family the name no longer
/// has is deleted.
fn address_changes(name: &NameInZone<'_>) -> Vec<RecordChange> {
    let record = name.record;
    let family = |v6: bool| -> Vec<String> {
        record
            .addresses
            .iter()
            .filter(|a| a.is_ipv6() == v6)
            .map(ToString::to_string)
            .collect()
    };
    let mut changes = Vec::new();
    for (record_type, want, have) in [
        ("A", family(false), name.a),
        ("AAAA", family(true), name.aaaa),
    ] {
        let set = RecordSet {
            name: record.name.clone(),
            record_type: record_type.into(),
            ttl: Some(TTL),
            values: want.clone(),
            alias: false,
        };
        let change = match have {
            None if want.is_empty() => None,
            None => Some(RecordChange::create(set)),
            Some(have) if want.is_empty() => Some(RecordChange::delete(have.clone())),
            Some(have)
                if same_values(&have.values, &want)
                    && have.ttl == Some(TTL)
                    && (name.owned || name.adopted) =>
            {
                None
            }
            Some(have) => Some(RecordChange::upsert(set, have.clone())),
        };
        changes.extend(change);
    }
    changes
}

/// Owned names the cluster no longer has: every record set of ours there goes, once the guard
/// says it is really gone.
fn plan_names_gone(
    desired: &[&DesiredRecord],
    existing: &[RecordSet],
    owner: &str,
    policy: &ZonePolicy,
    changes: &mut Vec<RecordChange>,
    outcomes: &mut Vec<NameOutcome>,
) {
    let wanted: BTreeSet<&str> = desired.iter().map(|r| r.name.as_str()).collect();
    for name in owned_names(existing, owner) {
        if wanted.contains(name) {
            continue;
        }
        let sets: Vec<&RecordSet> = existing.iter().filter(|r| r.name == name).collect();
        if sets.iter().any(|r| !protokube_wrote(r, owner)) {
            // Something else lives there too: not protokube's to remove.
            continue;
        }
        let addresses: Vec<String> = sets
            .iter()
            .filter(|r| r.record_type != "TXT")
            .flat_map(|r| r.values.clone())
            .collect();
        let (action, missing) = match policy.deletion.verdict(name, &addresses) {
            Verdict::Delete => (Action::Delete, None),
            Verdict::Keep(None) => continue,
            Verdict::Keep(missing) => (Action::Unchanged, missing),
        };
        if action == Action::Delete {
            changes.extend(
                sets.into_iter()
                    .map(|set| RecordChange::delete(set.clone())),
            );
        }
        outcomes.push(NameOutcome {
            name: name.to_owned(),
            action,
            to: if action == Action::Delete {
                Vec::new()
            } else {
                addresses.clone()
            },
            from: addresses,
            warning: None,
            adopted: false,
            missing,
        });
    }
}

/// Plans taking this node's `own` addresses out of the names of one zone that `cluster` owns
/// (`reset`): a name left with no address is deleted with its TXT, except an etcd member's
/// name, which follows its volume (the master that claims it next points it there: deleting it
/// would leave the peers with NXDOMAIN cached); names not owned, and other nodes' addresses,
/// are never touched. Pure.
pub(crate) fn plan_release(
    existing: &[RecordSet],
    own: &[IpAddr],
    cluster: &str,
) -> (Vec<RecordChange>, Vec<NameOutcome>) {
    let owner = ownership_value(cluster);
    let own: BTreeSet<String> = own.iter().map(ToString::to_string).collect();
    let mut changes = Vec::new();
    let mut outcomes = Vec::new();
    for name in owned_names(existing, &owner) {
        let sets: Vec<&RecordSet> = existing.iter().filter(|r| r.name == name).collect();
        let held = |r: &&&RecordSet| !r.alias && (r.record_type == "A" || r.record_type == "AAAA");
        let from: Vec<String> = sets
            .iter()
            .filter(held)
            .flat_map(|r| r.values.clone())
            .collect();
        if !from.iter().any(|v| own.contains(v)) {
            continue;
        }
        let to: Vec<String> = from.iter().filter(|v| !own.contains(*v)).cloned().collect();
        if to.is_empty() && is_etcd_name(name) {
            continue;
        }
        let others = sets.iter().any(|r| !protokube_wrote(r, &owner));
        for set in sets.iter().filter(held) {
            let left: Vec<String> = set
                .values
                .iter()
                .filter(|v| !own.contains(*v))
                .cloned()
                .collect();
            if left.len() == set.values.len() {
                continue;
            }
            changes.push(if left.is_empty() {
                RecordChange::delete((*set).clone())
            } else {
                RecordChange::upsert(
                    RecordSet {
                        values: left,
                        ..(*set).clone()
                    },
                    (*set).clone(),
                )
            });
        }
        let deleted = to.is_empty() && !others;
        if deleted {
            changes.extend(
                sets.iter()
                    .filter(|r| r.record_type == "TXT")
                    .map(|r| RecordChange::delete((*r).clone())),
            );
        }
        outcomes.push(NameOutcome {
            name: name.to_owned(),
            action: if deleted {
                Action::Delete
            } else {
                Action::Update
            },
            from,
            to,
            warning: None,
            adopted: false,
            missing: None,
        });
    }
    (changes, outcomes)
}

/// The deletions of `--remove-dns-names` (kOps ≤ 1.22's nodeup lists the old etcd peer names,
/// which etcd-manager does not use): every A record set of each listed name, whatever
/// addresses it holds, as kOps' `removeDNSRecords` removed them (`dns_cleanup.go`); an alias
/// holds no addresses and stays, as does every other type.
pub(crate) fn plan_placeholder_removal(
    existing: &[RecordSet],
    names: &[&str],
) -> (Vec<RecordChange>, Vec<NameOutcome>) {
    let mut changes = Vec::new();
    let mut outcomes = Vec::new();
    for name in names {
        let held: Vec<&RecordSet> = existing
            .iter()
            .filter(|r| r.name == *name && !r.alias && r.record_type == "A")
            .collect();
        if held.is_empty() {
            continue;
        }
        changes.extend(held.iter().map(|r| RecordChange::delete((*r).clone())));
        outcomes.push(NameOutcome {
            name: (*name).to_owned(),
            action: Action::Delete,
            from: held.iter().flat_map(|r| r.values.clone()).collect(),
            to: Vec::new(),
            warning: None,
            adopted: false,
            missing: None,
        });
    }
    (changes, outcomes)
}

/// Record values compared as sets (a service keeps them in the order they were written).
fn same_values(a: &[String], b: &[String]) -> bool {
    let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    set(a) == set(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::dns::records::RecordRole;
    use crate::plan::dns::zones::RecordAction;

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
            values: values
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            alias: false,
        }
    }

    #[test]
    fn the_listed_names_lose_their_a_records_whatever_they_hold() {
        let mut alias = set("etcd-c.internal.c.example.com", "A", &[]);
        alias.alias = true;
        let existing = [
            set("etcd-a.internal.c.example.com", "A", &[PLACEHOLDER]),
            set("etcd-b.internal.c.example.com", "A", &["10.0.0.2"]),
            set("etcd-events-a.internal.c.example.com", "A", &[PLACEHOLDER]),
            set(
                "etcd-events-a.internal.c.example.com",
                "AAAA",
                &[PLACEHOLDER_V6],
            ),
            alias,
            set("etcd-z.internal.c.example.com", "A", &["10.0.0.9"]),
        ];
        let (changes, outcomes) = plan_placeholder_removal(
            &existing,
            &[
                "etcd-a.internal.c.example.com",
                "etcd-b.internal.c.example.com",
                "etcd-events-a.internal.c.example.com",
                "etcd-c.internal.c.example.com",
                "etcd-gone.internal.c.example.com",
            ],
        );
        let deleted: Vec<(&str, &str)> = changes
            .iter()
            .map(|c| {
                assert_eq!(c.action, RecordAction::Delete);
                (c.record.name.as_str(), c.record.record_type.as_str())
            })
            .collect();
        // kOps' removeDNSRecords: A records, real addresses too; no other type, no alias, no
        // name that is not listed.
        assert_eq!(
            deleted,
            [
                ("etcd-a.internal.c.example.com", "A"),
                ("etcd-b.internal.c.example.com", "A"),
                ("etcd-events-a.internal.c.example.com", "A"),
            ]
        );
        assert_eq!(outcomes.len(), 3);
        assert!(outcomes.iter().all(|o| o.action == Action::Delete));
        let b = outcomes
            .iter()
            .find(|o| o.name == "etcd-b.internal.c.example.com")
            .unwrap();
        assert_eq!(b.from, ["10.0.0.2"]);
    }

    #[test]
    fn each_address_family_gets_its_record_set() {
        let owner = ownership_value(C);
        let mut dual = desired("etcd-a.internal.c.example.com", &[[10, 0, 0, 1]]);
        dual.addresses.push("2001:db8::1".parse().unwrap());
        let refs = [&dual];
        // New: A, AAAA and the ownership TXT.
        let (changes, outcomes) = plan_zone(&refs, &[], C, &ZonePolicy::default());
        let summary: Vec<(RecordAction, &str, Vec<String>)> = changes
            .iter()
            .map(|c| {
                (
                    c.action,
                    c.record.record_type.as_str(),
                    c.record.values.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (RecordAction::Create, "A", vec!["10.0.0.1".to_owned()]),
                (RecordAction::Create, "AAAA", vec!["2001:db8::1".to_owned()]),
                (RecordAction::Create, "TXT", vec![owner.clone()]),
            ]
        );
        assert_eq!(outcomes[0].action, Action::Create);
        // Converged: nothing.
        let existing = [
            set("etcd-a.internal.c.example.com", "A", &["10.0.0.1"]),
            set("etcd-a.internal.c.example.com", "AAAA", &["2001:db8::1"]),
            set("etcd-a.internal.c.example.com", "TXT", &[&owner]),
        ];
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &ZonePolicy::default());
        assert!(changes.is_empty(), "{changes:#?}");
        assert_eq!(outcomes[0].action, Action::Unchanged);
        // The member moved to an IPv6-only master: its A record goes, its AAAA is updated.
        let v6_only = DesiredRecord {
            addresses: vec!["2001:db8::2".parse().unwrap()],
            ..dual.clone()
        };
        let (changes, outcomes) = plan_zone(&[&v6_only], &existing, C, &ZonePolicy::default());
        let summary: Vec<(RecordAction, &str)> = changes
            .iter()
            .map(|c| (c.action, c.record.record_type.as_str()))
            .collect();
        assert_eq!(
            summary,
            [(RecordAction::Delete, "A"), (RecordAction::Upsert, "AAAA")]
        );
        assert_eq!(
            changes[0].record, existing[0],
            "a delete names the set as it is"
        );
        assert_eq!(outcomes[0].action, Action::Update);
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
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &ZonePolicy::default());
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

    const C: &str = "c.example.com";

    /// (action, name, type) of each change.
    fn summary(changes: &[RecordChange]) -> Vec<(RecordAction, &str, &str)> {
        changes
            .iter()
            .map(|c| {
                (
                    c.action,
                    c.record.name.as_str(),
                    c.record.record_type.as_str(),
                )
            })
            .collect()
    }

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
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &ZonePolicy::default());
        let summary = summary(&changes);
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
    fn both_kops_placeholders_are_replaced_like_unset_values() {
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let records = [
            DesiredRecord {
                name: "api.internal.c.example.com".into(),
                role: RecordRole::ApiInternal,
                addresses: vec!["10.0.0.1".parse().unwrap(), v6],
            },
            DesiredRecord {
                name: "kops-controller.internal.c.example.com".into(),
                role: RecordRole::KopsController,
                addresses: vec![v6],
            },
        ];
        let existing = [
            // kOps precreates both families on an IPv6 cluster, TTL 10, no TXT.
            RecordSet {
                ttl: Some(10),
                ..set("api.internal.c.example.com", "A", &[PLACEHOLDER])
            },
            RecordSet {
                ttl: Some(10),
                ..set("api.internal.c.example.com", "AAAA", &["fd00:dead:add::"])
            },
            set(
                "kops-controller.internal.c.example.com",
                "AAAA",
                &["fd00:dead:add:0::0"],
            ),
        ];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &ZonePolicy::default());
        assert!(outcomes.iter().all(|o| o.warning.is_none()), "{outcomes:?}");
        assert_eq!(
            summary(&changes),
            [
                (RecordAction::Upsert, "api.internal.c.example.com", "A"),
                (RecordAction::Upsert, "api.internal.c.example.com", "AAAA"),
                (RecordAction::Create, "api.internal.c.example.com", "TXT"),
                (
                    RecordAction::Upsert,
                    "kops-controller.internal.c.example.com",
                    "AAAA"
                ),
                (
                    RecordAction::Create,
                    "kops-controller.internal.c.example.com",
                    "TXT"
                ),
            ]
        );
        // Any other AAAA is someone else's.
        let foreign = [set(
            "kops-controller.internal.c.example.com",
            "AAAA",
            &["fd00::1"],
        )];
        let (changes, outcomes) = plan_zone(&refs[1..], &foreign, C, &ZonePolicy::default());
        assert!(changes.is_empty());
        assert!(outcomes[0].warning.is_some());
    }

    #[test]
    fn names_external_dns_owns_are_never_adopted_nor_taken_from_a_placeholder() {
        let records = [
            desired("api.c.example.com", &[[10, 0, 0, 1]]),
            desired("api.internal.c.example.com", &[[10, 0, 0, 2]]),
        ];
        let heritage = "\"heritage=external-dns,external-dns/owner=kops-c.example.com\"";
        let existing = [
            // Current external-dns: its TXT at `a-<name>`, the name itself only addresses.
            set("api.c.example.com", "A", &["54.0.0.9"]),
            set("a-api.c.example.com", "TXT", &[heritage]),
            // kOps' placeholder with external-dns' ownership beside it (`aaaa-` form).
            set("api.internal.c.example.com", "A", &[PLACEHOLDER]),
            set("aaaa-api.internal.c.example.com", "TXT", &[heritage]),
        ];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        for adopt in [false, true] {
            let policy = ZonePolicy {
                adopt,
                ..ZonePolicy::default()
            };
            let (changes, outcomes) = plan_zone(&refs, &existing, C, &policy);
            assert!(changes.is_empty(), "adopt {adopt}: {changes:?}");
            for outcome in &outcomes {
                let warning = outcome.warning.as_deref().unwrap_or_default();
                assert!(warning.contains("external-dns"), "{warning}");
                assert!(!outcome.adopted);
            }
        }
        assert_eq!(
            external_dns_owner("api.c.example.com", &existing).map(|r| r.name.as_str()),
            Some("a-api.c.example.com")
        );
        assert!(external_dns_owner("x.c.example.com", &existing).is_none());
    }

    #[test]
    fn a_second_plan_after_applying_is_empty() {
        let owner = ownership_value(C);
        let records = [desired(
            "etcd-a.internal.c.example.com",
            &[[10, 0, 0, 2], [10, 0, 0, 1]],
        )];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, _) = plan_zone(&refs, &[], C, &ZonePolicy::default());
        let applied: Vec<RecordSet> = changes.into_iter().map(|c| c.record).collect();
        assert_eq!(applied[1].values, [owner]);
        let (changes, outcomes) = plan_zone(&refs, &applied, C, &ZonePolicy::default());
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(outcomes[0].action, Action::Unchanged);
    }

    /// Names of one zone, some owned and gone from the cluster, and the clock of the guard.
    struct GoneNames {
        records: Vec<DesiredRecord>,
        existing: Vec<RecordSet>,
        now: SystemTime,
        grace: Duration,
    }

    fn gone_names() -> GoneNames {
        let owner = ownership_value(C);
        GoneNames {
            records: vec![desired("etcd-a.internal.c.example.com", &[[10, 0, 0, 1]])],
            existing: vec![
                set("etcd-a.internal.c.example.com", "A", &["10.0.0.1"]),
                set("etcd-a.internal.c.example.com", "TXT", &[&owner]),
                set("etcd-b.internal.c.example.com", "A", &["10.0.0.2"]),
                set("etcd-b.internal.c.example.com", "TXT", &[&owner]),
                set("old.c.example.com", "AAAA", &["fd00::1"]),
                set("old.c.example.com", "TXT", &[&owner]),
                // Not ours, or not only ours: kept.
                set("etcd-c.internal.c.example.com", "A", &["10.0.0.3"]),
                set("shared.c.example.com", "A", &["10.0.0.4"]),
                set("shared.c.example.com", "MX", &["10 mail.example.com"]),
                set("shared.c.example.com", "TXT", &[&owner]),
            ],
            now: std::time::UNIX_EPOCH + Duration::from_hours(1000),
            grace: Duration::from_hours(1),
        }
    }

    fn seen(since: SystemTime, values: &[&str]) -> MissingName {
        MissingName {
            since,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    #[test]
    fn owned_names_the_cluster_no_longer_has_are_deleted_with_their_txt() {
        let GoneNames {
            records,
            existing,
            now,
            grace,
        } = gone_names();
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        // Member b is in no volume's member list; `old` has been missing for the grace period.
        let gone = ZonePolicy {
            deletion: DeletionGuard {
                listed_etcd_names: Some(["etcd-a.internal.c.example.com".to_owned()].into()),
                missing: [(
                    "old.c.example.com".to_owned(),
                    seen(now - grace, &["fd00::1"]),
                )]
                .into(),
                now,
                grace,
            },
            ..ZonePolicy::default()
        };
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &gone);
        let summary = summary(&changes);
        assert_eq!(
            summary,
            [
                (RecordAction::Delete, "etcd-b.internal.c.example.com", "A"),
                (RecordAction::Delete, "etcd-b.internal.c.example.com", "TXT"),
                (RecordAction::Delete, "old.c.example.com", "AAAA"),
                (RecordAction::Delete, "old.c.example.com", "TXT"),
            ]
        );
        assert_eq!(
            changes[0].record, existing[2],
            "deletes name the sets as they are"
        );
        let deleted: Vec<&str> = outcomes
            .iter()
            .filter(|o| o.action == Action::Delete)
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(
            deleted,
            ["etcd-b.internal.c.example.com", "old.c.example.com"]
        );
    }

    #[test]
    fn a_name_still_listed_or_missing_within_the_grace_period_stays() {
        let GoneNames {
            records,
            existing,
            now,
            grace,
        } = gone_names();
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        // A partial view: member b's volume skipped in this answer, but another volume still
        // lists b: its name stays. `old` missing for less than the grace period: it stays, and
        // is remembered as it was first seen missing.
        let partial = ZonePolicy {
            deletion: DeletionGuard {
                listed_etcd_names: Some(
                    [
                        "etcd-a.internal.c.example.com",
                        "etcd-b.internal.c.example.com",
                    ]
                    .map(str::to_owned)
                    .into(),
                ),
                missing: [(
                    "old.c.example.com".to_owned(),
                    seen(now - grace / 2, &["fd00::1"]),
                )]
                .into(),
                now,
                grace,
            },
            ..ZonePolicy::default()
        };
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &partial);
        assert!(changes.is_empty(), "{changes:#?}");
        let waited: Vec<_> = outcomes
            .iter()
            .filter_map(|o| Some((o.name.as_str(), o.missing.clone()?)))
            .collect();
        assert_eq!(
            waited,
            [("old.c.example.com", seen(now - grace / 2, &["fd00::1"]))]
        );
    }

    #[test]
    fn the_wait_for_a_missing_name_starts_now_unless_it_was_seen_missing_so_before() {
        let GoneNames {
            records,
            existing,
            now,
            grace,
        } = gone_names();
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        // First missed now, missed with other values before (another master published it
        // since), or first missed in the future (a clock that was ahead, 2099): the wait starts
        // now — the name is neither deleted nor kept until that date.
        let in_2099 = std::time::UNIX_EPOCH + Duration::from_hours(1_130_808);
        for missing in [
            BTreeMap::new(),
            [(
                "old.c.example.com".to_owned(),
                seen(now - grace * 5, &["fd00::9"]),
            )]
            .into(),
            [("old.c.example.com".to_owned(), seen(in_2099, &["fd00::1"]))].into(),
        ] {
            let policy = ZonePolicy {
                deletion: DeletionGuard {
                    missing,
                    now,
                    grace,
                    listed_etcd_names: None,
                },
                ..ZonePolicy::default()
            };
            let (changes, outcomes) = plan_zone(&refs, &existing, C, &policy);
            assert!(changes.is_empty(), "{changes:#?}");
            let old = outcomes
                .iter()
                .find(|o| o.name == "old.c.example.com")
                .unwrap();
            assert_eq!(old.missing, Some(seen(now, &["fd00::1"])));
        }
        // An answer without etcd members, and no record of misses: nothing goes.
        let (changes, _) = plan_zone(&refs, &existing, C, &ZonePolicy::default());
        assert!(changes.is_empty(), "{changes:#?}");
    }

    #[test]
    fn reset_leaves_a_single_member_etcd_name_to_follow_its_volume() {
        let owner = ownership_value(C);
        let mine: IpAddr = "10.0.0.1".parse().unwrap();
        let existing = [
            set("etcd-a.internal.c.example.com", "A", &["10.0.0.1"]),
            set("etcd-a.internal.c.example.com", "TXT", &[&owner]),
            set("api.internal.c.example.com", "A", &["10.0.0.1", "10.0.0.2"]),
            set("api.internal.c.example.com", "TXT", &[&owner]),
            set("kops-controller.internal.c.example.com", "A", &["10.0.0.1"]),
            set("kops-controller.internal.c.example.com", "TXT", &[&owner]),
        ];
        let (changes, outcomes) = plan_release(&existing, &[mine], C);
        assert_eq!(
            summary(&changes),
            [
                (RecordAction::Upsert, "api.internal.c.example.com", "A"),
                (
                    RecordAction::Delete,
                    "kops-controller.internal.c.example.com",
                    "A"
                ),
                (
                    RecordAction::Delete,
                    "kops-controller.internal.c.example.com",
                    "TXT"
                ),
            ]
        );
        assert!(outcomes.iter().all(|o| !o.name.starts_with("etcd-")));
    }

    #[test]
    fn adopt_takes_over_address_only_names_without_any_ownership_record() {
        let records = [
            desired("api.internal.c.example.com", &[[10, 0, 0, 1]]),
            desired("etcd-a.internal.c.example.com", &[[10, 0, 0, 2]]),
            desired("other.c.example.com", &[[10, 0, 0, 3]]),
        ];
        let existing = [
            // As dns-controller leaves them: addresses, no TXT.
            set("api.internal.c.example.com", "A", &["10.0.0.1"]),
            set("etcd-a.internal.c.example.com", "A", &["10.9.9.9"]),
            // Someone else's ownership record: never adopted.
            set("other.c.example.com", "A", &["10.0.0.3"]),
            set("other.c.example.com", "TXT", &["\"heritage=external-dns\""]),
        ];
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &ZonePolicy::default());
        assert!(changes.is_empty());
        let warnings: Vec<&str> = outcomes
            .iter()
            .filter_map(|o| o.warning.as_deref())
            .collect();
        assert_eq!(warnings.len(), 3);
        assert!(warnings[0].contains("--adopt"), "{}", warnings[0]);
        assert!(!warnings[2].contains("--adopt"), "{}", warnings[2]);

        let adopt = ZonePolicy {
            adopt: true,
            ..ZonePolicy::default()
        };
        let (changes, outcomes) = plan_zone(&refs, &existing, C, &adopt);
        let summary = summary(&changes);
        assert_eq!(
            summary,
            [
                (RecordAction::Create, "api.internal.c.example.com", "TXT"),
                (RecordAction::Upsert, "etcd-a.internal.c.example.com", "A"),
                (RecordAction::Create, "etcd-a.internal.c.example.com", "TXT"),
            ]
        );
        assert!(outcomes[0].adopted && outcomes[1].adopted);
        assert_eq!(outcomes[0].action, Action::Update);
        assert!(outcomes[2].warning.is_some());
        // Once adopted, converged without the flag.
        let mut applied: Vec<RecordSet> = existing.to_vec();
        for change in changes {
            applied.retain(|r| {
                !(r.name == change.record.name && r.record_type == change.record.record_type)
            });
            applied.push(change.record);
        }
        let (changes, _) = plan_zone(&refs, &applied, C, &ZonePolicy::default());
        assert!(changes.is_empty(), "{changes:#?}");
    }

    #[test]
    fn release_takes_only_this_nodes_addresses_out_of_owned_names() {
        let owner = ownership_value(C);
        let existing = [
            set("api.internal.c.example.com", "A", &["10.0.0.1", "10.0.0.2"]),
            set("api.internal.c.example.com", "TXT", &[&owner]),
            set("kops-controller.internal.c.example.com", "A", &["10.0.0.1"]),
            set(
                "kops-controller.internal.c.example.com",
                "AAAA",
                &["fd00::1"],
            ),
            set("kops-controller.internal.c.example.com", "TXT", &[&owner]),
            set("etcd-b.internal.c.example.com", "A", &["10.0.0.2"]),
            set("etcd-b.internal.c.example.com", "TXT", &[&owner]),
            set("foreign.c.example.com", "A", &["10.0.0.1"]),
        ];
        let own: Vec<IpAddr> = vec!["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
        let (changes, outcomes) = plan_release(&existing, &own, C);
        let summary: Vec<(RecordAction, &str, &str, Vec<String>)> = changes
            .iter()
            .map(|c| {
                (
                    c.action,
                    c.record.name.as_str(),
                    c.record.record_type.as_str(),
                    c.record.values.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    RecordAction::Upsert,
                    "api.internal.c.example.com",
                    "A",
                    vec!["10.0.0.2".to_owned()]
                ),
                (
                    RecordAction::Delete,
                    "kops-controller.internal.c.example.com",
                    "A",
                    vec!["10.0.0.1".to_owned()]
                ),
                (
                    RecordAction::Delete,
                    "kops-controller.internal.c.example.com",
                    "AAAA",
                    vec!["fd00::1".to_owned()]
                ),
                (
                    RecordAction::Delete,
                    "kops-controller.internal.c.example.com",
                    "TXT",
                    vec![owner.clone()]
                ),
            ]
        );
        let actions: Vec<(&str, Action)> = outcomes
            .iter()
            .map(|o| (o.name.as_str(), o.action))
            .collect();
        assert_eq!(
            actions,
            [
                ("api.internal.c.example.com", Action::Update),
                ("kops-controller.internal.c.example.com", Action::Delete)
            ]
        );
        // Applied, a second release has nothing left to do.
        let after: Vec<RecordSet> = vec![
            set("api.internal.c.example.com", "A", &["10.0.0.2"]),
            set("api.internal.c.example.com", "TXT", &[&owner]),
            existing[5].clone(),
            existing[6].clone(),
            existing[7].clone(),
        ];
        assert!(plan_release(&after, &own, C).0.is_empty());
    }
}
