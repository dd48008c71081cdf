//! The memberlist member on the in-memory network, on tokio's paused clock: seconds of protocol
//! time in milliseconds. Joining, probing, suspicion, the dead declared and reaped, leaves,
//! refutation, relays, records by packet and by stream, the bounds on strangers, reseeding.

use super::*;
use crate::gossip::transport::memory::Network;
use crate::gossip::wire::protobuf::KvRecord;

const PORT: u16 = 4000;

fn addr(last: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], PORT))
}

/// A member on the network, its switches, and what it knows.
struct Node {
    store: Arc<Store>,
    member: Option<Arc<Memberlist>>,
    name: String,
    seeds: watch::Sender<Vec<SocketAddr>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Node {
    async fn start(network: &Network, last: u8, seeds: &[SocketAddr]) -> Self {
        Self::start_with(
            network,
            last,
            seeds,
            vec![Protocol::Mesh, Protocol::Memberlist],
        )
        .await
    }

    async fn start_with(
        network: &Network,
        last: u8,
        seeds: &[SocketAddr],
        protocols: Vec<Protocol>,
    ) -> Self {
        let transport = Arc::new(network.node([10, 0, 0, last]));
        let store = Arc::new(Store::new(protocols));
        let member = Memberlist::bind(
            transport,
            SocketAddr::from(([0, 0, 0, 0], PORT)),
            IpAddr::from([10, 0, 0, last]),
            store.clone(),
            64,
        )
        .await
        .unwrap();
        let (seeds_tx, seeds_rx) = watch::channel(seeds.to_vec());
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(member.clone().run(seeds_rx, stopped));
        Self {
            name: member.name(),
            store,
            member: Some(member),
            seeds: seeds_tx,
            stop,
            task,
        }
    }

    fn members(&self) -> Vec<String> {
        self.member
            .as_ref()
            .map(|m| m.members())
            .unwrap_or_default()
    }

    fn knows(&self, other: &Node) -> bool {
        self.members().contains(&other.name)
    }

    /// Killed: no leave, no answer from now on.
    async fn kill(&mut self) {
        self.task.abort();
        self.member = None;
        // The runtime drops the aborted task's future (and with it the sockets) when it runs.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    fn publish(&self, name: &str, value: &str) {
        self.store.publish(
            &[(
                format!("dns/local/A/{name}"),
                Some(value.as_bytes().to_vec()),
            )],
            "me",
        );
    }

    fn record(&self, name: &str) -> Option<String> {
        self.store
            .state(Protocol::Memberlist)
            .records
            .get(&format!("dns/local/A/{name}"))
            .filter(|r| !r.tombstone)
            .map(|r| String::from_utf8_lossy(&r.data).into_owned())
    }
}

/// Waits (protocol time) until `check` holds; the time it took.
async fn until(what: &str, within: Duration, check: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while started.elapsed() < within {
        if check() {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never within {within:?}: {what}");
}

/// `n` members at 10.0.0.1.., each seeded with the first, all knowing each other.
async fn cluster(network: &Network, n: u8) -> Vec<Node> {
    let mut nodes = Vec::new();
    for last in 1..=n {
        let seeds: &[SocketAddr] = if last == 1 { &[] } else { &[addr(1)] };
        nodes.push(Node::start(network, last, seeds).await);
    }
    let knows_all = || {
        nodes
            .iter()
            .all(|node| node.members().len() == usize::from(n) - 1)
    };
    let started = Instant::now();
    while !knows_all() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never within 30s: everyone knows everyone: {:?}",
            nodes
                .iter()
                .map(|n| (
                    n.name.clone(),
                    n.members(),
                    n.member.as_ref().unwrap().table(|t| t.debug())
                ))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    nodes
}

fn raw_packet(kind: MessageType, body: &impl serde::Serialize) -> Vec<u8> {
    packet(&[encode(kind, body).unwrap()]).unwrap()
}

#[tokio::test(start_paused = true)]
async fn members_join_through_one_seed_and_verify_each_other() {
    let network = Network::new();
    let nodes = cluster(&network, 3).await;
    for node in &nodes {
        assert_eq!(
            node.store.peers(Protocol::Memberlist),
            2,
            "the peer count reaches the store"
        );
    }
    assert!(nodes[1].knows(&nodes[2]), "met through the seed");
}

#[tokio::test(start_paused = true)]
async fn a_killed_member_is_dead_everywhere_within_ten_seconds_then_reaped() {
    let network = Network::new();
    let mut nodes = cluster(&network, 5).await;
    let killed = nodes[4].name.clone();
    nodes[4].kill().await;
    let took = until(
        "every survivor counts it out",
        Duration::from_mins(1),
        || nodes[..4].iter().all(|n| !n.members().contains(&killed)),
    )
    .await;
    assert!(took <= Duration::from_secs(10), "{took:?}");
    // Gossiped to for 30 s, then gone from every table.
    until("reaped", Duration::from_secs(90), || {
        nodes[..4].iter().all(|n| {
            n.member
                .as_ref()
                .is_some_and(|m| m.table(|t| t.node(&killed).is_none()))
        })
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_member_that_stops_leaves_and_is_known_to_have_left_at_once() {
    let network = Network::new();
    let nodes = cluster(&network, 4).await;
    let leaving = nodes[3].name.clone();
    nodes[3].stop.send(true).unwrap();
    let took = until("left everywhere", Duration::from_secs(10), || {
        nodes[..3].iter().all(|n| {
            n.member.as_ref().is_some_and(|m| {
                m.table(|t| {
                    t.node(&leaving)
                        .is_some_and(|node| node.state == State::Left)
                })
            })
        })
    })
    .await;
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        tokio::time::timeout(LEAVE_WAIT, nodes[3].task.is_finished_future())
            .await
            .is_ok()
    );
}

trait Finished {
    async fn is_finished_future(&self);
}

impl Finished for tokio::task::JoinHandle<()> {
    async fn is_finished_future(&self) {
        while !self.is_finished() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_small_record_rides_on_packets_and_opens_no_connection() {
    let network = Network::new();
    let nodes = cluster(&network, 4).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = network.connections();
    nodes[0].publish("api.internal.c.k8s.local", "10.0.0.1");
    let took = until("every member has it", Duration::from_secs(5), || {
        nodes
            .iter()
            .all(|n| n.record("api.internal.c.k8s.local").as_deref() == Some("10.0.0.1"))
    })
    .await;
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert_eq!(network.connections(), before, "gossiped, not streamed");
}

#[tokio::test(start_paused = true)]
async fn a_state_too_large_for_a_packet_goes_to_each_member_over_tcp_once() {
    let network = Network::new();
    let nodes = cluster(&network, 3).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before: Vec<usize> = (1..=3).map(|i| network.connections_to(addr(i))).collect();
    let big = (0..40)
        .map(|i| {
            (
                format!("dns/local/A/name-{i}.c.k8s.local"),
                Some(b"10.0.0.1".to_vec()),
            )
        })
        .collect::<Vec<_>>();
    nodes[0].store.publish(&big, "me");
    until("the others have it", Duration::from_secs(5), || {
        nodes[1..]
            .iter()
            .all(|n| n.record("name-39.c.k8s.local").is_some())
    })
    .await;
    for i in 2..=3u8 {
        let opened = network.connections_to(addr(i)) - before[usize::from(i) - 1];
        assert_eq!(opened, 1, "one stream to member {i}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_strangers_datagram_changes_no_view_opens_no_connection_and_cannot_outlive_its_hour() {
    let network = Network::new();
    let nodes = cluster(&network, 3).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stranger = network.node([10, 9, 9, 9]);
    let socket = stranger
        .bind_packets(SocketAddr::from(([10, 9, 9, 9], PORT)))
        .await
        .unwrap();
    let mut poison = KvState::default();
    for (name, version) in [
        ("api.internal.c.k8s.local", 1u64 << 63),
        ("evil.c.k8s.local", 5),
    ] {
        poison.records.insert(
            format!("dns/local/A/{name}"),
            KvRecord {
                data: b"6.6.6.6".to_vec(),
                tombstone: false,
                version,
            },
        );
    }
    let mut user = vec![MessageType::User as u8];
    user.extend(encode_part(DNS, &poison.encode()));
    let before = network.connections();
    socket.send(&packet(&[user]).unwrap(), addr(1));
    until(
        "the plain record spreads by packets",
        Duration::from_secs(5),
        || nodes.iter().all(|n| n.record("evil.c.k8s.local").is_some()),
    )
    .await;
    for node in &nodes {
        assert!(
            node.record("api.internal.c.k8s.local").is_none(),
            "a version from the future"
        );
        assert!(
            node.store.view().records.is_empty(),
            "memberlist is not the primary: no view"
        );
    }
    assert_eq!(network.connections(), before, "no connection storm");
}

#[tokio::test(start_paused = true)]
async fn a_poisoned_push_pull_is_bounded_reaped_and_costs_the_victim_a_few_pings() {
    let network = Network::new();
    let nodes = cluster(&network, 2).await;
    let victim = SocketAddr::from(([10, 7, 7, 7], PORT));
    let mut invented = vec![
        Table::new("stranger", SocketAddr::from(([10, 9, 9, 9], PORT))).push_nodes()[0].clone(),
    ];
    for i in 0..4095 {
        let mut node = invented[0].clone();
        node.name = format!("invented-{i}");
        node.addr = ByteBuf::from(ip_bytes(victim.ip()));
        invented.push(node);
    }
    let message = PushPull {
        join: false,
        nodes: invented,
        state: FullState::default(),
    };
    let mut stream = network
        .node([10, 9, 9, 9])
        .connect(None, addr(1))
        .await
        .unwrap();
    stream
        .write_all(&stream_of(&message).unwrap())
        .await
        .unwrap();
    let _reply = read_message(&mut stream).await.unwrap();
    let size = nodes[0].member.as_ref().unwrap().table(|t| t.nodes_held());
    // This member, the real one, the stranger, and two names at the victim's address.
    assert!(size <= 3 + table::NAMES_PER_ADDRESS, "bounded: {size}");
    let before = network.connections();
    // A datagram that would have sent a record to every member by TCP.
    let mut user = vec![MessageType::User as u8];
    let mut fresh = KvState::default();
    fresh.records.insert(
        "dns/local/A/x.c.k8s.local".into(),
        KvRecord {
            data: b"10.0.0.9".to_vec(),
            tombstone: false,
            version: 9,
        },
    );
    user.extend(encode_part(DNS, &fresh.encode()));
    network
        .node([10, 9, 9, 9])
        .bind_packets(SocketAddr::from(([10, 9, 9, 9], PORT)))
        .await
        .unwrap()
        .send(&packet(&[user]).unwrap(), addr(1));
    until("reaped", Duration::from_secs(30), || {
        nodes[0].member.as_ref().unwrap().table(|t| t.nodes_held()) == 2
    })
    .await;
    assert_eq!(
        network.connections_to(victim),
        0,
        "no connection to the victim"
    );
    assert!(
        network.connections() - before <= 2,
        "no storm: {}",
        network.connections() - before
    );
    assert!(
        network.packets_to(victim) <= 6,
        "a few pings: {}",
        network.packets_to(victim)
    );
    assert_eq!(
        nodes[0].members(),
        [nodes[1].name.clone()],
        "the real member stays"
    );
}

#[tokio::test(start_paused = true)]
async fn a_member_unreachable_from_one_peer_is_kept_alive_by_indirect_pings() {
    let network = Network::new();
    let nodes = cluster(&network, 4).await;
    network.block([10, 0, 0, 1], [10, 0, 0, 4]);
    tokio::time::sleep(Duration::from_secs(40)).await;
    assert!(nodes[0].knows(&nodes[3]), "others vouched for it");
    assert!(nodes[3].knows(&nodes[0]));
}

#[tokio::test(start_paused = true)]
async fn a_relayed_ping_to_a_silent_target_is_answered_with_a_nack() {
    let network = Network::new();
    let _nodes = cluster(&network, 1).await;
    let asker = network
        .node([10, 9, 9, 9])
        .bind_packets(SocketAddr::from(([10, 9, 9, 9], PORT)))
        .await
        .unwrap();
    let request = IndirectPing {
        seq_no: 77,
        target: ByteBuf::from(vec![10, 0, 0, 99]),
        port: PORT,
        node: "nobody".into(),
        nack: true,
        ..IndirectPing::default()
    };
    asker.send(&raw_packet(MessageType::IndirectPing, &request), addr(1));
    let mut buffer = vec![0u8; 2048];
    let (len, _) = tokio::time::timeout(Duration::from_secs(2), asker.recv(&mut buffer))
        .await
        .expect("a nack")
        .unwrap();
    let messages = messages_of_packet(&buffer[..len]).unwrap();
    assert_eq!(messages[0][0], MessageType::NackResp as u8);
    let nack: NackResp = decode(&mut &messages[0][1..]).unwrap();
    assert_eq!(nack.seq_no, 77);
}

#[tokio::test(start_paused = true)]
async fn a_ping_is_answered_over_udp_and_over_tcp_but_not_for_another_name() {
    let network = Network::new();
    let nodes = cluster(&network, 1).await;
    let asker = network.node([10, 9, 9, 9]);
    let socket = asker
        .bind_packets(SocketAddr::from(([10, 9, 9, 9], PORT)))
        .await
        .unwrap();
    for (node, answered) in [
        (nodes[0].name.clone(), true),
        ("someone-else".to_owned(), false),
    ] {
        let ping = Ping {
            seq_no: 5,
            node,
            ..Ping::default()
        };
        socket.send(&raw_packet(MessageType::Ping, &ping), addr(1));
        let mut buffer = vec![0u8; 2048];
        let got = tokio::time::timeout(Duration::from_secs(1), socket.recv(&mut buffer)).await;
        assert_eq!(got.is_ok(), answered);
    }
    let mut stream = asker.connect(None, addr(1)).await.unwrap();
    let ping = Ping {
        seq_no: 9,
        node: nodes[0].name.clone(),
        ..Ping::default()
    };
    stream
        .write_all(&compressed(&encode(MessageType::Ping, &ping).unwrap()).unwrap())
        .await
        .unwrap();
    let reply = read_message(&mut stream).await.unwrap();
    assert_eq!(reply[0], MessageType::AckResp as u8);
    let ack: AckResp = decode(&mut &reply[1..]).unwrap();
    assert_eq!(ack.seq_no, 9);
}

#[tokio::test(start_paused = true)]
async fn a_rumour_that_a_live_member_is_suspect_is_refuted_and_it_stays() {
    let network = Network::new();
    let nodes = cluster(&network, 3).await;
    let liar = network
        .node([10, 9, 9, 9])
        .bind_packets(SocketAddr::from(([10, 9, 9, 9], PORT)))
        .await
        .unwrap();
    let rumour = Accusation {
        incarnation: 1,
        node: nodes[2].name.clone(),
        from: "liar".into(),
    };
    liar.send(&raw_packet(MessageType::Suspect, &rumour), addr(1));
    until("refuted", Duration::from_secs(5), || {
        nodes[2]
            .member
            .as_ref()
            .unwrap()
            .table(|t| t.incarnation_now())
            > 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(40)).await;
    for node in &nodes[..2] {
        assert!(node.knows(&nodes[2]), "alive at its new incarnation");
    }
}

#[tokio::test(start_paused = true)]
async fn a_seed_that_comes_later_is_joined_on_the_refresh() {
    let network = Network::new();
    let early = Node::start(&network, 1, &[addr(2)]).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    let late = Node::start(&network, 2, &[]).await;
    let took = until("joined", Duration::from_secs(30), || {
        early.knows(&late) && late.knows(&early)
    })
    .await;
    assert!(
        took <= REFRESH_INTERVAL + Duration::from_secs(1),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_member_back_on_its_address_under_a_new_name_is_joined_again() {
    let network = Network::new();
    let mut nodes = cluster(&network, 3).await;
    nodes[2].kill().await;
    until("dead", Duration::from_secs(30), || {
        nodes[0].members().len() == 1
    })
    .await;
    // Back with no seeds of its own: the others' reconnect (failed peers every 10 s) finds it.
    let back = Node::start(&network, 3, &[]).await;
    until("joined again", Duration::from_secs(30), || {
        nodes[0].knows(&back) && nodes[1].knows(&back) && back.members().len() == 2
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_record_missed_by_gossip_arrives_by_push_pull() {
    let network = Network::new();
    let nodes = cluster(&network, 2).await;
    network.cut([10, 0, 0, 2]);
    nodes[0].publish("late.c.k8s.local", "10.0.0.5");
    tokio::time::sleep(Duration::from_secs(3)).await;
    network.heal([10, 0, 0, 2]);
    assert!(
        nodes[1].record("late.c.k8s.local").is_none(),
        "the packets were lost"
    );
    until("pushed and pulled", PUSH_PULL_INTERVAL * 3, || {
        nodes[1].record("late.c.k8s.local").is_some()
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn new_seeds_are_joined_when_given() {
    let network = Network::new();
    let a = Node::start(&network, 1, &[]).await;
    let b = Node::start(&network, 2, &[]).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(a.members().is_empty());
    a.seeds.send(vec![addr(2)]).unwrap();
    until("joined", Duration::from_secs(5), || {
        a.knows(&b) && b.knows(&a)
    })
    .await;
}
