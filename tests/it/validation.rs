//! Bad input changes nothing (docs/commands.md, docs/safety.md): every invalid flag value and every invalid value
//! derived from the flags and the spec, given to `sync` on a fresh master with blank volumes,
//! exits 64 (a flag) or 1 (a file or a spec value) before the lock, the cloud or any file: no
//! AWS call that changes anything, no mount, no format, nothing new under `--root`.

use crate::support;

use std::path::{Path, PathBuf};

use support::bed::{Bed, NodeKind};

/// AWS operations that change something.
const MUTATING: [&str; 6] = [
    "AttachVolume",
    "DetachVolume",
    "CreateTags",
    "DeleteTags",
    "POST /2013-04-01/hostedzone",
    "ModifyVolume",
];

/// One bad input: what it is, a spec file to use instead of the node's, flags, the exit code
/// and a text the error line names.
struct Case {
    what: &'static str,
    spec: Option<PathBuf>,
    args: Vec<String>,
    code: i32,
    needle: &'static str,
}

/// Every path under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().to_owned());
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A copy of the HA spec with one field changed.
fn spec_with(dir: &Path, path: &[&str], value: &str) -> PathBuf {
    support::spec_with(dir, "ha.yaml", path, value.into())
}

/// A bad flag: exit 64 (or 1 for a file it names), the error line naming `needle`.
fn bad_flag(what: &'static str, args: &[&str], code: i32, needle: &'static str) -> Case {
    Case {
        what,
        spec: None,
        args: args.iter().map(std::string::ToString::to_string).collect(),
        code,
        needle,
    }
}

/// A bad spec: exit 1, the error line naming `needle`.
fn bad_spec(what: &'static str, spec: PathBuf, needle: &'static str) -> Case {
    Case {
        what,
        spec: Some(spec),
        args: Vec::new(),
        code: 1,
        needle,
    }
}

/// Every bad input the table covers, its files under `inputs`.
fn cases(inputs: &Path) -> Vec<Case> {
    let broken_templates = inputs.join("templates");
    std::fs::create_dir(&broken_templates).unwrap();
    std::fs::write(broken_templates.join("etcd.yaml"), "{% if %}").unwrap();
    let broken_templates = broken_templates.display().to_string();
    vec![
        bad_flag(
            "internal suffix",
            &["--dns-internal-suffix", "bad_suffix..x"],
            64,
            "--dns-internal-suffix",
        ),
        bad_flag("zone rule", &["--zone", "a/b/c"], 64, "--zone"),
        bad_flag(
            "cluster name",
            &["--cluster-id", "Bad_Name"],
            64,
            "--cluster-id",
        ),
        bad_flag(
            "templates dir",
            &["--templates", "/nonexistent/templates"],
            64,
            "--templates",
        ),
        bad_flag("duration", &["--timeout", "soon"], 64, "--timeout"),
        bad_flag("output", &["-o", "xml"], 64, "xml"),
        bad_flag(
            "identity",
            &["--availability-zone", "us-east-1a\nx"],
            64,
            "--availability-zone",
        ),
        bad_flag(
            "broken template",
            &["--templates", &broken_templates],
            1,
            "etcd.yaml",
        ),
        bad_spec(
            "public name",
            spec_with(inputs, &["spec", "masterPublicName"], "api..ha.example.com"),
            "spec.masterPublicName",
        ),
        bad_spec(
            "spec zone",
            spec_with(inputs, &["spec", "dnsZone"], "bad zone!"),
            "dnsZone",
        ),
        bad_spec(
            "spec cluster name",
            spec_with(inputs, &["metadata", "name"], "Bad..Name"),
            "metadata.name",
        ),
        bad_spec(
            "unreadable spec",
            inputs.join("missing.yaml"),
            "missing.yaml",
        ),
    ]
}

/// `case` given to `sync` on a fresh master: its exit code and one error line naming the
/// input, and nothing changed — no AWS call at all, no mount, no format, no new file.
fn assert_changes_nothing(case: &Case) {
    let bed = Bed::new(NodeKind::HaMaster);
    let before = tree(bed.root.path());
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let out = match &case.spec {
        Some(spec) => bed.run_with_spec("sync", spec, &args),
        None => bed.run("sync", &args),
    };
    let (what, needle) = (case.what, case.needle);
    assert_eq!(out.code, case.code, "{what}: {out:#?}");
    let errors = out.error_lines();
    assert_eq!(errors.len(), 1, "{what}: one error line: {out:#?}");
    assert!(
        errors[0].contains(needle),
        "{what}: `{needle}` not in {errors:?}"
    );
    let operations = bed.moto().operations();
    assert!(
        operations
            .iter()
            .all(|o| !MUTATING.iter().any(|m| o.contains(m))),
        "{what}: {operations:?}"
    );
    for disk in &bed.disks {
        assert!(disk.mounted_at().is_empty(), "{what}");
        assert!(disk.fs_type().is_none(), "{what}");
    }
    assert_eq!(
        tree(bed.root.path()),
        before,
        "{what}: files appeared under --root"
    );
    // Validated before anything else: not even a lookup.
    assert!(operations.is_empty(), "{what}: {operations:?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn invalid_flags_and_derived_values_change_nothing() {
    let inputs = tempfile::tempdir().unwrap();
    for case in cases(inputs.path()) {
        assert_changes_nothing(&case);
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_bad_cluster_name_from_the_instance_tag_changes_nothing() {
    let bed = Bed::new(NodeKind::HaMaster);
    support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(support::bed::REGION).await;
        ec2.create_tags()
            .resources(&bed.instance_id)
            .tags(
                aws_sdk_ec2::types::Tag::builder()
                    .key("KubernetesCluster")
                    .value("Bad\nname")
                    .build(),
            )
            .send()
            .await
            .unwrap();
    });
    bed.moto().reset_operations();
    // A spec without metadata.name: the name comes from the tag.
    let inputs = tempfile::tempdir().unwrap();
    let spec = spec_with(inputs.path(), &["metadata", "name"], "");
    let before = tree(bed.root.path());
    let out = bed.run_with_spec("sync", &spec, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("KubernetesCluster"),
        "{out:#?}"
    );
    let operations = bed.moto().operations();
    assert_eq!(
        operations,
        ["DescribeInstances"],
        "only the read that found the bad name"
    );
    assert_eq!(tree(bed.root.path()), before);
}
