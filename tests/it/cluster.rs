//! A whole cluster: three masters in network namespaces of their own (veth pairs on a bridge,
//! their own addresses, `/etc/hosts` through `/etc/netns/<name>/hosts`), each with its own
//! `--root` and loop-device volume, against one local AWS emulator whose instances carry those
//! addresses. `protokube sync` on each host, then each host's rendered etcd pod runs with
//! Debian's etcd inside its namespace: one healthy three-member cluster. Then failover: host 1
//! dies, host 4 takes member `a`'s volume with its data, and the key written before is still
//! there. The same bring-up runs on IPv6 alone: hosts with only IPv6 addresses on their veths,
//! instances in IPv6-only subnets, an IPv6 cluster spec.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::block::{LoopDevice, TestRoot};
use support::etcd::EtcdPod;
use support::netns::{ip, kill_all_in};
use support::{fixture, seed, Moto, Protokube};

const REGION: &str = "us-east-1";
const CLUSTER: &str = "three.k8s.local";

/// The test's network: a bridge and one namespace per host, removed on drop.
struct Network {
    bridge: String,
    prefix: String,
    hosts: Vec<String>,
}

impl Network {
    fn new() -> Self {
        // Unique per process and per network: the tests of this file run side by side.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let sequence = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = std::process::id() % 100_000 * 10 + sequence;
        let bridge = format!("pkbr{id}");
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["link", "set", &bridge, "up"]);
        Self {
            bridge,
            prefix: format!("pk{id}"),
            hosts: Vec::new(),
        }
    }

    /// A host namespace with `address` (with its prefix length) on a veth attached to the
    /// bridge; returns its name.
    fn host(&mut self, n: usize, address: &str) -> String {
        let ns = format!("{}h{n}", self.prefix);
        let outside = format!("{ns}o");
        ip(&["netns", "add", &ns]);
        self.hosts.push(ns.clone());
        ip(&[
            "link", "add", &outside, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ]);
        ip(&["link", "set", &outside, "master", &self.bridge, "up"]);
        // No duplicate address detection: an IPv6 address is usable at once.
        let mut add = vec!["-n", &ns, "addr", "add", address, "dev", "eth0"];
        if address.contains(':') {
            add.push("nodad");
        }
        ip(&add);
        ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        std::fs::create_dir_all(format!("/etc/netns/{ns}")).unwrap();
        std::fs::write(format!("/etc/netns/{ns}/hosts"), "127.0.0.1 localhost\n").unwrap();
        ns
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for ns in &self.hosts {
            let _ = std::panic::catch_unwind(|| kill_all_in(ns));
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{ns}"));
            let _ = Command::new("ip")
                .args(["link", "del", &format!("{ns}o")])
                .output();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .output();
    }
}

/// One master: its namespace, instance, root and volume.
struct Host {
    ns: String,
    zone: &'static str,
    address: String,
    instance_id: String,
    volume: String,
    root: TestRoot,
}

/// The gossip cluster's spec, with the etcd Debian ships; on IPv6 with kOps' IPv6
/// non-masquerade CIDR.
fn spec(dir: &Path, ipv6: bool) -> PathBuf {
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture("cluster-completed/minimal_gossip.yaml")).unwrap(),
    )
    .unwrap();
    doc["metadata"]["name"] = CLUSTER.into();
    if ipv6 {
        doc["spec"]["nonMasqueradeCIDR"] = "::/0".into();
    }
    doc["spec"]["masterPublicName"] = format!("api.{CLUSTER}").into();
    doc["spec"]["etcdClusters"][0]["version"] = "3.4.23".into();
    let path = dir.join("cluster.yaml");
    std::fs::write(&path, yaml_serde::to_string(&doc).unwrap()).unwrap();
    path
}

fn sync(moto: &Moto, host: &Host, spec: &Path) {
    let out = Protokube::new()
        .moto(moto)
        .args(["sync", "--master", "--region", REGION])
        .args([
            "--instance-id",
            &host.instance_id,
            "--availability-zone",
            host.zone,
        ])
        .args(["--internal-ip", &host.address])
        .arg_path("--cluster-spec", spec)
        .arg_path("--root", host.root.path())
        .run();
    assert_eq!(out.code, 0, "sync on {}: {out:#?}", host.ns);
    // The host's hosts file is the namespace's /etc/hosts (rewritten in place, so a running
    // etcd sees the new content through its bind mount).
    let hosts = std::fs::read_to_string(host.root.join("/etc/hosts")).unwrap();
    std::fs::write(format!("/etc/netns/{}/hosts", host.ns), hosts).unwrap();
}

/// Runs the host's rendered etcd pod in its network namespace.
fn start_etcd(host: &Host) -> EtcdPod {
    EtcdPod::start(
        &host.root.join("/etc/kubernetes/manifests/etcd.manifest"),
        &host.root,
        &host.ns,
        Stdio::null(),
    )
}

fn etcdctl(ns: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "etcdctl",
            "--endpoints",
            "http://127.0.0.1:4001",
        ])
        .args(["--dial-timeout", "2s", "--command-timeout", "3s"])
        .args(args)
        .env("ETCDCTL_API", "3")
        .output()
        .expect("etcdctl (etcd-client)");
    // `endpoint health` reports on stderr, `get` on stdout.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.success().then_some(text)
}

fn wait_healthy(ns: &str, members: usize, timeout: Duration, logs: &[PathBuf]) -> Duration {
    let started = Instant::now();
    loop {
        if let Some(out) = etcdctl(ns, &["endpoint", "health", "--cluster"]) {
            if out.matches("is healthy").count() == members {
                return started.elapsed();
            }
        }
        if started.elapsed() > timeout {
            let tails: Vec<String> = logs
                .iter()
                .map(|l| {
                    let text = std::fs::read_to_string(l).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().collect();
                    format!(
                        "== {}\n{}",
                        l.display(),
                        lines[lines.len().saturating_sub(15)..].join("\n")
                    )
                })
                .collect();
            panic!(
                "etcd cluster not healthy from {ns} within {timeout:?}\n{}",
                tails.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
const ADDRESSES: [&str; 3] = ["10.231.1.10", "10.231.2.10", "10.231.3.10"];
const MASTER_TAGS: [(&str, &str); 2] =
    [("KubernetesCluster", CLUSTER), ("k8s.io/role/master", "1")];

/// Three masters, one per zone and subnet, each with its `main` volume (members a, b, c) on one
/// of `disks`, and a host (a network namespace, a root) for each: the subnets and the hosts.
fn three_masters(net: &mut Network, moto: &Moto, disks: &[LoopDevice]) -> (Vec<String>, Vec<Host>) {
    let (subnets, instances, volumes) = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        let cidrs: Vec<(&str, String)> = (0..3)
            .map(|i| (ZONES[i], format!("10.231.{}.0/24", i + 1)))
            .collect();
        let cidrs: Vec<(&str, &str)> = cidrs.iter().map(|(z, c)| (*z, c.as_str())).collect();
        let subnets = seed::vpc_with_subnets(&ec2, "10.231.0.0/16", &cidrs).await;
        let (mut instances, mut volumes) = (Vec::new(), Vec::new());
        for (i, member) in ["a", "b", "c"].iter().enumerate() {
            instances.push(seed::instance_at(&ec2, &subnets[i], ADDRESSES[i], &MASTER_TAGS).await);
            let membership = format!("{member}/a,b,c");
            volumes
                .push(seed::etcd_volume(&ec2, CLUSTER, ZONES[i], &[("main", &membership)]).await);
        }
        (subnets, instances, volumes)
    });
    let hosts = (0..3)
        .map(|i| {
            let ns = net.host(i + 1, &format!("{}/16", ADDRESSES[i]));
            let root = TestRoot::new();
            root.link_by_id(&volumes[i], &disks[i].path);
            Host {
                ns,
                zone: ZONES[i],
                address: ADDRESSES[i].to_owned(),
                instance_id: instances[i].clone(),
                volume: volumes[i].clone(),
                root,
            }
        })
        .collect();
    (subnets, hosts)
}

/// Host `host` is gone: its etcd stopped, everything in its namespace killed, its volume
/// unmounted and detached, its instance terminated.
fn retire(moto: &Moto, host: &Host, etcd: EtcdPod, disk: &LoopDevice) {
    etcd.stop();
    kill_all_in(&host.ns);
    support::block::unmount_below(&host.root.join("/mnt"));
    // The old etcd's mount namespace goes a moment after it (the kernel's teardown); a new
    // machine would not share the device with it at all.
    disk.wait_released();
    support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        ec2.detach_volume()
            .volume_id(&host.volume)
            .instance_id(&host.instance_id)
            .send()
            .await
            .unwrap();
        ec2.terminate_instances()
            .instance_ids(&host.instance_id)
            .send()
            .await
            .unwrap();
    });
}

/// Host 4 in zone a, at a new address in `subnet`, with `retired`'s volume on `disk`.
fn host_four(
    net: &mut Network,
    moto: &Moto,
    subnet: &str,
    retired: &Host,
    disk: &LoopDevice,
) -> Host {
    let address = "10.231.1.11";
    let ns = net.host(4, &format!("{address}/16"));
    let instance_id = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        seed::instance_at(&ec2, subnet, address, &MASTER_TAGS).await
    });
    let root = TestRoot::new();
    root.link_by_id(&retired.volume, &disk.path);
    Host {
        ns,
        zone: ZONES[0],
        address: address.to_owned(),
        instance_id,
        volume: retired.volume.clone(),
        root,
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn three_masters_form_one_etcd_cluster_and_survive_a_failover() {
    let mut net = Network::new();
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    let spec = spec(work.path(), false);
    let disks: Vec<LoopDevice> = (0..3).map(|_| LoopDevice::blank(512)).collect();
    let (subnets, hosts) = three_masters(&mut net, &moto, &disks);

    // Bring-up: every host syncs; a second round lets each learn the others' attachments.
    let started = Instant::now();
    for _round in 0..2 {
        for host in &hosts {
            sync(&moto, host, &spec);
        }
    }
    let mut etcds: Vec<EtcdPod> = hosts.iter().map(start_etcd).collect();
    let mut logs: Vec<PathBuf> = hosts
        .iter()
        .map(|h| h.root.join("/var/log/etcd.log"))
        .collect();
    wait_healthy(&hosts[0].ns, 3, Duration::from_secs(40), &logs);
    let bring_up = started.elapsed();
    assert!(etcdctl(&hosts[0].ns, &["put", "protokube-key", "survives"]).is_some());
    let got = etcdctl(
        &hosts[1].ns,
        &["get", "protokube-key", "--print-value-only"],
    )
    .unwrap();
    assert_eq!(got.lines().next(), Some("survives"), "{got}");

    // Failover: host 1 is gone; host 4 in zone a takes over with a new address.
    let failover_started = Instant::now();
    retire(&moto, &hosts[0], etcds.remove(0), &disks[0]);
    let host4 = host_four(&mut net, &moto, &subnets[0], &hosts[0], &disks[0]);
    let before = disks[0].fs_type();
    sync(&moto, &host4, &spec);
    assert_eq!(disks[0].fs_type(), before, "the volume was not reformatted");
    assert!(
        host4
            .root
            .mountpoint(&host4.volume)
            .join("var/etcd/data/member")
            .exists(),
        "member a's data is on the volume host 4 mounted"
    );
    // Every host's next sync points etcd-a at host 4.
    for host in &hosts[1..] {
        sync(&moto, host, &spec);
        let text = std::fs::read_to_string(format!("/etc/netns/{}/hosts", host.ns)).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{}\t", host4.address)));
        assert!(
            line.is_some_and(|l| l.contains(&format!("etcd-a.internal.{CLUSTER}"))),
            "{text}"
        );
    }
    etcds.push(start_etcd(&host4));
    logs.push(host4.root.join("/var/log/etcd.log"));
    wait_healthy(&host4.ns, 3, Duration::from_secs(90), &logs);
    let failover = failover_started.elapsed();
    let got = etcdctl(&host4.ns, &["get", "protokube-key", "--print-value-only"]).unwrap();
    assert_eq!(got.lines().next(), Some("survives"), "{got}");
    eprintln!("bring-up: {bring_up:?}; failover: {failover:?}");
    drop(etcds);
    drop(host4);
}

/// The same bring-up on IPv6 alone: three instances in IPv6-only subnets (the emulator gives
/// each an IPv6 private address, as EC2 does), hosts whose veths carry only those addresses,
/// the IPv6 cluster's etcd pods listening on `[::]` and finding each other through the AAAA
/// lines of their hosts files; a key written on one member is read on another.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn three_ipv6_masters_form_one_etcd_cluster() {
    let mut net = Network::new();
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    let spec = spec(work.path(), true);
    let zones = ["us-east-1a", "us-east-1b", "us-east-1c"];
    let disks: Vec<LoopDevice> = (0..3).map(|_| LoopDevice::blank(512)).collect();
    let tags = [("KubernetesCluster", CLUSTER), ("k8s.io/role/master", "1")];
    let (instances, addresses, volumes) = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        let subnets = seed::ipv6_only_subnets(&ec2, &zones).await;
        let (mut instances, mut addresses, mut volumes) = (Vec::new(), Vec::new(), Vec::new());
        for (i, member) in ["a", "b", "c"].iter().enumerate() {
            let instance = seed::instance_in(&ec2, &subnets[i], None, &tags).await;
            addresses.push(seed::instance_addresses(&ec2, &instance).await.0);
            instances.push(instance);
            let main = format!("{member}/a,b,c");
            volumes.push(seed::etcd_volume(&ec2, CLUSTER, zones[i], &[("main", &main)]).await);
        }
        (instances, addresses, volumes)
    });
    let mut hosts = Vec::new();
    for i in 0..3 {
        assert!(addresses[i].contains(':'), "{addresses:?}");
        // One /48 for the three zones' /64s: every host is on the bridge's link.
        let ns = net.host(i + 1, &format!("{}/48", addresses[i]));
        let root = TestRoot::new();
        root.link_by_id(&volumes[i], &disks[i].path);
        hosts.push(Host {
            ns,
            zone: zones[i],
            address: addresses[i].clone(),
            instance_id: instances[i].clone(),
            volume: volumes[i].clone(),
            root,
        });
    }
    for _round in 0..2 {
        for host in &hosts {
            sync(&moto, host, &spec);
        }
    }
    let hosts_file = std::fs::read_to_string(format!("/etc/netns/{}/hosts", hosts[0].ns)).unwrap();
    for (address, member) in addresses.iter().zip(["a", "b", "c"]) {
        let line = format!("{address}\tetcd-{member}.internal.{CLUSTER}\n");
        assert!(hosts_file.contains(&line), "{line:?} not in {hosts_file}");
    }
    let etcds: Vec<EtcdPod> = hosts.iter().map(start_etcd).collect();
    let logs: Vec<PathBuf> = hosts
        .iter()
        .map(|h| h.root.join("/var/log/etcd.log"))
        .collect();
    wait_healthy(&hosts[0].ns, 3, Duration::from_secs(40), &logs);
    assert!(etcdctl(&hosts[0].ns, &["put", "protokube-key", "over-ipv6"]).is_some());
    let got = etcdctl(
        &hosts[2].ns,
        &["get", "protokube-key", "--print-value-only"],
    )
    .unwrap();
    assert_eq!(got.lines().next(), Some("over-ipv6"), "{got}");
    // The members advertise their IPv6 names.
    let members = etcdctl(&hosts[1].ns, &["member", "list"]).unwrap();
    assert!(
        members.contains(&format!("etcd-b.internal.{CLUSTER}")),
        "{members}"
    );
    drop(etcds);
}
