//! weaveworks mesh's wire as kOps builds it (protocol 2, hash peer names): the version
//! header, frames, the features map, gossip messages and topology payloads.

use std::collections::BTreeMap;

use anyhow::{bail, Context as _, Result};
use sha2::{Digest as _, Sha256};

use super::gob::{ConnectionSummary, GobReader, GobValue, GobWriter, PeerSummary};

/// `weave`, protocol versions 1 to 2: what each side writes first.
pub(crate) const HEADER: [u8; 7] = *b"weave\x01\x02";
/// mesh's largest frame.
pub(crate) const MAX_FRAME: usize = 10 << 20;

/// Frame tags after the handshake.
pub(crate) const TAG_HEARTBEAT: u8 = 0;
pub(crate) const TAG_GOSSIP: u8 = 4;
pub(crate) const TAG_GOSSIP_UNICAST: u8 = 5;
pub(crate) const TAG_GOSSIP_BROADCAST: u8 = 6;

/// The protocol version both sides speak, from the peer's header.
pub(crate) fn agreed_version(theirs: [u8; 7]) -> Result<u8> {
    if &theirs[..5] != b"weave" {
        bail!("not a mesh peer (its first bytes are not `weave`)");
    }
    let (min, max) = (theirs[5], theirs[6]);
    if min > 2 || max < 2 {
        bail!("a mesh peer speaking protocol versions {min}–{max}, not 2");
    }
    Ok(2)
}

/// A node's mesh peer name (hash flavour): the first 16 bytes of SHA-256 of its name.
pub(crate) fn peer_name(node: &str) -> [u8; 16] {
    let digest = Sha256::digest(node.as_bytes());
    let mut name = [0u8; 16];
    name.copy_from_slice(&digest[..16]);
    name
}

/// The peer name as mesh prints it: 32 lowercase hex digits.
pub(crate) fn peer_name_text(name: &[u8; 16]) -> String {
    name.iter().map(|b| format!("{b:02x}")).collect()
}

/// The length prefix of a frame: its payload's length, checked against [`MAX_FRAME`].
pub(crate) fn frame_len(prefix: [u8; 4]) -> Result<usize> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME {
        bail!("a mesh frame of {len} bytes (at most {MAX_FRAME})");
    }
    Ok(len)
}

/// What a peer says of itself in the features map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Features {
    pub(crate) name: [u8; 16],
    pub(crate) nick_name: String,
    pub(crate) short_id: u16,
    pub(crate) uid: u64,
    pub(crate) conn_id: u64,
}

impl Features {
    /// The features frame's payload: a gob `map[string]string`.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let map: BTreeMap<String, String> = [
            ("PeerNameFlavour", "hash".to_owned()),
            ("Name", peer_name_text(&self.name)),
            ("NickName", self.nick_name.clone()),
            ("ShortID", self.short_id.to_string()),
            ("UID", self.uid.to_string()),
            ("ConnID", self.conn_id.to_string()),
            ("Trusted", "false".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let mut writer = GobWriter::default();
        writer.string_map(&map);
        writer.finish()
    }

    /// A peer's features; the keys mesh requires must be there, the flavour `hash`.
    pub(crate) fn decode(payload: &[u8]) -> Result<Self> {
        let GobValue::Map(entries) = GobReader::new(payload).value()? else {
            bail!("mesh features that are not a map");
        };
        let map: BTreeMap<&[u8], &[u8]> = entries
            .iter()
            .filter_map(|(k, v)| Some((k.bytes()?, v.bytes()?)))
            .collect();
        let get = |key: &str| -> Result<String> {
            let value = map
                .get(key.as_bytes())
                .with_context(|| format!("mesh features without `{key}`"))?;
            String::from_utf8(value.to_vec())
                .with_context(|| format!("mesh feature `{key}` is not text"))
        };
        let flavour = get("PeerNameFlavour")?;
        if flavour != "hash" {
            bail!("a mesh peer with `{flavour}` peer names (kOps' are `hash`)");
        }
        let name = get("Name")?;
        let bytes = (0..name.len())
            .step_by(2)
            .map(|i| {
                name.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .filter(|b| b.len() == 16)
            .context("a mesh peer name that is not 32 hex digits")?;
        let number = |key: &str| -> Result<u64> {
            get(key)?
                .parse()
                .with_context(|| format!("mesh feature `{key}` is not a number"))
        };
        Ok(Self {
            name: bytes.try_into().unwrap_or_default(),
            nick_name: get("NickName")?,
            short_id: get("ShortID")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            uid: number("UID")?,
            conn_id: number("ConnID")?,
        })
    }
}

/// A gossip message on a channel: tag 4 (gossip), 6 (broadcast) or 5 (unicast, with its
/// destination), from `source` (the originator, as hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GossipMessage {
    pub(crate) tag: u8,
    pub(crate) channel: String,
    pub(crate) source: String,
    pub(crate) destination: Option<String>,
    pub(crate) payload: Vec<u8>,
}

impl GossipMessage {
    /// The frame's payload: tag, then the gob values.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut writer = GobWriter::default();
        writer.string(self.channel.as_bytes());
        writer.string(self.source.as_bytes());
        if let Some(destination) = &self.destination {
            writer.string(destination.as_bytes());
        }
        writer.bytes(&self.payload);
        let mut out = vec![self.tag];
        out.extend(writer.finish());
        out
    }

    pub(crate) fn decode(frame: &[u8]) -> Result<Self> {
        let (&tag, body) = frame.split_first().context("an empty mesh frame")?;
        if ![TAG_GOSSIP, TAG_GOSSIP_UNICAST, TAG_GOSSIP_BROADCAST].contains(&tag) {
            bail!("mesh frame tag {tag} is not gossip");
        }
        let mut reader = GobReader::new(body);
        let mut text = |what: &str| -> Result<String> {
            let value = reader.value()?;
            let bytes = value
                .bytes()
                .with_context(|| format!("a mesh gossip {what} that is not a string"))?;
            String::from_utf8(bytes.to_vec())
                .with_context(|| format!("a mesh gossip {what} that is not text"))
        };
        let channel = text("channel")?;
        let source = text("source")?;
        let destination = if tag == TAG_GOSSIP_UNICAST {
            Some(text("destination")?)
        } else {
            None
        };
        let payload = reader.value()?;
        let payload = payload
            .bytes()
            .context("a mesh gossip payload that is not bytes")?
            .to_vec();
        Ok(Self {
            tag,
            channel,
            source,
            destination,
            payload,
        })
    }
}

/// One peer of a topology update, with its connections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TopologyPeer {
    pub(crate) summary: PeerSummary,
    pub(crate) connections: Vec<ConnectionSummary>,
}

/// A `topology` channel payload: pairs of peer summary and connections.
pub(crate) fn encode_topology(peers: &[TopologyPeer]) -> Vec<u8> {
    let mut writer = GobWriter::default();
    for peer in peers {
        writer.peer_summary(&peer.summary);
        writer.connections(&peer.connections);
    }
    writer.finish()
}

/// The most peers a topology update may name.
const MAX_TOPOLOGY_PEERS: usize = 1000;

pub(crate) fn decode_topology(payload: &[u8]) -> Result<Vec<TopologyPeer>> {
    let mut reader = GobReader::new(payload);
    let mut peers = Vec::new();
    while !reader.is_empty() {
        if peers.len() >= MAX_TOPOLOGY_PEERS {
            bail!("a topology update of more than {MAX_TOPOLOGY_PEERS} peers");
        }
        let summary = reader.value()?;
        let GobValue::Slice(connections) = reader.value()? else {
            bail!("a topology update whose connections are not a list");
        };
        let bytes = |value: &GobValue, field: &str| {
            value
                .field(field)
                .and_then(GobValue::bytes)
                .unwrap_or_default()
                .to_vec()
        };
        let flag =
            |value: &GobValue, field: &str| value.field(field) == Some(&GobValue::Bool(true));
        let number = |value: &GobValue, field: &str| {
            value.field(field).and_then(GobValue::uint).unwrap_or(0)
        };
        peers.push(TopologyPeer {
            summary: PeerSummary {
                name: bytes(&summary, "NameByte"),
                nick_name: String::from_utf8_lossy(&bytes(&summary, "NickName")).into_owned(),
                uid: number(&summary, "UID"),
                version: number(&summary, "Version"),
                short_id: u16::try_from(number(&summary, "ShortID")).unwrap_or(0),
                has_short_id: flag(&summary, "HasShortID"),
            },
            connections: connections
                .iter()
                .map(|c| ConnectionSummary {
                    name: bytes(c, "NameByte"),
                    remote_tcp_addr: String::from_utf8_lossy(&bytes(c, "RemoteTCPAddr"))
                        .into_owned(),
                    outbound: flag(c, "Outbound"),
                    established: flag(c, "Established"),
                })
                .collect(),
        });
    }
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::hex;

    #[test]
    fn peer_names_are_the_hash_flavour() {
        assert_eq!(
            peer_name_text(&peer_name("i-protokube-a")),
            "fd20eb590ae0b9b1a1faacfdc5fababf"
        );
    }

    #[test]
    fn versions_are_agreed_or_refused() {
        assert_eq!(agreed_version(HEADER).unwrap(), 2);
        assert!(agreed_version(*b"weave\x01\x01").is_err());
        assert!(agreed_version(*b"GET / H").is_err());
    }

    #[test]
    fn a_gossip_broadcast_matches_the_wire_vector() {
        let message = GossipMessage {
            tag: TAG_GOSSIP_BROADCAST,
            channel: "dns".into(),
            source: peer_name_text(&peer_name("i-protokube-a")),
            destination: None,
            payload: vec![0x0a, 0x00],
        };
        let bytes = message.encode();
        let expected = [
            hex("060c0003646e73230c0020"),
            b"fd20eb590ae0b9b1a1faacfdc5fababf".to_vec(),
            hex("050a00020a00"),
        ]
        .concat();
        assert_eq!(bytes[0], TAG_GOSSIP_BROADCAST);
        assert_eq!(bytes[1..], expected[..]);
        assert_eq!(GossipMessage::decode(&bytes).unwrap(), message);
    }

    #[test]
    fn features_round_trip_and_a_mac_flavour_is_refused() {
        let features = Features {
            name: peer_name("i-a"),
            nick_name: "i-a".into(),
            short_id: 42,
            uid: u64::MAX,
            conn_id: 7,
        };
        assert_eq!(Features::decode(&features.encode()).unwrap(), features);
        let mut writer = GobWriter::default();
        writer.string_map(&[("PeerNameFlavour".to_owned(), "mac".to_owned())].into());
        let err = Features::decode(&writer.finish()).unwrap_err();
        assert!(err.to_string().contains("`mac`"), "{err}");
    }

    #[test]
    fn topology_round_trips() {
        let peers = vec![TopologyPeer {
            summary: PeerSummary {
                name: peer_name("i-a").to_vec(),
                nick_name: "i-a".into(),
                uid: 1,
                version: 2,
                short_id: 3,
                has_short_id: true,
            },
            connections: vec![ConnectionSummary {
                name: peer_name("i-b").to_vec(),
                remote_tcp_addr: "10.0.0.2:3999".into(),
                outbound: true,
                established: false,
            }],
        }];
        assert_eq!(decode_topology(&encode_topology(&peers)).unwrap(), peers);
    }

    #[test]
    fn frames_are_bounded() {
        assert_eq!(frame_len([0, 0, 0, 5]).unwrap(), 5);
        assert!(frame_len((MAX_FRAME as u32 + 1).to_be_bytes()).is_err());
    }
}
