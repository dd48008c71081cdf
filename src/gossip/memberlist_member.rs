//! The member on HashiCorp memberlist, as kOps configures it: it joins the seeds by push/pull
//! over TCP (kOps' `FullState` as the user state), pushes and pulls again every 30 s, answers
//! pings, refutes suspicion of itself, learns members from alive/suspect/dead messages, and
//! sends its own records and what was new to it as reliable user messages (TCP).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use serde_bytes::ByteBuf;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{watch, Semaphore};

use super::store::Store;
use super::view::Protocol;
use super::wire::memberlist::{
    decode, encode, message_of_stream, messages_of_packet, packet, stream, Accusation, AckResp,
    Alive, IndirectPing, MessageType, Ping, PushNodeState, PushPullHeader, UserMsgHeader,
    MAX_STREAM, VSN,
};
use super::wire::protobuf::{decode_part, encode_part, FullState, KvState};

/// memberlist's TCP timeout as kOps sets it.
const TCP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the member pushes and pulls its state with one member (kOps: 60 s).
const PUSH_PULL_INTERVAL: Duration = Duration::from_secs(30);
/// The most members remembered.
const MAX_MEMBERS: usize = 4096;
const DNS: &str = "dns";

/// A member as memberlist knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Member {
    addr: SocketAddr,
    incarnation: u32,
    /// 0 alive, 1 suspect, 2 dead, 3 left.
    state: u8,
}

/// The memberlist member.
pub(crate) struct MemberlistMember {
    name: String,
    advertise: SocketAddr,
    store: Arc<Store>,
    udp: UdpSocket,
    incarnation: Mutex<u32>,
    members: Mutex<BTreeMap<String, Member>>,
    slots: Arc<Semaphore>,
}

impl MemberlistMember {
    /// Binds UDP and TCP on `listen`; `advertise` is the address others reach it at.
    pub(crate) async fn bind(
        listen: SocketAddr,
        advertise: IpAddr,
        store: Arc<Store>,
        conn_limit: usize,
    ) -> Result<(Arc<Self>, TcpListener)> {
        let tcp = TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening for memberlist peers on `{listen}` (TCP)"))?;
        let port = tcp
            .local_addr()
            .context("reading the memberlist port")?
            .port();
        let udp = UdpSocket::bind(SocketAddr::new(listen.ip(), port))
            .await
            .with_context(|| format!("listening for memberlist peers on `{listen}` (UDP)"))?;
        let member = Arc::new(Self {
            name: random_name()?,
            advertise: SocketAddr::new(advertise, port),
            store,
            udp,
            incarnation: Mutex::new(1),
            members: Mutex::new(BTreeMap::new()),
            slots: Arc::new(Semaphore::new(conn_limit)),
        });
        Ok((member, tcp))
    }

    fn members(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Member>> {
        self.members
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn incarnation(&self) -> u32 {
        *self
            .incarnation
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs until dropped.
    pub(crate) async fn run(
        self: Arc<Self>,
        listener: TcpListener,
        seeds: watch::Receiver<Vec<SocketAddr>>,
    ) {
        tokio::join!(
            self.clone().accept(listener),
            self.clone().receive_packets(),
            self.clone().push_pull_loop(seeds),
            self.clone().broadcast_own(),
        );
    }

    async fn accept(self: Arc<Self>, listener: TcpListener) {
        loop {
            let Ok((stream, addr)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                tracing::debug!("memberlist: refused `{addr}`: GOSSIP_DNS_CONN_LIMIT reached");
                continue;
            };
            let member = self.clone();
            tokio::spawn(async move {
                let _slot = slot;
                if let Err(err) = member.serve_stream(stream).await {
                    tracing::debug!("memberlist: stream from `{addr}`: {err:#}");
                }
            });
        }
    }

    /// One TCP stream: a push/pull (answered with ours) or a user message.
    async fn serve_stream(&self, mut stream: TcpStream) -> Result<()> {
        let message = tokio::time::timeout(TCP_TIMEOUT, read_message(&mut stream))
            .await
            .context("a memberlist stream that did not finish in time")??;
        match message.first().copied().and_then(MessageType::of) {
            Some(MessageType::PushPull) => {
                self.take_push_pull(&message[1..])?;
                let reply = stream_bytes(&self.push_pull_message(false)?)?;
                tokio::time::timeout(TCP_TIMEOUT, stream.write_all(&reply))
                    .await
                    .context("answering a push/pull in time")??;
                Ok(())
            }
            Some(MessageType::User) => {
                let mut body = &message[1..];
                let header: UserMsgHeader = decode(&mut body)?;
                let len = usize::try_from(header.user_msg_len).unwrap_or(usize::MAX);
                let user = body.get(..len).context("a user message cut short")?;
                self.take_user(user, "a peer");
                Ok(())
            }
            other => bail!("a memberlist stream of type {other:?}"),
        }
    }

    /// Our push/pull: the members we know (ourselves first) and kOps' `FullState`.
    fn push_pull_message(&self, join: bool) -> Result<Vec<u8>> {
        let mut nodes = vec![PushNodeState {
            name: self.name.clone(),
            addr: ByteBuf::from(ip_bytes(self.advertise.ip())),
            port: self.advertise.port(),
            meta: ByteBuf::new(),
            incarnation: self.incarnation(),
            state: 0,
            vsn: ByteBuf::from(VSN.to_vec()),
        }];
        for (name, member) in self.members().iter() {
            nodes.push(PushNodeState {
                name: name.clone(),
                addr: ByteBuf::from(ip_bytes(member.addr.ip())),
                port: member.addr.port(),
                meta: ByteBuf::new(),
                incarnation: member.incarnation,
                state: member.state,
                vsn: ByteBuf::from(VSN.to_vec()),
            });
        }
        let user = FullState {
            parts: vec![(
                DNS.to_owned(),
                self.store.state(Protocol::Memberlist).encode(),
            )],
        }
        .encode();
        let header = PushPullHeader {
            nodes: i64::try_from(nodes.len()).context("too many members")?,
            user_state_len: i64::try_from(user.len()).context("a state too large")?,
            join,
        };
        let mut out = encode(MessageType::PushPull, &header)?;
        for node in &nodes {
            out.extend(rmp_serde::to_vec_named(node).context("encoding a member")?);
        }
        out.extend(user);
        Ok(out)
    }

    /// A push/pull's members and state, taken.
    fn take_push_pull(&self, mut body: &[u8]) -> Result<()> {
        let header: PushPullHeader = decode(&mut body)?;
        let count = usize::try_from(header.nodes).context("a negative member count")?;
        if count > MAX_MEMBERS {
            bail!("a push/pull of {count} members (at most {MAX_MEMBERS})");
        }
        for _ in 0..count {
            let node: PushNodeState = decode(&mut body)?;
            if let Some(addr) = socket_addr(&node.addr, node.port) {
                self.learn(&node.name, addr, node.incarnation, node.state);
            }
        }
        let len = usize::try_from(header.user_state_len).context("a negative state length")?;
        let user = body
            .get(..len)
            .context("a push/pull whose state is cut short")?;
        if !user.is_empty() {
            for (key, data) in FullState::decode(user)?.parts {
                if key == DNS {
                    self.merge(&data, "push/pull");
                }
            }
        }
        Ok(())
    }

    fn learn(&self, name: &str, addr: SocketAddr, incarnation: u32, state: u8) {
        if name == self.name {
            if state != 0 {
                self.refute(incarnation);
            }
            return;
        }
        let mut members = self.members();
        if members.len() >= MAX_MEMBERS && !members.contains_key(name) {
            return;
        }
        let entry = members.entry(name.to_owned()).or_insert(Member {
            addr,
            incarnation,
            state,
        });
        if incarnation > entry.incarnation
            || (incarnation == entry.incarnation && state > entry.state)
        {
            *entry = Member {
                addr,
                incarnation,
                state,
            };
        }
        let alive = members.values().filter(|m| m.state <= 1).count();
        drop(members);
        self.store.set_peers(Protocol::Memberlist, alive);
    }

    /// Someone thinks we are suspect or dead: a newer incarnation says we are alive.
    fn refute(&self, accused: u32) {
        let incarnation = {
            let mut ours = self
                .incarnation
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if accused < *ours {
                return;
            }
            *ours = accused + 1;
            *ours
        };
        tracing::info!("memberlist: suspected by a peer; alive again at incarnation {incarnation}");
        let alive = Alive {
            incarnation,
            node: self.name.clone(),
            addr: ByteBuf::from(ip_bytes(self.advertise.ip())),
            port: self.advertise.port(),
            meta: ByteBuf::new(),
            vsn: ByteBuf::from(VSN.to_vec()),
        };
        if let Ok(message) = encode(MessageType::Alive, &alive).and_then(|m| packet(&[m])) {
            for member in self.members().values() {
                let _ = self.udp.try_send_to(&message, member.addr);
            }
        }
    }

    fn merge(&self, kv_state: &[u8], from: &str) -> Option<KvState> {
        let state = match KvState::decode(kv_state) {
            Ok(state) => state,
            Err(err) => {
                tracing::warn!("memberlist: a `dns` state skipped: {err:#}");
                return None;
            }
        };
        let delta = self.store.merge(Protocol::Memberlist, from, &state);
        (!delta.records.is_empty()).then_some(delta)
    }

    /// A user message: kOps' `Part{"dns", KVState}`; what was new is sent on to the others.
    fn take_user(&self, user: &[u8], from: &str) {
        let Ok((key, data)) = decode_part(user) else {
            tracing::debug!("memberlist: a user message skipped");
            return;
        };
        if key != DNS {
            return;
        }
        if let Some(delta) = self.merge(&data, from) {
            self.send_user_to_all(&delta);
        }
    }

    fn send_user_to_all(&self, state: &KvState) {
        let part = encode_part(DNS, &state.encode());
        let Ok(message) = user_message(&part) else {
            return;
        };
        let targets: Vec<SocketAddr> = self
            .members()
            .values()
            .filter(|m| m.state <= 1)
            .map(|m| m.addr)
            .collect();
        for addr in targets {
            let message = message.clone();
            tokio::spawn(async move {
                let sent = tokio::time::timeout(TCP_TIMEOUT, async {
                    let mut stream = TcpStream::connect(addr).await?;
                    stream.write_all(&message).await?;
                    stream.shutdown().await
                })
                .await;
                if !matches!(sent, Ok(Ok(()))) {
                    tracing::debug!("memberlist: `{addr}` did not take a user message");
                }
            });
        }
    }

    async fn receive_packets(self: Arc<Self>) {
        let mut buffer = vec![0u8; 65_536];
        loop {
            let Ok((len, from)) = self.udp.recv_from(&mut buffer).await else {
                continue;
            };
            let messages = match messages_of_packet(&buffer[..len]) {
                Ok(messages) => messages,
                Err(err) => {
                    tracing::debug!("memberlist: a packet from `{from}` skipped: {err:#}");
                    continue;
                }
            };
            for message in messages {
                if let Err(err) = self.handle_packet_message(&message, from) {
                    tracing::debug!("memberlist: a message from `{from}` skipped: {err:#}");
                }
            }
        }
    }

    fn handle_packet_message(&self, message: &[u8], from: SocketAddr) -> Result<()> {
        let (kind, mut body) = message.split_first().context("an empty message")?;
        match MessageType::of(*kind) {
            Some(MessageType::Ping) => {
                let ping: Ping = decode(&mut body)?;
                if !ping.node.is_empty() && ping.node != self.name {
                    return Ok(());
                }
                let to = socket_addr(&ping.source_addr, ping.source_port).unwrap_or(from);
                let ack = AckResp {
                    seq_no: ping.seq_no,
                    payload: ByteBuf::new(),
                };
                let reply = packet(&[encode(MessageType::AckResp, &ack)?])?;
                let _ = self.udp.try_send_to(&reply, to);
            }
            Some(MessageType::IndirectPing) => {
                // Ping the target for the asker: the target acks to the asker directly.
                let request: IndirectPing = decode(&mut body)?;
                let Some(target) = socket_addr(&request.target, request.port) else {
                    return Ok(());
                };
                let ping = Ping {
                    seq_no: request.seq_no,
                    node: request.node,
                    source_addr: ByteBuf::from(ip_bytes(from.ip())),
                    source_port: from.port(),
                    source_node: String::new(),
                };
                let _ = self
                    .udp
                    .try_send_to(&packet(&[encode(MessageType::Ping, &ping)?])?, target);
            }
            Some(MessageType::Alive) => {
                let alive: Alive = decode(&mut body)?;
                if let Some(addr) = socket_addr(&alive.addr, alive.port) {
                    self.learn(&alive.node, addr, alive.incarnation, 0);
                }
            }
            Some(kind @ (MessageType::Suspect | MessageType::Dead)) => {
                let accusation: Accusation = decode(&mut body)?;
                let state = if kind == MessageType::Suspect { 1 } else { 2 };
                let addr = self.members().get(&accusation.node).map(|m| m.addr);
                if accusation.node == self.name {
                    self.refute(accusation.incarnation);
                } else if let Some(addr) = addr {
                    self.learn(&accusation.node, addr, accusation.incarnation, state);
                }
            }
            Some(MessageType::User) => self.take_user(body, &from.to_string()),
            _ => {}
        }
        Ok(())
    }

    /// Joins the seeds (push/pull, join), then pushes and pulls with one member every 30 s,
    /// trying the seeds again while no member is known.
    async fn push_pull_loop(self: Arc<Self>, mut seeds: watch::Receiver<Vec<SocketAddr>>) {
        loop {
            let known: Vec<SocketAddr> = {
                let members = self.members();
                members
                    .values()
                    .filter(|m| m.state <= 1)
                    .map(|m| m.addr)
                    .collect()
            };
            let targets = if known.is_empty() {
                seeds.borrow_and_update().clone()
            } else {
                vec![known[fastrand::usize(..known.len())]]
            };
            for addr in targets {
                if addr == self.advertise {
                    continue;
                }
                if let Err(err) = self.push_pull(addr, known.is_empty()).await {
                    tracing::debug!("memberlist: push/pull with `{addr}`: {err:#}");
                }
            }
            let pause = if self.store.peer_count() == 0 || known.is_empty() {
                Duration::from_secs(2)
            } else {
                PUSH_PULL_INTERVAL
            };
            let _ = tokio::time::timeout(pause, seeds.changed()).await;
        }
    }

    async fn push_pull(&self, addr: SocketAddr, join: bool) -> Result<()> {
        let request = stream_bytes(&self.push_pull_message(join)?)?;
        let reply = tokio::time::timeout(TCP_TIMEOUT, async {
            let mut stream = TcpStream::connect(addr).await?;
            stream.write_all(&request).await?;
            read_message(&mut stream).await
        })
        .await
        .context("no answer in time")??;
        match reply.split_first() {
            Some((6, body)) => self.take_push_pull(body),
            _ => bail!("an answer that is not a push/pull"),
        }
    }

    /// Sends this node's records to every member when they change (kOps' `UpdateValues`).
    async fn broadcast_own(self: Arc<Self>) {
        let mut published = self.store.publications();
        while published.changed().await.is_ok() {
            self.send_user_to_all(&self.store.state(Protocol::Memberlist));
        }
    }

    /// The names of the members alive now.
    #[cfg(test)]
    fn peers(&self) -> Vec<String> {
        self.members()
            .iter()
            .filter(|(_, m)| m.state == 0)
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// A reliable user message, as a stream: `user`, its header, the bytes.
fn user_message(user: &[u8]) -> Result<Vec<u8>> {
    let header = UserMsgHeader {
        user_msg_len: i64::try_from(user.len()).context("a user message too large")?,
    };
    let mut message = encode(MessageType::User, &header)?;
    message.extend_from_slice(user);
    stream_bytes(&message)
}

/// A stream's bytes: compressed whole, as kOps' memberlist sends them.
fn stream_bytes(message: &[u8]) -> Result<Vec<u8>> {
    stream(message)
}

/// Reads one message from a stream: chunks until they decode, at most [`MAX_STREAM`] bytes.
async fn read_message(stream: &mut TcpStream) -> Result<Vec<u8>> {
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
    let Some((kind, mut body)) = message.split_first() else {
        return false;
    };
    match MessageType::of(*kind) {
        Some(MessageType::PushPull) => {
            let Ok(header) = decode::<PushPullHeader>(&mut body) else {
                return false;
            };
            for _ in 0..header.nodes.clamp(0, MAX_MEMBERS as i64) {
                if decode::<PushNodeState>(&mut body).is_err() {
                    return false;
                }
            }
            usize::try_from(header.user_state_len).is_ok_and(|len| body.len() >= len)
        }
        Some(MessageType::User) => decode::<UserMsgHeader>(&mut body)
            .ok()
            .and_then(|h| usize::try_from(h.user_msg_len).ok())
            .is_some_and(|len| body.len() >= len),
        _ => true,
    }
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

fn socket_addr(bytes: &[u8], port: u16) -> Option<SocketAddr> {
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    (port != 0).then(|| SocketAddr::new(ip, port))
}

/// A random member name in ULID's alphabet, as kOps' (a random ULID: the node's name is not used).
fn random_name() -> Result<String> {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut random = [0u8; 26];
    getrandom::fill(&mut random).map_err(|err| anyhow::anyhow!("no randomness: {err}"))?;
    Ok(random
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % 32]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_pull_is_whole_only_with_all_its_members_and_state() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = Arc::new(Store::new(vec![Protocol::Memberlist]));
            store.publish(
                &[("dns/local/NS/local".into(), Some(b"gossip".to_vec()))],
                "me",
            );
            let (member, _tcp) = MemberlistMember::bind(
                "127.0.0.1:0".parse().unwrap(),
                "127.0.0.1".parse().unwrap(),
                store.clone(),
                8,
            )
            .await
            .unwrap();
            let message = member.push_pull_message(true).unwrap();
            assert!(complete(&message));
            assert!(!complete(&message[..message.len() - 1]));
            let streamed = message_of_stream(&stream_bytes(&message).unwrap()).unwrap();
            assert_eq!(streamed, message);
            let other = Arc::new(Store::new(vec![Protocol::Memberlist]));
            let (them, _tcp) = MemberlistMember::bind(
                "127.0.0.1:0".parse().unwrap(),
                "127.0.0.1".parse().unwrap(),
                other.clone(),
                8,
            )
            .await
            .unwrap();
            them.take_push_pull(&message[1..]).unwrap();
            assert_eq!(them.peers(), std::slice::from_ref(&member.name));
            assert_eq!(other.view().records.len(), 0, "NS is no host record");
            assert_eq!(
                other.state(Protocol::Memberlist),
                store.state(Protocol::Memberlist)
            );
        });
    }
}
