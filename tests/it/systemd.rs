//! The systemd units in `systemd/` pass `systemd-analyze verify`, run in a root the test builds
//! so every check has what it needs: the unit tree, the protokube binary at the paths ExecStart
//! names, the environment file and the man pages the units' Documentation= lines name. The
//! unit nodeup writes (`protokube-nodeup.service`) has nodeup's exact ExecStart line.

use crate::support;

/// The units `systemd-analyze verify` checks.
const UNITS: [&str; 4] = [
    "protokube-sync.service",
    "protokube-sync.timer",
    "protokube-gossip.service",
    "protokube-nodeup.service",
];

/// A root with what every check needs: the system's unit tree, the binary where the units run
/// it, nodeup's and the operator's environment files, the man pages, the units and the drop-in.
fn unit_root() -> tempfile::TempDir {
    let repo = &crate::support::repo();
    let root = tempfile::tempdir().unwrap();
    let r = |p: &str| root.path().join(p.trim_start_matches('/'));
    let write = |path: &str, text: &str| {
        std::fs::create_dir_all(r(path).parent().unwrap()).unwrap();
        std::fs::write(r(path), text).unwrap();
    };
    std::fs::create_dir_all(r("/usr/lib/systemd")).unwrap();
    let status = std::process::Command::new("cp")
        .args(["-r", "/usr/lib/systemd/system"])
        .arg(r("/usr/lib/systemd/system"))
        .status()
        .unwrap();
    assert!(status.success(), "copying the system's unit tree");
    for bin in ["/opt/protokube/bin", "/opt/kops/bin"] {
        std::fs::create_dir_all(r(bin)).unwrap();
        std::fs::copy(
            env!("CARGO_BIN_EXE_protokube"),
            r(&format!("{bin}/protokube")),
        )
        .unwrap();
    }
    write(
        "/etc/sysconfig/protokube",
        "KUBECONFIG=/var/lib/kops/kubeconfig\n",
    );
    // The operator's settings: protokube's own file, read by the shipped unit and, through the
    // drop-in, by nodeup's unit after nodeup's /etc/sysconfig/protokube.
    write(
        "/etc/protokube/protokube.env",
        "PROTOKUBE_VERIFY_INTERVAL=30m\n",
    );
    std::fs::create_dir_all(r("/man/man1")).unwrap();
    for entry in std::fs::read_dir(repo.join("man")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), r("/man/man1").join(entry.file_name())).unwrap();
    }
    let drop_in = "protokube-nodeup.service.d/50-operator-settings.conf";
    for unit in UNITS.iter().chain(&[drop_in]) {
        let to = r(&format!("/etc/systemd/system/{unit}"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo.join("systemd").join(unit), to).unwrap();
    }
    root
}

#[test]
fn units_pass_systemd_analyze_verify() {
    let root = unit_root();
    let output = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.path().display()))
        .args(UNITS)
        .env("MANPATH", root.path().join("man"))
        .output()
        .expect("systemd-analyze (systemd package)");
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "systemd-analyze verify: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let listed = std::process::Command::new("systemd-analyze")
        .arg("cat-config")
        .arg(format!("--root={}", root.path().display()))
        .arg("systemd/system/protokube-nodeup.service.d/50-operator-settings.conf")
        .output();
    if let Ok(listed) = listed {
        if listed.status.success() {
            let own = "EnvironmentFile=-/etc/protokube/protokube.env";
            assert!(String::from_utf8_lossy(&listed.stdout).contains(own));
        }
    }
}

#[test]
fn the_units_run_what_they_say_and_read_the_operators_settings_last() {
    let repo = &crate::support::repo();
    let service = std::fs::read_to_string(repo.join("systemd/protokube-sync.service")).unwrap();
    assert!(service.contains("Type=oneshot"));
    assert!(service.contains("ExecStart=/opt/protokube/bin/protokube sync"));
    assert!(service.contains("Before=kubelet.service"));
    assert!(service.contains("SuccessExitStatus=75"));
    let timer = std::fs::read_to_string(repo.join("systemd/protokube-sync.timer")).unwrap();
    assert!(timer.contains("OnBootSec=") && timer.contains("RandomizedDelaySec="));
    let nodeup = std::fs::read_to_string(repo.join("systemd/protokube-nodeup.service")).unwrap();
    assert!(nodeup.contains(&format!("ExecStart={}\n", support::NODEUP_EXEC_START)));
    assert!(nodeup.contains("Restart=always"));
    // nodeup's file first, protokube's own after it (later files win), in both ways of running.
    let own = "EnvironmentFile=-/etc/protokube/protokube.env";
    let sysconfig = service
        .find("EnvironmentFile=-/etc/sysconfig/protokube")
        .unwrap();
    assert!(service.find(own).unwrap() > sysconfig);
    let drop_in = std::fs::read_to_string(
        repo.join("systemd/protokube-nodeup.service.d/50-operator-settings.conf"),
    )
    .unwrap();
    assert!(drop_in.contains(&format!("[Service]\n{own}\n")));
}

/// The settings file the .deb installs (`/etc/protokube/protokube.env`, a conffile) sets
/// nothing on its own, and every variable it shows commented out is one the binary reads.
#[test]
fn the_packaged_settings_file_sets_nothing_and_names_real_variables() {
    let repo = &crate::support::repo();
    let text = std::fs::read_to_string(repo.join("packaging/protokube.env")).unwrap();
    let help = support::Protokube::new().args(["sync", "--help"]).run();
    assert_eq!(help.code, 0, "{help:#?}");
    let mut shown = 0;
    for line in text.lines() {
        assert!(
            line.is_empty() || line.starts_with('#'),
            "packaging/protokube.env sets `{line}`: the package must set nothing"
        );
        let Some((name, _)) = line.strip_prefix('#').and_then(|l| l.split_once('=')) else {
            continue;
        };
        if name.starts_with("PROTOKUBE_") && !name.contains(' ') {
            assert!(
                help.stdout.contains(&format!("{name}=")),
                "packaging/protokube.env shows `{name}`, which `protokube sync` does not read"
            );
            shown += 1;
        }
    }
    assert!(shown >= 5, "the settings file shows {shown} variables");
    let service = std::fs::read_to_string(repo.join("systemd/protokube-sync.service")).unwrap();
    assert!(service.contains("EnvironmentFile=-/etc/protokube/protokube.env"));
}
