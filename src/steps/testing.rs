//! The bench the steps' unit tests run on: a master's settings, the in-memory cloud
//! ([`MemoryCloud`]), the in-memory DNS service ([`MemoryZones`]) and the in-memory node
//! ([`MemoryHost`]), and builders for the cluster's etcd volumes and their block devices. The root is an empty temporary directory: paths resolve
//! under it as on a node, and nothing is written there (the node's files live in memory).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::cloud::memory::{MemoryCloud, World};
use crate::cloud::{
    tags, AttachmentState, CloudVolume, InstanceInfo, VolumeAttachment, VolumeState,
};
use crate::dns::memory::{MemoryZones, ZoneServiceState};
use crate::dns::target::DnsTarget;
use crate::host::memory::{Content, Device, MemoryHost, Node};
use crate::report::Report;
use crate::settings::{Flags, Settings};
use crate::snapshot::{Snapshot, VolumeScope};

pub(crate) const CLUSTER: &str = "k.example.com";
pub(crate) const INSTANCE: &str = "i-0000000000000000a";
pub(crate) const OTHER_INSTANCE: &str = "i-0000000000000000b";
pub(crate) const ZONE: &str = "us-east-1a";
/// 1 GiB.
pub(crate) const SIZE: u64 = 1 << 30;

/// One etcd volume of the bench's cluster.
#[derive(Clone, Debug)]
pub(crate) struct Vol {
    pub(crate) id: String,
    pub(crate) zone: String,
    /// `(cluster key, member, members)`.
    pub(crate) etcd: Vec<(String, String, String)>,
    /// The instance and device it is attached as.
    pub(crate) attached: Option<(String, String)>,
    /// The `k8s.io/protokube/formatted` tag.
    pub(crate) formatted: Option<String>,
}

impl Vol {
    /// A free volume in the bench's zone holding member `member` of etcd cluster `key`.
    pub(crate) fn new(id: &str, key: &str, member: &str) -> Self {
        Self {
            id: id.to_owned(),
            zone: ZONE.to_owned(),
            etcd: vec![(key.to_owned(), member.to_owned(), member.to_owned())],
            attached: None,
            formatted: None,
        }
    }

    pub(crate) fn attached_to(mut self, instance: &str, device: &str) -> Self {
        self.attached = Some((instance.to_owned(), device.to_owned()));
        self
    }

    pub(crate) fn formatted(mut self, uuid: &str) -> Self {
        self.formatted = Some(uuid.to_owned());
        self
    }

    pub(crate) fn in_zone(mut self, zone: &str) -> Self {
        self.zone = zone.to_owned();
        self
    }

    fn cloud(&self) -> CloudVolume {
        let mut tags = BTreeMap::from([
            (tags::CLUSTER.to_owned(), CLUSTER.to_owned()),
            (tags::MASTER_ROLE.to_owned(), "1".to_owned()),
        ]);
        for (key, member, members) in &self.etcd {
            tags.insert(
                format!("{}{key}", tags::ETCD_PREFIX),
                format!("{member}/{members}"),
            );
        }
        if let Some(uuid) = &self.formatted {
            tags.insert(
                crate::plan::blank::FORMATTED_TAG.to_owned(),
                uuid.to_owned(),
            );
        }
        CloudVolume {
            id: self.id.clone(),
            zone: self.zone.clone(),
            state: if self.attached.is_some() {
                VolumeState::InUse
            } else {
                VolumeState::Available
            },
            attachments: self
                .attached
                .iter()
                .map(|(instance, device)| VolumeAttachment {
                    instance_id: instance.clone(),
                    device: device.clone(),
                    state: AttachmentState::Attached,
                    attach_time: None,
                    root: false,
                    read_only: false,
                })
                .collect(),
            tags,
            made_from: None,
            regional: false,
        }
    }
}

/// A running master with private address `ip`.
pub(crate) fn master(id: &str, ip: &str) -> InstanceInfo {
    InstanceInfo {
        id: id.to_owned(),
        private_ips: vec![ip.parse().expect("an address")],
        public_ips: Vec::new(),
        volumes: Vec::new(),
    }
}

/// A master's run: its settings, the cloud and the node.
pub(crate) struct Bench {
    /// The root's directory, removed with the bench.
    _root: tempfile::TempDir,
    pub(crate) settings: Settings,
    pub(crate) cloud: MemoryCloud,
    /// The DNS service, with the public zone `example.com` (id `Z1`).
    pub(crate) zones: MemoryZones,
    pub(crate) host: MemoryHost,
}

impl Bench {
    /// A master of [`CLUSTER`] in [`ZONE`] with these volumes; the node has no device yet.
    pub(crate) fn master(volumes: &[Vol]) -> Self {
        Self::with_flags(volumes, |_| {})
    }

    /// A bench whose flags `adjust` changes first.
    pub(crate) fn with_flags(volumes: &[Vol], adjust: impl FnOnce(&mut Flags)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary root");
        let mut flags = Flags {
            provider: Some(&crate::providers::aws::PROVIDER),
            cluster_id: Some(CLUSTER.to_owned()),
            master: true,
            root: Some(dir.path().to_owned()),
            instance_id: Some(INSTANCE.to_owned()),
            availability_zone: Some(ZONE.to_owned()),
            region: Some("us-east-1".to_owned()),
            dns: Some(crate::settings::DnsChoice::of(
                crate::settings::DnsKind::None,
            )),
            timeout: Duration::from_secs(5),
            verify_interval: Duration::from_hours(1),
            no_progress: true,
            ..Flags::default()
        };
        adjust(&mut flags);
        let host = MemoryHost::new(Node::default());
        let settings = Settings::resolve(flags, &host).expect("the bench's settings");
        let master_tags = BTreeMap::from([
            (tags::CLUSTER.to_owned(), CLUSTER.to_owned()),
            (tags::MASTER_ROLE.to_owned(), "1".to_owned()),
        ]);
        let cloud = MemoryCloud::new(World {
            volumes: volumes.iter().map(Vol::cloud).collect(),
            instances: vec![(master(INSTANCE, "10.0.0.1"), master_tags)],
            ..World::default()
        });
        Self {
            _root: dir,
            settings,
            cloud,
            zones: MemoryZones::new(ZoneServiceState::with_zone("Z1", "example.com")),
            host,
        }
    }

    /// The same node and cloud, run with `--dry-run`.
    pub(crate) fn dry_run(&mut self) {
        self.settings.dry_run = true;
    }

    /// A block device at host path `device` (`/dev/vdb`, the in-memory cloud's first name)
    /// holding `content`.
    pub(crate) fn device(&self, device: &str, minor: u32, content: Content) {
        let path = self.settings.root.path(device);
        self.host.change(|node| {
            node.devices.insert(
                path,
                Device {
                    devno: (202, minor),
                    size: SIZE,
                    content,
                },
            );
        });
    }

    /// A file on the node at host path `path`.
    pub(crate) fn file(&self, path: &str, text: &str) {
        self.file_bytes(path, text.as_bytes());
    }

    /// A file on the node at host path `path` holding `bytes`.
    pub(crate) fn file_bytes(&self, path: &str, bytes: &[u8]) {
        let path = self.settings.root.path(path);
        self.host.change(|node| {
            node.files.insert(path, (bytes.to_vec(), 0o644));
        });
    }

    /// Where the node keeps host path `path`.
    pub(crate) fn path(&self, path: &str) -> PathBuf {
        self.settings.root.path(path)
    }

    /// The run's DNS target, as the commands choose it.
    pub(crate) fn dns(&self) -> Box<dyn DnsTarget + '_> {
        let cluster = self.settings.cluster.as_ref().expect("the bench's cluster");
        crate::dns::choose(
            &self.settings,
            cluster,
            crate::dns::Places {
                zones: &self.zones,
                member: None,
            },
            &self.host,
        )
    }

    pub(crate) fn snapshot(&self, scope: VolumeScope) -> Snapshot<'_> {
        Snapshot::new(&self.settings, &self.cloud, &self.host, scope)
    }

    pub(crate) fn report(&self) -> Report {
        Report::new("test", self.settings.dry_run)
    }

    /// Runs `future` to its end on a current-thread runtime.
    pub(crate) fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(future)
    }
}

impl Bench {
    /// A symlink on the node at host path `path` to `target`.
    pub(crate) fn symlink(&self, path: &str, target: &str) {
        let path = self.settings.root.path(path);
        self.host.change(|node| {
            node.symlinks.insert(path, PathBuf::from(target));
        });
    }

    /// The effects made on the node so far, forgotten afterwards.
    pub(crate) fn take_effects(&self) -> Vec<String> {
        let mut effects = Vec::new();
        self.host
            .change(|node| effects = std::mem::take(&mut node.effects));
        let root = self.settings.root.dir().display().to_string();
        effects.into_iter().map(|e| e.replace(&root, "")).collect()
    }

    /// `sync`'s etcd part on a master, in `sync`'s order: the verify step's question, claim,
    /// mount, nothing to publish (`--dns none`), the verify step's record. The report, the
    /// cloud's calls in this run, and the run's result.
    pub(crate) fn sync_volumes(&self) -> (Report, Vec<String>, anyhow::Result<()>) {
        let before = self.cloud.world().calls.len();
        let mut report = self.report();
        let mut snapshot = self.snapshot(VolumeScope::Region);
        let result = Self::block_on(async {
            let verify = super::verify::begin_master(&mut snapshot).await?;
            let claimed = super::claim::run(&mut snapshot, &mut report).await?;
            let mounted = super::mount::run(&mut snapshot, &mut report).await?;
            super::verify::finish_master(
                &mut snapshot,
                &verify,
                claimed.volumes_changed || mounted.formatted,
                &crate::dns::target::PublishOutcome::nothing(),
            )?;
            claimed.finish()
        });
        let calls = self.cloud.world().calls[before..].to_vec();
        (report, calls, result)
    }
}
