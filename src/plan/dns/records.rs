//! The DNS records protokube publishes, computed from cloud state alone so that every node
//! computes the same answer. Pure.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

use crate::cloud::{AttachmentState, InstanceInfo};
use crate::etcd::EtcdKey;
use crate::plan::volumes::EtcdVolume;
use crate::spec::ClusterSpec;

/// What a record is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RecordRole {
    /// `etcd-<member>` / `etcd-<key>-<member>` + internal suffix → private IP of the instance the
    /// member's volume is attached to.
    EtcdMember,
    /// `api.internal.<cluster>` → private IPs of the running masters.
    ApiInternal,
    /// `api.<cluster>` (or `spec.masterPublicName`) → public IPs of the running masters.
    ApiPublic,
    /// `kops-controller.internal.<cluster>` → the masters' private IPs (gossip workers fetch
    /// their bootstrap configuration there).
    KopsController,
}

impl RecordRole {
    /// What a name of this role is, in words.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::EtcdMember => "an etcd member's name",
            Self::ApiInternal => "the internal API name",
            Self::ApiPublic => "the public API name (spec.masterPublicName)",
            Self::KopsController => "kops-controller's name",
        }
    }
}

/// A name and the addresses it should have. Empty addresses mean "unknown right now": the
/// current record is kept (a member whose volume is attached nowhere keeps its record, so DNS
/// does not flap during a failover).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct DesiredRecord {
    pub(crate) name: String,
    pub(crate) role: RecordRole,
    /// Sorted (IPv4 before IPv6), without duplicates.
    pub(crate) addresses: Vec<IpAddr>,
}

/// Which API names protokube publishes to a DNS service (kOps' `dns.go` and nodeup's annotations):
/// with an API load balancer `api.<cluster>` is the load balancer's alias, and with
/// `useForInternalApi` so is `api.internal.<cluster>`; neither is then protokube's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ApiNames<'a> {
    /// `spec.masterPublicName` (or `api.<cluster>`), unless a load balancer serves it.
    pub(crate) public: Option<&'a str>,
    /// `api.internal.<cluster>`, unless the load balancer serves it.
    pub(crate) internal: bool,
}

impl<'a> ApiNames<'a> {
    /// Both names, at the masters.
    #[cfg(test)]
    pub(crate) fn both(public_name: &'a str) -> Self {
        Self {
            public: Some(public_name),
            internal: true,
        }
    }

    /// The names the spec leaves to protokube.
    pub(crate) fn for_spec(spec: Option<&ClusterSpec>, public_name: &'a str) -> Self {
        let load_balancer = spec.is_some_and(ClusterSpec::api_load_balancer);
        let internal_by_lb = spec.is_some_and(ClusterSpec::load_balancer_serves_internal_api);
        Self {
            public: (!load_balancer).then_some(public_name),
            internal: !internal_by_lb,
        }
    }
}

/// The records for a cluster. `internal_suffix` starts with a dot; `api` says which API names
/// are protokube's. `etcd_volumes` are the cluster's etcd volumes in every zone (none where
/// etcd-manager owns etcd), `masters` its running control-plane instances. Every address
/// family an instance has is published: IPv4 as `A`, IPv6 as `AAAA`. kOps'
/// `kops-controller.internal.<cluster>` (where every worker fetches its configuration) goes to
/// the masters too.
pub(crate) fn desired_records(
    cluster: &str,
    internal_suffix: &str,
    api: ApiNames<'_>,
    etcd_volumes: &[EtcdVolume],
    masters: &[InstanceInfo],
) -> Vec<DesiredRecord> {
    let mut records = etcd_records(internal_suffix, etcd_volumes, masters);
    if api.internal {
        records.push(DesiredRecord {
            name: format!("api.internal.{cluster}"),
            role: RecordRole::ApiInternal,
            addresses: private_addresses(masters),
        });
    }
    if let Some(public_name) = api.public {
        records.push(DesiredRecord {
            name: public_name.trim_end_matches('.').to_ascii_lowercase(),
            role: RecordRole::ApiPublic,
            addresses: sorted(masters.iter().flat_map(|m| m.public_ips.clone()).collect()),
        });
    }
    records.push(kops_controller_record(cluster, masters));
    records
}

/// Why `name` (the spec's public API name) is a name the cluster already publishes for another
/// purpose: `api.internal.<cluster>`, `kops-controller.internal.<cluster>`, or a name under the
/// internal suffix (the etcd members') or under kOps' `internal.<cluster>`. Two records of one
/// name would each overwrite the other.
pub(crate) fn own_name_taken(cluster: &str, internal_suffix: &str, name: &str) -> Option<String> {
    let fixed = [
        (
            format!("api.internal.{cluster}"),
            "the cluster's internal API name",
        ),
        (
            format!("kops-controller.internal.{cluster}"),
            "kops-controller's name, where every node fetches its configuration",
        ),
    ];
    if let Some((_, what)) = fixed.iter().find(|(own, _)| own == name) {
        return Some(format!("`{name}` is {what}"));
    }
    let suffix = internal_suffix.trim_start_matches('.');
    let kops_internal = format!("internal.{cluster}");
    let apex = [suffix, kops_internal.as_str()]
        .into_iter()
        .find(|apex| crate::names::is_within(name, apex))?;
    Some(format!(
        "`{name}` is under `{apex}`, where the cluster's internal names live (its etcd members' \
         among them)"
    ))
}

/// `kops-controller.internal.<cluster>` → the masters' private addresses.
fn kops_controller_record(cluster: &str, masters: &[InstanceInfo]) -> DesiredRecord {
    DesiredRecord {
        name: format!("kops-controller.internal.{cluster}"),
        role: RecordRole::KopsController,
        addresses: private_addresses(masters),
    }
}

/// The hosts-file records of a control-plane node of a cluster without a DNS service, as
/// current kOps' nodeup writes them: its own API names (`api.internal.<cluster>` and the
/// spec's public name, when set) at `127.0.0.1`, and the etcd members' names.
pub(crate) fn gossip_master_records(
    cluster: &str,
    internal_suffix: &str,
    spec_public_name: Option<&str>,
    etcd_volumes: &[EtcdVolume],
    masters: &[InstanceInfo],
) -> Vec<DesiredRecord> {
    let loopback = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    let mut records = etcd_records(internal_suffix, etcd_volumes, masters);
    records.push(DesiredRecord {
        name: format!("api.internal.{cluster}"),
        role: RecordRole::ApiInternal,
        addresses: loopback.clone(),
    });
    if let Some(name) = spec_public_name {
        records.push(DesiredRecord {
            name: name.trim_end_matches('.').to_ascii_lowercase(),
            role: RecordRole::ApiPublic,
            addresses: loopback,
        });
    }
    records
}

/// This node's addresses, whose records are its own to take out: those the cloud lists for
/// instance `instance_id` among `masters`, and those the flags give (`internal`, `external`);
/// sorted, each once.
pub(crate) fn own_addresses(
    instance_id: &str,
    internal: Option<IpAddr>,
    external: Option<IpAddr>,
    masters: &[InstanceInfo],
) -> Vec<IpAddr> {
    let mut own: Vec<IpAddr> = masters
        .iter()
        .filter(|m| m.id == instance_id)
        .flat_map(|m| m.private_ips.iter().chain(&m.public_ips).copied())
        .chain(internal)
        .chain(external)
        .collect();
    own.sort();
    own.dedup();
    own
}

/// The records a node that is not a master needs: `api.internal.<cluster>` and
/// `kops-controller.internal.<cluster>` → the running masters' private addresses. They come
/// from the masters alone (one `DescribeInstances`, all kOps' node role may call).
pub(crate) fn worker_records(cluster: &str, masters: &[InstanceInfo]) -> Vec<DesiredRecord> {
    vec![
        DesiredRecord {
            name: format!("api.internal.{cluster}"),
            role: RecordRole::ApiInternal,
            addresses: private_addresses(masters),
        },
        kops_controller_record(cluster, masters),
    ]
}

/// `etcd-<member>` / `etcd-<key>-<member>` + suffix → the private addresses of the instance the
/// member's volume is attached to (none: unknown right now).
/// The etcd names of every member that some volume lists in its member lists (not only the
/// member each volume holds): an etcd name outside this set is one no volume speaks of any
/// more. `None` when no volume names any member.
pub(crate) fn listed_etcd_names(
    internal_suffix: &str,
    etcd_volumes: &[EtcdVolume],
) -> Option<std::collections::BTreeSet<String>> {
    let names: std::collections::BTreeSet<String> = etcd_volumes
        .iter()
        .flat_map(|volume| &volume.etcd)
        .flat_map(|membership| {
            membership.members.iter().map(move |member| {
                format!(
                    "{}{internal_suffix}",
                    EtcdKey(&membership.cluster).member_name(member)
                )
            })
        })
        .collect();
    (!names.is_empty()).then_some(names)
}

fn etcd_records(
    internal_suffix: &str,
    etcd_volumes: &[EtcdVolume],
    masters: &[InstanceInfo],
) -> Vec<DesiredRecord> {
    let private_ips = |instance_id: &str| {
        masters
            .iter()
            .find(|m| m.id == instance_id)
            .map(|m| m.private_ips.clone())
            .unwrap_or_default()
    };
    let mut etcd: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    for volume in etcd_volumes {
        let addresses = volume
            .attachment
            .as_ref()
            .filter(|a| {
                a.state == AttachmentState::Attached || a.state == AttachmentState::Attaching
            })
            .map(|a| private_ips(&a.instance_id))
            .unwrap_or_default();
        for membership in &volume.etcd {
            let name = format!(
                "{}{internal_suffix}",
                EtcdKey(&membership.cluster).member_name(&membership.member)
            );
            etcd.entry(name)
                .or_default()
                .extend(addresses.iter().copied());
        }
    }
    etcd.into_iter()
        .map(|(name, addresses)| DesiredRecord {
            name,
            role: RecordRole::EtcdMember,
            addresses: sorted(addresses),
        })
        .collect()
}

fn private_addresses(masters: &[InstanceInfo]) -> Vec<IpAddr> {
    sorted(masters.iter().flat_map(|m| m.private_ips.clone()).collect())
}

fn sorted(mut addresses: Vec<IpAddr>) -> Vec<IpAddr> {
    addresses.sort();
    addresses.dedup();
    addresses
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::VolumeAttachment;
    use crate::cloud::VolumeState;
    use crate::etcd::EtcdMembership;

    fn volume(id: &str, key: &str, member: &str, attached_to: Option<&str>) -> EtcdVolume {
        EtcdVolume {
            id: id.into(),
            zone: "z".into(),
            state: VolumeState::InUse,
            attachment: attached_to.map(|i| VolumeAttachment {
                instance_id: i.into(),
                device: "/dev/xvdu".into(),
                state: AttachmentState::Attached,
                attach_time: None,
                root: false,
                read_only: false,
            }),
            cloud: Default::default(),
            etcd: vec![EtcdMembership {
                cluster: key.into(),
                member: member.into(),
                members: vec!["a".into(), "b".into()],
            }],
        }
    }

    fn master(id: &str, private: [u8; 4], public: Option<[u8; 4]>) -> InstanceInfo {
        InstanceInfo {
            id: id.into(),
            private_ips: vec![Ipv4Addr::from(private).into()],
            public_ips: public
                .map(|p| Ipv4Addr::from(p).into())
                .into_iter()
                .collect(),
            volumes: Vec::new(),
        }
    }

    #[test]
    fn a_nodes_own_addresses_are_its_listed_and_its_metadatas_each_once() {
        let masters = [
            master("i-1", [10, 0, 0, 1], Some([52, 0, 0, 1])),
            master("i-2", [10, 0, 0, 2], None),
        ];
        let internal = Some(Ipv4Addr::new(10, 0, 0, 1).into());
        let external = Some(Ipv4Addr::new(52, 0, 0, 9).into());
        let own = own_addresses("i-1", internal, external, &masters);
        let want: Vec<IpAddr> = vec![
            Ipv4Addr::new(10, 0, 0, 1).into(),
            Ipv4Addr::new(52, 0, 0, 1).into(),
            Ipv4Addr::new(52, 0, 0, 9).into(),
        ];
        assert_eq!(own, want);
        // Not among the masters (a worker, or not running yet): its metadata's alone.
        assert_eq!(
            own_addresses("i-9", internal, None, &masters),
            [Ipv4Addr::new(10, 0, 0, 1)]
        );
    }

    #[test]
    fn a_public_name_may_not_be_a_name_the_cluster_publishes_otherwise() {
        let taken = |name: &str| own_name_taken("c.example.com", ".internal.c.example.com", name);
        for name in [
            "api.internal.c.example.com",
            "kops-controller.internal.c.example.com",
            "etcd-a.internal.c.example.com",
            "etcd-events-b.internal.c.example.com",
            "internal.c.example.com",
            "anything.else.internal.c.example.com",
        ] {
            assert!(taken(name).is_some(), "{name}");
        }
        for name in [
            "api.c.example.com",
            "c.example.com",
            "internal-api.c.example.com",
        ] {
            assert_eq!(taken(name), None, "{name}");
        }
        // A suffix of the operator's own (`--dns-internal-suffix`) is the etcd names' home too.
        assert!(own_name_taken(
            "c.example.com",
            ".etcd.example.com",
            "etcd-a.etcd.example.com"
        )
        .is_some());
    }

    #[test]
    fn records_from_attachments_and_masters() {
        let masters = [
            master("i-2", [10, 0, 0, 2], Some([54, 0, 0, 2])),
            master("i-1", [10, 0, 0, 1], Some([54, 0, 0, 1])),
        ];
        let volumes = [
            volume("v1", "main", "a", Some("i-1")),
            volume("v2", "main", "b", None),
            volume("v3", "events", "a", Some("i-1")),
            volume("v4", "events", "b", Some("i-2")),
        ];
        let records = desired_records(
            "c.example.com",
            ".internal.c.example.com",
            ApiNames::both("api.c.example.com"),
            &volumes,
            &masters,
        );
        let get = |name: &str| addresses(&records, name);
        assert_eq!(get("etcd-a.internal.c.example.com"), ["10.0.0.1"]);
        assert_eq!(get("etcd-b.internal.c.example.com"), Vec::<String>::new());
        assert_eq!(get("etcd-events-a.internal.c.example.com"), ["10.0.0.1"]);
        assert_eq!(get("etcd-events-b.internal.c.example.com"), ["10.0.0.2"]);
        assert_eq!(get("api.internal.c.example.com"), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(get("api.c.example.com"), ["54.0.0.1", "54.0.0.2"]);
        assert_eq!(
            get("kops-controller.internal.c.example.com"),
            ["10.0.0.1", "10.0.0.2"]
        );
        assert_eq!(records.len(), 7);
    }

    #[test]
    fn every_node_computes_the_same_answer_whatever_the_input_order() {
        let masters = [
            master("i-1", [10, 0, 0, 1], None),
            master("i-2", [10, 0, 0, 2], None),
        ];
        let volumes = [
            volume("v1", "main", "a", Some("i-1")),
            volume("v2", "main", "b", Some("i-2")),
        ];
        let mut reversed_volumes = volumes.clone();
        reversed_volumes.reverse();
        let mut reversed_masters = masters.clone();
        reversed_masters.reverse();
        let one = desired_records(
            "c",
            ".internal.c",
            ApiNames::both("api.c"),
            &volumes,
            &masters,
        );
        let two = desired_records(
            "c",
            ".internal.c",
            ApiNames::both("api.c"),
            &reversed_volumes,
            &reversed_masters,
        );
        assert_eq!(one, two);
        // No public addresses: the public record is "unknown", so left as it is.
        assert!(one
            .iter()
            .find(|r| r.name == "api.c")
            .unwrap()
            .addresses
            .is_empty());
    }

    fn addresses(records: &[DesiredRecord], name: &str) -> Vec<String> {
        records
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("{name}: {records:#?}"))
            .addresses
            .iter()
            .map(std::string::ToString::to_string)
            .collect()
    }

    #[test]
    fn every_address_family_is_published() {
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let masters = [
            // Dual-stack.
            InstanceInfo {
                id: "i-1".into(),
                private_ips: vec!["10.0.0.1".parse().unwrap(), v6],
                public_ips: vec!["54.0.0.1".parse().unwrap(), v6],
                volumes: Vec::new(),
            },
            // IPv6 only.
            InstanceInfo {
                id: "i-2".into(),
                private_ips: vec!["2001:db8::2".parse().unwrap()],
                public_ips: vec!["2001:db8::2".parse().unwrap()],
                volumes: Vec::new(),
            },
        ];
        let volumes = [
            volume("v1", "main", "a", Some("i-1")),
            volume("v2", "main", "b", Some("i-2")),
        ];
        let records = desired_records(
            "c",
            ".internal.c",
            ApiNames::both("api.c"),
            &volumes,
            &masters,
        );
        assert_eq!(
            addresses(&records, "etcd-a.internal.c"),
            ["10.0.0.1", "2001:db8::1"]
        );
        assert_eq!(addresses(&records, "etcd-b.internal.c"), ["2001:db8::2"]);
        assert_eq!(
            addresses(&records, "api.internal.c"),
            ["10.0.0.1", "2001:db8::1", "2001:db8::2"]
        );
        assert_eq!(
            addresses(&records, "api.c"),
            ["54.0.0.1", "2001:db8::1", "2001:db8::2"]
        );
    }

    #[test]
    fn load_balancer_names_are_not_protokube_s() {
        let masters = [master("i-1", [10, 0, 0, 1], Some([54, 0, 0, 1]))];
        let spec = |yaml: &str| -> ClusterSpec { yaml_serde::from_str(yaml).unwrap() };
        let names = |api: ApiNames<'_>| -> Vec<String> {
            desired_records("c", ".internal.c", api, &[], &masters)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        let dns = spec("api: {dns: {}}\n");
        assert_eq!(
            names(ApiNames::for_spec(Some(&dns), "api.c")),
            ["api.internal.c", "api.c", "kops-controller.internal.c"]
        );
        let lb = spec("api: {loadBalancer: {type: Public}}\n");
        assert_eq!(
            names(ApiNames::for_spec(Some(&lb), "api.c")),
            ["api.internal.c", "kops-controller.internal.c"]
        );
        let lb_internal = spec("api: {loadBalancer: {type: Internal, useForInternalApi: true}}\n");
        assert_eq!(
            names(ApiNames::for_spec(Some(&lb_internal), "api.c")),
            ["kops-controller.internal.c"]
        );
        assert_eq!(names(ApiNames::for_spec(None, "api.c")).len(), 3);
    }

    #[test]
    fn gossip_names_as_current_kops_writes_them() {
        let masters = [
            master("i-1", [10, 0, 0, 1], None),
            master("i-2", [10, 0, 0, 2], None),
        ];
        let volumes = [volume("v1", "main", "a", Some("i-1"))];
        // A master: its own API at 127.0.0.1, the public name too when the spec sets one.
        let records = gossip_master_records(
            "c.k8s.local",
            ".internal.c.k8s.local",
            Some("api.c.k8s.local"),
            &volumes,
            &masters,
        );
        assert_eq!(
            addresses(&records, "api.internal.c.k8s.local"),
            ["127.0.0.1"]
        );
        assert_eq!(addresses(&records, "api.c.k8s.local"), ["127.0.0.1"]);
        assert_eq!(
            addresses(&records, "etcd-a.internal.c.k8s.local"),
            ["10.0.0.1"]
        );
        assert_eq!(records.len(), 3);
        let records =
            gossip_master_records("c.k8s.local", ".internal.c.k8s.local", None, &[], &masters);
        assert_eq!(records.len(), 1);
        // Any other node: the API and kops-controller at the masters.
        let records = worker_records("c.k8s.local", &masters);
        assert_eq!(
            addresses(&records, "api.internal.c.k8s.local"),
            ["10.0.0.1", "10.0.0.2"]
        );
        assert_eq!(
            addresses(&records, "kops-controller.internal.c.k8s.local"),
            ["10.0.0.1", "10.0.0.2"]
        );
    }
}
