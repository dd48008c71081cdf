//! A failed run still prints one report: with `-o json` a script always gets one object, with
//! `"error": {"message", "exit_code"}` and the changes made before the failure (docs/commands.md).

use crate::support;

use support::bed::{Bed, NodeKind};
use support::Protokube;

#[test]
fn a_usage_error_with_json_output_is_a_report() {
    let out = Protokube::new()
        .args(["sync", "-o", "json", "--no-such-flag"])
        .run();
    assert_eq!(out.code, 64, "{out:#?}");
    let report = out.report();
    assert_eq!(report.command, "sync");
    assert_eq!(report.failure().exit_code, 64);
    assert!(report.failure().message.contains("--no-such-flag"));
    assert_eq!(out.error_lines().len(), 1);
    // Text output keeps stdout empty when nothing was done.
    let out = Protokube::new().args(["sync", "--no-such-flag"]).run();
    assert_eq!((out.code, out.stdout.as_str()), (64, ""));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_held_lock_is_a_report_with_exit_code_75() {
    let bed = Bed::new(NodeKind::HaMaster);
    let lock = bed.root.join("/run/protokube.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&lock).unwrap();
    // SAFETY: flock on a file we own.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) },
        0
    );
    let out = bed.run("sync", &["--timeout", "1s"]);
    assert_eq!(out.code, 75, "{out:#?}");
    let report = out.report();
    assert_eq!(report.failure().exit_code, 75);
    assert!(report.failure().message.contains("protokube.lock"));
    assert!(report.changes.is_empty());
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_failure_after_changes_reports_them_and_the_error() {
    let bed = Bed::new(NodeKind::HaMaster);
    // The events volume holds a partition table: refused; the main volume is still mounted.
    bed.disks[1].write_partition_table();

    let out = bed.run("sync", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let report = out.report();
    assert_eq!(report.failure().exit_code, 1);
    let message = &report.failure().message;
    assert!(message.contains(&bed.volumes[1]), "{message}");
    assert!(message.contains("partition table"), "{message}");
    assert!(report.changed);
    let done = report.change_set();
    let main = &bed.volumes[0];
    assert!(
        done.contains(&("volume".into(), main.clone(), "attach".into())),
        "{done:#?}"
    );
    assert!(done.contains(&("filesystem".into(), main.clone(), "format".into())));
    assert!(!done
        .iter()
        .any(|c| c.0 == "filesystem" && c.1 == bed.volumes[1]));
    assert_eq!(bed.disks[0].mounted_at().len(), 1);
    // The text form prints the changes made, then stderr has the one error line.
    let text = bed.run("sync", &["-o", "text"]);
    assert_eq!(text.code, 1, "{text:#?}");
    assert_eq!(text.error_lines().len(), 1);
}
