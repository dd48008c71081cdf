//! The label step: the control-plane labels kOps' labeller of this node's version gave
//! (`protokube/pkg/protokube/labeler.go`), patched through the Kubernetes API only when one is
//! missing or different. The node is found by its name, else — as kOps 1.19–1.20 did — by its
//! `kubernetes.io/hostname` label. A node not registered yet, or an API server that does not
//! answer, is waited for within `--timeout` (in the old daemon's loop, up to the minute after
//! which the loop comes back).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::error::NotReady;
use crate::kube::KubernetesApi;
use crate::plan::kops::missing_labels;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;
use crate::steps::api_wait::{api_deadline, API_POLL};
use crate::wait::{poll_until, Backoff};

pub(crate) async fn run(
    settings: &Settings,
    api: &dyn KubernetesApi,
    node: &str,
    report: &mut Report,
) -> Result<()> {
    let until = api_deadline(settings);
    let last_reason = Mutex::new(format!("node `{node}` to be registered"));
    let (name, current) = poll_until(
        &format!("node `{node}` in the Kubernetes API"),
        until,
        settings.progress,
        Backoff::new(Duration::from_millis(500), API_POLL),
        || async {
            match find_node(settings, api, node).await {
                Ok(Some(found)) => Ok(Some(found)),
                Ok(None) => {
                    set(&last_reason, format!("node `{node}` is not registered yet"));
                    Ok(None)
                }
                Err(err)
                    if err
                        .chain()
                        .any(<dyn std::error::Error + 'static>::is::<NotReady>) =>
                {
                    set(&last_reason, crate::error::one_line(&err));
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
    let missing = missing_labels(settings.kops.control_plane_labels(), &current);
    if missing.is_empty() {
        report.push(Change {
            kind: ChangeKind::Node,
            target: name,
            action: Action::Unchanged,
            detail: "kOps' control-plane labels in place".to_owned(),
        });
        return Ok(());
    }
    if !settings.dry_run {
        api.patch_labels(&name, &missing).await?;
    }
    report.push(Change {
        kind: ChangeKind::Node,
        target: name,
        action: Action::Update,
        detail: format!(
            "labels {} (strategic merge patch)",
            missing.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    });
    Ok(())
}

/// The node named `node` and its labels; on kOps 1.19–1.20 (nodeup's `--node-name` is the
/// hostname, which may not be the Node's name) else the one node labelled
/// `kubernetes.io/hostname=<node>`.
async fn find_node(
    settings: &Settings,
    api: &dyn KubernetesApi,
    node: &str,
) -> Result<Option<(String, BTreeMap<String, String>)>> {
    if let Some(labels) = api.node_labels(node).await? {
        return Ok(Some((node.to_owned(), labels)));
    }
    if !settings.kops.finds_node_by_hostname() {
        return Ok(None);
    }
    let named = api.nodes_with_hostname(node).await?;
    match named.as_slice() {
        [] => Ok(None),
        [one] => Ok(api
            .node_labels(one)
            .await?
            .map(|labels| (one.clone(), labels))),
        several => bail!(
            "{} nodes carry `kubernetes.io/hostname={node}` ({}): kOps' labeller expects \
             exactly one; give --node-name the node's own name",
            several.len(),
            several.join(", ")
        ),
    }
}

fn set(reason: &Mutex<String>, text: String) {
    if let Ok(mut reason) = reason.lock() {
        *reason = text;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::memory::{Cluster, MemoryKube};
    use crate::plan::kops::KopsUnit;
    use crate::steps::testing::Bench;

    const NODE: &str = "master-1";

    fn bench(kops: KopsUnit) -> Bench {
        Bench::with_flags(&[], |flags| {
            flags.kops = kops;
            flags.timeout = Duration::from_millis(1200);
        })
    }

    fn label(bench: &Bench, api: &MemoryKube) -> (Report, Result<()>) {
        let mut report = bench.report();
        let result = Bench::block_on(run(&bench.settings, api, NODE, &mut report));
        (report, result)
    }

    #[test]
    fn an_api_that_never_answers_is_not_ready_naming_why() {
        let api = MemoryKube::new(Cluster::default());
        let (report, result) = label(&bench(KopsUnit::Current), &api);
        let err = result.unwrap_err();
        assert!(err.is::<NotReady>(), "{err:#}");
        assert!(format!("{err:#}").contains("retry later"), "{err:#}");
        assert!(report.changes.is_empty());
        // It was asked more than once within --timeout, and nothing was patched.
        let requests = api.cluster().requests;
        assert!(requests.len() > 1, "{requests:?}");
        assert!(!requests.iter().any(|r| r.starts_with("PATCH")));
    }

    #[test]
    fn two_nodes_with_the_hostname_label_are_refused_without_a_write() {
        let hostname = |name: &str| {
            (
                name.to_owned(),
                BTreeMap::from([("kubernetes.io/hostname".to_owned(), NODE.to_owned())]),
            )
        };
        let api = MemoryKube::new(Cluster {
            answers: true,
            nodes: [hostname("ip-10-0-0-1"), hostname("ip-10-0-0-2")].into(),
            ..Cluster::default()
        });
        let (_, result) = label(&bench(KopsUnit::DistrolessImage), &api);
        let message = format!("{:#}", result.unwrap_err());
        assert!(message.contains("2 nodes carry"), "{message}");
        assert!(message.contains("--node-name"), "{message}");
        assert!(!api
            .cluster()
            .requests
            .iter()
            .any(|r| r.starts_with("PATCH")));
    }
}
