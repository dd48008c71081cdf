//! kOps' gossip state as protobuf (proto3): `KVState` and its records (mesh's payload and
//! memberlist's), and memberlist's `FullState` of `Part`s around it. Written by hand: three tiny
//! messages; the reader skips unknown fields and refuses anything past its bounds.

use std::collections::BTreeMap;

use anyhow::{bail, Context as _, Result};

/// The most records a state may hold: far beyond any cluster's names (a node, a few names).
pub(crate) const MAX_RECORDS: usize = 10_000;

/// One key's value in kOps' `KVState`: the newest `version` (Unix seconds at the writer) wins;
/// a deletion is a tombstone, kept for ever.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KvRecord {
    pub(crate) data: Vec<u8>,
    pub(crate) tombstone: bool,
    pub(crate) version: u64,
}

/// kOps' `KVState`: every key's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KvState {
    pub(crate) records: BTreeMap<String, KvRecord>,
}

impl KvState {
    /// Merges `incoming` as kOps does: a key is taken unless ours is at least as new (a tie
    /// keeps what arrived first). Returns what was taken: the delta to relay.
    pub(crate) fn merge(&mut self, incoming: &KvState) -> KvState {
        let mut delta = KvState::default();
        for (key, theirs) in &incoming.records {
            if self
                .records
                .get(key)
                .is_some_and(|ours| ours.version >= theirs.version)
            {
                continue;
            }
            if self.records.len() >= MAX_RECORDS && !self.records.contains_key(key) {
                continue;
            }
            self.records.insert(key.clone(), theirs.clone());
            delta.records.insert(key.clone(), theirs.clone());
        }
        delta
    }

    /// The protobuf bytes (records in key order).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (key, record) in &self.records {
            let mut value = Vec::new();
            if !record.data.is_empty() {
                put_bytes(&mut value, 1, &record.data);
            }
            if record.tombstone {
                put_varint_field(&mut value, 2, 1);
            }
            if record.version != 0 {
                put_varint_field(&mut value, 3, record.version);
            }
            let mut entry = Vec::new();
            put_bytes(&mut entry, 1, key.as_bytes());
            put_bytes(&mut entry, 2, &value);
            put_bytes(&mut out, 1, &entry);
        }
        out
    }

    /// Reads a `KVState`; keys must be UTF-8 (proto3 strings), at most [`MAX_RECORDS`].
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let mut state = KvState::default();
        for field in Fields::new(bytes) {
            let (number, value) = field?;
            let Value::Bytes(entry) = value else { continue };
            if number != 1 {
                continue;
            }
            let (mut key, mut record) = (String::new(), KvRecord::default());
            for field in Fields::new(entry) {
                match field? {
                    (1, Value::Bytes(k)) => {
                        key =
                            String::from_utf8(k.to_vec()).context("a KVState key is not UTF-8")?;
                    }
                    (2, Value::Bytes(v)) => record = decode_record(v)?,
                    _ => {}
                }
            }
            if state.records.len() >= MAX_RECORDS {
                bail!("a KVState of more than {MAX_RECORDS} records");
            }
            state.records.insert(key, record);
        }
        Ok(state)
    }
}

fn decode_record(bytes: &[u8]) -> Result<KvRecord> {
    let mut record = KvRecord::default();
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Bytes(data)) => record.data = data.to_vec(),
            (2, Value::Varint(flag)) => record.tombstone = flag != 0,
            (3, Value::Varint(version)) => record.version = version,
            _ => {}
        }
    }
    Ok(record)
}

/// memberlist's `FullState` (kOps' fork of memberlistmesh): named parts, `dns` the one kOps
/// uses; also one broadcast `Part` (`encode_part`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FullState {
    pub(crate) parts: Vec<(String, Vec<u8>)>,
}

impl FullState {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (key, data) in &self.parts {
            put_bytes(&mut out, 1, &encode_part(key, data));
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let mut state = FullState::default();
        for field in Fields::new(bytes) {
            if let (1, Value::Bytes(part)) = field? {
                state.parts.push(decode_part(part)?);
            }
        }
        Ok(state)
    }
}

/// A `Part{key, data}`: memberlist's broadcast of one channel's state.
pub(crate) fn encode_part(key: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, key.as_bytes());
    put_bytes(&mut out, 2, data);
    out
}

pub(crate) fn decode_part(bytes: &[u8]) -> Result<(String, Vec<u8>)> {
    let (mut key, mut data) = (String::new(), Vec::new());
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Bytes(k)) => {
                key = String::from_utf8(k.to_vec()).context("a Part key is not UTF-8")?;
            }
            (2, Value::Bytes(d)) => data = d.to_vec(),
            _ => {}
        }
    }
    Ok((key, data))
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_varint_field(out: &mut Vec<u8>, number: u64, value: u64) {
    put_varint(out, number << 3);
    put_varint(out, value);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, (number << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A field's value as the wire gives it.
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of one message, in order; an error ends the iteration.
struct Fields<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            failed: false,
        }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .rest
                .split_first()
                .context("a protobuf varint is cut short")?;
            self.rest = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        bail!("a protobuf varint is longer than ten bytes")
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8]> {
        let len = usize::try_from(len)
            .ok()
            .filter(|len| *len <= self.rest.len());
        let len = len.context("a protobuf field runs past its message")?;
        let (taken, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(taken)
    }

    fn field(&mut self) -> Result<(u64, Value<'a>)> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed
            }
            2 => {
                let len = self.varint()?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed
            }
            other => bail!("protobuf wire type {other} is not one kOps' state uses"),
        };
        Ok((key >> 3, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::hex;

    const KEY: &str = "dns/local/A/api.internal.c.k8s.local";
    const VECTOR: &str = "0a380a24646e732f6c6f63616c2f412f6170692e696e7465726e616c2e632e6b38732e6c6f63616c12100a0831302e302e302e3718ceb9a8d806";

    fn api_record() -> KvState {
        let mut state = KvState::default();
        state.records.insert(
            KEY.to_owned(),
            KvRecord {
                data: b"10.0.0.7".to_vec(),
                tombstone: false,
                version: 1_795_824_846,
            },
        );
        state
    }

    #[test]
    fn kv_state_matches_kops_vector_both_ways() {
        assert_eq!(api_record().encode(), hex(VECTOR));
        assert_eq!(KvState::decode(&hex(VECTOR)).unwrap(), api_record());
    }

    #[test]
    fn a_tombstone_is_flag_and_version_without_data() {
        let mut state = KvState::default();
        state.records.insert(
            KEY.to_owned(),
            KvRecord {
                data: Vec::new(),
                tombstone: true,
                version: 5,
            },
        );
        let bytes = state.encode();
        assert!(bytes.ends_with(&hex("120410011805")), "{bytes:02x?}");
        assert_eq!(KvState::decode(&bytes).unwrap(), state);
    }

    #[test]
    fn full_state_and_part_match_kops_vectors() {
        let kv = hex(VECTOR);
        let full = FullState {
            parts: vec![("dns".to_owned(), kv.clone())],
        };
        let expected = [hex("0a410a03646e73123a"), kv.clone()].concat();
        assert_eq!(full.encode(), expected);
        assert_eq!(FullState::decode(&expected).unwrap(), full);
        let part = [hex("0a03646e73123a"), kv.clone()].concat();
        assert_eq!(encode_part("dns", &kv), part);
        assert_eq!(decode_part(&part).unwrap(), ("dns".to_owned(), kv));
    }

    #[test]
    fn the_newest_version_wins_and_a_tie_keeps_ours() {
        let record = |data: &str, version| KvRecord {
            data: data.as_bytes().to_vec(),
            tombstone: false,
            version,
        };
        let mut ours = KvState::default();
        ours.records.insert("a".into(), record("1", 10));
        ours.records.insert("b".into(), record("1", 10));
        let mut theirs = KvState::default();
        theirs.records.insert("a".into(), record("2", 10));
        theirs.records.insert("b".into(), record("2", 11));
        theirs.records.insert("c".into(), record("2", 1));
        let delta = ours.merge(&theirs);
        assert_eq!(ours.records["a"], record("1", 10));
        assert_eq!(ours.records["b"], record("2", 11));
        assert_eq!(delta.records.keys().collect::<Vec<_>>(), ["b", "c"]);
    }

    #[test]
    fn cut_or_malformed_messages_are_errors() {
        let bytes = hex(VECTOR);
        for cut in 1..bytes.len() {
            // Every prefix either decodes to less or fails; none panics.
            let _ = KvState::decode(&bytes[..cut]);
        }
        assert!(KvState::decode(&[0x0a, 0xff]).is_err());
        assert!(KvState::decode(&[0x0b]).is_err(), "wire type 3");
    }
}
