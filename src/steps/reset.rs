//! The reset step: this node's part undone, in an order that keeps etcd's data safe — the
//! manifests protokube wrote first (kubelet stops etcd), then, once no process uses them, the
//! volumes unmounted (and detached with `--detach`), this node's addresses taken out of the
//! names the cluster owns, the managed hosts block and the state file removed. Never formats,
//! never deletes a volume. A volume still in use after `--timeout` puts the manifests back and
//! exits 75: the node is left as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::cloud::{AttachmentState, VolumeAttachment};
use crate::dns::target::{DnsTarget, Releasing};
use crate::error::NotReady;
use crate::host::{Devices, Holder, Host};
use crate::paths::STATE_FILE;
use crate::paths::{volume_mountpoint, RETIRED_FILE};
use crate::plan::dns::records::own_addresses;
use crate::plan::files::{plan_file, plan_removal, plan_restore, FileChange, FileFact};
use crate::plan::mounts::mounted_at;
use crate::plan::reset::{manifests_to_remove, ManifestEntry, OwnLinks};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::wait::{poll_until, Backoff};

/// One of this node's etcd volumes: attached here (the cloud says so), mounted here (the mount
/// table says so), or both.
struct NodeVolume {
    id: String,
    mountpoint: PathBuf,
    /// The mounted filesystem's device number, when mounted.
    mounted: Option<(u32, u32)>,
    attached: bool,
    /// The volume's block device on this node (mounted or not), when it is here.
    device: Option<(u32, u32)>,
}

/// Resets this node's part; its names are taken out of `dns` (the run's target).
pub(crate) async fn run(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
    report: &mut Report,
) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let host = snapshot.host();
    // Facts first, the whole plan reported before anything changes.
    let volumes = node_volumes(snapshot).await?;
    let manifests = manifest_removals(snapshot, &volumes)?;
    let state_path = settings.root.own(STATE_FILE)?;
    let state_removal = plan_removal(&state_path, &host.fact(&state_path)?);
    // A node retired with `--detach` stays retired: its unit or timer claims nothing again.
    let retired = if settings.detach && settings.master {
        let instance_id = snapshot.identity().await?.instance_id.clone();
        let path = settings.root.own(RETIRED_FILE)?;
        Some(plan_file(
            &path,
            &host.fact(&path)?,
            &format!("{instance_id}\n"),
            0o644,
        ))
    } else {
        None
    };
    refuse_pinned(settings, host, &volumes)?;
    for change in &manifests {
        report.push(change.change());
    }
    let detaching: Vec<&NodeVolume> = volumes
        .iter()
        .filter(|v| v.attached && settings.detach)
        .collect();
    refuse_held_elsewhere(settings, host, &detaching)?;
    if !settings.dry_run {
        remove_manifests_until_free(settings, host, &manifests, &volumes).await?;
        for volume in &volumes {
            if volume.mounted.is_some() {
                host.unmount(&settings.root, &volume.mountpoint)?;
            }
        }
        for volume in detaching {
            detach_unheld(snapshot, volume).await?;
        }
    }
    report_volumes(settings, &volumes, report);
    let releasing = releasing(snapshot, dns).await?;
    dns.release(&releasing, report).await?;
    for removal in std::iter::once(&state_removal).chain(&retired) {
        if !settings.dry_run {
            host.apply(removal)?;
        }
        report.push(removal.change());
    }
    Ok(())
}

/// What would make an unmount fail and does not end when kubelet stops etcd — a mount below
/// the mount point, a loop device or swap file on the volume, a process other than etcd — is
/// looked for before anything changes: found, nothing is changed (exit 75).
fn refuse_pinned(settings: &Settings, host: &dyn Host, volumes: &[NodeVolume]) -> Result<()> {
    let pinned: Vec<String> = volumes
        .iter()
        .filter_map(|v| v.mounted.map(|devno| (v, devno)))
        .filter_map(|(volume, devno)| {
            let mut held: Vec<String> = host
                .pinned_by(&settings.root, &volume.mountpoint, devno)
                .iter()
                .map(ToString::to_string)
                .collect();
            held.extend(
                host.users_of(devno)
                    .into_iter()
                    .filter(|user| !is_etcd(user))
                    .map(|user| Holder::Process(user).to_string()),
            );
            (!held.is_empty()).then(|| {
                format!(
                    "`{}` ({}) is {}",
                    volume.mountpoint.display(),
                    volume.id,
                    held.join(", ")
                )
            })
        })
        .collect();
    if pinned.is_empty() {
        return Ok(());
    }
    Err(NotReady(format!(
        "refusing to reset: {}; release it and run `protokube reset` again (nothing was \
         changed)",
        pinned.join("; ")
    ))
    .into())
}

/// A volume held by anything reset does not undo itself (a mount elsewhere: a bind mount, a
/// container's namespace; a kernel holder) is never detached: refused before anything.
fn refuse_held_elsewhere(
    settings: &Settings,
    host: &dyn Host,
    detaching: &[&NodeVolume],
) -> Result<()> {
    for volume in detaching {
        let own = [
            volume.mountpoint.clone(),
            settings.root.host_path_of(&volume.mountpoint),
        ];
        let others: Vec<Holder> = holders(settings, host, volume)
            .into_iter()
            .filter(|h| match h {
                Holder::Mount { at, .. } => !own.contains(at),
                // Processes are waited for below.
                Holder::Process(_) => false,
                Holder::Kernel(_)
                | Holder::Below { .. }
                | Holder::LoopDevice { .. }
                | Holder::SwapFile(_) => true,
            })
            .collect();
        if !others.is_empty() {
            return Err(not_detached(volume, &others, "nothing was changed"));
        }
    }
    Ok(())
}

/// Removes the manifests and waits for the volumes to be free; when they are not, puts the
/// manifests back as they were.
async fn remove_manifests_until_free(
    settings: &Settings,
    host: &dyn Host,
    manifests: &[FileChange],
    volumes: &[NodeVolume],
) -> Result<()> {
    let before: Vec<(PathBuf, FileFact)> = manifests
        .iter()
        .map(|c| Ok((c.path.clone(), host.fact(&c.path)?)))
        .collect::<Result<_>>()?;
    for change in manifests {
        host.apply(change)?;
    }
    let Err(err) = wait_until_free(settings, host, volumes).await else {
        return Ok(());
    };
    for (path, fact) in &before {
        if let Some(restore) = plan_restore(path, fact) {
            host.apply(&restore)
                .with_context(|| format!("putting back `{}`", path.display()))?;
        }
    }
    Err(err.context("the manifests were put back; nothing else was changed"))
}

/// Detaches a volume unmounted everywhere protokube mounted it: nothing may hold it now.
async fn detach_unheld(snapshot: &mut Snapshot<'_>, volume: &NodeVolume) -> Result<()> {
    let settings = snapshot.settings();
    let left = holders(&settings, snapshot.host(), volume);
    if !left.is_empty() {
        return Err(not_detached(
            volume,
            &left,
            "the manifests are removed and it is unmounted here",
        ));
    }
    let instance_id = snapshot.identity().await?.instance_id.clone();
    let api = snapshot.clients().await?.volumes;
    api.detach_volume(&volume.id, &instance_id, false).await?;
    snapshot.record_detachment(&volume.id);
    Ok(())
}

/// Whether a process using a volume (`pid (command)`) is etcd: the pod protokube's manifest
/// runs there, which kubelet stops once the manifest is gone.
fn is_etcd(user: &str) -> bool {
    user.ends_with("(etcd)")
}

/// What holds the volume's block device on this node (nothing when the device is not here).
fn holders(settings: &Settings, host: &dyn Devices, volume: &NodeVolume) -> Vec<Holder> {
    volume
        .device
        .map(|devno| host.holders(&settings.root, devno))
        .unwrap_or_default()
}

/// The refusal to detach a volume something still holds (exit 75: a later run may).
fn not_detached(volume: &NodeVolume, holders: &[Holder], done: &str) -> anyhow::Error {
    let holders: Vec<String> = holders.iter().map(ToString::to_string).collect();
    NotReady(format!(
        "refusing to detach `{}`: it is {}; release it there and run `protokube reset \
         --detach` again ({done})",
        volume.id,
        holders.join(", ")
    ))
    .into()
}

/// Removals of the manifests protokube wrote into the manifest directory: its links into this
/// node's `volumes`, and the control-plane manifests it renders.
fn manifest_removals(
    snapshot: &mut Snapshot<'_>,
    volumes: &[NodeVolume],
) -> Result<Vec<FileChange>> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let host = snapshot.host();
    let (dir, names) = snapshot.manifest_dir()?;
    let manifests_on = |mountpoint: PathBuf| mountpoint.join("k8s.io/manifests");
    let own = OwnLinks {
        manifest_dir: settings.root.host_path_of(&dir),
        volume_dirs: volumes
            .iter()
            .flat_map(|v| {
                [
                    manifests_on(settings.root.host_path_of(&v.mountpoint)),
                    manifests_on(volume_mountpoint(&v.id)),
                ]
            })
            .collect(),
    };
    let mut listed = Vec::new();
    for name in names {
        let link = match host.fact(&dir.join(&name))? {
            FileFact::Symlink(target) => Some(target),
            _ => None,
        };
        listed.push(ManifestEntry { name, link });
    }
    let renders_spec_manifests = settings.spec.is_some() && !settings.etcd_only;
    manifests_to_remove(&listed, renders_spec_manifests, &own)
        .into_iter()
        .map(|name| {
            let path = dir.join(name);
            Ok(plan_removal(&path, &host.fact(&path)?))
        })
        .collect()
}

/// This node's etcd volumes: attached here (masters ask the cloud) or recorded in the state
/// file, with whether each is mounted at its mount point.
async fn node_volumes(snapshot: &mut Snapshot<'_>) -> Result<Vec<NodeVolume>> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    // Where etcd-manager owns etcd, the volumes attached and mounted here are its own.
    if !snapshot.etcd_owner()?.is_protokube() {
        return Ok(Vec::new());
    }
    let state = snapshot.state_strict()?.clone();
    let table = snapshot.mount_table()?;
    // Protokube's own mount points count too, recorded or not (a volume dropped from the
    // answer for a bad tag): reset never reports success over one it leaves mounted.
    let mounted_here = super::own_mounted_volumes(settings, &table);
    // The volumes attached here (masters ask the cloud), with the device name each was
    // attached as.
    let mut attached: BTreeMap<String, String> = BTreeMap::new();
    if settings.master {
        let instance_id = snapshot.identity().await?.instance_id.clone();
        // A detach under way is as good as done: asking again would be refused.
        let live_here = |a: &&VolumeAttachment| {
            a.instance_id == instance_id && a.state != AttachmentState::Detaching
        };
        let here = snapshot.volumes_here().await?;
        for volume in &here {
            if let Some(attachment) = volume.attachment.as_ref().filter(live_here) {
                attached.insert(volume.id.clone(), attachment.device.clone());
            }
        }
        // A volume mounted here that the cluster's answer left out (skipped for a bad tag):
        // its own attachment is asked for, so `--detach` leaves nothing of this node attached.
        // (Only mounted ones: a mounted volume exists; a recorded one may have been deleted.)
        let unknown: Vec<String> = mounted_here
            .iter()
            .filter(|id| !here.iter().any(|v| &v.id == *id))
            .cloned()
            .collect();
        if settings.detach && !unknown.is_empty() {
            let api = snapshot.clients().await?.volumes;
            for volume in api.volumes_by_id(&unknown).await? {
                if let Some(attachment) = volume.attachments.iter().find(live_here) {
                    attached.insert(volume.id.clone(), attachment.device.clone());
                }
            }
        }
    }
    let ids: BTreeSet<String> = attached
        .keys()
        .cloned()
        .chain(state.volumes.into_iter().map(|v| v.volume_id))
        .chain(mounted_here)
        .collect();
    let mut volumes = Vec::new();
    for id in ids {
        let mountpoint = settings.root.volume_mountpoint(&id)?;
        let mounted = mounted_at(&table, &mountpoint).map(|m| m.devno);
        let device = match (mounted, attached.get(&id)) {
            (Some(devno), _) => Some(devno),
            (None, Some(requested)) => {
                let hint = snapshot.devices().hint(&id, requested);
                snapshot
                    .host()
                    .find_device(&settings.root, &hint)?
                    .map(|found| found.devno)
            }
            (None, None) => None,
        };
        volumes.push(NodeVolume {
            attached: attached.contains_key(&id),
            id,
            mountpoint,
            mounted,
            device,
        });
    }
    Ok(volumes)
}

/// The volumes' entries in the report: unmounts, then detaches with `--detach`.
fn report_volumes(settings: &Settings, volumes: &[NodeVolume], report: &mut Report) {
    for volume in volumes.iter().filter(|v| v.mounted.is_some()) {
        report.push(Change {
            kind: ChangeKind::Mount,
            target: volume.mountpoint.display().to_string(),
            action: Action::Unmount,
            detail: volume.id.clone(),
        });
    }
    for volume in volumes.iter().filter(|v| v.attached && settings.detach) {
        report.push(Change {
            kind: ChangeKind::Volume,
            target: volume.id.clone(),
            action: Action::Detach,
            detail: "from this instance".to_owned(),
        });
    }
}

/// Waits, bounded by `--timeout`, until no process uses a mounted volume (kubelet stops etcd
/// once its manifest is gone); exit 75 naming the users when one stays.
async fn wait_until_free(
    settings: &Settings,
    host: &dyn Devices,
    volumes: &[NodeVolume],
) -> Result<()> {
    let mounted: Vec<(&NodeVolume, (u32, u32))> = volumes
        .iter()
        .filter_map(|v| v.mounted.map(|devno| (v, devno)))
        .collect();
    if mounted.is_empty() {
        return Ok(());
    }
    let busy = || -> Vec<String> {
        mounted
            .iter()
            .filter_map(|(volume, devno)| {
                let users = host.users_of(*devno);
                (!users.is_empty()).then(|| {
                    format!(
                        "`{}` ({}) is used by {}",
                        volume.mountpoint.display(),
                        volume.id,
                        users.join(", ")
                    )
                })
            })
            .collect()
    };
    let waited = poll_until(
        "the etcd volumes to be free",
        settings.deadline,
        settings.progress,
        Backoff::new(
            std::time::Duration::from_millis(200),
            std::time::Duration::from_secs(2),
        ),
        || async { Ok(busy().is_empty().then_some(())) },
    )
    .await;
    if waited.is_err() {
        return Err(NotReady(format!(
            "{}; stop what holds it and run `protokube reset` again",
            busy().join("; ")
        ))
        .into());
    }
    Ok(())
}

/// What `dns` looks at to take this node out of its names: where it needs the cloud's facts,
/// this node's addresses and the cluster's names from the masters and the etcd volumes.
async fn releasing(snapshot: &mut Snapshot<'_>, dns: &dyn DnsTarget) -> Result<Releasing> {
    if !dns.needs_cloud_facts() {
        return Ok(Releasing::default());
    }
    let facts = super::publish::run_facts(snapshot, dns).await?;
    let identity = snapshot.identity().await?.clone();
    let masters = snapshot.masters().await?;
    let own_addresses = own_addresses(
        &identity.instance_id,
        identity.internal_ip,
        identity.external_ip,
        &masters,
    );
    let volumes = snapshot.discovery().await?.volumes.clone();
    // The names whose zones and subtrees are read; every owned name there is looked at.
    let names = dns.master_records(&volumes, &masters);
    Ok(Releasing {
        facts,
        own_addresses,
        names,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::memory::Content;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{Bench, Vol, INSTANCE};

    const LINK: &str = "/etc/kubernetes/manifests/etcd-main.manifest";
    const TARGET: &str = "/mnt/master-vol-1/k8s.io/manifests/etcd-main.manifest";

    /// A master with volume `vol-1` attached and mounted, and protokube's etcd link in place.
    fn mounted_master(detach: bool) -> Bench {
        let bench = Bench::with_flags(
            &[Vol::new("vol-1", "main", "a")
                .attached_to(INSTANCE, "/dev/vdb")
                .formatted("u-1")],
            |flags| {
                flags.detach = detach;
                flags.timeout = std::time::Duration::from_millis(300);
            },
        );
        bench.device(
            "/dev/vdb",
            1,
            Content::Ext4 {
                uuid: "u-1".into(),
                size: 1 << 30,
                broken: false,
            },
        );
        let mountpoint = bench.path("/mnt/master-vol-1");
        bench.host.change(|node| {
            node.mounts.insert(mountpoint, (202, 1));
        });
        bench.symlink(LINK, TARGET);
        bench
    }

    fn reset(bench: &Bench) -> (Report, Result<()>) {
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        let dns = bench.dns();
        let result = Bench::block_on(run(&mut snapshot, &*dns, &mut report));
        (report, result)
    }

    #[test]
    fn a_busy_volume_puts_the_manifest_back_and_changes_nothing_else() {
        let bench = mounted_master(true);
        bench.host.change(|node| {
            node.users.insert((202, 1), vec!["4242 (etcd)".to_owned()]);
        });
        let (_, result) = reset(&bench);
        let err = result.unwrap_err();
        assert!(crate::error::caused_by::<NotReady>(&err), "{err:#}");
        assert!(format!("{err:#}").contains("4242 (etcd)"), "{err:#}");
        // The link went (kubelet stops etcd), came back when etcd held on; nothing else.
        assert_eq!(
            bench.take_effects(),
            [format!("write {LINK}"), format!("write {LINK}")]
        );
        let node = bench.host.node();
        assert_eq!(node.symlinks[&bench.path(LINK)], PathBuf::from(TARGET));
        assert!(node.mounts.contains_key(&bench.path("/mnt/master-vol-1")));
        assert!(bench.cloud.mutations().is_empty());
    }

    #[test]
    fn what_outlives_etcd_on_the_volume_refuses_before_anything_changes() {
        for (holder, said) in [
            (
                Some(Holder::Below {
                    at: "/mnt/master-vol-1/sub".into(),
                    namespace: "this mount namespace".into(),
                }),
                "a mount below it at `/mnt/master-vol-1/sub`",
            ),
            (
                Some(Holder::LoopDevice {
                    device: "loop7".into(),
                    file: "/mnt/master-vol-1/disk.img".into(),
                }),
                "loop device `loop7`",
            ),
            (
                Some(Holder::SwapFile("/mnt/master-vol-1/swap".into())),
                "swap file `/mnt/master-vol-1/swap`",
            ),
            (None, "used by process 77 (bash)"),
        ] {
            for dry_run in [false, true] {
                let mut bench = mounted_master(true);
                if dry_run {
                    bench.dry_run();
                }
                bench.host.change(|node| match holder.clone() {
                    Some(holder) => {
                        node.pinned.insert((202, 1), vec![holder]);
                    }
                    None => {
                        node.users
                            .insert((202, 1), vec!["77 (bash)".into(), "78 (etcd)".into()]);
                    }
                });
                let (report, result) = reset(&bench);
                let err = result.unwrap_err();
                assert!(crate::error::caused_by::<NotReady>(&err), "{err:#}");
                let message = format!("{err:#}");
                assert!(message.contains(said), "{message}");
                assert!(message.contains("nothing was changed"), "{message}");
                assert!(!message.contains("78 (etcd)"), "{message}");
                assert!(bench.take_effects().is_empty());
                assert!(bench.cloud.mutations().is_empty());
                assert!(report.changes.is_empty(), "{:?}", report.changes);
            }
        }
    }

    #[test]
    fn a_free_volume_is_unmounted_after_its_manifest_then_detached() {
        let bench = mounted_master(true);
        let (report, result) = reset(&bench);
        result.unwrap();
        assert_eq!(
            bench.take_effects(),
            [
                format!("write {LINK}"),
                "unmount /mnt/master-vol-1".to_owned(),
                "write /var/lib/protokube/retired".to_owned()
            ]
        );
        assert_eq!(bench.cloud.mutations(), ["DetachVolume vol-1"]);
        let order: Vec<Action> = report
            .changes
            .iter()
            .filter(|c| c.action != Action::Unchanged)
            .map(|c| c.action)
            .collect();
        // The node is marked retired last, once everything else is undone.
        assert_eq!(
            order,
            [
                Action::Delete,
                Action::Unmount,
                Action::Detach,
                Action::Create
            ]
        );
    }

    #[test]
    fn a_volume_mounted_elsewhere_is_never_detached_and_nothing_is_changed() {
        for detach in [true, false] {
            let bench = mounted_master(detach);
            // A bind mount in a container's namespace keeps the filesystem alive after protokube
            // unmounts its own mount point.
            bench.host.change(|node| {
                node.elsewhere
                    .insert((202, 1), vec!["/var/lib/docker/x/etcd".to_owned()]);
            });
            let (_, result) = reset(&bench);
            if !detach {
                // Nothing to detach: reset goes on as before.
                result.unwrap();
                continue;
            }
            let err = result.unwrap_err();
            assert!(crate::error::caused_by::<NotReady>(&err), "{err:#}");
            let message = format!("{err:#}");
            assert!(
                message.contains("/var/lib/docker/x/etcd") && message.contains("vol-1"),
                "{message}"
            );
            assert!(bench.take_effects().is_empty());
            assert!(bench.cloud.mutations().is_empty());
        }
    }

    #[test]
    fn this_nodes_addresses_leave_the_names_and_the_others_stay() {
        use crate::dns::memory::record_set;
        use crate::plan::dns::zone_plan::ownership_value;
        let bench = Bench::with_flags(&[], |flags| {
            flags.dns = Some(crate::settings::DnsChoice::of(
                crate::settings::DnsKind::Zones,
            ));
        });
        let api = "api.internal.k.example.com";
        let set = |record_type: &str, values: &[&str]| record_set(api, record_type, values);
        bench.zones.change(|z| {
            z.put("Z1", set("A", &["10.0.0.1", "10.0.0.2"]));
            z.put(
                "Z1",
                set("TXT", &[&ownership_value(crate::steps::testing::CLUSTER)]),
            );
        });
        let (report, result) = reset(&bench);
        result.unwrap();
        let zones = bench.zones.zones();
        assert_eq!(zones.get("Z1", api, "A").unwrap().values, ["10.0.0.2"]);
        assert!(zones.get("Z1", api, "TXT").is_some());
        assert!(report
            .changes
            .iter()
            .any(|c| c.target == api && c.action == Action::Update));
        // Again: nothing of this node's is left to take out.
        let sent = bench.zones.zones().changes().len();
        reset(&bench).1.unwrap();
        assert_eq!(bench.zones.zones().changes().len(), sent);
    }
}
