//! memberlist's wire as kOps configures it: messages are a type byte and a msgpack map keyed by
//! Go's field names; UDP packets carry a CRC and may bundle several messages (compound);
//! TCP streams are LZW-compressed whole. Everything read is bounded.

use anyhow::{bail, Context as _, Result};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// Message types (memberlist's `messageType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum MessageType {
    Ping = 0,
    IndirectPing = 1,
    AckResp = 2,
    Suspect = 3,
    Alive = 4,
    Dead = 5,
    PushPull = 6,
    Compound = 7,
    User = 8,
    Compress = 9,
    Encrypt = 10,
    NackResp = 11,
    HasCrc = 12,
    Err = 13,
}

impl MessageType {
    pub(crate) fn of(byte: u8) -> Option<Self> {
        Some(match byte {
            0 => Self::Ping,
            1 => Self::IndirectPing,
            2 => Self::AckResp,
            3 => Self::Suspect,
            4 => Self::Alive,
            5 => Self::Dead,
            6 => Self::PushPull,
            7 => Self::Compound,
            8 => Self::User,
            9 => Self::Compress,
            10 => Self::Encrypt,
            11 => Self::NackResp,
            12 => Self::HasCrc,
            13 => Self::Err,
            _ => return None,
        })
    }
}

/// The largest UDP packet kOps' memberlist sends (`UDPBufferSize`).
pub(crate) const UDP_BUFFER_SIZE: usize = 1400;
/// The most a TCP stream may hold once decompressed: far beyond a cluster's state.
pub(crate) const MAX_STREAM: usize = 4 << 20;

/// kOps' protocol versions: min 1, max 5, current 2; delegate 0.
pub(crate) const VSN: [u8; 6] = [1, 5, 2, 0, 0, 0];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Ping {
    pub(crate) seq_no: u32,
    pub(crate) node: String,
    #[serde(skip_serializing_if = "no_bytes")]
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) source_addr: ByteBuf,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) source_port: u16,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) source_node: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct IndirectPing {
    pub(crate) seq_no: u32,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) target: ByteBuf,
    pub(crate) port: u16,
    pub(crate) node: String,
    pub(crate) nack: bool,
    #[serde(skip_serializing_if = "no_bytes")]
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) source_addr: ByteBuf,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) source_port: u16,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) source_node: String,
}

/// The answer of a member asked to ping another that did not answer it (protocol 4+).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct NackResp {
    pub(crate) seq_no: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct AckResp {
    pub(crate) seq_no: u32,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) payload: ByteBuf,
}

/// `suspect` and `dead` alike.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Accusation {
    pub(crate) incarnation: u32,
    pub(crate) node: String,
    pub(crate) from: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct Alive {
    pub(crate) incarnation: u32,
    pub(crate) node: String,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) addr: ByteBuf,
    pub(crate) port: u16,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) meta: ByteBuf,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) vsn: ByteBuf,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct PushPullHeader {
    pub(crate) nodes: i64,
    pub(crate) user_state_len: i64,
    pub(crate) join: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct PushNodeState {
    pub(crate) name: String,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) addr: ByteBuf,
    pub(crate) port: u16,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) meta: ByteBuf,
    pub(crate) incarnation: u32,
    /// 0 alive, 1 suspect, 2 dead, 3 left.
    pub(crate) state: u8,
    #[serde(deserialize_with = "bytes_or_nil")]
    pub(crate) vsn: ByteBuf,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(crate) struct UserMsgHeader {
    pub(crate) user_msg_len: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct Compress {
    algo: u8,
    buf: ByteBuf,
}

/// `[]byte` as Go's codec writes it: bytes, or nil for a nil slice.
fn bytes_or_nil<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<ByteBuf, D::Error> {
    Ok(Option::<ByteBuf>::deserialize(deserializer)?.unwrap_or_default())
}

fn no_bytes(value: &ByteBuf) -> bool {
    value.is_empty()
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(value: &u16) -> bool {
    *value == 0
}

/// A message: its type byte, then its body as a msgpack map.
pub(crate) fn encode<T: Serialize>(kind: MessageType, body: &T) -> Result<Vec<u8>> {
    let mut out = vec![kind as u8];
    out.extend(rmp_serde::to_vec_named(body).context("encoding a memberlist message")?);
    Ok(out)
}

/// Reads one msgpack body from the front of `input`, leaving the rest.
pub(crate) fn decode<T: DeserializeOwned>(input: &mut &[u8]) -> Result<T> {
    let mut reader = *input;
    let value =
        rmp_serde::from_read(&mut reader).context("a memberlist message that is not msgpack")?;
    *input = reader;
    Ok(value)
}

/// A UDP packet of `messages`: several bundled as a compound message, with the CRC header.
pub(crate) fn packet(messages: &[Vec<u8>]) -> Result<Vec<u8>> {
    let body = match messages {
        [one] => one.clone(),
        many => {
            let count = u8::try_from(many.len()).context("more than 255 messages in one packet")?;
            let mut out = vec![MessageType::Compound as u8, count];
            for message in many {
                let len = u16::try_from(message.len()).context("a message too long to bundle")?;
                out.extend_from_slice(&len.to_be_bytes());
            }
            for message in many {
                out.extend_from_slice(message);
            }
            out
        }
    };
    let mut packet = vec![MessageType::HasCrc as u8];
    packet.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    packet.extend(body);
    Ok(packet)
}

/// The messages of a UDP packet: its CRC checked, compression and compound bundles undone
/// (each message still with its type byte).
pub(crate) fn messages_of_packet(packet: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut body = packet;
    if body.first() == Some(&(MessageType::HasCrc as u8)) {
        let (crc, rest) = body
            .get(1..5)
            .zip(body.get(5..))
            .context("a memberlist packet shorter than its CRC")?;
        if crc32fast::hash(rest).to_be_bytes() != crc {
            bail!("a memberlist packet whose CRC does not match");
        }
        body = rest;
    }
    let mut out = Vec::new();
    unpack(body, &mut out, 0)?;
    Ok(out)
}

fn unpack(message: &[u8], out: &mut Vec<Vec<u8>>, depth: usize) -> Result<()> {
    if depth > 2 {
        bail!("memberlist messages nested too deep");
    }
    match message.first().copied().and_then(MessageType::of) {
        Some(MessageType::Compound) => {
            let count = usize::from(
                *message
                    .get(1)
                    .context("a compound message without its count")?,
            );
            let lengths = message
                .get(2..2 + 2 * count)
                .context("a compound message cut short")?;
            let mut rest = &message[2 + 2 * count..];
            for pair in lengths.chunks_exact(2) {
                let len = usize::from(u16::from_be_bytes([pair[0], pair[1]]));
                if len > rest.len() {
                    bail!("a compound message cut short");
                }
                let (part, tail) = rest.split_at(len);
                unpack(part, out, depth + 1)?;
                rest = tail;
            }
            Ok(())
        }
        Some(MessageType::Compress) => unpack(
            &decompress(&message[1..], UDP_BUFFER_SIZE * 8)?,
            out,
            depth + 1,
        ),
        Some(_) => {
            out.push(message.to_vec());
            Ok(())
        }
        None => bail!("a memberlist message of unknown type {:?}", message.first()),
    }
}

/// A TCP stream's bytes as kOps' memberlist sends them: compressed whole.
pub(crate) fn stream(message: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = weezl::encode::Encoder::new(weezl::BitOrder::Lsb, 8);
    let buf = encoder
        .encode(message)
        .context("compressing a memberlist stream")?;
    encode(
        MessageType::Compress,
        &Compress {
            algo: 0,
            buf: ByteBuf::from(buf),
        },
    )
}

/// The message of a TCP stream (compressed or not), at most [`MAX_STREAM`] bytes.
pub(crate) fn message_of_stream(bytes: &[u8]) -> Result<Vec<u8>> {
    match bytes.first().copied().and_then(MessageType::of) {
        Some(MessageType::Compress) => decompress(&bytes[1..], MAX_STREAM),
        Some(MessageType::Encrypt) => {
            bail!("an encrypted memberlist stream (kOps never encrypts memberlist)")
        }
        Some(_) => Ok(bytes.to_vec()),
        None => bail!("a memberlist stream of unknown type {:?}", bytes.first()),
    }
}

/// A `compress` body's payload, LZW (Go's compress/lzw, LSB, 8-bit), at most `max` bytes.
fn decompress(body: &[u8], max: usize) -> Result<Vec<u8>> {
    let compress: Compress = decode(&mut &body[..])?;
    if compress.algo != 0 {
        bail!("memberlist compression {} is not LZW", compress.algo);
    }
    let mut decoder = weezl::decode::Decoder::new(weezl::BitOrder::Lsb, 8);
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut input = &compress.buf[..];
    loop {
        let result = decoder.decode_bytes(input, &mut chunk);
        input = &input[result.consumed_in..];
        out.extend_from_slice(&chunk[..result.consumed_out]);
        if out.len() > max {
            bail!("a memberlist message larger than {max} bytes once decompressed");
        }
        match result.status {
            Ok(weezl::LzwStatus::Done) => return Ok(out),
            Ok(weezl::LzwStatus::Ok) if result.consumed_in > 0 || result.consumed_out > 0 => {}
            // Go's writer ends with its end code; input ending without it is the end too.
            Ok(_) => return Ok(out),
            Err(err) => bail!("a memberlist message whose LZW does not decode: {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::hex;

    // Go 1.19 with Debian's go-msgpack 0.5.5, `codec.MsgpackHandle{}` as memberlist has it.
    const PING: &str =
        "82a44e6f6465ba303141525a334e44454b54535634525246465136394735464156a55365714e6f07";
    const PING_WITH_SOURCE: &str = "85a44e6f6465a16ea55365714e6fcd012caa536f7572636541646472a4ac140101aa536f757263654e6f6465a16daa536f75726365506f7274cd0fa0";
    const ALIVE: &str = "86a441646472a40a000001ab496e6361726e6174696f6e01a44d657461a0a44e6f6465a16ea4506f7274cd0fa0a356736ea6010502000000";
    const PUSH_PULL: &str = "83a44a6f696ec3a54e6f64657301ac5573657253746174654c656e46";
    const LZW: &str = "00a93c1152e48914274fa80824687061c183090302";
    const COMPRESS: &str = "82a4416c676f00a3427566b500a93c1152e48914274fa80824687061c183090302";

    #[test]
    fn go_messages_decode_byte_fields_included() {
        let ping: Ping = decode(&mut &hex(PING)[..]).unwrap();
        assert_eq!(ping.seq_no, 7);
        assert_eq!(ping.node, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
        let ping: Ping = decode(&mut &hex(PING_WITH_SOURCE)[..]).unwrap();
        assert_eq!((ping.seq_no, ping.source_port), (300, 4000));
        assert_eq!(
            ping.source_addr.as_slice(),
            [172, 20, 1, 1],
            "not UTF-8, sent as str"
        );
        let alive: Alive = decode(&mut &hex(ALIVE)[..]).unwrap();
        assert_eq!(alive.vsn.as_slice(), VSN);
        assert_eq!(alive.addr.as_slice(), [10, 0, 0, 1]);
        let header: PushPullHeader = decode(&mut &hex(PUSH_PULL)[..]).unwrap();
        assert_eq!(
            header,
            PushPullHeader {
                nodes: 1,
                user_state_len: 70,
                join: true
            }
        );
    }

    #[test]
    fn our_messages_read_back_with_go_field_names() {
        let ping = Ping {
            seq_no: 9,
            node: "n".into(),
            ..Ping::default()
        };
        let bytes = encode(MessageType::Ping, &ping).unwrap();
        assert_eq!(bytes[0], 0);
        assert!(bytes.windows(5).any(|w| w == b"SeqNo"));
        assert!(!bytes.windows(10).any(|w| w == b"SourceAddr"), "omitempty");
        assert_eq!(decode::<Ping>(&mut &bytes[1..]).unwrap(), ping);
    }

    #[test]
    fn lzw_matches_gos_compress_lzw() {
        let text = b"TOBEORNOTTOBEORTOBEORNOT";
        assert_eq!(decompress(&hex(COMPRESS), 1000).unwrap(), text);
        let ours = stream(text).unwrap();
        assert_eq!(ours[0], MessageType::Compress as u8);
        assert_eq!(message_of_stream(&ours).unwrap(), text);
        let mut encoder = weezl::encode::Encoder::new(weezl::BitOrder::Lsb, 8);
        assert_eq!(
            encoder.encode(text).unwrap(),
            hex(LZW),
            "Go's bytes exactly"
        );
    }

    #[test]
    fn packets_carry_a_crc_and_bundle_messages() {
        let a = encode(MessageType::Ping, &Ping::default()).unwrap();
        let b = encode(MessageType::AckResp, &AckResp::default()).unwrap();
        let packet = packet(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(packet[0], MessageType::HasCrc as u8);
        assert_eq!(messages_of_packet(&packet).unwrap(), [a.clone(), b]);
        let mut broken = packet.clone();
        *broken.last_mut().unwrap() ^= 1;
        assert!(messages_of_packet(&broken).is_err());
        assert_eq!(
            messages_of_packet(&a).unwrap(),
            [a],
            "no CRC: taken as it is"
        );
        // Go's CRC-32 (IEEE) of [0, 1, 2].
        assert_eq!(crc32fast::hash(&[0, 1, 2]), 0x0854_897f);
    }

    #[test]
    fn a_decompression_bomb_is_refused() {
        let zeros = vec![0u8; MAX_STREAM * 2];
        let bomb = stream(&zeros).unwrap();
        assert!(bomb.len() < MAX_STREAM / 100);
        assert!(message_of_stream(&bomb).is_err());
    }

    #[test]
    fn cut_packets_are_errors_not_panics() {
        let a = encode(MessageType::Ping, &Ping::default()).unwrap();
        let packet = packet(&[a.clone(), a]).unwrap();
        for cut in 0..packet.len() {
            let _ = messages_of_packet(&packet[..cut]);
        }
        assert!(messages_of_packet(&[7, 200, 0]).is_err());
    }
}
