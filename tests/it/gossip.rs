//! The gossip member against real mesh and memberlist peers (docs/gossip.md): the project's own
//! Go peer (tests/gossip-peer, Debian's weaveworks mesh and HashiCorp memberlist carrying kOps'
//! state) on 127.0.0.1, and the real binary as `protokube gossip` against moto for its
//! identity. Mixed clusters both ways, secrets, deletions, memberlist as primary, the primary
//! alone in the hosts block, restarts, a partition that heals, hostile connections and names.
//! Clusters of several members (deaths, rolls, strangers, a held lock) are in gossip_cluster.rs.

use crate::support;

use std::io::Write as _;
use std::time::{Duration, Instant};

use support::gossip::{
    addr, flags, free_port, local_seeds, GoPeer, Member, Node, PeerSpec, CLUSTER, WITHIN,
};

#[test]
fn mixed_mesh_cluster_relays_both_ways_with_a_secret_and_names_a_wrong_one() {
    let node = Node::new();
    let (ours, a, b, c) = (free_port(), free_port(), free_port(), free_port());
    // kOps' side: peer A seeds from us, peer B only knows us: we relay between them.
    let mut peer_a = GoPeer::start(&PeerSpec {
        name: "i-kops-master",
        mesh: Some(a),
        mesh_seeds: local_seeds(&[ours]),
        secret: "s3cret",
        ..PeerSpec::default()
    });
    let member = Member::start(
        &node,
        &flags(&[
            ("gossip-listen", addr(ours)),
            ("gossip-secret", "s3cret".into()),
            ("gossip-protocol-secondary", String::new()),
            ("gossip-seed", addr(a)),
        ]),
    );
    let mut peer_b = GoPeer::start(&PeerSpec {
        name: "i-kops-worker",
        mesh: Some(b),
        mesh_seeds: local_seeds(&[ours]),
        secret: "s3cret",
        ..PeerSpec::default()
    });
    // Our zone record reaches both: dns-controller may publish.
    for peer in [&peer_a, &peer_b] {
        peer.wait_for("protokube's zone", WITHIN, |l| {
            GoPeer::value(l, "mesh", "dns/local/NS/local").as_deref() == Some("gossip")
        });
    }
    peer_a.command("publish api.internal.c.k8s.local A 172.20.1.1,172.20.1.2");
    peer_b.wait_for("A's record, relayed", WITHIN, |l| {
        GoPeer::value(l, "mesh", "dns/local/A/api.internal.c.k8s.local").is_some()
    });
    node.wait_for_hosts("A's record", WITHIN, |h| {
        h.contains("172.20.1.1\tapi.internal.c.k8s.local")
            && h.contains("172.20.1.2\tapi.internal.c.k8s.local")
    });
    peer_b.command("publish worker.c.k8s.local A 10.0.0.9");
    peer_a.wait_for("B's record, relayed", WITHIN, |l| {
        GoPeer::value(l, "mesh", "dns/local/A/worker.c.k8s.local").as_deref() == Some("10.0.0.9")
    });
    // Another secret: never a member, named in a warning.
    let peer_c = GoPeer::start(&PeerSpec {
        name: "i-other",
        mesh: Some(c),
        mesh_seeds: local_seeds(&[ours]),
        secret: "other",
        ..PeerSpec::default()
    });
    let deadline = Instant::now() + WITHIN;
    while !member.log().contains("another gossip secret") {
        assert!(
            Instant::now() < deadline,
            "no warning of a wrong secret:\n{}",
            member.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let last = peer_c
        .lines
        .lock()
        .unwrap()
        .last()
        .cloned()
        .unwrap_or_default();
    assert!(
        GoPeer::value(&last, "mesh", "dns/local/NS/local").is_none(),
        "{last}"
    );
    assert!(!node.hosts().contains("i-other"));
}

#[test]
fn memberlist_as_primary_takes_deletions_and_skips_hostile_records() {
    let node = Node::new();
    let (ours, a) = (free_port(), free_port());
    let mut peer = GoPeer::start(&PeerSpec {
        name: "i-kops",
        memberlist: Some(a),
        memberlist_seeds: local_seeds(&[ours]),
        ..PeerSpec::default()
    });
    let metrics = node.root.path().join("gossip.prom");
    let member = Member::start(
        &node,
        &flags(&[
            ("gossip-protocol", "memberlist".into()),
            ("gossip-listen", addr(ours)),
            ("gossip-protocol-secondary", String::new()),
            ("gossip-seed", addr(a)),
        ]),
    );
    peer.wait_for("protokube's zone", WITHIN, |l| {
        GoPeer::value(l, "memberlist", "dns/local/NS/local").as_deref() == Some("gossip")
    });
    peer.command("publish gone.c.k8s.local A 10.0.0.5");
    peer.command("publish v6.c.k8s.local AAAA fd00::5");
    peer.command("publish evil.c.k8s.local A 6.6.6.6\\n9.9.9.9 registry.k8s.io");
    node.wait_for_hosts("the records", WITHIN, |h| {
        h.contains("10.0.0.5\tgone.c.k8s.local") && h.contains("fd00::5\tv6.c.k8s.local")
    });
    peer.command("delete gone.c.k8s.local A");
    node.wait_for_hosts("the deletion", WITHIN, |h| !h.contains("gone.c.k8s.local"));
    let hosts = node.hosts();
    assert!(hosts.starts_with("127.0.0.1\tlocalhost\n"), "{hosts}");
    assert!(hosts.contains("fd00::5\tv6.c.k8s.local"), "{hosts}");
    assert!(
        !hosts.contains("6.6.6.6") && !hosts.contains("evil"),
        "{hosts}"
    );
    assert!(
        member.log().contains("dns/local/A/evil.c.k8s.local"),
        "the skipped key is named"
    );
    // The metrics file: peers per protocol, records, the age of the last change.
    let deadline = Instant::now() + WITHIN;
    loop {
        let text = std::fs::read_to_string(&metrics).unwrap_or_default();
        if text.contains("protokube_gossip_peers{protocol=\"memberlist\"} 1")
            && text.contains("protokube_gossip_records 1")
            && text.contains("protokube_gossip_seconds_since_change")
        {
            break;
        }
        assert!(Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(member);
}

#[test]
fn only_the_primary_reaches_the_block_and_a_restarted_peer_or_member_catches_up() {
    let node = Node::new();
    let (mesh, list, a_mesh, a_list, b_list) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    let peer_a = |node_name| {
        GoPeer::start(&PeerSpec {
            name: node_name,
            mesh: Some(a_mesh),
            mesh_seeds: local_seeds(&[mesh]),
            memberlist: Some(a_list),
            memberlist_seeds: local_seeds(&[list]),
            ..PeerSpec::default()
        })
    };
    let mut a = peer_a("i-kops-a");
    let args = flags(&[
        ("gossip-listen", addr(mesh)),
        ("gossip-listen-secondary", addr(list)),
        ("gossip-seed", addr(a_mesh)),
        ("gossip-seed-secondary", addr(a_list)),
    ]);
    let member = Member::start(&node, &args);
    // A name only memberlist carries (a dns-controller there): kOps' protokube reads mesh only,
    // and so does this member; it still carries the name on to memberlist's other peers.
    let mut b = GoPeer::start(&PeerSpec {
        name: "dns-controller.b",
        memberlist: Some(b_list),
        memberlist_seeds: local_seeds(&[list]),
        ..PeerSpec::default()
    });
    b.wait_for("the zone", WITHIN, |l| {
        GoPeer::value(l, "memberlist", "dns/local/NS/local").is_some()
    });
    b.command("publish only-memberlist.c.k8s.local A 10.0.0.7");
    a.command("publish api.internal.c.k8s.local A 10.0.0.1");
    node.wait_for_hosts("the primary's record", WITHIN, |h| {
        h.contains("10.0.0.1\tapi.internal")
    });
    a.wait_for("the memberlist-only name, carried", WITHIN, |l| {
        GoPeer::value(l, "memberlist", "dns/local/A/only-memberlist.c.k8s.local").is_some()
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !node.hosts().contains("only-memberlist"),
        "the secondary never reaches the block:\n{}",
        node.hosts()
    );
    // A restarts with nothing: it gets the state back from us.
    drop(a);
    a = peer_a("i-kops-a");
    a.wait_for("the state again", WITHIN, |l| {
        GoPeer::value(l, "mesh", "dns/local/A/api.internal.c.k8s.local").as_deref()
            == Some("10.0.0.1")
    });
    // A partition: our member is gone while A changes a record; back, it catches up.
    drop(member);
    a.command("publish api.internal.c.k8s.local A 10.0.0.2");
    std::thread::sleep(Duration::from_millis(1100));
    let _member = Member::start(&node, &args);
    node.wait_for_hosts("the change made while apart", WITHIN, |h| {
        h.contains("10.0.0.2\tapi.internal") && !h.contains("10.0.0.1\tapi.internal")
    });
    drop(b);
}

#[test]
fn gossip_once_shows_the_view_dry_writes_it_and_says_when_no_peer_answered() {
    let node = Node::new();
    let a = free_port();
    let mut peer = GoPeer::start(&PeerSpec {
        name: "i-kops",
        mesh: Some(a),
        ..PeerSpec::default()
    });
    peer.command("publish api.internal.c.k8s.local A 10.0.0.1");
    let once = |extra: &[&str]| {
        node.protokube()
            .args(["gossip", "--once", "--gossip-protocol-secondary", ""])
            .args(flags(&[
                ("gossip-listen", addr(free_port())),
                ("gossip-seed", addr(a)),
            ]))
            .args(extra)
            .run()
    };
    let dry = once(&["--dry-run", "-o", "json"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let json: serde_json::Value = serde_json::from_str(&dry.stdout).unwrap();
    let record = &json["gossip"]["records"][0];
    assert_eq!(record["name"], "api.internal.c.k8s.local", "{json}");
    assert_eq!(record["addresses"][0], "10.0.0.1");
    assert_eq!(record["protocol"], "mesh");
    assert_eq!(record["peer"], "i-kops");
    assert!(
        !node.hosts().contains("api.internal"),
        "a dry run writes nothing"
    );
    let text = once(&["--dry-run"]);
    assert!(
        text.stdout
            .contains("hosts block:\n  10.0.0.1\tapi.internal.c.k8s.local"),
        "{}",
        text.stdout
    );
    let real = once(&[]);
    assert_eq!(real.code, 0, "{}", real.stderr);
    assert!(node.hosts().contains("10.0.0.1\tapi.internal.c.k8s.local"));
    drop(peer);
    let alone = node
        .protokube()
        .args([
            "gossip",
            "--once",
            "--timeout",
            "2s",
            "--gossip-protocol-secondary",
            "",
        ])
        .args(flags(&[
            ("gossip-listen", addr(free_port())),
            ("gossip-seed", addr(a)),
        ]))
        .run();
    assert_eq!(alone.code, 75, "{}", alone.stderr);
    assert!(
        alone.stderr.contains("no gossip peer answered"),
        "{}",
        alone.stderr
    );
    let bad = node
        .protokube()
        .args(["gossip", "--once", "--gossip-protocol", "weave"])
        .run();
    assert_eq!(bad.code, 64, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--gossip-protocol `weave`"),
        "{}",
        bad.stderr
    );
}

#[test]
fn hostile_connections_garbage_and_oversized_frames_leave_the_member_serving() {
    use std::io::Read as _;
    let node = Node::new();
    let (ours, a) = (free_port(), free_port());
    let member = Member::start(
        &node,
        &[
            flags(&[
                ("gossip-listen", addr(ours)),
                ("gossip-protocol-secondary", String::new()),
            ]),
            vec![],
        ]
        .concat(),
    );
    std::thread::sleep(Duration::from_millis(500));
    // Hundreds of idle connections, garbage, and a header then an oversized frame.
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(stream) = std::net::TcpStream::connect(addr(ours)) {
            idle.push(stream);
        }
    }
    let mut garbage = std::net::TcpStream::connect(addr(ours)).unwrap();
    let _ = garbage.write_all(b"GET / HTTP/1.1\r\n\r\n\x00\xff");
    let mut huge = std::net::TcpStream::connect(addr(ours)).unwrap();
    let _ = huge.write_all(b"weave\x01\x02\x01");
    let _ = huge.write_all(&[7u8; 32]);
    let _ = huge.write_all(&u32::MAX.to_be_bytes());
    let mut buf = [0u8; 64];
    huge.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = huge.read(&mut buf);
    // A real peer still joins, and its records still arrive.
    let mut peer = GoPeer::start(&PeerSpec {
        name: "i-kops",
        mesh: Some(a),
        mesh_seeds: local_seeds(&[ours]),
        ..PeerSpec::default()
    });
    peer.command("publish api.internal.c.k8s.local A 10.0.0.1");
    node.wait_for_hosts("the record", WITHIN, |h| {
        h.contains("10.0.0.1\tapi.internal")
    });
    drop(idle);
    drop(member);
}

#[test]
fn kops_136_unit_runs_the_member_beside_its_runs_and_stops_on_sigterm() {
    let node = Node::new();
    let (mesh, list, a) = (free_port(), free_port(), free_port());
    let log = tempfile::NamedTempFile::new().unwrap();
    // nodeup's 1.36 line; the ports and seed as an operator's settings file would give them.
    let mut daemon = node
        .protokube()
        .args([
            "--cloud=aws",
            "--containerized=false",
            "--gossip=true",
            "--v=4",
        ])
        .env("PROTOKUBE_GOSSIP_LISTEN", addr(mesh))
        .env("PROTOKUBE_GOSSIP_LISTEN_SECONDARY", addr(list))
        .env("PROTOKUBE_GOSSIP_SEED", addr(a))
        .spawn_to(
            std::fs::File::create("/dev/null").unwrap(),
            log.reopen().unwrap(),
        );
    let mut peer = GoPeer::start(&PeerSpec {
        name: "dns-controller.master",
        mesh: Some(a),
        mesh_seeds: local_seeds(&[mesh]),
        ..PeerSpec::default()
    });
    peer.wait_for("the node's zone", WITHIN, |l| {
        GoPeer::value(l, "mesh", "dns/local/NS/local").as_deref() == Some("gossip")
    });
    peer.command("publish api.c.k8s.local A 203.0.113.10");
    node.wait_for_hosts("the gossip-only public name", WITHIN, |h| {
        h.contains("203.0.113.10\tapi.c.k8s.local")
    });
    assert_eq!(
        support::stop_with_sigterm(&mut daemon, Duration::from_secs(10)),
        Some(0)
    );
    let log = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        !log.contains("--gossip-listen"),
        "gossip flags are not ignored: {log}"
    );
}

#[test]
fn a_sync_in_another_process_leaves_the_members_names_alone() {
    let node = Node::new();
    // A running master: the worker's own computation of api.internal is its address.
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2("us-east-1").await;
        let tags = [("KubernetesCluster", CLUSTER), ("k8s.io/role/master", "1")];
        support::seed::instance(&ec2, "us-east-1a", &tags).await
    });
    let (ours, a) = (free_port(), free_port());
    let mut peer = GoPeer::start(&PeerSpec {
        name: "dns-controller.m",
        mesh: Some(a),
        mesh_seeds: local_seeds(&[ours]),
        ..PeerSpec::default()
    });
    let _member = Member::start(
        &node,
        &flags(&[
            ("gossip-listen", addr(ours)),
            ("gossip-protocol-secondary", String::new()),
        ]),
    );
    peer.command("publish api.internal.c.k8s.local A 172.20.9.9");
    node.wait_for_hosts("dns-controller's api.internal", WITHIN, |h| {
        h.contains("172.20.9.9\tapi.internal.c.k8s.local")
    });
    // The worker's own computation would put the master's address there; the name is the
    // member's, so the run leaves it as it is.
    let run = node
        .protokube()
        .args(["publish-dns", "--dns", "hosts", "-o", "json"])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hosts = node.hosts();
    assert!(
        hosts.contains("172.20.9.9\tapi.internal.c.k8s.local"),
        "{hosts}\n{}",
        run.stdout
    );
}
