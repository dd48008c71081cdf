//! The render step: every static-pod manifest this node runs, rendered and validated (plan),
//! then written atomically where its bytes differ, with the etcd manifests on their volumes.

use std::collections::BTreeMap;

use anyhow::{bail, Context as _, Result};

use crate::cloud::{tags, AccessDenied, CloudVolume};
use crate::host::{Files, Host};
use crate::paths::{HostRoot, MANIFEST_DIR, ON_VOLUME_MANIFEST_DIR};
use crate::plan::files::FileFact;
use crate::plan::manifests::nodeup::Distribution;
use crate::plan::manifests::upgrade::EtcdVersion;
use crate::plan::manifests::{
    plan_version_records, plan_writes, render_all, version_record_paths, Layout, Manifest,
    MemberVersions, Placement, RenderInputs, ReportedVersions, VersionTag,
};
use crate::plan::volumes::{cluster_members, complete_members};
use crate::report::Report;
use crate::snapshot::Snapshot;
use crate::spec::ClusterSpec;

/// The largest etcd version record read (`3.5.13\n` is 7 bytes).
const VERSION_RECORD_MAX: u64 = 64;

/// What the render step changed in the cloud, for the verify step (`sync` on a master).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rendered {
    /// A volume's version tag was written: the cloud's volumes changed.
    pub(crate) tagged: bool,
}

pub(crate) async fn run(snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<Rendered> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    // The old daemon's invocation without a spec renders the etcd pods alone, from the volumes.
    let no_spec = ClusterSpec::default();
    let spec = match &settings.spec {
        Some(doc) => &doc.spec,
        None if settings.etcd_only => &no_spec,
        None => bail!("render-manifests needs the cluster spec: pass --cluster-spec FILE"),
    };
    let host = snapshot.host();
    let cluster = snapshot.cluster().await?;
    // Where etcd-manager runs, the volumes and etcd are its own, whatever is mounted.
    let mut mounted = if settings.master && snapshot.etcd_owner()?.is_protokube() {
        snapshot.mounted()?
    } else {
        Vec::new()
    };
    // An etcd cluster's members, where the cloud's labels do not say them all (kOps 1.36 on
    // some clouds): the spec's, else every volume of the key this run listed.
    if !settings.provider.labels_every_member {
        let listed = snapshot.discovery_known().map(|d| d.volumes.as_slice());
        let members = cluster_members(&settings.etcd_members, listed.unwrap_or_default());
        for volume in &mut mounted {
            complete_members(&mut volume.etcd, &members);
        }
    }
    let inputs = RenderInputs {
        cluster_name: &cluster.name,
        internal_suffix: &cluster.internal_suffix,
        master: settings.master,
        spec,
        mounted: &mounted,
        etcd: &settings.etcd,
        distribution: read_distribution(host, &settings.root)?,
        etcd_only: settings.etcd_only,
    };
    let mut warnings = Vec::new();
    let manifests = render_all(&settings.templates, &inputs, &mut warnings)?;
    for warning in warnings {
        report.warn(warning);
    }
    let root = &settings.root;
    let layout = layout(root, &manifests)?;
    let facts = read_facts(snapshot, &layout, &manifests)?;
    // The version guard first: a refused upgrade writes nothing. The other members' versions
    // come from the cloud's answer, where this run has one (`sync`; `render-manifests` alone
    // asks the cloud nothing and checks this volume's records only).
    let members = member_versions(snapshot.volume_answer());
    let reported = reported_versions(host, root, &manifests, snapshot);
    let (mut changes, tags) =
        plan_version_records(&layout, &manifests, &facts, &members, &reported)?;
    changes.extend(plan_writes(&layout, &manifests, &facts)?);
    for change in changes {
        if !settings.dry_run {
            host.apply(&change)?;
        }
        report.push(change.change());
    }
    let mut rendered = Rendered::default();
    // kOps' IRSA control-plane role may not tag volumes: there the guard knows the other
    // members from their files only (where mounted), and no refused call is made every check.
    let may_tag = !settings
        .spec
        .as_ref()
        .is_some_and(|doc| doc.spec.uses_irsa());
    if !settings.dry_run && may_tag && snapshot.volume_answer().is_some() {
        rendered.tagged = tag_versions(snapshot, &tags).await?;
    }
    Ok(rendered)
}

/// Where the manifests go: the manifests directory, the log directory, and each volume's own
/// directories — none of which may be a symlink on a volume (its contents must not send a
/// write, or etcd's data, anywhere else).
fn layout(root: &HostRoot, manifests: &[Manifest]) -> Result<Layout> {
    let mut layout = Layout {
        root: root.clone(),
        manifest_dir: root.resolve(MANIFEST_DIR)?,
        log_dir: root.resolve("/var/log")?,
        volume_dirs: BTreeMap::new(),
    };
    for manifest in manifests {
        if let Placement::OnVolume {
            volume_id,
            data_dir,
            ..
        } = &manifest.placement
        {
            let mountpoint = root.volume_mountpoint(volume_id)?;
            let check = || -> Result<_> {
                root.on_volume(&mountpoint, data_dir)?;
                root.on_volume(&mountpoint, ON_VOLUME_MANIFEST_DIR)
            };
            let dir = check().with_context(|| format!("volume `{volume_id}`"))?;
            layout.volume_dirs.insert(volume_id.clone(), dir);
        }
    }
    Ok(layout)
}

/// What is on disk now at every path the manifests and their version records use; a volume
/// mounted only in this dry run's plan has nothing to read.
fn read_facts(
    snapshot: &Snapshot<'_>,
    layout: &Layout,
    manifests: &[Manifest],
) -> Result<BTreeMap<std::path::PathBuf, FileFact>> {
    let host = snapshot.host();
    let mut facts = BTreeMap::new();
    for manifest in manifests {
        let paths = manifest.paths(layout)?;
        let on_planned_volume = matches!(&manifest.placement,
            Placement::OnVolume { volume_id, .. } if snapshot.is_planned(volume_id));
        let mut read = vec![paths.log];
        if !on_planned_volume {
            read.push(paths.file);
        }
        read.extend(paths.link.map(|(link, _)| link));
        for path in read {
            let fact = host.fact(&path)?;
            facts.insert(path, fact);
        }
    }
    for path in version_record_paths(layout, manifests)? {
        // A version record is a few bytes: read with that bound first, so a large (or sparse)
        // file there is refused without being read whole.
        host.read(&path, VERSION_RECORD_MAX).with_context(|| {
            format!(
                "`{}` is not an etcd version record (a regular file of at most \
                 {VERSION_RECORD_MAX} bytes); write the version its data last ran there",
                path.display()
            )
        })?;
        let fact = host.fact(&path)?;
        facts.insert(path, fact);
    }
    Ok(facts)
}

/// The version each etcd pod already running on a mounted volume reports on its client port:
/// what its data now runs. A pod that does not answer (not started yet, or failing to start
/// after an upgrade) keeps its volume's record as it is.
fn reported_versions(
    host: &dyn Host,
    root: &HostRoot,
    manifests: &[Manifest],
    snapshot: &Snapshot<'_>,
) -> ReportedVersions {
    let mut reported = ReportedVersions::new();
    for manifest in manifests {
        let Placement::OnVolume {
            volume_id, client, ..
        } = &manifest.placement
        else {
            continue;
        };
        if snapshot.is_planned(volume_id) {
            continue;
        }
        match host.etcd_version(root, client) {
            Ok(Some(version)) => {
                reported.insert(manifest.name.clone(), version);
            }
            Ok(None) => tracing::debug!(
                "nothing listens at `{}` yet: `{}` keeps the version volume `{volume_id}` \
                 recorded",
                client.url(),
                manifest.name
            ),
            Err(err) => tracing::info!(
                "`{}` reports no etcd version ({}); volume `{volume_id}` keeps the version it \
                 recorded",
                manifest.name,
                crate::error::one_line(&err)
            ),
        }
    }
    reported
}

/// The etcd versions the members recorded, from the volumes' version tags in the cloud's answer.
fn member_versions(answer: Option<&[CloudVolume]>) -> MemberVersions {
    let mut members = MemberVersions::new();
    for volume in answer.unwrap_or_default() {
        for (key, value) in &volume.tags {
            let (Some(cluster), Some(version)) = (
                key.strip_prefix(tags::ETCD_VERSION_PREFIX),
                EtcdVersion::parse(value),
            ) else {
                continue;
            };
            members
                .entry(cluster.to_owned())
                .or_default()
                .push((volume.id.clone(), version));
        }
    }
    members
}

/// Tags each volume with the etcd version its data now runs, so the other members see it; a
/// tag the cloud refuses is logged (the guard then knows this member from its file only).
/// Says whether a tag was written.
async fn tag_versions(snapshot: &mut Snapshot<'_>, versions: &[VersionTag]) -> Result<bool> {
    if versions.is_empty() {
        return Ok(false);
    }
    let api = snapshot.clients().await?.volumes;
    let mut tagged = false;
    for (volume_id, key, version) in versions {
        let tag = format!("{}{key}", tags::ETCD_VERSION_PREFIX);
        match api.tag_volume(volume_id, &tag, &version.to_string()).await {
            Ok(()) => {
                tagged = true;
                tracing::info!("volume `{volume_id}`: tagged `{tag}={version}`");
            }
            Err(err) if crate::error::caused_by::<AccessDenied>(&err) => {
                tracing::info!(
                    "volume `{volume_id}` could not be tagged `{tag}={version}` ({}); the other \
                     members' version guard does not see this member's version",
                    crate::error::one_line(&err)
                );
            }
            Err(err) => return Err(err),
        }
    }
    Ok(tagged)
}

/// The host's distribution from `<root>/etc/os-release` (none: another Linux).
fn read_distribution(files: &dyn Files, root: &HostRoot) -> Result<Distribution> {
    let path = root.resolve("/etc/os-release")?;
    let bytes = files
        .read(&path, MAX_OS_RELEASE_BYTES)
        .context("reading the host's os-release")?;
    Ok(bytes.map_or(Distribution::Other, |bytes| {
        Distribution::from_os_release(&String::from_utf8_lossy(&bytes))
    }))
}

/// The largest os-release read (a few hundred bytes on every distribution).
const MAX_OS_RELEASE_BYTES: u64 = 64 << 10;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::memory::Content;
    use crate::report::Action;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{Bench, Vol, INSTANCE};

    fn render(bench: &Bench) -> (Report, Result<Rendered>) {
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        let result = Bench::block_on(run(&mut snapshot, &mut report));
        (report, result)
    }

    #[test]
    fn without_a_spec_nothing_is_rendered() {
        let bench = Bench::master(&[]);
        let (_, result) = render(&bench);
        let message = format!("{:#}", result.unwrap_err());
        assert!(message.contains("--cluster-spec"), "{message}");
        assert!(bench.take_effects().is_empty());
    }

    #[test]
    fn the_old_daemon_renders_etcd_onto_its_volume_once() {
        let bench = Bench::with_flags(
            &[Vol::new("vol-1", "main", "a").attached_to(INSTANCE, "/dev/vdb")],
            |flags| flags.legacy = true,
        );
        bench.device("/dev/vdb", 1, Content::Zeros);
        bench.sync_volumes().2.unwrap();
        bench.take_effects();
        let (report, result) = render(&bench);
        result.unwrap();
        let effects = bench.take_effects();
        // The pod lives on its volume, kubelet's manifest directory links to it.
        assert!(
            effects
                .iter()
                .any(|e| e.starts_with("write /mnt/master-vol-1/k8s.io/manifests/etcd")),
            "{effects:?}"
        );
        assert!(
            effects
                .iter()
                .any(|e| e.starts_with("write /etc/kubernetes/manifests/etcd")),
            "{effects:?}"
        );
        assert!(report.changes.iter().any(|c| c.action == Action::Create));
        // Rendered again: the same bytes, nothing written.
        let (report, result) = render(&bench);
        result.unwrap();
        assert!(bench.take_effects().is_empty());
        assert!(!report.changed, "{:?}", report.changes);
    }
}
