//! The clouds where protokube is the gossip member only (DESIGN §14), each against its
//! stand-in (`scripts/cloud_standin.py`, every answer read by the cloud's official client) and
//! beside the project's Go gossip peer: a worker's identity and exactly its cluster's control
//! plane as seeds (another cluster whose name or tag contains ours among them, the seed on the
//! last page), its join and dns-controller's names in its hosts block, the old daemon's unit
//! running the member alone, a missing or wrong token in one line, a rate limit waited out, and
//! the jobs etcd-manager and dns-controller own refused with 64.

use crate::support;

use std::time::Duration;

use support::clouds::{
    CloudKind, CloudWorld, Instance, AZURE, DIGITALOCEAN, HETZNER, OPENSTACK, SCALEWAY,
};
use support::gossip::{at, flags, free_port, GoPeer, PeerSpec, WITHIN};

const CLUSTER: &str = "c.k8s.local";
/// The worker the tests run protokube on.
const WORKER: u64 = 900;

/// A world of `kind` with our worker, our control plane (its one live server, the Go peer at
/// `peer_ip`, after 50 that do not answer, so that it is on the second page of a listing),
/// another cluster whose tag contains ours, and a server of no cluster.
fn world(kind: CloudKind, worker_ip: &str, peer_ip: &str, others_ip: &str) -> CloudWorld {
    let world = CloudWorld::new(kind);
    let names: Vec<String> = (0..50).map(|n| format!("master-{n}")).collect();
    let ips: Vec<String> = (0..50).map(|n| format!("10.255.0.{}", n + 1)).collect();
    let mut instances: Vec<Instance<'_>> = (0..50)
        .map(|n| Instance {
            id: 100 + n as u64,
            name: &names[n],
            cluster: CLUSTER,
            role: "ControlPlane",
            ip: Some(&ips[n]),
        })
        .collect();
    instances.extend([
        Instance {
            id: 200,
            name: "master-live",
            cluster: CLUSTER,
            role: "ControlPlane",
            ip: Some(peer_ip),
        },
        Instance {
            id: 201,
            name: "master-nonet",
            cluster: CLUSTER,
            role: "ControlPlane",
            ip: None,
        },
        Instance {
            id: WORKER,
            name: "nodes-1",
            cluster: CLUSTER,
            role: "Node",
            ip: Some(worker_ip),
        },
        Instance {
            id: 300,
            name: "master-other",
            cluster: "c-k8s-local-2.k8s.local",
            role: "ControlPlane",
            ip: Some(others_ip),
        },
        Instance {
            id: 301,
            name: "master-sub",
            cluster: "ab.c.k8s.local",
            role: "ControlPlane",
            ip: Some(others_ip),
        },
        Instance {
            id: 302,
            name: "bastion",
            cluster: "",
            role: "Bastion",
            ip: Some(others_ip),
        },
    ]);
    world.add(&instances);
    world
}

/// The worker's gossip name on `kind`, as kOps' protokube names it there.
fn gossip_name(kind: CloudKind) -> &'static str {
    match kind.word {
        "hetzner" => "nodes-1-900",
        "azure" => "nodes-1_0",
        "scaleway" => "nodes-1-00000000-0000-4000-8000-000000000900",
        _ => "nodes-1",
    }
}

fn joins_with_its_identity_and_exactly_its_clusters_control_plane(kind: CloudKind, base: u8) {
    let ip = |n: u8| format!("127.0.{base}.{n}");
    let (worker_ip, peer_ip, others_ip) = (ip(1), ip(2), ip(3));
    let world = world(kind, &worker_ip, &peer_ip, &others_ip);
    let mesh = free_port();
    // The control plane: kOps' protokube and dns-controller's names.
    let mut master = GoPeer::start(&PeerSpec {
        name: "master-live",
        host: &peer_ip,
        mesh: Some(mesh),
        ..PeerSpec::default()
    });
    master.command("publish api.internal.c.k8s.local A 172.20.1.1");
    // Another cluster's master, at the address of its servers: never joined.
    let other = GoPeer::start(&PeerSpec {
        name: "master-other",
        host: &others_ip,
        mesh: Some(mesh),
        ..PeerSpec::default()
    });
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("etc")).unwrap();
    std::fs::write(root.path().join("etc/hosts"), "127.0.0.1\tlocalhost\n").unwrap();
    let out = world
        .protokube(WORKER)
        .args([
            "gossip",
            "--once",
            "-v",
            "-o",
            "json",
            "--gossip-protocol-secondary",
            "",
        ])
        .args(flags(&[("gossip-listen", at(&worker_ip, mesh))]))
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let record = &report["gossip"]["records"][0];
    assert_eq!(record["name"], "api.internal.c.k8s.local", "{report}");
    assert_eq!(record["peer"], "master-live");
    let hosts = std::fs::read_to_string(root.path().join("etc/hosts")).unwrap();
    assert!(
        hosts.contains("172.20.1.1\tapi.internal.c.k8s.local"),
        "{hosts}"
    );
    // Its identity and its seeds, as the cloud named them: every page, our cluster's control
    // plane only (not the worker, not the server with no private network, not another
    // cluster's whose name or tag contains ours).
    let seeds_line = out
        .stderr
        .lines()
        .find(|l| l.contains("the cloud's seeds for cluster"))
        .unwrap_or_else(|| panic!("no seeds logged:\n{}", out.stderr));
    let seeds: Vec<&str> = seeds_line
        .rsplit(": ")
        .next()
        .unwrap()
        .split(", ")
        .map(str::trim)
        .collect();
    let mut expected: Vec<String> = (1..=50).map(|n| format!("10.255.0.{n}")).collect();
    expected.push(peer_ip.clone());
    assert_eq!(seeds, expected, "{seeds_line}");
    assert!(!seeds_line.contains(&others_ip) && !seeds_line.contains(&worker_ip));
    assert!(
        out.stderr
            .contains(&format!("leaving as `{}`", gossip_name(kind))),
        "not its gossip name:\n{}",
        out.stderr
    );
    let other_peers = |l: &serde_json::Value| l["peers"]["mesh"].as_u64().unwrap_or(0);
    assert!(
        other
            .lines
            .lock()
            .unwrap()
            .iter()
            .all(|l| other_peers(l) == 0),
        "another cluster's master was joined"
    );
    drop(master);
    world.assert_the_client_read_every_answer();
}

#[test]
fn hetzner_a_worker_joins_with_its_identity_and_exactly_its_clusters_control_plane() {
    joins_with_its_identity_and_exactly_its_clusters_control_plane(HETZNER, 61);
}

#[test]
fn digitalocean_a_worker_joins_with_its_identity_and_exactly_its_clusters_control_plane() {
    joins_with_its_identity_and_exactly_its_clusters_control_plane(DIGITALOCEAN, 62);
}

/// kOps' unit there (`--cloud=<cloud> --containerized=false --gossip=true --v=4`) runs the
/// member alone: dns-controller's names reach the hosts block, and it stops on SIGTERM.
fn the_old_daemons_unit_runs_the_member_alone(kind: CloudKind, base: u8) {
    let ip = |n: u8| format!("127.0.{base}.{n}");
    let world = world(kind, &ip(1), &ip(2), &ip(3));
    let mesh = free_port();
    let mut master = GoPeer::start(&PeerSpec {
        name: "master-live",
        host: &ip(2),
        mesh: Some(mesh),
        ..PeerSpec::default()
    });
    master.command("publish kops-controller.internal.c.k8s.local A 172.20.1.5");
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("etc")).unwrap();
    std::fs::write(root.path().join("etc/hosts"), "127.0.0.1\tlocalhost\n").unwrap();
    let unit = format!(
        "--cloud={} --containerized=false --gossip=true --v=4",
        kind.word
    );
    // hcloud's own variable moves Hetzner's API root too.
    let protokube = match kind.word {
        "hetzner" => world
            .protokube(WORKER)
            .env_remove(kind.api_variable)
            .env("HCLOUD_ENDPOINT", world.api_url()),
        _ => world.protokube(WORKER),
    };
    let mut daemon = protokube
        .args(unit.split(' '))
        .args(flags(&[
            ("gossip-listen", at(&ip(1), mesh)),
            ("gossip-protocol-secondary", String::new()),
        ]))
        .arg_path("--root", root.path())
        .spawn();
    support::gossip::wait_until("the names in the hosts block", WITHIN, || {
        std::fs::read_to_string(root.path().join("etc/hosts"))
            .unwrap()
            .contains("172.20.1.5\tkops-controller.internal.c.k8s.local")
    });
    assert_eq!(
        support::stop_with_sigterm(&mut daemon, Duration::from_secs(20)),
        Some(0)
    );
    // Without --gossip there is nothing for it to do there, as kOps' protokube says.
    let idle = world
        .protokube(WORKER)
        .args(["--cloud", kind.word, "--containerized=false"])
        .run();
    assert_eq!(idle.code, 64, "{}", idle.stderr);
    assert!(idle.stderr.contains("without --gossip"), "{}", idle.stderr);
    world.assert_the_client_read_every_answer();
}

#[test]
fn hetzner_the_old_daemons_unit_runs_the_member_alone() {
    the_old_daemons_unit_runs_the_member_alone(HETZNER, 63);
}

#[test]
fn digitalocean_the_old_daemons_unit_runs_the_member_alone() {
    the_old_daemons_unit_runs_the_member_alone(DIGITALOCEAN, 64);
}

/// A missing or wrong token is one line naming the variable; a rate limit is waited out until
/// the moment the cloud names, not burst; `mount` and `publish-dns --dns zones` exit 64 naming
/// etcd-manager and dns-controller, before anything is asked.
fn tokens_rate_limits_and_the_jobs_others_own(kind: CloudKind, base: u8) {
    let ip = |n: u8| format!("127.0.{base}.{n}");
    let world = world(kind, &ip(1), &ip(2), &ip(3));
    let root = tempfile::tempdir().unwrap();
    let once = |protokube: support::Protokube| {
        protokube
            .args([
                "gossip",
                "--once",
                "--dry-run",
                "--timeout",
                "6s",
                "--gossip-protocol-secondary",
                "",
            ])
            .args(flags(&[("gossip-listen", at(&ip(1), free_port()))]))
            .arg_path("--root", root.path())
            .run()
    };
    let missing = once(world.protokube(WORKER).env_remove(kind.token_variable));
    assert_eq!(missing.code, kind.missing_code, "{}", missing.stderr);
    assert_eq!(missing.error_lines().len(), 1, "{}", missing.stderr);
    assert!(
        missing.error_lines()[0].contains(kind.missing_says),
        "{}",
        missing.stderr
    );
    let wrong = once(world.protokube(WORKER).env(kind.token_variable, "revoked"));
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    assert_eq!(wrong.error_lines().len(), 1, "{}", wrong.stderr);
    assert!(
        wrong.error_lines()[0].contains(kind.rejected_says)
            && wrong.stderr.contains(kind.rejected_status),
        "{}",
        wrong.stderr
    );
    // Rate-limited once: asked again once the limit resets (the second after the answer's reset
    // header), and only once.
    let list = kind.list_operation;
    world.change(|state| state["rate_limited"] = serde_json::json!({list: 1}));
    let before = world.requests().len();
    let limited = once(world.protokube(WORKER));
    assert_eq!(limited.code, 75, "no peer answers here: {}", limited.stderr);
    let asked: Vec<serde_json::Value> = world.requests()[before..]
        .iter()
        .filter(|r| r["operation"] == list)
        .cloned()
        .collect();
    assert_eq!(asked[0]["status"], 429, "{asked:#?}");
    let reset = asked[0]["reset"].as_f64().unwrap();
    assert!(
        asked[1]["status"] == 200 && asked[1]["time"].as_f64().unwrap() >= reset,
        "not waited out: {asked:#?}"
    );
    // The jobs other components own there.
    for (args, owner) in [
        (vec!["mount"], "etcd-manager"),
        (vec!["discover-volumes"], "etcd-manager"),
        (
            vec!["publish-dns", "--dns", "zones", "--cluster-id", CLUSTER],
            "dns-controller",
        ),
    ] {
        let before = world.requests().len();
        let out = world
            .protokube(WORKER)
            .args(&args)
            .arg_path("--root", root.path())
            .run();
        assert_eq!(out.code, 64, "{args:?}: {}", out.stderr);
        assert_eq!(out.error_lines().len(), 1, "{}", out.stderr);
        let line = out.error_lines()[0];
        assert!(
            line.contains(owner) && line.contains(&format!("--cloud {}", kind.word)),
            "{line}"
        );
        assert_eq!(
            world.requests().len(),
            before,
            "{args:?} asked the cloud before refusing"
        );
    }
    world.assert_the_client_read_every_answer();
}

#[test]
fn hetzner_tokens_rate_limits_and_the_jobs_others_own() {
    tokens_rate_limits_and_the_jobs_others_own(HETZNER, 65);
}

#[test]
fn digitalocean_tokens_rate_limits_and_the_jobs_others_own() {
    tokens_rate_limits_and_the_jobs_others_own(DIGITALOCEAN, 66);
}

#[test]
fn openstack_a_worker_joins_with_its_identity_and_exactly_its_clusters_control_plane() {
    joins_with_its_identity_and_exactly_its_clusters_control_plane(OPENSTACK, 67);
}

#[test]
fn openstack_the_old_daemons_unit_runs_the_member_alone() {
    the_old_daemons_unit_runs_the_member_alone(OPENSTACK, 68);
}

#[test]
fn openstack_tokens_rate_limits_and_the_jobs_others_own() {
    tokens_rate_limits_and_the_jobs_others_own(OPENSTACK, 69);
}

#[test]
fn azure_a_worker_joins_with_its_identity_and_exactly_its_clusters_control_plane() {
    joins_with_its_identity_and_exactly_its_clusters_control_plane(AZURE, 70);
}

#[test]
fn azure_the_old_daemons_unit_runs_the_member_alone() {
    the_old_daemons_unit_runs_the_member_alone(AZURE, 71);
}

#[test]
fn azure_tokens_rate_limits_and_the_jobs_others_own() {
    tokens_rate_limits_and_the_jobs_others_own(AZURE, 72);
}

#[test]
fn scaleway_a_worker_joins_with_its_identity_and_exactly_its_clusters_control_plane() {
    joins_with_its_identity_and_exactly_its_clusters_control_plane(SCALEWAY, 73);
}

#[test]
fn scaleway_the_old_daemons_unit_runs_the_member_alone() {
    the_old_daemons_unit_runs_the_member_alone(SCALEWAY, 74);
}

#[test]
fn scaleway_tokens_rate_limits_and_the_jobs_others_own() {
    tokens_rate_limits_and_the_jobs_others_own(SCALEWAY, 75);
}
