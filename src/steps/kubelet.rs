//! The kubelet step of kOps 1.12–1.18 (its protokube's `startKubeletService`): nodeup leaves
//! kubelet stopped on control-plane nodes there ("allow protokube to start kubelet"), so that
//! it comes up once volumes and names are in place. Where kubelet is not running it is started
//! (`systemctl start --no-block kubelet`, in the host's namespaces from kOps' container).

use anyhow::Result;

use crate::host::Services;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;

/// The host's kubelet unit.
pub const KUBELET: &str = "kubelet";

/// Starts kubelet where kOps left it to protokube (a control-plane node of kOps 1.12–1.18):
/// `sync` does this first, whatever its cloud and DNS steps then do.
pub async fn first(settings: &Settings, host: &dyn Services, report: &mut Report) -> Result<()> {
    if settings.master && settings.kops.starts_kubelet() {
        run(settings, host, report).await
    } else {
        Ok(())
    }
}

pub async fn run(settings: &Settings, host: &dyn Services, report: &mut Report) -> Result<()> {
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
