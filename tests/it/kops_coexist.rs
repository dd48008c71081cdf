//! protokube beside what kOps runs and writes (issue "Coexist with what kOps runs and writes"):
//! etcd-manager's real pods on a master whose volumes it holds, kOps' placeholders and names,
//! an API load balancer's alias, clusters without DNS, IRSA's control-plane role, kOps 1.36's
//! `leases` etcd cluster and external-dns' ownership records. Real binary, moto behind the
//! recording layer, real loop devices.

use crate::support;

use std::collections::BTreeMap;

use support::bed::{Bed, NodeKind, HA};
use support::iam::{kops_policy, role_credentials, Credentials};
use support::{fixture, seed, spec_with, Protokube};

/// EC2 operations that change something.
const MUTATING_EC2: [&str; 4] = ["AttachVolume", "DetachVolume", "CreateTags", "DeleteTags"];
const ROUTE53: [&str; 5] = [
    "ListHostedZones",
    "GetHostedZone",
    "ListResourceRecordSets",
    "ChangeResourceRecordSets",
    "GetChange",
];

fn zone(bed: &Bed) -> BTreeMap<(String, String), (Option<i64>, Vec<String>)> {
    support::runtime().block_on(async {
        seed::zone_records(&bed.moto().route53().await, bed.zone_id.as_ref().unwrap()).await
    })
}

fn seed_records(bed: &Bed, sets: &[(String, &str, Vec<String>)]) {
    support::runtime().block_on(async {
        seed::records(
            &bed.moto().route53().await,
            bed.zone_id.as_ref().unwrap(),
            sets,
        )
        .await;
    });
    bed.moto().reset_operations();
}

/// The manifest directory's file names.
fn manifests(bed: &Bed) -> Vec<String> {
    support::dir_names(&bed.root.join("/etc/kubernetes/manifests"))
}

/// A kOps master where etcd-manager runs: its volumes attached and mounted here holding data,
/// its real pods in the manifest directory under another instance group's file names. Every
/// command leaves etcd-manager's volumes, mounts, data, pods and names alone.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn etcd_manager_s_volumes_pods_and_names_are_left_to_it() {
    // etcd-manager attached and mounted the volumes.
    let bed = Bed::etcd_manager_master();
    support::kube::etcd_manager_pods(&bed.root, "master-us-east-1b");
    let mounts_before = bed
        .disks
        .iter()
        .map(support::block::LoopDevice::mounted_at)
        .collect::<Vec<_>>();
    bed.moto().reset_operations();

    for (command, code) in [
        ("sync", 0),
        ("render-manifests", 0),
        ("publish-dns", 0),
        ("mount", 1),
        ("reset", 0),
    ] {
        // The dry run is the run's own plan, beside etcd-manager too.
        let dry = bed.run(command, &["--dry-run"]);
        let out = bed.run(command, &[]);
        assert_eq!(out.code, code, "{command}: {out:#?}");
        if code == 0 {
            assert_eq!(
                dry.report().change_set(),
                out.report().change_set(),
                "{command}"
            );
        }
        let report = out.report();
        // A fact of a kOps master's normal state (or the reason `mount` refuses), never a
        // warning.
        assert!(
            !report.warnings.iter().any(|w| w.contains("etcd-manager")),
            "{command}: {report:#?}"
        );
        let said: Vec<&String> = report
            .info
            .iter()
            .chain(report.error.as_ref().map(|e| &e.message))
            .filter(|w| w.contains("etcd-manager runs on this node"))
            .collect();
        assert_eq!(said.len(), 1, "{command}: said once: {report:#?}");
        assert!(
            said[0].contains("etcd-main-master-us-east-1b.manifest"),
            "{command}: {}",
            said[0]
        );
        let files = manifests(&bed);
        assert!(
            !files
                .iter()
                .any(|f| f == "etcd.manifest" || f == "etcd-events.manifest"),
            "{command}: {files:?}"
        );
        assert!(
            files.contains(&"etcd-main-master-us-east-1b.manifest".to_owned()),
            "{command}: {files:?}"
        );
        let etcd_names: Vec<String> = zone(&bed)
            .into_keys()
            .map(|(name, _)| name)
            .filter(|name| name.starts_with("etcd-"))
            .collect();
        assert!(etcd_names.is_empty(), "{command}: {etcd_names:?}");
        if command == "sync" {
            // Everything else still happens: the API names and kops-controller's.
            let names = zone(&bed);
            assert!(names.contains_key(&(format!("kops-controller.internal.{HA}"), "A".to_owned())));
            assert!(files.contains(&"kube-apiserver.manifest".to_owned()));
        }
    }
    let operations = bed.moto().operations();
    for mutating in MUTATING_EC2 {
        assert!(
            !operations.iter().any(|o| o == mutating),
            "{mutating}: {operations:?}"
        );
    }
    let mounts_after = bed
        .disks
        .iter()
        .map(support::block::LoopDevice::mounted_at)
        .collect::<Vec<_>>();
    assert_eq!(mounts_before, mounts_after);
    for volume in &bed.volumes {
        let data = std::fs::read_to_string(bed.root.mountpoint(volume).join("etcd-manager-data"));
        assert_eq!(data.unwrap(), *volume);
        assert!(!bed.root.mountpoint(volume).join("k8s.io").exists());
    }
}

/// kOps' placeholders (A, and AAAA on IPv6 clusters) are replaced like unset values on every
/// name, `kops-controller.internal` included: after one sync each holds the masters' addresses
/// with protokube's ownership TXT.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn kops_placeholders_are_replaced_on_every_name() {
    let bed = Bed::new(NodeKind::HaMaster);
    let mut sets = Vec::new();
    for name in [
        format!("api.{HA}"),
        format!("api.internal.{HA}"),
        format!("kops-controller.internal.{HA}"),
    ] {
        sets.push((name.clone(), "A", vec!["203.0.113.123".to_owned()]));
        sets.push((name, "AAAA", vec!["fd00:dead:add::".to_owned()]));
    }
    seed_records(&bed, &sets);
    let out = bed.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().warnings.is_empty(), "{out:#?}");
    let records = zone(&bed);
    let public = support::runtime().block_on(async {
        seed::instance_addresses(
            &bed.moto().ec2(support::bed::REGION).await,
            &bed.instance_id,
        )
        .await
        .1
        .unwrap()
    });
    for (name, address) in [
        (format!("api.{HA}"), public.as_str()),
        (format!("api.internal.{HA}"), bed.private_ip.as_str()),
        (
            format!("kops-controller.internal.{HA}"),
            bed.private_ip.as_str(),
        ),
        (format!("etcd-a.internal.{HA}"), bed.private_ip.as_str()),
    ] {
        let a = &records[&(name.clone(), "A".to_owned())];
        assert_eq!(a.1, [address], "{name}");
        // The IPv4-only master has no AAAA: the placeholder of that family goes.
        assert!(
            !records.contains_key(&(name.clone(), "AAAA".to_owned())),
            "{name}"
        );
        let txt = &records[&(name.clone(), "TXT".to_owned())];
        assert!(txt.1[0].contains("heritage=protokube"), "{name}: {txt:?}");
    }
}

/// An API load balancer: kOps' alias at `api.<cluster>` is left as it is without a warning,
/// and a converged run asks the cloud what a cluster without load balancer asks.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_load_balancer_s_alias_is_not_protokube_s() {
    let bed = Bed::new(NodeKind::HaMaster);
    let dir = tempfile::tempdir().unwrap();
    let lb: yaml_serde::Value =
        yaml_serde::from_str("loadBalancer: {type: Public, class: Network}").unwrap();
    let spec = spec_with(dir.path(), "ha.yaml", &["spec", "api"], lb);
    support::runtime().block_on(async {
        seed::load_balancer_alias(
            &bed.moto().route53().await,
            bed.zone_id.as_ref().unwrap(),
            &format!("api.{HA}"),
        )
        .await;
    });
    let before = zone(&bed)[&(format!("api.{HA}"), "A".to_owned())].clone();
    let cold = bed.run_with_spec("sync", &spec, &[]);
    assert_eq!(cold.code, 0, "{cold:#?}");
    assert!(cold.report().warnings.is_empty(), "{cold:#?}");
    // The cold run formatted the volumes, so its full check is not recorded; the next one is.
    let second = bed.run_with_spec("sync", &spec, &[]);
    assert_eq!(second.code, 0, "{second:#?}");
    assert!(second.report().warnings.is_empty(), "{second:#?}");
    bed.moto().reset_operations();
    let converged = bed.run_with_spec("sync", &spec, &[]);
    assert_eq!(converged.code, 0, "{converged:#?}");
    assert!(converged.report().warnings.is_empty(), "{converged:#?}");
    assert!(!converged.report().changed);
    assert_eq!(bed.moto().operations(), ["DescribeInstances"]);
    let records = zone(&bed);
    assert_eq!(records[&(format!("api.{HA}"), "A".to_owned())], before);
    assert!(!records.contains_key(&(format!("api.{HA}"), "TXT".to_owned())));
    // The masters' own names are still published.
    assert!(records.contains_key(&(format!("api.internal.{HA}"), "TXT".to_owned())));
    // kube-apiserver carries no external annotation there (dns-controller leaves the alias).
    let pod: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(
            bed.root
                .join("/etc/kubernetes/manifests/kube-apiserver.manifest"),
        )
        .unwrap(),
    )
    .unwrap();
    let annotations = &pod["metadata"]["annotations"];
    assert!(annotations
        .get("dns.alpha.kubernetes.io/external")
        .is_none());
    assert!(annotations
        .get("dns.alpha.kubernetes.io/internal")
        .is_some());
}

/// kOps' `minimal-dns-none` spec: the volumes are mounted and nothing is asked of Route53; in
/// hosts mode the lines nodeup wrote into kOps' block are kept.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_cluster_without_dns_asks_route53_nothing_and_keeps_nodeup_s_lines() {
    let bed = Bed::new(NodeKind::HaMaster);
    let dir = tempfile::tempdir().unwrap();
    // kOps' spec, named as this node's cluster.
    let text = std::fs::read_to_string(fixture("cluster-completed/minimal-dns-none.yaml"))
        .unwrap()
        .replace("minimal.example.com", HA);
    let spec = dir.path().join("minimal-dns-none.yaml");
    std::fs::write(&spec, text).unwrap();
    let out = bed.run_with_spec("sync", &spec, &["--zone", "*"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let operations = bed.moto().operations();
    assert!(
        !operations.iter().any(|o| ROUTE53.contains(&o.as_str())),
        "{operations:?}"
    );
    for disk in &bed.disks {
        assert_eq!(disk.mounted_at().len(), 1);
    }
    // nodeup's block on a control-plane node without DNS.
    let hosts = bed.root.join("/etc/hosts");
    let nodeup_block = format!(
        "127.0.0.1 localhost\n\n# Begin host entries managed by kops - do not edit\n\
         127.0.0.1\tapi.{HA} api.internal.{HA}\n# End host entries managed by kops\n"
    );
    std::fs::write(&hosts, &nodeup_block).unwrap();
    let out = bed.run_with_spec("publish-dns", &spec, &["--dns", "hosts"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let text = std::fs::read_to_string(&hosts).unwrap();
    assert!(
        text.contains(&format!("127.0.0.1\tapi.{HA} api.internal.{HA}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\tetcd-a.internal.{HA} etcd-events-a.internal.{HA}\n"
        )),
        "{text}"
    );
    let again = bed.run_with_spec("publish-dns", &spec, &["--dns", "hosts"]);
    assert!(!again.report().changed, "{again:#?}");
}

/// A master of an IRSA cluster (`ha.yaml` with `useServiceAccountExternalPermissions`) whose
/// credentials hold kOps' IRSA control-plane policy for that cluster (enforcement still off).
fn irsa_master() -> (Bed, std::path::PathBuf, Credentials, tempfile::TempDir) {
    let bed = Bed::new(NodeKind::HaMaster);
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_with(
        dir.path(),
        "ha.yaml",
        &["spec", "iam", "useServiceAccountExternalPermissions"],
        true.into(),
    );
    let policy: serde_json::Value = serde_json::from_str(
        &kops_policy("many-addons-ccm-irsa.masters", None)
            .to_string()
            .replace("minimal.example.com", HA),
    )
    .unwrap();
    let credentials = role_credentials(bed.moto(), &format!("masters.{HA}"), &policy);
    (bed, spec, credentials, dir)
}

/// IRSA: kOps' control-plane role then has no `ec2:CreateTags`, no `DetachVolume`, no Route53
/// (`iam/many-addons-ccm-irsa.masters.json`, enforced as in `tests/iam.rs`). A fresh master
/// formats and mounts its blank volumes with one warning and asks Route53 nothing; the next
/// run formats nothing and converges.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_irsa_master_mounts_without_the_formatted_tag() {
    let (bed, spec, credentials, _dir) = irsa_master();
    bed.moto().enforce_iam(true);
    let run = || {
        bed.command("sync", &spec, &[])
            .credentials(&credentials)
            .run()
    };
    let cold = run();
    assert_eq!(cold.code, 0, "{cold:#?}");
    let report = cold.report();
    let said = &report.warnings;
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].contains("ec2:CreateTags"), "{}", said[0]);
    for volume in &bed.volumes {
        assert!(said[0].contains(volume.as_str()), "{}", said[0]);
        assert!(bed
            .root
            .join(&format!("/var/lib/protokube/formatting/{volume}"))
            .exists());
    }
    for disk in &bed.disks {
        assert_eq!(disk.fs_type().as_deref(), Some("ext4"));
        assert_eq!(disk.mounted_at().len(), 1);
    }
    let operations = bed.moto().operations();
    assert!(
        !operations.iter().any(|o| ROUTE53.contains(&o.as_str())),
        "{operations:?}"
    );
    let uuids_now = || -> Vec<String> {
        bed.disks
            .iter()
            .map(support::block::LoopDevice::uuid)
            .collect()
    };
    let uuids = uuids_now();
    let converged = run();
    assert_eq!(converged.code, 0, "{converged:#?}");
    let report = converged.report();
    assert!(!report.changed, "{report:#?}");
    assert!(report.warnings.is_empty(), "{report:#?}");
    assert!(!report.changes.iter().any(|c| c.action == "format"));
    assert_eq!(uuids_now(), uuids);
    // A third run after the volumes are unmounted (a reboot) mounts them again, formats nothing.
    for volume in &bed.volumes {
        support::block::unmount_below(&bed.root.mountpoint(volume));
    }
    let rebooted = run();
    assert_eq!(rebooted.code, 0, "{rebooted:#?}");
    assert!(!rebooted.stdout.contains("\"format\""), "{rebooted:#?}");
    assert_eq!(uuids_now(), uuids);
}

/// IRSA's role may not detach: a second `main` volume attached here (after a reboot) is left
/// attached with a warning, the node's own volumes are still mounted, and the run ends 75.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_refused_detach_still_mounts_what_is_safe_and_ends_not_ready() {
    let (bed, spec, credentials, _dir) = irsa_master();
    let run = || {
        bed.command("sync", &spec, &[])
            .credentials(&credentials)
            .run()
    };
    bed.moto().enforce_iam(true);
    assert_eq!(run().code, 0);
    // The events volume unmounted (to be mounted again by this run), and a second `main`
    // volume (a copy of member b) attached here meanwhile; the mounted `main` is the one kept.
    support::block::unmount_below(&bed.root.mountpoint(&bed.volumes[1]));
    bed.moto().enforce_iam(false);
    let extra = support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(support::bed::REGION).await;
        let extra = seed::etcd_volume(&ec2, HA, "us-east-1a", &[("main", "b/a,b,c")]).await;
        seed::attach(&ec2, &extra, &bed.instance_id, "/dev/xvdz").await;
        extra
    });
    bed.moto().enforce_iam(true);
    let out = run();
    assert_eq!(out.code, 75, "{out:#?}");
    let report = out.report();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains(&extra) && w.contains("ec2:DetachVolume")),
        "{report:#?}"
    );
    assert!(report.failure().message.contains(&extra));
    for disk in &bed.disks {
        assert_eq!(
            disk.mounted_at().len(),
            1,
            "the node's own volumes are mounted"
        );
    }
    assert!(bed
        .root
        .join("/etc/kubernetes/manifests/etcd.manifest")
        .exists());
}

/// `--adopt` never takes a name external-dns owns (its TXT at `a-<name>`).
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn adopt_leaves_external_dns_names_alone() {
    let bed = Bed::new(NodeKind::HaMaster);
    let name = format!("api.internal.{HA}");
    seed_records(
        &bed,
        &[
            (name.clone(), "A", vec!["10.9.9.9".to_owned()]),
            (
                format!("a-{name}"),
                "TXT",
                vec![format!(
                    "\"heritage=external-dns,external-dns/owner=kops-{HA}\""
                )],
            ),
        ],
    );
    let out = bed.run("publish-dns", &["--adopt"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let said = out.report().warnings;
    assert!(
        said.iter()
            .any(|w| w.contains(&name) && w.contains("external-dns")),
        "{said:#?}"
    );
    let records = zone(&bed);
    assert_eq!(records[&(name.clone(), "A".to_owned())].1, ["10.9.9.9"]);
    assert!(!records.contains_key(&(name, "TXT".to_owned())));
}

/// A spec whose kube-apiserver names an etcd port no etcd pod serves is refused before
/// anything is written: kOps 1.36's `leases` override without a `leases` etcd cluster.
#[test]
fn an_api_server_endpoint_no_etcd_serves_is_refused_before_anything_is_written() {
    let root = support::block::TestRoot::new();
    let dir = tempfile::tempdir().unwrap();
    let overrides: yaml_serde::Value = yaml_serde::from_str(
        "['/events#https://127.0.0.1:4002', '/coordination.k8s.io/leases#https://127.0.0.1:4004']",
    )
    .unwrap();
    let spec = spec_with(
        dir.path(),
        "ha.yaml",
        &["spec", "kubeAPIServer", "etcdServersOverrides"],
        overrides,
    );
    let out = Protokube::new()
        .args(["render-manifests", "--master", "-o", "json"])
        .arg_path("--cluster-spec", &spec)
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    let line = out.error_lines()[0];
    assert!(
        line.contains("4004") && line.contains("etcdServersOverrides"),
        "{line}"
    );
    assert!(line.contains("main 4001"), "{line}");
    assert!(!root.join("/etc/kubernetes/manifests").exists());
}
