//! The render step: every static-pod manifest this node runs, rendered and validated (plan),
//! then written atomically where its bytes differ, with the etcd manifests on their volumes.

use std::collections::BTreeMap;

use anyhow::{anyhow, Context as _, Result};

use crate::apply::files;
use crate::paths::{on_volume, MANIFEST_DIR, ON_VOLUME_MANIFEST_DIR};
use crate::plan::manifests::{plan_writes, render_all, Layout, Placement, RenderInputs};
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::Snapshot;

pub async fn run(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    report: &mut Report,
) -> Result<()> {
    let spec = settings.spec.as_ref().ok_or_else(|| {
        anyhow!("render-manifests needs the cluster spec: pass --cluster-spec FILE")
    })?;
    let cluster = snapshot.cluster().await?;
    let mounted = if settings.master {
        snapshot.mounted()?
    } else {
        Vec::new()
    };
    let inputs = RenderInputs {
        cluster_name: &cluster.name,
        internal_suffix: &cluster.internal_suffix,
        master: settings.master,
        spec: &spec.spec,
        mounted: &mounted,
        etcd: &settings.etcd,
    };
    let mut warnings = Vec::new();
    let manifests = render_all(&settings.templates, &inputs, &mut warnings)?;
    for warning in warnings {
        report.warn(warning);
    }
    let root = &settings.root;
    let mut layout = Layout {
        root: root.clone(),
        manifest_dir: root.resolve(MANIFEST_DIR)?,
        log_dir: root.resolve("/var/log")?,
        volume_dirs: BTreeMap::new(),
    };
    // On a volume, nothing protokube writes or the pod uses may be a symlink: the volume's
    // contents must not send a write, or etcd's data, anywhere else.
    for manifest in &manifests {
        if let Placement::OnVolume {
            volume_id,
            data_dir,
            ..
        } = &manifest.placement
        {
            let mountpoint = root.volume_mountpoint(volume_id)?;
            let check = || -> Result<_> {
                on_volume(&mountpoint, data_dir)?;
                on_volume(&mountpoint, ON_VOLUME_MANIFEST_DIR)
            };
            let dir = check().with_context(|| format!("volume `{volume_id}`"))?;
            layout.volume_dirs.insert(volume_id.clone(), dir);
        }
    }
    // What is on disk now; a volume mounted only in this dry run's plan has nothing to read.
    let mut facts = BTreeMap::new();
    for manifest in &manifests {
        let paths = manifest.paths(&layout)?;
        let on_planned_volume = matches!(&manifest.placement,
            Placement::OnVolume { volume_id, .. } if snapshot.is_planned(volume_id));
        let mut read = vec![paths.log];
        if !on_planned_volume {
            read.push(paths.file);
        }
        read.extend(paths.link.map(|(link, _)| link));
        for path in read {
            let fact = files::read_fact(&path)?;
            facts.insert(path, fact);
        }
    }
    for change in plan_writes(&layout, &manifests, &facts)? {
        if !settings.dry_run {
            files::apply(&change)?;
        }
        report.push(change.change());
    }
    Ok(())
}
