//! The member's view of kOps' gossip DNS, pure: the primary protocol's state read as DNS records
//! under kOps' key layout (`dns/local/<type>/<name>`), every name and address checked, and the
//! hosts block it makes.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde::Serialize;

use super::wire::protobuf::KvState;
use crate::names::check_dns_name;
use crate::plan::dns::hosts_block::{managed_records, update_hosts, HostRecords};

/// The key kOps' protokube publishes so that dns-controller may publish (`AddZone("local")`).
pub(crate) const ZONE_KEY: &str = "dns/local/NS/local";
/// Its value.
pub(crate) const ZONE_VALUE: &[u8] = b"gossip";

/// The two gossip protocols kOps runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Protocol {
    Mesh,
    Memberlist,
}

impl Protocol {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Mesh => "mesh",
            Self::Memberlist => "memberlist",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<Self> {
        match word {
            "mesh" => Some(Self::Mesh),
            "memberlist" => Some(Self::Memberlist),
            _ => None,
        }
    }
}

/// What one protocol's member holds: kOps' state and, per key, the peer it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProtocolState {
    pub(crate) state: KvState,
    pub(crate) origin: BTreeMap<String, String>,
}

impl ProtocolState {
    /// Merges what `peer` sent; returns the delta (what was new).
    pub(crate) fn merge_from(&mut self, peer: &str, incoming: &KvState) -> KvState {
        let delta = self.state.merge(incoming);
        for key in delta.records.keys() {
            self.origin.insert(key.clone(), peer.to_owned());
        }
        delta
    }
}

/// A record of the view: one key's newest value, wherever it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ViewRecord {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) addresses: Vec<IpAddr>,
    pub(crate) version: u64,
    pub(crate) protocol: Protocol,
    pub(crate) peer: String,
}

/// The view: live A/AAAA (and other) records, the names deleted, and a warning per key
/// that was skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) records: Vec<ViewRecord>,
    pub(crate) deleted: BTreeSet<String>,
    pub(crate) skipped: Vec<String>,
}

/// The zone kOps' gossip DNS knows (`dns/local/…`): dns-controller's gossip provider refuses any
/// name outside it (`buildTagKey`: "record not in zone"), so a name from the network outside it
/// came from nobody kOps runs.
pub(crate) const ZONE: &str = "local";

/// Whether `name` is in the gossip zone (`local`, or a name under it).
fn in_zone(name: &str) -> bool {
    name == ZONE
        || name
            .strip_suffix(ZONE)
            .is_some_and(|head| head.ends_with('.'))
}

/// Reads the primary protocol's state as DNS records (kOps' `DNSView`, which reads the primary
/// only): keys `dns/local/<type>/<name>` whose name is a DNS name in the gossip zone and whose
/// values are addresses of the type's family. Anything else is skipped, with a warning naming
/// its key, never repaired. The secondary protocol only carries the state to and from its
/// peers: memberlist has no authentication, so nothing it brings reaches the hosts file.
pub(crate) fn view(protocol: Protocol, held: &ProtocolState) -> View {
    let mut view = View::default();
    for (key, record) in &held.state.records {
        let peer = held.origin.get(key).cloned().unwrap_or_default();
        let Some(rest) = key.strip_prefix("dns/local/") else {
            continue;
        };
        let Some((kind, name)) = rest.split_once('/') else {
            view.skipped.push(format!(
                "gossip key `{}` is not kOps' DNS layout",
                key.escape_debug()
            ));
            continue;
        };
        if !matches!(kind, "A" | "AAAA") {
            continue;
        }
        if let Err(why) = check_dns_name(name) {
            view.skipped.push(format!(
                "gossip key `{}` skipped: {why}",
                key.escape_debug()
            ));
            continue;
        }
        if !in_zone(name) {
            view.skipped.push(format!(
                "gossip key `{}` skipped: `{name}` is outside the gossip zone `{ZONE}`, where \
                 dns-controller publishes",
                key.escape_debug()
            ));
            continue;
        }
        if record.tombstone {
            view.deleted.insert(name.to_owned());
            continue;
        }
        match addresses(kind, &record.data) {
            Ok(addresses) => view.records.push(ViewRecord {
                name: name.to_owned(),
                kind: kind.to_owned(),
                addresses,
                version: record.version,
                protocol,
                peer,
            }),
            Err(why) => view.skipped.push(format!(
                "gossip key `{}` skipped: {why}",
                key.escape_debug()
            )),
        }
    }
    let live: BTreeSet<&str> = view.records.iter().map(|r| r.name.as_str()).collect();
    view.deleted.retain(|name| !live.contains(name.as_str()));
    view
}

/// The values of a record: comma-separated addresses, all of the type's family.
fn addresses(kind: &str, data: &[u8]) -> Result<Vec<IpAddr>, String> {
    let text = std::str::from_utf8(data).map_err(|_| "its value is not text".to_owned())?;
    let mut out = Vec::new();
    for value in text.split(',') {
        let address: IpAddr = value
            .parse()
            .map_err(|_| format!("value `{}` is not an IP address", value.escape_debug()))?;
        if address.is_ipv4() != (kind == "A") {
            return Err(format!("value `{address}` is not an {kind} address"));
        }
        out.push(address);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl View {
    /// Name → addresses (A and AAAA together), as the hosts block holds them.
    pub(crate) fn host_records(&self) -> HostRecords {
        let mut out = HostRecords::new();
        for record in &self.records {
            out.entry(record.name.clone())
                .or_default()
                .extend(record.addresses.iter().copied());
        }
        for addresses in out.values_mut() {
            addresses.sort_unstable();
            addresses.dedup();
        }
        out
    }

    /// The names the view holds (live or deleted): the cloud's computed names yield to them.
    pub(crate) fn names(&self) -> BTreeSet<String> {
        self.records
            .iter()
            .map(|r| r.name.clone())
            .chain(self.deleted.iter().cloned())
            .collect()
    }
}

/// The hosts file with the view in its block: every name of the view at its addresses, the
/// deleted ones gone, every other line of the block (the cloud's names where the view has none,
/// nodeup's) and of the file as it was.
pub(crate) fn hosts_with_view(content: &[u8], view: &View) -> Vec<u8> {
    let mut records = managed_records(content);
    for name in &view.deleted {
        records.remove(name);
    }
    records.extend(view.host_records());
    update_hosts(content, &records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::protobuf::KvRecord;

    fn record(data: &str, version: u64) -> KvRecord {
        KvRecord {
            data: data.as_bytes().to_vec(),
            tombstone: false,
            version,
        }
    }

    fn held(entries: &[(&str, KvRecord)]) -> ProtocolState {
        let mut state = KvState::default();
        for (key, record) in entries {
            state.records.insert((*key).to_owned(), record.clone());
        }
        let mut held = ProtocolState::default();
        held.merge_from("peer-a", &state);
        held
    }

    const API: &str = "dns/local/A/api.internal.c.k8s.local";

    #[test]
    fn only_the_primary_is_read_and_names_outside_the_gossip_zone_are_skipped() {
        let mesh = held(&[
            (API, record("10.0.0.1", 5)),
            ("dns/local/A/registry.k8s.io", record("6.6.6.6", 5)),
            ("dns/local/A/local", record("10.0.0.9", 5)),
            ("dns/local/A/notlocal", record("10.0.0.8", 5)),
        ]);
        let view = view(Protocol::Mesh, &mesh);
        let names: Vec<_> = view.records.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["api.internal.c.k8s.local", "local"]);
        assert_eq!(view.records[0].protocol, Protocol::Mesh);
        assert_eq!(view.records[0].peer, "peer-a");
        assert_eq!(view.skipped.len(), 2, "{:?}", view.skipped);
        assert!(view.skipped[0].contains("outside the gossip zone `local`"));
    }

    #[test]
    fn hostile_names_and_values_are_skipped_with_their_key() {
        let mesh = held(&[
            (
                "dns/local/A/registry.k8s.io",
                record("6.6.6.6\n9.9.9.9 registry.k8s.io", 1),
            ),
            ("dns/local/A/bad name.local", record("1.2.3.4", 1)),
            (
                "dns/local/A/registry.k8s.local",
                record("10.0.0.3\n9.9.9.9 x.local", 1),
            ),
            ("dns/local/A/v6.local", record("fd00::1", 1)),
            ("dns/local/AAAA/v6.local", record("fd00::1", 1)),
            ("dns/local/NS/local", record("gossip", 1)),
            ("dns/local/A/ok.local", record("10.0.0.2,10.0.0.1", 1)),
        ]);
        let view = view(Protocol::Mesh, &mesh);
        let names: Vec<_> = view.records.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["ok.local", "v6.local"]);
        assert_eq!(view.skipped.len(), 4, "{:?}", view.skipped);
        assert!(view.skipped.iter().any(|w| w.contains("registry.k8s.io")));
        let hosts = hosts_with_view(b"127.0.0.1 localhost\n", &view);
        let text = String::from_utf8(hosts).unwrap();
        assert!(text.contains("10.0.0.1\tok.local"), "{text}");
        assert!(!text.contains("9.9.9.9"), "{text}");
    }

    #[test]
    fn a_deleted_name_leaves_the_block_and_other_lines_stay() {
        let mut gone = record("", 9);
        gone.tombstone = true;
        let mesh = held(&[
            ("dns/local/A/old.c.k8s.local", gone),
            (API, record("10.0.0.1", 2)),
        ]);
        let view = view(Protocol::Mesh, &mesh);
        let before = hosts_with_view(
            b"127.0.0.1 localhost\n",
            &View {
                records: vec![],
                deleted: BTreeSet::new(),
                skipped: vec![],
            },
        );
        let mut seeded = managed_records(&before);
        seeded.insert("old.c.k8s.local".into(), vec!["10.9.9.9".parse().unwrap()]);
        seeded.insert(
            "nodeup.c.k8s.local".into(),
            vec!["10.8.8.8".parse().unwrap()],
        );
        let content = update_hosts(b"127.0.0.1 localhost\n", &seeded);
        let text = String::from_utf8(hosts_with_view(&content, &view)).unwrap();
        assert!(!text.contains("old.c.k8s.local"), "{text}");
        assert!(text.contains("10.8.8.8\tnodeup.c.k8s.local"), "{text}");
        assert!(
            text.contains("10.0.0.1\tapi.internal.c.k8s.local"),
            "{text}"
        );
        assert!(text.starts_with("127.0.0.1 localhost\n"), "{text}");
        assert_eq!(
            hosts_with_view(text.as_bytes(), &view),
            text.as_bytes(),
            "stable"
        );
    }
}
