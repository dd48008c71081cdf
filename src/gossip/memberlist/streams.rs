//! memberlist's TCP messages: one message per stream, compressed whole as kOps' memberlist sends
//! them; read until the message is complete, within a size bound and a deadline.

use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use tokio::io::{AsyncRead, AsyncReadExt as _};

use crate::gossip::wire::memberlist::{
    decode, encode, message_of_stream, stream, MessageType, PushNodeState, PushPullHeader,
    UserMsgHeader, MAX_STREAM,
};
use crate::gossip::wire::protobuf::FullState;

use super::table::MAX_MEMBERS;

/// memberlist's TCP timeout as kOps sets it.
pub(crate) const TCP_TIMEOUT: Duration = Duration::from_secs(10);

/// A push/pull: the members it tells of and its user state (kOps' `FullState`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PushPull {
    pub(crate) join: bool,
    pub(crate) nodes: Vec<PushNodeState>,
    pub(crate) state: FullState,
}

impl PushPull {
    /// The message (not yet compressed).
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let user = self.state.encode();
        let header = PushPullHeader {
            nodes: i64::try_from(self.nodes.len()).context("too many members")?,
            user_state_len: i64::try_from(user.len()).context("a state too large")?,
            join: self.join,
        };
        let mut out = encode(MessageType::PushPull, &header)?;
        for node in &self.nodes {
            out.extend(rmp_serde::to_vec_named(node).context("encoding a member")?);
        }
        out.extend(user);
        Ok(out)
    }

    /// A push/pull's body (after its type byte), at most [`MAX_MEMBERS`] members.
    pub(crate) fn decode(mut body: &[u8]) -> Result<Self> {
        let header: PushPullHeader = decode(&mut body)?;
        let count = usize::try_from(header.nodes).context("a negative member count")?;
        if count > MAX_MEMBERS {
            bail!("a push/pull of {count} members (at most {MAX_MEMBERS})");
        }
        let mut nodes = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            nodes.push(decode::<PushNodeState>(&mut body)?);
        }
        let len = usize::try_from(header.user_state_len).context("a negative state length")?;
        let user = body
            .get(..len)
            .context("a push/pull whose state is cut short")?;
        let state = if user.is_empty() {
            FullState::default()
        } else {
            FullState::decode(user)?
        };
        Ok(Self {
            join: header.join,
            nodes,
            state,
        })
    }
}

/// A reliable user message as a stream: `user`, its header, the bytes.
pub(crate) fn user_message(user: &[u8]) -> Result<Vec<u8>> {
    let header = UserMsgHeader {
        user_msg_len: i64::try_from(user.len()).context("a user message too large")?,
    };
    let mut message = encode(MessageType::User, &header)?;
    message.extend_from_slice(user);
    stream(&message)
}

/// The bytes of a user message's stream body (after its type byte).
pub(crate) fn user_bytes(mut body: &[u8]) -> Result<&[u8]> {
    let header: UserMsgHeader = decode(&mut body)?;
    let len = usize::try_from(header.user_msg_len).context("a negative user message length")?;
    body.get(..len).context("a user message cut short")
}

/// Reads one message from `stream`: chunks until they decode, at most [`MAX_STREAM`] bytes,
/// within [`TCP_TIMEOUT`].
pub(crate) async fn read_message(stream: &mut (impl AsyncRead + Unpin)) -> Result<Vec<u8>> {
    tokio::time::timeout(TCP_TIMEOUT, read_until_complete(stream))
        .await
        .context("a memberlist stream that did not finish in time")?
}

async fn read_until_complete(stream: &mut (impl AsyncRead + Unpin)) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 16 << 10];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .context("reading a memberlist stream")?;
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() > MAX_STREAM {
            bail!("a memberlist stream larger than {MAX_STREAM} bytes");
        }
        if let Ok(message) = message_of_stream(&bytes) {
            if complete(&message) {
                return Ok(message);
            }
        }
        if n == 0 {
            bail!("a memberlist stream that ended before its message");
        }
    }
}

/// Whether a (decompressed) message is whole: a push/pull with all its members and state, or a
/// user message with all its bytes.
fn complete(message: &[u8]) -> bool {
    let Some((kind, body)) = message.split_first() else {
        return false;
    };
    match MessageType::of(*kind) {
        Some(MessageType::PushPull) => PushPull::decode(body).is_ok(),
        Some(MessageType::User) => user_bytes(body).is_ok(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::memberlist::Ping;
    use tokio::io::AsyncWriteExt as _;

    #[tokio::test(start_paused = true)]
    async fn a_push_pull_is_read_whole_from_pieces_and_a_silent_stream_times_out() {
        let push_pull = PushPull {
            join: true,
            nodes: super::super::table::Table::new("a", "10.0.0.1:4000".parse().unwrap())
                .push_nodes(),
            state: FullState {
                parts: vec![("dns".into(), vec![1, 2, 3])],
            },
        };
        let message = push_pull.encode().unwrap();
        assert!(complete(&message));
        assert!(!complete(&message[..message.len() - 1]));
        assert_eq!(PushPull::decode(&message[1..]).unwrap(), push_pull);
        let bytes = stream(&message).unwrap();
        let (mut ours, mut theirs) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for piece in bytes.chunks(7) {
                theirs.write_all(piece).await.unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            theirs
        });
        assert_eq!(read_message(&mut ours).await.unwrap(), message);
        let _open = writer.await.unwrap();
        let err = read_message(&mut ours).await.unwrap_err();
        assert!(
            format!("{err:#}").contains("did not finish in time"),
            "{err:#}"
        );
    }

    #[test]
    fn a_user_message_carries_its_length_and_a_ping_is_whole_at_once() {
        let sent = user_message(b"part").unwrap();
        let message = message_of_stream(&sent).unwrap();
        assert_eq!(user_bytes(&message[1..]).unwrap(), b"part");
        assert!(user_bytes(&message[1..message.len() - 1]).is_err());
        let ping = encode(MessageType::Ping, &Ping::default()).unwrap();
        assert!(complete(&ping));
        let huge = PushPullHeader {
            nodes: 5000,
            user_state_len: 0,
            join: false,
        };
        let message = encode(MessageType::PushPull, &huge).unwrap();
        assert!(PushPull::decode(&message[1..])
            .unwrap_err()
            .to_string()
            .contains("5000 members"));
    }
}
