//! The tests' one world builder: a fresh node of the kinds protokube runs on, each with its own
//! emulator, metadata service, temporary root and (for masters) blank loop devices behind its
//! etcd volumes — an HA master of a Route53 cluster, the single master of a gossip cluster, a
//! worker of a gossip cluster, a worker of a Route53 cluster (no cloud at all) — or a bare
//! instance whose volumes the test seeds itself, with helpers to seed, inspect and `mount`.

use super::block::{LoopDevice, TestRoot};
use super::{fixture, seed, ImdsServer, Moto, Protokube, RunOutput};

pub(crate) const REGION: &str = "us-east-1";
/// The zone of every bed's instance.
pub(crate) const ZONE: &str = "us-east-1a";
pub(crate) const HA: &str = "ha.example.com";
pub(crate) const GOSSIP: &str = "minimal.k8s.local";

/// What kind of node a bed is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// Master `a` of `ha.example.com` (members a, b, c of `main` and `events` in three zones),
    /// hosted zone `example.com`.
    HaMaster,
    /// The master of `minimal.k8s.local` (hosts DNS).
    GossipMaster,
    /// A worker of `minimal.k8s.local`; the cluster's master runs elsewhere.
    GossipWorker,
    /// A worker of `minimal.example.com`: needs no cloud.
    Route53Worker,
    /// An instance of no cluster in [`ZONE`], no volumes: the test seeds what it needs.
    Bare,
}

/// One node and its world.
pub(crate) struct Bed {
    pub kind: NodeKind,
    pub moto: Option<Moto>,
    pub imds: Option<ImdsServer>,
    pub root: TestRoot,
    pub instance_id: String,
    pub private_ip: String,
    /// This node's etcd volumes (masters), in the order of `disks`.
    pub volumes: Vec<String>,
    pub disks: Vec<LoopDevice>,
    pub zone_id: Option<String>,
    /// Whether an HA master passes `--zone example.com` (else the spec's `dnsZone` decides).
    pub zone_flag: bool,
}

impl Bed {
    /// A kOps HA master where etcd-manager attached and mounted the etcd volumes (here:
    /// protokube's `mount`, its state file then removed, as on a node protokube never ran on),
    /// each holding etcd-manager's data.
    pub(crate) fn etcd_manager_master() -> Self {
        let bed = Self::new(NodeKind::HaMaster);
        let first = bed.run("mount", &[]);
        assert_eq!(first.code, 0, "{first:#?}");
        for volume in &bed.volumes {
            std::fs::write(
                bed.root.mountpoint(volume).join("etcd-manager-data"),
                volume,
            )
            .unwrap();
        }
        std::fs::remove_file(bed.root.join("/var/lib/protokube/state.json")).unwrap();
        bed
    }

    pub(crate) fn new(kind: NodeKind) -> Self {
        if kind == NodeKind::Route53Worker {
            return Self {
                kind,
                moto: None,
                imds: None,
                root: TestRoot::new(),
                instance_id: String::new(),
                private_ip: String::new(),
                volumes: Vec::new(),
                disks: Vec::new(),
                zone_id: None,
                zone_flag: true,
            };
        }
        let moto = Moto::start();
        let (instance_id, private_ip, volumes, zone_id) = super::runtime().block_on(async {
            let ec2 = moto.ec2(REGION).await;
            match kind {
                NodeKind::HaMaster => {
                    let tags = [("KubernetesCluster", HA), ("k8s.io/role/master", "1")];
                    let instance = seed::instance(&ec2, ZONE, &tags).await;
                    let (ip, _) = seed::instance_addresses(&ec2, &instance).await;
                    let mut here = Vec::new();
                    for (member, zone) in [("a", ZONE), ("b", "us-east-1b"), ("c", "us-east-1c")] {
                        let value = format!("{member}/a,b,c");
                        let main = seed::etcd_volume(&ec2, HA, zone, &[("main", &value)]).await;
                        let events = seed::etcd_volume(&ec2, HA, zone, &[("events", &value)]).await;
                        if member == "a" {
                            here = vec![main, events];
                        }
                    }
                    let zone_id = seed::hosted_zone(&moto.route53().await, "example.com").await;
                    (instance, ip, here, Some(zone_id))
                }
                NodeKind::GossipMaster | NodeKind::GossipWorker => {
                    let master_tags = [("KubernetesCluster", GOSSIP), ("k8s.io/role/master", "1")];
                    let master = seed::instance(&ec2, ZONE, &master_tags).await;
                    let mut volumes = Vec::new();
                    for key in ["main", "events"] {
                        let value = "us-test-1a/us-test-1a";
                        volumes.push(seed::etcd_volume(&ec2, GOSSIP, ZONE, &[(key, value)]).await);
                    }
                    if kind == NodeKind::GossipMaster {
                        let (ip, _) = seed::instance_addresses(&ec2, &master).await;
                        (master, ip, volumes, None)
                    } else {
                        let worker_tags = [("KubernetesCluster", GOSSIP)];
                        let worker = seed::instance(&ec2, ZONE, &worker_tags).await;
                        let (ip, _) = seed::instance_addresses(&ec2, &worker).await;
                        (worker, ip, Vec::new(), None)
                    }
                }
                NodeKind::Bare => {
                    let instance = seed::instance(&ec2, ZONE, &[]).await;
                    let (ip, _) = seed::instance_addresses(&ec2, &instance).await;
                    (instance, ip, Vec::new(), None)
                }
                NodeKind::Route53Worker => unreachable!(),
            }
        });
        moto.reset_operations();
        let imds = ImdsServer::for_instance(&instance_id, ZONE, REGION, &private_ip);
        let root = TestRoot::new();
        let disks: Vec<LoopDevice> = volumes.iter().map(|_| LoopDevice::blank(64)).collect();
        for (volume, disk) in volumes.iter().zip(&disks) {
            root.link_by_id(volume, &disk.path);
        }
        Self {
            kind,
            moto: Some(moto),
            imds: Some(imds),
            root,
            instance_id,
            private_ip,
            volumes,
            disks,
            zone_id,
            zone_flag: true,
        }
    }

    /// The cluster spec this node runs with.
    pub(crate) fn spec(&self) -> std::path::PathBuf {
        let spec = match self.kind {
            NodeKind::HaMaster => "ha.yaml",
            NodeKind::GossipMaster | NodeKind::GossipWorker => "minimal_gossip.yaml",
            NodeKind::Route53Worker | NodeKind::Bare => "minimal-1.28.yaml",
        };
        fixture(&format!("cluster-completed/{spec}"))
    }

    /// `protokube <command> -o json` as this node, with `extra` flags (`-o`, `--timeout` and `--root` in them win).
    pub(crate) fn run(&self, command: &str, extra: &[&str]) -> RunOutput {
        self.run_with_spec(command, &self.spec(), extra)
    }

    /// [`Bed::run`] with another cluster spec.
    pub(crate) fn run_with_spec(
        &self,
        command: &str,
        spec: &std::path::Path,
        extra: &[&str],
    ) -> RunOutput {
        self.command(command, spec, extra).run()
    }

    /// The `protokube` invocation of [`Bed::run_with_spec`], to adjust before running.
    pub(crate) fn command(
        &self,
        command: &str,
        spec: &std::path::Path,
        extra: &[&str],
    ) -> Protokube {
        self.command_under(&[], command, spec, extra)
    }

    /// `command` run under `strace`, killed with SIGKILL at the `when`th call of `syscall` by
    /// protokube or any child it starts.
    pub(crate) fn run_killed_at(
        &self,
        syscall: &str,
        when: u32,
        command: &str,
        spec: &std::path::Path,
    ) -> RunOutput {
        let inject = format!("inject={syscall}:signal=SIGKILL:when={when}");
        self.command_under(
            &["strace", "-f", "-qq", "-o", "/dev/null", "-e", &inject],
            command,
            spec,
            &[],
        )
        .run()
    }

    /// [`Bed::command`] started by `wrapper` (see [`Protokube::under`]).
    pub(crate) fn command_under(
        &self,
        wrapper: &[&str],
        command: &str,
        spec: &std::path::Path,
        extra: &[&str],
    ) -> Protokube {
        let given = |flag: &str| extra.iter().any(|a| a.split('=').next() == Some(flag));
        let mut protokube = Protokube::under(wrapper).args([command]);
        if !given("-o") && !given("--output") {
            protokube = protokube.args(["-o", "json"]);
        }
        if !given("--timeout") {
            protokube = protokube.args(["--timeout", "20s"]);
        }
        if let Some(moto) = &self.moto {
            protokube = protokube.moto(moto);
        }
        if let Some(imds) = &self.imds {
            protokube = protokube.imds(imds);
        }
        protokube = protokube.arg_path("--cluster-spec", spec);
        if !given("--root") {
            protokube = protokube.arg_path("--root", self.root.path());
        }
        protokube = match self.kind {
            NodeKind::HaMaster if self.zone_flag && !given("--zone") => {
                protokube.args(["--master", "--zone", "example.com"])
            }
            NodeKind::HaMaster => protokube.args(["--master"]),
            NodeKind::GossipMaster => protokube.args(["--master"]),
            NodeKind::GossipWorker | NodeKind::Route53Worker | NodeKind::Bare => protokube,
        };
        protokube.args(extra)
    }

    /// A running instance with kOps' master tag (the first the emulator lists): (instance id,
    /// private address).
    pub(crate) fn running_master(&self) -> (String, String) {
        super::runtime().block_on(async {
            let ec2 = self.moto().ec2(REGION).await;
            let out = ec2
                .describe_instances()
                .filters(
                    aws_sdk_ec2::types::Filter::builder()
                        .name("tag-key")
                        .values("k8s.io/role/master")
                        .build(),
                )
                .filters(
                    aws_sdk_ec2::types::Filter::builder()
                        .name("instance-state-name")
                        .values("running")
                        .build(),
                )
                .send()
                .await
                .unwrap();
            let instance = &out.reservations()[0].instances()[0];
            (
                instance.instance_id().unwrap().to_owned(),
                instance.private_ip_address().unwrap().to_owned(),
            )
        })
    }

    /// The emulator (panics for a node without cloud).
    pub(crate) fn moto(&self) -> &Moto {
        self.moto.as_ref().expect("this node has no cloud")
    }

    /// The metadata service (panics for a node without cloud).
    pub(crate) fn imds(&self) -> &ImdsServer {
        self.imds.as_ref().expect("this node has no cloud")
    }

    /// `protokube mount --master --cluster-id <cluster> -o json` here (no cluster spec), with
    /// `extra` flags (`--timeout` 20 s unless given).
    pub(crate) fn mount(&self, cluster: &str, extra: &[&str]) -> RunOutput {
        Protokube::new()
            .moto(self.moto())
            .imds(self.imds())
            .args(["mount", "--master", "--cluster-id", cluster, "-o", "json"])
            .arg_path("--root", self.root.path())
            .args(if extra.contains(&"--timeout") {
                &[][..]
            } else {
                &["--timeout", "20s"][..]
            })
            .args(extra)
            .run()
    }

    /// A new etcd volume of `cluster` in [`ZONE`] with these `etcd` keys.
    pub(crate) fn etcd_volume(&self, cluster: &str, etcd: &[(&str, &str)]) -> String {
        self.etcd_volume_with(cluster, etcd, &[], false)
    }

    /// An etcd volume with `extra` tags, created from a snapshot when `from_snapshot`.
    pub(crate) fn etcd_volume_with(
        &self,
        cluster: &str,
        etcd: &[(&str, &str)],
        extra: &[(&str, &str)],
        from_snapshot: bool,
    ) -> String {
        super::runtime().block_on(async {
            let ec2 = self.moto().ec2(REGION).await;
            let snapshot = if from_snapshot {
                Some(seed::snapshot(&ec2, ZONE).await)
            } else {
                None
            };
            seed::etcd_volume_with(&ec2, cluster, ZONE, etcd, extra, snapshot.as_deref()).await
        })
    }

    /// Tags this instance as a master of `cluster`, as kOps does (`KubernetesCluster`,
    /// `k8s.io/role/master`).
    pub(crate) fn tag_as_master(&self, cluster: &str) {
        super::runtime().block_on(async {
            let ec2 = self.moto().ec2(REGION).await;
            for (key, value) in [("KubernetesCluster", cluster), ("k8s.io/role/master", "1")] {
                let tag = aws_sdk_ec2::types::Tag::builder()
                    .key(key)
                    .value(value)
                    .build();
                ec2.create_tags()
                    .resources(&self.instance_id)
                    .tags(tag)
                    .send()
                    .await
                    .unwrap();
            }
        });
    }

    /// Sets tag `key` = `value` on the volume, behind protokube's back.
    pub(crate) fn tag_volume(&self, volume_id: &str, key: &str, value: &str) {
        super::runtime().block_on(async {
            self.moto()
                .ec2(REGION)
                .await
                .create_tags()
                .resources(volume_id)
                .tags(
                    aws_sdk_ec2::types::Tag::builder()
                        .key(key)
                        .value(value)
                        .build(),
                )
                .send()
                .await
                .unwrap();
        });
    }

    /// The volume's tags, as the emulator has them.
    pub(crate) fn volume_tags(
        &self,
        volume_id: &str,
    ) -> std::collections::BTreeMap<String, String> {
        super::runtime()
            .block_on(async { seed::volume_tags(&self.moto().ec2(REGION).await, volume_id).await })
    }

    /// Detaches the volume from this instance behind protokube's back.
    pub(crate) fn detach(&self, volume_id: &str) {
        super::runtime().block_on(async {
            let ec2 = self.moto().ec2(REGION).await;
            // moto needs the instance id (AWS does not).
            ec2.detach_volume()
                .volume_id(volume_id)
                .instance_id(&self.instance_id)
                .send()
                .await
                .unwrap();
        });
    }

    /// (instance, device) of each attachment of the volume, as the emulator has it.
    pub(crate) fn attachments(&self, volume_id: &str) -> Vec<(String, String)> {
        super::runtime().block_on(async {
            let ec2 = self.moto().ec2(REGION).await;
            let out = ec2
                .describe_volumes()
                .volume_ids(volume_id)
                .send()
                .await
                .unwrap();
            out.volumes()[0]
                .attachments()
                .iter()
                .map(|a| {
                    (
                        a.instance_id().unwrap().to_owned(),
                        a.device().unwrap().to_owned(),
                    )
                })
                .collect()
        })
    }
}
