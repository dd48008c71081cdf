//! protokube under kOps' own IAM policies (`tests/fixtures/kops/iam/`), against an emulator that
//! enforces them: moto for EC2 actions (after `/moto-api/reset-auth`), the test layer in front of
//! it for what moto cannot judge (the tag conditions of AttachVolume, DetachVolume and
//! CreateTags, and all of Route53; see `scripts/moto_server.py`). protokube runs with the
//! temporary credentials of a role holding the policy (`AssumeRole`). Every command passes with
//! no denied call; with one permission removed, the run fails with a line naming it.

use crate::support;

use support::bed::{Bed, NodeKind};
use support::iam::{kops_policy, role_credentials, without, Credentials};
use support::{seed, RunOutput};

/// A fresh node of `kind` whose credentials hold kOps' policy for it (`ha` or `minimal_gossip`),
/// less `removed`; enforcement is on.
fn bed_under_policy(
    kind: NodeKind,
    zone_by: &str,
    removed: Option<&str>,
) -> (Bed, Credentials, std::path::PathBuf) {
    let mut bed = Bed::new(kind);
    let (policy, role, spec_dir) = match kind {
        NodeKind::HaMaster => ("ha.masters", "masters.ha.example.com", "ha.yaml"),
        NodeKind::GossipWorker => (
            "minimal_gossip.nodes",
            "nodes.minimal.k8s.local",
            "minimal_gossip.yaml",
        ),
        other => panic!("no policy for {other:?}"),
    };
    let dir = tempfile::tempdir().unwrap().keep();
    let mut spec = bed.spec();
    if kind == NodeKind::HaMaster {
        // The spec names the cluster's zone, by id or by name, as kOps keeps it.
        let zone_id = match zone_by {
            "private" => support::runtime().block_on(private_zone(&bed)),
            _ => bed.zone_id.clone().unwrap(),
        };
        let dns_zone = if zone_by == "name" {
            "example.com".to_owned()
        } else {
            zone_id.clone()
        };
        spec = support::spec_with(&dir, spec_dir, &["spec", "dnsZone"], dns_zone.into());
        bed.zone_flag = false;
        let mut document = kops_policy(policy, Some(&zone_id));
        if let Some(permission) = removed {
            document = without(&document, permission);
        }
        let credentials = role_credentials(bed.moto(), role, &document);
        bed.zone_id = Some(zone_id);
        bed.moto().enforce_iam(true);
        return (bed, credentials, spec);
    }
    let mut document = kops_policy(policy, None);
    if let Some(permission) = removed {
        document = without(&document, permission);
    }
    let credentials = role_credentials(bed.moto(), role, &document);
    bed.moto().enforce_iam(true);
    (bed, credentials, spec)
}

/// A private hosted zone `example.com` (the public one stays); its id.
async fn private_zone(bed: &Bed) -> String {
    let ec2 = bed.moto().ec2(support::bed::REGION).await;
    let vpc = ec2
        .create_vpc()
        .cidr_block("10.0.0.0/16")
        .send()
        .await
        .unwrap();
    let vpc_id = vpc.vpc().unwrap().vpc_id().unwrap().to_owned();
    let zone = bed
        .moto()
        .route53()
        .await
        .create_hosted_zone()
        .name("example.com")
        .caller_reference("private-example")
        .vpc(
            aws_sdk_route53::types::Vpc::builder()
                .vpc_id(vpc_id)
                .vpc_region(aws_sdk_route53::types::VpcRegion::UsEast1)
                .build(),
        )
        .send()
        .await
        .unwrap();
    zone.hosted_zone()
        .unwrap()
        .id()
        .trim_start_matches("/hostedzone/")
        .to_owned()
}

fn run(
    bed: &Bed,
    credentials: &Credentials,
    spec: &std::path::Path,
    command: &str,
    extra: &[&str],
) -> RunOutput {
    bed.command(command, spec, extra)
        .credentials(credentials)
        .run()
}

/// The zone's A records, read with the emulator's own keys (enforcement paused).
fn a_records(bed: &Bed) -> Vec<String> {
    bed.moto().enforce_iam(false);
    let records = support::runtime().block_on(async {
        seed::zone_records(&bed.moto().route53().await, bed.zone_id.as_ref().unwrap()).await
    });
    bed.moto().enforce_iam(true);
    records
        .into_iter()
        .filter(|((_, t), _)| t == "A")
        .map(|((n, _), _)| n)
        .collect()
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_master_syncs_under_kops_policy_with_the_zone_by_id_by_name_or_private() {
    for zone_by in ["id", "name", "private"] {
        let (bed, credentials, spec) = bed_under_policy(NodeKind::HaMaster, zone_by, None);
        let cold = run(&bed, &credentials, &spec, "sync", &[]);
        assert_eq!(cold.code, 0, "zone by {zone_by}: {cold:#?}");
        assert_eq!(
            bed.moto().denied(),
            Vec::<String>::new(),
            "zone by {zone_by}"
        );
        assert!(
            a_records(&bed).contains(&"etcd-a.internal.ha.example.com".to_owned()),
            "zone by {zone_by}"
        );
        let converged = run(&bed, &credentials, &spec, "sync", &[]);
        assert_eq!(converged.code, 0, "zone by {zone_by}: {converged:#?}");
        assert!(!converged.report().changed, "zone by {zone_by}");
        assert_eq!(
            bed.moto().denied(),
            Vec::<String>::new(),
            "zone by {zone_by}"
        );
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn each_command_runs_under_kops_policy() {
    for command in [
        "discover-volumes",
        "mount",
        "publish-dns",
        "render-manifests",
    ] {
        let (bed, credentials, spec) = bed_under_policy(NodeKind::HaMaster, "id", None);
        let out = run(&bed, &credentials, &spec, command, &[]);
        assert_eq!(out.code, 0, "{command}: {out:#?}");
        assert_eq!(bed.moto().denied(), Vec::<String>::new(), "{command}");
    }
}

#[test]
fn a_gossip_worker_syncs_with_describe_instances_alone() {
    let (bed, credentials, spec) = bed_under_policy(NodeKind::GossipWorker, "", None);
    bed.moto().reset_operations();
    let out = run(&bed, &credentials, &spec, "sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(bed.moto().denied(), Vec::<String>::new());
    let operations = bed.moto().operations();
    assert!(
        operations.iter().all(|o| o == "DescribeInstances"),
        "{operations:?}"
    );
    let hosts = std::fs::read_to_string(bed.root.join("/etc/hosts")).unwrap();
    assert!(hosts.contains("api.internal.minimal.k8s.local"), "{hosts}");
}

/// A role that may not tag volumes (kOps' IRSA control-plane role lacks `ec2:CreateTags`):
/// the volumes are formatted and mounted, one warning names the permission, the run succeeds.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_missing_create_tags_is_a_warning_and_the_volumes_mount() {
    let (bed, credentials, spec) =
        bed_under_policy(NodeKind::HaMaster, "id", Some("ec2:CreateTags"));
    let out = run(&bed, &credentials, &spec, "sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings.join("\n");
    assert!(warnings.contains("ec2:CreateTags"), "{warnings}");
    assert!(!bed.moto().denied().is_empty(), "nothing was denied");
    for disk in &bed.disks {
        assert_eq!(disk.mounted_at().len(), 1);
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_missing_permission_is_named_with_the_role_that_lacks_it() {
    let cases = [
        (
            NodeKind::HaMaster,
            "id",
            "ec2:DescribeVolumes",
            "masters.ha.example.com",
        ),
        (
            NodeKind::HaMaster,
            "id",
            "ec2:AttachVolume",
            "masters.ha.example.com",
        ),
        (
            NodeKind::HaMaster,
            "id",
            "route53:ChangeResourceRecordSets",
            "masters.ha.example.com",
        ),
        (
            NodeKind::HaMaster,
            "id",
            "route53:GetHostedZone",
            "masters.ha.example.com",
        ),
        (
            NodeKind::HaMaster,
            "name",
            "route53:ListHostedZones",
            "masters.ha.example.com",
        ),
        (
            NodeKind::GossipWorker,
            "",
            "ec2:DescribeInstances",
            "nodes.minimal.k8s.local",
        ),
    ];
    for (kind, zone_by, permission, role) in cases {
        let (bed, credentials, spec) = bed_under_policy(kind, zone_by, Some(permission));
        let out = run(&bed, &credentials, &spec, "sync", &[]);
        assert_eq!(out.code, 1, "{permission}: {out:#?}");
        let errors = out.error_lines();
        assert_eq!(errors.len(), 1, "{permission}: {out:#?}");
        for needle in [permission, role] {
            assert!(errors[0].contains(needle), "`{needle}` not in {errors:?}");
        }
        assert!(
            !bed.moto().denied().is_empty(),
            "{permission}: nothing was denied"
        );
    }
}
