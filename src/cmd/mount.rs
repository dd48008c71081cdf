//! `mount`: claim this node's etcd volumes (attach), wait for them, find the block device, format
//! only a device proven blank, `fsck` an existing filesystem, mount, and record it in the state
//! file.

use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};

use crate::blockdev::{self, FoundDevice, FsckResult, Probe};
use crate::cloud::{AttachOutcome, VolumeApi};
use crate::cmd::discover_volumes::discover;
use crate::context::Context;
use crate::fsutil::{HostRoot, WriteOutcome};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::state::{FormatIntent, MountedVolume, State, STATE_HOST_PATH};
use crate::volumes::{free_device_name, plan_claims, ClaimPlan, EtcdVolume};
use crate::wait::{poll_until, Backoff, Progress};

/// Claim, attach and mount this node's etcd volumes (control-plane nodes only).
///
/// Volumes are claimed in kOps' order (main, events, others), at most one per etcd cluster per
/// node; AttachVolume is the lock between nodes. A device is formatted (ext4) only when blkid
/// finds no signature and the data read is all zeros; anything else that is not ext4 is refused.
/// Mounts at <root>/mnt/master-<volume id> and records them in
/// <root>/var/lib/protokube/state.json.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Args {}

/// How a mount run behaves, independent of where its facts come from.
#[derive(Clone, Debug)]
pub struct MountSettings {
    pub root: HostRoot,
    pub instance_id: String,
    pub timeout: Duration,
    pub dry_run: bool,
    pub progress: Progress,
    /// Backoff while waiting for an attachment.
    pub attach_backoff: Backoff,
    /// Backoff while waiting for a block device to appear.
    pub device_backoff: Backoff,
}

impl MountSettings {
    pub fn new(root: HostRoot, instance_id: String, timeout: Duration, dry_run: bool) -> Self {
        Self {
            root,
            instance_id,
            timeout,
            dry_run,
            progress: Progress::Log,
            // Capped at 1 s so a run ends at most about a second after the cloud attaches
            // (DESIGN §8: cold sync ≤ 1 s beyond the cloud's own attach time).
            attach_backoff: Backoff::new(Duration::from_millis(250), Duration::from_secs(1)),
            device_backoff: Backoff::new(Duration::from_millis(50), Duration::from_millis(500)),
        }
    }
}

pub async fn run(ctx: &Context, _args: &Args) -> Result<Report> {
    let mut report = Report::new("mount", ctx.global.dry_run);
    if !ctx.global.master {
        report.warn(
            "not a control-plane node (--master is not set): no etcd volumes to mount".to_owned(),
        );
        return Ok(report);
    }
    let _lock = ctx.lock()?;
    let ec2 = ctx.ec2().await?;
    let cluster = ctx.cluster_name(ec2).await?;
    let identity = ctx.identity().await?;
    let discovery = discover(ec2, &cluster, Some(&identity.availability_zone)).await?;
    for skipped in &discovery.skipped {
        report.warn(skipped.to_string());
    }
    mount_here(ctx, ec2, &discovery.volumes, &mut report).await?;
    Ok(report)
}

/// Mounts this node's etcd volumes among `volumes` (the cluster's, in any zone: those in other
/// zones are ignored). The caller holds the lock.
pub async fn mount_here(
    ctx: &Context,
    cloud: &dyn VolumeApi,
    volumes: &[EtcdVolume],
    report: &mut Report,
) -> Result<State> {
    let identity = ctx.identity().await?;
    let here: Vec<EtcdVolume> = volumes
        .iter()
        .filter(|v| v.zone == identity.availability_zone)
        .cloned()
        .collect();
    let mut settings = MountSettings::new(
        ctx.root.clone(),
        identity.instance_id.clone(),
        ctx.global.timeout,
        ctx.global.dry_run,
    );
    settings.progress = Progress::detect(ctx.global.no_progress);
    mount_volumes(cloud, &settings, &here, report).await
}

/// A volume this run mounts: which device name it is attached under.
#[derive(Clone, Debug)]
struct Target {
    volume: EtcdVolume,
    device_name: String,
    /// Attached by this run (or, with dry run, would be): nothing on the host to inspect yet.
    newly_claimed: bool,
}

/// Claims, attaches and mounts `volumes` (this cluster's etcd volumes in this zone); records the
/// result in the state file. Returns the state written.
pub async fn mount_volumes(
    cloud: &dyn VolumeApi,
    settings: &MountSettings,
    volumes: &[EtcdVolume],
    report: &mut Report,
) -> Result<State> {
    let plan = plan_claims(volumes, &settings.instance_id);
    let mut targets: Vec<Target> = plan
        .kept
        .iter()
        .map(|v| Target {
            device_name: v
                .attachment
                .as_ref()
                .map(|a| a.device.clone())
                .unwrap_or_default(),
            volume: v.clone(),
            newly_claimed: false,
        })
        .collect();
    targets.extend(claim(cloud, settings, &plan, report).await?);
    if targets.is_empty() {
        tracing::info!("no etcd volume for this node: none attached here and none free to claim");
    }

    if !settings.dry_run {
        let waiting: Vec<String> = targets
            .iter()
            .filter(|t| {
                t.newly_claimed
                    || t.volume
                        .attachment
                        .as_ref()
                        .is_some_and(|a| a.state != "attached")
            })
            .map(|t| t.volume.id.clone())
            .collect();
        if !waiting.is_empty() {
            wait_attached(cloud, settings, &waiting).await?;
        }
    }

    // One volume's failure does not stop the others: mount what is safe, record it, then fail.
    let mut mounted = Vec::new();
    let mut errors: Vec<anyhow::Error> = Vec::new();
    for target in &targets {
        let result = if settings.dry_run && target.newly_claimed {
            Ok(plan_after_attach(settings, target, report))
        } else {
            mount_target(settings, target, report).await
        };
        match result {
            Ok(volume) => mounted.push(volume),
            Err(err) => errors.push(err),
        }
    }

    let state = State::new(mounted);
    record_state(settings, &state, report)?;
    let mut errors = errors.into_iter();
    match errors.next() {
        Some(first) => {
            // The first error becomes the run's error line; the others are logged.
            for other in errors {
                tracing::error!("{other:#}");
            }
            Err(first)
        }
        None => Ok(state),
    }
}

/// Attaches the candidates this node may take, in claim order; returns the claimed ones.
async fn claim(
    cloud: &dyn VolumeApi,
    settings: &MountSettings,
    plan: &ClaimPlan,
    report: &mut Report,
) -> Result<Vec<Target>> {
    let mut held = plan.held_keys.clone();
    if !plan
        .candidates
        .iter()
        .any(|v| ClaimPlan::still_wanted(v, &held))
    {
        return Ok(Vec::new());
    }
    let mut used: Vec<String> = cloud.instance_device_names(&settings.instance_id).await?;
    used.extend(
        plan.kept
            .iter()
            .filter_map(|v| v.attachment.as_ref().map(|a| a.device.clone())),
    );
    let mut claimed = Vec::new();
    for volume in &plan.candidates {
        if !ClaimPlan::still_wanted(volume, &held) {
            continue;
        }
        loop {
            let device = free_device_name(used.iter().map(String::as_str)).ok_or_else(|| {
                anyhow!(
                    "no free device name for volume `{}`: /dev/xvdu to /dev/xvdz are all in use \
                     on `{}`",
                    volume.id,
                    settings.instance_id
                )
            })?;
            let outcome = cloud
                .attach_volume(&volume.id, &settings.instance_id, device, settings.dry_run)
                .await?;
            match outcome {
                AttachOutcome::Requested | AttachOutcome::WouldSucceed => {
                    let keys: Vec<String> = volume.etcd.iter().map(|m| m.cluster.clone()).collect();
                    report.push(Change {
                        kind: ChangeKind::Volume,
                        target: volume.id.clone(),
                        action: Action::Attach,
                        detail: format!(
                            "as {device} on {} (etcd {})",
                            settings.instance_id,
                            describe_memberships(volume)
                        ),
                    });
                    tracing::info!("attaching `{}` as `{device}`", volume.id);
                    held.extend(keys);
                    used.push(device.to_owned());
                    claimed.push(Target {
                        volume: volume.clone(),
                        device_name: device.to_owned(),
                        newly_claimed: true,
                    });
                    break;
                }
                AttachOutcome::VolumeTaken(why) => {
                    tracing::info!(
                        "volume `{}` was taken by another node ({why}); trying the next one",
                        volume.id
                    );
                    break;
                }
                AttachOutcome::DeviceNameTaken(why) => {
                    tracing::info!("device name `{device}` is in use ({why}); trying the next one");
                    used.push(device.to_owned());
                }
            }
        }
    }
    Ok(claimed)
}

fn describe_memberships(volume: &EtcdVolume) -> String {
    volume
        .etcd
        .iter()
        .map(|m| format!("{}/{}", m.cluster, m.member))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until every volume in `ids` shows as `attached` to this instance.
async fn wait_attached(
    cloud: &dyn VolumeApi,
    settings: &MountSettings,
    ids: &[String],
) -> Result<()> {
    let what = format!("`{}` to be attached", ids.join("`, `"));
    poll_until(
        &what,
        settings.timeout,
        settings.progress,
        settings.attach_backoff.clone(),
        || async {
            let volumes = cloud.volumes_by_id(ids).await?;
            let mut all = true;
            for id in ids {
                let volume = volumes
                    .iter()
                    .find(|v| &v.id == id)
                    .ok_or_else(|| anyhow!("volume `{id}` disappeared while attaching"))?;
                if let Some(other) = volume
                    .attachments
                    .iter()
                    .find(|a| a.instance_id != settings.instance_id)
                {
                    bail!(
                        "volume `{id}` is attached to `{}`, not to this instance: another node \
                         took it",
                        other.instance_id
                    );
                }
                all &= volume
                    .attachments
                    .iter()
                    .any(|a| a.instance_id == settings.instance_id && a.state == "attached");
            }
            Ok(all.then_some(()))
        },
    )
    .await
}

/// With dry run, a volume that would be attached has no device yet: report the rest of the plan.
fn plan_after_attach(
    settings: &MountSettings,
    target: &Target,
    report: &mut Report,
) -> MountedVolume {
    let mountpoint = settings.root.volume_mountpoint(&target.volume.id);
    report.push(Change {
        kind: ChangeKind::Mount,
        target: mountpoint.display().to_string(),
        action: Action::Mount,
        detail: format!(
            "volume {} once attached as {} (formatted first only if blank)",
            target.volume.id, target.device_name
        ),
    });
    MountedVolume {
        volume_id: target.volume.id.clone(),
        device: target.device_name.clone().into(),
        mountpoint: HostRoot::volume_mountpoint_host_path(&target.volume.id),
        etcd: target.volume.etcd.clone(),
    }
}

/// Finds the device of an attached volume, then formats (only if blank) and mounts it.
async fn mount_target(
    settings: &MountSettings,
    target: &Target,
    report: &mut Report,
) -> Result<MountedVolume> {
    let volume = &target.volume;
    let device = if settings.dry_run {
        blockdev::find_device(&settings.root, &volume.id, &target.device_name).ok_or_else(|| {
            anyhow!(
                "the block device of volume `{}` (attached as `{}`) has not appeared under `{}`",
                volume.id,
                target.device_name,
                settings.root.path("/dev").display()
            )
        })?
    } else {
        wait_device(settings, target).await?
    };
    blockdev::check_nvme_serial(&settings.root, &device, &volume.id)?;
    mount_device(settings, volume, &device, report)
        .with_context(|| format!("volume `{}` on `{}`", volume.id, device.path.display()))?;
    Ok(MountedVolume {
        volume_id: volume.id.clone(),
        device: device.host_path.clone(),
        mountpoint: HostRoot::volume_mountpoint_host_path(&volume.id),
        etcd: volume.etcd.clone(),
    })
}

async fn wait_device(settings: &MountSettings, target: &Target) -> Result<FoundDevice> {
    let what = format!(
        "the block device of `{}` (attached as `{}`) to appear under `{}`",
        target.volume.id,
        target.device_name,
        settings.root.path("/dev").display()
    );
    poll_until(
        &what,
        settings.timeout,
        settings.progress,
        settings.device_backoff.clone(),
        || async {
            Ok(blockdev::find_device(
                &settings.root,
                &target.volume.id,
                &target.device_name,
            ))
        },
    )
    .await
}

/// The safety core: mounted already → unchanged; blank → format; ext4 → fsck; anything else →
/// refuse. Then mount.
fn mount_device(
    settings: &MountSettings,
    volume: &EtcdVolume,
    device: &FoundDevice,
    report: &mut Report,
) -> Result<()> {
    let mountpoint = settings.root.volume_mountpoint(&volume.id);
    let devno = blockdev::device_number(&device.path)?;
    let table = blockdev::mount_table()?;
    if let Some(entry) = blockdev::mounted_at(&table, &mountpoint) {
        if entry.devno != devno {
            bail!(
                "`{}` is already mounted from `{}` (device {}:{}), not from this volume's device; \
                 unmount it and run again",
                mountpoint.display(),
                entry.source,
                entry.devno.0,
                entry.devno.1
            );
        }
        report.push(Change {
            kind: ChangeKind::Mount,
            target: mountpoint.display().to_string(),
            action: Action::Unchanged,
            detail: format!("{} already mounted", volume.id),
        });
        return Ok(());
    }
    if let Some(elsewhere) = table.iter().find(|e| e.devno == devno) {
        bail!(
            "the device is already mounted at `{}`; unmount it so protokube can mount it at `{}`",
            elsewhere.mountpoint,
            mountpoint.display()
        );
    }
    let root = &settings.root;
    let interrupted = FormatIntent::pending(root, &volume.id);
    let format = |report: &mut Report, why: &str| -> Result<()> {
        report.push(Change {
            kind: ChangeKind::Filesystem,
            target: device.path.display().to_string(),
            action: Action::Format,
            detail: format!("ext4 on {why} volume {}", volume.id),
        });
        if !settings.dry_run {
            tracing::info!("formatting {why} `{}` as ext4", device.path.display());
            FormatIntent::record(root, &volume.id, &device.host_path)?;
            blockdev::format_ext4(&device.path)?;
            FormatIntent::clear(root, &volume.id)?;
        }
        Ok(())
    };
    match blockdev::probe(&device.path)? {
        Probe::Blank => format(report, "blank")?,
        Probe::Ext4 if settings.dry_run => {}
        Probe::Ext4 => match blockdev::fsck(&device.path) {
            Ok(FsckResult::Clean) => FormatIntent::clear(root, &volume.id)?,
            Ok(FsckResult::Corrected(code)) => {
                report.warn(format!(
                    "fsck corrected errors on `{}` of volume `{}` (exit {code})",
                    device.path.display(),
                    volume.id
                ));
                FormatIntent::clear(root, &volume.id)?;
            }
            Err(_) if interrupted => {
                report.warn(interrupted_warning(volume));
                format(report, "half-formatted")?;
            }
            Err(err) => return Err(err),
        },
        Probe::Unrecognised(_) if interrupted => {
            report.warn(interrupted_warning(volume));
            format(report, "half-formatted")?;
        }
        Probe::Unrecognised(found) | Probe::Refuse(found) => bail!(
            "refusing to format or mount: the device holds {found}; protokube only mounts ext4 and \
             only formats blank devices, check the volume by hand"
        ),
    }
    if !settings.dry_run {
        blockdev::mount_ext4(&device.path, &mountpoint)?;
    }
    report.push(Change {
        kind: ChangeKind::Mount,
        target: mountpoint.display().to_string(),
        action: Action::Mount,
        detail: format!("{} from {}", volume.id, device.path.display()),
    });
    Ok(())
}

fn interrupted_warning(volume: &EtcdVolume) -> String {
    format!(
        "an earlier run was killed while formatting volume `{}`; formatting it again",
        volume.id
    )
}

/// Writes the state file (or, with dry run, reports whether it would change).
fn record_state(settings: &MountSettings, state: &State, report: &mut Report) -> Result<()> {
    let path = settings.root.path(STATE_HOST_PATH);
    // No state file and nothing mounted: an empty state is the same as none, so a run that
    // mounts nothing (or refuses everything) creates no file.
    let outcome = if state.volumes.is_empty() && !path.exists() {
        WriteOutcome::Unchanged
    } else if settings.dry_run {
        match fs_err::read(&path) {
            Ok(bytes) if bytes == state.to_bytes()? => WriteOutcome::Unchanged,
            Ok(_) => WriteOutcome::Updated,
            Err(_) => WriteOutcome::Created,
        }
    } else {
        state.save(&settings.root)?
    };
    report.push(Change {
        kind: ChangeKind::File,
        target: path.display().to_string(),
        action: match outcome {
            WriteOutcome::Created => Action::Create,
            WriteOutcome::Updated => Action::Update,
            WriteOutcome::Unchanged => Action::Unchanged,
        },
        detail: format!("{} mounted volume(s)", state.volumes.len()),
    });
    Ok(())
}
