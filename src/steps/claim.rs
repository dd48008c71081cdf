//! The claim step: keep the etcd volumes attached here, attach free ones in kOps' claim order
//! (at most one per etcd cluster key; the attach is the lock between nodes), and wait until they
//! are attached.

use anyhow::Result;

use crate::apply::attach::{attach, wait_attached, Attached};
use crate::plan::volumes::{plan_claims, ClaimPlan, EtcdVolume};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::steps::discover::warn_skipped;

pub async fn run(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    report: &mut Report,
) -> Result<()> {
    let instance_id = snapshot.identity().await?.instance_id.clone();
    warn_skipped(snapshot, report).await?;
    let plan = plan_claims(&snapshot.volumes_here().await?, &instance_id);
    let mut held = plan.held_keys.clone();
    let mut waiting: Vec<String> = plan
        .kept
        .iter()
        .filter(|v| v.attachment.as_ref().is_some_and(|a| a.state != "attached"))
        .map(|v| v.id.clone())
        .collect();
    if plan
        .candidates
        .iter()
        .any(|v| ClaimPlan::still_wanted(v, &held))
    {
        let volumes = snapshot.clients().await?.volumes;
        let mut used = volumes.instance_device_names(&instance_id).await?;
        used.extend(
            plan.kept
                .iter()
                .filter_map(|v| v.attachment.as_ref().map(|a| a.device.clone())),
        );
        for volume in &plan.candidates {
            if !ClaimPlan::still_wanted(volume, &held) {
                continue;
            }
            match attach(
                &*volumes,
                &volume.id,
                &instance_id,
                &mut used,
                settings.dry_run,
            )
            .await?
            {
                Attached::As(device) => {
                    tracing::info!("attaching `{}` as `{device}`", volume.id);
                    report.push(Change {
                        kind: ChangeKind::Volume,
                        target: volume.id.clone(),
                        action: Action::Attach,
                        detail: format!(
                            "as {device} on {instance_id} (etcd {})",
                            memberships(volume)
                        ),
                    });
                    held.extend(volume.etcd.iter().map(|m| m.cluster.clone()));
                    snapshot.record_attachment(&volume.id, &instance_id, &device, settings.dry_run);
                    waiting.push(volume.id.clone());
                }
                Attached::Taken(why) => tracing::info!(
                    "volume `{}` was taken by another node ({why}); trying the next one",
                    volume.id
                ),
            }
        }
    }
    if plan.kept.is_empty() && held.is_empty() {
        tracing::info!("no etcd volume for this node: none attached here and none free to claim");
    }
    if !settings.dry_run && !waiting.is_empty() {
        let volumes = snapshot.clients().await?.volumes;
        wait_attached(&*volumes, &instance_id, &waiting, &settings.waits).await?;
    }
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
