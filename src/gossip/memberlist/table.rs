//! memberlist's member table as kOps configures memberlist (`DefaultLANConfig`, probe every
//! second, 500 ms probe timeout), pure: members learnt from alive, suspect and dead messages and
//! push/pulls, the probe order, suspicion with independent confirmations (Lifeguard), the dead
//! declared and reaped, refutation of what is said of this member, local health (awareness),
//! and the broadcasts all this queues. Time is an argument.
//!
//! Beyond memberlist, trust is bounded: a member learnt from anyone but itself is *unverified*
//! until it answers a ping of ours; unverified members are pinged (a few times, one per address
//! a second), never probed, gossiped to, pushed to or told of, and reaped after
//! [`VERIFY_WINDOW`]; at most [`MAX_UNVERIFIED`] wait, at most [`NAMES_PER_ADDRESS`] live names
//! share an address, and the table holds at most [`MAX_MEMBERS`].

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_bytes::ByteBuf;
use tokio::time::Instant;

use super::queue::Queue;
use crate::gossip::wire::memberlist::{encode, Accusation, Alive, MessageType, PushNodeState, VSN};

/// memberlist's probe interval as kOps sets it.
pub(crate) const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// How long a direct ping waits for its ack (kOps).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// Other members asked to ping a member that did not answer (memberlist's `IndirectChecks`).
pub(crate) const INDIRECT_CHECKS: usize = 3;
/// memberlist's `SuspicionMult` and `SuspicionMaxTimeoutMult` (LAN).
const SUSPICION_MULT: u32 = 4;
const SUSPICION_MAX_TIMEOUT_MULT: u32 = 6;
/// memberlist's `RetransmitMult` (LAN) for its own messages.
pub(crate) const RETRANSMIT_MULT: u32 = 4;
/// How long the dead are still gossiped to, then reaped (memberlist's `GossipToTheDeadTime`).
pub(crate) const GOSSIP_TO_THE_DEAD: Duration = Duration::from_secs(30);
/// memberlist's `AwarenessMaxMultiplier` (LAN).
const AWARENESS_MAX: u32 = 8;
/// Members remembered at most.
pub(crate) const MAX_MEMBERS: usize = 4096;
/// Unverified members waiting at most.
pub(crate) const MAX_UNVERIFIED: usize = 64;
/// Live (alive or suspect) names one address may carry: a member and the one it restarted as.
pub(crate) const NAMES_PER_ADDRESS: usize = 2;
/// How long an unverified member has to answer a ping before it is forgotten.
pub(crate) const VERIFY_WINDOW: Duration = Duration::from_secs(10);
/// Pings an unverified member gets.
const VERIFY_PINGS: u32 = 3;

/// A member's state (memberlist's `NodeStateType`; the numbers are the wire's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum State {
    Alive = 0,
    Suspect = 1,
    Dead = 2,
    Left = 3,
}

impl State {
    fn of(byte: u8) -> Option<Self> {
        Some(match byte {
            0 => Self::Alive,
            1 => Self::Suspect,
            2 => Self::Dead,
            3 => Self::Left,
            _ => return None,
        })
    }

    pub(crate) fn is_live(self) -> bool {
        matches!(self, Self::Alive | Self::Suspect)
    }
}

/// Another member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    pub(crate) incarnation: u32,
    pub(crate) state: State,
    /// When its state last changed.
    pub(crate) changed: Instant,
    /// Its protocol versions (memberlist's `Vsn`).
    pub(crate) vsn: Vec<u8>,
    /// It answered a ping of ours.
    pub(crate) verified: bool,
    /// When it was learnt.
    pub(crate) learned: Instant,
    /// Verification pings sent, and the last one's time.
    pings: u32,
    pinged: Option<Instant>,
}

impl Node {
    /// The highest protocol version it speaks (nacks from 4, TCP pings from 3).
    pub(crate) fn pmax(&self) -> u8 {
        self.vsn.get(1).copied().unwrap_or(0)
    }
}

/// A suspicion of one member (memberlist's `suspicion`): its deadline moves closer with each
/// independent confirmation, from `max` down to `min`.
#[derive(Clone, Debug)]
struct Suspicion {
    from: BTreeSet<String>,
    k: u32,
    confirmations: u32,
    min: Duration,
    max: Duration,
    start: Instant,
    deadline: Instant,
}

impl Suspicion {
    fn new(from: &str, k: u32, min: Duration, max: Duration, now: Instant) -> Self {
        let timeout = if k < 1 { min } else { max };
        Self {
            from: BTreeSet::from([from.to_owned()]),
            k,
            confirmations: 0,
            min,
            max,
            start: now,
            deadline: now + timeout,
        }
    }

    /// Counts `from`'s confirmation: true when it was new (and is to be gossiped on).
    fn confirm(&mut self, from: &str) -> bool {
        if self.confirmations >= self.k
            || self.from.len() >= 64
            || !self.from.insert(from.to_owned())
        {
            return false;
        }
        self.confirmations += 1;
        let fraction = f64::from(self.confirmations + 1).ln() / f64::from(self.k + 1).ln();
        let raw =
            self.max.as_secs_f64() - fraction * (self.max.as_secs_f64() - self.min.as_secs_f64());
        let timeout = Duration::from_millis((1000.0 * raw).floor() as u64).max(self.min);
        self.deadline = self.start + timeout;
        true
    }
}

/// memberlist's suspicion timeout: `mult × max(1, log10(n)) × interval`.
pub(crate) fn suspicion_timeout(mult: u32, nodes: usize, interval: Duration) -> Duration {
    let scale = (nodes.max(1) as f64).log10().max(1.0);
    interval.mul_f64(f64::from(mult) * scale)
}

/// memberlist's push/pull interval for a cluster of `nodes` (scaled above 32 members).
pub(crate) fn push_pull_scale(interval: Duration, nodes: usize) -> Duration {
    const THRESHOLD: f64 = 32.0;
    if nodes as f64 <= THRESHOLD {
        return interval;
    }
    let multiplier = ((nodes as f64).log2() - THRESHOLD.log2()).ceil() + 1.0;
    interval.mul_f64(multiplier)
}

/// What an alive message did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Learned {
    /// Nothing (old news, refused, or about this member).
    Nothing,
    /// A member not known before, unverified: ping it.
    New(String, SocketAddr),
    /// A known member updated.
    Updated,
}

/// The table.
pub(crate) struct Table {
    name: String,
    addr: SocketAddr,
    incarnation: u32,
    nodes: BTreeMap<String, Node>,
    order: Vec<String>,
    index: usize,
    suspicions: BTreeMap<String, Suspicion>,
    /// memberlist's own messages waiting to be gossiped.
    pub(crate) broadcasts: Queue,
    awareness: u32,
    left: bool,
    /// Addresses pinged for verification, and when.
    verify_pinged: BTreeMap<SocketAddr, Instant>,
}

impl Table {
    /// This member, `name` at `addr`, alive at incarnation 1.
    pub(crate) fn new(name: &str, addr: SocketAddr) -> Self {
        Self {
            name: name.to_owned(),
            addr,
            incarnation: 1,
            nodes: BTreeMap::new(),
            order: Vec::new(),
            index: 0,
            suspicions: BTreeMap::new(),
            broadcasts: Queue::default(),
            awareness: 0,
            left: false,
            verify_pinged: BTreeMap::new(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    #[cfg(test)]
    pub(crate) fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
    }

    #[cfg(test)]
    pub(crate) fn debug(&self) -> Vec<(String, State, bool, u32)> {
        self.nodes
            .values()
            .map(|n| (n.name.clone(), n.state, n.verified, n.pings))
            .collect()
    }

    /// Members held, this one included (verified or not, any state).
    #[cfg(test)]
    pub(crate) fn nodes_held(&self) -> usize {
        self.nodes.len() + 1
    }

    /// This member's alive message.
    pub(crate) fn alive_message(&self) -> Alive {
        Alive {
            incarnation: self.incarnation,
            node: self.name.clone(),
            addr: ByteBuf::from(ip_bytes(self.addr.ip())),
            port: self.addr.port(),
            meta: ByteBuf::new(),
            vsn: ByteBuf::from(VSN.to_vec()),
        }
    }

    /// Verified members alive or suspect: this member's peers.
    pub(crate) fn members(&self) -> usize {
        self.nodes
            .values()
            .filter(|n| n.verified && n.state.is_live())
            .count()
    }

    /// Names of the verified live members.
    #[cfg(test)]
    pub(crate) fn live_names(&self) -> Vec<String> {
        self.nodes
            .values()
            .filter(|n| n.verified && n.state.is_live())
            .map(|n| n.name.clone())
            .collect()
    }

    /// memberlist's estimate of the cluster (`estNumNodes`): the verified members the table
    /// holds, the dead not yet reaped among them, and this member.
    pub(crate) fn estimated_nodes(&self) -> usize {
        self.nodes.values().filter(|n| n.verified).count() + 1
    }

    /// memberlist's `NumMembers`: the live, this member included.
    pub(crate) fn cluster_size(&self) -> usize {
        self.members() + 1
    }

    /// Whether a verified live member is at `addr`.
    pub(crate) fn is_member_at(&self, addr: SocketAddr) -> bool {
        self.nodes
            .values()
            .any(|n| n.verified && n.state.is_live() && n.addr == addr)
    }

    /// Scales a probe interval by this member's health (Lifeguard's awareness).
    pub(crate) fn scale(&self, timeout: Duration) -> Duration {
        timeout * (self.awareness + 1)
    }

    fn awareness(&mut self, delta: i32) {
        self.awareness = self
            .awareness
            .saturating_add_signed(delta)
            .min(AWARENESS_MAX - 1);
    }

    /// A member's alive message (gossip, push/pull, or its own).
    pub(crate) fn alive(&mut self, alive: &Alive, now: Instant) -> Learned {
        let Some(addr) = socket_addr(&alive.addr, alive.port) else {
            return Learned::Nothing;
        };
        if alive.node == self.name {
            self.alive_of_self(alive, addr);
            return Learned::Nothing;
        }
        if alive.vsn.len() < 6
            || alive.vsn[0] == 0
            || alive.vsn[1] == 0
            || alive.vsn[0] > alive.vsn[1]
        {
            return Learned::Nothing;
        }
        let new = match self.nodes.get(&alive.node) {
            None => {
                if !self.has_room_for(addr) {
                    return Learned::Nothing;
                }
                self.insert(&alive.node, addr, now);
                true
            }
            Some(node) if node.addr != addr && node.state != State::Left => {
                return Learned::Nothing
            }
            Some(node) if node.addr == addr && alive.incarnation <= node.incarnation => {
                return Learned::Nothing;
            }
            Some(_) => false,
        };
        self.suspicions.remove(&alive.node);
        let Some(node) = self.nodes.get_mut(&alive.node) else {
            return Learned::Nothing;
        };
        node.incarnation = alive.incarnation;
        node.addr = addr;
        node.vsn = alive.vsn.to_vec();
        if node.state != State::Alive {
            node.state = State::Alive;
            node.changed = now;
        }
        if node.verified {
            let message = encode(MessageType::Alive, alive);
            self.queue(message, &alive.node);
        }
        if new {
            Learned::New(alive.node.clone(), addr)
        } else {
            Learned::Updated
        }
    }

    fn alive_of_self(&mut self, alive: &Alive, addr: SocketAddr) {
        if self.left || addr != self.addr || alive.incarnation < self.incarnation {
            return;
        }
        if alive.incarnation == self.incarnation
            && alive.vsn.as_slice() == VSN
            && alive.meta.is_empty()
        {
            return;
        }
        self.refute(alive.incarnation);
    }

    /// Whether a new member at `addr` fits the table's bounds.
    fn has_room_for(&self, addr: SocketAddr) -> bool {
        let unverified = self.nodes.values().filter(|n| !n.verified).count();
        let at_addr = self
            .nodes
            .values()
            .filter(|n| n.addr == addr && n.state.is_live())
            .count();
        unverified < MAX_UNVERIFIED && self.nodes.len() < MAX_MEMBERS && at_addr < NAMES_PER_ADDRESS
    }

    fn insert(&mut self, name: &str, addr: SocketAddr, now: Instant) {
        self.nodes.insert(
            name.to_owned(),
            Node {
                name: name.to_owned(),
                addr,
                incarnation: 0,
                state: State::Dead,
                changed: now,
                vsn: Vec::new(),
                verified: false,
                learned: now,
                pings: 0,
                pinged: None,
            },
        );
        // At a random place in the probe order, so that a new member is not always last.
        let at = fastrand::usize(..=self.order.len());
        self.order.insert(at, name.to_owned());
    }

    fn queue(&mut self, message: anyhow::Result<Vec<u8>>, about: &str) {
        if let Ok(message) = message {
            self.broadcasts.push(message, Some(about.to_owned()));
        }
    }

    /// Someone says this member is suspect or dead (or alive with other facts): a newer
    /// incarnation says it is alive.
    fn refute(&mut self, accused: u32) {
        self.incarnation = self.incarnation.max(accused).saturating_add(1);
        self.awareness(1);
        let message = encode(MessageType::Alive, &self.alive_message());
        let name = self.name.clone();
        self.queue(message, &name);
        tracing::info!(
            "memberlist: another member said this one was suspect or dead; alive again at \
             incarnation {}",
            self.incarnation
        );
    }

    /// A suspect message: a new suspicion (gossiped on), or a confirmation of one.
    pub(crate) fn suspect(&mut self, accusation: &Accusation, now: Instant) {
        if accusation.node == self.name {
            if accusation.incarnation >= self.incarnation && !self.left {
                self.refute(accusation.incarnation);
            }
            return;
        }
        let Some(node) = self.nodes.get(&accusation.node) else {
            return;
        };
        if accusation.incarnation < node.incarnation || !node.verified {
            return;
        }
        if let Some(suspicion) = self.suspicions.get_mut(&accusation.node) {
            if suspicion.confirm(&accusation.from) {
                let message = encode(MessageType::Suspect, accusation);
                self.queue(message, &accusation.node);
            }
            return;
        }
        if node.state != State::Alive {
            return;
        }
        let message = encode(MessageType::Suspect, accusation);
        self.queue(message, &accusation.node);
        let n = self.estimated_nodes();
        let k = if n.saturating_sub(2) < (SUSPICION_MULT - 2) as usize {
            0
        } else {
            SUSPICION_MULT - 2
        };
        let min = suspicion_timeout(SUSPICION_MULT, n, PROBE_INTERVAL);
        let max = min * SUSPICION_MAX_TIMEOUT_MULT;
        if let Some(node) = self.nodes.get_mut(&accusation.node) {
            node.incarnation = accusation.incarnation;
            node.state = State::Suspect;
            node.changed = now;
        }
        self.suspicions.insert(
            accusation.node.clone(),
            Suspicion::new(&accusation.from, k, min, max, now),
        );
    }

    /// A dead message: the member is dead (or, said by itself, has left); gossiped on.
    pub(crate) fn dead(&mut self, accusation: &Accusation, now: Instant) {
        if accusation.node == self.name {
            if !self.left && accusation.incarnation >= self.incarnation {
                self.refute(accusation.incarnation);
            }
            return;
        }
        let Some(node) = self.nodes.get_mut(&accusation.node) else {
            return;
        };
        if accusation.incarnation < node.incarnation {
            return;
        }
        self.suspicions.remove(&accusation.node);
        if matches!(node.state, State::Dead | State::Left) {
            return;
        }
        node.incarnation = accusation.incarnation;
        node.state = if accusation.node == accusation.from {
            State::Left
        } else {
            State::Dead
        };
        node.changed = now;
        let verified = node.verified;
        if verified {
            let message = encode(MessageType::Dead, accusation);
            self.queue(message, &accusation.node);
            tracing::info!(
                "memberlist: `{}` {}",
                accusation.node.escape_debug(),
                if accusation.node == accusation.from {
                    "left"
                } else {
                    "is dead"
                }
            );
        }
    }

    /// A push/pull's members, merged as memberlist merges them (the dead only suspected).
    /// Returns the members learnt that are to be pinged.
    pub(crate) fn merge(
        &mut self,
        nodes: &[PushNodeState],
        now: Instant,
    ) -> Vec<(String, SocketAddr)> {
        let mut new = Vec::new();
        for remote in nodes {
            match State::of(remote.state) {
                Some(State::Alive) => {
                    let alive = Alive {
                        incarnation: remote.incarnation,
                        node: remote.name.clone(),
                        addr: remote.addr.clone(),
                        port: remote.port,
                        meta: remote.meta.clone(),
                        vsn: remote.vsn.clone(),
                    };
                    if let Learned::New(name, addr) = self.alive(&alive, now) {
                        new.push((name, addr));
                    }
                }
                Some(State::Left) => self.dead(
                    &Accusation {
                        incarnation: remote.incarnation,
                        node: remote.name.clone(),
                        from: remote.name.clone(),
                    },
                    now,
                ),
                Some(State::Dead | State::Suspect) => self.suspect(
                    &Accusation {
                        incarnation: remote.incarnation,
                        node: remote.name.clone(),
                        from: self.name.clone(),
                    },
                    now,
                ),
                None => {}
            }
        }
        new
    }

    /// `name` answered a ping of ours: verified, and now told of.
    pub(crate) fn acked(&mut self, name: &str) {
        let Some(node) = self.nodes.get_mut(name) else {
            return;
        };
        if node.verified {
            return;
        }
        node.verified = true;
        let alive = Alive {
            incarnation: node.incarnation,
            node: node.name.clone(),
            addr: ByteBuf::from(ip_bytes(node.addr.ip())),
            port: node.addr.port(),
            meta: ByteBuf::new(),
            vsn: ByteBuf::from(node.vsn.clone()),
        };
        if node.state == State::Alive {
            let message = encode(MessageType::Alive, &alive);
            self.queue(message, name);
        }
        tracing::debug!(
            "memberlist: `{}` at `{}` answered",
            name.escape_debug(),
            alive.port
        );
    }

    /// The next member to probe (memberlist's round robin over a shuffled list, skipping this
    /// member, the dead and the unverified; the dead past [`GOSSIP_TO_THE_DEAD`] are reaped at
    /// each wrap).
    pub(crate) fn next_probe(&mut self, now: Instant) -> Option<Node> {
        // Twice round at most: the rest of this round and a whole shuffled one.
        let mut checked = 0;
        while checked <= 2 * self.order.len() + 1 {
            if self.index >= self.order.len() {
                self.reset(now);
                self.index = 0;
                checked += 1;
                if self.order.is_empty() {
                    return None;
                }
                continue;
            }
            let name = self.order[self.index].clone();
            self.index += 1;
            checked += 1;
            if let Some(node) = self.nodes.get(&name) {
                if node.verified && node.state.is_live() {
                    return Some(node.clone());
                }
            }
        }
        None
    }

    /// memberlist's `resetNodes`: the dead reaped, the order shuffled.
    fn reset(&mut self, now: Instant) {
        self.reap(now);
        fastrand::shuffle(&mut self.order);
    }

    /// Forgets the dead and left past [`GOSSIP_TO_THE_DEAD`] and the unverified past
    /// [`VERIFY_WINDOW`]; returns how many went.
    pub(crate) fn reap(&mut self, now: Instant) -> usize {
        let before = self.nodes.len();
        self.nodes.retain(|_, node| {
            let dead_long =
                !node.state.is_live() && now.duration_since(node.changed) > GOSSIP_TO_THE_DEAD;
            let unanswered = !node.verified && now.duration_since(node.learned) > VERIFY_WINDOW;
            !(dead_long || unanswered)
        });
        let nodes = &self.nodes;
        self.order.retain(|name| nodes.contains_key(name));
        self.suspicions.retain(|name, _| nodes.contains_key(name));
        self.verify_pinged
            .retain(|_, at| now.duration_since(*at) < Duration::from_secs(1));
        before - self.nodes.len()
    }

    /// Unverified members to ping now: each at most [`VERIFY_PINGS`] times, a second apart,
    /// one per address a second.
    pub(crate) fn take_verification_pings(&mut self, now: Instant) -> Vec<(String, SocketAddr)> {
        let mut out = Vec::new();
        let pinged = &mut self.verify_pinged;
        for node in self.nodes.values_mut() {
            if node.verified || !node.state.is_live() || node.pings >= VERIFY_PINGS {
                continue;
            }
            if node
                .pinged
                .is_some_and(|at| now.duration_since(at) < Duration::from_secs(1))
            {
                continue;
            }
            if pinged
                .get(&node.addr)
                .is_some_and(|at| now.duration_since(*at) < Duration::from_secs(1))
            {
                continue;
            }
            pinged.insert(node.addr, now);
            node.pings += 1;
            node.pinged = Some(now);
            out.push((node.name.clone(), node.addr));
        }
        out
    }

    /// A probe of `node` went unanswered (no ack direct, indirect or over TCP): it is suspect,
    /// and this member's health is judged by the nacks it got.
    pub(crate) fn probe_failed(
        &mut self,
        node: &Node,
        expected_nacks: usize,
        nacks: usize,
        now: Instant,
    ) {
        let delta = if expected_nacks > 0 {
            expected_nacks.saturating_sub(nacks)
        } else {
            1
        };
        self.awareness(i32::try_from(delta).unwrap_or(i32::MAX));
        tracing::debug!(
            "memberlist: `{}` did not answer a probe",
            node.name.escape_debug()
        );
        let accusation = Accusation {
            incarnation: node.incarnation,
            node: node.name.clone(),
            from: self.name.clone(),
        };
        self.suspect(&accusation, now);
    }

    /// A probe was answered: this member's health improves.
    pub(crate) fn probe_answered(&mut self) {
        self.awareness(-1);
    }

    /// Suspicions whose time ran out: those members are declared dead (and gossiped so).
    pub(crate) fn expire(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .suspicions
            .iter()
            .filter(|(_, s)| s.deadline <= now)
            .map(|(name, _)| name.clone())
            .collect();
        for name in expired {
            let Some(node) = self.nodes.get(&name) else {
                continue;
            };
            let accusation = Accusation {
                incarnation: node.incarnation,
                node: name.clone(),
                from: self.name.clone(),
            };
            self.dead(&accusation, now);
        }
    }

    /// The earliest suspicion deadline, if any.
    #[cfg(test)]
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.suspicions.values().map(|s| s.deadline).min()
    }

    /// Up to `k` random verified alive members other than those named in `except`, for
    /// indirect pings and push/pulls.
    pub(crate) fn random_alive(&self, k: usize, except: &[&str]) -> Vec<Node> {
        let mut candidates: Vec<&Node> = self
            .nodes
            .values()
            .filter(|n| n.verified && n.state == State::Alive && !except.contains(&n.name.as_str()))
            .collect();
        fastrand::shuffle(&mut candidates);
        candidates.into_iter().take(k).cloned().collect()
    }

    /// Up to `k` random verified members to gossip to: the live, and the dead for
    /// [`GOSSIP_TO_THE_DEAD`] (so they hear they are thought dead and can refute).
    pub(crate) fn gossip_targets(&self, k: usize, now: Instant) -> Vec<SocketAddr> {
        let mut candidates: Vec<SocketAddr> = self
            .nodes
            .values()
            .filter(|n| {
                n.verified
                    && match n.state {
                        State::Alive | State::Suspect => true,
                        State::Dead => now.duration_since(n.changed) <= GOSSIP_TO_THE_DEAD,
                        State::Left => false,
                    }
            })
            .map(|n| n.addr)
            .collect();
        fastrand::shuffle(&mut candidates);
        candidates.truncate(k);
        candidates
    }

    /// The incarnation this member is at.
    pub(crate) fn incarnation_now(&self) -> u32 {
        self.incarnation
    }

    /// The addresses of the live members not verified yet (each once).
    pub(crate) fn unverified_addresses(&self) -> Vec<SocketAddr> {
        let addresses: BTreeSet<SocketAddr> = self
            .nodes
            .values()
            .filter(|n| !n.verified && n.state.is_live())
            .map(|n| n.addr)
            .collect();
        addresses.into_iter().collect()
    }

    /// The addresses of the verified live members (for reliable user messages).
    pub(crate) fn live_addresses(&self) -> Vec<SocketAddr> {
        self.nodes
            .values()
            .filter(|n| n.verified && n.state == State::Alive)
            .map(|n| n.addr)
            .collect()
    }

    /// The members a push/pull tells of: this member first, then the verified ones.
    pub(crate) fn push_nodes(&self) -> Vec<PushNodeState> {
        let me = PushNodeState {
            name: self.name.clone(),
            addr: ByteBuf::from(ip_bytes(self.addr.ip())),
            port: self.addr.port(),
            meta: ByteBuf::new(),
            incarnation: self.incarnation,
            state: if self.left {
                State::Left as u8
            } else {
                State::Alive as u8
            },
            vsn: ByteBuf::from(VSN.to_vec()),
        };
        std::iter::once(me)
            .chain(
                self.nodes
                    .values()
                    .filter(|n| n.verified)
                    .map(|n| PushNodeState {
                        name: n.name.clone(),
                        addr: ByteBuf::from(ip_bytes(n.addr.ip())),
                        port: n.addr.port(),
                        meta: ByteBuf::new(),
                        incarnation: n.incarnation,
                        state: n.state as u8,
                        vsn: ByteBuf::from(n.vsn.clone()),
                    }),
            )
            .collect()
    }

    /// This member leaves: a dead message of its own (node and sender alike: "left"), queued
    /// and tracked with `token`.
    pub(crate) fn leave(&mut self, token: u64) {
        self.left = true;
        let accusation = Accusation {
            incarnation: self.incarnation,
            node: self.name.clone(),
            from: self.name.clone(),
        };
        if let Ok(message) = encode(MessageType::Dead, &accusation) {
            let name = self.name.clone();
            self.broadcasts
                .push_tracked(message, Some(name), Some(token));
        }
    }

    #[cfg(test)]
    pub(crate) fn has_left(&self) -> bool {
        self.left
    }
}

/// The bytes of an address as memberlist sends them (4 or 16).
pub(crate) fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

/// An address from memberlist's bytes and port; none for anything else or port 0.
pub(crate) fn socket_addr(bytes: &[u8], port: u16) -> Option<SocketAddr> {
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    (port != 0 && !ip.is_unspecified()).then(|| SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], 4000))
    }

    fn alive(name: &str, at: SocketAddr, incarnation: u32) -> Alive {
        Alive {
            incarnation,
            node: name.into(),
            addr: ByteBuf::from(ip_bytes(at.ip())),
            port: at.port(),
            meta: ByteBuf::new(),
            vsn: ByteBuf::from(VSN.to_vec()),
        }
    }

    fn accuse(node: &str, incarnation: u32, from: &str) -> Accusation {
        Accusation {
            incarnation,
            node: node.into(),
            from: from.into(),
        }
    }

    /// A table with `names` verified and alive at 10.0.0.2, .3, …
    fn table(names: &[&str], now: Instant) -> Table {
        let mut table = Table::new("me", addr(1));
        for (i, name) in names.iter().enumerate() {
            table.alive(&alive(name, addr(2 + i as u8), 1), now);
            table.acked(name);
        }
        table
    }

    #[test]
    fn a_learnt_member_is_pinged_until_it_answers_and_forgotten_if_it_never_does() {
        let now = Instant::now();
        let mut table = Table::new("me", addr(1));
        assert_eq!(
            table.alive(&alive("a", addr(2), 1), now),
            Learned::New("a".into(), addr(2))
        );
        assert_eq!(table.members(), 0, "unverified is no peer");
        assert!(table.push_nodes().len() == 1, "nor told of");
        assert!(table.next_probe(now).is_none(), "nor probed");
        assert!(table.broadcasts.len() == 0, "nor gossiped on");
        assert_eq!(table.take_verification_pings(now), [("a".into(), addr(2))]);
        assert!(
            table.take_verification_pings(now).is_empty(),
            "a second apart"
        );
        table.acked("a");
        assert_eq!(table.members(), 1);
        assert_eq!(
            table.broadcasts.len(),
            1,
            "its alive gossiped on once verified"
        );
        assert_eq!(table.next_probe(now).unwrap().name, "a");
        table.alive(&alive("b", addr(3), 1), now);
        for second in 1..=4 {
            let pinged = table
                .take_verification_pings(now + Duration::from_secs(second))
                .len();
            assert_eq!(pinged, usize::from(second <= 3), "second {second}");
        }
        assert_eq!(
            table.reap(now + VERIFY_WINDOW + Duration::from_millis(1)),
            1
        );
        assert!(table.node("b").is_none());
        assert!(table.node("a").is_some());
    }

    #[test]
    fn the_table_is_bounded_per_address_and_in_unverified_members() {
        let now = Instant::now();
        let mut table = Table::new("me", addr(1));
        for i in 0..4095u32 {
            table.alive(&alive(&format!("x{i}"), addr(9), 1), now);
        }
        assert_eq!(
            table.nodes.len(),
            NAMES_PER_ADDRESS,
            "one address, two live names"
        );
        for i in 0..200u32 {
            let at = SocketAddr::from(([10, 1, (i / 250) as u8, (i % 250) as u8], 4000));
            table.alive(&alive(&format!("y{i}"), at, 1), now);
        }
        assert_eq!(table.nodes.len(), MAX_UNVERIFIED);
        // Pinging them costs one datagram per address a second.
        let pinged = table.take_verification_pings(now);
        assert_eq!(pinged.iter().filter(|(_, a)| *a == addr(9)).count(), 1);
        table.reap(now + VERIFY_WINDOW + Duration::from_secs(1));
        assert!(table.nodes.is_empty(), "all reaped");
    }

    #[test]
    fn suspicion_times_out_into_death_faster_with_confirmations() {
        let now = Instant::now();
        let mut table = table(&["a", "b", "c", "d"], now);
        table.suspect(&accuse("a", 1, "me"), now);
        assert_eq!(table.node("a").unwrap().state, State::Suspect);
        // Five nodes: min 4 s (log10 5 < 1), max 24 s, two confirmations expected.
        assert_eq!(table.next_deadline(), Some(now + Duration::from_secs(24)));
        table.suspect(&accuse("a", 1, "b"), now);
        table.suspect(&accuse("a", 1, "b"), now);
        let one = table.next_deadline().unwrap() - now;
        assert!(
            one > Duration::from_secs(4) && one < Duration::from_secs(24),
            "{one:?}"
        );
        table.suspect(&accuse("a", 1, "c"), now);
        assert_eq!(table.next_deadline(), Some(now + Duration::from_secs(4)));
        table.expire(now + Duration::from_secs(3));
        assert_eq!(table.node("a").unwrap().state, State::Suspect);
        table.expire(now + Duration::from_secs(4));
        assert_eq!(table.node("a").unwrap().state, State::Dead);
        assert_eq!(table.members(), 3, "the dead leave the list at once");
        // Still gossiped to for 30 s, then reaped.
        assert!(table
            .gossip_targets(10, now + Duration::from_secs(5))
            .contains(&addr(2)));
        table.reap(now + Duration::from_secs(35));
        assert!(table.node("a").is_none());
    }

    #[test]
    fn a_small_cluster_expects_no_confirmations() {
        let now = Instant::now();
        let mut table = table(&["a"], now);
        table.suspect(&accuse("a", 1, "me"), now);
        assert_eq!(
            table.next_deadline(),
            Some(now + Duration::from_secs(4)),
            "min at once"
        );
    }

    #[test]
    fn an_alive_with_a_newer_incarnation_clears_a_suspicion() {
        let now = Instant::now();
        let mut table = table(&["a", "b", "c"], now);
        table.suspect(&accuse("a", 1, "b"), now);
        assert_eq!(
            table.alive(&alive("a", addr(2), 1), now),
            Learned::Nothing,
            "old news"
        );
        assert_eq!(table.alive(&alive("a", addr(2), 2), now), Learned::Updated);
        assert_eq!(table.node("a").unwrap().state, State::Alive);
        assert!(table.next_deadline().is_none());
        // Another address for a live member is a conflict, not a move.
        table.alive(&alive("a", addr(7), 9), now);
        assert_eq!(table.node("a").unwrap().addr, addr(2));
    }

    #[test]
    fn this_member_refutes_what_is_said_of_it() {
        let now = Instant::now();
        let mut table = table(&["a"], now);
        table.suspect(&accuse("me", 1, "a"), now);
        assert_eq!(table.incarnation_now(), 2);
        table.dead(&accuse("me", 5, "a"), now);
        assert_eq!(table.incarnation_now(), 6);
        assert_eq!(table.alive(&alive("me", addr(1), 6), now), Learned::Nothing);
        assert_eq!(table.incarnation_now(), 6, "its own alive is no rumour");
        table.alive(&alive("me", addr(1), 9), now);
        assert_eq!(table.incarnation_now(), 10, "someone else's is");
        assert!(
            table.scale(PROBE_INTERVAL) > PROBE_INTERVAL,
            "refuting costs health"
        );
    }

    #[test]
    fn a_dead_message_from_the_member_itself_means_it_left() {
        let now = Instant::now();
        let mut table = table(&["a", "b"], now);
        table.dead(&accuse("a", 1, "a"), now);
        assert_eq!(table.node("a").unwrap().state, State::Left);
        table.dead(&accuse("b", 0, "me"), now);
        assert_eq!(
            table.node("b").unwrap().state,
            State::Alive,
            "an older incarnation is ignored"
        );
        // A member that left may come back at another address.
        assert_eq!(table.alive(&alive("a", addr(8), 2), now), Learned::Updated);
        assert_eq!(table.node("a").unwrap().addr, addr(8));
    }

    #[test]
    fn a_push_pull_suspects_the_dead_it_names_and_learns_the_alive() {
        let now = Instant::now();
        let mut table = table(&["a", "b", "c"], now);
        let them = Table::new("z", addr(9));
        let mut nodes = them.push_nodes();
        nodes.push(PushNodeState {
            name: "a".into(),
            addr: ByteBuf::from(ip_bytes(addr(2).ip())),
            port: 4000,
            meta: ByteBuf::new(),
            incarnation: 1,
            state: State::Dead as u8,
            vsn: ByteBuf::from(VSN.to_vec()),
        });
        let new = table.merge(&nodes, now);
        assert_eq!(new, [("z".into(), addr(9))]);
        assert_eq!(
            table.node("a").unwrap().state,
            State::Suspect,
            "suspected, not dead"
        );
    }

    #[test]
    fn probing_goes_round_the_verified_live_members() {
        let now = Instant::now();
        let mut table = table(&["a", "b", "c"], now);
        table.dead(&accuse("c", 1, "me"), now);
        table.alive(&alive("u", addr(9), 1), now);
        let mut seen = BTreeSet::new();
        for _ in 0..6 {
            seen.insert(table.next_probe(now).unwrap().name);
        }
        assert_eq!(seen, BTreeSet::from(["a".to_owned(), "b".to_owned()]));
        let node = table.node("a").unwrap().clone();
        table.probe_failed(&node, 2, 2, now);
        assert_eq!(
            table.scale(PROBE_INTERVAL),
            PROBE_INTERVAL,
            "nacks came: not our fault"
        );
        table.probe_failed(&table.node("b").unwrap().clone(), 0, 0, now);
        assert_eq!(table.scale(PROBE_INTERVAL), PROBE_INTERVAL * 2);
        table.probe_answered();
        assert_eq!(table.scale(PROBE_INTERVAL), PROBE_INTERVAL);
        assert_eq!(table.node("a").unwrap().state, State::Suspect);
    }

    #[test]
    fn timings_scale_as_memberlists() {
        assert_eq!(
            suspicion_timeout(4, 1, PROBE_INTERVAL),
            Duration::from_secs(4)
        );
        assert_eq!(
            suspicion_timeout(4, 100, PROBE_INTERVAL),
            Duration::from_secs(8)
        );
        let minute = Duration::from_mins(1);
        assert_eq!(push_pull_scale(minute, 32), minute);
        assert_eq!(push_pull_scale(minute, 33), minute * 2);
        assert_eq!(push_pull_scale(minute, 100), minute * 3);
    }

    #[test]
    fn leaving_queues_a_dead_message_of_its_own() {
        let mut table = Table::new("me", addr(1));
        table.leave(7);
        assert!(table.has_left());
        let sent = table.broadcasts.take(2, 1400, 1, 1);
        let (_, mut body) = sent[0].split_first().unwrap();
        let said: Accusation = crate::gossip::wire::memberlist::decode(&mut body).unwrap();
        assert_eq!((said.node.as_str(), said.from.as_str()), ("me", "me"));
        assert!(table.broadcasts.finished(7));
        assert_eq!(table.push_nodes()[0].state, State::Left as u8);
    }
}
