//! Fleet scale (docs/performance.md): a converged master's `sync` asks the cloud once (`DescribeInstances`)
//! and Route53 never; the full check (every `--verify-interval`, and whenever that answer
//! changes) asks for volumes and masters at once and reads each zone once, the zone id
//! remembered. Counted by the emulator's request recorder (`scripts/moto_server.py`); moto
//! itself serves every call.

use crate::support;

use std::time::Duration;

use support::bed::{Bed, NodeKind, REGION};
use support::seed;

/// The operations of the last run, sorted.
fn operations(node: &Bed) -> Vec<String> {
    let mut operations = node.moto().operations();
    operations.sort();
    operations
}

/// Runs `sync` as the bed's master with `extra` flags; it must succeed. Returns the sorted
/// operations it made.
fn sync(node: &Bed, extra: &[&str]) -> Vec<String> {
    node.moto().reset_operations();
    let out = node.run("sync", extra);
    assert_eq!(out.code, 0, "{out:#?}");
    operations(node)
}

/// A full check: volumes and masters, one read of the zone, no zone lookup.
fn assert_full_check(operations: &[String]) {
    assert_eq!(
        operations
            .iter()
            .filter(|o| !o.contains("/rrset") && !o.contains("/change/"))
            .collect::<Vec<_>>(),
        ["DescribeInstances", "DescribeVolumes"],
        "{operations:?}"
    );
    let reads = operations
        .iter()
        .filter(|o| o.starts_with("GET") && o.ends_with("/rrset"))
        .count();
    assert_eq!(reads, 1, "{operations:?}");
}

/// The values of one record set of the cluster's zone.
fn record(node: &Bed, name: &str, kind: &str) -> Option<Vec<String>> {
    let records = support::runtime().block_on(async {
        seed::zone_records(&node.moto().route53().await, node.zone_id.as_ref().unwrap()).await
    });
    records
        .get(&(name.to_owned(), kind.to_owned()))
        .map(|(_, values)| values.clone())
}

fn state(node: &Bed) -> serde_json::Value {
    let path = node.root.join("/var/lib/protokube/state.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The bed's master brought up and converged: cold run, then the first full check.
fn converged_master() -> Bed {
    let node = Bed::new(NodeKind::HaMaster);
    sync(&node, &[]);
    assert_full_check(&sync(&node, &[]));
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);
    node
}

/// The volume holding etcd member `member` of cluster `key` (tag `k8s.io/etcd/<key>`).
fn member_volume(node: &Bed, key: &str, member: &str) -> String {
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        let out = ec2
            .describe_volumes()
            .filters(
                aws_sdk_ec2::types::Filter::builder()
                    .name(format!("tag:k8s.io/etcd/{key}"))
                    .values(format!("{member}/a,b,c"))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        out.volumes()[0].volume_id().unwrap().to_owned()
    })
}

/// A running master of the bed's cluster in `zone`; returns (id, private address).
fn new_master(node: &Bed, zone: &str) -> (String, String) {
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        let tags = [
            ("KubernetesCluster", support::bed::HA),
            ("k8s.io/role/master", "1"),
        ];
        let id = seed::instance(&ec2, zone, &tags).await;
        let (ip, _) = seed::instance_addresses(&ec2, &id).await;
        (id, ip)
    })
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_converged_master_asks_once_and_checks_in_full_after_the_interval() {
    let node = converged_master();
    let recorded = state(&node)["verified"]["at"].as_str().unwrap().to_owned();
    assert!(
        state(&node)["zones"]["zones"][0]["id"].is_string(),
        "{}",
        state(&node)
    );

    // The interval passes: the next run checks in full, and records when.
    std::thread::sleep(Duration::from_millis(2100));
    assert_full_check(&sync(&node, &["--verify-interval", "2s"]));
    let again = state(&node)["verified"]["at"].as_str().unwrap().to_owned();
    assert!(again > recorded, "{recorded} -> {again}");
    assert_eq!(
        sync(&node, &["--verify-interval", "1h"]),
        ["DescribeInstances"]
    );

    // The full check's two EC2 questions are asked at once: with both slow, whichever arrives
    // second arrives while the first is unanswered (asked one after the other, they never
    // overlap, whatever the machine's load).
    node.moto().set_faults(serde_json::json!([
        {"match": "DescribeVolumes", "delay": 0.5},
        {"match": "DescribeInstances", "delay": 0.5}
    ]));
    assert_full_check(&sync(&node, &["--verify-interval", "0"]));
    let overlaps = node.moto().overlaps();
    let concurrent = overlaps.iter().any(|(op, during)| {
        (op == "DescribeInstances" && during.contains(&"DescribeVolumes".to_owned()))
            || (op == "DescribeVolumes" && during.contains(&"DescribeInstances".to_owned()))
    });
    assert!(concurrent, "{overlaps:?}");
    node.moto().set_faults(serde_json::json!([]));

    // `--verify-interval 0`: every run is a full check.
    assert_full_check(&sync(&node, &["--verify-interval", "0"]));
    assert_full_check(&sync(&node, &["--verify-interval", "0"]));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn each_change_in_the_answer_triggers_the_full_check_in_the_same_run() {
    let node = converged_master();
    let internal = "api.internal.ha.example.com";
    let etcd_b = "etcd-b.internal.ha.example.com";
    assert_eq!(
        record(&node, internal, "A"),
        Some(vec![node.private_ip.clone()])
    );

    // A new master appears, with member b's volumes attached: full check, names converge, and
    // the run after it is converged again.
    let (b, b_ip) = new_master(&node, "us-east-1b");
    let main_b = member_volume(&node, "main", "b");
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        seed::attach(&ec2, &main_b, &b, "/dev/xvdu").await;
    });
    assert_full_check(&sync(&node, &[]));
    let mut both = vec![node.private_ip.clone(), b_ip.clone()];
    both.sort();
    assert_eq!(record(&node, internal, "A"), Some(both));
    assert_eq!(record(&node, etcd_b, "A"), Some(vec![b_ip.clone()]));
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);

    // Member b's volume moves to another instance (b2): both masters' volumes changed.
    let (b2, b2_ip) = new_master(&node, "us-east-1b");
    assert_full_check(&sync(&node, &[])); // b2 is new
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        ec2.detach_volume()
            .volume_id(&main_b)
            .instance_id(&b)
            .send()
            .await
            .unwrap();
        seed::attach(&ec2, &main_b, &b2, "/dev/xvdu").await;
    });
    assert_full_check(&sync(&node, &[]));
    assert_eq!(record(&node, etcd_b, "A"), Some(vec![b2_ip.clone()]));
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);

    // A master's address changes (an Elastic IP associated): its public name follows.
    let public_ip = support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        let address = ec2
            .allocate_address()
            .domain(aws_sdk_ec2::types::DomainType::Vpc)
            .send()
            .await
            .unwrap();
        ec2.associate_address()
            .allocation_id(address.allocation_id().unwrap())
            .instance_id(&b2)
            .send()
            .await
            .unwrap();
        address.public_ip().unwrap().to_owned()
    });
    assert_full_check(&sync(&node, &[]));
    let public = record(&node, "api.ha.example.com", "A").unwrap();
    assert!(public.contains(&public_ip), "{public:?}");
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);

    // A master is terminated: its address leaves the shared names at once.
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        ec2.terminate_instances()
            .instance_ids(&b)
            .send()
            .await
            .unwrap();
    });
    assert_full_check(&sync(&node, &[]));
    let internal_now = record(&node, internal, "A").unwrap();
    assert!(!internal_now.contains(&b_ip), "{internal_now:?}");
    assert!(internal_now.contains(&b2_ip), "{internal_now:?}");
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_record_edited_behind_protokubes_back_is_mended_by_the_next_full_check() {
    let node = converged_master();
    let name = "etcd-a.internal.ha.example.com";
    support::runtime().block_on(async {
        seed::records(
            &node.moto().route53().await,
            node.zone_id.as_ref().unwrap(),
            &[(name.to_owned(), "A", vec!["192.0.2.99".to_owned()])],
        )
        .await;
    });
    // Within the interval the answer is unchanged: the edit is not seen yet.
    assert_eq!(
        sync(&node, &["--verify-interval", "1h"]),
        ["DescribeInstances"]
    );
    assert_eq!(
        record(&node, name, "A"),
        Some(vec!["192.0.2.99".to_owned()])
    );
    // No later than the interval: the full check finds and mends it.
    std::thread::sleep(Duration::from_millis(2100));
    node.moto().reset_operations();
    let out = node.run("sync", &["--verify-interval", "2s", "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert_eq!(
        record(&node, name, "A"),
        Some(vec![node.private_ip.clone()])
    );
    assert_eq!(
        sync(&node, &["--verify-interval", "1h"]),
        ["DescribeInstances"]
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_dry_run_trusts_as_the_run_does_and_records_nothing() {
    let node = converged_master();
    let before = std::fs::read(node.root.join("/var/lib/protokube/state.json")).unwrap();
    node.moto().reset_operations();
    let out = node.run("sync", &["--dry-run", "--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(operations(&node), ["DescribeInstances"]);
    let dry = out.report().change_set();
    let out = node.run("sync", &["--dry-run", "--verify-interval", "0"]);
    assert_eq!(
        out.report().change_set(),
        dry,
        "a full check reports what a trusted run reports"
    );
    assert_eq!(
        std::fs::read(node.root.join("/var/lib/protokube/state.json")).unwrap(),
        before
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn gossip_masters_ask_once_and_gossip_workers_not_at_all() {
    // A worker needs the masters' addresses only, and trusts those it verified.
    let worker = Bed::new(NodeKind::GossipWorker);
    assert_eq!(sync(&worker, &[]), ["DescribeInstances"]);
    assert_eq!(sync(&worker, &[]), Vec::<String>::new());
    // A gossip master: its full check has no zone to read, then one call.
    let master = Bed::new(NodeKind::GossipMaster);
    sync(&master, &[]);
    assert_eq!(sync(&master, &[]), ["DescribeInstances", "DescribeVolumes"]);
    assert_eq!(sync(&master, &[]), ["DescribeInstances"]);
}

/// `sync` as the bed's node with another spec; it must succeed. Returns the sorted operations
/// and the warnings, as the report has them (a warning is also a log line: none without the
/// other).
fn sync_with_spec(
    node: &Bed,
    spec: &std::path::Path,
    extra: &[&str],
) -> (Vec<String>, Vec<String>) {
    node.moto().reset_operations();
    let out = node.run_with_spec("sync", spec, extra);
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings;
    assert_eq!(
        out.stderr.contains(" WARN "),
        !warnings.is_empty(),
        "{out:#?}"
    );
    (operations(node), warnings)
}

/// A load-balancer cluster beside a name another writer holds (kOps' alias at `api.<cluster>`,
/// dns-controller's `api.internal` without an ownership TXT): the name left alone is a stable
/// outcome, so a converged run asks once and warns about nothing; the warning comes back once
/// with each full check.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn names_left_alone_count_as_verified_and_are_warned_about_once_per_interval() {
    let node = Bed::new(NodeKind::HaMaster);
    let dir = tempfile::tempdir().unwrap();
    let lb: yaml_serde::Value =
        yaml_serde::from_str("loadBalancer: {type: Public, class: Network}").unwrap();
    let spec = support::spec_with(dir.path(), "ha.yaml", &["spec", "api"], lb);
    let internal = format!("api.internal.{}", support::bed::HA);
    support::runtime().block_on(async {
        let route53 = node.moto().route53().await;
        let zone = node.zone_id.as_ref().unwrap();
        seed::load_balancer_alias(&route53, zone, &format!("api.{}", support::bed::HA)).await;
        // As dns-controller leaves it: addresses, no TXT.
        seed::records(
            &route53,
            zone,
            &[(internal.clone(), "A", vec!["10.99.0.1".into()])],
        )
        .await;
    });
    let left_alone = |warnings: &[String]| {
        warnings
            .iter()
            .filter(|w| w.contains(&internal) && w.contains("left alone"))
            .count()
    };
    // Cold (the volumes are formatted: not recorded), then the first recorded full check.
    let (_, warnings) = sync_with_spec(&node, &spec, &[]);
    assert_eq!(left_alone(&warnings), 1, "{warnings:?}");
    let (operations, warnings) = sync_with_spec(&node, &spec, &[]);
    assert_full_check(&operations);
    assert_eq!(left_alone(&warnings), 1, "{warnings:?}");
    // Converged: one call, no warning, the name still dns-controller's. (The trusted runs are
    // given an hour, the ones meant to find the interval passed two seconds: a slow run under
    // load must not pass the interval by accident.)
    for _ in 0..2 {
        let (operations, warnings) = sync_with_spec(&node, &spec, &["--verify-interval", "1h"]);
        assert_eq!(operations, ["DescribeInstances"]);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    assert_eq!(
        record(&node, &internal, "A"),
        Some(vec!["10.99.0.1".into()])
    );
    assert_eq!(record(&node, &internal, "TXT"), None);
    // The interval passes: the full check warns once, and the runs after it are quiet again.
    std::thread::sleep(Duration::from_millis(2100));
    let (operations, warnings) = sync_with_spec(&node, &spec, &["--verify-interval", "2s"]);
    assert_full_check(&operations);
    assert_eq!(left_alone(&warnings), 1, "{warnings:?}");
    let (operations, warnings) = sync_with_spec(&node, &spec, &["--verify-interval", "1h"]);
    assert_eq!(operations, ["DescribeInstances"]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        state(&node)["verified"]["left_alone"][0]["name"],
        serde_json::json!(internal)
    );
}

fn mtime(path: &std::path::Path) -> std::time::SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

/// A gossip worker keeps the masters it last verified and the hosts block it wrote: a converged
/// run asks the cloud nothing and writes nothing; a hosts block edited behind its back, or the
/// interval passing, brings the full check (one `DescribeInstances`), which follows a replaced
/// master.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_gossip_worker_asks_nothing_while_its_check_holds_and_follows_a_replaced_master() {
    let node = Bed::new(NodeKind::GossipWorker);
    let hosts_path = node.root.join("/etc/hosts");
    let state_path = node.root.join("/var/lib/protokube/state.json");
    let (_, master_ip) = node.running_master();
    let internal = format!("api.internal.{}", support::bed::GOSSIP);
    let line = |ip: &str| format!("{ip}\t{internal}");
    // Cold: the masters asked once, the block written and recorded.
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);
    let hosts = std::fs::read_to_string(&hosts_path).unwrap();
    assert!(hosts.contains(&line(&master_ip)), "{hosts}");
    // Converged: nothing asked, nothing written.
    let before = (mtime(&hosts_path), mtime(&state_path));
    for _ in 0..2 {
        assert_eq!(sync(&node, &[]), Vec::<String>::new());
    }
    assert_eq!((mtime(&hosts_path), mtime(&state_path)), before);
    // The block edited behind its back: checked in full, and mended.
    std::fs::write(&hosts_path, "127.0.0.1 localhost\n").unwrap();
    assert_eq!(sync(&node, &[]), ["DescribeInstances"]);
    assert!(std::fs::read_to_string(&hosts_path)
        .unwrap()
        .contains(&line(&master_ip)));
    assert_eq!(sync(&node, &[]), Vec::<String>::new());

    // The master is replaced: within the interval the worker still trusts what it verified; at
    // the latest after it, the names point at the new master.
    let (old_id, _) = node.running_master();
    let new_ip = support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        ec2.terminate_instances()
            .instance_ids(&old_id)
            .send()
            .await
            .unwrap();
        let tags = [
            ("KubernetesCluster", support::bed::GOSSIP),
            ("k8s.io/role/master", "1"),
        ];
        let id = seed::instance(&ec2, support::bed::ZONE, &tags).await;
        seed::instance_addresses(&ec2, &id).await.0
    });
    assert_eq!(
        sync(&node, &["--verify-interval", "1h"]),
        Vec::<String>::new()
    );
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(
        sync(&node, &["--verify-interval", "2s"]),
        ["DescribeInstances"]
    );
    let hosts = std::fs::read_to_string(&hosts_path).unwrap();
    assert!(hosts.contains(&line(&new_ip)), "{hosts}");
    assert!(!hosts.contains(&master_ip), "{hosts}");
    // `--verify-interval 0`: every run asks.
    assert_eq!(
        sync(&node, &["--verify-interval", "0"]),
        ["DescribeInstances"]
    );
    // No master running (a worker booting before its control plane): nothing is trusted, so
    // every run asks until one is.
    let (new_id, _) = node.running_master();
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        ec2.terminate_instances()
            .instance_ids(&new_id)
            .send()
            .await
            .unwrap();
    });
    for _ in 0..2 {
        assert_eq!(
            sync(&node, &["--verify-interval", "0"]),
            ["DescribeInstances"]
        );
        assert_eq!(sync(&node, &[]), ["DescribeInstances"]);
    }
}
