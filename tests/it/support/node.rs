//! A test node: one emulator, one instance with its metadata service, one temporary root, and
//! helpers to seed volumes and run `protokube mount` there.

use super::block::TestRoot;
use super::{seed, ImdsServer, Moto, Protokube, RunOutput};

pub(crate) const REGION: &str = "us-east-1";
pub(crate) const ZONE: &str = "us-east-1a";

/// One emulator, one node (instance + metadata service), one temporary root.
pub(crate) struct Node {
    pub moto: Moto,
    pub imds: ImdsServer,
    pub instance_id: String,
    pub root: TestRoot,
}

impl Node {
    pub(crate) fn start() -> Self {
        let moto = Moto::start();
        let instance_id = super::runtime().block_on(async {
            let ec2 = moto.ec2(REGION).await;
            seed::instance(&ec2, ZONE, &[]).await
        });
        let imds = ImdsServer::for_instance(&instance_id, ZONE, REGION, "10.0.0.10");
        Self {
            moto,
            imds,
            instance_id,
            root: TestRoot::new(),
        }
    }

    pub(crate) fn etcd_volume(&self, cluster: &str, etcd: &[(&str, &str)]) -> String {
        super::runtime().block_on(async {
            let ec2 = self.moto.ec2(REGION).await;
            seed::etcd_volume(&ec2, cluster, ZONE, etcd).await
        })
    }

    /// Tags this instance as a master of `cluster`, as kOps does (`KubernetesCluster`,
    /// `k8s.io/role/master`).
    pub(crate) fn tag_as_master(&self, cluster: &str) {
        super::runtime().block_on(async {
            let ec2 = self.moto.ec2(REGION).await;
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

    /// An etcd volume with `extra` tags, created from a snapshot when `from_snapshot`.
    pub(crate) fn etcd_volume_with(
        &self,
        cluster: &str,
        etcd: &[(&str, &str)],
        extra: &[(&str, &str)],
        from_snapshot: bool,
    ) -> String {
        super::runtime().block_on(async {
            let ec2 = self.moto.ec2(REGION).await;
            let snapshot = if from_snapshot {
                Some(seed::snapshot(&ec2, ZONE).await)
            } else {
                None
            };
            seed::etcd_volume_with(&ec2, cluster, ZONE, etcd, extra, snapshot.as_deref()).await
        })
    }

    /// The volume's tags, as the emulator has them.
    pub(crate) fn volume_tags(
        &self,
        volume_id: &str,
    ) -> std::collections::BTreeMap<String, String> {
        super::runtime()
            .block_on(async { seed::volume_tags(&self.moto.ec2(REGION).await, volume_id).await })
    }

    pub(crate) fn mount(&self, cluster: &str, extra: &[&str]) -> RunOutput {
        Protokube::new()
            .moto(&self.moto)
            .imds(&self.imds)
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

    pub(crate) fn detach(&self, volume_id: &str) {
        super::runtime().block_on(async {
            let ec2 = self.moto.ec2(REGION).await;
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
            let ec2 = self.moto.ec2(REGION).await;
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
