//! One mesh connection as kOps' peers make it: the version header, the key exchange (always
//! encrypted), the features exchange, then encrypted frames; bounded in time and size.

use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use crate::gossip::wire::mesh::{agreed_version, frame_len, Features, HEADER};
use crate::gossip::wire::mesh_crypto::{EphemeralKey, SecretBox};

/// How long a handshake may take (mesh's own limit is its 60 s read deadline; a peer that
/// does not finish within this is dropped).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// This member as mesh knows it.
#[derive(Clone, Debug)]
pub(crate) struct LocalPeer {
    pub(crate) name: [u8; 16],
    pub(crate) nick_name: String,
    pub(crate) uid: u64,
    pub(crate) short_id: u16,
}

/// An established connection: the peer's features, the connection's uid (ours XOR the
/// peer's connection id, the same on both sides: mesh's tie-break between two connections to
/// one peer), and the two directions.
pub(crate) struct MeshConnection<S> {
    reader: FrameReader<S>,
    writer: FrameWriter,
    pub(crate) remote: Features,
    pub(crate) uid: u64,
}

/// The receiving direction: frames opened with the peer's box.
pub(crate) struct FrameReader<R> {
    stream: R,
    receiver: SecretBox,
}

/// The sending direction's box: frames sealed for the peer, written by the caller.
pub(crate) struct FrameWriter {
    sender: SecretBox,
}

/// The largest features frame a peer may send in its handshake (a few short strings): a
/// stranger that has not introduced itself is not given mesh's 10 MiB.
const MAX_FEATURES_FRAME: usize = 64 << 10;

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// The next frame's payload, opened; an error when the peer's secret is another.
    pub(crate) async fn receive(&mut self) -> Result<Vec<u8>> {
        self.receive_at_most(usize::MAX).await
    }

    async fn receive_at_most(&mut self, max: usize) -> Result<Vec<u8>> {
        let mut prefix = [0u8; 4];
        self.stream
            .read_exact(&mut prefix)
            .await
            .context("reading a mesh frame")?;
        let len = frame_len(prefix)?;
        if len > max {
            bail!("a mesh frame of {len} bytes where at most {max} may come");
        }
        let mut sealed = vec![0u8; len];
        self.stream
            .read_exact(&mut sealed)
            .await
            .context("reading a mesh frame")?;
        self.receiver.open(&sealed)
    }
}

impl FrameWriter {
    /// One frame of `payload`, sealed: length, then the box.
    pub(crate) fn seal(&mut self, payload: &[u8]) -> Result<Vec<u8>> {
        let sealed = self.sender.seal(payload)?;
        let len = u32::try_from(sealed.len()).context("a frame too large to send")?;
        let mut out = Vec::with_capacity(4 + sealed.len());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend(sealed);
        Ok(out)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> MeshConnection<S> {
    /// Introduces this member on `stream` (`dialled` when this side opened it) with the
    /// gossip `password` (the secret; empty when none: kOps' mesh always encrypts).
    pub(crate) async fn handshake(
        stream: S,
        dialled: bool,
        local: &LocalPeer,
        password: &[u8],
    ) -> Result<Self> {
        Self::handshake_within(stream, dialled, local, password, HANDSHAKE_TIMEOUT).await
    }

    async fn handshake_within(
        stream: S,
        dialled: bool,
        local: &LocalPeer,
        password: &[u8],
        limit: Duration,
    ) -> Result<Self> {
        tokio::time::timeout(limit, Self::introduce(stream, dialled, local, password))
            .await
            .context("the mesh handshake did not finish in time")?
    }

    async fn introduce(
        mut stream: S,
        dialled: bool,
        local: &LocalPeer,
        password: &[u8],
    ) -> Result<Self> {
        let key = EphemeralKey::generate()?;
        let mut hello = HEADER.to_vec();
        hello.push(1);
        hello.extend_from_slice(&key.public);
        stream
            .write_all(&hello)
            .await
            .context("writing the mesh header")?;
        let mut header = [0u8; 7];
        stream
            .read_exact(&mut header)
            .await
            .context("reading the mesh header")?;
        agreed_version(header)?;
        let mut flag = [0u8; 1];
        stream
            .read_exact(&mut flag)
            .await
            .context("reading the encryption flag")?;
        if flag[0] != 1 {
            bail!("the mesh peer asked for an unencrypted connection (kOps' are always encrypted)");
        }
        let mut their_public = [0u8; 32];
        stream
            .read_exact(&mut their_public)
            .await
            .context("reading the peer's public key")?;
        let session = key.session_key(&their_public, password);
        let mut connection = Self {
            reader: FrameReader {
                stream,
                receiver: SecretBox::receiver(&session, dialled),
            },
            writer: FrameWriter {
                sender: SecretBox::sender(&session, dialled),
            },
            uid: 0,
            remote: Features {
                name: [0; 16],
                nick_name: String::new(),
                short_id: 0,
                uid: 0,
                conn_id: 0,
            },
        };
        let mut conn_id = [0u8; 8];
        getrandom::fill(&mut conn_id).map_err(|err| anyhow::anyhow!("no randomness: {err}"))?;
        let ours = Features {
            name: local.name,
            nick_name: local.nick_name.clone(),
            short_id: local.short_id,
            uid: local.uid,
            conn_id: u64::from_be_bytes(conn_id),
        };
        connection.send(&ours.encode()).await?;
        let theirs = connection
            .reader
            .receive_at_most(MAX_FEATURES_FRAME)
            .await?;
        let theirs = Features::decode(&theirs)?;
        if theirs.name == local.name {
            bail!("connected to ourself");
        }
        connection.uid = ours.conn_id ^ theirs.conn_id;
        connection.remote = theirs;
        Ok(connection)
    }

    /// Sends one frame's payload, sealed.
    pub(crate) async fn send(&mut self, payload: &[u8]) -> Result<()> {
        let frame = self.writer.seal(payload)?;
        self.reader
            .stream
            .write_all(&frame)
            .await
            .context("writing a mesh frame")
    }

    /// The next frame's payload, opened; an error when the peer's secret is another.
    #[cfg(test)]
    async fn receive(&mut self) -> Result<Vec<u8>> {
        self.reader.receive().await
    }

    /// The two directions apart, for a reader and a writer task: the reader on the stream's
    /// reading half, the writer's box with the writing half.
    pub(crate) fn into_halves(
        self,
    ) -> (
        FrameReader<tokio::io::ReadHalf<S>>,
        (FrameWriter, tokio::io::WriteHalf<S>),
    ) {
        let (read, write) = tokio::io::split(self.reader.stream);
        (
            FrameReader {
                stream: read,
                receiver: self.reader.receiver,
            },
            (self.writer, write),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::wire::mesh::{peer_name, GossipMessage, TAG_GOSSIP};

    fn peer(name: &str) -> LocalPeer {
        LocalPeer {
            name: peer_name(name),
            nick_name: name.to_owned(),
            uid: 7,
            short_id: 1,
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn two_members_introduce_themselves_and_exchange_gossip() {
        runtime().block_on(async {
            let (a, b) = tokio::io::duplex(1 << 16);
            let (peer_a, peer_b) = (peer("i-a"), peer("i-b"));
            let (dialler, listener) = tokio::join!(
                MeshConnection::handshake(a, true, &peer_a, b"s"),
                MeshConnection::handshake(b, false, &peer_b, b"s"),
            );
            let (mut dialler, mut listener) = (dialler.unwrap(), listener.unwrap());
            assert_eq!(dialler.remote.nick_name, "i-b");
            assert_eq!(listener.remote.name, peer_name("i-a"));
            let message = GossipMessage {
                tag: TAG_GOSSIP,
                channel: "dns".into(),
                source: "x".into(),
                destination: None,
                payload: vec![1, 2, 3],
            };
            dialler.send(&message.encode()).await.unwrap();
            listener.send(&[0]).await.unwrap();
            assert_eq!(
                GossipMessage::decode(&listener.receive().await.unwrap()).unwrap(),
                message
            );
            assert_eq!(dialler.receive().await.unwrap(), [0]);
        });
    }

    #[test]
    fn another_secret_is_named_and_a_stranger_refused() {
        runtime().block_on(async {
            let (a, b) = tokio::io::duplex(1 << 16);
            let (peer_a, peer_b) = (peer("i-a"), peer("i-b"));
            let (dialler, _) = tokio::join!(
                MeshConnection::handshake(a, true, &peer_a, b"one"),
                MeshConnection::handshake(b, false, &peer_b, b"two"),
            );
            let err = format!("{:#}", dialler.err().unwrap());
            assert!(err.contains("another gossip secret"), "{err}");
            let (mut a, b) = tokio::io::duplex(1 << 16);
            let listener = tokio::spawn(async move {
                MeshConnection::handshake(b, false, &peer("i-b"), b"").await
            });
            a.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
            let err = format!("{:#}", listener.await.unwrap().err().unwrap());
            assert!(err.contains("not a mesh peer"), "{err}");
        });
    }

    #[test]
    fn a_stranger_claiming_a_huge_features_frame_is_refused_before_it_is_read() {
        runtime().block_on(async {
            let (mut a, b) = tokio::io::duplex(1 << 16);
            let listener = tokio::spawn(async move {
                MeshConnection::handshake(b, false, &peer("i-b"), b"").await
            });
            let mut hello = HEADER.to_vec();
            hello.push(1);
            hello.extend_from_slice(&[9u8; 32]);
            hello.extend_from_slice(&(1u32 << 20).to_be_bytes());
            a.write_all(&hello).await.unwrap();
            let err = format!("{:#}", listener.await.unwrap().err().unwrap());
            assert!(err.contains("at most 65536 may come"), "{err}");
        });
    }

    #[test]
    fn a_silent_peer_is_dropped_at_the_handshakes_deadline() {
        runtime().block_on(async {
            let (_a, b) = tokio::io::duplex(1 << 16);
            let limit = Duration::from_millis(50);
            let err = MeshConnection::handshake_within(b, false, &peer("i-b"), b"", limit)
                .await
                .err()
                .unwrap();
            assert!(
                format!("{err:#}").contains("did not finish in time"),
                "{err:#}"
            );
        });
    }
}
