//! kOps' nodes as they really are (issue "the image's own channels, a hosts file others have
//! mounted, the old images, the API as it wakes"), each gap of
//! `reference/kops/protokube-by-version.md` on its era's real layout: kOps 1.12–1.20's protokube
//! images (a mount namespace per run whose root is the image, the host at `/rootfs`; the
//! image's own `channels`), unit lines with `--channels` as nodeup writes them for real clusters,
//! a hosts file held bind-mounted by a reader as kube-proxy's pod holds it, an operator's
//! settings in the environment, an API server waking in stages, kOps' precreated names, and
//! etcd volumes left to etcd-manager by a kOps ≥ 1.23 unit. Real binary, moto, the Kubernetes
//! API stand-in.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::bed::{Bed, NodeKind, GOSSIP};
use support::block::{unmount_below, TestRoot};
use support::kops::{flag, recording_systemctl, unit_line, FirstRun, Image, Layout, World};
use support::kube::{
    etcd_manager_pods, install_channels_tool, install_channels_tool_at, Certs, KubeApi, Waking,
};
use support::seed;

const MASTER_LABEL: &str = "node-role.kubernetes.io/master";
const ROLE_LABEL: &str = "kubernetes.io/role";
const HOSTNAME: &str = "kubernetes.io/hostname";

/// kOps' unit line `name` with the channel nodeup adds for a real cluster
/// (`nodeup/pkg/model/protokube.go` `Channels: t.NodeupConfig.Channels`, the state store's
/// `addons/bootstrap-channel.yaml`), in flagbuilder's sorted place.
fn with_channels(name: &str) -> Vec<String> {
    let (mut args, _) = unit_line(name);
    if flag(&args, "--channels").is_none() {
        args.push(
            "--channels=s3://clusters.example.com/minimal.example.com/addons/bootstrap-channel.yaml"
                .to_owned(),
        );
        args.sort();
    }
    args
}

/// A control-plane node of kOps `name`'s version: the Kubernetes API (the node registered
/// under `registered`, its hostname label `hostname`), the kubeconfig where nodeup writes it,
/// etcd-manager's pods where the unit leaves etcd to it.
struct Node {
    root: TestRoot,
    _certs: Certs,
    api: KubeApi,
    systemctl: tempfile::TempDir,
}

impl Node {
    fn new(args: &[String], waking: Waking) -> Self {
        let root = TestRoot::new();
        let certs = Certs::new();
        let api = KubeApi::start_waking(&certs, waking);
        certs.write_kubeconfig(&root, api.port, true);
        let hostname = flag(args, "--node-name").unwrap_or("master.hostname.invalid");
        let registered = if hostname == "master.override.invalid" {
            "ip-172-20-32-10.ec2.internal"
        } else {
            hostname
        };
        api.register(registered, &[(HOSTNAME, hostname)]);
        if flag(args, "--manage-etcd") != Some("true") {
            etcd_manager_pods(&root, "master-us-test-1a");
        }
        Self {
            root,
            _certs: certs,
            api,
            systemctl: recording_systemctl(),
        }
    }

    fn run(
        &self,
        world: &World,
        layout: Layout<'_>,
        args: &[String],
        env: &[(&str, String)],
    ) -> FirstRun {
        let kubeconfig = match layout {
            Layout::Image(..) => "/rootfs/var/lib/kops/kubeconfig",
            Layout::Host => "/var/lib/kops/kubeconfig",
        };
        let mut env = env.to_vec();
        env.push(("KUBECONFIG", kubeconfig.to_owned()));
        world.run_in(layout, args, &self.root, &env, &self.systemctl)
    }
}

/// The channels tool's log, for a tool put in the image.
fn image_tool() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (tool, log) = (dir.path().join("channels"), dir.path().join("channels.log"));
    install_channels_tool_at(&tool, &log);
    (dir, tool, log)
}

#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn g1_kops_1_19_and_1_20_apply_their_addons_with_the_images_own_channels_tool() {
    let world = World::new("minimal.example.com");
    // 1.19–1.20's distroless image has it at `/channels` only (no `/opt/kops/bin/channels`
    // before 1.21, nothing on PATH); 1.12–1.18's Debian image on its PATH (`/usr/bin/channels`).
    for (name, image) in [
        ("1.19-docker", Image::Distroless),
        ("1.20-containerd", Image::Distroless),
        ("1.18-docker", Image::Debian),
    ] {
        let args = with_channels(name);
        let node = Node::new(&args, Waking::default());
        let (_dir, tool, log) = image_tool();
        let run = node.run(&world, Layout::Image(image, Some(&tool)), &args, &[]);
        assert_eq!(run.exit_on_sigterm, Some(0), "{name}: {}", run.stderr);
        let ran = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            ran.starts_with(
                "ARGS apply channel s3://clusters.example.com/minimal.example.com/addons/bootstrap-channel.yaml --v=4 --yes"
            ),
            "{name}: the image's tool did not run: {ran:?}\n{}",
            run.stderr
        );
        assert!(!run.stderr.contains("failed"), "{name}: {}", run.stderr);
        assert!(!node.root.join("/opt/kops/bin/channels").exists());
    }
}

/// A reader holding `file` bind-mounted at a path of its own, as kube-proxy's pod holds the
/// host's `/etc/hosts` (a hostPath `File` mount); unmounted when dropped.
struct BindReader {
    view: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl BindReader {
    fn of(file: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let view = dir.path().join("hosts");
        std::fs::write(&view, "").unwrap();
        let status = Command::new("mount")
            .args(["--bind", file.to_str().unwrap(), view.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(status.success());
        Self { view, _dir: dir }
    }

    fn read(&self) -> String {
        String::from_utf8(std::fs::read(&self.view).unwrap()).unwrap()
    }
}

impl Drop for BindReader {
    fn drop(&mut self) {
        unmount_below(&self.view);
    }
}

const UNMANAGED: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n";

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn g2_a_reader_holding_the_hosts_file_mounted_sees_every_change_and_never_a_torn_file() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let hosts = bed.root.join("/etc/hosts");
    std::fs::create_dir_all(hosts.parent().unwrap()).unwrap();
    std::fs::write(&hosts, UNMANAGED).unwrap();
    let reader = BindReader::of(&hosts);
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let first = reader.read();
    assert!(first.contains("api.internal.minimal.k8s.local"), "{first}");
    // A control-plane roll: a second master comes up.
    let added = support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(support::bed::REGION).await;
        let master = seed::instance(
            &ec2,
            support::bed::ZONE,
            &[("KubernetesCluster", GOSSIP), ("k8s.io/role/master", "1")],
        )
        .await;
        seed::instance_addresses(&ec2, &master).await.0
    });
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    // kube-proxy's view is the host's file: the new master is there.
    let seen = reader.read();
    assert!(
        seen.contains(&added),
        "the reader kept the old file: {seen}"
    );
    assert_eq!(seen, std::fs::read_to_string(&hosts).unwrap());

    // Killed at every system call of a rewrite: neither the host nor the reader ever sees an
    // empty or torn file, or one without its unmanaged lines.
    let spec = bed.spec();
    let shrunk = format!(
        "{UNMANAGED}\n# Begin host entries managed by kops - do not edit\n\
         10.9.9.1\tapi.internal.minimal.k8s.local kops-controller.internal.minimal.k8s.local etcd-old.internal.minimal.k8s.local\n\
         10.9.9.2\tapi.internal.minimal.k8s.local kops-controller.internal.minimal.k8s.local etcd-old2.internal.minimal.k8s.local\n\
         # End host entries managed by kops\n"
    );
    for (syscall, when) in [
        ("pwrite64", 1),
        ("fsync", 1),
        ("fsync", 2),
        ("ftruncate", 1),
    ] {
        std::fs::write(&hosts, &shrunk).unwrap();
        let out = bed.run_killed_at(syscall, when, "publish-dns", &spec);
        assert_eq!(out.code, 137, "{syscall}#{when}: not killed: {out:#?}");
        for (who, text) in [
            ("host", std::fs::read_to_string(&hosts).unwrap()),
            ("reader", reader.read()),
        ] {
            assert!(
                text.starts_with(UNMANAGED),
                "{syscall}#{when}: {who}: {text:?}"
            );
            assert!(
                text.contains("# End host entries managed by kops\n"),
                "{syscall}#{when}: {who}: torn: {text:?}"
            );
        }
        let out = bed.run("publish-dns", &[]);
        assert_eq!(out.code, 0, "{syscall}#{when}: {out:#?}");
        assert!(reader.read().contains(&added), "{syscall}#{when}");
    }
}

#[test]
fn g4_an_operators_settings_never_make_a_1_21_to_1_23_unit_look_newer() {
    let world = World::new("minimal.example.com");
    let (args, _) = unit_line("1.22-host");
    let node = Node::new(&args, Waking::default());
    // The operator's settings file, as the drop-in feeds it to nodeup's unit.
    let settings = [
        ("PROTOKUBE_CLUSTER_ID", "minimal.example.com".to_owned()),
        ("PROTOKUBE_CONTAINERIZED", "true".to_owned()),
    ];
    let run = node.run(&world, Layout::Host, &args, &settings);
    assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
    let labels = node.api.labels("master.hostname.invalid");
    // kOps 1.21–1.23's labels: the `master` role and `kubernetes.io/role` among them (kOps'
    // controllers of those versions select on them).
    assert_eq!(
        labels.get(MASTER_LABEL).map(String::as_str),
        Some(""),
        "{labels:?}"
    );
    assert_eq!(
        labels.get(ROLE_LABEL).map(String::as_str),
        Some("master"),
        "{labels:?}"
    );
    // A host unit stays a host unit: its files under its own root, kubelet left alone.
    assert!(run.systemctl.is_empty(), "{:?}", run.systemctl);
}

#[test]
fn g5_an_api_waking_in_stages_gets_its_rbac_and_addons_in_the_first_run() {
    let world = World::new("minimal.example.com");
    let args = with_channels("1.22-host");
    // Refused, then 503, then no `kube-system`, then ready: a new control plane.
    let node = Node::new(
        &args,
        Waking {
            refused: 2.0,
            unavailable: 4.0,
            no_kube_system: 6.0,
        },
    );
    let log = install_channels_tool(&node.root);
    let run = node.run(&world, Layout::Host, &args, &[]);
    assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
    // All in the loop's first run, none warned about as not ready.
    let warnings = run.report["warnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(warnings.is_empty(), "{warnings:?}\n{}", run.stderr);
    assert!(
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .starts_with("ARGS apply channel"),
        "{}",
        run.stderr
    );
    let objects = node.api.objects();
    assert!(
        objects["serviceaccounts"]
            .get("kube-system/kube-dns")
            .is_some(),
        "{objects}"
    );
    // Nothing was written before `kube-system` existed.
    let requests = node.api.requests();
    let first_write = requests
        .iter()
        .position(|r| r["method"] == "POST" || r["method"] == "PATCH")
        .expect("writes");
    let namespace_found = requests
        .iter()
        .position(|r| r["path"] == "/api/v1/namespaces/kube-system")
        .expect("asked for kube-system");
    assert!(namespace_found < first_write, "{requests:?}");
}

#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn g7_kubelet_is_started_first_on_1_12_to_1_18_whatever_the_cloud_does_and_never_on_1_19() {
    let world = World::new("minimal.example.com");
    let (args, _) = unit_line("1.18-docker");
    let node = Node::new(&args, Waking::default());
    // The cloud does not answer: the run fails at its metadata, after kubelet was started.
    let dead_imds = format!("http://127.0.0.1:{}", support::kube::closed_port());
    let run = node.run(
        &world,
        Layout::Image(Image::Debian, None),
        &args,
        &[
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead_imds.clone()),
            ("PROTOKUBE_TIMEOUT", "3s".to_owned()),
        ],
    );
    assert!(run.stderr.contains("protokube: error:"), "{}", run.stderr);
    assert_eq!(
        run.systemctl,
        ["is-active --quiet kubelet", "start --no-block kubelet"],
        "{}",
        run.stderr
    );
    // kOps 1.19's nodeup starts kubelet itself: an operator's `systemctl stop kubelet` stays.
    let (args, _) = unit_line("1.19-docker");
    let node = Node::new(&args, Waking::default());
    let run = node.run(&world, Layout::Image(Image::Distroless, None), &args, &[]);
    assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
    assert!(run.systemctl.is_empty(), "{:?}", run.systemctl);
}

#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn g9_remove_dns_names_removes_the_listed_names_a_records_whatever_they_hold() {
    let world = World::new("minimal.example.com");
    let (mut args, _) = unit_line("1.18-docker");
    // A listed name that holds no record (removed by hand already): said in the run's info.
    let absent = "etcd-gone.internal.minimal.example.com";
    for arg in &mut args {
        if arg.starts_with("--remove-dns-names=") {
            arg.push(',');
            arg.push_str(absent);
        }
    }
    let placeholder = "etcd-master-us-test-1a.internal.minimal.example.com";
    let real = "etcd-events-master-us-test-1a.internal.minimal.example.com";
    let unlisted = "etcd-other.internal.minimal.example.com";
    let route53 = support::runtime().block_on(world.bed.moto().route53());
    support::runtime().block_on(seed::records(
        &route53,
        &world.zone,
        &[
            (
                placeholder.to_owned(),
                "A",
                vec!["203.0.113.123".to_owned()],
            ),
            (real.to_owned(), "A", vec!["172.20.32.10".to_owned()]),
            (unlisted.to_owned(), "A", vec!["172.20.32.11".to_owned()]),
        ],
    ));
    let node = Node::new(&args, Waking::default());
    let run = node.run(&world, Layout::Image(Image::Debian, None), &args, &[]);
    assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
    let records = support::runtime().block_on(seed::zone_records(&route53, &world.zone));
    // kOps' removeDNSRecords: the listed names' A records, whatever they held (the old etcd
    // peer names, which etcd-manager does not use); nothing else.
    for name in [placeholder, real] {
        assert!(
            !records.contains_key(&(name.to_owned(), "A".to_owned())),
            "{name}: {records:?}"
        );
    }
    assert_eq!(
        records[&(unlisted.to_owned(), "A".to_owned())].1,
        ["172.20.32.11"]
    );
    let said = format!("`{absent}` holds no A record in its zone; nothing to remove");
    assert_eq!(run.stderr.matches(&said).count(), 1, "once: {}", run.stderr);
    // Once: the next start asks Route53 nothing for them.
    world.bed.moto().reset_operations();
    let again = node.run(&world, Layout::Image(Image::Debian, None), &args, &[]);
    assert_eq!(again.exit_on_sigterm, Some(0), "{}", again.stderr);
    let operations = world.bed.moto().operations();
    assert!(
        !operations.iter().any(|o| o.contains("ResourceRecordSets")),
        "{operations:?}"
    );
}

/// nodeup 1.18's unit line for a worker of a gossip cluster (`ProtokubeFlags` of
/// `release-1.18:nodeup/pkg/model/protokube.go`: no etcd manifests on a worker, so
/// `--manage-etcd=true` with the etcd image; `--dns=gossip` and the internal suffix from
/// `api.internal.<cluster>`; the node-role labels flag from k8s 1.16), sorted as flagbuilder
/// writes them.
const GOSSIP_WORKER_1_18: &str = "--bootstrap-master-node-labels=true --cloud=aws \
    --containerized=true --dns-internal-suffix=internal.minimal.k8s.local --dns=gossip \
    --etcd-image=k8s.gcr.io/etcd:3.4.3 --initialize-rbac=true --manage-etcd=true \
    --master=false --node-name=ip-172-20-33-10.ec2.internal --v=4";

#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn kubelet_is_started_first_on_a_1_18_gossip_worker_and_in_an_image_with_a_stray_protokube() {
    // A worker instance of the gossip cluster (its masters tagged beside it).
    let world = World {
        bed: Bed::new(NodeKind::GossipWorker),
        zone: String::new(),
    };
    let args: Vec<String> = GOSSIP_WORKER_1_18
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    for image in [Image::Debian, Image::DebianWithStrayProtokube] {
        let root = TestRoot::new();
        let systemctl = recording_systemctl();
        let run = world.run_in(Layout::Image(image, None), &args, &root, &[], &systemctl);
        assert_eq!(run.exit_on_sigterm, Some(0), "{image:?}: {}", run.stderr);
        assert_eq!(
            run.systemctl,
            ["is-active --quiet kubelet", "start --no-block kubelet"],
            "{image:?}: {}",
            run.stderr
        );
    }
}

#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn a_1_18_legacy_etcd_master_starts_kubelet_only_once_its_volumes_are_mounted() {
    let world = World::new("minimal.example.com");
    // The 1.18 master line where protokube manages etcd (no etcd-manager manifests).
    let (args, _) = unit_line("1.18-docker");
    let args: Vec<String> = args
        .into_iter()
        .filter(|a| !a.starts_with("--remove-dns-names="))
        .map(|a| a.replace("--manage-etcd=false", "--manage-etcd=true"))
        .chain(["--etcd-image=k8s.gcr.io/etcd:3.4.3".to_owned()])
        .collect();
    let volume = world
        .bed
        .etcd_volume("minimal.example.com", &[("main", "a/a")]);
    let node = Node::new(&args, Waking::default());
    // The volume is attached, its device never shows: the mount fails, kubelet waits.
    let short = [("PROTOKUBE_TIMEOUT", "5s".to_owned())];
    let run = node.run(&world, Layout::Image(Image::Debian, None), &args, &short);
    let mounted_any = run.report["changes"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["kind"] == "mount"));
    assert!(!mounted_any, "{:#}\n{}", run.report, run.stderr);
    assert!(
        !run.systemctl.iter().any(|c| c.starts_with("start")),
        "kubelet started without its etcd data: {:?}\n{}",
        run.systemctl,
        run.stderr
    );
    // The device appears: mounted, then kubelet.
    let device = support::block::LoopDevice::blank(64);
    node.root.link_by_id(&volume, &device.path);
    let run = node.run(&world, Layout::Image(Image::Debian, None), &args, &[]);
    assert!(
        run.report["error"].is_null(),
        "{:#}\n{}",
        run.report,
        run.stderr
    );
    assert!(
        run.systemctl
            .contains(&"start --no-block kubelet".to_owned()),
        "{:?}\n{}",
        run.systemctl,
        run.stderr
    );
    let changes = run.report["changes"].as_array().unwrap();
    let mounted = changes
        .iter()
        .position(|c| c["kind"] == "mount")
        .expect("mounted");
    let started = changes
        .iter()
        .position(|c| c["kind"] == "service" && c["action"] == "start")
        .expect("kubelet started");
    assert!(mounted < started, "{changes:?}");
    unmount_below(node.root.path());
}

#[test]
fn g13_a_kops_1_23_or_later_unit_never_makes_protokube_own_etcd() {
    let world = World::new("minimal.example.com");
    // An etcd volume of the cluster in this zone, free: kOps' protokube of 1.23 had no etcd
    // code, etcd-manager's pod just has not been written yet.
    support::runtime().block_on(async {
        let ec2 = world.bed.moto().ec2(support::bed::REGION).await;
        seed::etcd_volume(
            &ec2,
            "minimal.example.com",
            support::bed::ZONE,
            &[("main", "a/a")],
        )
        .await
    });
    for name in ["1.23-host", "1.30-host"] {
        let (args, _) = unit_line(name);
        let root = TestRoot::new();
        world.bed.moto().reset_operations();
        let run = world.run(&args, &root, &[], &recording_systemctl());
        assert_eq!(run.exit_on_sigterm, Some(0), "{name}: {}", run.stderr);
        let operations = world.bed.moto().operations();
        assert!(
            !operations.iter().any(|o| o.contains("Volume")),
            "{name}: {operations:?}"
        );
        let info = run.report["info"].to_string();
        assert!(info.contains("1.23"), "{name}: {info}");
        assert!(!root
            .join("/etc/kubernetes/manifests")
            .join("etcd.manifest")
            .exists());
    }
}

#[test]
fn g3_the_image_recipes_put_protokube_where_each_era_runs_it_and_keep_channels() {
    for (recipe, image) in [
        ("Dockerfile.1.12-1.18", Image::Debian),
        ("Dockerfile.1.19-1.20", Image::Distroless),
    ] {
        let path = crate::support::repo()
            .join("packaging/kops-image")
            .join(recipe);
        let text = std::fs::read_to_string(&path).unwrap();
        let (protokube, channels) = image.paths();
        let steps: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .collect();
        // kOps' own image is the base, and the one thing replaced is protokube, at the path
        // that era's unit runs.
        assert!(
            steps.iter().any(|l| l.starts_with("FROM ${KOPS_IMAGE}")),
            "{recipe}: {steps:?}"
        );
        let copies: Vec<&str> = steps
            .iter()
            .filter(|l| l.starts_with("COPY") || l.starts_with("ADD") || l.starts_with("RUN"))
            .copied()
            .collect();
        assert_eq!(
            copies,
            [format!("COPY linux/amd64/protokube {protokube}").as_str()],
            "{recipe}"
        );
        assert!(!text.contains(&format!("COPY linux/amd64/protokube {channels}")));
    }
    // The release's glibc floor is below Debian 9's 2.24 (the 1.12–1.18 image).
    let release = std::fs::read_to_string(crate::support::repo().join("scripts/release")).unwrap();
    let floor = release
        .lines()
        .find_map(|l| l.strip_prefix("GLIBC_FLOOR="))
        .unwrap();
    let minor: u32 = floor.strip_prefix("2.").unwrap().parse().unwrap();
    assert!(minor <= 24, "glibc floor {floor}");
}
