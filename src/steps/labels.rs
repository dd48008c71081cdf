//! The label step: kOps' mandatory control-plane labels on this node's Node object, patched
//! through the Kubernetes API only when one is missing or different (kOps' protokube
//! `labeler.go`). A node not registered yet, or an API server that does not answer, is waited
//! for within `--timeout` (one look in the old daemon's loop, which comes back a minute later).

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;

use crate::error::NotReady;
use crate::host::Host;
use crate::kube::api::KubeNodes;
use crate::kube::NodeApi;
use crate::plan::labels::missing_labels;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;
use crate::wait::{poll_until, Backoff};

/// The Kubernetes API as `KUBECONFIG` reaches it, its files and credential plugin on `host`.
pub async fn connect(settings: &Settings, host: &dyn Host) -> Result<KubeNodes> {
    KubeNodes::connect(
        host,
        &settings.root,
        &settings.kubeconfig,
        settings.waits.deadline,
    )
    .await
}

pub async fn run(
    settings: &Settings,
    nodes: &dyn NodeApi,
    node: &str,
    report: &mut Report,
) -> Result<()> {
    let timeout = if settings.legacy {
        Duration::ZERO
    } else {
        settings.waits.remaining()
    };
    let last_reason = Mutex::new(format!("node `{node}` to be registered"));
    let current = poll_until(
        &format!("node `{node}` in the Kubernetes API"),
        timeout,
        settings.waits.progress,
        Backoff::new(Duration::from_millis(500), Duration::from_secs(5)),
        || async {
            match nodes.node_labels(node).await {
                Ok(Some(labels)) => Ok(Some(labels)),
                Ok(None) => {
                    set(&last_reason, format!("node `{node}` is not registered yet"));
                    Ok(None)
                }
                Err(err)
                    if err
                        .chain()
                        .any(<dyn std::error::Error + 'static>::is::<NotReady>) =>
                {
                    set(&last_reason, format!("{err:#}"));
                    Ok(None)
                }
                Err(err) => Err(err),
            }
        },
    )
    .await
    .map_err(|err| match err.downcast_ref::<NotReady>() {
        Some(_) => NotReady(format!(
            "{}; kOps' control-plane labels are given once it answers (retry later)",
            last_reason.lock().map(|r| r.clone()).unwrap_or_default()
        ))
        .into(),
        None => err,
    })?;
    let missing = missing_labels(&current);
    if missing.is_empty() {
        report.push(Change {
            kind: ChangeKind::Node,
            target: node.to_owned(),
            action: Action::Unchanged,
            detail: "kOps' control-plane labels in place".to_owned(),
        });
        return Ok(());
    }
    if !settings.dry_run {
        nodes.patch_labels(node, &missing).await?;
    }
    report.push(Change {
        kind: ChangeKind::Node,
        target: node.to_owned(),
        action: Action::Update,
        detail: format!(
            "labels {} (strategic merge patch)",
            missing.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    });
    Ok(())
}

fn set(reason: &Mutex<String>, text: String) {
    if let Ok(mut reason) = reason.lock() {
        *reason = text;
    }
}
