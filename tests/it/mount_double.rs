//! `mount` against a stricter cloud double, for what the local AWS emulator cannot show: another
//! node winning the attach race (`VolumeInUse`), device names already taken, an attachment stuck
//! in `attaching`, and a block device that never appears. The double implements protokube's own
//! `VolumeApi` trait; block devices are still real loop devices under a temporary root.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use async_trait::async_trait;
use protokube::testing::NotReady;
use protokube::testing::{
    AttachOutcome, AttachmentState, CloudVolume, VolumeApi, VolumeAttachment, VolumeQuery,
    VolumeState,
};
use protokube::Cli;
use protokube::Report;
use support::block::{LoopDevice, TestRoot};
use support::double::DoubleCloud;

const ME: &str = "i-me";
const CLUSTER: &str = "c.example.com";
const ZONE: &str = "us-test-1a";

/// How the double answers.
#[derive(Default)]
struct Rules {
    /// Volumes another node attaches first: our attach gets `VolumeInUse`.
    raced: Vec<String>,
    /// Device names AttachVolume refuses as already in use.
    taken_names: Vec<String>,
    /// Names in the instance's block device mappings.
    mapped_names: Vec<String>,
    /// Attachments never leave `attaching`.
    stuck: bool,
}

struct StrictVolumes {
    volumes: Mutex<BTreeMap<String, CloudVolume>>,
    rules: Rules,
    calls: Mutex<Vec<String>>,
}

impl StrictVolumes {
    fn new(ids: &[(&str, &str)], rules: Rules) -> Arc<Self> {
        let volumes = ids
            .iter()
            .map(|(id, etcd)| {
                let tags = BTreeMap::from([
                    ("KubernetesCluster".to_owned(), CLUSTER.to_owned()),
                    ("k8s.io/role/master".to_owned(), "1".to_owned()),
                    ("k8s.io/etcd/main".to_owned(), etcd.to_string()),
                ]);
                let volume = CloudVolume {
                    id: id.to_string(),
                    zone: ZONE.into(),
                    state: VolumeState::Available,
                    attachments: vec![],
                    tags,
                    made_from: None,
                    regional: false,
                };
                (id.to_string(), volume)
            })
            .collect();
        Arc::new(Self {
            volumes: Mutex::new(volumes),
            rules,
            calls: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl VolumeApi for StrictVolumes {
    async fn find_volumes(&self, _query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        self.calls.lock().unwrap().push("find_volumes".into());
        Ok(self.volumes.lock().unwrap().values().cloned().collect())
    }

    async fn volumes_by_id(&self, ids: &[String]) -> Result<Vec<CloudVolume>> {
        self.calls.lock().unwrap().push("volumes_by_id".into());
        let volumes = self.volumes.lock().unwrap();
        Ok(ids
            .iter()
            .filter_map(|id| volumes.get(id).cloned())
            .collect())
    }

    async fn attach_volume(
        &self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        _dry_run: bool,
    ) -> Result<AttachOutcome> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("attach {volume_id} {device}"));
        let mut volumes = self.volumes.lock().unwrap();
        let volume = volumes.get_mut(volume_id).unwrap();
        if self.rules.raced.iter().any(|r| r == volume_id) {
            volume.state = VolumeState::InUse;
            volume.attachments = vec![VolumeAttachment {
                instance_id: "i-other".into(),
                device: "/dev/xvdu".into(),
                state: AttachmentState::Attached,
                attach_time: None,
                root: false,
                read_only: false,
            }];
            return Ok(AttachOutcome::VolumeTaken(format!(
                "VolumeInUse: {volume_id} is already attached to an instance"
            )));
        }
        if !volume.attachments.is_empty() {
            return Ok(AttachOutcome::VolumeTaken("VolumeInUse".into()));
        }
        if self.rules.taken_names.iter().any(|n| n == device) {
            return Ok(AttachOutcome::DeviceNameTaken(format!(
                "InvalidParameterValue: Attachment point {device} is already in use"
            )));
        }
        volume.state = VolumeState::InUse;
        volume.attachments = vec![VolumeAttachment {
            instance_id: instance_id.into(),
            device: device.into(),
            state: if self.rules.stuck {
                AttachmentState::Attaching
            } else {
                AttachmentState::Attached
            },
            attach_time: None,
            root: false,
            read_only: false,
        }];
        Ok(AttachOutcome::Requested)
    }

    async fn instance_device_names(&self, _instance_id: &str) -> Result<Vec<String>> {
        self.calls
            .lock()
            .unwrap()
            .push("instance_device_names".into());
        Ok(self.rules.mapped_names.clone())
    }

    async fn detach_volume(
        &self,
        volume_id: &str,
        _instance_id: &str,
        _dry_run: bool,
    ) -> Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("detach {volume_id}"));
        let mut volumes = self.volumes.lock().unwrap();
        let volume = volumes.get_mut(volume_id).unwrap();
        volume.attachments.clear();
        volume.state = VolumeState::Available;
        Ok(())
    }

    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("tag {volume_id} {key}"));
        let mut volumes = self.volumes.lock().unwrap();
        let volume = volumes.get_mut(volume_id).unwrap();
        volume.tags.insert(key.to_owned(), value.to_owned());
        Ok(())
    }
}

/// `protokube mount` as an operator would run it on this node of the double's cloud.
fn mount_command(root: &TestRoot) -> Cli {
    Cli::parse_from([
        "protokube".to_owned(),
        "mount".to_owned(),
        "--cloud=aws".to_owned(),
        format!("--cluster-id={CLUSTER}"),
        "--master".to_owned(),
        format!("--root={}", root.path().display()),
        format!("--instance-id={ME}"),
        format!("--availability-zone={ZONE}"),
        "--region=us-test-1".to_owned(),
        "--timeout=1500ms".to_owned(),
        "--no-progress".to_owned(),
    ])
    .unwrap()
}

/// Runs `mount` against the double; on success, the volume ids the state file records.
fn run(cloud: &Arc<StrictVolumes>, root: &TestRoot) -> (Result<Vec<String>>, Report) {
    let double = DoubleCloud::with_volumes(cloud.clone());
    let mut report = Report::new("mount", false);
    let result = support::runtime().block_on(protokube::testing::run_on_this_node(
        &mount_command(root),
        &double,
        &support::double::Absent,
        &mut report,
    ));
    let result = result.map(|()| {
        let state: serde_json::Value = serde_json::from_slice(
            &std::fs::read(root.join("/var/lib/protokube/state.json")).unwrap(),
        )
        .unwrap();
        state["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["volume_id"].as_str().unwrap().to_owned())
            .collect()
    });
    (result, report)
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn another_node_winning_the_race_is_not_an_error() {
    let disk = LoopDevice::blank(32);
    let root = TestRoot::new();
    let cloud = StrictVolumes::new(
        &[("vol-a", "a/a,b"), ("vol-b", "b/a,b")],
        Rules {
            raced: vec!["vol-a".into()],
            ..Default::default()
        },
    );
    root.link_by_id("vol-b", &disk.path);
    let (result, report) = run(&cloud, &root);
    assert_eq!(result.unwrap(), ["vol-b"]);
    let calls = cloud.calls();
    assert!(
        calls.contains(&"attach vol-a /dev/xvdu".to_owned()),
        "{calls:?}"
    );
    assert!(
        calls.contains(&"attach vol-b /dev/xvdu".to_owned()),
        "{calls:?}"
    );
    assert_eq!(
        disk.mounted_at(),
        [root.mountpoint("vol-b").display().to_string()]
    );
    assert!(report.changed);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn device_names_in_use_are_skipped() {
    let disk = LoopDevice::blank(32);
    let root = TestRoot::new();
    let cloud = StrictVolumes::new(
        &[("vol-a", "a/a")],
        Rules {
            mapped_names: vec!["/dev/sda1".into(), "/dev/xvdu".into()],
            taken_names: vec!["/dev/xvdv".into()],
            ..Default::default()
        },
    );
    // No NVMe link: found under the requested name's sd* alias.
    root.device_node("/dev/sdw", &disk.path);
    let (result, _) = run(&cloud, &root);
    assert_eq!(result.unwrap(), ["vol-a"]);
    let attaches: Vec<String> = cloud
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("attach"))
        .collect();
    assert_eq!(
        attaches,
        ["attach vol-a /dev/xvdv", "attach vol-a /dev/xvdw"]
    );
    assert_eq!(disk.mounted_at().len(), 1);
}

#[test]
fn an_attachment_stuck_in_attaching_ends_in_not_ready() {
    let root = TestRoot::new();
    let cloud = StrictVolumes::new(
        &[("vol-a", "a/a")],
        Rules {
            stuck: true,
            ..Default::default()
        },
    );
    let (result, report) = run(&cloud, &root);
    let err = result.unwrap_err();
    assert!(err.is::<NotReady>(), "{err:#}");
    assert!(
        format!("{err:#}").contains("`vol-a` to be attached"),
        "{err:#}"
    );
    // It polled more than once before giving up, and wrote nothing.
    let polls = cloud
        .calls()
        .iter()
        .filter(|c| *c == "volumes_by_id")
        .count();
    assert!(polls > 2, "{polls}");
    assert!(!root.join("/var/lib/protokube/state.json").exists());
    assert!(report
        .changes
        .iter()
        .all(|c| c.kind != protokube::testing::ChangeKind::Mount));
}

#[test]
fn a_device_that_never_appears_ends_in_not_ready() {
    let root = TestRoot::new();
    let cloud = StrictVolumes::new(&[("vol-a", "a/a")], Rules::default());
    let (result, _) = run(&cloud, &root);
    let err = result.unwrap_err();
    assert!(err.is::<NotReady>(), "{err:#}");
    let text = format!("{err:#}");
    assert!(text.contains("block device of `vol-a`"), "{text}");
    assert!(text.contains("/dev/xvdu"), "{text}");
    assert!(!root.join("/var/lib/protokube/state.json").exists());
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_nvme_serial_naming_another_volume_is_refused() {
    let disk = LoopDevice::blank(32);
    let root = TestRoot::new();
    let cloud = StrictVolumes::new(&[("vol-a", "a/a")], Rules::default());
    let name = root.link_by_id("vol-a", &disk.path);
    // sysfs under the root says the controller behind the link is another volume.
    let serial = root.join(&format!("/sys/block/{name}/device/serial"));
    std::fs::write(&serial, "vol0fffffffffffffff\n").unwrap();
    let (result, _) = run(&cloud, &root);
    let text = format!("{:#}", result.unwrap_err());
    assert!(text.contains("NVMe serial `vol0fffffffffffffff`"), "{text}");
    assert!(disk.fs_type().is_none(), "never formatted");
    assert!(disk.mounted_at().is_empty());

    // With the right serial the same device is used.
    std::fs::write(&serial, "vola\n").unwrap();
    let (result, _) = run(&cloud, &root);
    assert_eq!(result.unwrap(), ["vol-a"]);
}
