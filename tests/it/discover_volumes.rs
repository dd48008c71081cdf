//! `discover-volumes` end to end: the real binary, the real AWS SDK, the local AWS emulator and an
//! in-test IMDSv2 server.

use crate::support;

use support::{seed, ImdsServer, Moto, Protokube};

const REGION: &str = "us-east-1";
const ZONE: &str = "us-east-1a";
const CLUSTER: &str = "ha.example.com";

/// Seeds an HA cluster (members a, b, c in three zones, `main` and `events`), noise, and
/// broken volumes in this node's zone; returns (this node's instance id, ids by name).
async fn seed_ha_cluster(
    moto: &Moto,
) -> (String, std::collections::BTreeMap<&'static str, String>) {
    let ec2 = moto.ec2(REGION).await;
    let mut ids = std::collections::BTreeMap::new();
    for (member, zone) in [
        ("a", "us-east-1a"),
        ("b", "us-east-1b"),
        ("c", "us-east-1c"),
    ] {
        let value = format!("{member}/a,b,c");
        let main = seed::etcd_volume(&ec2, CLUSTER, zone, &[("main", &value)]).await;
        let events = seed::etcd_volume(&ec2, CLUSTER, zone, &[("events", &value)]).await;
        if member == "a" {
            ids.insert("main-a", main);
            ids.insert("events-a", events);
        }
    }
    // Another cluster's etcd volume in the same zone, and an untagged one.
    seed::etcd_volume(&ec2, "other.example.com", ZONE, &[("main", "a/a")]).await;
    seed::volume(&ec2, ZONE, &[("Name", "data")]).await;
    // Broken ones of this cluster in this zone: each must be named in a warning.
    ids.insert(
        "malformed",
        seed::etcd_volume(&ec2, CLUSTER, ZONE, &[("main", "a/b/c")]).await,
    );
    ids.insert(
        "not-member",
        seed::etcd_volume(&ec2, CLUSTER, ZONE, &[("main", "d/a,b,c")]).await,
    );
    ids.insert(
        "hostile",
        seed::etcd_volume(
            &ec2,
            CLUSTER,
            ZONE,
            &[("main", "a\n  evil: 1/a\n  evil: 1")],
        )
        .await,
    );
    ids.insert("no-etcd", seed::etcd_volume(&ec2, CLUSTER, ZONE, &[]).await);
    let node = seed::instance(&ec2, ZONE, &[("KubernetesCluster", CLUSTER)]).await;
    let root = seed::etcd_volume(&ec2, CLUSTER, ZONE, &[("main", "a/a,b,c")]).await;
    seed::attach(&ec2, &root, &node, "/dev/xvda").await;
    ids.insert("root", root);
    seed::attach(&ec2, &ids["events-a"], &node, "/dev/xvdv").await;
    (node, ids)
}

#[test]
fn reports_this_clusters_volumes_in_this_zone_and_warns_about_the_rest() {
    let moto = Moto::start();
    let (node, ids) = support::runtime().block_on(seed_ha_cluster(&moto));
    let imds = ImdsServer::for_instance(&node, ZONE, REGION, "10.0.0.10");
    moto.reset_operations();

    let out = Protokube::new()
        .moto(&moto)
        .imds(&imds)
        .args(["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"])
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.report();
    assert_eq!(report.command, "discover-volumes");
    assert!(!report.changed);
    assert!(report.changes.is_empty());

    let volumes = &report.volumes;
    let mut expected_ids = vec![ids["main-a"].clone(), ids["events-a"].clone()];
    expected_ids.sort();
    let got_ids: Vec<&str> = volumes.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(got_ids, expected_ids);
    let main = volumes.iter().find(|v| v.id == ids["main-a"]).unwrap();
    assert_eq!(
        (main.zone.as_str(), main.state.as_str()),
        (ZONE, "available")
    );
    assert_eq!(
        (&main.attached_to, &main.device, &main.mountpoint),
        (&None, &None, &None)
    );
    assert_eq!(main.etcd.len(), 1);
    let membership = &main.etcd[0];
    assert_eq!(
        (membership.cluster.as_str(), membership.member.as_str()),
        ("main", "a")
    );
    assert_eq!(membership.members, ["a", "b", "c"]);
    let events = volumes.iter().find(|v| v.id == ids["events-a"]).unwrap();
    assert_eq!(events.attached_to.as_deref(), Some(node.as_str()));
    assert_eq!(events.device.as_deref(), Some("/dev/xvdv"));
    assert_eq!(events.state, "in-use");
    assert_eq!(events.mountpoint, None);
    assert_eq!(events.etcd[0].cluster, "events");

    let warnings = &report.warnings;
    assert_eq!(warnings.len(), 5, "{warnings:#?}");
    for name in ["malformed", "not-member", "hostile", "no-etcd", "root"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("`{}`", ids[name]))),
            "no warning names the {name} volume {}: {warnings:#?}",
            ids[name]
        );
    }
    // The hostile value is shown escaped, on one line.
    assert!(warnings.iter().all(|w| !w.contains('\n')));

    assert_eq!(moto.operations(), ["DescribeVolumes"]);
    // IMDSv2: the token first, then the three items.
    let imds_requests = imds.requests();
    assert_eq!(
        imds_requests[0], "PUT /latest/api/token",
        "{imds_requests:?}"
    );
    assert_eq!(imds_requests.len(), 4, "{imds_requests:?}");
}

#[test]
fn one_describe_volumes_call_however_many_unrelated_volumes() {
    let moto = Moto::start();
    let (node, ids) = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        let main = seed::etcd_volume(&ec2, CLUSTER, ZONE, &[("main", "a/a")]).await;
        // More unrelated volumes than fit in one DescribeVolumes page (500).
        for i in 0..600 {
            let name = format!("unrelated-{i}");
            seed::volume(&ec2, ZONE, &[("Name", name.as_str())]).await;
        }
        let node = seed::instance(&ec2, ZONE, &[]).await;
        (node, main)
    });
    let imds = ImdsServer::for_instance(&node, ZONE, REGION, "10.0.0.10");
    moto.reset_operations();
    let out = Protokube::new()
        .moto(&moto)
        .imds(&imds)
        .args(["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"])
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.report();
    assert_eq!(report.volumes[0].id, ids);
    assert_eq!(report.volumes.len(), 1);
    assert_eq!(moto.operations(), ["DescribeVolumes"]);
}

#[test]
fn cluster_name_comes_from_the_instance_tag_when_not_given() {
    let moto = Moto::start();
    let (node, main) = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        let main = seed::etcd_volume(&ec2, CLUSTER, ZONE, &[("main", "a/a")]).await;
        let node = seed::instance(&ec2, ZONE, &[("KubernetesCluster", CLUSTER)]).await;
        (node, main)
    });
    let imds = ImdsServer::for_instance(&node, ZONE, REGION, "10.0.0.10");
    let out = Protokube::new()
        .moto(&moto)
        .imds(&imds)
        .args(["discover-volumes", "-o", "json"])
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes[0].id, main);

    // An instance without the tag and no flag or spec: one line saying what to pass.
    let bare = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        seed::instance(&ec2, ZONE, &[]).await
    });
    let imds = ImdsServer::for_instance(&bare, ZONE, REGION, "10.0.0.11");
    let out = Protokube::new()
        .moto(&moto)
        .imds(&imds)
        .args(["discover-volumes"])
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert_eq!(errors.len(), 1, "{out:#?}");
    assert!(
        errors[0].contains("pass --cluster-id or --cluster-spec"),
        "{errors:?}"
    );
}

#[test]
fn cluster_name_comes_from_the_spec_and_flags_override_identity() {
    let moto = Moto::start();
    let main = support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        seed::etcd_volume(&ec2, CLUSTER, "us-east-1b", &[("main", "b/a,b,c")]).await
    });
    let spec = support::fixture("cluster-completed/ha.yaml");
    // No metadata service at all: every identity value comes from a flag or its variable.
    let out = Protokube::new()
        .moto(&moto)
        .env("PROTOKUBE_AVAILABILITY_ZONE", "us-east-1b")
        // The SDK's standard region variable stands in for --region.
        .env("AWS_REGION", REGION)
        .args([
            "discover-volumes",
            "--instance-id",
            "i-0000000000000000a",
            "-o",
            "yaml",
        ])
        .arg_path("--cluster-spec", &spec)
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.yaml_report();
    assert_eq!(report.volumes[0].id, main);
    assert_eq!(report.volumes[0].etcd[0].member, "b");
}

#[test]
fn text_output_is_a_table() {
    let moto = Moto::start();
    support::runtime().block_on(async {
        let ec2 = moto.ec2(REGION).await;
        seed::etcd_volume(
            &ec2,
            CLUSTER,
            ZONE,
            &[("main", "a/a,b,c"), ("events", "a/a,b,c")],
        )
        .await;
    });
    let out = Protokube::new()
        .moto(&moto)
        .args([
            "discover-volumes",
            "--cluster-id",
            CLUSTER,
            "--instance-id",
            "i-1",
        ])
        .args(["--availability-zone", ZONE, "--region", REGION])
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    // Volume ids are random: replace them before the snapshot.
    let stdout = regex_replace_volume_ids(&out.stdout);
    insta::assert_snapshot!(stdout);
}

fn regex_replace_volume_ids(text: &str) -> String {
    text.split_inclusive(|c: char| c.is_whitespace())
        .map(|word| {
            if word.starts_with("vol-") {
                let trimmed = word.trim_end();
                let pad = &word[trimmed.len()..];
                format!("vol-{}{pad}", "X".repeat(trimmed.len() - 4))
            } else {
                word.to_owned()
            }
        })
        .collect()
}
