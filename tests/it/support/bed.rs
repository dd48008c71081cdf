//! Fresh nodes of the four kinds protokube runs on, each with its own emulator, metadata
//! service, temporary root and (for masters) blank loop devices behind its etcd volumes:
//! an HA master of a Route53 cluster, the single master of a gossip cluster, a worker of a
//! gossip cluster, and a worker of a Route53 cluster (no cloud at all).

use super::block::{LoopDevice, TestRoot};
use super::{fixture, seed, ImdsServer, Moto, Protokube, RunOutput};

pub(crate) const REGION: &str = "us-east-1";
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
                    let instance = seed::instance(&ec2, "us-east-1a", &tags).await;
                    let (ip, _) = seed::instance_addresses(&ec2, &instance).await;
                    let mut here = Vec::new();
                    for (member, zone) in [
                        ("a", "us-east-1a"),
                        ("b", "us-east-1b"),
                        ("c", "us-east-1c"),
                    ] {
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
                    let master = seed::instance(&ec2, "us-east-1a", &master_tags).await;
                    let mut volumes = Vec::new();
                    for key in ["main", "events"] {
                        let value = "us-test-1a/us-test-1a";
                        volumes.push(
                            seed::etcd_volume(&ec2, GOSSIP, "us-east-1a", &[(key, value)]).await,
                        );
                    }
                    if kind == NodeKind::GossipMaster {
                        let (ip, _) = seed::instance_addresses(&ec2, &master).await;
                        (master, ip, volumes, None)
                    } else {
                        let worker_tags = [("KubernetesCluster", GOSSIP)];
                        let worker = seed::instance(&ec2, "us-east-1a", &worker_tags).await;
                        let (ip, _) = seed::instance_addresses(&ec2, &worker).await;
                        (worker, ip, Vec::new(), None)
                    }
                }
                NodeKind::Route53Worker => unreachable!(),
            }
        });
        moto.reset_operations();
        let imds = ImdsServer::for_instance(&instance_id, "us-east-1a", REGION, &private_ip);
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
            NodeKind::Route53Worker => "minimal-1.28.yaml",
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
            NodeKind::GossipWorker | NodeKind::Route53Worker => protokube,
        };
        protokube.args(extra)
    }

    /// The emulator (panics for a node without cloud).
    pub(crate) fn moto(&self) -> &Moto {
        self.moto.as_ref().expect("this node has no cloud")
    }
}

/// The set of (kind, target, action) of a report's changes.
pub(crate) fn change_set(
    report: &serde_json::Value,
) -> std::collections::BTreeSet<(String, String, String)> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["target"].as_str().unwrap().to_owned(),
                c["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
