//! Gossip clusters of several members (docs/gossip.md), each on a loopback address of its own:
//! protokube members alone and beside the project's Go peer (kOps' libraries). A killed member
//! leaves every list, a mixed cluster knows its deaths, a stopped member leaves, a node that is
//! no seed follows a control-plane roll, a stranger's datagram and push/pull change nothing
//! they should not, and a run lock held for 30 s stalls nothing.

use crate::support;

use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::gossip::{
    at, flags, free_port, wait_until, Cloud, GoPeer, Member, Node, PeerSpec, WITHIN,
};

/// Ports every node of a test listens on, each at its own address.
#[derive(Clone, Copy)]
struct Ports {
    mesh: u16,
    list: u16,
}

impl Ports {
    fn new() -> Self {
        Self {
            mesh: free_port(),
            list: free_port(),
        }
    }

    /// A protokube member's flags at `ip`, seeded with `seeds` (addresses without a port: each
    /// protocol's own, as the cloud's seeds are given).
    fn member_flags(self, ip: &str, seeds: &[&str]) -> Vec<String> {
        let mut args = flags(&[
            ("gossip-listen", at(ip, self.mesh)),
            ("gossip-listen-secondary", at(ip, self.list)),
        ]);
        for seed in seeds {
            args.extend(flags(&[
                ("gossip-seed", (*seed).to_owned()),
                ("gossip-seed-secondary", (*seed).to_owned()),
            ]));
        }
        args
    }

    /// A Go peer (mesh and memberlist, as kOps' protokube) at `ip`, seeded with `seeds`.
    fn peer<'a>(self, name: &'a str, ip: &'a str, seeds: &[&str]) -> PeerSpec<'a> {
        PeerSpec {
            name,
            host: ip,
            mesh: Some(self.mesh),
            mesh_seeds: seeds.iter().map(|s| at(s, self.mesh)).collect(),
            memberlist: Some(self.list),
            memberlist_seeds: seeds.iter().map(|s| at(s, self.list)).collect(),
            ..PeerSpec::default()
        }
    }
}

/// protokube members at `ips`, all seeded with the first.
fn members(cloud: &Arc<Cloud>, ports: Ports, ips: &[&str]) -> Vec<(Node, Member)> {
    ips.iter()
        .map(|ip| {
            let node = Node::at(cloud, ip);
            let member = Member::start(&node, &ports.member_flags(ip, &[ips[0]]));
            (node, member)
        })
        .collect()
}

#[test]
fn in_a_cluster_of_five_protokube_members_a_killed_one_leaves_every_list() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    let ips = [
        "127.0.0.11",
        "127.0.0.12",
        "127.0.0.13",
        "127.0.0.14",
        "127.0.0.15",
    ];
    let mut nodes = members(&cloud, ports, &ips);
    wait_until(
        "every member counts four peers on both protocols",
        WITHIN * 3,
        || {
            nodes
                .iter()
                .all(|(_, m)| m.peers("memberlist") == Some(4) && m.peers("mesh") == Some(4))
        },
    );
    nodes[4].1.kill();
    let took = wait_until("every survivor counts three", WITHIN * 3, || {
        nodes[..4]
            .iter()
            .all(|(_, m)| m.peers("memberlist") == Some(3) && m.peers("mesh") == Some(3))
    });
    eprintln!("a killed member left every list in {took:?}");
    // Restarted (a new memberlist name at the same address) three times: still four members.
    for _ in 0..3 {
        let (node, member) = &mut nodes[4];
        *member = Member::start(node, &ports.member_flags(ips[4], &[ips[0]]));
        wait_until("back", WITHIN * 2, || {
            nodes.iter().all(|(_, m)| m.peers("memberlist") == Some(4))
        });
        nodes[4].1.kill();
    }
    wait_until("restarts leave no ghosts", WITHIN * 3, || {
        nodes[..4]
            .iter()
            .all(|(_, m)| m.peers("memberlist") == Some(3))
    });
}

#[test]
fn a_mixed_cluster_of_three_and_three_knows_both_deaths() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    let go_ips = ["127.0.0.21", "127.0.0.22", "127.0.0.23"];
    let mut go: Vec<Option<GoPeer>> = go_ips
        .iter()
        .enumerate()
        .map(|(i, ip)| {
            Some(GoPeer::start(&ports.peer(
                ["k1", "k2", "k3"][i],
                ip,
                &[go_ips[0]],
            )))
        })
        .collect();
    let ours: Vec<(Node, Member)> = ["127.0.0.24", "127.0.0.25", "127.0.0.26"]
        .iter()
        .map(|ip| {
            let node = Node::at(&cloud, ip);
            let member = Member::start(&node, &ports.member_flags(ip, &[go_ips[0]]));
            (node, member)
        })
        .collect();
    let mut ours = ours;
    let counts = |go: &[Option<GoPeer>], ours: &[(Node, Member)], n: u64| {
        go.iter()
            .flatten()
            .all(|p| p.peers("memberlist") == Some(n))
            && ours.iter().all(|(_, m)| m.peers("memberlist") == Some(n))
    };
    wait_until("six members", WITHIN * 3, || counts(&go, &ours, 5));
    go[2] = None;
    ours.pop();
    // kOps' own peers took 17–26 s in such a cluster (6 s when all six run kOps); protokube's
    // members had taken 31–55 s before they probed and confirmed.
    let took = wait_until(
        "both deaths known everywhere",
        Duration::from_secs(25),
        || counts(&go, &ours, 3),
    );
    eprintln!("a mixed 3 + 3 cluster knew both deaths in {took:?}");
}

#[test]
fn a_stopped_member_leaves_and_go_peers_count_it_out_at_once() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    let peer = GoPeer::start(&ports.peer("k1", "127.0.0.41", &[]));
    let node = Node::at(&cloud, "127.0.0.42");
    let mut member = Member::start(&node, &ports.member_flags("127.0.0.42", &["127.0.0.41"]));
    peer.wait_for("the member", WITHIN, |l| l["peers"]["memberlist"] == 1);
    wait_until("the member counts the peer", WITHIN, || {
        member.peers("memberlist") == Some(1)
    });
    assert_eq!(member.stop(), Some(0));
    let took = peer.wait_for("the leave", WITHIN, |l| l["peers"]["memberlist"] == 0);
    assert!(
        took < Duration::from_secs(5),
        "a leave, not a suspicion: {took:?}\n{}",
        member.log()
    );
}

#[test]
fn a_worker_that_is_no_seed_follows_a_three_step_control_plane_roll() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    const API: &str = "api.internal.c.k8s.local";
    let ip = |n: u8| format!("127.0.0.{}", 30 + n);
    let names = ["m1", "m2", "m3", "m4", "m5", "m6"];
    let ips: Vec<String> = (1..=6).map(ip).collect();
    let mut masters: Vec<Option<GoPeer>> = Vec::new();
    for n in 0..3 {
        let seeds: Vec<&str> = ips[..n].iter().map(String::as_str).collect();
        masters.push(Some(GoPeer::start(&ports.peer(names[n], &ips[n], &seeds))));
    }
    // The worker's seeds are the first three masters, as the cloud named them when it started.
    let worker = Node::at(&cloud, "127.0.0.30");
    let _member = Member::start(
        &worker,
        &ports.member_flags("127.0.0.30", &[&ips[0], &ips[1], &ips[2]]),
    );
    let answer = |first: usize| ips[first..first + 3].join(",");
    masters[0]
        .as_mut()
        .unwrap()
        .command(&format!("publish {API} A {}", answer(0)));
    let line = |first: usize| {
        let mut addresses: Vec<String> = ips[first..first + 3].to_vec();
        addresses.sort();
        addresses
            .iter()
            .map(|a| format!("{a}\t{API}"))
            .collect::<Vec<_>>()
    };
    worker.wait_for_hosts("the first answer", WITHIN, |h| {
        line(0).iter().all(|l| h.contains(l))
    });
    for step in 0..3 {
        let new = step + 3;
        let seeds = [ips[new - 2].as_str(), ips[new - 1].as_str()];
        masters.push(Some(GoPeer::start(
            &ports.peer(names[new], &ips[new], &seeds),
        )));
        std::thread::sleep(Duration::from_secs(3));
        // The oldest master goes; dns-controller, now on the new one, publishes the new answer
        // (after the third step, none of the worker's seeds is left).
        masters[step] = None;
        std::thread::sleep(Duration::from_secs(2));
        masters[new]
            .as_mut()
            .unwrap()
            .command(&format!("publish {API} A {}", answer(step + 1)));
        let took = worker.wait_for_hosts(&format!("step {}", step + 1), WITHIN * 2, |h| {
            line(step + 1).iter().all(|l| h.contains(l))
        });
        eprintln!("roll step {}: the worker followed in {took:?}", step + 1);
    }
}

/// A listener that counts the connections and datagrams a victim address receives.
struct Victim {
    addr: String,
    connections: Arc<AtomicUsize>,
    datagrams: Arc<AtomicUsize>,
}

impl Victim {
    fn start(ip: &str) -> Self {
        let tcp = std::net::TcpListener::bind(format!("{ip}:0")).unwrap();
        let addr = tcp.local_addr().unwrap();
        let udp = std::net::UdpSocket::bind(addr).unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let datagrams = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for stream in tcp.incoming() {
                drop(stream);
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        let counted = datagrams.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 2048];
            while udp.recv_from(&mut buffer).is_ok() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Self {
            addr: addr.to_string(),
            connections,
            datagrams,
        }
    }
}

#[test]
fn a_strangers_datagram_changes_no_hosts_block() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    let mut dns_controller = GoPeer::start(&ports.peer("dns-controller.m1", "127.0.0.51", &[]));
    let node = Node::at(&cloud, "127.0.0.52");
    let member = Member::start(&node, &ports.member_flags("127.0.0.52", &["127.0.0.51"]));
    dns_controller.command("publish api.internal.c.k8s.local A 10.0.0.1");
    dns_controller.command("publish kops-controller.internal.c.k8s.local A 10.0.0.1");
    node.wait_for_hosts("dns-controller's names", WITHIN, |h| {
        h.contains("10.0.0.1\tapi.internal.c.k8s.local kops-controller.internal.c.k8s.local")
    });
    let before = node.hosts();
    // One datagram to the memberlist port: kOps' Part with a version from the year 2^63,
    // another with a plausible one; neither may reach the file.
    let stranger = std::net::UdpSocket::bind("127.0.0.99:0").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for version in [1u64 << 63, now + 60] {
        let packet = protokube::testing::gossip::memberlist_user_packet(&[
            (
                "dns/local/A/api.internal.c.k8s.local",
                Some("127.0.0.99"),
                version,
            ),
            (
                "dns/local/A/kops-controller.internal.c.k8s.local",
                None,
                version,
            ),
        ]);
        stranger
            .send_to(&packet, at("127.0.0.52", ports.list))
            .unwrap();
    }
    std::thread::sleep(Duration::from_secs(3));
    dns_controller.command("publish other.c.k8s.local A 10.0.0.2");
    node.wait_for_hosts("dns-controller's later round", WITHIN, |h| {
        h.contains("other.c.k8s.local")
    });
    let after = node.hosts();
    assert_eq!(after.replace("10.0.0.2\tother.c.k8s.local\n", ""), before);
    assert!(
        member.log().contains("more than an hour ahead"),
        "{}",
        member.log()
    );
}

#[test]
fn a_poisoned_push_pull_is_reaped_with_no_connection_storm() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    let peer = GoPeer::start(&ports.peer("k1", "127.0.0.61", &[]));
    let node = Node::at(&cloud, "127.0.0.62");
    let member = Member::start(&node, &ports.member_flags("127.0.0.62", &["127.0.0.61"]));
    peer.wait_for("the member", WITHIN, |l| l["peers"]["memberlist"] == 1);
    let victim = Victim::start("127.0.0.77");
    let invented: Vec<(String, std::net::SocketAddr)> = (0..4095)
        .map(|i| (format!("invented-{i}"), victim.addr.parse().unwrap()))
        .collect();
    let poison = protokube::testing::gossip::memberlist_push_pull(
        "stranger",
        "127.0.0.99:4000".parse().unwrap(),
        &invented,
    );
    let mut stream = std::net::TcpStream::connect(at("127.0.0.62", ports.list)).unwrap();
    stream.write_all(&poison).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    // Then one datagram that, before, made the member open a connection to every member.
    let packet = protokube::testing::gossip::memberlist_user_packet(&[(
        "dns/local/A/x.c.k8s.local",
        Some("10.0.0.9"),
        9,
    )]);
    std::net::UdpSocket::bind("127.0.0.99:0")
        .unwrap()
        .send_to(&packet, at("127.0.0.62", ports.list))
        .unwrap();
    std::thread::sleep(Duration::from_secs(20));
    assert_eq!(
        victim.connections.load(Ordering::SeqCst),
        0,
        "no connection to the victim"
    );
    let pings = victim.datagrams.load(Ordering::SeqCst);
    assert!(pings <= 6, "a few pings, not thousands: {pings}");
    assert_eq!(
        member.peers("memberlist"),
        Some(1),
        "invented members are no peers"
    );
    assert_eq!(
        peer.peers("memberlist"),
        Some(1),
        "nor were they told on to kOps' peer"
    );
}

#[test]
fn a_run_lock_held_for_thirty_seconds_causes_no_suspicion() {
    let cloud = Cloud::new();
    let ports = Ports::new();
    let mut peer = GoPeer::start(&ports.peer("k1", "127.0.0.71", &[]));
    let node = Node::at(&cloud, "127.0.0.72");
    let member = Member::start(&node, &ports.member_flags("127.0.0.72", &["127.0.0.71"]));
    peer.wait_for("the member", WITHIN, |l| l["peers"]["memberlist"] == 1);
    // Another process's `sync` holds the run lock for 30 s while records arrive.
    let lock = node.root.path().join("run/protokube.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let mut holder = support::Guard::new(
        std::process::Command::new("flock")
            .arg(&lock)
            .args(["sleep", "30"])
            .spawn()
            .expect("flock (util-linux)"),
    );
    std::thread::sleep(Duration::from_millis(500));
    peer.command("publish api.internal.c.k8s.local A 10.0.0.1");
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(31) {
        assert_eq!(
            peer.peers("memberlist"),
            Some(1),
            "kOps' peer kept the member"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = holder.wait();
    node.wait_for_hosts("the record, once the lock is free", WITHIN, |h| {
        h.contains("10.0.0.1\tapi.internal.c.k8s.local")
    });
    let log = member.log();
    assert!(!log.contains("alive again"), "never suspected:\n{log}");
    assert!(
        log.contains("protokube.lock"),
        "the wait for the lock is said:\n{log}"
    );
}
