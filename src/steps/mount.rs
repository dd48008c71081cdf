//! The mount step: for each etcd volume attached here, find its block device, decide from the
//! mount table and the blank proof's witnesses (plan), then format only a device every witness
//! proves blank (and tag the volume with the new filesystem's UUID), check an existing ext4,
//! mount, and record the mounts in the state file.

use anyhow::{anyhow, bail, Context as _, Result};

use crate::apply::attach::wait_device;
use crate::apply::intent;
use crate::cloud::{AccessDenied, MetadataWords};
use crate::host::{FoundDevice, FsckResult, Host};
use crate::paths::{volume_mountpoint, STATE_FILE};
use crate::plan::blank::{
    decide_device, predict_device, DeviceDecision, DeviceFacts, FormatReason, IntentUuid,
    FORMATTED_TAG,
};
use crate::plan::mounts::{
    decision_changes, finish_change, format_change, grow_change, grow_warning, mount_change,
    mount_state, plan_device, plan_grow, refusal_from_mounts, state_file_change, DeviceAction,
    Grow, MountState, NO_CAP_SYS_RESOURCE,
};
use crate::plan::volumes::EtcdVolume;
use crate::report::{Action, Report};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::state::MountedVolume;

/// What the mount step did that the verify step must know.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Mounted {
    /// A volume was formatted, or its formatted tag written (the cloud's volumes changed).
    pub(crate) formatted: bool,
}

pub(crate) async fn run(snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<Mounted> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let instance_id = snapshot.identity().await?.instance_id.clone();
    let targets: Vec<EtcdVolume> = snapshot
        .volumes_here()
        .await?
        .into_iter()
        .filter(|v| {
            v.attachment
                .as_ref()
                .is_some_and(|a| a.instance_id == instance_id)
        })
        .collect();
    // This step's own changes start here in the report.
    let first_change = report.changes.len();
    // One volume's failure does not stop the others: mount what is safe, record it, then fail.
    let mut mounted = Vec::new();
    let mut errors = Vec::new();
    let mut untagged = Vec::new();
    for volume in &targets {
        match mount_volume(snapshot, volume, &mut untagged, report).await {
            Ok((record, mounted_now)) => {
                if settings.dry_run && !mounted_now {
                    snapshot.mark_planned(&volume.id);
                }
                mounted.push(record);
            }
            Err(err) => errors.push(err.context(format!("volume `{}`", volume.id))),
        }
    }
    warn_untagged(settings, snapshot.words(), &untagged, report);
    // A volume mounted here before that this run does not see (skipped for a bad tag, a retag
    // in flight) stays recorded while it is mounted: etcd may be running on it, and `reset`
    // must still find it.
    let own_mounts = super::own_mounted_volumes(settings, &snapshot.mount_table()?);
    for recorded in snapshot.state()?.volumes.clone() {
        let seen = targets.iter().any(|t| t.id == recorded.volume_id);
        if !seen && own_mounts.contains(&recorded.volume_id) {
            report.warn(format!(
                "volume `{}` is mounted at `{}` but is not among this run's volumes; it stays \
                 mounted and recorded as it is",
                recorded.volume_id,
                settings
                    .root
                    .volume_mountpoint(&recorded.volume_id)?
                    .display()
            ));
            mounted.push(recorded);
        }
    }
    let volumes = record_state(snapshot, mounted, report)?;
    snapshot.record_mounted(volumes);
    super::first_error(errors.into_iter().map(Err))?;
    Ok(Mounted {
        formatted: report.changes[first_change..]
            .iter()
            .any(|c| c.action == Action::Format),
    })
}

/// Mounts one attached volume (or, with dry run, reports what that would do); says whether it
/// is mounted now.
async fn mount_volume(
    snapshot: &mut Snapshot<'_>,
    volume: &EtcdVolume,
    untagged: &mut Vec<Untagged>,
    report: &mut Report,
) -> Result<(MountedVolume, bool)> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if let Some(attachment) = volume.attachment.as_ref().filter(|a| a.read_only) {
        bail!(
            "it is attached here read-only (as `{}`), the cloud says: etcd's data must be written, \
             and a read-only filesystem cannot be checked or mounted for it; detach it and run \
             protokube again, which attaches it read-write",
            attachment.device
        );
    }
    let device_name = volume
        .attachment
        .as_ref()
        .map(|a| a.device.clone())
        .unwrap_or_default();
    let mountpoint = settings.root.volume_mountpoint(&volume.id)?;
    let record = |device: String| MountedVolume {
        volume_id: volume.id.clone(),
        device: device.into(),
        mountpoint: volume_mountpoint(&volume.id),
        etcd: volume.etcd.clone(),
    };
    if snapshot.is_planned(&volume.id) {
        // Attached only in this dry run's plan: only the cloud's witness is known.
        let decision = predict_device(&volume.cloud);
        let text = mountpoint.display().to_string();
        for change in decision_changes(&decision, &volume.id, &text, &device_name) {
            report.push(change);
        }
        return Ok((record(device_name), false));
    }
    let host = snapshot.host();
    let hint = snapshot.devices().hint(&volume.id, &device_name);
    let device = if settings.dry_run {
        host.find_device(&settings.root, &hint)?.ok_or_else(|| {
            anyhow!(
                "the block device of volume `{}` (attached as `{device_name}`) has not appeared \
                 under `{}`",
                volume.id,
                settings.root.path("/dev").display()
            )
        })?
    } else {
        wait_device(
            host,
            &settings.root,
            &hint,
            &device_name,
            settings.deadline,
            settings.progress,
        )
        .await?
    };
    let mounted_now = mount_device(snapshot, volume, &device, &mountpoint, untagged, report)
        .await
        .with_context(|| format!("device `{}`", device.path.display()))?;
    Ok((
        record(device.host_path.display().to_string()),
        mounted_now || !settings.dry_run,
    ))
}

/// The safety core: the mount table first, then the witnesses; format only what every witness
/// proves blank (or protokube's own interrupted format), check an existing ext4, mount — the
/// actions of one plan, reported by a dry run and made by a run. Says whether the device was
/// mounted already.
async fn mount_device(
    snapshot: &mut Snapshot<'_>,
    volume: &EtcdVolume,
    device: &FoundDevice,
    mountpoint: &std::path::Path,
    untagged: &mut Vec<Untagged>,
    report: &mut Report,
) -> Result<bool> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let host = snapshot.host();
    let root = &settings.root;
    let text = mountpoint.display().to_string();
    let device_text = device.path.display().to_string();
    let state = mount_state(&host.mount_table()?, mountpoint, device.devno);
    if state == MountState::MountedHere && host.mounted_device(mountpoint)? == device.devno {
        report.push(mount_change(
            Action::Unchanged,
            &text,
            format!("{} already mounted", volume.id),
        ));
        let grow = grow_plan(host, device)?;
        grow_mounted(settings, host, volume, device, grow, report);
        return Ok(true);
    }
    if let Some(why) = refusal_from_mounts(&state, &text) {
        bail!("{why}");
    }
    // Where the host will see the mount: decided (or refused) before anything is written.
    let place = host.mount_place(root, mountpoint)?;
    let (decision, recorded_on_node) = decide(host, settings, volume, device)?;
    // An existing filesystem whose device was enlarged is grown once mounted.
    let grow = match &decision {
        DeviceDecision::CheckAndMount { .. } => grow_plan(host, device)?,
        _ => Grow::No,
    };
    let actions = plan_device(&decision, grow);
    if settings.dry_run {
        for change in actions
            .iter()
            .filter_map(|action| action.change(&volume.id, &text, &device_text))
        {
            report.push(change);
        }
    } else {
        // A failed check of protokube's own interrupted format formats it again; nothing of the
        // old filesystem is then left to grow.
        let mut formatted_again = false;
        for action in actions {
            match action {
                DeviceAction::Format(reason) => {
                    format_volume(snapshot, volume, device, reason, untagged, report).await?;
                }
                DeviceAction::Check { uuid, finish } => {
                    let check = Check {
                        uuid,
                        finish,
                        recorded_on_node,
                    };
                    formatted_again |=
                        check_device(snapshot, volume, device, &check, untagged, report).await?;
                }
                DeviceAction::Mount => {
                    host.mount_ext4(root, &place, device, mountpoint)?;
                    report.push(mount_change(
                        Action::Mount,
                        &text,
                        format!("{} from {device_text}", volume.id),
                    ));
                }
                // A freshly formatted filesystem fills its device already.
                DeviceAction::GrowOnline { .. } if formatted_again => {}
                DeviceAction::GrowOnline { from, to } => {
                    grow_mounted(
                        settings,
                        host,
                        volume,
                        device,
                        Grow::Online { from, to },
                        report,
                    );
                }
            }
        }
    }
    // A grow this process may not make is said in the dry run and the run alike.
    if let Grow::Refused { .. } = grow {
        grow_mounted(settings, host, volume, device, grow, report);
    }
    Ok(false)
}

/// What is done with the device, from what it holds (read before anything is written), and
/// whether a format is recorded on the node (the cloud refused its tag: the record stays, it is
/// the witness). A refusal is an error.
fn decide(
    host: &dyn Host,
    settings: &Settings,
    volume: &EtcdVolume,
    device: &FoundDevice,
) -> Result<(DeviceDecision, bool)> {
    let witnesses = host.witnesses(&device.path, settings.blank_check)?;
    let facts = DeviceFacts {
        cloud: volume.cloud.clone(),
        signature: witnesses.signature,
        backups: witnesses.backups,
        zeros: witnesses.zeros,
        intent: intent::pending(host, &settings.root, &volume.id)?,
    };
    let decision = decide_device(&facts);
    if let DeviceDecision::Refuse(why) = &decision {
        bail!("{why}");
    }
    Ok((
        decision,
        matches!(facts.intent, Some(IntentUuid::Formatted(_))),
    ))
}

/// A check of an existing filesystem before it is mounted.
struct Check {
    /// The filesystem's UUID, when protokube's own interrupted format is to be finished.
    uuid: Option<String>,
    /// The check finishes protokube's own interrupted format (tags the volume).
    finish: bool,
    /// A format recorded on the node (the cloud refused its tag) stays recorded: the witness.
    recorded_on_node: bool,
}

/// Checks the filesystem on `device` (fsck), then finishes protokube's own interrupted format
/// or clears a record left by a run killed after tagging; a failed check of an interrupted
/// format formats it again. True when it was formatted again.
async fn check_device(
    snapshot: &mut Snapshot<'_>,
    volume: &EtcdVolume,
    device: &FoundDevice,
    check: &Check,
    untagged: &mut Vec<Untagged>,
    report: &mut Report,
) -> Result<bool> {
    let host = snapshot.host();
    let device_text = device.path.display().to_string();
    match host.fsck(&device.path) {
        Ok(result) => {
            if let FsckResult::Corrected(code) = result {
                report.warn(format!(
                    "fsck corrected errors on `{device_text}` of volume `{}` (exit {code})",
                    volume.id
                ));
            }
            if check.finish {
                let uuid = check.uuid.clone().unwrap_or_default();
                if tag_formatted(snapshot, volume, &device.host_path, &uuid, untagged).await? {
                    report.push(finish_change(&volume.id, &uuid));
                }
            } else if !check.recorded_on_node {
                intent::clear(host, &snapshot.settings().root, &volume.id)?;
            }
            Ok(false)
        }
        Err(_) if check.finish => {
            let reason = FormatReason::Interrupted;
            format_volume(snapshot, volume, device, reason, untagged, report).await?;
            Ok(true)
        }
        Err(err) => Err(err),
    }
}

/// What growing the filesystem on `device` to its device's size takes (read from the
/// superblock, mounted or not).
fn grow_plan(host: &dyn Host, device: &FoundDevice) -> Result<Grow> {
    let (filesystem, size) = host.filesystem_and_device_size(&device.path)?;
    Ok(plan_grow(filesystem, size, host.may_grow_online()))
}

/// Grows a mounted filesystem its device outgrew, online; a refusal (no `CAP_SYS_RESOURCE`)
/// or a failure of the grow itself is a warning and the filesystem stays mounted as it is.
fn grow_mounted(
    settings: &Settings,
    host: &dyn Host,
    volume: &EtcdVolume,
    device: &FoundDevice,
    grow: Grow,
    report: &mut Report,
) {
    let device_text = device.path.display().to_string();
    match grow {
        Grow::No => {}
        Grow::Refused { from, to } => {
            report.warn(grow_warning(
                &volume.id,
                &device_text,
                from,
                to,
                NO_CAP_SYS_RESOURCE,
            ));
        }
        Grow::Online { from, to } => {
            if !settings.dry_run {
                if let Err(err) = host.grow_ext4(&device.path) {
                    report.warn(grow_warning(
                        &volume.id,
                        &device_text,
                        from,
                        to,
                        &crate::error::one_line(&err),
                    ));
                    return;
                }
            }
            report.push(grow_change(&volume.id, &device_text, from, to));
        }
    }
}

/// Formats the device with a new UUID (recorded first, so an interrupted format is recognised
/// as protokube's own), tags the volume with it, and clears the record.
async fn format_volume(
    snapshot: &mut Snapshot<'_>,
    volume: &EtcdVolume,
    device: &FoundDevice,
    reason: FormatReason,
    untagged: &mut Vec<Untagged>,
    report: &mut Report,
) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if reason == FormatReason::Interrupted {
        report.warn(format!(
            "an earlier run was killed while formatting volume `{}`; formatting it again",
            volume.id
        ));
    }
    let uuid = uuid::Uuid::new_v4().to_string();
    tracing::info!(
        "formatting `{}` of `{}` as ext4 (UUID {uuid})",
        device.path.display(),
        volume.id
    );
    let host = snapshot.host();
    intent::record(host, &settings.root, &volume.id, &device.host_path, &uuid)?;
    host.format_ext4(&device.path, &uuid)?;
    tag_formatted(snapshot, volume, &device.host_path, &uuid, untagged).await?;
    report.push(format_change(
        &volume.id,
        &reason,
        &device.path.display().to_string(),
    ));
    Ok(())
}

/// Tags the volume `k8s.io/protokube/formatted=<uuid>` (from now on it is never formatted
/// again) and clears the intent record; says whether the cloud took the tag. Where the role may
/// not tag volumes (kOps' IRSA control-plane role), the format is recorded on the node instead —
/// that record is then the witness — and the volume is listed in `untagged`.
async fn tag_formatted(
    snapshot: &mut Snapshot<'_>,
    volume: &EtcdVolume,
    device: &std::path::Path,
    uuid: &str,
    untagged: &mut Vec<Untagged>,
) -> Result<bool> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let volumes = snapshot.clients().await?.volumes;
    match volumes.tag_volume(&volume.id, FORMATTED_TAG, uuid).await {
        Ok(()) => {
            intent::clear(snapshot.host(), &settings.root, &volume.id)?;
            Ok(true)
        }
        Err(err) => match AccessDenied::in_chain(&err) {
            Some(denied) => {
                tracing::debug!("tagging `{}`: {err:#}", volume.id);
                intent::record_formatted(
                    snapshot.host(),
                    &settings.root,
                    &volume.id,
                    device,
                    uuid,
                )?;
                untagged.push(Untagged {
                    volume: format!("`{}` (ext4 UUID {uuid})", volume.id),
                    permission: denied.permission.clone(),
                });
                Ok(false)
            }
            None => Err(err),
        },
    }
}

/// A volume formatted in this run whose formatted tag the cloud refused, and the permission it
/// named.
#[derive(Clone, Debug)]
struct Untagged {
    volume: String,
    permission: String,
}

/// One warning for the volumes formatted in this run whose formatted tag the cloud refused.
fn warn_untagged(
    settings: &Settings,
    words: &dyn MetadataWords,
    untagged: &[Untagged],
    report: &mut Report,
) {
    let Some(first) = untagged.first() else {
        return;
    };
    let volumes: Vec<&str> = untagged.iter().map(|u| u.volume.as_str()).collect();
    report.warn(format!(
        "the cloud refused the {} ({permission}) of {} after protokube \
         formatted them: each format is recorded on this node (`{}`) instead, so the volumes \
         mount and are never formatted again, but the cloud's witness is missing; grant \
         `{permission}` on the cluster's volumes (docs/kops.md, IAM, and `iam/`) to have it",
        words.name(FORMATTED_TAG),
        volumes.join(", "),
        settings.root.path(crate::paths::FORMATTING_DIR).display(),
        permission = first.permission,
    ));
}

/// Records `mounted` in the state file, keeping what else it holds (or, with dry run, reports
/// whether it would change); returns the mounted volumes, sorted. An empty state is the same as
/// none: a run that mounts nothing creates no file. A state file that cannot be read is
/// rewritten from what is mounted.
fn record_state(
    snapshot: &mut Snapshot<'_>,
    mounted: Vec<MountedVolume>,
    report: &mut Report,
) -> Result<Vec<MountedVolume>> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let path = settings.root.own(STATE_FILE)?;
    let state = snapshot.state()?.clone().with_volumes(mounted);
    let current = snapshot.host().fact(&path)?;
    let change = state_file_change(&state, &path, &current)?;
    if !settings.dry_run {
        snapshot
            .host()
            .apply(&change)
            .context("saving the protokube state")?;
    }
    report.push(change.change());
    let volumes = state.volumes.clone();
    if !settings.dry_run {
        snapshot.record_state(state);
    }
    Ok(volumes)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::host::memory::Content;
    use crate::report::ChangeKind;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{Bench, Vol, INSTANCE, OTHER_INSTANCE, SIZE};

    fn ext4(uuid: &str) -> Content {
        Content::Ext4 {
            uuid: uuid.to_owned(),
            size: SIZE,
            broken: false,
        }
    }

    /// Runs the mount step alone on the bench.
    fn mount(bench: &Bench) -> (Report, Result<Mounted>) {
        let mut snapshot = bench.snapshot(VolumeScope::Zone);
        let mut report = bench.report();
        let result = Bench::block_on(run(&mut snapshot, &mut report));
        (report, result)
    }

    fn actions(report: &Report) -> Vec<(ChangeKind, Action)> {
        report
            .changes
            .iter()
            .filter(|c| c.action != Action::Unchanged)
            .map(|c| (c.kind, c.action))
            .collect()
    }

    #[test]
    fn a_blank_device_is_formatted_recorded_first_tagged_then_mounted() {
        let bench =
            Bench::master(&[Vol::new("vol-1", "main", "a").attached_to(INSTANCE, "/dev/vdb")]);
        bench.device("/dev/vdb", 1, Content::Zeros);
        let (report, result) = mount(&bench);
        assert!(result.unwrap().formatted);
        assert_eq!(
            bench.take_effects(),
            [
                "write /var/lib/protokube/formatting/vol-1",
                "format /dev/vdb",
                "write /var/lib/protokube/formatting/vol-1",
                "mount /dev/vdb /mnt/master-vol-1",
                "write /var/lib/protokube/state.json",
            ]
        );
        // The volume carries the UUID the device was given; the record is gone.
        let node = bench.host.node();
        let Content::Ext4 { uuid, .. } = &node.devices[&bench.path("/dev/vdb")].content else {
            panic!("not formatted");
        };
        let tag = &bench.cloud.world().volumes[0].tags[FORMATTED_TAG];
        assert_eq!(tag, uuid);
        assert!(!node
            .files
            .contains_key(&bench.path("/var/lib/protokube/formatting/vol-1")));
        assert_eq!(
            actions(&report),
            [
                (ChangeKind::Filesystem, Action::Format),
                (ChangeKind::Mount, Action::Mount),
                (ChangeKind::File, Action::Create),
            ]
        );
        // The next run finds it mounted: nothing to do.
        let (again, result) = mount(&bench);
        assert!(!result.unwrap().formatted);
        assert!(actions(&again).is_empty(), "{:?}", again.changes);
        assert!(bench.take_effects().is_empty());
    }

    #[test]
    fn a_tagged_ext4_is_checked_and_mounted_never_formatted() {
        let bench = Bench::master(&[Vol::new("vol-1", "main", "a")
            .attached_to(INSTANCE, "/dev/vdb")
            .formatted("u-1")]);
        bench.device("/dev/vdb", 1, ext4("u-1"));
        let (_, result) = mount(&bench);
        assert!(!result.unwrap().formatted);
        assert_eq!(
            bench.take_effects(),
            [
                "fsck /dev/vdb",
                "mount /dev/vdb /mnt/master-vol-1",
                "write /var/lib/protokube/state.json",
            ]
        );
        assert!(bench.cloud.mutations().is_empty());
    }

    #[test]
    fn an_enlarged_device_is_grown_online_after_mounting_and_a_failed_grow_keeps_the_mount() {
        for fails in [None, Some("resize2fs: no space left for the journal")] {
            let bench = Bench::master(&[Vol::new("vol-1", "main", "a")
                .attached_to(INSTANCE, "/dev/vdb")
                .formatted("u-1")]);
            // The filesystem fills a quarter of its (enlarged) device.
            bench.device(
                "/dev/vdb",
                1,
                Content::Ext4 {
                    uuid: "u-1".to_owned(),
                    size: SIZE / 4,
                    broken: false,
                },
            );
            bench.host.change(|node| {
                node.grow_online = true;
                node.grow_fails = fails.map(str::to_owned);
            });
            let (report, result) = mount(&bench);
            result.unwrap();
            let grown = ["fsck /dev/vdb", "mount /dev/vdb /mnt/master-vol-1"]
                .into_iter()
                .chain(fails.is_none().then_some("grow online /dev/vdb"))
                .chain(["write /var/lib/protokube/state.json"])
                .collect::<Vec<_>>();
            assert_eq!(bench.take_effects(), grown, "never grown before mounting");
            let resized = report
                .changes
                .iter()
                .any(|c| c.action == Action::Resize && c.target == "vol-1");
            assert_eq!(resized, fails.is_none(), "{:?}", report.changes);
            if let Some(why) = fails {
                assert!(
                    report
                        .warnings
                        .iter()
                        .any(|w| w.contains(why) && w.contains("vol-1")),
                    "{:?}",
                    report.warnings
                );
                assert!(bench
                    .host
                    .node()
                    .mounts
                    .contains_key(&bench.path("/mnt/master-vol-1")));
            }
        }
    }

    #[test]
    fn a_device_not_proven_blank_is_refused_and_left_untouched() {
        for content in [Content::Data(4096), Content::Other("xfs".to_owned())] {
            // Untagged data, another filesystem: no witness proves them blank.
            let bench =
                Bench::master(&[Vol::new("vol-1", "main", "a").attached_to(INSTANCE, "/dev/vdb")]);
            bench.device("/dev/vdb", 1, content.clone());
            let (_, result) = mount(&bench);
            let err = result.unwrap_err();
            assert!(format!("{err:#}").contains("vol-1"), "{err:#}");
            let effects = bench.take_effects();
            assert!(
                !effects
                    .iter()
                    .any(|e| e.starts_with("format") || e.starts_with("mount")),
                "{content:?}: {effects:?}"
            );
            assert_eq!(
                bench.host.node().devices[&bench.path("/dev/vdb")].content,
                content
            );
            assert!(bench.cloud.mutations().is_empty());
        }
    }

    #[test]
    fn a_device_mounted_elsewhere_is_refused() {
        let bench = Bench::master(&[Vol::new("vol-1", "main", "a")
            .attached_to(INSTANCE, "/dev/vdb")
            .formatted("u-1")]);
        bench.device("/dev/vdb", 1, ext4("u-1"));
        let elsewhere = bench.path("/srv/data");
        bench.host.change(|node| {
            node.mounts.insert(elsewhere, (202, 1));
        });
        let (_, result) = mount(&bench);
        assert!(result.is_err());
        assert!(bench.take_effects().is_empty());
    }

    /// A volume of a generated node: its key, where it is attached, what its device holds.
    #[derive(Clone, Debug)]
    enum Gen {
        /// Free and blank (kOps creates them so).
        Free,
        /// Attached here; its device holds this, its tag names `u-<n>` when `tagged`.
        Here { content: Content, tagged: bool },
        /// Attached to another master.
        Elsewhere,
    }

    fn generated() -> impl Strategy<Value = Vec<(bool, Gen)>> {
        let content = prop_oneof![
            Just(Content::Zeros),
            Just(Content::Data(512)),
            Just(Content::Other("xfs".to_owned())),
            // A dry run does not run fsck: a filesystem it fails is the run's own discovery.
            any::<bool>().prop_map(|small| Content::Ext4 {
                uuid: "u-0".to_owned(),
                size: if small { SIZE / 2 } else { SIZE },
                broken: false,
            }),
        ];
        let volume = prop_oneof![
            Just(Gen::Free),
            (content, any::<bool>()).prop_map(|(content, tagged)| Gen::Here { content, tagged }),
            Just(Gen::Elsewhere),
        ];
        prop::collection::vec((any::<bool>(), volume), 0..4)
    }

    /// The bench of a generated node: volume `n` holds `main` or `events`; the devices of
    /// volumes attached here are `/dev/vd{b,c,…}`, and the free names after them hold blank
    /// devices for what the claim attaches.
    fn bench_of(volumes: &[(bool, Gen)], dry_run: bool) -> Bench {
        let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
        let mut next = 0;
        let mut vols = Vec::new();
        let mut devices = Vec::new();
        for (n, (main, generated)) in volumes.iter().enumerate() {
            let key = if *main { "main" } else { "events" };
            let vol = Vol::new(&format!("vol-{n}"), key, &format!("m{n}"));
            vols.push(match generated {
                Gen::Free => vol,
                Gen::Elsewhere => vol.attached_to(OTHER_INSTANCE, "/dev/vdb"),
                Gen::Here { content, tagged } => {
                    let device = format!("/dev/vd{}", names[next]);
                    next += 1;
                    devices.push((device.clone(), content.clone()));
                    let vol = vol.attached_to(INSTANCE, &device);
                    if *tagged {
                        vol.formatted("u-0")
                    } else {
                        vol
                    }
                }
            });
        }
        let mut bench = Bench::master(&vols);
        if dry_run {
            bench.dry_run();
        }
        for (minor, (device, content)) in devices.into_iter().enumerate() {
            bench.device(&device, minor as u32, content);
        }
        for (minor, name) in names.iter().enumerate().skip(next) {
            bench.device(
                &format!("/dev/vd{name}"),
                100 + minor as u32,
                Content::Zeros,
            );
        }
        bench
    }

    /// The claim and mount steps as `sync` runs them: their report and whether they failed.
    fn claim_and_mount(bench: &Bench) -> (Vec<(ChangeKind, Action, String)>, bool) {
        let mut snapshot = bench.snapshot(VolumeScope::Zone);
        let mut report = bench.report();
        let result = Bench::block_on(async {
            let claimed = crate::steps::claim::run(&mut snapshot, &mut report).await?;
            run(&mut snapshot, &mut report).await?;
            claimed.finish()
        });
        let changes = report
            .changes
            .iter()
            .map(|c| (c.kind, c.action, c.target.clone()))
            .collect();
        (changes, result.is_ok())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// What a dry run reports is what the run then does, change for change, on any node
        /// whose devices a dry run can see (a volume it has not attached is predicted from the
        /// cloud's witness, so the generated free volumes are blank, as kOps creates them);
        /// and the dry run changes nothing.
        #[test]
        fn a_dry_run_reports_what_the_run_does(volumes in generated()) {
            let dry = bench_of(&volumes, true);
            let real = bench_of(&volumes, false);
            let root = |bench: &Bench, changes: Vec<(ChangeKind, Action, String)>| {
                let root = bench.settings.root.dir().display().to_string();
                changes
                    .into_iter()
                    .map(|(kind, action, target)| (kind, action, target.replace(&root, "")))
                    .collect::<Vec<_>>()
            };
            let world_before = dry.cloud.world().volumes;
            let (planned, planned_ok) = claim_and_mount(&dry);
            let (done, done_ok) = claim_and_mount(&real);
            prop_assert_eq!(root(&dry, planned), root(&real, done));
            prop_assert_eq!(planned_ok, done_ok);
            prop_assert!(dry.take_effects().is_empty());
            prop_assert_eq!(dry.cloud.world().volumes, world_before);
        }
    }
}
