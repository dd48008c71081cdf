//! The DNS records protokube publishes, computed from cloud state alone so that every node
//! computes the same answer. Pure.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use crate::cloud::InstanceInfo;
use crate::names::etcd_member_name;
use crate::plan::volumes::EtcdVolume;

/// What a record is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecordRole {
    /// `etcd-<member>` / `etcd-<key>-<member>` + internal suffix → private IP of the instance the
    /// member's volume is attached to.
    EtcdMember,
    /// `api.internal.<cluster>` → private IPs of the running masters.
    ApiInternal,
    /// `api.<cluster>` (or `spec.masterPublicName`) → public IPs of the running masters.
    ApiPublic,
}

/// A name and the addresses it should have. Empty addresses mean "unknown right now": the
/// current record is kept (a member whose volume is attached nowhere keeps its record, so DNS
/// does not flap during a failover).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DesiredRecord {
    pub name: String,
    pub role: RecordRole,
    /// Sorted, without duplicates.
    pub addresses: Vec<Ipv4Addr>,
}

/// The records for a cluster. `internal_suffix` starts with a dot; `public_name` is
/// `spec.masterPublicName` or `api.<cluster>`. `etcd_volumes` are the cluster's etcd volumes in
/// every zone, `masters` its running control-plane instances.
pub fn desired_records(
    cluster: &str,
    internal_suffix: &str,
    public_name: &str,
    etcd_volumes: &[EtcdVolume],
    masters: &[InstanceInfo],
) -> Vec<DesiredRecord> {
    let private_ip = |instance_id: &str| {
        masters
            .iter()
            .find(|m| m.id == instance_id)
            .and_then(|m| m.private_ip)
    };
    let mut etcd: BTreeMap<String, Vec<Ipv4Addr>> = BTreeMap::new();
    for volume in etcd_volumes {
        let address = volume
            .attachment
            .as_ref()
            .filter(|a| a.state == "attached" || a.state == "attaching")
            .and_then(|a| private_ip(&a.instance_id));
        for membership in &volume.etcd {
            let name = format!(
                "{}{internal_suffix}",
                etcd_member_name(&membership.cluster, &membership.member)
            );
            let addresses = etcd.entry(name).or_default();
            addresses.extend(address);
        }
    }
    let mut records: Vec<DesiredRecord> = etcd
        .into_iter()
        .map(|(name, addresses)| DesiredRecord {
            name,
            role: RecordRole::EtcdMember,
            addresses: sorted(addresses),
        })
        .collect();
    records.push(DesiredRecord {
        name: format!("api.internal.{cluster}"),
        role: RecordRole::ApiInternal,
        addresses: sorted(masters.iter().filter_map(|m| m.private_ip).collect()),
    });
    records.push(DesiredRecord {
        name: public_name.trim_end_matches('.').to_ascii_lowercase(),
        role: RecordRole::ApiPublic,
        addresses: sorted(masters.iter().filter_map(|m| m.public_ip).collect()),
    });
    records
}

/// The records a node that is not a master needs: `api.internal.<cluster>` → the running
/// masters' private addresses. They come from the masters alone (one `DescribeInstances`, all
/// kOps' node role may call).
pub fn worker_records(cluster: &str, masters: &[InstanceInfo]) -> Vec<DesiredRecord> {
    vec![DesiredRecord {
        name: format!("api.internal.{cluster}"),
        role: RecordRole::ApiInternal,
        addresses: sorted(masters.iter().filter_map(|m| m.private_ip).collect()),
    }]
}

fn sorted(mut addresses: Vec<Ipv4Addr>) -> Vec<Ipv4Addr> {
    addresses.sort();
    addresses.dedup();
    addresses
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::VolumeAttachment;
    use crate::etcd::EtcdMembership;

    fn volume(id: &str, key: &str, member: &str, attached_to: Option<&str>) -> EtcdVolume {
        EtcdVolume {
            id: id.into(),
            zone: "z".into(),
            state: "in-use".into(),
            attachment: attached_to.map(|i| VolumeAttachment {
                instance_id: i.into(),
                device: "/dev/xvdu".into(),
                state: "attached".into(),
                attach_time: None,
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
            private_ip: Some(Ipv4Addr::from(private)),
            public_ip: public.map(Ipv4Addr::from),
        }
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
            "api.c.example.com",
            &volumes,
            &masters,
        );
        let get = |name: &str| {
            records
                .iter()
                .find(|r| r.name == name)
                .unwrap_or_else(|| panic!("{name}: {records:#?}"))
                .addresses
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("etcd-a.internal.c.example.com"), ["10.0.0.1"]);
        assert_eq!(get("etcd-b.internal.c.example.com"), Vec::<String>::new());
        assert_eq!(get("etcd-events-a.internal.c.example.com"), ["10.0.0.1"]);
        assert_eq!(get("etcd-events-b.internal.c.example.com"), ["10.0.0.2"]);
        assert_eq!(get("api.internal.c.example.com"), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(get("api.c.example.com"), ["54.0.0.1", "54.0.0.2"]);
        assert_eq!(records.len(), 6);
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
        let one = desired_records("c", ".internal.c", "api.c", &volumes, &masters);
        let two = desired_records(
            "c",
            ".internal.c",
            "api.c",
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
}
