//! The mesh member on the in-memory network, on tokio's paused clock: seeds, discovery of the
//! peers the topology names, relays, one connection per peer, a node that is no seed following
//! a control-plane roll, backoff within the per-address budget, and bounded strangers.

use super::*;
use crate::gossip::transport::memory::Network;
use crate::gossip::transport::CONNECTIONS_PER_MINUTE;
use crate::gossip::wire::mesh::peer_name;

const PORT: u16 = 3999;

fn at(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::from((ip, port))
}

fn addr(last: u8) -> SocketAddr {
    at([10, 0, 0, last], PORT)
}

fn local(name: &str) -> LocalPeer {
    LocalPeer {
        name: peer_name(name),
        nick_name: name.to_owned(),
        uid: u64::from(fastrand::u32(1..)),
        short_id: 1,
    }
}

/// A mesh member, its switches and what it knows.
struct Peer {
    store: Arc<Store>,
    mesh: Option<Arc<Mesh>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Peer {
    async fn start(
        network: &Network,
        listen: SocketAddr,
        name: &str,
        seeds: &[SocketAddr],
    ) -> Self {
        Self::with_secret(network, listen, name, seeds, b"").await
    }

    async fn with_secret(
        network: &Network,
        listen: SocketAddr,
        name: &str,
        seeds: &[SocketAddr],
        secret: &[u8],
    ) -> Self {
        let transport = Arc::new(network.node(listen.ip()));
        let store = Arc::new(Store::new(vec![Protocol::Mesh]));
        let mesh = Mesh::bind(
            transport,
            listen,
            local(name),
            secret.to_vec(),
            store.clone(),
            64,
        )
        .await
        .unwrap();
        let (seeds_sender, receiver) = watch::channel(seeds.to_vec());
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn({
            let mesh = mesh.clone();
            async move {
                let _kept_open = seeds_sender;
                mesh.run(receiver, stopped).await;
            }
        });
        Self {
            store,
            mesh: Some(mesh),
            stop,
            task,
        }
    }

    fn connected(&self) -> Vec<String> {
        let mut names = self
            .mesh
            .as_ref()
            .map(|m| m.connected())
            .unwrap_or_default();
        names.sort();
        names
    }

    async fn kill(&mut self) {
        self.task.abort();
        self.mesh = None;
        let _ = self.stop.send(true);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    fn value(&self, name: &str) -> Option<String> {
        self.store
            .view()
            .records
            .iter()
            .find(|r| r.name == name)
            .map(|r| {
                r.addresses
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            })
    }
}

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

#[tokio::test(start_paused = true)]
async fn two_members_connect_through_a_seed_and_exchange_their_states() {
    let network = Network::new();
    let a = Peer::start(&network, addr(1), "a", &[]).await;
    let b = Peer::start(&network, addr(2), "b", &[addr(1)]).await;
    a.store
        .publish_at("dns/local/A/api.internal.c.k8s.local", b"10.0.0.1", 10);
    until("connected", Duration::from_secs(5), || {
        a.connected() == ["b"] && b.connected() == ["a"]
    })
    .await;
    until("b has a's record", Duration::from_secs(5), || {
        b.value("api.internal.c.k8s.local").as_deref() == Some("10.0.0.1")
    })
    .await;
    assert_eq!(
        b.store.peers(Protocol::Mesh),
        1,
        "the peer count reaches the store"
    );
}

#[tokio::test(start_paused = true)]
async fn the_peers_a_topology_names_are_dialled() {
    let network = Network::new();
    let a = Peer::start(&network, addr(1), "a", &[]).await;
    let b = Peer::start(&network, addr(2), "b", &[addr(1)]).await;
    let c = Peer::start(&network, addr(3), "c", &[addr(1)]).await;
    until(
        "b and c met through a's topology",
        Duration::from_secs(20),
        || b.connected() == ["a", "c"] && c.connected() == ["a", "b"],
    )
    .await;
    assert_eq!(a.connected(), ["b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn both_sides_dialling_keep_one_connection() {
    let network = Network::new();
    let a = Peer::start(&network, addr(1), "a", &[addr(2)]).await;
    let b = Peer::start(&network, addr(2), "b", &[addr(1)]).await;
    until("connected", Duration::from_secs(5), || {
        a.connected() == ["b"]
    })
    .await;
    tokio::time::sleep(Duration::from_mins(2)).await;
    assert_eq!(
        (a.connected(), b.connected()),
        (vec!["b".to_owned()], vec!["a".to_owned()])
    );
    assert!(
        network.connections() < 10,
        "no flapping: {}",
        network.connections()
    );
}

#[tokio::test(start_paused = true)]
async fn a_broadcast_reaches_a_peer_known_only_through_the_relay() {
    let network = Network::new();
    // Each on a port of its own, a and c both dialling b: discovery (which dials an inbound
    // connection's address at its own port) finds nothing that answers, so c hears a only
    // through b.
    let b = Peer::start(&network, at([10, 0, 0, 2], 3002), "b", &[]).await;
    let a = Peer::start(
        &network,
        at([10, 0, 0, 1], 3001),
        "a",
        &[at([10, 0, 0, 2], 3002)],
    )
    .await;
    let c = Peer::start(
        &network,
        at([10, 0, 0, 3], 3003),
        "c",
        &[at([10, 0, 0, 2], 3002)],
    )
    .await;
    until("a line", Duration::from_secs(5), || {
        b.connected() == ["a", "c"]
    })
    .await;
    a.store
        .publish_at("dns/local/A/x.c.k8s.local", b"10.0.0.7", 20);
    let took = until("relayed", Duration::from_secs(5), || {
        c.value("x.c.k8s.local").as_deref() == Some("10.0.0.7")
    })
    .await;
    assert!(
        took < Duration::from_secs(1),
        "a broadcast, not the 30 s gossip: {took:?}"
    );
    assert_eq!(c.connected(), ["b"]);
}

#[tokio::test(start_paused = true)]
async fn a_node_that_is_no_seed_follows_a_control_plane_roll() {
    let network = Network::new();
    let mut masters = vec![
        Peer::start(&network, addr(1), "m1", &[]).await,
        Peer::start(&network, addr(2), "m2", &[addr(1)]).await,
        Peer::start(&network, addr(3), "m3", &[addr(1), addr(2)]).await,
    ];
    let worker_addr = at([10, 0, 1, 1], PORT);
    let worker = Peer::start(&network, worker_addr, "w", &[addr(1), addr(2), addr(3)]).await;
    const API: &str = "api.internal.c.k8s.local";
    masters[0].store.publish_at(
        &format!("dns/local/A/{API}"),
        b"10.0.0.1,10.0.0.2,10.0.0.3",
        100,
    );
    until(
        "the worker has the first answer",
        Duration::from_secs(10),
        || worker.value(API).as_deref() == Some("10.0.0.1,10.0.0.2,10.0.0.3"),
    )
    .await;
    // Each step: a new master seeded with the two that remain (the cloud's answer then),
    // dns-controller's new answer published from it, the oldest master gone.
    for step in 0..3u8 {
        let new = 4 + step;
        let seeds = [addr(new - 2), addr(new - 1)];
        masters.push(Peer::start(&network, addr(new), &format!("m{new}"), &seeds).await);
        tokio::time::sleep(Duration::from_secs(5)).await;
        let answer = format!("10.0.0.{},10.0.0.{},10.0.0.{}", new - 2, new - 1, new);
        masters.last().unwrap().store.publish_at(
            &format!("dns/local/A/{API}"),
            answer.as_bytes(),
            200 + u64::from(step),
        );
        masters[usize::from(step)].kill().await;
        until(
            &format!("the worker follows step {}", step + 1),
            Duration::from_secs(30),
            || worker.value(API).as_deref() == Some(answer.as_str()),
        )
        .await;
    }
    until(
        "the worker is connected to the new control plane",
        Duration::from_mins(2),
        || worker.connected() == ["m4", "m5", "m6"],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_dead_seed_is_dialled_with_backoff_within_the_budget() {
    let network = Network::new();
    let _a = Peer::start(&network, addr(1), "a", &[addr(9)]).await;
    tokio::time::sleep(Duration::from_mins(1)).await;
    let first_minute = network.connections_to(addr(9));
    assert!(
        (3..=CONNECTIONS_PER_MINUTE).contains(&first_minute),
        "{first_minute} in the first minute"
    );
    tokio::time::sleep(Duration::from_mins(9)).await;
    let ten_minutes = network.connections_to(addr(9));
    assert!(ten_minutes > first_minute, "still tried");
    assert!(
        ten_minutes <= first_minute + 9,
        "backing off: {ten_minutes}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_topology_naming_many_addresses_costs_each_address_a_few_dials() {
    let network = Network::new();
    let a = Peer::start(&network, addr(1), "a", &[]).await;
    // A peer that has the secret (none here) and tells of 1 000 peers, each connected out to an
    // address of its choosing, many of them the same victim.
    let stranger = network.node([10, 9, 9, 9]);
    let stream = stranger.connect(None, addr(1)).await.unwrap();
    let mut connection = MeshConnection::handshake(stream, true, &local("stranger"), b"")
        .await
        .unwrap();
    let victim = at([10, 7, 7, 7], PORT);
    let peers: Vec<TopologyPeer> = (0..1000u32)
        .map(|i| TopologyPeer {
            summary: PeerSummary {
                name: peer_name(&format!("p{i}")).to_vec(),
                nick_name: format!("p{i}"),
                uid: 1,
                version: 1,
                short_id: 1,
                has_short_id: true,
            },
            connections: vec![
                ConnectionSummary {
                    name: peer_name("stranger").to_vec(),
                    remote_tcp_addr: victim.to_string(),
                    outbound: true,
                    established: true,
                },
                ConnectionSummary {
                    name: peer_name(&format!("q{i}")).to_vec(),
                    remote_tcp_addr: format!("10.8.{}.{}:3999", i / 250, i % 250),
                    outbound: true,
                    established: true,
                },
            ],
        })
        .collect();
    let mut frame = GossipMessage {
        tag: TAG_GOSSIP,
        channel: TOPOLOGY.to_owned(),
        source: "stranger".into(),
        destination: None,
        payload: encode_topology(&peers[..1]),
    };
    // Its own summary first, connected to a, so that its peers are reachable through it.
    let own = TopologyPeer {
        summary: PeerSummary {
            name: peer_name("stranger").to_vec(),
            nick_name: "stranger".into(),
            uid: 1,
            version: 1,
            short_id: 1,
            has_short_id: true,
        },
        connections: vec![ConnectionSummary {
            name: peer_name("a").to_vec(),
            remote_tcp_addr: addr(1).to_string(),
            outbound: true,
            established: true,
        }],
    };
    let mut all = vec![own];
    all.extend(peers);
    frame.payload = encode_topology(&all);
    connection.send(&frame.encode()).await.unwrap();
    tokio::time::sleep(Duration::from_mins(1)).await;
    assert!(
        network.connections_to(victim) <= CONNECTIONS_PER_MINUTE,
        "{}",
        network.connections_to(victim)
    );
    let spread = (0..1000u32)
        .map(|i| network.connections_to(at([10, 8, (i / 250) as u8, (i % 250) as u8], 3999)))
        .max()
        .unwrap();
    assert!(spread <= CONNECTIONS_PER_MINUTE, "{spread}");
    assert!(a.connected() == ["stranger"]);
    drop(connection);
}

#[tokio::test(start_paused = true)]
async fn another_secret_is_refused_and_the_member_keeps_its_peers() {
    let network = Network::new();
    let a = Peer::with_secret(&network, addr(1), "a", &[], b"one").await;
    let b = Peer::with_secret(&network, addr(2), "b", &[addr(1)], b"one").await;
    let c = Peer::with_secret(&network, addr(3), "c", &[addr(1)], b"two").await;
    until("a and b", Duration::from_secs(5), || a.connected() == ["b"]).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(a.connected(), ["b"]);
    assert!(c.connected().is_empty());
    assert_eq!(b.connected(), ["a"]);
}
