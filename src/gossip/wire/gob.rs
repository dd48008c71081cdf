//! The few shapes of Go's `encoding/gob` that mesh sends: a writer for the values mesh writes
//! (strings, bytes, `map[string]string`, mesh's topology structs, each stream from a fresh
//! encoder as mesh makes them) and a bounded reader of any stream of such values, type
//! definitions included (ids assigned by the sender, in the order it defines them).

use std::collections::BTreeMap;

use anyhow::{bail, Context as _, Result};

/// gob's predefined type ids.
const BOOL: i64 = 1;
const INT: i64 = 2;
const UINT: i64 = 3;
const FLOAT: i64 = 4;
const BYTES: i64 = 5;
const STRING: i64 = 6;

/// The deepest nesting a value may have (mesh's are two deep).
const MAX_DEPTH: usize = 8;

/// A decoded value. Strings and byte slices are both bytes (gob writes them alike).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GobValue {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Bytes(Vec<u8>),
    Map(Vec<(GobValue, GobValue)>),
    Slice(Vec<GobValue>),
    /// Fields by name; fields left out (zero values) are absent.
    Struct(BTreeMap<String, GobValue>),
}

impl GobValue {
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match self {
            GobValue::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// A struct's field; a field absent is its zero value (`None` here).
    pub(crate) fn field(&self, name: &str) -> Option<&GobValue> {
        match self {
            GobValue::Struct(fields) => fields.get(name),
            _ => None,
        }
    }

    pub(crate) fn uint(&self) -> Option<u64> {
        match self {
            GobValue::Uint(value) => Some(*value),
            _ => None,
        }
    }
}

/// A type the sender defined.
#[derive(Clone, Debug)]
enum TypeDef {
    Map(i64, i64),
    Slice(i64),
    Struct(Vec<(String, i64)>),
}

/// Reads one gob stream (one encoder's output): its type definitions and its values.
pub(crate) struct GobReader<'a> {
    rest: &'a [u8],
    types: BTreeMap<i64, TypeDef>,
}

impl<'a> GobReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            types: BTreeMap::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next value, type definitions before it taken in.
    pub(crate) fn value(&mut self) -> Result<GobValue> {
        loop {
            let len = usize::try_from(uint(&mut self.rest)?)
                .ok()
                .filter(|len| *len <= self.rest.len())
                .context("a gob message runs past its stream")?;
            let (mut message, rest) = self.rest.split_at(len);
            self.rest = rest;
            let id = int(&mut message)?;
            if id < 0 {
                let def = read_definition(&mut message)?;
                self.types.insert(-id, def);
                continue;
            }
            if !matches!(self.types.get(&id), Some(TypeDef::Struct(_))) {
                // A value that is not a struct is sent as a struct's only field.
                if uint(&mut message)? != 0 {
                    bail!("a gob value of type {id} without its singleton mark");
                }
            }
            let value = self.decode(id, &mut message, 0)?;
            return Ok(value);
        }
    }

    fn decode(&self, id: i64, input: &mut &[u8], depth: usize) -> Result<GobValue> {
        if depth > MAX_DEPTH {
            bail!("a gob value nested deeper than {MAX_DEPTH}");
        }
        Ok(match id {
            BOOL => GobValue::Bool(uint(input)? != 0),
            INT => GobValue::Int(int(input)?),
            UINT | FLOAT => GobValue::Uint(uint(input)?),
            BYTES | STRING => GobValue::Bytes(bytes(input)?.to_vec()),
            _ => match self
                .types
                .get(&id)
                .context("a gob value of an undefined type")?
            {
                TypeDef::Map(key, elem) => {
                    let count = count(input)?;
                    let mut entries = Vec::with_capacity(count);
                    for _ in 0..count {
                        let k = self.decode(*key, input, depth + 1)?;
                        entries.push((k, self.decode(*elem, input, depth + 1)?));
                    }
                    GobValue::Map(entries)
                }
                TypeDef::Slice(elem) => {
                    let count = count(input)?;
                    let mut items = Vec::with_capacity(count);
                    for _ in 0..count {
                        items.push(self.decode(*elem, input, depth + 1)?);
                    }
                    GobValue::Slice(items)
                }
                TypeDef::Struct(fields) => {
                    let mut values = BTreeMap::new();
                    let mut field: i64 = -1;
                    loop {
                        let delta = uint(input)?;
                        if delta == 0 {
                            break;
                        }
                        field = i64::try_from(delta)
                            .ok()
                            .and_then(|d| field.checked_add(d))
                            .context("a gob field delta out of range")?;
                        let (name, id) = usize::try_from(field)
                            .ok()
                            .and_then(|i| fields.get(i))
                            .context("a gob field its struct does not have")?;
                        values.insert(name.clone(), self.decode(*id, input, depth + 1)?);
                    }
                    GobValue::Struct(values)
                }
            },
        })
    }
}

/// A count of elements, each at least one byte: never more than the bytes left.
fn count(input: &mut &[u8]) -> Result<usize> {
    usize::try_from(uint(input)?)
        .ok()
        .filter(|n| *n <= input.len())
        .context("a gob collection longer than its message")
}

/// A `wireType`: which of its kinds, with the ids it names.
fn read_definition(input: &mut &[u8]) -> Result<TypeDef> {
    let kind = uint(input)?;
    let def = match kind {
        // SliceT, ArrayT: CommonType, Elem (and Len).
        1 | 2 => {
            let fields = plain_struct(input, false)?;
            let elem = fields
                .get(&1)
                .and_then(Plain::as_int)
                .context("a gob slice type without its element")?;
            TypeDef::Slice(elem)
        }
        3 => {
            let fields = plain_struct(input, true)?;
            let mut named = Vec::new();
            if let Some(Plain::Fields(list)) = fields.get(&1) {
                for field in list {
                    let name = field.get(&0).and_then(Plain::as_bytes).unwrap_or_default();
                    let id = field
                        .get(&1)
                        .and_then(Plain::as_int)
                        .context("a gob struct field without its type")?;
                    named.push((String::from_utf8_lossy(name).into_owned(), id));
                }
            }
            TypeDef::Struct(named)
        }
        4 => {
            let fields = plain_struct(input, false)?;
            let key = fields
                .get(&1)
                .and_then(Plain::as_int)
                .context("a gob map type without its key")?;
            let elem = fields
                .get(&2)
                .and_then(Plain::as_int)
                .context("a gob map type without its element")?;
            TypeDef::Map(key, elem)
        }
        other => bail!("a gob type definition of kind {other}, which mesh never sends"),
    };
    // The end of the wireType.
    if uint(input)? != 0 {
        bail!("a gob type definition with more than one kind");
    }
    Ok(def)
}

/// A field of the type-definition structs, read without their schema: the definitions' own
/// fields are CommonType (a struct), ids (ints), names (strings) and `[]fieldType`.
#[derive(Debug)]
enum Plain {
    Int(i64),
    Bytes(Vec<u8>),
    Fields(Vec<BTreeMap<u64, Plain>>),
    Struct,
}

impl Plain {
    fn as_int(&self) -> Option<i64> {
        match self {
            Plain::Int(value) => Some(*value),
            _ => None,
        }
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Plain::Bytes(value) => Some(value),
            _ => None,
        }
    }
}

/// sliceType, arrayType, structType, mapType: field 0 is CommonType; structType's field 1 is
/// `[]fieldType`; every other field is an id (or arrayType's length).
fn plain_struct(input: &mut &[u8], is_struct_type: bool) -> Result<BTreeMap<u64, Plain>> {
    let mut fields = BTreeMap::new();
    let mut field: u64 = u64::MAX;
    loop {
        let delta = uint(input)?;
        if delta == 0 {
            return Ok(fields);
        }
        field = field.wrapping_add(delta);
        let value = match field {
            0 => {
                common_type(input)?;
                Plain::Struct
            }
            1 if is_struct_type => {
                let n = count(input)?;
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    list.push(field_type(input)?);
                }
                Plain::Fields(list)
            }
            1..=3 => Plain::Int(int(input)?),
            _ => bail!("a gob type definition with an unknown field"),
        };
        fields.insert(field, value);
    }
}

/// CommonType{Name, Id}: read past (the ids are the message's).
fn common_type(input: &mut &[u8]) -> Result<()> {
    let mut field: u64 = u64::MAX;
    loop {
        let delta = uint(input)?;
        if delta == 0 {
            return Ok(());
        }
        field = field.wrapping_add(delta);
        match field {
            0 => {
                bytes(input)?;
            }
            1 => {
                int(input)?;
            }
            _ => bail!("a gob CommonType with an unknown field"),
        }
    }
}

/// fieldType{Name, Id}.
fn field_type(input: &mut &[u8]) -> Result<BTreeMap<u64, Plain>> {
    let mut fields = BTreeMap::new();
    let mut field: u64 = u64::MAX;
    loop {
        let delta = uint(input)?;
        if delta == 0 {
            return Ok(fields);
        }
        field = field.wrapping_add(delta);
        let value = match field {
            0 => Plain::Bytes(bytes(input)?.to_vec()),
            1 => Plain::Int(int(input)?),
            _ => bail!("a gob fieldType with an unknown field"),
        };
        fields.insert(field, value);
    }
}

fn uint(input: &mut &[u8]) -> Result<u64> {
    let (&first, rest) = input.split_first().context("a gob stream cut short")?;
    *input = rest;
    if first < 0x80 {
        return Ok(u64::from(first));
    }
    let len = usize::from(first.wrapping_neg());
    if len > 8 || len > input.len() {
        bail!("a gob unsigned integer of {len} bytes");
    }
    let (digits, rest) = input.split_at(len);
    *input = rest;
    Ok(digits
        .iter()
        .fold(0u64, |value, b| (value << 8) | u64::from(*b)))
}

fn int(input: &mut &[u8]) -> Result<i64> {
    let raw = uint(input)?;
    let magnitude = (raw >> 1) as i64;
    Ok(if raw & 1 == 1 { !magnitude } else { magnitude })
}

fn bytes<'a>(input: &mut &'a [u8]) -> Result<&'a [u8]> {
    let len = usize::try_from(uint(input)?)
        .ok()
        .filter(|len| *len <= input.len())
        .context("a gob string runs past its message")?;
    let (taken, rest) = input.split_at(len);
    *input = rest;
    Ok(taken)
}

/// Writes gob values as one fresh Go encoder would.
#[derive(Default)]
pub(crate) struct GobWriter {
    out: Vec<u8>,
    /// The type definitions this stream has sent, by name.
    sent: Vec<&'static str>,
}

impl GobWriter {
    pub(crate) fn finish(self) -> Vec<u8> {
        self.out
    }

    fn message(&mut self, body: &[u8]) {
        put_uint(&mut self.out, body.len() as u64);
        self.out.extend_from_slice(body);
    }

    /// A definition, once per stream: its bytes as Go's encoder writes them (each stream
    /// assigns ids from 65 in the order it defines types, so they are constant for mesh's
    /// fixed order of values).
    fn define(&mut self, name: &'static str, definitions: &[&[u8]]) {
        if !self.sent.contains(&name) {
            self.sent.push(name);
            for definition in definitions {
                self.message(definition);
            }
        }
    }

    pub(crate) fn string(&mut self, value: &[u8]) {
        self.singleton(STRING, value);
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) {
        self.singleton(BYTES, value);
    }

    fn singleton(&mut self, id: i64, value: &[u8]) {
        let mut body = Vec::new();
        put_int(&mut body, id);
        body.push(0);
        put_bytes(&mut body, value);
        self.message(&body);
    }

    /// A `map[string]string` (the first type of its stream: id 65).
    pub(crate) fn string_map(&mut self, entries: &BTreeMap<String, String>) {
        self.define("map[string]string", &[&MAP_STRING_STRING_DEF]);
        let mut body = Vec::new();
        put_int(&mut body, 65);
        body.push(0);
        put_uint(&mut body, entries.len() as u64);
        for (key, value) in entries {
            put_bytes(&mut body, key.as_bytes());
            put_bytes(&mut body, value.as_bytes());
        }
        self.message(&body);
    }

    /// Writes a struct value of type `id`: its fields in order, zero values left out.
    fn struct_value(body: &mut Vec<u8>, fields: &[Field<'_>]) {
        let mut last: i64 = -1;
        for (index, field) in fields.iter().enumerate() {
            if field.is_zero() {
                continue;
            }
            put_uint(body, (index as i64 - last) as u64);
            last = index as i64;
            field.put(body);
        }
        body.push(0);
    }

    /// mesh's `peerSummary` (topology streams: id 66, after its definition).
    pub(crate) fn peer_summary(&mut self, peer: &PeerSummary) {
        self.define("peerSummary", &[&PEER_SUMMARY_DEF]);
        let mut body = Vec::new();
        put_int(&mut body, 66);
        Self::struct_value(
            &mut body,
            &[
                Field::Bytes(&peer.name),
                Field::Bytes(peer.nick_name.as_bytes()),
                Field::Uint(peer.uid),
                Field::Uint(peer.version),
                Field::Uint(u64::from(peer.short_id)),
                Field::Bool(peer.has_short_id),
            ],
        );
        self.message(&body);
    }

    /// mesh's `[]connectionSummary` (topology streams: id 68, its element 67).
    pub(crate) fn connections(&mut self, connections: &[ConnectionSummary]) {
        self.define(
            "[]connectionSummary",
            &[&CONNECTIONS_DEF, &CONNECTION_SUMMARY_DEF],
        );
        let mut body = Vec::new();
        put_int(&mut body, 68);
        body.push(0);
        put_uint(&mut body, connections.len() as u64);
        for connection in connections {
            Self::struct_value(
                &mut body,
                &[
                    Field::Bytes(&connection.name),
                    Field::Bytes(connection.remote_tcp_addr.as_bytes()),
                    Field::Bool(connection.outbound),
                    Field::Bool(connection.established),
                ],
            );
        }
        self.message(&body);
    }
}

enum Field<'a> {
    Bytes(&'a [u8]),
    Uint(u64),
    Bool(bool),
}

impl Field<'_> {
    fn is_zero(&self) -> bool {
        match self {
            Field::Bytes(bytes) => bytes.is_empty(),
            Field::Uint(value) => *value == 0,
            Field::Bool(value) => !value,
        }
    }

    fn put(&self, body: &mut Vec<u8>) {
        match self {
            Field::Bytes(bytes) => put_bytes(body, bytes),
            Field::Uint(value) => put_uint(body, *value),
            Field::Bool(value) => put_uint(body, u64::from(*value)),
        }
    }
}

/// mesh's `peerSummary`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PeerSummary {
    pub(crate) name: Vec<u8>,
    pub(crate) nick_name: String,
    pub(crate) uid: u64,
    pub(crate) version: u64,
    pub(crate) short_id: u16,
    pub(crate) has_short_id: bool,
}

/// mesh's `connectionSummary`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectionSummary {
    pub(crate) name: Vec<u8>,
    pub(crate) remote_tcp_addr: String,
    pub(crate) outbound: bool,
    pub(crate) established: bool,
}

fn put_uint(out: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        out.push(value as u8);
        return;
    }
    let digits = value.to_be_bytes();
    let skip = digits.iter().take_while(|b| **b == 0).count();
    out.push(((8 - skip) as u8).wrapping_neg());
    out.extend_from_slice(&digits[skip..]);
}

fn put_int(out: &mut Vec<u8>, value: i64) {
    let raw = if value < 0 {
        ((!value as u64) << 1) | 1
    } else {
        (value as u64) << 1
    };
    put_uint(out, raw);
}

fn put_bytes(out: &mut Vec<u8>, value: &[u8]) {
    put_uint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// `map[string]string`, id 65 (message body, after the length).
const MAP_STRING_STRING_DEF: [u8; 14] = [
    0xff, 0x81, 0x04, 0x01, 0x02, 0xff, 0x82, 0x00, 0x01, 0x0c, 0x01, 0x0c, 0x00, 0x00,
];

/// `peerSummary`, id 66, as Go 1.19's encoder defines it.
const PEER_SUMMARY_DEF: [u8; 98] = *b"\xff\x83\x03\x01\x01\x0bpeerSummary\x01\xff\x84\x00\x01\x06\x01\x08NameByte\x01\x0a\x00\x01\x08NickName\x01\x0c\x00\x01\x03UID\x01\x06\x00\x01\x07Version\x01\x06\x00\x01\x07ShortID\x01\x06\x00\x01\x0aHasShortID\x01\x02\x00\x00\x00";

/// `[]connectionSummary`, id 68, element 67.
const CONNECTIONS_DEF: [u8; 13] = *b"\xff\x87\x02\x01\x02\xff\x88\x00\x01\xff\x86\x00\x00";

/// `connectionSummary`, id 67.
const CONNECTION_SUMMARY_DEF: [u8; 91] = *b"\xff\x85\x03\x01\x01\x11connectionSummary\x01\xff\x86\x00\x01\x04\x01\x08NameByte\x01\x0a\x00\x01\x0dRemoteTCPAddr\x01\x0c\x00\x01\x08Outbound\x01\x02\x00\x01\x0bEstablished\x01\x02\x00\x00\x00";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::hex;

    #[test]
    fn a_string_map_is_written_as_go_writes_it_and_read_back() {
        let mut writer = GobWriter::default();
        writer.string_map(&[("Name".to_owned(), "x".to_owned())].into());
        let bytes = writer.finish();
        // Go 1.19: gob.NewEncoder(&b).Encode(map[string]string{"Name": "x"}).
        assert_eq!(
            bytes,
            hex("0eff81040102ff8200010c010c00000bff820001044e616d650178")
        );
        let value = GobReader::new(&bytes).value().unwrap();
        assert_eq!(
            value,
            GobValue::Map(vec![(
                GobValue::Bytes(b"Name".to_vec()),
                GobValue::Bytes(b"x".to_vec())
            )])
        );
    }

    #[test]
    fn meshs_gossip_header_matches_go() {
        let mut writer = GobWriter::default();
        writer.string(b"dns");
        writer.string(b"ab");
        writer.bytes(&[0x0a, 0x00]);
        let bytes = writer.finish();
        assert_eq!(bytes, hex("060c0003646e73050c00026162050a00020a00"));
        let mut reader = GobReader::new(&bytes);
        for expected in [&b"dns"[..], b"ab", &[0x0a, 0x00]] {
            assert_eq!(reader.value().unwrap().bytes(), Some(expected));
        }
        assert!(reader.is_empty());
    }

    /// Go 1.19 encoding two peers' topology (the second with zero ShortID and no
    /// connections), from one encoder.
    const TOPOLOGY: &str = "62ff830301010b7065657253756d6d61727901ff8400010601084e616d6542797465010a0001084e69636b4e616d65010c000103554944010600010756657273696f6e010600010753686f72744944010600010a48617353686f72744944010200000014ff840102010201016101fe3039010301070101000dff87020102ff880001ff8600005bff8503010111636f6e6e656374696f6e53756d6d61727901ff8600010401084e616d6542797465010a00010d52656d6f746554435041646472010c0001084f7574626f756e64010200010b45737461626c697368656401020000001cff880001010103010e3132372e302e302e313a3339393901010101000dff84010104010162010101010004ff880000";

    #[test]
    fn topology_is_written_as_go_writes_it_and_read_back() {
        let a = PeerSummary {
            name: vec![1, 2],
            nick_name: "a".into(),
            uid: 12345,
            version: 3,
            short_id: 7,
            has_short_id: true,
        };
        let b = PeerSummary {
            name: vec![4],
            nick_name: "b".into(),
            uid: 1,
            version: 1,
            ..PeerSummary::default()
        };
        let to_b = ConnectionSummary {
            name: vec![3],
            remote_tcp_addr: "127.0.0.1:3999".into(),
            outbound: true,
            established: true,
        };
        let mut writer = GobWriter::default();
        writer.peer_summary(&a);
        writer.connections(std::slice::from_ref(&to_b));
        writer.peer_summary(&b);
        writer.connections(&[]);
        assert_eq!(writer.finish(), hex(TOPOLOGY));
        let bytes = hex(TOPOLOGY);
        let mut reader = GobReader::new(&bytes);
        let first = reader.value().unwrap();
        assert_eq!(
            first.field("NickName").and_then(GobValue::bytes),
            Some(&b"a"[..])
        );
        assert_eq!(first.field("UID").and_then(GobValue::uint), Some(12345));
        let GobValue::Slice(connections) = reader.value().unwrap() else {
            panic!()
        };
        assert_eq!(
            connections[0]
                .field("RemoteTCPAddr")
                .and_then(GobValue::bytes),
            Some(&b"127.0.0.1:3999"[..])
        );
        assert_eq!(
            connections[0].field("Outbound"),
            Some(&GobValue::Bool(true))
        );
        let second = reader.value().unwrap();
        assert_eq!(second.field("ShortID"), None, "a zero field is left out");
        assert_eq!(reader.value().unwrap(), GobValue::Slice(Vec::new()));
        assert!(reader.is_empty());
    }

    #[test]
    fn integers_take_gobs_forms() {
        for (value, bytes) in [
            (0u64, &[0x00][..]),
            (127, &[0x7f]),
            (128, &[0xff, 0x80]),
            (12345, &[0xfe, 0x30, 0x39]),
        ] {
            let mut out = Vec::new();
            put_uint(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(uint(&mut &out[..]).unwrap(), value);
        }
        for value in [0i64, 1, -1, 65, -65, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            put_int(&mut out, value);
            assert_eq!(int(&mut &out[..]).unwrap(), value);
        }
    }

    #[test]
    fn cut_streams_and_lies_are_errors() {
        let bytes = hex(TOPOLOGY);
        for cut in 0..bytes.len() {
            let mut reader = GobReader::new(&bytes[..cut]);
            while !reader.is_empty() {
                if reader.value().is_err() {
                    break;
                }
            }
        }
        // A map claiming a billion entries in a short message.
        let mut lie = hex("0eff81040102ff8200010c010c0000");
        lie.extend_from_slice(&[0x08, 0xff, 0x82, 0x00, 0xfc, 0x3b, 0x9a, 0xca, 0x00]);
        assert!(GobReader::new(&lie).value().is_err());
        // A value of a type never defined.
        assert!(GobReader::new(&[0x03, 0xff, 0x90, 0x00]).value().is_err());
    }
}
