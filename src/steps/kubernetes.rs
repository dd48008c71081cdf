//! The steps of a control-plane node that talk to the Kubernetes API, as kOps' protokube of the
//! node's version took them: once the API answers — asked every 5 s until its `kube-system`
//! namespace exists, as kOps' protokube polled from 1.20 — kOps' bootstrap RBAC objects
//! (`--initialize-rbac=true`, ≤ 1.22), the addon channels, then the control-plane labels (kOps
//! 1.22's order: a node not registered yet never holds the addons back). An API that does not
//! answer yet is "not ready" (exit 75), never a failed channel; in the old daemon's loop it is a
//! warning and the next minute tries again. kubelet (kOps 1.12–1.18) is started first in the
//! run, by `sync` ([`crate::steps::kubelet`]).

use anyhow::Result;

use crate::error::NotReady;
use crate::host::Host;
use crate::kube::api::KubeClient;
use crate::kube::KubernetesApi;
use crate::report::Report;
use crate::settings::Settings;
use crate::steps::api_wait::{api_deadline, API_POLL};
use crate::steps::{channels, labels, rbac};
use crate::wait::{poll_until, Backoff};

/// The Kubernetes API as `KUBECONFIG` reaches it, its files and credential plugin on `host`.
pub(crate) async fn connect(settings: &Settings, host: &dyn Host) -> Result<KubeClient> {
    KubeClient::connect(
        host,
        &settings.root,
        &settings.kubeconfig,
        api_deadline(settings),
    )
    .await
}

/// The steps a control-plane node's `sync` runs after the etcd and DNS steps, when their flags
/// ask for them.
pub(crate) async fn run(settings: &Settings, host: &dyn Host, report: &mut Report) -> Result<()> {
    if settings.node_to_label().is_none() && !after_api(settings) {
        return Ok(());
    }
    let api = match connect(settings, host).await {
        Ok(api) => api,
        Err(err) => return warned_in_legacy(settings, Err(err), report),
    };
    with_api(settings, host, &api, report).await
}

/// Whether a step waits for the API before it acts (the RBAC objects, the channels).
fn after_api(settings: &Settings) -> bool {
    settings.initialize_rbac || !settings.channels.is_empty()
}

/// The steps that talk to the API: once it answers, the RBAC objects and the addon channels,
/// then the labels.
async fn with_api(
    settings: &Settings,
    host: &dyn Host,
    api: &dyn KubernetesApi,
    report: &mut Report,
) -> Result<()> {
    let mut outcome = Ok(());
    if after_api(settings) {
        let applied = after_api_answers(settings, host, api, report).await;
        outcome = outcome.and(warned_in_legacy(settings, applied, report));
    }
    if let Some(node) = settings.node_to_label() {
        let labelled = labels::run(settings, api, node, report).await;
        outcome = outcome.and(warned_in_legacy(settings, labelled, report));
    }
    outcome
}

/// The RBAC objects and the addon channels, once the API answers.
async fn after_api_answers(
    settings: &Settings,
    host: &dyn Host,
    api: &dyn KubernetesApi,
    report: &mut Report,
) -> Result<()> {
    wait_for_api(settings, api).await?;
    if settings.initialize_rbac {
        rbac::run(settings, api, report).await?;
    }
    if !settings.channels.is_empty() {
        channels::run(settings, host, report).await?;
    }
    Ok(())
}

/// Waits, within the API steps' deadline ([`api_deadline`]), for the API server to answer with
/// its `kube-system` namespace, asking every 5 s: kOps' protokube of 1.20 and later applied
/// nothing before, and applied at once after.
pub(crate) async fn wait_for_api(settings: &Settings, api: &dyn KubernetesApi) -> Result<()> {
    let last = std::sync::Mutex::new(String::new());
    let waited = poll_until(
        "the Kubernetes API to answer",
        api_deadline(settings),
        settings.progress,
        Backoff::new(API_POLL, API_POLL),
        || async {
            match api.ready().await {
                Ok(()) => Ok(Some(())),
                Err(err) if is_not_ready(&err) => {
                    if let Ok(mut last) = last.lock() {
                        *last = crate::error::one_line(&err);
                    }
                    Ok(None)
                }
                Err(err) => Err(err),
            }
        },
    )
    .await;
    match waited {
        Err(err) if is_not_ready(&err) => Err(NotReady(format!(
            "{}; the RBAC objects and addon channels are applied once it answers (retry later)",
            last.lock().map(|l| l.clone()).unwrap_or_default()
        ))
        .into()),
        other => other,
    }
}

fn is_not_ready(err: &anyhow::Error) -> bool {
    err.chain()
        .any(<dyn std::error::Error + 'static>::is::<NotReady>)
}

/// In the old daemon's loop, "not ready yet" is a warning (the next minute tries again).
fn warned_in_legacy(settings: &Settings, result: Result<()>, report: &mut Report) -> Result<()> {
    match result {
        Err(err) if settings.legacy && is_not_ready(&err) => {
            report.warn(format!(
                "{}; the next run tries again",
                crate::error::one_line(&err)
            ));
            Ok(())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::host::memory::Content;
    use crate::host::{ChildEnd, ChildOutput};
    use crate::kube::memory::{Cluster, MemoryKube};
    use crate::plan::kops::KopsUnit;
    use crate::report::{Action, ChangeKind};
    use crate::settings::Flags;
    use crate::steps::testing::Bench;

    const NODE: &str = "master.hostname.invalid";

    /// A control-plane node of `kops`'s version run by nodeup's unit (the old daemon's loop
    /// when `legacy`), its flags adjusted by `adjust`.
    fn node(kops: KopsUnit, legacy: bool, adjust: impl FnOnce(&mut Flags)) -> Bench {
        let bench = Bench::with_flags(&[], |flags| {
            flags.kops = kops;
            flags.legacy = legacy;
            flags.bootstrap_master_node_labels = true;
            flags.node_name = Some(NODE.to_owned());
            flags.kubeconfig = "/var/lib/kops/kubeconfig".to_owned();
            adjust(flags);
        });
        bench.device("/dev/vdb", 1, Content::Zeros);
        bench
    }

    fn registered(name: &str, hostname: &str) -> Cluster {
        Cluster {
            answers: true,
            nodes: [(
                name.to_owned(),
                BTreeMap::from([("kubernetes.io/hostname".to_owned(), hostname.to_owned())]),
            )]
            .into(),
            ..Cluster::default()
        }
    }

    fn run(bench: &Bench, api: &MemoryKube) -> (Report, Result<()>) {
        let mut report = bench.report();
        let result = Bench::block_on(with_api(&bench.settings, &bench.host, api, &mut report));
        (report, result)
    }

    #[test]
    fn each_version_gets_its_own_labels_and_a_converged_node_no_write() {
        for (kops, expected) in [
            (
                KopsUnit::DebianImage,
                vec![
                    "kops.k8s.io/kops-controller-pki",
                    "node-role.kubernetes.io/master",
                ],
            ),
            (
                KopsUnit::Host,
                vec![
                    "kops.k8s.io/kops-controller-pki",
                    "kubernetes.io/role",
                    "node-role.kubernetes.io/control-plane",
                    "node-role.kubernetes.io/master",
                    "node.kubernetes.io/exclude-from-external-load-balancers",
                ],
            ),
            (
                KopsUnit::Current,
                vec![
                    "kops.k8s.io/kops-controller-pki",
                    "node-role.kubernetes.io/control-plane",
                    "node.kubernetes.io/exclude-from-external-load-balancers",
                ],
            ),
        ] {
            let bench = node(kops, true, |_| {});
            let api = MemoryKube::new(registered(NODE, NODE));
            let (report, result) = run(&bench, &api);
            result.unwrap();
            let labels = &api.cluster().nodes[NODE];
            let given: Vec<&str> = labels
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "kubernetes.io/hostname")
                .collect();
            assert_eq!(given, expected, "{kops:?}");
            assert_eq!(report.changes[0].action, Action::Update);
            let (again, _) = run(&bench, &api);
            assert_eq!(again.changes[0].action, Action::Unchanged, "{kops:?}");
            assert_eq!(
                api.cluster()
                    .requests
                    .iter()
                    .filter(|r| r.starts_with("PATCH"))
                    .count(),
                1,
                "{kops:?}"
            );
        }
    }

    #[test]
    fn kops_1_19_s_labeller_finds_the_node_by_its_hostname_label() {
        let api = MemoryKube::new(registered("ip-10-0-0-1.ec2.internal", NODE));
        let (report, result) = run(&node(KopsUnit::DistrolessImage, true, |_| {}), &api);
        result.unwrap();
        assert_eq!(report.changes[0].target, "ip-10-0-0-1.ec2.internal");
        assert_eq!(
            api.cluster().nodes["ip-10-0-0-1.ec2.internal"]["node-role.kubernetes.io/master"],
            ""
        );
        // Later versions look the node up by name only: not registered yet, a warning in the
        // loop.
        let api = MemoryKube::new(registered("ip-10-0-0-1.ec2.internal", NODE));
        let (report, result) = run(&node(KopsUnit::Current, true, |_| {}), &api);
        result.unwrap();
        assert!(report.warnings[0].contains("not registered"), "{report:?}");
        assert!(!api.cluster().requests.iter().any(|r| r.starts_with("LIST")));
    }

    #[test]
    fn rbac_objects_are_created_when_missing_and_an_existing_one_is_left() {
        let bench = node(KopsUnit::DebianImage, true, |flags| {
            flags.initialize_rbac = true;
            flags.bootstrap_master_node_labels = false;
        });
        let mut cluster = registered(NODE, NODE);
        cluster
            .objects
            .insert("ServiceAccount kube-system/kube-proxy".to_owned());
        let api = MemoryKube::new(cluster);
        let (report, result) = run(&bench, &api);
        result.unwrap();
        let actions: Vec<(ChangeKind, &str, Action)> = report
            .changes
            .iter()
            .map(|c| (c.kind, c.target.as_str(), c.action))
            .collect();
        assert_eq!(
            actions,
            [
                (
                    ChangeKind::Rbac,
                    "ServiceAccount kube-system/kube-dns",
                    Action::Create
                ),
                (
                    ChangeKind::Rbac,
                    "ServiceAccount kube-system/kube-proxy",
                    Action::Unchanged
                ),
                (
                    ChangeKind::Rbac,
                    "ClusterRoleBinding kubeadm:node-proxier",
                    Action::Create
                ),
            ]
        );
        let posts = |api: &MemoryKube| {
            api.cluster()
                .requests
                .iter()
                .filter(|r| r.starts_with("POST"))
                .count()
        };
        assert_eq!(posts(&api), 2);
        // Converged: reads, no create.
        let (again, _) = run(&bench, &api);
        assert!(again.changes.iter().all(|c| c.action == Action::Unchanged));
        assert_eq!(posts(&api), 2);
    }

    #[test]
    fn an_api_not_answering_yet_is_a_warning_in_the_loop_and_not_ready_alone() {
        for legacy in [true, false] {
            let bench = node(KopsUnit::Host, legacy, |flags| {
                flags.initialize_rbac = true;
                flags.channels = vec!["s3://b/c/addons/bootstrap-channel.yaml".to_owned()];
                flags.timeout = std::time::Duration::from_millis(300);
            });
            let api = MemoryKube::new(Cluster::default());
            let (report, result) = run(&bench, &api);
            if legacy {
                result.unwrap();
                assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
                assert!(report.warnings[0].contains("addon channels are applied once"));
            } else {
                let err = result.unwrap_err();
                assert!(crate::error::caused_by::<NotReady>(&err));
            }
            // Nothing was created, and the channels tool never ran.
            assert!(!api.cluster().requests.iter().any(|r| r.starts_with("POST")));
            assert!(!bench.take_effects().iter().any(|e| e.starts_with("run ")));
        }
    }

    #[test]
    fn channels_run_once_the_api_answers() {
        let bench = node(KopsUnit::Current, true, |flags| {
            flags.channels = vec!["s3://b/c/addons/bootstrap-channel.yaml".to_owned()];
            flags.bootstrap_master_node_labels = false;
        });
        let tool = bench.path("/opt/kops/bin/channels");
        bench.host.change(|node| {
            node.programs.insert(
                tool.clone(),
                ChildOutput {
                    end: ChildEnd::Exited {
                        success: true,
                        status: "exit status: 0".to_owned(),
                    },
                    stdout: b"No update required\n".to_vec(),
                    stderr: Vec::new(),
                },
            );
        });
        let api = MemoryKube::new(registered(NODE, NODE));
        let (report, result) = run(&bench, &api);
        result.unwrap();
        assert_eq!(api.cluster().requests, ["GET namespace/kube-system"]);
        assert_eq!(report.changes[0].kind, ChangeKind::Channel);
        assert_eq!(report.changes[0].action, Action::Unchanged);
        assert_eq!(
            bench.take_effects(),
            ["run /opt/kops/bin/channels apply channel s3://b/c/addons/bootstrap-channel.yaml --v=4 --yes"]
        );
    }

    #[test]
    fn kubelet_is_started_where_kops_left_it_to_protokube() {
        use crate::steps::kubelet::{after_mount, first, KubeletStart};
        // (version, master, --manage-etcd, kubelet active, dry run) → what `first` and
        // `after_mount` say.
        let start = Some(Action::Start);
        let unchanged = Some(Action::Unchanged);
        use KopsUnit::{Current, DebianImage, DistrolessImage, Host};
        #[rustfmt::skip]
        let cases = [
            // A master where protokube manages etcd: only once its volumes are mounted.
            (DebianImage, true, None, false, false, None, start),
            (DebianImage, true, Some(true), false, true, None, start),
            (DebianImage, true, None, true, false, None, unchanged),
            // etcd not protokube's here, and every worker: first in the run.
            (DebianImage, true, Some(false), false, false, start, None),
            (DebianImage, false, Some(true), false, false, start, None),
            (DebianImage, false, None, true, false, unchanged, None),
            // nodeup starts kubelet from 1.19.
            (DistrolessImage, false, None, false, false, None, None),
            (DistrolessImage, true, None, false, false, None, None),
            (Host, true, None, false, false, None, None),
            (Current, false, None, false, false, None, None),
        ];
        for (kops, master, manage_etcd, active, dry_run, at_first, after) in cases {
            let mut bench = node(kops, true, |flags| {
                flags.bootstrap_master_node_labels = false;
                flags.master = master;
                flags.manage_etcd = manage_etcd;
            });
            if dry_run {
                bench.dry_run();
            }
            bench.host.change(|node| {
                node.services.insert("kubelet".to_owned(), active);
            });
            let case = format!("{kops:?}, master {master}, --manage-etcd {manage_etcd:?}");
            for (step, expected) in [("first", at_first), ("after_mount", after)] {
                let mut report = bench.report();
                let rule = KubeletStart::of(&bench.settings);
                let run = if step == "first" {
                    Bench::block_on(first(rule, &bench.settings, &bench.host, &mut report))
                } else {
                    Bench::block_on(after_mount(rule, &bench.settings, &bench.host, &mut report))
                };
                run.unwrap();
                let said: Vec<Action> = report
                    .changes
                    .iter()
                    .filter(|c| c.kind == ChangeKind::Service)
                    .map(|c| c.action)
                    .collect();
                assert_eq!(
                    said,
                    expected.into_iter().collect::<Vec<_>>(),
                    "{case}: {step}"
                );
                let started = bench.take_effects().contains(&"start kubelet".to_owned());
                assert_eq!(started, expected == start && !dry_run, "{case}: {step}");
            }
        }
    }
}
