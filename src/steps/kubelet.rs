//! The kubelet step of kOps 1.12–1.18 (its protokube's `startKubeletService`, on every node):
//! nodeup leaves kubelet stopped on control-plane nodes there ("allow protokube to start
//! kubelet"), so that it comes up once volumes and names are in place. Where kubelet is not
//! running it is started (`systemctl start --no-block kubelet`, in the host's namespaces from
//! kOps' container): after the etcd volumes are mounted where protokube manages etcd, else
//! first in the run.

use anyhow::Result;

use crate::host::Services;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;

/// The host's kubelet unit.
pub(crate) const KUBELET: &str = "kubelet";

/// When kubelet is started where kOps left it to protokube (every node of kOps 1.12–1.18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KubeletStart {
    /// Not protokube's to start (kOps 1.19 and later: nodeup starts it).
    Never,
    /// First in the run, whatever its cloud and DNS steps then do (workers, and masters whose
    /// etcd is not protokube's).
    First,
    /// Once the etcd volumes are mounted, where protokube manages etcd (`--manage-etcd=true` on
    /// a master): kOps' order, "so that when kubelet comes up the first time, all volume mounts
    /// and DNS are available". A run whose attach or mount fails leaves it for a later run, so
    /// that etcd and the API server never start without their data and fall into backoff.
    AfterMount,
}

impl KubeletStart {
    /// The rule for this run's settings.
    pub(crate) fn of(settings: &Settings) -> Self {
        if !settings.kops.starts_kubelet() {
            Self::Never
        } else if settings.master && settings.etcd_declined.is_none() {
            Self::AfterMount
        } else {
            Self::First
        }
    }
}

/// Starts kubelet first in the run where that is its place ([`KubeletStart::First`]);
/// `start` is the rule decided once, from the settings the run was started with.
pub(crate) async fn first(
    start: KubeletStart,
    settings: &Settings,
    host: &dyn Services,
    report: &mut Report,
) -> Result<()> {
    if start == KubeletStart::First {
        run(settings, host, report).await
    } else {
        Ok(())
    }
}

/// Starts kubelet once the etcd volumes are mounted where that is its place
/// ([`KubeletStart::AfterMount`]); the caller calls it only after a mount that succeeded.
pub(crate) async fn after_mount(
    start: KubeletStart,
    settings: &Settings,
    host: &dyn Services,
    report: &mut Report,
) -> Result<()> {
    if start == KubeletStart::AfterMount {
        run(settings, host, report).await
    } else {
        Ok(())
    }
}

pub(crate) async fn run(
    settings: &Settings,
    host: &dyn Services,
    report: &mut Report,
) -> Result<()> {
    let deadline = settings.deadline;
    let running = host
        .service_active(&settings.root, KUBELET, deadline)
        .await?;
    if running {
        report.push(Change {
            kind: ChangeKind::Service,
            target: KUBELET.to_owned(),
            action: Action::Unchanged,
            detail: "running".to_owned(),
        });
        return Ok(());
    }
    if !settings.dry_run {
        tracing::info!(
            "kubelet is not running: starting it, as kOps' protokube did on this version"
        );
        host.start_service(&settings.root, KUBELET, deadline)
            .await?;
    }
    report.push(Change {
        kind: ChangeKind::Service,
        target: KUBELET.to_owned(),
        action: Action::Start,
        detail: "not running (nodeup leaves it to protokube on kOps 1.12–1.18)".to_owned(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::kops::KopsUnit;
    use crate::steps::testing::Bench;

    /// A master of kOps 1.12–1.18 (its Debian image's unit) whose kubelet is `running`.
    fn debian_image_master(running: bool) -> Bench {
        let mut bench = Bench::master(&[]);
        bench.settings.kops = KopsUnit::DebianImage;
        bench.host.change(|node| {
            node.services.insert(KUBELET.to_owned(), running);
        });
        bench
    }

    fn actions(report: &Report) -> Vec<(String, Action)> {
        report
            .changes
            .iter()
            .map(|change| (change.target.clone(), change.action))
            .collect()
    }

    #[test]
    fn the_rule_follows_the_version_the_role_and_who_manages_etcd() {
        let mut bench = Bench::master(&[]);
        assert_eq!(KubeletStart::of(&bench.settings), KubeletStart::Never);
        bench.settings.kops = KopsUnit::DistrolessImage;
        assert_eq!(KubeletStart::of(&bench.settings), KubeletStart::Never);
        bench.settings.kops = KopsUnit::DebianImage;
        assert_eq!(KubeletStart::of(&bench.settings), KubeletStart::AfterMount);
        bench.settings.etcd_declined = Some(crate::plan::etcd_owner::Declined::ManageEtcdFalse);
        assert_eq!(KubeletStart::of(&bench.settings), KubeletStart::First);
        bench.settings.etcd_declined = None;
        bench.settings.master = false;
        assert_eq!(KubeletStart::of(&bench.settings), KubeletStart::First);
    }

    #[test]
    fn a_stopped_kubelet_is_started_once_in_its_place() {
        let bench = debian_image_master(false);
        let start = KubeletStart::of(&bench.settings);
        let mut report = bench.report();
        Bench::block_on(first(start, &bench.settings, &bench.host, &mut report))
            .expect("nothing to do first on a master managing etcd");
        assert!(bench.take_effects().is_empty());
        Bench::block_on(after_mount(
            start,
            &bench.settings,
            &bench.host,
            &mut report,
        ))
        .expect("kubelet started");
        assert_eq!(bench.take_effects(), ["start kubelet"]);
        assert_eq!(actions(&report), [(KUBELET.to_owned(), Action::Start)]);
    }

    #[test]
    fn a_running_kubelet_is_left_alone_and_said_unchanged() {
        let bench = debian_image_master(true);
        let mut report = bench.report();
        Bench::block_on(run(&bench.settings, &bench.host, &mut report)).expect("asked");
        assert!(bench.take_effects().is_empty());
        assert_eq!(actions(&report), [(KUBELET.to_owned(), Action::Unchanged)]);
    }

    #[test]
    fn a_dry_run_reports_the_start_it_would_make_and_starts_nothing() {
        let mut bench = debian_image_master(false);
        bench.dry_run();
        let mut report = bench.report();
        Bench::block_on(run(&bench.settings, &bench.host, &mut report)).expect("planned");
        assert!(bench.take_effects().is_empty());
        assert_eq!(actions(&report), [(KUBELET.to_owned(), Action::Start)]);
        assert!(!bench.host.node().services[KUBELET]);
    }

    #[test]
    fn a_version_whose_nodeup_starts_kubelet_never_touches_it() {
        let mut bench = debian_image_master(false);
        bench.settings.kops = KopsUnit::Current;
        let start = KubeletStart::of(&bench.settings);
        let mut report = bench.report();
        Bench::block_on(first(start, &bench.settings, &bench.host, &mut report)).expect("first");
        Bench::block_on(after_mount(
            start,
            &bench.settings,
            &bench.host,
            &mut report,
        ))
        .expect("after mount");
        assert!(bench.take_effects().is_empty());
        assert!(report.changes.is_empty());
    }
}
