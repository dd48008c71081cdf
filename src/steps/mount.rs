//! The mount step: for each etcd volume attached here, find its block device, decide from the
//! mount table and a probe of the device (plan), then format only a device proven blank, check
//! an existing ext4, mount, and record the mounts in the state file.

use anyhow::{anyhow, bail, Context as _, Result};

use crate::apply::attach::wait_device;
use crate::apply::blockdev::{self, FoundDevice, FsckResult};
use crate::apply::files;
use crate::apply::intent::FormatIntent;
use crate::paths::{volume_mountpoint, STATE_FILE};
use crate::plan::mounts::{
    decide_from_mounts, decide_from_probe, decision_changes, format_change, mount_state,
    state_file_change, FormatReason, MountDecision,
};
use crate::plan::volumes::EtcdVolume;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::state::{MountedVolume, State};

pub async fn run(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    report: &mut Report,
) -> Result<()> {
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
    // One volume's failure does not stop the others: mount what is safe, record it, then fail.
    let mut mounted = Vec::new();
    let mut errors = Vec::new();
    for volume in &targets {
        match mount_volume(settings, snapshot, volume, report).await {
            Ok((record, mounted_now)) => {
                if settings.dry_run && !mounted_now {
                    snapshot.mark_planned(&volume.id);
                }
                mounted.push(record);
            }
            Err(err) => errors.push(err),
        }
    }
    let state = State::new(mounted);
    record_state(settings, &state, report)?;
    snapshot.record_mounted(state.volumes);
    super::first_error(errors)
}

/// Mounts one attached volume (or, with dry run, reports what that would do); says whether it
/// is mounted now.
async fn mount_volume(
    settings: &Settings,
    snapshot: &Snapshot<'_>,
    volume: &EtcdVolume,
    report: &mut Report,
) -> Result<(MountedVolume, bool)> {
    let device_name = volume
        .attachment
        .as_ref()
        .map(|a| a.device.clone())
        .unwrap_or_default();
    let mountpoint = settings.root.volume_mountpoint(&volume.id);
    let mountpoint_text = mountpoint.display().to_string();
    let record = |device: &str| MountedVolume {
        volume_id: volume.id.clone(),
        device: device.into(),
        mountpoint: volume_mountpoint(&volume.id),
        etcd: volume.etcd.clone(),
    };
    if snapshot.is_planned(&volume.id) {
        // Attached only in this dry run's plan: no device to look at yet.
        let decision = MountDecision::Mount {
            format: Some(FormatReason::IfBlank),
        };
        for change in decision_changes(&decision, &volume.id, &mountpoint_text, &device_name) {
            report.push(change);
        }
        return Ok((record(&device_name), false));
    }
    let device = if settings.dry_run {
        blockdev::find_device(&settings.root, &volume.id, &device_name).ok_or_else(|| {
            anyhow!(
                "the block device of volume `{}` (attached as `{device_name}`) has not appeared \
                 under `{}`",
                volume.id,
                settings.root.path("/dev").display()
            )
        })?
    } else {
        wait_device(&settings.root, &volume.id, &device_name, &settings.waits).await?
    };
    let decision = mount_device(settings, volume, &device, report)
        .with_context(|| format!("volume `{}` on `{}`", volume.id, device.path.display()))?;
    let mounted_now = !settings.dry_run || decision == MountDecision::Unchanged;
    Ok((record(&device.host_path.display().to_string()), mounted_now))
}

/// The safety core: decide from the mount table, else from a probe of the device; then format
/// (only what is proven blank, or protokube's own interrupted format), check and mount.
fn mount_device(
    settings: &Settings,
    volume: &EtcdVolume,
    device: &FoundDevice,
    report: &mut Report,
) -> Result<MountDecision> {
    blockdev::check_nvme_serial(&settings.root, device, &volume.id)?;
    let root = &settings.root;
    let mountpoint = root.volume_mountpoint(&volume.id);
    let mountpoint_text = mountpoint.display().to_string();
    let device_text = device.path.display().to_string();
    let devno = blockdev::device_number(&device.path)?;
    let state = mount_state(&blockdev::mount_table()?, &mountpoint, devno);
    let interrupted = FormatIntent::pending(root, &volume.id);
    let decision = match decide_from_mounts(&state, &mountpoint_text) {
        Some(decision) => decision,
        None => decide_from_probe(&blockdev::probe(&device.path)?, interrupted),
    };
    let format = match &decision {
        MountDecision::Refuse(why) => bail!("{why}"),
        MountDecision::Unchanged => None,
        MountDecision::Mount { format } => *format,
    };
    if settings.dry_run || decision == MountDecision::Unchanged {
        for change in decision_changes(&decision, &volume.id, &mountpoint_text, &device_text) {
            report.push(change);
        }
        return Ok(decision);
    }
    let format_now = |reason: FormatReason, report: &mut Report| -> Result<()> {
        if reason == FormatReason::Interrupted {
            report.warn(format!(
                "an earlier run was killed while formatting volume `{}`; formatting it again",
                volume.id
            ));
        }
        tracing::info!("formatting `{device_text}` of `{}` as ext4", volume.id);
        FormatIntent::record(root, &volume.id, &device.host_path)?;
        blockdev::format_ext4(&device.path)?;
        FormatIntent::clear(root, &volume.id)?;
        report.push(format_change(&volume.id, reason, &device_text));
        Ok(())
    };
    match format {
        Some(reason) => format_now(reason, report)?,
        None => match blockdev::fsck(&device.path) {
            Ok(FsckResult::Clean) => FormatIntent::clear(root, &volume.id)?,
            Ok(FsckResult::Corrected(code)) => {
                report.warn(format!(
                    "fsck corrected errors on `{device_text}` of volume `{}` (exit {code})",
                    volume.id
                ));
                FormatIntent::clear(root, &volume.id)?;
            }
            Err(_) if interrupted => format_now(FormatReason::Interrupted, report)?,
            Err(err) => return Err(err),
        },
    }
    blockdev::mount_ext4(&device.path, &mountpoint)?;
    report.push(Change {
        kind: ChangeKind::Mount,
        target: mountpoint_text,
        action: Action::Mount,
        detail: format!("{} from {device_text}", volume.id),
    });
    Ok(decision)
}

/// Writes the state file (or, with dry run, reports whether it would change). An empty state is
/// the same as none: a run that mounts nothing creates no file.
fn record_state(settings: &Settings, state: &State, report: &mut Report) -> Result<()> {
    let path = settings.root.path(STATE_FILE);
    let current = files::read_fact(&path)?;
    let change = state_file_change(state, &path, &current)?;
    if !settings.dry_run {
        files::apply(&change).context("saving the protokube state")?;
    }
    report.push(change.change());
    Ok(())
}
