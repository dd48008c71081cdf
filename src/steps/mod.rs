//! The steps a command is made of. Each plans its changes from the settings and the snapshot
//! (pure functions in `plan/`), reports them, and — unless `--dry-run` — makes them through the
//! seams (the node's `host`, the `cloud`, through `apply/` where an effect has steps of its own),
//! then updates the snapshot for the steps after it.

pub(crate) mod api_wait;
pub(crate) mod channels;
pub(crate) mod claim;
pub(crate) mod discover;
pub(crate) mod kubelet;
pub(crate) mod kubernetes;
pub(crate) mod labels;
pub(crate) mod mount;
pub(crate) mod node_role;
pub(crate) mod publish;
pub(crate) mod rbac;
pub(crate) mod render;
pub(crate) mod reset;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod verify;

use anyhow::{Context as _, Result};

use crate::cloud::tags;
use crate::host::{Files, RunLock};
use crate::paths::STATE_FILE;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::state::State;

/// The run lock for a mutating command; none with `--dry-run`, which changes nothing.
pub(crate) fn lock(settings: &Settings, files: &dyn Files) -> Result<Option<RunLock>> {
    if settings.dry_run {
        Ok(None)
    } else {
        files.lock(&settings.root, settings.deadline).map(Some)
    }
}

/// Decides, once per run, who owns etcd on this master (kOps' etcd-manager where its pods
/// are in the manifest directory, else protokube) and, where etcd-manager does, says so in the
/// report's `info` (the normal state of a kOps master: nothing to act on); whether protokube
/// owns etcd here. Not a master, or an owner that cannot be told (a
/// manifest that cannot be read, [`etcd_owner_unknown`] ends the run with it): nothing of etcd
/// is protokube's.
pub(crate) fn announce_etcd_owner(
    snapshot: &mut Snapshot<'_>,
    report: &mut Report,
) -> Result<bool> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if !settings.master {
        return Ok(false);
    }
    let owner = snapshot.etcd_owner()?;
    if owner.is_protokube() {
        return Ok(true);
    }
    if let Some(notice) = owner.notice() {
        report.note(notice);
    }
    snapshot.leave_volumes();
    Ok(false)
}

/// The error that ends a master's run whose etcd steps stood aside because a static-pod
/// manifest could not be read (exit 1, naming it): the rest of the run was done.
pub(crate) fn etcd_owner_unknown(snapshot: &mut Snapshot<'_>) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if !settings.master {
        return Ok(());
    }
    match snapshot.etcd_owner()?.unknown() {
        Some(why) => Err(anyhow::anyhow!(why)),
        None => Ok(()),
    }
}

/// `--master` is not set, yet this node looks like a master: the state file records etcd volumes
/// mounted here (a master whose flag was lost), or this instance is one of the cluster's running
/// masters — known from the masters answer the run fetched anyway, or, when `ask`, from one
/// `DescribeInstances` (skipped when this node cannot ask the cloud). Warned, naming the flag, and marked for exit 3 with
/// `--detailed-exitcode`.
pub(crate) async fn check_master_flag(
    snapshot: &mut Snapshot<'_>,
    ask: bool,
    report: &mut Report,
) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
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

/// Writes the state file atomically, when its bytes change (bookkeeping: never reported), and
/// makes `state` what the rest of the run reads.
pub(crate) fn save_state(snapshot: &mut Snapshot<'_>, state: State) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let path = settings.root.own(STATE_FILE)?;
    let files = snapshot.host();
    let current = files.fact(&path)?;
    let text = String::from_utf8(state.to_bytes()?).context("serializing the state")?;
    let change = crate::plan::files::plan_file(&path, &current, &text, 0o644);
    if change.action != crate::report::Action::Unchanged {
        files.apply(&change).context("writing the state file")?;
    }
    snapshot.record_state(state);
    Ok(())
}

/// Runs `body` on the run's snapshot, then notes in the report how many etcd volumes the state
/// file records mounted here, as the run leaves it (failed runs too): read through the
/// snapshot, the state file's one reader, which already holds it when a step read or wrote it.
pub(crate) async fn noting_mounted<'a>(
    snapshot: &mut Snapshot<'a>,
    report: &mut Report,
    body: impl AsyncFnOnce(&mut Snapshot<'a>, &mut Report) -> Result<()>,
) -> Result<()> {
    let result = body(snapshot, report).await;
    report.volumes_mounted = snapshot.state().ok().map(|state| state.volumes.len());
    result
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
            // A volume id as clouds make them: lowercase letters, digits and `-`.
            let is_volume_id = !id.is_empty()
                && id.len() <= 63
                && id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            let ours = settings.root.volume_mountpoint(id).ok()? == path;
            (is_volume_id && ours).then(|| id.to_owned())
        })
        .collect()
}

/// The first error of several outcomes (the run's error line); the other errors are logged.
pub(crate) fn first_error(outcomes: impl IntoIterator<Item = Result<()>>) -> Result<()> {
    let mut errors = outcomes.into_iter().filter_map(Result::err);
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
            Vol::new("vol-here", "events", "a").attached_to(INSTANCE, "/dev/vdb"),
        ]);
        bench.device("/dev/vdb", 1, crate::host::memory::Content::Zeros);
        // Whatever the file is called, its content says whose it is.
        bench.file("/etc/kubernetes/manifests/main.yaml", ETCD_MANAGER_POD);
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        let owns_etcd = announce_etcd_owner(&mut snapshot, &mut report).unwrap();
        assert!(!owns_etcd);
        // The normal state of a kOps master: a fact, not a warning.
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        assert_eq!(report.info.len(), 1, "{:?}", report.info);
        assert!(report.info[0].contains("main.yaml"), "{:?}", report.info);
        Bench::block_on(async {
            let claimed = claim::run(&mut snapshot, &mut report).await?;
            mount::run(&mut snapshot, &mut report).await?;
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
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }

    /// How a test prepares the node.
    type Prepare = Box<dyn Fn(&Bench)>;

    /// kOps' real etcd-manager pod.
    const KOPS_POD: &str =
        include_str!("../../tests/fixtures/kops/etcd-manager/etcd-main-master-us-test-1a.manifest");

    /// A master with a free volume and one attached here, `prepare`d; whether protokube owns
    /// etcd, the report, and whether the run's etcd part touched the cloud or the node.
    fn etcd_part(prepare: impl FnOnce(&Bench)) -> (bool, Report, bool, anyhow::Result<()>) {
        let bench = Bench::master(&[
            Vol::new("vol-free", "main", "a"),
            Vol::new("vol-here", "events", "a").attached_to(INSTANCE, "/dev/vdb"),
        ]);
        bench.device("/dev/vdb", 1, crate::host::memory::Content::Zeros);
        bench.device("/dev/vdc", 2, crate::host::memory::Content::Zeros);
        prepare(&bench);
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        let owns_etcd = announce_etcd_owner(&mut snapshot, &mut report).unwrap();
        let result = Bench::block_on(async {
            if owns_etcd {
                let claimed = claim::run(&mut snapshot, &mut report).await?;
                mount::run(&mut snapshot, &mut report).await?;
                claimed.finish()?;
            }
            etcd_owner_unknown(&mut snapshot)
        });
        let touched = bench
            .cloud
            .world()
            .calls
            .iter()
            .any(|c| c.starts_with("DescribeVolumes") || c.starts_with("AttachVolume"))
            || !bench.take_effects().is_empty();
        (owns_etcd, report, touched, result)
    }

    #[test]
    fn etcd_manager_is_recognised_in_every_shape_kubelet_runs() {
        const DIR: &str = "/etc/kubernetes/manifests";
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(KOPS_POD.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let shapes: Vec<(&str, Prepare)> = vec![
            (
                "trailing ---",
                Box::new(|b| b.file(&format!("{DIR}/a.manifest"), &format!("{KOPS_POD}---\n"))),
            ),
            (
                "second document",
                Box::new(|b| {
                    b.file(
                        &format!("{DIR}/a.manifest"),
                        &format!("{KOPS_POD}---\nkind: ConfigMap\n"),
                    );
                }),
            ),
            (
                "UTF-8 byte-order mark",
                Box::new(|b| {
                    b.file_bytes(
                        &format!("{DIR}/a.manifest"),
                        &[&[0xEF, 0xBB, 0xBF][..], KOPS_POD.as_bytes()].concat(),
                    );
                }),
            ),
            (
                "UTF-16",
                Box::new(move |b| b.file_bytes(&format!("{DIR}/a.manifest"), &utf16)),
            ),
            (
                "duplicate key",
                Box::new(|b| {
                    b.file(
                        &format!("{DIR}/a.manifest"),
                        &KOPS_POD.replacen("kind: Pod", "kind: Pod\nkind: Pod", 1),
                    );
                }),
            ),
            (
                "absolute symlink, followed inside the root",
                Box::new(|b| {
                    b.file("/srv/etcd-manager/main.manifest", KOPS_POD);
                    b.symlink(
                        &format!("{DIR}/etcd-main.manifest"),
                        "/srv/etcd-manager/main.manifest",
                    );
                }),
            ),
        ];
        for (shape, prepare) in shapes {
            let (owns_etcd, report, touched, result) = etcd_part(|b| prepare(b));
            assert!(!owns_etcd, "{shape}");
            assert!(!touched, "{shape}: the etcd volumes were touched");
            result.unwrap();
            assert!(
                report
                    .info
                    .iter()
                    .any(|w| w.contains("etcd-manager runs on this node")),
                "{shape}: {:?}",
                report.info
            );
            assert!(report.warnings.is_empty(), "{shape}: {:?}", report.warnings);
        }
    }

    #[test]
    fn what_kubelet_does_not_run_leaves_etcd_to_protokube() {
        const DIR: &str = "/etc/kubernetes/manifests";
        let list = format!(
            "apiVersion: v1\nkind: List\nitems:\n- {}",
            KOPS_POD.replace('\n', "\n  ")
        );
        let shapes: Vec<(&str, Prepare)> = vec![
            (
                "a dot file",
                Box::new(|b| b.file(&format!("{DIR}/.etcd-main.manifest"), KOPS_POD)),
            ),
            (
                "a directory",
                Box::new(|b| b.file(&format!("{DIR}/sub/etcd-main.manifest"), KOPS_POD)),
            ),
            (
                "kind: List",
                Box::new(move |b| b.file(&format!("{DIR}/list.manifest"), &list)),
            ),
            (
                "protokube's own link to an unmounted volume",
                Box::new(|b| {
                    b.symlink(
                        &format!("{DIR}/etcd.manifest"),
                        "../../../mnt/master-vol-here/k8s.io/manifests/etcd.manifest",
                    );
                }),
            ),
            (
                "protokube's own pod, whose image is under a registry path named etcd-manager",
                Box::new(|b| {
                    let own = format!(
                        "{}\napiVersion: v1\nkind: Pod\nmetadata: {{name: etcd-server}}\nspec:\n  \
                         containers:\n  - image: registry.example.com/etcd-manager-mirror/etcd:3.5.13\n",
                        crate::plan::static_pods::MANIFEST_MARKER
                    );
                    b.file(&format!("{DIR}/etcd.manifest"), &own);
                }),
            ),
        ];
        for (shape, prepare) in shapes {
            let (owns_etcd, report, touched, result) = etcd_part(|b| prepare(b));
            assert!(owns_etcd, "{shape}");
            assert!(touched, "{shape}: protokube left its own volumes alone");
            result.unwrap();
            assert!(report.warnings.is_empty(), "{shape}: {:?}", report.warnings);
        }
    }

    #[test]
    fn a_manifest_that_cannot_be_read_stops_the_etcd_steps_naming_it() {
        const DIR: &str = "/etc/kubernetes/manifests";
        let shapes: Vec<(&str, Prepare)> = vec![
            (
                "a.manifest",
                Box::new(|b| b.file_bytes(&format!("{DIR}/a.manifest"), &[0xC3, 0x28, 0x00])),
            ),
            (
                "b.manifest",
                Box::new(|b| b.file(&format!("{DIR}/b.manifest"), "kind: Pod\nspec: [unclosed\n")),
            ),
            (
                "c.manifest",
                Box::new(|b| b.symlink(&format!("{DIR}/c.manifest"), "/srv/gone.manifest")),
            ),
        ];
        for (file, prepare) in shapes {
            let (owns_etcd, report, touched, result) = etcd_part(|b| prepare(b));
            assert!(!owns_etcd, "{file}");
            assert!(!touched, "{file}: the etcd volumes were touched");
            let err = result.unwrap_err();
            assert_eq!(
                crate::error::ExitCode::for_error(&err),
                crate::error::ExitCode::Failed
            );
            let message = format!("{err:#}");
            assert!(message.contains(&format!("{DIR}/{file}`")), "{message}");
            assert!(message.contains("nothing for etcd"), "{message}");
            assert!(report.warnings.is_empty(), "{file}: {:?}", report.warnings);
        }
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
        assert!(announce_etcd_owner(&mut snapshot, &mut report).unwrap());
        assert!(report.warnings.is_empty());
    }
}
