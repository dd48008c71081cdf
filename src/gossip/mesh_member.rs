//! The member on weaveworks mesh, as kOps' peers run it: it listens and dials the seeds, keeps
//! one connection per peer (mesh's tie-break), sends heartbeats, its topology (so that Go peers
//! relay its broadcasts) and the full `dns` state on each connection, every 30 s and on a change
//! of its own records, and relays what was new to it to its other peers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};

use super::mesh_connection::{LocalPeer, MeshConnection};
use super::store::Store;
use super::view::Protocol;
use super::wire::gob::{ConnectionSummary, PeerSummary};
use super::wire::mesh::{
    decode_topology, encode_topology, peer_name_text, GossipMessage, TopologyPeer, TAG_GOSSIP,
    TAG_GOSSIP_BROADCAST, TAG_HEARTBEAT,
};
use super::wire::protobuf::KvState;

/// mesh's gossip interval and heartbeat interval (router.go, connection.go).
pub(crate) const GOSSIP_INTERVAL: Duration = Duration::from_secs(30);
/// A connection silent for longer is dead (mesh's read deadline).
const READ_DEADLINE: Duration = Duration::from_mins(1);
/// Frames queued for one peer before newer ones are dropped (the next full state mends it).
const QUEUE: usize = 64;
/// The most peers the member remembers from others' topology.
const MAX_KNOWN_PEERS: usize = 4096;

const DNS: &str = "dns";
const TOPOLOGY: &str = "topology";

/// Peer name → (uid, topology version), as others told us.
type KnownPeers = BTreeMap<Vec<u8>, (u64, u64)>;

struct Conn {
    uid: u64,
    nick: String,
    addr: SocketAddr,
    outbound: bool,
    queue: mpsc::Sender<Vec<u8>>,
    closed: Arc<Notify>,
}

/// The mesh member.
pub(crate) struct MeshMember {
    local: LocalPeer,
    password: Vec<u8>,
    store: Arc<Store>,
    conns: Mutex<BTreeMap<[u8; 16], Conn>>,
    /// Our topology version (bumped on every connection added or removed) and the versions
    /// of the peers others told us of.
    topology: Mutex<(u64, KnownPeers)>,
    /// Seed address → the peer found there, so that a connected peer is not dialled again.
    seed_names: Mutex<BTreeMap<SocketAddr, [u8; 16]>>,
    slots: Arc<Semaphore>,
}

impl MeshMember {
    pub(crate) fn new(
        local: LocalPeer,
        password: Vec<u8>,
        store: Arc<Store>,
        conn_limit: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            local,
            password,
            store,
            conns: Mutex::new(BTreeMap::new()),
            topology: Mutex::new((1, BTreeMap::new())),
            seed_names: Mutex::new(BTreeMap::new()),
            slots: Arc::new(Semaphore::new(conn_limit)),
        })
    }

    fn conns(&self) -> std::sync::MutexGuard<'_, BTreeMap<[u8; 16], Conn>> {
        self.conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs until dropped: accepts on `listener`, dials the `seeds` it is given, gossips.
    pub(crate) async fn run(
        self: Arc<Self>,
        listener: TcpListener,
        seeds: watch::Receiver<Vec<SocketAddr>>,
    ) {
        tokio::join!(
            self.clone().accept(listener),
            self.clone().dial(seeds),
            self.clone().gossip(),
        );
    }

    async fn accept(self: Arc<Self>, listener: TcpListener) {
        loop {
            let Ok((stream, addr)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                tracing::debug!("mesh: refused `{addr}`: GOSSIP_DNS_CONN_LIMIT reached");
                continue;
            };
            tokio::spawn(self.clone().connection(stream, addr, false, slot));
        }
    }

    async fn dial(self: Arc<Self>, mut seeds: watch::Receiver<Vec<SocketAddr>>) {
        loop {
            let addrs = seeds.borrow_and_update().clone();
            for addr in addrs {
                if self.is_connected_to(addr) {
                    continue;
                }
                let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                    break;
                };
                let member = self.clone();
                tokio::spawn(async move {
                    let dialled =
                        tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
                            .await;
                    if let Ok(Ok(stream)) = dialled {
                        member.connection(stream, addr, true, slot).await;
                    } else {
                        tracing::debug!("mesh: seed `{addr}` did not answer");
                    }
                });
            }
            let pause = if self.conns().is_empty() {
                Duration::from_secs(2)
            } else {
                GOSSIP_INTERVAL
            };
            let _ = tokio::time::timeout(pause, seeds.changed()).await;
        }
    }

    fn is_connected_to(&self, addr: SocketAddr) -> bool {
        let known = self
            .seed_names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&addr)
            .copied();
        let conns = self.conns();
        known.is_some_and(|name| name == self.local.name || conns.contains_key(&name))
            || conns.values().any(|c| c.outbound && c.addr == addr)
    }

    /// The full state every 30 s, and a broadcast when this node's own records change.
    async fn gossip(self: Arc<Self>) {
        let mut published = self.store.publications();
        let mut ticker = tokio::time::interval(GOSSIP_INTERVAL);
        ticker.tick().await;
        loop {
            let tag = tokio::select! {
                _ = ticker.tick() => TAG_GOSSIP,
                changed = published.changed() => {
                    if changed.is_err() { return; }
                    TAG_GOSSIP_BROADCAST
                }
            };
            let state = self.store.state(Protocol::Mesh);
            self.send_all(&Self::dns_message(tag, &self.source(), &state), None);
        }
    }

    fn source(&self) -> String {
        peer_name_text(&self.local.name)
    }

    fn dns_message(tag: u8, source: &str, state: &KvState) -> Vec<u8> {
        GossipMessage {
            tag,
            channel: DNS.to_owned(),
            source: source.to_owned(),
            destination: None,
            payload: state.encode(),
        }
        .encode()
    }

    /// Queues `payload` for every peer but `except`; a full queue drops it (the next full
    /// state mends what was lost).
    fn send_all(&self, payload: &[u8], except: Option<[u8; 16]>) {
        for (name, conn) in self.conns().iter() {
            if Some(*name) != except {
                let _ = conn.queue.try_send(payload.to_vec());
            }
        }
    }

    /// Our topology: this peer and its connections.
    fn topology_message(&self) -> Vec<u8> {
        let version = self
            .topology
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
        let connections = self
            .conns()
            .iter()
            .map(|(name, conn)| ConnectionSummary {
                name: name.to_vec(),
                remote_tcp_addr: conn.addr.to_string(),
                outbound: conn.outbound,
                established: true,
            })
            .collect();
        let peer = TopologyPeer {
            summary: PeerSummary {
                name: self.local.name.to_vec(),
                nick_name: self.local.nick_name.clone(),
                uid: self.local.uid,
                version,
                short_id: self.local.short_id,
                has_short_id: true,
            },
            connections,
        };
        GossipMessage {
            tag: TAG_GOSSIP,
            channel: TOPOLOGY.to_owned(),
            source: self.source(),
            destination: None,
            payload: encode_topology(&[peer]),
        }
        .encode()
    }

    fn topology_changed(&self) {
        self.topology
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0 += 1;
        self.store.set_peers(Protocol::Mesh, self.conns().len());
        self.send_all(&self.topology_message(), None);
    }

    /// One connection, from handshake to close.
    async fn connection(
        self: Arc<Self>,
        stream: TcpStream,
        addr: SocketAddr,
        dialled: bool,
        _slot: OwnedSemaphorePermit,
    ) {
        let _ = stream.set_nodelay(true);
        let connection =
            match MeshConnection::handshake(stream, dialled, &self.local, &self.password).await {
                Ok(connection) => connection,
                Err(err) => {
                    let text = format!("{err:#}");
                    if text.contains("secret") {
                        tracing::warn!("mesh: peer `{addr}`: {text}");
                    } else {
                        tracing::debug!("mesh: peer `{addr}`: {text}");
                    }
                    if dialled && text.contains("ourself") {
                        self.remember_seed(addr, self.local.name);
                    }
                    return;
                }
            };
        let (name, uid) = (connection.remote.name, connection.uid);
        if dialled {
            self.remember_seed(addr, name);
        }
        let Some((queue, closed)) = self.register(&connection, addr, dialled) else {
            return;
        };
        let (mut reader, (mut writer, mut write)) = connection.into_halves();
        let (sender, mut outgoing) = queue;
        let writing = async {
            let mut heartbeat = tokio::time::interval(GOSSIP_INTERVAL);
            heartbeat.tick().await;
            loop {
                let payload = tokio::select! {
                    next = outgoing.recv() => match next { Some(p) => p, None => break },
                    _ = heartbeat.tick() => vec![TAG_HEARTBEAT],
                };
                let Ok(frame) = writer.seal(&payload) else {
                    break;
                };
                if write.write_all(&frame).await.is_err() {
                    break;
                }
            }
        };
        let reading = async {
            loop {
                match tokio::time::timeout(READ_DEADLINE, reader.receive()).await {
                    Ok(Ok(payload)) => self.handle(name, &payload),
                    Ok(Err(err)) => {
                        tracing::debug!("mesh: peer `{addr}`: {err:#}");
                        break;
                    }
                    Err(_) => {
                        tracing::debug!("mesh: peer `{addr}` silent for {READ_DEADLINE:?}");
                        break;
                    }
                }
            }
        };
        // The first frames: our topology and our whole state.
        let _ = sender.try_send(self.topology_message());
        let _ = sender.try_send(Self::dns_message(
            TAG_GOSSIP,
            &self.source(),
            &self.store.state(Protocol::Mesh),
        ));
        drop(sender);
        tokio::select! {
            () = writing => {}
            () = reading => {}
            () = closed.notified() => {}
        }
        self.unregister(name, uid);
    }

    fn remember_seed(&self, addr: SocketAddr, name: [u8; 16]) {
        self.seed_names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(addr, name);
    }

    /// Adds the connection unless one to the same peer wins mesh's tie-break (the smaller uid
    /// stays; both sides decide alike).
    #[allow(clippy::type_complexity)]
    fn register<S>(
        &self,
        connection: &MeshConnection<S>,
        addr: SocketAddr,
        outbound: bool,
    ) -> Option<(
        (mpsc::Sender<Vec<u8>>, mpsc::Receiver<Vec<u8>>),
        Arc<Notify>,
    )> {
        let name = connection.remote.name;
        let (sender, receiver) = mpsc::channel(QUEUE);
        let closed = Arc::new(Notify::new());
        {
            let mut conns = self.conns();
            if let Some(existing) = conns.get(&name) {
                if existing.uid <= connection.uid {
                    return None;
                }
                existing.closed.notify_one();
            }
            conns.insert(
                name,
                Conn {
                    uid: connection.uid,
                    nick: connection.remote.nick_name.clone(),
                    addr,
                    outbound,
                    queue: sender.clone(),
                    closed: closed.clone(),
                },
            );
        }
        tracing::info!(
            "mesh: connected to `{}` at `{addr}`",
            connection.remote.nick_name.escape_debug()
        );
        self.topology_changed();
        Some(((sender, receiver), closed))
    }

    fn unregister(&self, name: [u8; 16], uid: u64) {
        let removed = {
            let mut conns = self.conns();
            match conns.get(&name) {
                Some(conn) if conn.uid == uid => conns.remove(&name),
                _ => None,
            }
        };
        if let Some(conn) = removed {
            tracing::info!("mesh: lost `{}`", conn.nick.escape_debug());
            self.topology_changed();
        }
    }

    /// One frame from peer `from`.
    fn handle(&self, from: [u8; 16], payload: &[u8]) {
        if payload.first().is_none_or(|tag| *tag == TAG_HEARTBEAT) {
            return;
        }
        let message = match GossipMessage::decode(payload) {
            Ok(message) => message,
            Err(err) => {
                tracing::debug!("mesh: a frame skipped: {err:#}");
                return;
            }
        };
        match message.channel.as_str() {
            DNS if message.tag != super::wire::mesh::TAG_GOSSIP_UNICAST => {
                self.handle_dns(from, &message);
            }
            TOPOLOGY => self.handle_topology(from, &message),
            _ => {}
        }
    }

    fn handle_dns(&self, from: [u8; 16], message: &GossipMessage) {
        let state = match KvState::decode(&message.payload) {
            Ok(state) => state,
            Err(err) => {
                tracing::warn!("mesh: a `dns` state skipped: {err:#}");
                return;
            }
        };
        let peer = self
            .conns()
            .get(&from)
            .map_or_else(|| peer_name_text(&from), |c| c.nick.clone());
        let delta = self.store.merge(Protocol::Mesh, &peer, &state);
        if delta.records.is_empty() {
            return;
        }
        tracing::debug!("mesh: {} new records from `{peer}`", delta.records.len());
        let source = if message.tag == TAG_GOSSIP_BROADCAST {
            message.source.clone()
        } else {
            self.source()
        };
        self.send_all(&Self::dns_message(message.tag, &source, &delta), Some(from));
    }

    /// Others' topology: decoded, remembered by version, relayed when it told us something new.
    fn handle_topology(&self, from: [u8; 16], message: &GossipMessage) {
        let Ok(peers) = decode_topology(&message.payload) else {
            tracing::debug!("mesh: a topology update skipped");
            return;
        };
        let news = {
            let mut book = self
                .topology
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut news = false;
            for peer in &peers {
                let summary = &peer.summary;
                if summary.name == self.local.name {
                    continue;
                }
                let known = book.1.get(&summary.name);
                if known
                    .is_none_or(|(uid, version)| *uid != summary.uid || *version < summary.version)
                    && (known.is_some() || book.1.len() < MAX_KNOWN_PEERS)
                {
                    book.1
                        .insert(summary.name.clone(), (summary.uid, summary.version));
                    news = true;
                }
            }
            news
        };
        if news {
            let relay = GossipMessage {
                tag: TAG_GOSSIP,
                channel: TOPOLOGY.to_owned(),
                source: self.source(),
                destination: None,
                payload: message.payload.clone(),
            };
            self.send_all(&relay.encode(), Some(from));
        }
    }
}

/// Binds the mesh listener.
pub(crate) async fn bind(listen: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening for mesh peers on `{listen}`"))
}
