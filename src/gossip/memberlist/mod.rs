//! The member on HashiCorp memberlist, as kOps configures it (`third_party/forked/memberlistmesh`
//! over memberlist's LAN settings), over the transport seam: it joins the seeds by push/pull,
//! probes one member a second (ping, then indirect pings through three others and a ping over
//! TCP), suspects, confirms and declares the dead from the [`table`], gossips memberlist's
//! messages and kOps' records on UDP every 200 ms (a record state too large for a packet goes
//! to every member over TCP, as kOps' `sendOversize`), pushes and pulls with one member on
//! memberlist's scaled interval, answers pings, indirect pings (with nacks) and streams, rejoins
//! failed peers every 10 s and seeds that are not members every 15 s (kOps' `reconnect` and
//! `refresh`), and leaves when it stops.

pub(crate) mod queue;
pub(crate) mod streams;
pub(crate) mod table;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use futures_util::future::join_all;
use serde_bytes::ByteBuf;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::Instant;

use self::queue::{Queue, COMPOUND_OVERHEAD};
use self::streams::{read_message, user_bytes, user_message, PushPull, TCP_TIMEOUT};
use self::table::{
    ip_bytes, push_pull_scale, socket_addr, Node, State, Table, INDIRECT_CHECKS, PROBE_INTERVAL,
    PROBE_TIMEOUT, RETRANSMIT_MULT,
};
use super::store::Store;
use super::transport::{serve_accepted, Dialer, Listener, Packets, Transport};
use super::view::Protocol;
use super::wire::memberlist::{
    decode, encode, messages_of_packet, packet, stream as compressed, Accusation, AckResp, Alive,
    IndirectPing, MessageType, NackResp, Ping, UDP_BUFFER_SIZE,
};
use super::wire::protobuf::{decode_part, encode_part, FullState, KvState};

/// How often broadcasts go out (kOps).
pub(crate) const GOSSIP_INTERVAL: Duration = Duration::from_millis(200);
/// kOps' push/pull interval (scaled above 32 members, as memberlist scales it).
pub(crate) const PUSH_PULL_INTERVAL: Duration = Duration::from_mins(1);
/// kOps' `DefaultReconnectInterval`: failed peers are joined again this often…
pub(crate) const RECONNECT_INTERVAL: Duration = Duration::from_secs(10);
/// …for this long (`DefaultReconnectTimeout`).
const RECONNECT_TIMEOUT: Duration = Duration::from_hours(6);
/// kOps' `DefaultRefreshInterval`: seeds that are not members are joined this often.
pub(crate) const REFRESH_INTERVAL: Duration = Duration::from_secs(15);
/// How long a leave waits for its message to go out (kOps: 10 s).
const LEAVE_WAIT: Duration = Duration::from_secs(10);
/// A record state larger than this goes by TCP (kOps' `OversizedMessage`: half a packet).
const MAX_PACKET_PART: usize = UDP_BUFFER_SIZE / 2;
/// Failed peers remembered.
const MAX_FAILED: usize = 256;
/// Indirect pings relayed for others at once.
const MAX_RELAYS: usize = 64;
/// kOps' channel.
const DNS: &str = "dns";

/// Who waits for an ack of a sequence number.
enum Waiter {
    /// A probe of ours: acks (true) and nacks (false) go to it.
    Probe(mpsc::UnboundedSender<bool>, Instant),
    /// A ping to verify a member learnt from others.
    Verify(String, Instant),
    /// An indirect ping relayed for another member: its ack is passed on, or a nack sent.
    Relay {
        to: SocketAddr,
        seq: u32,
        nack: bool,
        until: Instant,
    },
}

impl Waiter {
    fn until(&self) -> Instant {
        match self {
            Self::Probe(_, until) | Self::Verify(_, until) | Self::Relay { until, .. } => *until,
        }
    }
}

/// The memberlist member.
pub(crate) struct Memberlist {
    table: Mutex<Table>,
    /// kOps' record broadcasts (`Part`s) waiting for the next packets.
    user: Mutex<Queue>,
    store: Arc<Store>,
    packets: Arc<dyn Packets>,
    listener: Box<dyn Listener>,
    dialer: Dialer,
    waiters: Mutex<BTreeMap<u32, Waiter>>,
    slots: Arc<Semaphore>,
    /// Peers to join again (kOps' failed peers): seeds not yet joined, members that left.
    failed: Mutex<BTreeMap<SocketAddr, Instant>>,
    /// kOps' `retransmit`: max(3, seeds/2), its `GossipNodes` and `RetransmitMult`.
    retransmit: Mutex<u32>,
}

impl Memberlist {
    /// Binds TCP and UDP on `listen` through `transport`; `advertise` is the address others
    /// reach it at (its port the one bound).
    pub(crate) async fn bind(
        transport: Arc<dyn Transport>,
        listen: SocketAddr,
        advertise: IpAddr,
        store: Arc<Store>,
        conn_limit: usize,
    ) -> Result<Arc<Self>> {
        let listener = transport
            .listen(listen)
            .await
            .with_context(|| format!("listening for memberlist peers on `{listen}` (TCP)"))?;
        let port = listener.local_addr().port();
        let packets = transport
            .bind_packets(SocketAddr::new(listen.ip(), port))
            .await
            .with_context(|| format!("listening for memberlist peers on `{listen}` (UDP)"))?;
        Ok(Arc::new(Self {
            table: Mutex::new(Table::new(
                &random_name()?,
                SocketAddr::new(advertise, port),
            )),
            user: Mutex::new(Queue::default()),
            store,
            packets,
            listener,
            dialer: Dialer::new(transport),
            waiters: Mutex::new(BTreeMap::new()),
            slots: Arc::new(Semaphore::new(conn_limit)),
            failed: Mutex::new(BTreeMap::new()),
            retransmit: Mutex::new(3),
        }))
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.listener.local_addr().port()
    }

    fn table<R>(&self, change: impl FnOnce(&mut Table) -> R) -> R {
        let (out, members) = {
            let mut table = self
                .table
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let out = change(&mut table);
            (out, table.members())
        };
        self.store.set_peers(Protocol::Memberlist, members);
        out
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs until `stop` says so, then leaves (waiting a bounded time for the leave to go out).
    pub(crate) async fn run(
        self: Arc<Self>,
        seeds: watch::Receiver<Vec<SocketAddr>>,
        mut stop: watch::Receiver<bool>,
    ) {
        let work = async {
            tokio::join!(
                self.accept(),
                self.receive(),
                self.probe_loop(),
                self.gossip_loop(),
                self.push_pull_loop(),
                self.seed_loop(seeds),
                self.publish_loop(),
            )
        };
        tokio::select! {
            _ = work => {}
            _ = stop.wait_for(|stopped| *stopped) => {}
        }
        // The loops are gone; the leave is gossiped by hand until it went out or the wait ends.
        self.leave().await;
    }

    /// Whether `name` is a live, verified member (tests look inside).
    #[cfg(test)]
    pub(crate) fn members(&self) -> Vec<String> {
        self.table(|t| t.live_names())
    }

    #[cfg(test)]
    pub(crate) fn name(&self) -> String {
        self.table(|t| t.name().to_owned())
    }

    // --- UDP -------------------------------------------------------------------------------

    async fn receive(&self) {
        let mut buffer = vec![0u8; 65_536];
        loop {
            let Ok((len, from)) = self.packets.recv(&mut buffer).await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let messages = match messages_of_packet(&buffer[..len]) {
                Ok(messages) => messages,
                Err(err) => {
                    tracing::trace!("memberlist: a packet from `{from}` skipped: {err:#}");
                    continue;
                }
            };
            for message in messages {
                if let Err(err) = self.handle_packet(&message, from) {
                    tracing::trace!("memberlist: a message from `{from}` skipped: {err:#}");
                }
            }
        }
    }

    fn send(&self, messages: &[Vec<u8>], to: SocketAddr) {
        if let Ok(bytes) = packet(messages) {
            self.packets.send(&bytes, to);
        }
    }

    fn send_one(&self, kind: MessageType, body: &impl serde::Serialize, to: SocketAddr) {
        if let Ok(message) = encode(kind, body) {
            self.send(&[message], to);
        }
    }

    fn handle_packet(&self, message: &[u8], from: SocketAddr) -> Result<()> {
        let (kind, mut body) = message.split_first().context("an empty message")?;
        let now = Instant::now();
        match MessageType::of(*kind) {
            Some(MessageType::Ping) => self.answer_ping(&decode(&mut body)?, from),
            Some(MessageType::IndirectPing) => self.relay(decode(&mut body)?, from, now),
            Some(MessageType::AckResp) => self.acked(&decode(&mut body)?),
            Some(MessageType::NackResp) => self.nacked(&decode::<NackResp>(&mut body)?),
            Some(MessageType::Suspect) => {
                let accusation: Accusation = decode(&mut body)?;
                self.table(|t| t.suspect(&accusation, now));
            }
            Some(MessageType::Alive) => {
                let alive: Alive = decode(&mut body)?;
                self.table(|t| t.alive(&alive, now));
            }
            Some(MessageType::Dead) => {
                let accusation: Accusation = decode(&mut body)?;
                self.table(|t| t.dead(&accusation, now));
            }
            Some(MessageType::User) => self.take_user(body, &from.to_string()),
            _ => {}
        }
        Ok(())
    }

    fn answer_ping(&self, ping: &Ping, from: SocketAddr) {
        let me = self.table(|t| t.name().to_owned());
        if !ping.node.is_empty() && ping.node != me {
            return;
        }
        let to = socket_addr(&ping.source_addr, ping.source_port).unwrap_or(from);
        let ack = AckResp {
            seq_no: ping.seq_no,
            payload: ByteBuf::new(),
        };
        self.send_one(MessageType::AckResp, &ack, to);
    }

    /// Pings the target for another member; its ack is passed on, or a nack sent after the
    /// probe timeout when asked for (memberlist's `handleIndirectPing`).
    fn relay(&self, request: IndirectPing, from: SocketAddr, now: Instant) {
        let Some(target) = socket_addr(&request.target, request.port) else {
            return;
        };
        let to = socket_addr(&request.source_addr, request.source_port).unwrap_or(from);
        let seq = {
            let mut waiters = Self::lock(&self.waiters);
            let relays = waiters
                .values()
                .filter(|w| matches!(w, Waiter::Relay { .. }))
                .count();
            if relays >= MAX_RELAYS {
                return;
            }
            let seq = fresh_seq(&waiters);
            waiters.insert(
                seq,
                Waiter::Relay {
                    to,
                    seq: request.seq_no,
                    nack: request.nack,
                    until: now + PROBE_TIMEOUT,
                },
            );
            seq
        };
        let ping = self.ping_for(seq, &request.node);
        self.send_one(MessageType::Ping, &ping, target);
    }

    fn ping_for(&self, seq: u32, node: &str) -> Ping {
        let (name, addr) = self.table(|t| (t.name().to_owned(), t.addr()));
        Ping {
            seq_no: seq,
            node: node.to_owned(),
            source_addr: ByteBuf::from(ip_bytes(addr.ip())),
            source_port: addr.port(),
            source_node: name,
        }
    }

    fn acked(&self, ack: &AckResp) {
        let waiter = Self::lock(&self.waiters).remove(&ack.seq_no);
        match waiter {
            Some(Waiter::Probe(replies, _)) => {
                let _ = replies.send(true);
            }
            Some(Waiter::Verify(name, _)) => self.table(|t| t.acked(&name)),
            Some(Waiter::Relay { to, seq, .. }) => {
                let ack = AckResp {
                    seq_no: seq,
                    payload: ByteBuf::new(),
                };
                self.send_one(MessageType::AckResp, &ack, to);
            }
            None => {}
        }
    }

    fn nacked(&self, nack: &NackResp) {
        if let Some(Waiter::Probe(replies, _)) = Self::lock(&self.waiters).get(&nack.seq_no) {
            let _ = replies.send(false);
        }
    }

    // --- kOps' records ---------------------------------------------------------------------

    /// A user message: kOps' `Part{"dns", KVState}`, merged; what was new rides on the next
    /// packets (never a connection to every member).
    fn take_user(&self, user: &[u8], from: &str) {
        let Ok((key, data)) = decode_part(user) else {
            tracing::trace!("memberlist: a user message skipped");
            return;
        };
        if key != DNS {
            return;
        }
        let Some(delta) = self.merge(&data, from) else {
            return;
        };
        let part = encode_part(DNS, &delta.encode());
        if part.len() <= MAX_PACKET_PART {
            let mut message = vec![MessageType::User as u8];
            message.extend(part);
            Self::lock(&self.user).push(message, None);
        }
    }

    fn merge(&self, kv_state: &[u8], from: &str) -> Option<KvState> {
        let state = match KvState::decode(kv_state) {
            Ok(state) => state,
            Err(err) => {
                tracing::debug!("memberlist: a `dns` state from `{from}` skipped: {err:#}");
                return None;
            }
        };
        let delta = self.store.merge(Protocol::Memberlist, from, &state);
        (!delta.records.is_empty()).then_some(delta)
    }

    /// This node's records, whenever they change (kOps' `UpdateValues`): on the next packets,
    /// or over TCP to every member when too large for one.
    async fn publish_loop(&self) {
        let mut published = self.store.publications();
        while published.changed().await.is_ok() {
            let part = encode_part(DNS, &self.store.state(Protocol::Memberlist).encode());
            if part.len() <= MAX_PACKET_PART {
                let mut message = vec![MessageType::User as u8];
                message.extend(part);
                Self::lock(&self.user).push(message, Some("own records".into()));
                continue;
            }
            let Ok(message) = user_message(&part) else {
                continue;
            };
            let targets = self.table(|t| t.live_addresses());
            join_all(targets.into_iter().map(|to| self.send_stream(to, &message))).await;
        }
    }

    async fn send_stream(&self, to: SocketAddr, message: &[u8]) {
        let sent = async {
            let mut stream = self.dialer.connect(to, TCP_TIMEOUT).await?;
            tokio::time::timeout(TCP_TIMEOUT, async {
                stream.write_all(message).await?;
                stream.shutdown().await
            })
            .await
            .map_err(|_| anyhow::anyhow!("no answer in time"))??;
            anyhow::Ok(())
        };
        if let Err(err) = sent.await {
            tracing::debug!("memberlist: `{to}` did not take a message: {err:#}");
        }
    }

    // --- TCP -------------------------------------------------------------------------------

    /// Accepts streams, each served by a task of its own (ended with the member), at most
    /// `GOSSIP_DNS_CONN_LIMIT` at once.
    async fn accept(self: &Arc<Self>) {
        serve_accepted(
            &*self.listener,
            &self.slots,
            "memberlist",
            |stream, from, slot| {
                let member = self.clone();
                async move {
                    let _slot = slot;
                    let _ =
                        tokio::time::timeout(TCP_TIMEOUT * 2, member.serve_stream(stream, from))
                            .await;
                }
            },
        )
        .await;
    }

    /// One TCP stream: a push/pull (answered with ours), a user message, or a ping (memberlist's
    /// TCP fallback, answered with an ack).
    async fn serve_stream(&self, mut stream: super::transport::BoxStream, from: SocketAddr) {
        let result = async {
            let message = read_message(&mut stream).await?;
            let (kind, body) = message.split_first().context("an empty stream")?;
            match MessageType::of(*kind) {
                Some(MessageType::PushPull) => {
                    let theirs = PushPull::decode(body)?;
                    let reply = stream_of(&self.push_pull_message(false))?;
                    tokio::time::timeout(TCP_TIMEOUT, stream.write_all(&reply))
                        .await
                        .context("answering a push/pull in time")??;
                    self.take_push_pull(&theirs, &from.to_string());
                }
                Some(MessageType::User) => self.take_user(user_bytes(body)?, &from.to_string()),
                Some(MessageType::Ping) => {
                    let ping: Ping = decode(&mut &body[..])?;
                    let me = self.table(|t| t.name().to_owned());
                    if ping.node.is_empty() || ping.node == me {
                        let ack = AckResp {
                            seq_no: ping.seq_no,
                            payload: ByteBuf::new(),
                        };
                        let reply = compressed(&encode(MessageType::AckResp, &ack)?)?;
                        tokio::time::timeout(TCP_TIMEOUT, stream.write_all(&reply))
                            .await
                            .context("answering a ping in time")??;
                    }
                }
                other => bail!("a memberlist stream of type {other:?}"),
            }
            anyhow::Ok(())
        };
        if let Err(err) = result.await {
            tracing::debug!("memberlist: stream from `{from}`: {err:#}");
        }
    }

    fn push_pull_message(&self, join: bool) -> PushPull {
        PushPull {
            join,
            nodes: self.table(|t| t.push_nodes()),
            state: FullState {
                parts: vec![(
                    DNS.to_owned(),
                    self.store.state(Protocol::Memberlist).encode(),
                )],
            },
        }
    }

    fn take_push_pull(&self, theirs: &PushPull, from: &str) {
        let now = Instant::now();
        self.table(|t| t.merge(&theirs.nodes, now));
        for (key, data) in &theirs.state.parts {
            if key == DNS {
                self.merge(data, from);
            }
        }
    }

    /// A push/pull with `to` (a join when `join`).
    async fn push_pull(&self, to: SocketAddr, join: bool) -> Result<()> {
        let request = stream_of(&self.push_pull_message(join))?;
        let mut connection = self.dialer.connect(to, TCP_TIMEOUT).await?;
        tokio::time::timeout(TCP_TIMEOUT, connection.write_all(&request))
            .await
            .context("no answer in time")??;
        let reply = read_message(&mut connection).await?;
        match reply.split_first() {
            Some((6, body)) => {
                self.take_push_pull(&PushPull::decode(body)?, &to.to_string());
                Ok(())
            }
            _ => bail!("an answer that is not a push/pull"),
        }
    }

    async fn push_pull_loop(&self) {
        let stagger = PUSH_PULL_INTERVAL.mul_f64(fastrand::f64());
        tokio::time::sleep(stagger).await;
        loop {
            let nodes = self.table(|t| t.estimated_nodes());
            tokio::time::sleep(push_pull_scale(PUSH_PULL_INTERVAL, nodes)).await;
            let me = self.table(|t| t.name().to_owned());
            let Some(node) = self.table(|t| t.random_alive(1, &[&me]).pop()) else {
                continue;
            };
            if let Err(err) = self.push_pull(node.addr, false).await {
                tracing::debug!("memberlist: push/pull with `{}`: {err:#}", node.addr);
            }
        }
    }

    // --- probing ---------------------------------------------------------------------------

    async fn probe_loop(&self) {
        let stagger = PROBE_INTERVAL.mul_f64(fastrand::f64());
        tokio::time::sleep(stagger).await;
        let mut ticks = tokio::time::interval(PROBE_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let target = self.table(|t| t.next_probe(Instant::now()));
            if let Some(node) = target {
                self.probe(node).await;
            }
        }
    }

    /// One probe (memberlist's `probeNode`): a ping (with a suspect message when it is
    /// suspect), then indirect pings through up to three others and a ping over TCP, until
    /// the probe interval (scaled by health) ends; unanswered, it is suspect.
    async fn probe(&self, node: Node) {
        let started = Instant::now();
        let deadline = started + self.table(|t| t.scale(PROBE_INTERVAL));
        let (replies, mut answers) = mpsc::unbounded_channel();
        let seq = {
            let mut waiters = Self::lock(&self.waiters);
            let seq = fresh_seq(&waiters);
            waiters.insert(seq, Waiter::Probe(replies, deadline));
            seq
        };
        let ping = self.ping_for(seq, &node.name);
        let mut messages = Vec::new();
        messages.extend(encode(MessageType::Ping, &ping));
        if node.state == State::Suspect {
            let me = self.table(|t| t.name().to_owned());
            messages.extend(encode(
                MessageType::Suspect,
                &Accusation {
                    incarnation: node.incarnation,
                    node: node.name.clone(),
                    from: me,
                },
            ));
        }
        self.send(&messages, node.addr);
        let direct = started + PROBE_TIMEOUT;
        if wait_for_ack(&mut answers, direct.min(deadline), &mut 0).await {
            self.table(Table::probe_answered);
            return;
        }
        let (expected_nacks, answered, nacks) =
            self.indirect(&node, &ping, deadline, &mut answers).await;
        Self::lock(&self.waiters).remove(&seq);
        if answered {
            self.table(Table::probe_answered);
            return;
        }
        let now = Instant::now();
        self.table(|t| t.probe_failed(&node, expected_nacks, nacks, now));
    }

    /// The indirect part of a probe: pings through others and over TCP until `deadline`.
    /// Returns the nacks expected, whether anyone answered, and the nacks that came.
    async fn indirect(
        &self,
        node: &Node,
        ping: &Ping,
        deadline: Instant,
        answers: &mut mpsc::UnboundedReceiver<bool>,
    ) -> (usize, bool, usize) {
        let me = self.table(|t| t.name().to_owned());
        let helpers = self.table(|t| t.random_alive(INDIRECT_CHECKS, &[&me, &node.name]));
        let mut expected = 0;
        for helper in &helpers {
            let nack = helper.pmax() >= 4;
            expected += usize::from(nack);
            let request = IndirectPing {
                seq_no: ping.seq_no,
                target: ByteBuf::from(ip_bytes(node.addr.ip())),
                port: node.addr.port(),
                node: node.name.clone(),
                nack,
                source_addr: ping.source_addr.clone(),
                source_port: ping.source_port,
                source_node: ping.source_node.clone(),
            };
            self.send_one(MessageType::IndirectPing, &request, helper.addr);
        }
        let mut nacks = 0;
        let tcp = async { node.pmax() >= 3 && self.ping_over_tcp(node.addr, ping, deadline).await };
        let (acked, contacted) = tokio::join!(wait_for_ack(answers, deadline, &mut nacks), tcp);
        if !acked && contacted {
            tracing::warn!(
                "memberlist: `{}` answered over TCP but not over UDP: the network may drop \
                 datagrams",
                node.addr
            );
        }
        (expected, acked || contacted, nacks)
    }

    /// memberlist's fallback: a ping over TCP, answered by an ack on the same stream.
    async fn ping_over_tcp(&self, to: SocketAddr, ping: &Ping, deadline: Instant) -> bool {
        let attempt = async {
            let request = compressed(&encode(MessageType::Ping, ping)?)?;
            let mut connection = self
                .dialer
                .connect(to, deadline.saturating_duration_since(Instant::now()))
                .await?;
            connection.write_all(&request).await?;
            let reply = read_message(&mut connection).await?;
            let (kind, mut body) = reply.split_first().context("an empty answer")?;
            let ack: AckResp = decode(&mut body)?;
            anyhow::Ok(*kind == MessageType::AckResp as u8 && ack.seq_no == ping.seq_no)
        };
        tokio::time::timeout_at(deadline, attempt)
            .await
            .is_ok_and(|r| r.unwrap_or(false))
    }

    // --- gossip ----------------------------------------------------------------------------

    async fn gossip_loop(&self) {
        let mut ticks = tokio::time::interval(GOSSIP_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.gossip_once(Instant::now());
        }
    }

    /// One gossip round: suspicions that ran out, the reaping, pings for the unverified, the
    /// waiters that ran out (nacks sent), and the waiting broadcasts to a few members.
    fn gossip_once(&self, now: Instant) {
        let verify = self.table(|t| {
            t.expire(now);
            t.reap(now);
            t.take_verification_pings(now)
        });
        for (name, addr) in verify {
            let seq = {
                let mut waiters = Self::lock(&self.waiters);
                let seq = fresh_seq(&waiters);
                waiters.insert(seq, Waiter::Verify(name.clone(), now + PROBE_INTERVAL));
                seq
            };
            // Our own alive message rides along: a member that learnt of us from others has
            // not always been told of us, and now it has, by us.
            let ping = self.ping_for(seq, &name);
            let alive = self.table(|t| t.alive_message());
            let messages: Vec<Vec<u8>> = [
                encode(MessageType::Ping, &ping),
                encode(MessageType::Alive, &alive),
            ]
            .into_iter()
            .flatten()
            .collect();
            self.send(&messages, addr);
        }
        self.expire_waiters(now);
        let retransmit = *Self::lock(&self.retransmit);
        let (targets, nodes, size) = self.table(|t| {
            (
                t.gossip_targets(retransmit as usize, now),
                t.estimated_nodes(),
                t.cluster_size(),
            )
        });
        let room = UDP_BUFFER_SIZE - 2;
        for to in targets {
            let mut messages = self.table(|t| {
                t.broadcasts
                    .take(COMPOUND_OVERHEAD, room, RETRANSMIT_MULT, nodes)
            });
            let used: usize = messages.iter().map(|m| m.len() + COMPOUND_OVERHEAD).sum();
            messages.extend(Self::lock(&self.user).take(
                COMPOUND_OVERHEAD,
                room.saturating_sub(used),
                retransmit,
                size,
            ));
            if messages.is_empty() {
                return;
            }
            for bundle in messages.chunks(255) {
                self.send(bundle, to);
            }
        }
    }

    fn expire_waiters(&self, now: Instant) {
        let expired: Vec<Waiter> = {
            let mut waiters = Self::lock(&self.waiters);
            let gone: Vec<u32> = waiters
                .iter()
                .filter(|(_, w)| w.until() <= now)
                .map(|(seq, _)| *seq)
                .collect();
            gone.iter().filter_map(|seq| waiters.remove(seq)).collect()
        };
        for waiter in expired {
            if let Waiter::Relay {
                to,
                seq,
                nack: true,
                ..
            } = waiter
            {
                self.send_one(MessageType::NackResp, &NackResp { seq_no: seq }, to);
            }
        }
    }

    // --- seeds -----------------------------------------------------------------------------

    /// Joins the seeds when they are given, rejoins failed peers every 10 s and seeds that are
    /// not members every 15 s (kOps' `Join`, `reconnect`, `refresh`).
    async fn seed_loop(&self, mut seeds: watch::Receiver<Vec<SocketAddr>>) {
        let mut reconnect = tokio::time::interval(RECONNECT_INTERVAL);
        let mut refresh = tokio::time::interval(REFRESH_INTERVAL);
        reconnect.tick().await;
        refresh.tick().await;
        let mut current = seeds.borrow_and_update().clone();
        self.join(&current, true).await;
        loop {
            tokio::select! {
                changed = seeds.changed() => {
                    if changed.is_err() {
                        std::future::pending::<()>().await;
                    }
                    current = seeds.borrow_and_update().clone();
                    self.join(&current, true).await;
                }
                _ = reconnect.tick() => self.reconnect().await,
                _ = refresh.tick() => self.join(&current, false).await,
            }
        }
    }

    /// Joins each of `seeds` that is not a member (all together); the ones that do not answer
    /// are failed peers, joined again every 10 s.
    async fn join(&self, seeds: &[SocketAddr], record_failures: bool) {
        *Self::lock(&self.retransmit) = u32::try_from((seeds.len() / 2).max(3)).unwrap_or(3);
        let me = self.table(|t| t.addr());
        let targets: Vec<SocketAddr> = seeds
            .iter()
            .copied()
            .filter(|s| *s != me && !self.table(|t| t.is_member_at(*s)))
            .collect();
        let results = join_all(targets.iter().map(|to| self.push_pull(*to, true))).await;
        let now = Instant::now();
        for (to, result) in targets.iter().zip(results) {
            match result {
                Ok(()) => {
                    Self::lock(&self.failed).remove(to);
                }
                Err(err) => {
                    tracing::debug!("memberlist: joining `{to}`: {err:#}");
                    if record_failures {
                        let mut failed = Self::lock(&self.failed);
                        if failed.len() < MAX_FAILED {
                            failed.entry(*to).or_insert(now);
                        }
                    }
                }
            }
        }
    }

    /// kOps' `reconnect`: the failed peers (seeds never joined, members that died or left in
    /// the last six hours) joined again.
    async fn reconnect(&self) {
        let now = Instant::now();
        let departed: Vec<SocketAddr> = self.table(|t| {
            t.push_nodes()
                .iter()
                .skip(1)
                .filter(|n| n.state >= State::Dead as u8)
                .filter_map(|n| socket_addr(&n.addr, n.port))
                .collect()
        });
        let targets: Vec<SocketAddr> = {
            let mut failed = Self::lock(&self.failed);
            for addr in departed {
                if failed.len() < MAX_FAILED {
                    failed.entry(addr).or_insert(now);
                }
            }
            failed.retain(|_, since| now.duration_since(*since) < RECONNECT_TIMEOUT);
            failed.keys().copied().collect()
        };
        let targets: Vec<SocketAddr> = targets
            .into_iter()
            .filter(|addr| !self.table(|t| t.is_member_at(*addr)))
            .collect();
        let results = join_all(targets.iter().map(|to| self.push_pull(*to, true))).await;
        let mut failed = Self::lock(&self.failed);
        for (to, result) in targets.iter().zip(results) {
            if result.is_ok() {
                failed.remove(to);
            }
        }
    }

    // --- leaving ---------------------------------------------------------------------------

    /// Leaves: a dead message of its own, gossiped until it went its rounds (memberlist's
    /// `Leave`), at most [`LEAVE_WAIT`]; members not yet verified (a seed joined a moment ago)
    /// are told once, directly.
    async fn leave(&self) {
        const TOKEN: u64 = u64::MAX;
        let (verified, unverified, message) = self.table(|t| {
            t.leave(TOKEN);
            let accusation = Accusation {
                incarnation: t.incarnation_now(),
                node: t.name().to_owned(),
                from: t.name().to_owned(),
            };
            (
                t.members(),
                t.unverified_addresses(),
                encode(MessageType::Dead, &accusation),
            )
        });
        if let Ok(message) = message {
            for to in unverified {
                self.send(std::slice::from_ref(&message), to);
            }
        }
        if verified == 0 {
            return;
        }
        let deadline = Instant::now() + LEAVE_WAIT;
        while Instant::now() < deadline {
            self.gossip_once(Instant::now());
            if self.table(|t| t.broadcasts.finished(TOKEN)) {
                tracing::debug!("memberlist: left");
                return;
            }
            tokio::time::sleep(GOSSIP_INTERVAL).await;
        }
        tracing::debug!("memberlist: the leave did not go out within {LEAVE_WAIT:?}");
    }
}

/// Waits until `deadline` for an ack among `answers` (nacks counted in `nacks`).
async fn wait_for_ack(
    answers: &mut mpsc::UnboundedReceiver<bool>,
    deadline: Instant,
    nacks: &mut usize,
) -> bool {
    loop {
        match tokio::time::timeout_at(deadline, answers.recv()).await {
            Ok(Some(true)) => return true,
            Ok(Some(false)) => *nacks += 1,
            Ok(None) | Err(_) => return false,
        }
    }
}

/// A random sequence number no waiter holds: random, so that nobody who cannot see our pings
/// can answer them.
fn fresh_seq(waiters: &BTreeMap<u32, Waiter>) -> u32 {
    loop {
        let seq = fastrand::u32(..);
        if !waiters.contains_key(&seq) {
            return seq;
        }
    }
}

fn stream_of(push_pull: &PushPull) -> Result<Vec<u8>> {
    compressed(&push_pull.encode()?)
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
mod tests;
