//! Names protokube writes, under hostile input (docs/commands.md): `spec.masterPublicName` is untrusted
//! (no injection into the hosts file, no wildcard, no zone apex, nothing outside the cluster's
//! domain or an allowed zone); joined etcd names over 63 characters are refused; a name held
//! through an alias or a type protokube does not write is left alone; a change of over 1 000
//! records is split within Route53's limits and published whole.

use crate::support;

use aws_sdk_route53::types::{
    AliasTarget, Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType,
};
use support::bed::{Bed, NodeKind, REGION};
use support::seed;

fn zone_records(
    bed: &Bed,
) -> std::collections::BTreeMap<(String, String), (Option<i64>, Vec<String>)> {
    support::runtime().block_on(async {
        seed::zone_records(&bed.moto().route53().await, bed.zone_id.as_ref().unwrap()).await
    })
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_hostile_public_name_is_refused_before_anything_is_done() {
    let inputs = tempfile::tempdir().unwrap();
    let cases = [
        (
            NodeKind::GossipMaster,
            "minimal_gossip.yaml",
            "6.6.6.6\tregistry.k8s.io",
            "valid DNS name",
        ),
        (
            NodeKind::GossipMaster,
            "minimal_gossip.yaml",
            "api.minimal.k8s.local\n6.6.6.6 x",
            "valid DNS name",
        ),
        (
            NodeKind::GossipMaster,
            "minimal_gossip.yaml",
            "registry.k8s.io",
            "cluster's domain",
        ),
        (NodeKind::HaMaster, "ha.yaml", "*.example.com", "wildcard"),
        (NodeKind::HaMaster, "ha.yaml", "example.com", "apex"),
        (
            NodeKind::HaMaster,
            "ha.yaml",
            "k8s.other.org",
            "allowed zone",
        ),
        (
            NodeKind::HaMaster,
            "ha.yaml",
            &format!("{}.ha.example.com", "a".repeat(64)),
            "63 at most",
        ),
    ];
    for (kind, base, name, needle) in cases {
        let bed = Bed::new(kind);
        let spec = support::spec_with(
            inputs.path(),
            base,
            &["spec", "masterPublicName"],
            name.into(),
        );
        let out = bed.run_with_spec("sync", &spec, &[]);
        assert_eq!(out.code, 1, "{name:?}: {out:#?}");
        assert!(out.error_lines()[0].contains(needle), "{name:?}: {out:#?}");
        assert!(
            bed.moto().operations().is_empty(),
            "{name:?}: asked the cloud"
        );
        assert!(!bed.root.join("/etc").exists(), "{name:?}: wrote a file");
        for disk in &bed.disks {
            assert!(disk.mounted_at().is_empty());
        }
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_zone_apex_is_never_written_even_when_the_zone_is_given_by_id() {
    let bed = Bed::new(NodeKind::HaMaster);
    let inputs = tempfile::tempdir().unwrap();
    let spec = support::spec_with(
        inputs.path(),
        "ha.yaml",
        &["spec", "masterPublicName"],
        "example.com".into(),
    );
    let zone = format!("*/{}", bed.zone_id.as_ref().unwrap());
    // Route53 is told the zone by id: its name (the apex) is known only once it is read.
    let out = support::Protokube::new()
        .moto(bed.moto())
        .imds(bed.imds.as_ref().unwrap())
        .args(["publish-dns", "--master", "-o", "json", "--zone", &zone])
        .arg_path("--cluster-spec", &spec)
        .arg_path("--root", bed.root.path())
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("apex"), "{out:#?}");
    let records = zone_records(&bed);
    assert!(
        records.keys().all(|(_, t)| t == "NS" || t == "SOA"),
        "{records:?}"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_joined_etcd_name_over_63_characters_is_refused() {
    let bed = Bed::new(NodeKind::HaMaster);
    let key = "k".repeat(40);
    let member = "m".repeat(30);
    let long = support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(REGION).await;
        seed::etcd_volume(
            &ec2,
            support::bed::HA,
            "us-east-1b",
            &[(&key, &format!("{member}/{member}"))],
        )
        .await
    });
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings.join("\n");
    assert!(
        warnings.contains(&long) && warnings.contains("63 at most"),
        "{warnings}"
    );
    assert!(zone_records(&bed)
        .keys()
        .all(|(name, _)| !name.contains(&member)));
}

/// A record set of `kind` with `values` (TTL 300).
fn record_set(name: &str, kind: &str, values: &[&str]) -> ResourceRecordSet {
    let mut set = ResourceRecordSet::builder()
        .name(name)
        .r#type(RrType::from(kind))
        .ttl(300);
    for value in values {
        set = set.resource_records(ResourceRecord::builder().value(*value).build().unwrap());
    }
    set.build().unwrap()
}

/// `api.ha.example.com` as an alias to a load balancer.
fn alias_to_a_load_balancer() -> ResourceRecordSet {
    ResourceRecordSet::builder()
        .name("api.ha.example.com")
        .r#type(RrType::A)
        .alias_target(
            AliasTarget::builder()
                .hosted_zone_id("Z35SXDOTRQ7X7K")
                .dns_name("lb-123.us-east-1.elb.amazonaws.com")
                .evaluate_target_health(false)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

/// Creates `sets` in the bed's zone in one change.
fn create(bed: &Bed, sets: Vec<ResourceRecordSet>) {
    support::runtime().block_on(async {
        let mut batch = ChangeBatch::builder();
        for set in sets {
            batch = batch.changes(
                Change::builder()
                    .action(ChangeAction::Create)
                    .resource_record_set(set)
                    .build()
                    .unwrap(),
            );
        }
        bed.moto()
            .route53()
            .await
            .change_resource_record_sets()
            .hosted_zone_id(bed.zone_id.as_ref().unwrap())
            .change_batch(batch.build().unwrap())
            .send()
            .await
            .unwrap();
    });
}

/// Where the alias at `api.ha.example.com` points.
fn alias_target(bed: &Bed) -> Option<String> {
    support::runtime().block_on(async {
        let out = bed
            .moto()
            .route53()
            .await
            .list_resource_record_sets()
            .hosted_zone_id(bed.zone_id.as_ref().unwrap())
            .start_record_name("api.ha.example.com")
            .start_record_type(RrType::A)
            .max_items(1)
            .send()
            .await
            .unwrap();
        out.resource_record_sets()[0]
            .alias_target()
            .map(|a| a.dns_name().trim_end_matches('.').to_owned())
    })
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn names_held_through_an_alias_or_a_type_protokube_does_not_write_are_left_alone() {
    let bed = Bed::new(NodeKind::HaMaster);
    let owner = "\"heritage=protokube,protokube/cluster=ha.example.com\"";
    create(
        &bed,
        vec![
            alias_to_a_load_balancer(),
            record_set("api.ha.example.com", "TXT", &[owner]),
            record_set("api.internal.ha.example.com", "AAAA", &["fd00::1"]),
            record_set(
                "etcd-a.internal.ha.example.com",
                "MX",
                &["10 mail.example.com"],
            ),
            record_set("etcd-a.internal.ha.example.com", "TXT", &[owner]),
        ],
    );
    let before = zone_records(&bed);
    let out = bed.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings.join("\n");
    for needle in [
        "api.ha.example.com",
        "alias A",
        "api.internal.ha.example.com",
        "etcd-a.internal.ha.example.com",
        "MX",
    ] {
        assert!(warnings.contains(needle), "`{needle}` not in {warnings}");
    }
    let after = zone_records(&bed);
    for name in [
        "api.ha.example.com",
        "api.internal.ha.example.com",
        "etcd-a.internal.ha.example.com",
    ] {
        let of = |records: &std::collections::BTreeMap<(String, String), _>| {
            records
                .keys()
                .filter(|(n, _)| n == name)
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(of(&after), of(&before), "{name} was changed");
    }
    assert_eq!(
        alias_target(&bed).as_deref(),
        Some("lb-123.us-east-1.elb.amazonaws.com"),
        "the alias still points at its load balancer"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_change_of_over_a_thousand_records_is_split_and_published_whole() {
    // 11 masters, each with one volume carrying 47 etcd memberships (the 50-tag limit with
    // kOps' 3 others): 517 member names + the API names, each an A and a TXT record.
    let bed = Bed::new(NodeKind::HaMaster);
    let members: Vec<String> = (0..11).map(|i| format!("m{i}")).collect();
    let all = members.join(",");
    support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(REGION).await;
        for (i, member) in members.iter().enumerate() {
            let tags = [
                ("KubernetesCluster", support::bed::HA),
                ("k8s.io/role/master", "1"),
            ];
            let instance = seed::instance(&ec2, "us-east-1b", &tags).await;
            let values: Vec<(String, String)> = (0..47)
                .map(|k| (format!("k{k:02}"), format!("{member}/{all}")))
                .collect();
            let etcd: Vec<(&str, &str)> = values
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let volume = seed::etcd_volume(&ec2, support::bed::HA, "us-east-1b", &etcd).await;
            seed::attach(
                &ec2,
                &volume,
                &instance,
                &format!("/dev/xvd{}", (b'f' + i as u8) as char),
            )
            .await;
        }
    });
    bed.moto().reset_operations();
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let batches = bed.moto().rrset_requests("POST");
    assert!(batches >= 2, "{batches} batch(es)");
    let records = zone_records(&bed);
    for member in &members {
        for k in 0..47 {
            let name = format!("etcd-k{k:02}-{member}.internal.ha.example.com");
            assert!(records.contains_key(&(name.clone(), "A".into())), "{name}");
            assert!(records.contains_key(&(name, "TXT".into())));
        }
    }
    // Converged: nothing more to send.
    bed.moto().reset_operations();
    let again = bed.run("publish-dns", &[]);
    assert!(!again.report().changed, "{again:#?}");
    assert_eq!(bed.moto().rrset_requests("POST"), 0);
}
