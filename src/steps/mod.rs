//! The steps a command is made of. Each plans its changes from the settings and the snapshot
//! (pure functions in `plan/`), reports them, and — unless `--dry-run` — makes them through the
//! seams (the node's `host`, the `cloud`, through `apply/` where an effect has steps of its own),
//! then updates the snapshot for the steps after it.

pub mod channels;
pub mod claim;
pub mod discover;
pub mod dns_target;
pub mod labels;
pub mod mount;
pub mod node_role;
pub mod publish;
pub mod render;
pub mod reset;
#[cfg(test)]
mod testing;
pub mod verify;

use anyhow::{Context as _, Result};

use crate::cloud::tags;
use crate::host::{Files, RunLock};
use crate::paths::STATE_FILE;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::state::State;

/// The run lock for a mutating command; none with `--dry-run`, which changes nothing.
pub fn lock(settings: &Settings, files: &dyn Files) -> Result<Option<RunLock>> {
    if settings.dry_run {
        Ok(None)
    } else {
        files.lock(&settings.root, settings.waits.timeout).map(Some)
    }
}

/// Decides, once per run, who owns etcd on this master (kOps' etcd-manager where its pods are
/// in the manifest directory, else protokube) and says so in the report where etcd-manager
/// does; whether protokube owns etcd here. Not a master: nothing of etcd is protokube's.
pub fn announce_etcd_owner(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    report: &mut Report,
) -> Result<bool> {
    if !settings.master {
        return Ok(false);
    }
    let owner = snapshot.etcd_owner()?;
    let Some(notice) = owner.notice() else {
        return Ok(true);
    };
    report.warn(notice);
    snapshot.leave_volumes();
    Ok(false)
}

/// `--master` is not set, yet this node looks like a master: the state file records etcd volumes
/// mounted here (a master whose flag was lost), or this instance is one of the cluster's running
/// masters — known from the masters answer the run fetched anyway, or, when `ask`, from one
/// `DescribeInstances` (skipped when this node cannot ask the cloud). Warned, naming the flag, and marked for exit 3 with
/// `--detailed-exitcode`.
pub async fn check_master_flag(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    ask: bool,
    report: &mut Report,
) -> Result<()> {
    if settings.master {
        return Ok(());
    }
    let state_file = settings.root.own(STATE_FILE)?;
    let mounted = snapshot.state()?.volumes.len();
    let why = if mounted > 0 {
        Some(format!(
            "this node has {mounted} etcd volume(s) mounted (`{}`)",
            state_file.display()
        ))
    } else {
        let masters = match snapshot.masters_known() {
            Some(masters) => Some(masters.to_vec()),
            // Best effort: a worker may have no cloud access at all.
            None if ask => match snapshot.masters().await {
                Ok(masters) => Some(masters),
                Err(err) => {
                    tracing::debug!("not asking whether this is a master: {err:#}");
                    None
                }
            },
            None => None,
        };
        match masters {
            Some(masters) => {
                let id = snapshot.identity().await?.instance_id.clone();
                let cluster = snapshot.cluster().await?.name;
                masters.iter().any(|m| m.id == id).then(|| {
                    format!(
                        "this instance `{id}` carries kOps' master tags (`{}` or `{}`) of \
                         cluster `{cluster}`",
                        tags::MASTER_ROLE,
                        tags::CONTROL_PLANE_ROLE
                    )
                })
            }
            None => None,
        }
    };
    if let Some(why) = why {
        report.warn(format!(
            "{why} but --master is not set: no etcd volume, etcd or control-plane pod or API name \
             is handled here; set --master (PROTOKUBE_MASTER=true, or nodeup's --master=true)"
        ));
        report.master_flag_missing = true;
    }
    Ok(())
}

/// The steps that talk to the Kubernetes API on a control-plane node, when their flags are
/// given (kOps' protokube did them every minute up to kOps 1.35): the labels, then the addon
/// channels. In the old daemon's loop an API that is not ready yet is a warning: the next
/// minute tries again.
pub async fn kubernetes_api(settings: &Settings, report: &mut Report) -> Result<()> {
    let mut outcome = Ok(());
    if let Some(node) = settings.node_to_label() {
        let labelled = match labels::connect(settings).await {
            Ok(nodes) => labels::run(settings, &nodes, node, report).await,
            Err(err) => Err(err),
        };
        outcome = outcome.and(not_ready_warned_in_legacy(settings, labelled, report));
    }
    if !settings.channels.is_empty() {
        let applied = channels::run(settings, report).await;
        outcome = outcome.and(not_ready_warned_in_legacy(settings, applied, report));
    }
    outcome
}

/// In the old daemon's loop, "not ready yet" is a warning (the next minute tries again).
fn not_ready_warned_in_legacy(
    settings: &Settings,
    result: Result<()>,
    report: &mut Report,
) -> Result<()> {
    match result {
        Err(err)
            if settings.legacy
                && err
                    .chain()
                    .any(<dyn std::error::Error + 'static>::is::<crate::error::NotReady>) =>
        {
            report.warn(format!("{err:#}; the next run tries again"));
            Ok(())
        }
        other => other,
    }
}

/// Writes the state file atomically, when its bytes change (bookkeeping: never reported).
pub fn save_state(settings: &Settings, files: &dyn Files, state: &State) -> Result<()> {
    let path = settings.root.own(STATE_FILE)?;
    let current = files.fact(&path)?;
    let text = String::from_utf8(state.to_bytes()?).context("serializing the state")?;
    let change = crate::plan::files::plan_file(&path, &current, &text, 0o644);
    if change.action != crate::report::Action::Unchanged {
        files.apply(&change).context("writing the state file")?;
    }
    Ok(())
}

/// The volumes mounted at protokube's own mount points (`<root>/mnt/master-<volume id>`), from
/// the mount table: what this node has mounted, whatever any record says.
pub(crate) fn own_mounted_volumes(
    settings: &Settings,
    table: &[crate::plan::mounts::MountEntry],
) -> std::collections::BTreeSet<String> {
    table
        .iter()
        .filter_map(|entry| {
            let path = std::path::Path::new(&entry.mountpoint);
            let id = path.file_name()?.to_str()?.strip_prefix("master-")?;
            let is_volume_id = id
                .strip_prefix("vol-")
                .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()));
            let ours = settings.root.volume_mountpoint(id).ok()? == path;
            (is_volume_id && ours).then(|| id.to_owned())
        })
        .collect()
}

/// The first of several errors (the run's error line); the others are logged.
fn first_error(errors: Vec<anyhow::Error>) -> Result<()> {
    let mut errors = errors.into_iter();
    match errors.next() {
        Some(first) => {
            for other in errors {
                tracing::error!("{other:#}");
            }
            Err(first)
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{Bench, Vol, INSTANCE};

    const ETCD_MANAGER_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \
                                    etcd-manager-main\n  namespace: kube-system\nspec:\n  \
                                    containers:\n  - name: etcd-manager\n    image: \
                                    registry.k8s.io/etcdadm/etcd-manager-slim:v3.0.20240617\n";

    #[test]
    fn beside_etcd_manager_no_volume_is_listed_claimed_or_mounted() {
        let bench = Bench::master(&[
            Vol::new("vol-free", "main", "a"),
            Vol::new("vol-here", "events", "a").attached_to(INSTANCE, "/dev/xvdu"),
        ]);
        bench.device("/dev/xvdu", 1, crate::host::memory::Content::Zeros);
        // Whatever the file is called, its content says whose it is.
        bench.file("/etc/kubernetes/manifests/main.yaml", ETCD_MANAGER_POD);
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        let owns_etcd = announce_etcd_owner(&bench.settings, &mut snapshot, &mut report).unwrap();
        assert!(!owns_etcd);
        assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
        assert!(
            report.warnings[0].contains("main.yaml"),
            "{:?}",
            report.warnings
        );
        Bench::block_on(async {
            let claimed = claim::run(&bench.settings, &mut snapshot, &mut report).await?;
            mount::run(&bench.settings, &mut snapshot, &mut report).await?;
            claimed.finish()
        })
        .unwrap();
        // The cloud was not even asked for the volumes; the node was not touched.
        assert!(!bench
            .cloud
            .world()
            .calls
            .iter()
            .any(|c| c.starts_with("DescribeVolumes") || c.starts_with("AttachVolume")));
        assert!(bench.take_effects().is_empty());
        assert_eq!(report.warnings.len(), 1);
    }

    #[test]
    fn without_etcd_manager_protokube_owns_etcd() {
        let bench = Bench::master(&[]);
        bench.file(
            "/etc/kubernetes/manifests/kube-proxy.manifest",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-proxy\n",
        );
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        assert!(announce_etcd_owner(&bench.settings, &mut snapshot, &mut report).unwrap());
        assert!(report.warnings.is_empty());
    }
}
