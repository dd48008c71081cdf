//! Rendered manifests against kOps' golden files: the three legacy etcd manifests, nodeup's
//! static pods for the minimal cluster, flags for every completed spec, and snapshots.

use crate::support;

use protokube::testing::ClusterDocument;
use protokube::testing::EtcdMembership;
use protokube::testing::FlagTable;
use protokube::testing::MountedVolume;
use protokube::testing::{compile_templates, render, validate_pod};
use protokube::testing::{render_all, Manifest, RenderInputs};
use protokube::testing::{EtcdNode, EtcdOptions, EtcdPodParams, EtcdTls};
use support::fixture;
use yaml_serde::Value;

fn documents(path: &std::path::Path) -> Vec<Value> {
    use serde::Deserialize as _;
    let text = std::fs::read_to_string(path).unwrap();
    yaml_serde::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

fn string(doc: &Value, key: &str) -> Option<String> {
    doc.get(key).and_then(|v| v.as_str()).map(str::to_owned)
}

fn node(doc: &Value) -> EtcdNode {
    EtcdNode {
        name: string(doc, "name").unwrap(),
        internal_name: string(doc, "internalName").unwrap(),
    }
}

/// kOps' `EtcdCluster` test input as our template parameters.
fn params_from_kops_input(input: &Value) -> EtcdPodParams {
    EtcdPodParams {
        pod_name: string(input, "podName").unwrap(),
        cluster_name: string(input, "clusterName").unwrap(),
        data_dir_name: string(input, "dataDirName").unwrap(),
        client_port: input["clientPort"].as_u64().unwrap() as u16,
        peer_port: input["peerPort"].as_u64().unwrap() as u16,
        listen_host: "0.0.0.0".into(),
        cpu_request: string(input, "cpuRequest").unwrap(),
        memory_request: None,
        image: string(input, "imageSource").unwrap(),
        log_file: string(input, "logFile").unwrap(),
        volume_mount_path: string(input, "volumeMountPath").unwrap(),
        token: string(input, "clusterToken").unwrap(),
        election_timeout: string(input, "electionTimeout"),
        heartbeat_interval: string(input, "heartbeatInterval"),
        me: node(&input["me"]),
        nodes: input["nodes"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(node)
            .collect(),
        tls: EtcdTls {
            ca: string(input, "tlsCA"),
            cert: string(input, "tlsCert"),
            key: string(input, "tlsKey"),
            peer_ca: string(input, "peerCA"),
            peer_cert: string(input, "peerCert"),
            peer_key: string(input, "peerKey"),
            client_auth: false,
        },
    }
}

#[test]
fn etcd_manifests_match_the_kops_goldens() {
    let tera = compile_templates(&[]).unwrap();
    for name in ["non_tls", "tls", "etcd_env_vars"] {
        let docs = documents(&fixture(&format!("etcd-manifest/{name}.yaml")));
        let params = params_from_kops_input(&docs[0]);
        let rendered = render(&tera, "etcd.yaml", &params.context()).unwrap();
        validate_pod(&rendered, "etcd.yaml").unwrap();
        let rendered: Value = yaml_serde::from_str(&rendered).unwrap();
        assert_eq!(
            rendered,
            docs[1],
            "{name}: rendered\n{}",
            yaml_serde::to_string(&rendered).unwrap()
        );
    }
}

/// The Pod inside a nodeup golden task file.
fn golden_pod(component: &str) -> Value {
    golden_pod_in("nodeup-golden-minimal", component)
}

/// The pod of nodeup's golden tasks for `component` in fixture directory `dir`.
fn golden_pod_in(dir: &str, component: &str) -> Value {
    let docs = documents(&fixture(&format!("{dir}/tasks-{component}.yaml")));
    let manifest = docs
        .iter()
        .find(|d| {
            d["path"].as_str() == Some(&format!("/etc/kubernetes/manifests/{component}.manifest"))
        })
        .unwrap();
    yaml_serde::from_str(manifest["contents"].as_str().unwrap()).unwrap()
}

fn render_spec(
    name: &str,
    master: bool,
    mounted: &[MountedVolume],
) -> (Vec<Manifest>, ClusterDocument) {
    let doc = protokube::testing::read_spec(
        &protokube::testing::LinuxHost,
        &fixture(&format!("cluster-completed/{name}.yaml")),
    )
    .unwrap();
    let (manifests, warnings) = render_document(&doc, master, mounted);
    assert!(warnings.is_empty(), "{warnings:?}");
    (manifests, doc)
}

/// Renders every manifest of `doc` with the built-in templates; the manifests and the warnings.
fn render_document(
    doc: &ClusterDocument,
    master: bool,
    mounted: &[MountedVolume],
) -> (Vec<Manifest>, Vec<String>) {
    let tera = compile_templates(&[]).unwrap();
    let cluster = doc.name().unwrap().to_owned();
    let suffix = format!(".internal.{cluster}");
    let mut warnings = Vec::new();
    let manifests = render_all(
        &tera,
        &RenderInputs {
            cluster_name: &cluster,
            internal_suffix: &suffix,
            master,
            spec: &doc.spec,
            mounted,
            etcd: &EtcdOptions::default(),
            distribution: Default::default(),
            etcd_only: false,
        },
        &mut warnings,
    )
    .unwrap();
    (manifests, warnings)
}

fn pod_of(manifests: &[Manifest], name: &str) -> Value {
    let manifest = manifests.iter().find(|m| m.name == name).unwrap();
    yaml_serde::from_str(&manifest.contents).unwrap()
}

fn replace_arg(pod: &mut Value, from: &str, to: &str) {
    let args = pod["spec"]["containers"][0]["args"]
        .as_sequence_mut()
        .unwrap();
    let slot = args
        .iter_mut()
        .find(|a| a.as_str() == Some(from))
        .unwrap_or_else(|| panic!("{from} not in the golden"));
    *slot = Value::from(to);
}

#[test]
fn control_plane_pods_match_nodeup_goldens_for_minimal_1_28() {
    let (manifests, _) = render_spec("minimal-1.28", true, &[]);
    // The golden's cluster differs from completed/minimal-1.28 in two spec fields:
    // authorizationMode (AlwaysAllow there, Node,RBAC here) and configureCloudRoutes (kubenet
    // there: true; false here). Everything else must be equal.
    let mut apiserver = golden_pod("kube-apiserver");
    replace_arg(
        &mut apiserver,
        "--authorization-mode=AlwaysAllow",
        "--authorization-mode=Node,RBAC",
    );
    let mut kcm = golden_pod("kube-controller-manager");
    replace_arg(
        &mut kcm,
        "--configure-cloud-routes=true",
        "--configure-cloud-routes=false",
    );
    for (name, expected) in [
        ("kube-apiserver", apiserver),
        ("kube-controller-manager", kcm),
        ("kube-scheduler", golden_pod("kube-scheduler")),
        ("kube-proxy", golden_pod("kube-proxy")),
    ] {
        let rendered = pod_of(&manifests, name);
        assert_eq!(
            rendered,
            expected,
            "{name}:\n{}",
            yaml_serde::to_string(&rendered).unwrap()
        );
    }
}

/// The spec-given flags of a rendered pod: its args after the binary, less the fixed ones.
fn spec_flags_of(pod: &Value, fixed_prefixes: &[&str]) -> Vec<String> {
    pod["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .skip(3)
        .map(|a| a.as_str().unwrap().to_owned())
        .filter(|a| !fixed_prefixes.iter().any(|p| a.starts_with(p)))
        .collect()
}

#[test]
fn every_completed_spec_renders_its_flags_by_the_kops_rules() {
    let table = FlagTable::builtin();
    for name in support::COMPLETED_SPECS {
        let (manifests, doc) = render_spec(name, true, &[]);
        for (component, section, section_name, fixed) in [
            (
                "kube-apiserver",
                doc.spec.kube_api_server.as_ref(),
                "KubeAPIServerConfig",
                &[
                    "--authentication-token-webhook-config-file=",
                    "--client-ca-file=",
                    "--cloud-config=",
                    "--etcd-cafile=",
                    "--etcd-certfile=",
                    "--etcd-keyfile=",
                    "--kubelet-client-certificate=",
                    "--kubelet-client-key=",
                    "--proxy-client-cert-file=",
                    "--proxy-client-key-file=",
                    "--requestheader-client-ca-file=",
                    "--service-account-key-file=",
                    "--service-account-signing-key-file=",
                    "--tls-cert-file=",
                    "--tls-private-key-file=",
                ][..],
            ),
            (
                "kube-controller-manager",
                doc.spec.kube_controller_manager.as_ref(),
                "KubeControllerManagerConfig",
                &[
                    "--authentication-kubeconfig=",
                    "--authorization-kubeconfig=",
                    "--cloud-config=",
                    "--cluster-signing-cert-file=",
                    "--cluster-signing-key-file=",
                    "--flex-volume-plugin-dir=",
                    "--kubeconfig=",
                    "--root-ca-file=",
                    "--service-account-private-key-file=",
                    "--tls-cert-file=",
                    "--tls-private-key-file=",
                ][..],
            ),
            (
                "kube-scheduler",
                doc.spec.kube_scheduler.as_ref(),
                "KubeSchedulerConfig",
                &[
                    "--authentication-kubeconfig=",
                    "--authorization-kubeconfig=",
                    "--config=",
                    "--tls-cert-file=",
                    "--tls-private-key-file=",
                ][..],
            ),
        ] {
            let pod = pod_of(&manifests, component);
            let expected = table
                .build(section_name, section.unwrap(), "spec")
                .unwrap()
                .into_iter()
                .filter(|f| !fixed.iter().any(|p| f.starts_with(p)))
                .collect::<Vec<_>>();
            assert_eq!(spec_flags_of(&pod, fixed), expected, "{name} {component}");
            // Sorted, as kOps sorts them.
            let args = spec_flags_of(&pod, &[]);
            let mut sorted = args.clone();
            sorted.sort();
            assert_eq!(args, sorted, "{name} {component}");
        }
    }
}

#[test]
fn spot_checks_of_flag_values() {
    let (manifests, _) = render_spec("ha", true, &[]);
    let args = spec_flags_of(&pod_of(&manifests, "kube-apiserver"), &[]);
    for flag in [
        "--apiserver-count=3",
        "--feature-gates=CSIMigrationAWS=true,InTreePluginAWSUnregister=true",
        "--etcd-servers-overrides=/events#https://127.0.0.1:4002",
        "--v=2",
    ] {
        assert!(args.contains(&flag.to_owned()), "{flag} not in {args:#?}");
    }
    let kcm = spec_flags_of(&pod_of(&manifests, "kube-controller-manager"), &[]);
    assert!(kcm.contains(&"--attach-detach-reconcile-sync-period=1m0s".to_owned()));
    assert!(kcm.contains(&"--leader-elect=true".to_owned()));
}

fn mounted(volume: &str, cluster: &str, member: &str, members: &[&str]) -> MountedVolume {
    MountedVolume {
        volume_id: volume.into(),
        device: "/dev/xvdu".into(),
        mountpoint: format!("/mnt/master-{volume}").into(),
        etcd: vec![EtcdMembership::new(cluster, member, members)],
    }
}

#[test]
fn snapshots_of_every_rendered_pod() {
    for name in support::COMPLETED_SPECS {
        let volumes = [
            mounted("vol-main", "main", "a", &["a", "b", "c"]),
            mounted("vol-events", "events", "a", &["a", "b", "c"]),
        ];
        let (manifests, _) = render_spec(name, true, &volumes);
        for manifest in &manifests {
            insta::assert_snapshot!(format!("{name}__{}", manifest.name), manifest.contents);
        }
        // A worker gets kube-proxy only, pointed at the internal API name.
        let (worker, doc) = render_spec(name, false, &[]);
        assert_eq!(worker.len(), 1);
        let proxy = pod_of(&worker, "kube-proxy");
        let master_flag = format!("--master=https://api.internal.{}", doc.name().unwrap());
        assert!(
            spec_flags_of(&proxy, &[]).contains(&master_flag),
            "{name}: {proxy:?}"
        );
    }
}

/// nodeup's `buildAnnotations` (kOps v1.30.3 `nodeup/pkg/model/kube_apiserver.go`), written
/// from kOps' code over the spec as YAML, not from the template: `default-container` always;
/// nothing else when `UsesNoneDNS`; `internal` unless `api.loadBalancer.useForInternalApi`;
/// `external` when `api.dns` is set and the public name is not empty.
fn nodeup_annotations(spec: &Value, cluster: &str) -> std::collections::BTreeMap<String, String> {
    let mut annotations = std::collections::BTreeMap::new();
    annotations.insert(
        "kubectl.kubernetes.io/default-container".to_owned(),
        "kube-apiserver".to_owned(),
    );
    let dns_type = |topology: &Value| topology["dns"]["type"].as_str().map(str::to_owned);
    let uses_none_dns = [&spec["networking"]["topology"], &spec["topology"]]
        .into_iter()
        .any(|t| dns_type(t).as_deref() == Some("None"));
    if uses_none_dns {
        return annotations;
    }
    let lb = &spec["api"]["loadBalancer"];
    if lb.is_null() || lb["useForInternalApi"].as_bool() != Some(true) {
        annotations.insert(
            "dns.alpha.kubernetes.io/internal".to_owned(),
            format!("api.internal.{cluster}"),
        );
    }
    let public = spec["masterPublicName"].as_str().unwrap_or_default();
    if !spec["api"]["dns"].is_null() && !public.is_empty() {
        annotations.insert(
            "dns.alpha.kubernetes.io/external".to_owned(),
            public.to_owned(),
        );
    }
    annotations
}

#[test]
fn api_server_annotations_follow_nodeup_s_rule_for_every_completed_spec() {
    let mut differing_from_always_both = 0;
    for name in support::COMPLETED_SPECS {
        let raw: Value = yaml_serde::from_str(
            &std::fs::read_to_string(fixture(&format!("cluster-completed/{name}.yaml"))).unwrap(),
        )
        .unwrap();
        let volumes = [mounted("vol-main", "main", "a", &["a"])];
        let (manifests, doc) = render_spec(name, true, &volumes);
        let pod = pod_of(&manifests, "kube-apiserver");
        let got: std::collections::BTreeMap<String, String> =
            yaml_serde::from_value(pod["metadata"]["annotations"].clone()).unwrap();
        let want = nodeup_annotations(&raw["spec"], doc.name().unwrap());
        assert_eq!(got, want, "{name}");
        differing_from_always_both += usize::from(want.len() != 3);
    }
    // The load-balancer and no-DNS specs are among them: the rule is exercised both ways.
    assert!(
        differing_from_always_both >= 2,
        "{differing_from_always_both}"
    );
}

/// kOps 1.36's `leases` etcd cluster (and cilium's): each etcd pod on its well-known ports, and
/// every etcd endpoint kube-apiserver is given served by one of them.
#[test]
fn leases_and_cilium_etcd_on_kops_ports_serve_every_api_server_endpoint() {
    for keys in [
        &["main", "events", "leases"][..],
        &["main", "events", "leases", "cilium"],
    ] {
        let mut doc = protokube::testing::read_spec(
            &protokube::testing::LinuxHost,
            &fixture("cluster-completed/ha.yaml"),
        )
        .unwrap();
        let template = doc.spec.etcd_clusters[0].clone();
        doc.spec.etcd_clusters = keys
            .iter()
            .map(|key| protokube::testing::EtcdClusterSpec {
                name: (*key).into(),
                ..template.clone()
            })
            .collect();
        let api = doc.spec.kube_api_server.as_mut().unwrap();
        api.insert(
            "etcdServersOverrides".into(),
            yaml_serde::from_str(
                "['/events#https://127.0.0.1:4002', '/coordination.k8s.io/leases#https://127.0.0.1:4004']",
            )
            .unwrap(),
        );
        let volumes: Vec<MountedVolume> = keys
            .iter()
            .map(|key| mounted(&format!("vol-{key}"), key, "a", &["a", "b", "c"]))
            .collect();
        let (manifests, warnings) = render_document(&doc, true, &volumes);
        assert!(warnings.is_empty(), "{warnings:?}");
        let client_port = |name: &str| -> u64 {
            let pod = pod_of(&manifests, name);
            pod["spec"]["containers"][0]["ports"]
                .as_sequence()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "clientport")
                .unwrap()["containerPort"]
                .as_u64()
                .unwrap()
        };
        let mut served: Vec<u64> = keys
            .iter()
            .map(|key| {
                client_port(&match *key {
                    "main" => "etcd".to_owned(),
                    other => format!("etcd-{other}"),
                })
            })
            .collect();
        served.sort_unstable();
        let expected: &[u64] = if keys.len() == 4 {
            &[4001, 4002, 4003, 4004]
        } else {
            &[4001, 4002, 4004]
        };
        assert_eq!(served, expected);
        let apiserver = pod_of(&manifests, "kube-apiserver");
        let args = spec_flags_of(&apiserver, &[]);
        let endpoints: Vec<u64> = args
            .iter()
            .filter(|a| a.starts_with("--etcd-servers"))
            .flat_map(|a| {
                a.split(':')
                    .filter_map(|p| p.split(['/', ',', ';']).next()?.parse().ok())
                    .collect::<Vec<u64>>()
            })
            .collect();
        assert!(endpoints.contains(&4004), "{args:?}");
        for port in endpoints {
            assert!(served.contains(&port), "{port} not served: {args:?}");
        }
    }
}

#[test]
fn rendering_is_deterministic() {
    let volumes = [mounted("vol-main", "main", "a", &["a"])];
    let (first, _) = render_spec("complex", true, &volumes);
    let (second, _) = render_spec("complex", true, &volumes);
    assert_eq!(first, second);
}

/// kOps' nodeup goldens for clusters that differ from the minimal one in their API server's
/// settings — OIDC with extra service-account issuers, AWS IAM authentication, auditing: the
/// minimal completed spec given the case's `kubeAPIServer` fields and `authentication` renders
/// a kube-apiserver that differs from the minimal one exactly as kOps' goldens differ (flags,
/// their order, and mounted host paths).
#[test]
fn nodeup_golden_cases_differ_from_minimal_as_kops_does() {
    let minimal_text =
        std::fs::read_to_string(fixture("cluster-completed/minimal-1.28.yaml")).unwrap();
    let minimal: Value = yaml_serde::from_str(&minimal_text).unwrap();
    let doc_of = |value: &Value| {
        ClusterDocument::parse(&yaml_serde::to_string(value).unwrap(), "case.yaml").unwrap()
    };
    let base_pod = pod_of(
        &render_document(&doc_of(&minimal), true, &[]).0,
        "kube-apiserver",
    );
    let golden_base = golden_pod("kube-apiserver");
    for case in ["oidc", "awsiam", "audit"] {
        let input = &documents(&fixture(&format!("nodeup-golden/{case}/cluster.yaml")))[0];
        let mut spec = minimal.clone();
        let api = spec["spec"]["kubeAPIServer"].as_mapping_mut().unwrap();
        for (key, value) in input["spec"]["kubeAPIServer"]
            .as_mapping()
            .into_iter()
            .flatten()
        {
            api.insert(key.clone(), value.clone());
        }
        // What kOps' completion derives from the issuer.
        if let Some(issuer) = input["spec"]["kubeAPIServer"]["serviceAccountIssuer"].as_str() {
            api.insert(
                "serviceAccountJWKSURI".into(),
                format!("{issuer}/openid/v1/jwks").into(),
            );
        }
        if let Some(authentication) = input["spec"].get("authentication") {
            spec["spec"]
                .as_mapping_mut()
                .unwrap()
                .insert("authentication".into(), authentication.clone());
        }
        let (manifests, warnings) = render_document(&doc_of(&spec), true, &[]);
        assert!(warnings.is_empty(), "{case}: {warnings:?}");
        let ours = pod_of(&manifests, "kube-apiserver");
        let golden = golden_pod_in(&format!("nodeup-golden/{case}"), "kube-apiserver");
        for field in [
            ["containers", "args"],
            ["containers", "volumeMounts"],
            ["volumes", ""],
        ] {
            // Feature gates follow the case's Kubernetes version (kOps' completion), not the
            // fields under test.
            let list = |pod: &Value| -> Vec<Value> {
                let v = &pod["spec"][field[0]];
                let v = if field[1].is_empty() {
                    v
                } else {
                    &v[0][field[1]]
                };
                v.as_sequence()
                    .unwrap()
                    .iter()
                    .filter(|a| {
                        !a.as_str()
                            .is_some_and(|a| a.starts_with("--feature-gates="))
                    })
                    .cloned()
                    .collect()
            };
            let difference = |with: &Value, without: &Value| -> (Vec<Value>, Vec<Value>) {
                let (with, without) = (list(with), list(without));
                (
                    with.iter()
                        .filter(|x| !without.contains(x))
                        .cloned()
                        .collect(),
                    without
                        .iter()
                        .filter(|x| !with.contains(x))
                        .cloned()
                        .collect(),
                )
            };
            assert_eq!(
                difference(&ours, &base_pod),
                difference(&golden, &golden_base),
                "{case}: {field:?}"
            );
        }
        // The flags both have come in kOps' order: sorted, then the extra issuers as listed.
        let common = |pod: &Value, other: &Value| -> Vec<String> {
            spec_flags_of(pod, &[])
                .into_iter()
                .filter(|a| list_contains(other, a))
                .collect()
        };
        assert_eq!(common(&ours, &golden), common(&golden, &ours), "{case}");
    }
}

fn list_contains(pod: &Value, arg: &str) -> bool {
    pod["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|a| a.as_str() == Some(arg))
}
