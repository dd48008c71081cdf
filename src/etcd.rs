//! etcd memberships: which member of which etcd cluster a volume holds, as kOps writes it in a
//! volume's `k8s.io/etcd/<cluster key>` tag (`<me>/<m1,m2,...>`), and the parser of that tag.

use std::fmt;

use serde::Serialize;

use crate::names::is_dns1123_label;

/// The fixed facts of kOps' well-known etcd clusters, in one table: their ports (kOps
/// `pkg/wellknownports`: client and peer), their claim rank (kOps claims `main`, then
/// `events`, then the others) and the pod's CPU request (kOps v1.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WellKnownEtcd {
    pub(crate) key: &'static str,
    pub(crate) peer_port: u16,
    pub(crate) client_port: u16,
    pub(crate) claim_rank: u8,
    pub(crate) cpu_request: &'static str,
}

/// kOps' well-known etcd clusters: `main`, `events`, cilium's and kOps 1.36's `leases`.
pub(crate) const WELL_KNOWN_ETCD: [WellKnownEtcd; 4] = [
    WellKnownEtcd {
        key: "main",
        peer_port: 2380,
        client_port: 4001,
        claim_rank: 0,
        cpu_request: "200m",
    },
    WellKnownEtcd {
        key: "events",
        peer_port: 2381,
        client_port: 4002,
        claim_rank: 1,
        cpu_request: "100m",
    },
    WellKnownEtcd {
        key: "cilium",
        peer_port: 2382,
        client_port: 4003,
        claim_rank: 2,
        cpu_request: "100m",
    },
    WellKnownEtcd {
        key: "leases",
        peer_port: 2383,
        client_port: 4004,
        claim_rank: 2,
        cpu_request: "100m",
    },
];

/// An etcd cluster key (`main`, `events`, …) and the names and facts that follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EtcdKey<'a>(pub &'a str);

impl EtcdKey<'_> {
    /// The table's entry, for kOps' well-known keys.
    pub(crate) fn well_known(self) -> Option<&'static WellKnownEtcd> {
        WELL_KNOWN_ETCD.iter().find(|w| w.key == self.0)
    }

    /// The etcd cluster's name: `etcd` for `main`, else `etcd-<key>`.
    pub(crate) fn cluster_name(self) -> String {
        match self.0 {
            "main" => "etcd".to_owned(),
            key => format!("etcd-{key}"),
        }
    }

    /// The name of member `member`: `etcd-a`, `etcd-events-a` (its DNS name without the suffix).
    pub(crate) fn member_name(self, member: &str) -> String {
        format!("{}-{member}", self.cluster_name())
    }

    /// The static pod's name: `etcd-server`, `etcd-server-<key>`.
    pub(crate) fn pod_name(self) -> String {
        match self.0 {
            "main" => "etcd-server".to_owned(),
            key => format!("etcd-server-{key}"),
        }
    }

    /// The data directory's name on the volume: `data`, `data-<key>`.
    pub(crate) fn data_dir_name(self) -> String {
        match self.0 {
            "main" => "data".to_owned(),
            key => format!("data-{key}"),
        }
    }

    /// The rank in kOps' claim order (lower first).
    pub(crate) fn claim_rank(self) -> u8 {
        self.well_known().map_or(2, |w| w.claim_rank)
    }

    /// The pod's CPU request.
    pub(crate) fn cpu_request(self) -> &'static str {
        self.well_known().map_or("100m", |w| w.cpu_request)
    }
}

/// One etcd membership of a volume, from one `k8s.io/etcd/<key>` tag.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EtcdMembership {
    /// The etcd cluster key: `main`, `events`, …
    pub cluster: String,
    /// The member this volume holds.
    pub member: String,
    /// All members of that etcd cluster, in tag order.
    pub members: Vec<String>,
}

impl EtcdMembership {
    /// A membership from plain names (tests and fixtures; tags go through [`parse_etcd_tag`]).
    pub fn new(cluster: &str, member: &str, members: &[&str]) -> Self {
        Self {
            cluster: cluster.to_owned(),
            member: member.to_owned(),
            members: members.iter().map(|m| (*m).to_owned()).collect(),
        }
    }
}

/// Why a membership tag was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TagError {
    /// The value does not have exactly one `/`.
    NotTwoParts,
    /// The member list has an empty entry or is empty.
    EmptyMember,
    /// A member appears twice in the list.
    DuplicateMember(String),
    /// The volume's own member is not among the members.
    MemberNotListed(String),
    /// A name is not a DNS-1123 label (it becomes part of DNS names and pod names).
    InvalidName(String),
}

impl fmt::Display for TagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagError::NotTwoParts => {
                f.write_str("expected `<member>/<member1>,<member2>,...` with exactly one `/`")
            }
            TagError::EmptyMember => f.write_str("the member list has an empty name"),
            TagError::DuplicateMember(m) => {
                write!(f, "member `{}` is listed twice", m.escape_debug())
            }
            TagError::MemberNotListed(m) => {
                write!(f, "member `{}` is not in the member list", m.escape_debug())
            }
            TagError::InvalidName(n) => write!(
                f,
                "`{}` is not a DNS-1123 label (lowercase letters, digits and `-`, at most 63)",
                n.escape_debug()
            ),
        }
    }
}

impl std::error::Error for TagError {}

/// Parses a membership tag: `cluster_key` is the part of the tag key after `k8s.io/etcd/`, `value`
/// the tag value, e.g. `("main", "a/a,b,c")`. Surrounding space in the value is trimmed.
pub fn parse_etcd_tag(cluster_key: &str, value: &str) -> Result<EtcdMembership, TagError> {
    if !is_dns1123_label(cluster_key) {
        return Err(TagError::InvalidName(cluster_key.to_owned()));
    }
    let value = value.trim();
    let mut parts = value.split('/');
    let (Some(me), Some(list), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(TagError::NotTwoParts);
    };
    let members: Vec<String> = list.split(',').map(str::to_owned).collect();
    for (i, member) in members.iter().enumerate() {
        if member.is_empty() {
            return Err(TagError::EmptyMember);
        }
        if !is_dns1123_label(member) {
            return Err(TagError::InvalidName(member.clone()));
        }
        if members[..i].contains(member) {
            return Err(TagError::DuplicateMember(member.clone()));
        }
    }
    if !members.iter().any(|m| m == me) {
        return Err(TagError::MemberNotListed(me.to_owned()));
    }
    Ok(EtcdMembership {
        cluster: cluster_key.to_owned(),
        member: me.to_owned(),
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_etcd_key_s_names_and_facts_come_from_one_table() {
        let main = EtcdKey("main");
        assert_eq!(main.member_name("a"), "etcd-a");
        assert_eq!(main.pod_name(), "etcd-server");
        assert_eq!(main.data_dir_name(), "data");
        assert_eq!((main.claim_rank(), main.cpu_request()), (0, "200m"));
        let events = EtcdKey("events");
        assert_eq!(events.member_name("us-test-1a"), "etcd-events-us-test-1a");
        assert_eq!(events.pod_name(), "etcd-server-events");
        assert_eq!(events.claim_rank(), 1);
        assert_eq!(EtcdKey("cilium").cluster_name(), "etcd-cilium");
        let leases = EtcdKey("leases").well_known().unwrap();
        assert_eq!((leases.client_port, leases.peer_port), (4004, 2383));
        let other = EtcdKey("x");
        assert_eq!((other.well_known(), other.claim_rank()), (None, 2));
        assert_eq!(other.data_dir_name(), "data-x");
        // Every port of the table is used once.
        let mut ports: Vec<u16> = WELL_KNOWN_ETCD
            .iter()
            .flat_map(|w| [w.peer_port, w.client_port])
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 2 * WELL_KNOWN_ETCD.len());
    }

    fn membership(cluster: &str, member: &str, members: &[&str]) -> EtcdMembership {
        EtcdMembership::new(cluster, member, members)
    }

    #[test]
    fn parses_kops_tag_values() {
        assert_eq!(
            parse_etcd_tag("main", "a/a,b,c"),
            Ok(membership("main", "a", &["a", "b", "c"]))
        );
        assert_eq!(
            parse_etcd_tag("main", "us-test-1a/us-test-1a"),
            Ok(membership("main", "us-test-1a", &["us-test-1a"]))
        );
        assert_eq!(
            parse_etcd_tag("events", "  b/a,b,c \n"),
            Ok(membership("events", "b", &["a", "b", "c"]))
        );
    }

    #[test]
    fn rejects_malformed_tag_values() {
        assert_eq!(parse_etcd_tag("main", "a"), Err(TagError::NotTwoParts));
        assert_eq!(parse_etcd_tag("main", "a/b/c"), Err(TagError::NotTwoParts));
        assert_eq!(
            parse_etcd_tag("main", "d/a,b,c"),
            Err(TagError::MemberNotListed("d".into()))
        );
        assert_eq!(parse_etcd_tag("main", "a/a,,b"), Err(TagError::EmptyMember));
        assert_eq!(parse_etcd_tag("main", "a/"), Err(TagError::EmptyMember));
        assert_eq!(
            parse_etcd_tag("main", "a/a,a"),
            Err(TagError::DuplicateMember("a".into()))
        );
    }

    #[test]
    fn rejects_names_that_are_not_dns_labels() {
        for value in [
            "A/A",
            "a b/a b",
            "x\ny: z/x\ny: z",
            "a/a,b c",
            "../x/../x",
            "a/a,-b",
        ] {
            assert!(
                matches!(
                    parse_etcd_tag("main", value),
                    Err(TagError::InvalidName(_) | TagError::NotTwoParts)
                ),
                "{value:?}: {:?}",
                parse_etcd_tag("main", value)
            );
        }
        assert_eq!(
            parse_etcd_tag("Main", "a/a"),
            Err(TagError::InvalidName("Main".into()))
        );
        assert_eq!(
            parse_etcd_tag("main\n", "a/a"),
            Err(TagError::InvalidName("main\n".into()))
        );
    }
}
