//! The .deb's units and maintainer scripts against kOps' nodeup unit: the package's units have
//! names of their own (`protokube-sync.service`, `protokube-sync.timer`), so installing,
//! upgrading from the old names or removing the package never changes `protokube.service`,
//! which nodeup writes into `/lib/systemd/system` (`/usr/lib/…` on merged-`/usr` images).
//! Real `dpkg` installs packages made from the repository's `packaging/deb/` scripts and
//! `systemd/` units into a temporary root (`--root`, the scripts run chrootless with
//! `DPKG_ROOT`); the old package is the 0.1.0-1 layout (`protokube.service`,
//! `protokube.timer`). `scripts/release` checks the real .deb lists neither old name.

use std::path::{Path, PathBuf};
use std::process::Command;

const UNITS: &str = "usr/lib/systemd/system";
const NODEUP_UNIT: &str = "[Unit]\nDescription=protokube (written by kOps' nodeup)\n\n[Service]\nExecStart=/opt/kops/bin/protokube --master=true --v=4\nRestart=always\n";

/// A root dpkg installs into, and the packages it installs.
struct Packages {
    dir: tempfile::TempDir,
}

impl Packages {
    fn new() -> Self {
        let packages = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        for dir in [
            "root/var/lib/dpkg/info",
            "root/var/lib/dpkg/updates",
            "root/var/lib/dpkg/triggers",
            "root/etc/systemd/system/multi-user.target.wants",
            "root/etc/systemd/system/timers.target.wants",
        ] {
            std::fs::create_dir_all(packages.dir.path().join(dir)).unwrap();
        }
        for file in ["root/var/lib/dpkg/status", "root/var/lib/dpkg/available"] {
            std::fs::write(packages.dir.path().join(file), "").unwrap();
        }
        packages
    }

    fn root(&self, path: &str) -> PathBuf {
        self.dir
            .path()
            .join("root")
            .join(path.trim_start_matches('/'))
    }

    /// Builds a `protokube` package of `version` with these units (name → text) and, when
    /// `scripts`, the repository's maintainer scripts.
    fn build(&self, version: &str, units: &[(&str, String)], scripts: bool) -> PathBuf {
        let tree = self.dir.path().join(format!("tree-{version}"));
        std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
        std::fs::create_dir_all(tree.join(UNITS)).unwrap();
        std::fs::write(
            tree.join("DEBIAN/control"),
            format!(
                "Package: protokube\nVersion: {version}\nArchitecture: all\nMaintainer: t\n\
                 Description: protokube\n"
            ),
        )
        .unwrap();
        if scripts {
            let repo = &crate::support::repo();
            for entry in std::fs::read_dir(repo.join("packaging/deb")).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), tree.join("DEBIAN").join(entry.file_name())).unwrap();
            }
        }
        for (name, text) in units {
            std::fs::write(tree.join(UNITS).join(name), text).unwrap();
        }
        let deb = self.dir.path().join(format!("protokube_{version}.deb"));
        dpkg(
            &["dpkg-deb", "--root-owner-group", "--build"],
            &[&tree, &deb],
        );
        deb
    }

    /// The package as this repository builds it (its units and scripts).
    fn current(&self) -> PathBuf {
        let repo = &crate::support::repo();
        let unit = |name: &'static str| {
            (
                name,
                std::fs::read_to_string(repo.join("systemd").join(name)).unwrap(),
            )
        };
        self.build(
            "0.2.0-1",
            &[unit("protokube-sync.service"), unit("protokube-sync.timer")],
            true,
        )
    }

    /// The 0.1.0-1 package: its units under kOps' names.
    fn old(&self) -> PathBuf {
        self.build(
            "0.1.0-1",
            &[
                (
                    "protokube.service",
                    "[Unit]\nDescription=protokube 0.1.0\n".to_owned(),
                ),
                ("protokube.timer", "[Timer]\nOnBootSec=1min\n".to_owned()),
            ],
            false,
        )
    }

    fn dpkg(&self, args: &[&str]) {
        let root = format!("--root={}", self.root("/").display());
        let mut all = vec!["dpkg", &root, "--force-script-chrootless"];
        all.extend(args);
        dpkg(&all, &[]);
    }

    fn install(&self, deb: &Path) {
        let root = format!("--root={}", self.root("/").display());
        dpkg(&["dpkg", &root, "--force-script-chrootless", "-i"], &[deb]);
    }

    fn units(&self) -> Vec<String> {
        crate::support::dir_names(&self.root(UNITS))
    }

    fn enabled(&self, wants: &str) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(self.root(&format!("/etc/systemd/system/{wants}")))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        names.sort();
        names
    }

    /// nodeup writes its unit (over the old package's file, as on a merged-/usr image) and
    /// enables it.
    fn nodeup_writes_its_unit(&self) {
        std::fs::create_dir_all(self.root(UNITS)).unwrap();
        std::fs::write(
            self.root(&format!("{UNITS}/protokube.service")),
            NODEUP_UNIT,
        )
        .unwrap();
        let link = self.root("/etc/systemd/system/multi-user.target.wants/protokube.service");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/lib/systemd/system/protokube.service", link).unwrap();
    }

    fn nodeup_unit(&self) -> Option<String> {
        std::fs::read_to_string(self.root(&format!("{UNITS}/protokube.service"))).ok()
    }
}

fn dpkg(args: &[&str], paths: &[&Path]) {
    let output = Command::new(args[0])
        .args(&args[1..])
        .args(paths)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", args[0]));
    assert!(
        output.status.success(),
        "{args:?} {paths:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
#[ignore = "needs root: dpkg installs into a temporary root; scripts/test runs it as root"]
fn a_fresh_install_and_its_removal_never_touch_nodeup_s_unit() {
    let packages = Packages::new();
    packages.nodeup_writes_its_unit();
    packages.install(&packages.current());
    assert_eq!(
        packages.units(),
        [
            "protokube-sync.service",
            "protokube-sync.timer",
            "protokube.service"
        ]
    );
    assert_eq!(packages.nodeup_unit().as_deref(), Some(NODEUP_UNIT));
    // It enables nothing of its own.
    assert!(packages.enabled("timers.target.wants").is_empty());
    // The operator enables the timer; removing the package disables it, and only it.
    std::os::unix::fs::symlink(
        "/usr/lib/systemd/system/protokube-sync.timer",
        packages.root("/etc/systemd/system/timers.target.wants/protokube-sync.timer"),
    )
    .unwrap();
    packages.dpkg(&["--remove", "protokube"]);
    assert_eq!(packages.units(), ["protokube.service"]);
    assert!(packages.enabled("timers.target.wants").is_empty());
    assert_eq!(packages.nodeup_unit().as_deref(), Some(NODEUP_UNIT));
    assert_eq!(
        packages.enabled("multi-user.target.wants"),
        ["protokube.service"]
    );
    packages.dpkg(&["--purge", "protokube"]);
    assert_eq!(packages.nodeup_unit().as_deref(), Some(NODEUP_UNIT));
}

#[test]
#[ignore = "needs root: dpkg installs into a temporary root; scripts/test runs it as root"]
fn an_upgrade_from_the_old_names_keeps_nodeup_s_unit_and_the_operator_s_timer() {
    // A kOps node: the old package installed, nodeup then wrote its unit over the package's
    // file; the operator had enabled the old timer.
    let packages = Packages::new();
    packages.install(&packages.old());
    packages.nodeup_writes_its_unit();
    std::os::unix::fs::symlink(
        "/usr/lib/systemd/system/protokube.timer",
        packages.root("/etc/systemd/system/timers.target.wants/protokube.timer"),
    )
    .unwrap();
    packages.install(&packages.current());
    assert_eq!(
        packages.units(),
        [
            "protokube-sync.service",
            "protokube-sync.timer",
            "protokube.service"
        ]
    );
    assert_eq!(packages.nodeup_unit().as_deref(), Some(NODEUP_UNIT));
    assert_eq!(
        packages.enabled("timers.target.wants"),
        ["protokube-sync.timer"]
    );
    assert_eq!(
        packages.enabled("multi-user.target.wants"),
        ["protokube.service"]
    );
    assert!(!packages.root("/var/lib/protokube/package-upgrade").exists());
    // The package no longer claims nodeup's file: removing it leaves the unit alone.
    packages.dpkg(&["--purge", "protokube"]);
    assert_eq!(packages.nodeup_unit().as_deref(), Some(NODEUP_UNIT));
}

#[test]
#[ignore = "needs root: dpkg installs into a temporary root; scripts/test runs it as root"]
fn an_upgrade_from_the_old_names_removes_only_the_old_package_s_own_units() {
    // Not a kOps node: the old package's units are its own, untouched, the timer not enabled.
    let packages = Packages::new();
    packages.install(&packages.old());
    packages.install(&packages.current());
    assert_eq!(
        packages.units(),
        ["protokube-sync.service", "protokube-sync.timer"]
    );
    assert!(packages.enabled("timers.target.wants").is_empty());
}
