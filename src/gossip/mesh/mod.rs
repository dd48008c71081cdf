//! The member on weaveworks mesh, as kOps' peers run it, over the transport seam: it listens,
//! dials the seeds and the peers its topology names (kOps sets `PeerDiscovery`) with mesh's
//! backoff, keeps one connection per peer (mesh's tie-break), sends heartbeats, its topology
//! (so that Go peers relay its broadcasts) and the full `dns` state on each connection, every
//! 30 s and on a change of its own records, relays what was new to it to its other peers, and
//! forgets the peers no longer reachable.

pub(crate) mod connection;
pub(crate) mod targets;
pub(crate) mod topology;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use self::connection::{LocalPeer, MeshConnection};
use self::targets::Targets;
use self::topology::{Name, Topology};
use super::store::Store;
use super::transport::{serve_accepted, BoxStream, Dialer, Listener, Transport};
use super::view::Protocol;
use super::wire::gob::{ConnectionSummary, PeerSummary};
use super::wire::mesh::{
    decode_topology, encode_topology, peer_name_text, GossipMessage, TopologyPeer, TAG_GOSSIP,
    TAG_GOSSIP_BROADCAST, TAG_GOSSIP_UNICAST, TAG_HEARTBEAT,
};
use super::wire::protobuf::KvState;

/// mesh's gossip interval and heartbeat interval (router.go, connection.go).
pub(crate) const GOSSIP_INTERVAL: Duration = Duration::from_secs(30);
/// A connection silent for longer is dead (mesh's read deadline).
const READ_DEADLINE: Duration = Duration::from_mins(1);
/// How long a dial may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);
/// Frames queued for one peer before newer ones are dropped (the next full state mends it).
const QUEUE: usize = 64;
/// How often the connection maker looks again at most.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

const DNS: &str = "dns";
const TOPOLOGY: &str = "topology";

struct Conn {
    uid: u64,
    nick: String,
    addr: SocketAddr,
    outbound: bool,
    queue: mpsc::Sender<Vec<u8>>,
    closed: Arc<Notify>,
}

/// The mesh member.
pub(crate) struct Mesh {
    local: LocalPeer,
    password: Vec<u8>,
    store: Arc<Store>,
    listener: Box<dyn Listener>,
    dialer: Dialer,
    conns: Mutex<BTreeMap<Name, Conn>>,
    /// Our topology version (bumped on every connection added or removed).
    version: Mutex<u64>,
    topology: Mutex<Topology>,
    targets: Mutex<Targets>,
    /// Address dialled → the peer found there, so that a connected peer is not dialled again.
    found_at: Mutex<BTreeMap<SocketAddr, Name>>,
    /// Wakes the connection maker (a connection or the topology changed).
    changed: Notify,
    slots: Arc<Semaphore>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Mesh {
    /// Binds the listener at `listen` through `transport`.
    pub(crate) async fn bind(
        transport: Arc<dyn Transport>,
        listen: SocketAddr,
        local: LocalPeer,
        password: Vec<u8>,
        store: Arc<Store>,
        conn_limit: usize,
    ) -> Result<Arc<Self>> {
        let listener = transport
            .listen(listen)
            .await
            .with_context(|| format!("listening for mesh peers on `{listen}`"))?;
        Ok(Arc::new(Self {
            topology: Mutex::new(Topology::new(local.name)),
            local,
            password,
            store,
            listener,
            dialer: Dialer::new(transport).from(listen.ip()),
            conns: Mutex::new(BTreeMap::new()),
            version: Mutex::new(1),
            targets: Mutex::new(Targets::default()),
            found_at: Mutex::new(BTreeMap::new()),
            changed: Notify::new(),
            slots: Arc::new(Semaphore::new(conn_limit)),
        }))
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.listener.local_addr().port()
    }

    /// The peers connected now (tests look inside).
    #[cfg(test)]
    pub(crate) fn connected(&self) -> Vec<String> {
        lock(&self.conns).values().map(|c| c.nick.clone()).collect()
    }

    /// Runs until `stop` says so: accepts, dials, gossips.
    pub(crate) async fn run(
        self: Arc<Self>,
        seeds: watch::Receiver<Vec<SocketAddr>>,
        mut stop: watch::Receiver<bool>,
    ) {
        let work = async { tokio::join!(self.accept(), self.connect(seeds), self.gossip()) };
        tokio::select! {
            _ = work => {}
            _ = stop.wait_for(|stopped| *stopped) => {}
        }
    }

    /// Accepts connections, each served by a task of its own, at most `GOSSIP_DNS_CONN_LIMIT`
    /// at once.
    async fn accept(self: &Arc<Self>) {
        serve_accepted(
            &*self.listener,
            &self.slots,
            "mesh",
            |stream, addr, slot| self.clone().connection(stream, addr, false, slot),
        )
        .await;
    }

    /// mesh's connection maker: the seeds and what discovery offers, dialled when due.
    async fn connect(self: &Arc<Self>, mut seeds: watch::Receiver<Vec<SocketAddr>>) {
        let mut connections = JoinSet::new();
        loop {
            let current = seeds.borrow_and_update().clone();
            let connected: BTreeSet<Name> = lock(&self.conns).keys().copied().collect();
            let discovered = lock(&self.topology).targets(&connected, self.port());
            let found_at = lock(&self.found_at).clone();
            let covered = |addr: SocketAddr| {
                found_at
                    .get(&addr)
                    .is_some_and(|name| *name == self.local.name || connected.contains(name))
            };
            let (due, next) =
                lock(&self.targets).due(&current, &discovered, covered, Instant::now());
            for addr in due {
                let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                    lock(&self.targets).failed(addr, Instant::now());
                    continue;
                };
                connections.spawn(self.clone().dial(addr, slot));
            }
            let wake = next.map_or(LOOK_AGAIN, |at| {
                at.saturating_duration_since(Instant::now()).min(LOOK_AGAIN)
            });
            tokio::select! {
                changed = seeds.changed() => {
                    if changed.is_err() {
                        // Nobody gives seeds any more: those it has stay.
                        std::future::pending::<()>().await;
                    }
                }
                () = self.changed.notified() => {}
                () = tokio::time::sleep(wake.max(Duration::from_millis(10))) => {}
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    }

    async fn dial(self: Arc<Self>, addr: SocketAddr, slot: OwnedSemaphorePermit) {
        match self.dialer.connect(addr, DIAL_TIMEOUT).await {
            Ok(stream) => self.connection(stream, addr, true, slot).await,
            Err(err) => {
                tracing::debug!("mesh: `{addr}`: {err}");
                lock(&self.targets).failed(addr, Instant::now());
            }
        }
    }

    /// The full state every 30 s, and a broadcast when this node's own records change.
    async fn gossip(&self) {
        let mut published = self.store.publications();
        let mut ticker = tokio::time::interval(GOSSIP_INTERVAL);
        ticker.tick().await;
        loop {
            let tag = tokio::select! {
                _ = ticker.tick() => TAG_GOSSIP,
                changed = published.changed() => {
                    if changed.is_err() {
                        std::future::pending::<()>().await;
                    }
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
    fn send_all(&self, payload: &[u8], except: Option<Name>) {
        for (name, conn) in lock(&self.conns).iter() {
            if Some(*name) != except {
                let _ = conn.queue.try_send(payload.to_vec());
            }
        }
    }

    /// Our topology: this peer and its connections.
    fn topology_message(&self) -> Vec<u8> {
        let version = *lock(&self.version);
        let connections = lock(&self.conns)
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
        *lock(&self.version) += 1;
        let connected: BTreeSet<Name> = lock(&self.conns).keys().copied().collect();
        lock(&self.topology).forget_unreachable(&connected);
        self.store.set_peers(Protocol::Mesh, connected.len());
        self.send_all(&self.topology_message(), None);
        self.changed.notify_one();
    }

    /// One connection, from handshake to close.
    async fn connection(
        self: Arc<Self>,
        stream: BoxStream,
        addr: SocketAddr,
        dialled: bool,
        _slot: OwnedSemaphorePermit,
    ) {
        let connection =
            match MeshConnection::handshake(stream, dialled, &self.local, &self.password).await {
                Ok(connection) => connection,
                Err(err) => {
                    self.handshake_failed(addr, dialled, &err);
                    return;
                }
            };
        let (name, uid) = (connection.remote.name, connection.uid);
        if dialled {
            lock(&self.found_at).insert(addr, name);
            lock(&self.targets).connected(addr);
        }
        let Some((queue, closed)) = self.register(&connection, addr, dialled) else {
            return;
        };
        self.exchange(connection, addr, name, queue, closed).await;
        self.unregister(name, uid);
        if dialled {
            lock(&self.targets).ended(addr, Instant::now());
        }
    }

    fn handshake_failed(&self, addr: SocketAddr, dialled: bool, err: &anyhow::Error) {
        let text = format!("{err:#}");
        if text.contains("secret") {
            tracing::warn!("mesh: peer `{addr}`: {text}");
        } else {
            tracing::debug!("mesh: peer `{addr}`: {text}");
        }
        if dialled {
            if text.contains("ourself") {
                lock(&self.found_at).insert(addr, self.local.name);
                lock(&self.targets).ourself(addr);
            } else {
                lock(&self.targets).failed(addr, Instant::now());
            }
        }
    }

    /// Frames both ways until either side stops or another connection to the peer wins.
    async fn exchange(
        &self,
        connection: MeshConnection<BoxStream>,
        addr: SocketAddr,
        name: Name,
        queue: (mpsc::Sender<Vec<u8>>, mpsc::Receiver<Vec<u8>>),
        closed: Arc<Notify>,
    ) {
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
            let mut conns = lock(&self.conns);
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

    fn unregister(&self, name: Name, uid: u64) {
        let removed = {
            let mut conns = lock(&self.conns);
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
    fn handle(&self, from: Name, payload: &[u8]) {
        if payload.first().is_none_or(|tag| *tag == TAG_HEARTBEAT) {
            return;
        }
        let message = match GossipMessage::decode(payload) {
            Ok(message) => message,
            Err(err) => {
                tracing::trace!("mesh: a frame skipped: {err:#}");
                return;
            }
        };
        match message.channel.as_str() {
            DNS if message.tag != TAG_GOSSIP_UNICAST => self.handle_dns(from, &message),
            TOPOLOGY => self.handle_topology(from, &message),
            _ => {}
        }
    }

    fn handle_dns(&self, from: Name, message: &GossipMessage) {
        let state = match KvState::decode(&message.payload) {
            Ok(state) => state,
            Err(err) => {
                tracing::debug!("mesh: a `dns` state skipped: {err:#}");
                return;
            }
        };
        let peer = lock(&self.conns)
            .get(&from)
            .map_or_else(|| peer_name_text(&from), |c| c.nick.clone());
        let delta = self.store.merge(Protocol::Mesh, &peer, &state);
        if delta.records.is_empty() {
            return;
        }
        tracing::trace!("mesh: {} new records from `{peer}`", delta.records.len());
        let source = if message.tag == TAG_GOSSIP_BROADCAST {
            message.source.clone()
        } else {
            self.source()
        };
        self.send_all(&Self::dns_message(message.tag, &source, &delta), Some(from));
    }

    /// Others' topology: remembered by version, relayed when it told something new, and the
    /// connection maker woken (discovery may have new addresses).
    fn handle_topology(&self, from: Name, message: &GossipMessage) {
        let Ok(peers) = decode_topology(&message.payload) else {
            tracing::trace!("mesh: a topology update skipped");
            return;
        };
        if !lock(&self.topology).update(&peers) {
            return;
        }
        let relay = GossipMessage {
            tag: TAG_GOSSIP,
            channel: TOPOLOGY.to_owned(),
            source: self.source(),
            destination: None,
            payload: message.payload.clone(),
        };
        self.send_all(&relay.encode(), Some(from));
        self.changed.notify_one();
    }
}

#[cfg(test)]
mod tests;
