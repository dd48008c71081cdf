//! The claim step: keep the etcd volumes attached here (one per etcd cluster key), detach a
//! second volume of a key and an attachment stuck in `attaching`, attach free ones in kOps'
//! claim order (the attach is the lock between nodes), and wait until they are attached.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use anyhow::Result;

use crate::apply::attach::{attach, wait_attached, Attached};
use crate::cloud::AccessDenied;
use crate::cloud::AttachmentState;
use crate::error::NotReady;
use crate::paths::{volume_mountpoint, RETIRED_FILE};
use crate::plan::files::FileFact;
use crate::plan::mounts::mounted_at;
use crate::plan::volumes::{plan_claims, ClaimPlan, EtcdVolume};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::snapshot::Snapshot;
use crate::steps::discover::warn_skipped;

/// Why an attachment stuck in `attaching` is detached (see
/// [`crate::plan::volumes::STUCK_ATTACHING`]).
const STUCK_WHY: &str = "stuck in `attaching` for over 90 s";

/// What the claim step leaves for the end of the run.
#[derive(Debug, Default)]
#[must_use = "a detach the cloud refused makes the run end not ready: call `finish`"]
pub(crate) struct Claimed {
    /// A volume was attached to or detached from this instance (or would be, in a dry run).
    pub(crate) volumes_changed: bool,
    /// Detaches the cloud refused (kOps' IRSA control-plane role may not detach): the rest of
    /// the run goes on — what is safe is mounted — and it ends "not ready".
    refused_detaches: Vec<String>,
    /// The permission the cloud named when it refused.
    refused_permission: Option<String>,
}

impl Claimed {
    /// The run's end: exit 75 naming the volumes whose detach was refused, if any.
    pub(crate) fn finish(self) -> Result<()> {
        if self.refused_detaches.is_empty() {
            return Ok(());
        }
        Err(NotReady(format!(
            "the cloud refused to detach `{}` from this node ({}); the rest was done, and the \
             volume(s) stay attached here until the node's role may detach them (docs/kops.md, \
             IAM section, `iam/`) or they are detached by hand",
            self.refused_detaches.join("`, `"),
            self.refused_permission
                .as_deref()
                .unwrap_or("permission denied")
        ))
        .into())
    }
}

/// The claim and mount steps where protokube owns etcd (nothing where etcd-manager does).
pub(crate) async fn claim_and_mount(
    snapshot: &mut Snapshot<'_>,
    owns_etcd: bool,
    report: &mut Report,
) -> Result<(Claimed, super::mount::Mounted)> {
    if !owns_etcd {
        return Ok(Default::default());
    }
    let claimed = run(snapshot, report).await?;
    let mounted = super::mount::run(snapshot, report).await?;
    Ok((claimed, mounted))
}

/// Claims this node's etcd volumes: keeps those attached here, releases a second volume of a
/// key and a stuck attachment, attaches free ones in kOps' order and waits for them. Not ready
/// (exit 75) where an attachment stayed stuck: it was detached, its device name remembered.
pub(crate) async fn run(snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<Claimed> {
    let mut claimed = Claimed::default();
    let instance_id = snapshot.identity().await?.instance_id.clone();
    if is_retired(snapshot, &instance_id, report)? {
        return Ok(claimed);
    }
    warn_skipped(snapshot, report).await?;
    let here = snapshot.volumes_here().await?;
    let mounted = mounted_here(snapshot, &here)?;
    // This run's waits are measured on the monotonic clock: a clock stepped at boot (NTP)
    // neither makes an attachment stuck nor hides one.
    let requested = std::time::Instant::now();
    let plan = plan_claims(&here, &instance_id, &mounted, SystemTime::now());
    release(snapshot, &instance_id, &plan, &mut claimed, report).await?;
    let mut attaching = Attaching::kept(&plan);
    attach_candidates(
        snapshot,
        &plan,
        &instance_id,
        &mut attaching,
        &mut claimed,
        report,
    )
    .await?;
    if plan.kept.is_empty() && attaching.held.is_empty() {
        tracing::info!("no etcd volume for this node: none attached here and none free to claim");
    }
    let mut stuck: Vec<String> = plan.stuck.iter().map(|v| v.id.clone()).collect();
    if !snapshot.settings().dry_run && !attaching.waiting.is_empty() {
        let waited = Waited {
            here: &here,
            attaching: &attaching,
            requested,
        };
        stuck.extend(
            wait_and_release_stuck(snapshot, &instance_id, waited, &mut claimed, report).await?,
        );
    }
    if !stuck.is_empty() {
        return Err(stuck_attachments(snapshot, &stuck, &attaching));
    }
    Ok(claimed)
}

/// The volumes attached here that are mounted where protokube mounts them.
fn mounted_here(snapshot: &Snapshot<'_>, here: &[EtcdVolume]) -> Result<BTreeSet<String>> {
    let table = snapshot.mount_table()?;
    let mut mounted = BTreeSet::new();
    for volume in here {
        let mountpoint = snapshot
            .settings()
            .root
            .resolve(volume_mountpoint(&volume.id))?;
        if mounted_at(&table, &mountpoint).is_some() {
            mounted.insert(volume.id.clone());
        }
    }
    Ok(mounted)
}

/// Detaches a second volume of a key and an attachment stuck in `attaching`; says why two
/// volumes of one key that are both mounted stay.
async fn release(
    snapshot: &mut Snapshot<'_>,
    instance_id: &str,
    plan: &ClaimPlan,
    claimed: &mut Claimed,
    report: &mut Report,
) -> Result<()> {
    for (volume, why) in plan
        .extra
        .iter()
        .map(|v| (v, "a second volume of the same etcd cluster on this node"))
        .chain(plan.stuck.iter().map(|v| (v, STUCK_WHY)))
    {
        detach(snapshot, instance_id, volume, why, claimed, report).await?;
    }
    for volume in &plan.doubled {
        report.warn(format!(
            "volume `{}` holds etcd {} that another volume mounted on this node holds too; both \
             are mounted, so neither is detached: unmount `{}` and run again to release it",
            volume.id,
            memberships(volume),
            volume_mountpoint(&volume.id).display()
        ));
    }
    Ok(())
}

/// What the wait for this run's attachments starts from.
struct Waited<'a> {
    here: &'a [EtcdVolume],
    attaching: &'a Attaching,
    /// When the attachments were requested (the monotonic clock).
    requested: std::time::Instant,
}

/// Waits for this run's attachments; those still `attaching` after 90 s are detached. Their
/// ids.
async fn wait_and_release_stuck(
    snapshot: &mut Snapshot<'_>,
    instance_id: &str,
    waited: Waited<'_>,
    claimed: &mut Claimed,
    report: &mut Report,
) -> Result<Vec<String>> {
    let settings = snapshot.settings();
    let volumes = snapshot.clients().await?.volumes;
    let stuck = wait_attached(
        &*volumes,
        instance_id,
        &waited.attaching.waiting,
        waited.requested,
        settings.deadline,
        settings.progress,
    )
    .await?;
    for volume in waited.here.iter().filter(|v| stuck.contains(&v.id)) {
        detach(snapshot, instance_id, volume, STUCK_WHY, claimed, report).await?;
    }
    Ok(stuck)
}

/// The run's end where attachments stayed stuck: their device names remembered (avoided next
/// time; not in a dry run), not ready.
fn stuck_attachments(
    snapshot: &mut Snapshot<'_>,
    stuck: &[String],
    attaching: &Attaching,
) -> anyhow::Error {
    let names: Vec<&String> = stuck
        .iter()
        .filter_map(|id| attaching.device_of.get(id))
        .collect();
    if !snapshot.settings().dry_run {
        if let Err(err) = remember_stuck_names(snapshot, &names) {
            return err;
        }
    }
    NotReady(format!(
        "the attachment of `{}` stayed in `attaching` for over 90 s; it was detached so the next \
         run can attach it again under another device name; retry later",
        stuck.join("`, `")
    ))
    .into()
}

/// Whether this node was retired with `reset --detach`: it claims nothing, its unit or timer
/// keeps running.
fn is_retired(snapshot: &Snapshot<'_>, instance_id: &str, report: &mut Report) -> Result<bool> {
    let retired = snapshot.settings().root.own(RETIRED_FILE)?;
    if let FileFact::File { bytes, .. } = snapshot.host().fact(&retired)? {
        if String::from_utf8_lossy(&bytes).trim() == instance_id {
            report.warn(format!(
                "this node was retired with `protokube reset --detach` (`{}`): it claims no etcd \
                 volume; remove that file to bring it back",
                retired.display()
            ));
            return Ok(true);
        }
    }
    Ok(false)
}

/// The attachments of this run as it makes them.
struct Attaching {
    /// Cluster keys held here (kept volumes, then those attached now).
    held: Vec<String>,
    /// The device name of each attachment here, kept or made now (a stuck one's name is
    /// avoided next time).
    device_of: BTreeMap<String, String>,
    /// Attachments not yet `attached`.
    waiting: Vec<String>,
}

impl Attaching {
    fn kept(plan: &ClaimPlan) -> Self {
        Self {
            held: plan.held_keys.clone(),
            device_of: plan
                .kept
                .iter()
                .chain(&plan.stuck)
                .filter_map(|v| Some((v.id.clone(), v.attachment.as_ref()?.device.clone())))
                .collect(),
            waiting: plan
                .kept
                .iter()
                .filter(|v| {
                    v.attachment
                        .as_ref()
                        .is_some_and(|a| a.state != AttachmentState::Attached)
                })
                .map(|v| v.id.clone())
                .collect(),
        }
    }
}

/// Attaches the plan's candidates still wanted, in claim order, each under a free device name
/// (names an attachment got stuck on tried last).
async fn attach_candidates(
    snapshot: &mut Snapshot<'_>,
    plan: &ClaimPlan,
    instance_id: &str,
    attaching: &mut Attaching,
    claimed: &mut Claimed,
    report: &mut Report,
) -> Result<()> {
    let settings = snapshot.settings();
    let Some(first) = plan
        .candidates
        .iter()
        .find(|v| ClaimPlan::still_wanted(v, &attaching.held))
    else {
        return Ok(());
    };
    let volumes = snapshot.clients().await?.volumes;
    let mut used = volumes.instance_device_names(instance_id).await?;
    used.extend(
        plan.kept
            .iter()
            .filter_map(|v| v.attachment.as_ref().map(|a| a.device.clone())),
    );
    // Names an attachment got stuck on are tried last: left out while another is free.
    let avoided = snapshot.state()?.stuck_device_names.clone();
    let with_avoided: Vec<String> = used.iter().chain(&avoided).cloned().collect();
    if snapshot
        .devices()
        .free_name(&first.id, &with_avoided)
        .is_some()
    {
        used = with_avoided;
    }
    for volume in &plan.candidates {
        if !ClaimPlan::still_wanted(volume, &attaching.held) {
            continue;
        }
        let attached = attach(
            &*volumes,
            snapshot.devices(),
            &volume.id,
            instance_id,
            &mut used,
            settings.dry_run,
        )
        .await?;
        match attached {
            Attached::As(device) => {
                tracing::info!("attaching `{}` as `{device}`", volume.id);
                claimed.volumes_changed = true;
                report.push(Change {
                    kind: ChangeKind::Volume,
                    target: volume.id.clone(),
                    action: Action::Attach,
                    detail: format!(
                        "as {device} on {instance_id} (etcd {})",
                        memberships(volume)
                    ),
                });
                attaching
                    .held
                    .extend(volume.etcd.iter().map(|m| m.cluster.clone()));
                snapshot.record_attachment(&volume.id, instance_id, &device, settings.dry_run);
                attaching.device_of.insert(volume.id.clone(), device);
                attaching.waiting.push(volume.id.clone());
            }
            Attached::Taken(why) => tracing::info!(
                "volume `{}` was taken by another node ({why}); trying the next one",
                volume.id
            ),
        }
    }
    Ok(())
}

/// Records device names attachments got stuck on (the state file), so the next attach tries
/// another name first; at most one entry per name protokube uses.
fn remember_stuck_names(snapshot: &mut Snapshot<'_>, names: &[&String]) -> Result<()> {
    let mut state = snapshot.state()?.clone();
    for name in names {
        if !state.stuck_device_names.contains(name) {
            state.stuck_device_names.push((*name).clone());
        }
    }
    let keep_from = state
        .stuck_device_names
        .len()
        .saturating_sub(snapshot.devices().name_count());
    state.stuck_device_names.drain(..keep_from);
    super::save_state(snapshot, state)?;
    Ok(())
}

/// Detaches `volume` from this instance (or, with dry run, says it would). A volume whose device
/// is still held here — mounted anywhere (another mount point, a container's namespace), open,
/// or held by the kernel — is not detached: a warning names where. A detach the cloud refuses
/// for lack of permission is a warning, and `claimed` ends the run not ready.
async fn detach(
    snapshot: &mut Snapshot<'_>,
    instance_id: &str,
    volume: &EtcdVolume,
    why: &str,
    claimed: &mut Claimed,
    report: &mut Report,
) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if let Some(attachment) = &volume.attachment {
        let host = snapshot.host();
        let hint = snapshot.devices().hint(&volume.id, &attachment.device);
        if let Some(found) = host.find_device(&settings.root, &hint)? {
            let holders: Vec<String> = host
                .holders(&settings.root, found.devno)
                .iter()
                .map(ToString::to_string)
                .collect();
            if !holders.is_empty() {
                report.warn(format!(
                    "volume `{}` should be detached ({why}) but is not: it is {}; it is left \
                     as it is (not mounted, not published); release it there and run again",
                    volume.id,
                    holders.join(", ")
                ));
                snapshot.set_aside(&volume.id);
                return Ok(());
            }
        }
    }
    let volumes = snapshot.clients().await?.volumes;
    match volumes
        .detach_volume(&volume.id, instance_id, settings.dry_run)
        .await
    {
        Ok(()) => {}
        Err(err) => {
            let Some(denied) = AccessDenied::in_chain(&err) else {
                return Err(err);
            };
            report.warn(format!(
                "volume `{}` should be detached ({why}) but the cloud refused: {}",
                volume.id,
                crate::error::one_line(&err)
            ));
            claimed.refused_detaches.push(volume.id.clone());
            claimed.refused_permission = Some(denied.permission.clone());
            return Ok(());
        }
    }
    tracing::info!("detaching `{}`: {why}", volume.id);
    claimed.volumes_changed = true;
    report.push(Change {
        kind: ChangeKind::Volume,
        target: volume.id.clone(),
        action: Action::Detach,
        detail: format!("{why} (etcd {})", memberships(volume)),
    });
    snapshot.record_detachment(&volume.id);
    Ok(())
}

fn memberships(volume: &EtcdVolume) -> String {
    volume
        .etcd
        .iter()
        .map(|m| format!("{}/{}", m.cluster, m.member))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{Bench, Vol, INSTANCE, OTHER_INSTANCE};

    #[test]
    fn free_volumes_are_claimed_main_first_one_per_key_never_one_attached_elsewhere() {
        let bench = Bench::master(&[
            Vol::new("vol-events", "events", "a"),
            Vol::new("vol-main-a", "main", "a"),
            Vol::new("vol-main-b", "main", "b"),
            Vol::new("vol-taken", "main", "c").attached_to(OTHER_INSTANCE, "/dev/vdb"),
            Vol::new("vol-far", "main", "d").in_zone("us-east-1b"),
        ]);
        let mut snapshot = bench.snapshot(VolumeScope::Zone);
        let mut report = bench.report();
        let claimed = Bench::block_on(run(&mut snapshot, &mut report)).unwrap();
        assert!(claimed.volumes_changed);
        claimed.finish().unwrap();
        // kOps' order: a `main` volume before `events`; one volume per key; the volume
        // attached to another node and the one in another zone are never asked for.
        let attaches = bench.cloud.mutations();
        assert_eq!(attaches.len(), 2, "{attaches:?}");
        assert!(
            attaches[0].starts_with("AttachVolume vol-main-"),
            "{attaches:?}"
        );
        assert_eq!(attaches[1], "AttachVolume vol-events");
        let world = bench.cloud.world();
        let attached_here: Vec<&str> = world
            .volumes
            .iter()
            .filter(|v| v.attachments.iter().any(|a| a.instance_id == INSTANCE))
            .map(|v| v.id.as_str())
            .collect();
        assert_eq!(attached_here.len(), 2);
        assert!(attached_here.contains(&"vol-events"));
        // The claim step touches no device and no file of the node.
        assert!(bench.take_effects().is_empty());
    }

    #[test]
    fn a_dry_run_claims_on_paper_only() {
        let mut bench = Bench::master(&[Vol::new("vol-main", "main", "a")]);
        bench.dry_run();
        let mut snapshot = bench.snapshot(VolumeScope::Zone);
        let mut report = bench.report();
        let claimed = Bench::block_on(run(&mut snapshot, &mut report)).unwrap();
        claimed.finish().unwrap();
        assert_eq!(report.changes.len(), 1);
        assert_eq!(report.changes[0].action, Action::Attach);
        // The cloud is asked with DryRun, and nothing is attached.
        assert!(bench.cloud.world().volumes[0].attachments.is_empty());
        assert!(snapshot.is_planned("vol-main"));
    }

    #[test]
    fn with_every_device_name_taken_the_error_names_the_providers_names() {
        let bench = Bench::master(&[Vol::new("vol-1", "main", "a")]);
        // Six other volumes (not the cluster's) hold every name the cloud gives.
        bench.cloud.change(|world| {
            for (n, name) in crate::cloud::memory::DEVICE_NAMES.iter().enumerate() {
                let mut other = world.volumes[0].clone();
                other.id = format!("vol-other-{n}");
                other.tags.clear();
                other.state = crate::cloud::VolumeState::InUse;
                other.attachments = vec![crate::cloud::VolumeAttachment {
                    instance_id: INSTANCE.to_owned(),
                    device: (*name).to_owned(),
                    state: crate::cloud::AttachmentState::Attached,
                    attach_time: None,
                    root: false,
                    read_only: false,
                }];
                world.volumes.push(other);
            }
        });
        let mut snapshot = bench.snapshot(VolumeScope::Zone);
        let mut report = bench.report();
        let result = Bench::block_on(run(&mut snapshot, &mut report));
        let Err(err) = result else {
            panic!("a name was free");
        };
        let message = format!("{err:#}");
        assert!(
            message.contains("no free device name for volume `vol-1`: /dev/vdb to /dev/vdg"),
            "{message}"
        );
        assert!(bench.cloud.mutations().is_empty());
    }
}
