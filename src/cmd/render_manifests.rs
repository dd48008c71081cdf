//! `render-manifests`: write the static-pod manifests this node runs, from the cluster spec's
//! componentconfig values and the etcd volumes `mount` recorded, through the Tera templates.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};

use crate::blockdev;
use crate::context::Context;
use crate::fsutil::{remove_stale_temps, write_atomic, HostRoot};
use crate::manifests::etcd::EtcdOptions;
use crate::manifests::render::load_templates;
use crate::manifests::{render_all, Manifest, Placement, RenderInputs};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::state::State;

/// Host directory kubelet reads static pods from.
pub const MANIFEST_DIR: &str = "/etc/kubernetes/manifests";

/// Write the static-pod manifests: etcd per mounted member and the control plane on masters,
/// kube-proxy on every node.
///
/// Flags come from the cluster spec's componentconfig sections by kOps' rules; every value is
/// quoted into YAML and each manifest is checked to be a valid v1 Pod before anything is written.
/// Files are replaced atomically and only when their bytes change. An etcd manifest lives on its
/// volume (<mount>/k8s.io/manifests/) with a symlink in /etc/kubernetes/manifests.
#[derive(Clone, Debug, Default, clap::Args)]
#[group(skip)]
pub struct Args {
    #[command(flatten)]
    pub etcd: EtcdOptions,
}

pub async fn run(ctx: &Context, args: &Args) -> Result<Report> {
    let mut report = Report::new("render-manifests", ctx.global.dry_run);
    let _lock = ctx.lock()?;
    render_and_write(ctx, args, &mut report)?;
    Ok(report)
}

/// Renders every manifest this node gets and writes them. The caller holds the lock.
pub fn render_and_write(ctx: &Context, args: &Args, report: &mut Report) -> Result<()> {
    let spec = ctx.spec.as_ref().ok_or_else(|| {
        anyhow!("render-manifests needs the cluster spec: pass --cluster-spec FILE")
    })?;
    let cluster_name = ctx.offline_cluster_name()?;
    let state = if ctx.global.master {
        State::load(&ctx.root)?.unwrap_or_default()
    } else {
        State::default()
    };
    let tera = load_templates(ctx.global.templates.as_deref())?;
    let internal_suffix = ctx.internal_suffix(&cluster_name)?;
    let inputs = RenderInputs {
        cluster_name: &cluster_name,
        internal_suffix: &internal_suffix,
        master: ctx.global.master,
        spec: &spec.spec,
        mounted: &state.volumes,
        etcd: &args.etcd,
    };
    let mut warnings = Vec::new();
    let manifests = render_all(&tera, &inputs, &mut warnings)?;
    for warning in warnings {
        report.warn(warning);
    }
    write_manifests(&ctx.root, &manifests, ctx.global.dry_run, report)
}

/// Writes every manifest (after all rendered and validated), the etcd symlinks and missing log
/// files. With `dry_run`, reports what would change, with a unified diff for updates.
pub fn write_manifests(
    root: &HostRoot,
    manifests: &[Manifest],
    dry_run: bool,
    report: &mut Report,
) -> Result<()> {
    let mounts = blockdev::mount_table()?;
    // Check every volume first, so a missing mount writes nothing at all.
    for manifest in manifests {
        if let Placement::OnVolume {
            volume_id,
            mountpoint,
        } = &manifest.placement
        {
            let path = root.path(mountpoint);
            if !dry_run && blockdev::mounted_at(&mounts, &path).is_none() {
                bail!(
                    "volume `{volume_id}` is not mounted at `{}`; run `protokube mount` first (its \
                     etcd manifest lives on the volume)",
                    path.display()
                );
            }
        }
    }
    for manifest in manifests {
        let file_name = format!("{}.manifest", manifest.name);
        let static_host_path = Path::new(MANIFEST_DIR).join(&file_name);
        match &manifest.placement {
            Placement::Static => {
                write_file(root, &static_host_path, &manifest.contents, dry_run, report)?;
            }
            Placement::OnVolume { mountpoint, .. } => {
                let on_volume = Path::new(mountpoint)
                    .join("k8s.io/manifests")
                    .join(&file_name);
                write_file(root, &on_volume, &manifest.contents, dry_run, report)?;
                link(root, &static_host_path, &on_volume, dry_run, report)?;
            }
        }
        create_log_file(
            root,
            &manifest.log_file.0,
            manifest.log_file.1,
            dry_run,
            report,
        )?;
    }
    Ok(())
}

fn write_file(
    root: &HostRoot,
    host_path: &Path,
    contents: &str,
    dry_run: bool,
    report: &mut Report,
) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = root.path(host_path);
    let current = match fs_err::read(&path) {
        Ok(bytes) => {
            let mode = fs_err::metadata(&path)?.permissions().mode() & 0o7777;
            Some((bytes, mode))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err.into()),
    };
    let (action, detail) = match &current {
        None => (
            Action::Create,
            format!("{} lines", contents.lines().count()),
        ),
        Some((old, 0o644)) if old == contents.as_bytes() => (Action::Unchanged, String::new()),
        Some((old, mode)) if old == contents.as_bytes() => {
            (Action::Update, format!("mode {mode:04o} -> 0644"))
        }
        Some((old, _)) => (
            Action::Update,
            similar::TextDiff::from_lines(String::from_utf8_lossy(old).as_ref(), contents)
                .unified_diff()
                .context_radius(2)
                .header("current", "rendered")
                .to_string(),
        ),
    };
    if !dry_run && action != Action::Unchanged {
        write_atomic(&path, contents.as_bytes(), 0o644)?;
    }
    report.push(Change {
        kind: ChangeKind::File,
        target: path.display().to_string(),
        action,
        detail,
    });
    Ok(())
}

/// The relative symlink target from `link_host_path` to `target_host_path`, so the link resolves
/// the same on the host and under `--root`.
pub fn relative_target(link_host_path: &Path, target_host_path: &Path) -> PathBuf {
    let link_dir: Vec<_> = link_host_path
        .parent()
        .map(|p| p.components().skip(1).collect())
        .unwrap_or_default();
    let target: Vec<_> = target_host_path.components().skip(1).collect();
    let common = link_dir
        .iter()
        .zip(&target)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in common..link_dir.len() {
        out.push("..");
    }
    for part in &target[common..] {
        out.push(part);
    }
    out
}

fn link(
    root: &HostRoot,
    link_host_path: &Path,
    target_host_path: &Path,
    dry_run: bool,
    report: &mut Report,
) -> Result<()> {
    let link_path = root.path(link_host_path);
    let target = relative_target(link_host_path, target_host_path);
    let current = fs_err::symlink_metadata(&link_path).ok();
    let action = match &current {
        Some(meta) if meta.file_type().is_symlink() => {
            if fs_err::read_link(&link_path)? == target {
                Action::Unchanged
            } else {
                Action::Update
            }
        }
        Some(_) => Action::Update,
        None => Action::Create,
    };
    if !dry_run && action != Action::Unchanged {
        let dir = link_path
            .parent()
            .ok_or_else(|| anyhow!("`{}` has no parent", link_path.display()))?;
        fs_err::create_dir_all(dir)?;
        let name = link_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        remove_stale_temps(dir, &name);
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&target, &temp)
            .with_context(|| format!("creating symlink `{}`", temp.display()))?;
        fs_err::rename(&temp, &link_path)?;
        fs_err::File::open(dir)?.sync_all()?;
    }
    report.push(Change {
        kind: ChangeKind::File,
        target: link_path.display().to_string(),
        action,
        detail: if action == Action::Unchanged {
            String::new()
        } else {
            format!("symlink to {}", target.display())
        },
    });
    Ok(())
}

/// Creates a log file the pod mounts if it is missing (a missing hostPath would become a
/// directory); an existing one is never truncated.
fn create_log_file(
    root: &HostRoot,
    host_path: &str,
    mode: u32,
    dry_run: bool,
    report: &mut Report,
) -> Result<()> {
    let path = root.path(host_path);
    if fs_err::symlink_metadata(&path).is_ok() {
        return Ok(());
    }
    if !dry_run {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        match fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
        {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
            Err(err) => return Err(err).context("creating a log file"),
        }
    }
    report.push(Change {
        kind: ChangeKind::File,
        target: path.display().to_string(),
        action: Action::Create,
        detail: "empty log file".into(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_targets_are_relative() {
        assert_eq!(
            relative_target(
                Path::new("/etc/kubernetes/manifests/etcd.manifest"),
                Path::new("/mnt/master-vol-1/k8s.io/manifests/etcd.manifest")
            ),
            Path::new("../../../mnt/master-vol-1/k8s.io/manifests/etcd.manifest")
        );
        assert_eq!(
            relative_target(Path::new("/a/b/link"), Path::new("/a/c/file")),
            Path::new("../c/file")
        );
    }
}
