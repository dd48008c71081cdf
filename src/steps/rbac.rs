//! The RBAC step of kOps ≤ 1.22 (`--initialize-rbac=true`, kOps' protokube `rbac.go`): on a
//! control-plane node the `kube-dns` and `kube-proxy` ServiceAccounts and the
//! `kubeadm:node-proxier` ClusterRoleBinding exist — created when missing, never duplicated,
//! an existing one left as it is (kOps updated the binding; its content is kOps' own anyway).

use anyhow::Result;

use crate::kube::KubernetesApi;
use crate::plan::kops::BOOTSTRAP_RBAC;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;

pub(crate) async fn run(
    settings: &Settings,
    api: &dyn KubernetesApi,
    report: &mut Report,
) -> Result<()> {
    for object in &BOOTSTRAP_RBAC {
        let target = object.describe();
        let (action, detail) = if api.exists(object).await? {
            (Action::Unchanged, "exists (left as it is)")
        } else if settings.dry_run || api.create(object).await? {
            (Action::Create, "kOps' bootstrap object (--initialize-rbac)")
        } else {
            (
                Action::Unchanged,
                "created meanwhile by someone else (left as it is)",
            )
        };
        report.push(Change {
            kind: ChangeKind::Rbac,
            target,
            action,
            detail: detail.to_owned(),
        });
    }
    Ok(())
}
