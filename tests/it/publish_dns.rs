//! `publish-dns` end to end against the local AWS emulator: Route53 with placeholders, a foreign
//! record and thousands of unrelated records; the hosts file, also bind-mounted; throttling
//! injected in front of the emulator (real SDK retries).

use crate::support;

use support::block::TestRoot;
use support::{seed, ImdsServer, Moto, Protokube, RunOutput};

const REGION: &str = "us-east-1";
const CLUSTER: &str = "c.example.com";

/// Two masters (a in zone a, b in zone b) with their `main` volumes attached; member c's volume
/// attached nowhere: instance ids, private IPs, public IPs.
struct Cluster {
    masters: Vec<String>,
    private: Vec<String>,
    public: Vec<String>,
}

async fn seed_cluster(moto: &Moto, cluster: &str) -> Cluster {
    let ec2 = moto.ec2(REGION).await;
    let tags: Vec<(&str, &str)> = vec![("KubernetesCluster", cluster), ("k8s.io/role/master", "1")];
    let mut out = Cluster {
        masters: vec![],
        private: vec![],
        public: vec![],
    };
    for (member, zone) in [("a", "us-east-1a"), ("b", "us-east-1b")] {
        let instance = seed::instance(&ec2, zone, &tags).await;
        let volume =
            seed::etcd_volume(&ec2, cluster, zone, &[("main", &format!("{member}/a,b,c"))]).await;
        seed::attach(&ec2, &volume, &instance, "/dev/xvdu").await;
        let (private, public) = seed::instance_addresses(&ec2, &instance).await;
        out.masters.push(instance);
        out.private.push(private);
        out.public.push(public.unwrap());
    }
    seed::etcd_volume(&ec2, cluster, "us-east-1c", &[("main", "c/a,b,c")]).await;
    // A worker of the cluster: not a master, never in the API records.
    seed::instance(&ec2, "us-east-1a", &[("KubernetesCluster", cluster)]).await;
    out
}

fn publish(moto: &Moto, imds: &ImdsServer, root: &TestRoot, extra: &[&str]) -> RunOutput {
    Protokube::new()
        .moto(moto)
        .imds(imds)
        .args([
            "publish-dns",
            "--master",
            "--cluster-id",
            CLUSTER,
            "-o",
            "json",
        ])
        .arg_path("--root", root.path())
        .args(extra)
        .run()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The cluster and its zone `example.com`: kOps' placeholders, someone else's record at a name
/// protokube would manage, member c's record (its volume attached nowhere), and 300 unrelated
/// names.
fn seed_cluster_and_zone(moto: &Moto) -> (Cluster, String) {
    let a = |name: &str, value: &str| (name.to_owned(), "A", vec![value.to_owned()]);
    support::runtime().block_on(async {
        let cluster = seed_cluster(moto, CLUSTER).await;
        let route53 = moto.route53().await;
        let zone = seed::hosted_zone(&route53, "example.com").await;
        let mut sets = vec![
            a("api.c.example.com", "203.0.113.123"),
            a("api.internal.c.example.com", "203.0.113.123"),
            a("etcd-b.internal.c.example.com", "192.0.2.1"),
            a("etcd-c.internal.c.example.com", "10.1.1.1"),
            (
                "etcd-c.internal.c.example.com".to_owned(),
                "TXT",
                vec![format!(
                    "\"heritage=protokube,protokube/cluster={CLUSTER}\""
                )],
            ),
        ];
        sets.extend((0..300).map(|i| a(&format!("host-{i}.example.com"), "192.0.2.9")));
        seed::records(&route53, &zone, &sets).await;
        (cluster, zone)
    })
}

/// The zone's records after the first publish: each name exactly, owned where it is ours.
fn assert_exact_records(moto: &Moto, zone: &str, cluster: &Cluster) {
    let records = support::runtime()
        .block_on(async { seed::zone_records(&moto.route53().await, zone).await });
    let a = |name: &str| records.get(&(name.to_owned(), "A".to_owned())).cloned();
    let owner = format!("\"heritage=protokube,protokube/cluster={CLUSTER}\"");
    for (name, expected) in [
        (
            "etcd-a.internal.c.example.com",
            (Some(60), vec![cluster.private[0].clone()]),
        ),
        (
            "etcd-b.internal.c.example.com",
            (Some(300), vec!["192.0.2.1".to_owned()]),
        ),
        (
            "etcd-c.internal.c.example.com",
            (Some(300), vec!["10.1.1.1".to_owned()]),
        ),
        (
            "api.internal.c.example.com",
            (Some(60), sorted(cluster.private.clone())),
        ),
        (
            "api.c.example.com",
            (Some(60), sorted(cluster.public.clone())),
        ),
    ] {
        assert_eq!(a(name), Some(expected), "{name}");
    }
    for name in [
        "etcd-a.internal.c.example.com",
        "api.internal.c.example.com",
        "api.c.example.com",
    ] {
        assert_eq!(
            records.get(&(name.to_owned(), "TXT".to_owned())),
            Some(&(Some(60), vec![owner.clone()])),
            "{name}"
        );
    }
    assert!(!records.contains_key(&("etcd-b.internal.c.example.com".to_owned(), "TXT".to_owned())));
}

#[test]
fn route53_records_are_exact_and_a_rerun_from_either_master_changes_nothing() {
    let moto = Moto::start();
    let root = TestRoot::new();
    let (cluster, zone) = seed_cluster_and_zone(&moto);
    let imds = |i: usize, az: &str| {
        ImdsServer::for_instance(&cluster.masters[i], az, REGION, &cluster.private[i])
    };
    let imds_a = imds(0, "us-east-1a");
    moto.reset_operations();
    let out = publish(
        &moto,
        &imds_a,
        &root,
        &["--zone", "example.com", "--detailed-exitcode"],
    );
    assert_eq!(out.code, 2, "{out:#?}");
    let report = out.report();
    assert_eq!(report.warnings.len(), 1, "{report:#?}");
    assert!(report.warnings[0].contains("etcd-b.internal.c.example.com"));
    assert_eq!(
        moto.rrset_requests("POST"),
        1,
        "one change batch for the zone"
    );
    assert_exact_records(&moto, &zone, &cluster);

    // A rerun from the other master: the same answer, nothing sent.
    let imds_b = imds(1, "us-east-1b");
    moto.reset_operations();
    let out = publish(
        &moto,
        &imds_b,
        &root,
        &["--zone", "example.com", "--detailed-exitcode"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(moto.rrset_requests("POST"), 0, "{:?}", moto.operations());
    let reads_small = moto.rrset_requests("GET");

    // Thousands more unrelated records: the number of reads does not change.
    support::runtime().block_on(async {
        let route53 = moto.route53().await;
        let sets: Vec<(String, &str, Vec<String>)> = (0..3000)
            .map(|i| format!("other-{i}.example.com"))
            .chain((0..500).map(|i| format!("z{i}.example.com")))
            .map(|name| (name, "A", vec!["192.0.2.10".to_owned()]))
            .collect();
        seed::records(&route53, &zone, &sets).await;
    });
    moto.reset_operations();
    let out = publish(&moto, &imds_b, &root, &["--zone", "example.com"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let operations = moto.operations();
    let reads_large = moto.rrset_requests("GET");
    assert_eq!(reads_small, 1, "{operations:?}");
    assert_eq!(reads_large, reads_small, "{operations:?}");
}

#[test]
fn throttling_is_retried_by_the_sdk() {
    let moto = Moto::start();
    let root = TestRoot::new();
    let (cluster, zone) = support::runtime().block_on(async {
        let cluster = seed_cluster(&moto, CLUSTER).await;
        let zone = seed::hosted_zone(&moto.route53().await, "example.com").await;
        (cluster, zone)
    });
    let imds = ImdsServer::for_instance(
        &cluster.masters[0],
        "us-east-1a",
        REGION,
        &cluster.private[0],
    );
    moto.set_faults(serde_json::json!([
        {"match": "DescribeInstances", "count": 2, "status": 503, "code": "RequestLimitExceeded", "style": "query"},
        {"match": "/rrset", "count": 1, "status": 400, "code": "Throttling", "style": "rest"},
        {"match": "/rrset", "count": 1, "status": 400, "code": "PriorRequestNotComplete", "style": "rest"},
    ]));
    moto.reset_operations();
    let out = publish(&moto, &imds, &root, &["--zone", "example.com"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let operations = moto.operations();
    assert_eq!(
        operations
            .iter()
            .filter(|o| *o == "DescribeInstances")
            .count(),
        3,
        "{operations:?}"
    );
    let records = support::runtime()
        .block_on(async { seed::zone_records(&moto.route53().await, &zone).await });
    assert!(records.contains_key(&("etcd-a.internal.c.example.com".to_owned(), "A".to_owned())));
}

#[test]
fn dry_run_sends_nothing_and_reports_old_and_new() {
    let moto = Moto::start();
    let root = TestRoot::new();
    let (cluster, zone) = support::runtime().block_on(async {
        let cluster = seed_cluster(&moto, CLUSTER).await;
        let route53 = moto.route53().await;
        let zone = seed::hosted_zone(&route53, "example.com").await;
        seed::records(
            &route53,
            &zone,
            &[(
                "api.internal.c.example.com".to_owned(),
                "A",
                vec!["203.0.113.123".to_owned()],
            )],
        )
        .await;
        (cluster, zone)
    });
    let before = support::runtime()
        .block_on(async { seed::zone_records(&moto.route53().await, &zone).await });
    let imds = ImdsServer::for_instance(
        &cluster.masters[0],
        "us-east-1a",
        REGION,
        &cluster.private[0],
    );
    let out = publish(
        &moto,
        &imds,
        &root,
        &["--zone", "example.com", "--dry-run", "--detailed-exitcode"],
    );
    assert_eq!(out.code, 2, "{out:#?}");
    let report = out.report();
    let change = report.change_to("api.internal.c.example.com").unwrap();
    assert_eq!(change.action, "update");
    assert!(
        change.detail.starts_with("A 203.0.113.123 -> "),
        "{change:?}"
    );
    let after = support::runtime()
        .block_on(async { seed::zone_records(&moto.route53().await, &zone).await });
    assert_eq!(before, after);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn gossip_clusters_write_the_hosts_block_and_a_rerun_changes_nothing() {
    const GOSSIP: &str = "g.k8s.local";
    let moto = Moto::start();
    let root = TestRoot::new();
    let cluster = support::runtime().block_on(seed_cluster(&moto, GOSSIP));
    let hosts = root.join("/etc/hosts");
    std::fs::create_dir_all(hosts.parent().unwrap()).unwrap();
    std::fs::write(&hosts, "127.0.0.1 localhost\r\n10.9.9.9 other").unwrap();
    let imds = ImdsServer::for_instance(
        &cluster.masters[0],
        "us-east-1a",
        REGION,
        &cluster.private[0],
    );
    // Master a (gossip: every master writes its own hosts file).
    let run = |extra: &[&str]| {
        Protokube::new()
            .moto(&moto)
            .imds(&imds)
            .args([
                "publish-dns",
                "--master",
                "--cluster-id",
                GOSSIP,
                "-o",
                "json",
            ])
            .arg_path("--root", root.path())
            .args(extra)
            .run()
    };
    let out = run(&["--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    let text = std::fs::read_to_string(&hosts).unwrap();
    assert!(
        text.starts_with(
            "127.0.0.1 localhost\r\n10.9.9.9 other\n\n# Begin host entries managed by kops"
        ),
        "{text:?}"
    );
    // One line per address, its names sorted: on a master, as current kOps writes it, its own
    // API at 127.0.0.1, and the etcd members at their masters.
    let own_api = format!("\n127.0.0.1\tapi.internal.{GOSSIP}\n");
    assert!(text.contains(&own_api), "{own_api:?} not in {text}");
    for (ip, member) in [(&cluster.private[0], "a"), (&cluster.private[1], "b")] {
        let line = format!("\n{ip}\tetcd-{member}.internal.{GOSSIP}\n");
        assert!(text.contains(&line), "{line:?} not in {text}");
    }
    assert!(!text.contains("etcd-c."), "{text}");
    assert!(!text.contains("kops-controller"), "{text}");
    let mtime = std::fs::metadata(&hosts).unwrap().modified().unwrap();
    let out = run(&["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        std::fs::metadata(&hosts).unwrap().modified().unwrap(),
        mtime
    );

    // A bind-mounted hosts file (as in a container): rename is impossible, written in place.
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "127.0.0.1 localhost\n").unwrap();
    let status = std::process::Command::new("mount")
        .arg("--bind")
        .arg(outside.path())
        .arg(&hosts)
        .status()
        .unwrap();
    assert!(status.success());
    let out = run(&[]);
    support::block::unmount_below(&hosts);
    assert_eq!(out.code, 0, "{out:#?}");
    let written = std::fs::read_to_string(outside.path()).unwrap();
    assert!(
        written.contains(&format!("etcd-a.internal.{GOSSIP}")),
        "{written}"
    );

    // Any other node: the API and kops-controller (where a current kOps node fetches its
    // bootstrap configuration) at the masters; no etcd names.
    let worker_root = TestRoot::new();
    let out = Protokube::new()
        .moto(&moto)
        .imds(&imds)
        .args(["publish-dns", "--cluster-id", GOSSIP, "-o", "json"])
        .arg_path("--root", worker_root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let text = std::fs::read_to_string(worker_root.join("/etc/hosts")).unwrap();
    let mut masters = cluster.private.clone();
    masters.sort();
    for ip in &masters {
        let line = format!("{ip}\tapi.internal.{GOSSIP} kops-controller.internal.{GOSSIP}\n");
        assert!(text.contains(&line), "{line:?} not in {text}");
    }
    assert!(!text.contains("etcd-"), "{text}");
}

#[test]
fn records_on_later_pages_of_the_cluster_subtree_are_found() {
    let moto = Moto::start();
    let root = TestRoot::new();
    let (cluster, zone) = support::runtime().block_on(async {
        let cluster = seed_cluster(&moto, CLUSTER).await;
        let route53 = moto.route53().await;
        let zone = seed::hosted_zone(&route53, "example.com").await;
        // 150 names inside the cluster's subtree that sort before its own (reversed labels).
        let mut sets: Vec<(String, &str, Vec<String>)> = (0..150)
            .map(|i| {
                (
                    format!("aaa-{i}.c.example.com"),
                    "A",
                    vec!["192.0.2.3".to_owned()],
                )
            })
            .collect();
        sets.push((
            "etcd-a.internal.c.example.com".to_owned(),
            "A",
            vec!["203.0.113.123".to_owned()],
        ));
        seed::records(&route53, &zone, &sets).await;
        (cluster, zone)
    });
    let imds = ImdsServer::for_instance(
        &cluster.masters[0],
        "us-east-1a",
        REGION,
        &cluster.private[0],
    );
    let out = publish(&moto, &imds, &root, &["--zone", "example.com"]);
    assert_eq!(out.code, 0, "{out:#?}");
    // The placeholder on a later page was seen: replaced (UPSERT), not CREATEd over.
    let report = out.report();
    let change = report.change_to("etcd-a.internal.c.example.com").unwrap();
    assert_eq!(change.action, "update", "{change:?}");
    assert!(
        change.detail.starts_with("A 203.0.113.123 -> "),
        "{change:?}"
    );
    let records = support::runtime()
        .block_on(async { seed::zone_records(&moto.route53().await, &zone).await });
    assert_eq!(
        records.get(&("etcd-a.internal.c.example.com".to_owned(), "A".to_owned())),
        Some(&(Some(60), vec![cluster.private[0].clone()]))
    );
    moto.reset_operations();
    let out = publish(
        &moto,
        &imds,
        &root,
        &["--zone", "example.com", "--detailed-exitcode"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(
        moto.rrset_requests("GET") > 1,
        "the subtree spans several pages"
    );
}

/// IPv6 as EC2 gives it: a dual-stack master (private IPv4, and an IPv6 address on its primary
/// interface) and an IPv6-only master (moto, like EC2 in an IPv6-only subnet, gives it only an
/// IPv6 private address). Route53 gets `AAAA` beside `A`, only `AAAA` for the IPv6-only one;
/// hosts files get a line per address of either family.
#[test]
fn ipv6_only_and_dual_stack_masters_get_aaaa_records_and_hosts_lines() {
    const DUAL_V6: &str = "2001:db8:0:2::5";
    const GOSSIP_DUAL_V6: &str = "2001:db8:0:2::6";
    let moto = Moto::start();
    // Per cluster: (dual-stack master, IPv6-only master), their IPv4 and IPv6-only addresses.
    let (masters, dual_v4, v6_only, zone) = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        let (dual_subnet, v6_subnet) = seed::ipv6_subnets(&ec2, "us-east-1a", "us-east-1b").await;
        let (mut masters, mut dual_v4, mut v6_only) = (Vec::new(), Vec::new(), Vec::new());
        for (cluster, v6) in [(CLUSTER, DUAL_V6), ("v6.k8s.local", GOSSIP_DUAL_V6)] {
            let tags = [("KubernetesCluster", cluster), ("k8s.io/role/master", "1")];
            let a = seed::instance_in(&ec2, &dual_subnet, None, &tags).await;
            let b = seed::instance_in(&ec2, &v6_subnet, None, &tags).await;
            seed::assign_ipv6(&ec2, &a, v6).await;
            for (member, instance, zone) in [("a", &a, "us-east-1a"), ("b", &b, "us-east-1b")] {
                let main = format!("{member}/a,b");
                let volume = seed::etcd_volume(&ec2, cluster, zone, &[("main", &main)]).await;
                seed::attach(&ec2, &volume, instance, "/dev/xvdu").await;
            }
            dual_v4.push(seed::instance_addresses(&ec2, &a).await.0);
            v6_only.push(seed::instance_addresses(&ec2, &b).await.0);
            masters.push((a, b));
        }
        let route53 = moto.route53().await;
        let zone = seed::hosted_zone(&route53, "example.com").await;
        (masters, dual_v4, v6_only, zone)
    });
    assert!(v6_only.iter().all(|a| a.contains(':')), "{v6_only:?}");
    let root = TestRoot::new();
    let imds = ImdsServer::for_instance(&masters[0].0, "us-east-1a", REGION, &dual_v4[0]);
    let out = publish(&moto, &imds, &root, &["--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    let records = support::runtime()
        .block_on(async { seed::zone_records(&moto.route53().await, &zone).await });
    let get = |name: &str, kind: &str| {
        records
            .get(&(name.to_owned(), kind.to_owned()))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let etcd_a = "etcd-a.internal.c.example.com";
    let etcd_b = "etcd-b.internal.c.example.com";
    assert_eq!(get(etcd_a, "A"), [dual_v4[0].clone()]);
    assert_eq!(get(etcd_a, "AAAA"), [DUAL_V6]);
    assert_eq!(get(etcd_b, "A"), Vec::<String>::new());
    assert_eq!(get(etcd_b, "AAAA"), [v6_only[0].clone()]);
    assert_eq!(get("api.internal.c.example.com", "A"), [dual_v4[0].clone()]);
    assert_eq!(
        get("api.internal.c.example.com", "AAAA"),
        sorted(vec![DUAL_V6.to_owned(), v6_only[0].clone()])
    );
    // No public IPv4 here: the public name is reachable over IPv6 alone.
    assert_eq!(get("api.c.example.com", "A"), Vec::<String>::new());
    assert_eq!(
        get("api.c.example.com", "AAAA"),
        sorted(vec![DUAL_V6.to_owned(), v6_only[0].clone()])
    );
    for name in [
        etcd_a,
        etcd_b,
        "api.internal.c.example.com",
        "api.c.example.com",
    ] {
        assert_eq!(get(name, "TXT").len(), 1, "{name}");
    }
    let out = publish(&moto, &imds, &root, &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");

    // A gossip worker of the other cluster: a hosts line per address of either family.
    let worker_root = TestRoot::new();
    let out = Protokube::new()
        .moto(&moto)
        .imds(&imds)
        .args(["publish-dns", "--cluster-id", "v6.k8s.local", "-o", "json"])
        .arg_path("--root", worker_root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let text = std::fs::read_to_string(worker_root.join("/etc/hosts")).unwrap();
    for ip in [dual_v4[1].as_str(), GOSSIP_DUAL_V6, v6_only[1].as_str()] {
        let line =
            format!("{ip}\tapi.internal.v6.k8s.local kops-controller.internal.v6.k8s.local\n");
        assert!(text.contains(&line), "{line:?} not in {text}");
    }
}
