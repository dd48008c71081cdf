//! mesh's picture of the network, pure: every peer others told of (by version) with its
//! connections, the addresses worth dialling that it names (kOps sets `PeerDiscovery`: an
//! outbound connection's remote address, an inbound one's IP at our own port), and the peers
//! no longer reachable, forgotten (mesh's garbage collection). Bounded.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use crate::gossip::wire::mesh::TopologyPeer;

/// The most peers remembered.
pub(crate) const MAX_KNOWN_PEERS: usize = 4096;
/// The most connections remembered per peer.
const MAX_LINKS: usize = 1000;
/// The most addresses discovery offers at once.
pub(crate) const MAX_DISCOVERED: usize = 256;

/// A peer's name (mesh's 16 bytes).
pub(crate) type Name = [u8; 16];

/// One connection of a peer, as it told of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) to: Name,
    pub(crate) addr: String,
    pub(crate) outbound: bool,
}

/// A peer others told of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KnownPeer {
    pub(crate) uid: u64,
    pub(crate) version: u64,
    pub(crate) links: Vec<Link>,
}

/// The peers known through topology gossip.
#[derive(Debug)]
pub(crate) struct Topology {
    me: Name,
    peers: BTreeMap<Name, KnownPeer>,
}

impl Topology {
    pub(crate) fn new(me: Name) -> Self {
        Self {
            me,
            peers: BTreeMap::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn peer(&self, name: &Name) -> Option<&KnownPeer> {
        self.peers.get(name)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.peers.len()
    }

    /// Takes an update: a peer is replaced by a newer version of itself (or a new uid: it
    /// restarted). True when it told something new (then it is relayed).
    pub(crate) fn update(&mut self, update: &[TopologyPeer]) -> bool {
        let mut news = false;
        for peer in update {
            let Ok(name) = Name::try_from(peer.summary.name.as_slice()) else {
                continue;
            };
            if name == self.me {
                continue;
            }
            let known = self.peers.get(&name);
            let newer =
                known.is_none_or(|k| k.uid != peer.summary.uid || k.version < peer.summary.version);
            if !newer || (known.is_none() && self.peers.len() >= MAX_KNOWN_PEERS) {
                continue;
            }
            let links = peer
                .connections
                .iter()
                .take(MAX_LINKS)
                .filter_map(|c| {
                    Some(Link {
                        to: Name::try_from(c.name.as_slice()).ok()?,
                        addr: c.remote_tcp_addr.clone(),
                        outbound: c.outbound,
                    })
                })
                .collect();
            self.peers.insert(
                name,
                KnownPeer {
                    uid: peer.summary.uid,
                    version: peer.summary.version,
                    links,
                },
            );
            news = true;
        }
        news
    }

    /// The addresses discovery dials (mesh's `addPeerTargets`): for each connection of a known
    /// peer to a peer we are not connected to, an outbound connection's remote address, or an
    /// inbound one's IP at `port` (our own listen port, as mesh assumes every peer's is).
    pub(crate) fn targets(&self, connected: &BTreeSet<Name>, port: u16) -> BTreeSet<SocketAddr> {
        let mut out = BTreeSet::new();
        for peer in self.peers.values() {
            for link in &peer.links {
                if link.to == self.me || connected.contains(&link.to) {
                    continue;
                }
                let Ok(addr) = link.addr.parse::<SocketAddr>() else {
                    continue;
                };
                let addr = if link.outbound {
                    addr
                } else {
                    SocketAddr::new(addr.ip(), port)
                };
                if addr.port() != 0 && !addr.ip().is_unspecified() {
                    out.insert(addr);
                }
                if out.len() >= MAX_DISCOVERED {
                    return out;
                }
            }
        }
        out
    }

    /// Forgets the peers not reachable from us through the connections told of (mesh's
    /// garbage collection); returns how many went.
    pub(crate) fn forget_unreachable(&mut self, connected: &BTreeSet<Name>) -> usize {
        let mut reached: BTreeSet<Name> = connected.clone();
        let mut frontier: Vec<Name> = connected.iter().copied().collect();
        while let Some(name) = frontier.pop() {
            let Some(peer) = self.peers.get(&name) else {
                continue;
            };
            for link in &peer.links {
                if reached.insert(link.to) {
                    frontier.push(link.to);
                }
            }
        }
        let before = self.peers.len();
        self.peers.retain(|name, _| reached.contains(name));
        before - self.peers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::gob::{ConnectionSummary, PeerSummary};
    use crate::gossip::wire::mesh::peer_name;

    fn peer(name: &str, version: u64, links: &[(&str, &str, bool)]) -> TopologyPeer {
        TopologyPeer {
            summary: PeerSummary {
                name: peer_name(name).to_vec(),
                nick_name: name.into(),
                uid: 7,
                version,
                short_id: 1,
                has_short_id: true,
            },
            connections: links
                .iter()
                .map(|(to, addr, outbound)| ConnectionSummary {
                    name: peer_name(to).to_vec(),
                    remote_tcp_addr: (*addr).into(),
                    outbound: *outbound,
                    established: true,
                })
                .collect(),
        }
    }

    #[test]
    fn discovery_dials_what_connections_name_as_mesh_does() {
        let mut topology = Topology::new(peer_name("me"));
        let news = topology.update(&[peer(
            "m1",
            3,
            &[
                ("m2", "10.0.0.2:3999", true),
                ("w1", "10.0.1.5:51234", false),
                ("me", "10.0.9.9:3999", true),
            ],
        )]);
        assert!(news);
        assert!(
            !topology.update(&[peer("m1", 3, &[])]),
            "the same version is old news"
        );
        let connected = BTreeSet::from([peer_name("m1")]);
        let targets: Vec<String> = topology
            .targets(&connected, 3999)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(targets, ["10.0.0.2:3999", "10.0.1.5:3999"]);
        let connected = BTreeSet::from([peer_name("m1"), peer_name("m2"), peer_name("w1")]);
        assert!(
            topology.targets(&connected, 3999).is_empty(),
            "connected peers are not dialled"
        );
    }

    #[test]
    fn unreachable_peers_are_forgotten() {
        let mut topology = Topology::new(peer_name("me"));
        topology.update(&[
            peer("m1", 1, &[("m2", "10.0.0.2:3999", true)]),
            peer("m2", 1, &[("m1", "10.0.0.1:3999", false)]),
            peer("gone", 1, &[]),
        ]);
        assert_eq!(
            topology.forget_unreachable(&BTreeSet::from([peer_name("m1")])),
            1
        );
        assert!(
            topology.peer(&peer_name("m2")).is_some(),
            "reached through m1"
        );
        assert_eq!(topology.forget_unreachable(&BTreeSet::new()), 2);
        assert_eq!(topology.len(), 0);
    }

    #[test]
    fn the_picture_is_bounded() {
        let mut topology = Topology::new(peer_name("me"));
        let many: Vec<TopologyPeer> = (0..MAX_KNOWN_PEERS + 10)
            .map(|i| peer(&format!("p{i}"), 1, &[]))
            .collect();
        for chunk in many.chunks(1000) {
            topology.update(chunk);
        }
        assert_eq!(topology.len(), MAX_KNOWN_PEERS);
        let links: Vec<(String, String, bool)> = (0..600)
            .map(|i| {
                (
                    format!("x{i}"),
                    format!("10.{}.{}.1:3999", i / 250, i % 250),
                    true,
                )
            })
            .collect();
        let borrowed: Vec<(&str, &str, bool)> = links
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), *c))
            .collect();
        let mut topology = Topology::new(peer_name("me"));
        topology.update(&[peer("m1", 1, &borrowed)]);
        assert_eq!(
            topology.targets(&BTreeSet::new(), 3999).len(),
            MAX_DISCOVERED
        );
    }
}
