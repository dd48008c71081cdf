//! Files generated from the clap definitions and kept in the repository: man pages in `man/` and
//! shell completions in `completions/`. These tests fail when they drift; regenerate with
//! `PROTOKUBE_BLESS=1 cargo test --test it generated_files`.

use clap::CommandFactory;
use protokube::Cli;

/// A man page: clap_mangen's sections (options include the global flags, propagated by
/// `build`), then EXIT STATUS, ENVIRONMENT (every flag's variable, from the clap definitions),
/// FILES and SEE ALSO.
fn render_man(command: &clap::Command, siblings: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .expect("rendering a man page");
    out.extend(extra_sections(command, siblings).into_bytes());
    out
}

fn extra_sections(command: &clap::Command, siblings: &[String]) -> String {
    use roff::{bold, italic, roman, Roff};
    let mut page = Roff::new();
    let item = |page: &mut Roff, term: roff::Inline, text: &str| {
        page.control("TP", []).text([term]).text([roman(text)]);
    };
    page.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in [
        ("0", "done: nothing left to do"),
        ("1", "failed (including unreadable or invalid input files); the report and the error line say why"),
        ("2", "something was changed (or would be, with --dry-run); only with --detailed-exitcode"),
        ("3", "done, but this node looks like a master (kOps' master tags, or etcd volumes mounted) and --master is not set; only with --detailed-exitcode"),
        ("64", "usage error: a bad flag or value; nothing was changed"),
        ("75", "not ready yet, retry later: a wait timed out, the lock is held, a device has not appeared, AWS throttled past its retries"),
    ] {
        item(&mut page, bold(code), meaning);
    }
    page.control("SH", ["ENVIRONMENT"]);
    let mut flags: Vec<(String, String)> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| {
            let env = a.get_env()?.to_string_lossy().into_owned();
            let flag = a
                .get_long()
                .map_or_else(|| a.get_id().to_string(), |l| format!("--{l}"));
            Some((env, flag))
        })
        .collect();
    flags.sort();
    for (env, flag) in flags {
        item(
            &mut page,
            bold(env),
            &format!("the value of {flag}; the flag wins"),
        );
    }
    for (env, meaning) in [
        (
            "AWS_REGION, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_PROFILE, …",
            "the AWS SDK's standard configuration and credential chain",
        ),
        (
            "AWS_EC2_METADATA_SERVICE_ENDPOINT",
            "another instance metadata service endpoint",
        ),
        (
            "RUST_LOG",
            "a finer log filter than -v/-q (tracing's EnvFilter syntax)",
        ),
        (
            "JOURNAL_STREAM",
            "set by systemd: text logs carry no timestamps when stderr is the journal",
        ),
    ] {
        item(&mut page, bold(env), meaning);
    }
    page.control("SH", ["FILES"]);
    page.text([
        roman("Every path is taken under "),
        bold("--root"),
        roman("."),
    ]);
    for (path, meaning) in [
        ("/var/lib/protokube/state.json", "the etcd volumes mounted here, the last full check of the cloud and the hosted zones found (bookkeeping; removed by reset)"),
        ("/run/protokube.lock", "the run lock"),
        ("/etc/kubernetes/manifests/", "the static-pod manifests protokube writes (etcd ones link to their volumes)"),
        ("/mnt/master-vol-*", "the etcd volumes' mount points; k8s.io/manifests/ on each holds its etcd manifest and version record"),
        ("/etc/hosts", "the managed block for clusters without DNS (--dns hosts)"),
        ("/etc/sysconfig/protokube", "the systemd units' environment file (PROTOKUBE_* settings)"),
    ] {
        item(&mut page, bold(path), meaning);
    }
    page.control("SH", ["SEE ALSO"]);
    let mut see: Vec<roff::Inline> = Vec::new();
    for (i, name) in siblings
        .iter()
        .filter(|n| **n != command.get_name())
        .enumerate()
    {
        if i > 0 {
            see.push(roman(", "));
        }
        see.push(bold(name.clone()));
        see.push(roman("(1)"));
    }
    see.push(roman(", "));
    see.push(italic("systemd.timer"));
    see.push(roman(
        "(5), the README's operator quick start, docs/operations.md's troubleshooting table",
    ));
    page.text(see);
    page.to_roff()
}

/// The command with environment values hidden, so the developer's shell cannot leak in, and
/// the global flags propagated to every subcommand.
fn command() -> clap::Command {
    // The plain version: the long one names the commit, which would change the pages each commit.
    let mut command = Cli::command()
        .long_version(env!("CARGO_PKG_VERSION"))
        .disable_help_subcommand(true)
        .mut_args(|a| a.hide_env_values(true));
    command.build();
    command
}

/// Every man page: `protokube.1` and one `protokube-<command>.1` per subcommand.
fn man_pages() -> Vec<(String, Vec<u8>)> {
    let top = command();
    let mut names = vec!["protokube".to_owned()];
    names.extend(
        top.get_subcommands()
            .map(|s| format!("protokube-{}", s.get_name())),
    );
    let mut pages = vec![("protokube.1".to_owned(), render_man(&top, &names))];
    for sub in top.get_subcommands() {
        let name = format!("protokube-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(&*Box::leak(name.clone().into_boxed_str()))
            .mut_args(|a| a.hide_env_values(true));
        pages.push((format!("{name}.1"), render_man(&sub, &names)));
    }
    pages
}

/// Every subcommand's page carries the global flags and the sections an operator looks for.
#[test]
fn every_man_page_has_the_global_flags_and_the_operator_sections() {
    for (name, bytes) in man_pages() {
        let text = String::from_utf8(bytes).unwrap();
        for needle in [
            r"\-\-cluster\-spec",
            r"\-\-root",
            r"\-\-verify\-interval",
            r"\-\-metrics\-file",
            r"\-\-log\-format",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH \"SEE ALSO\"",
            "PROTOKUBE_ROOT",
        ] {
            assert!(text.contains(needle), "{name} lacks {needle}");
        }
    }
}

fn completions() -> Vec<(String, Vec<u8>)> {
    use clap_complete::{generate, Shell};
    [
        (Shell::Bash, "protokube.bash"),
        (Shell::Zsh, "_protokube"),
        (Shell::Fish, "protokube.fish"),
    ]
    .into_iter()
    .map(|(shell, file)| {
        let mut out = Vec::new();
        generate(shell, &mut command(), "protokube", &mut out);
        (file.to_owned(), out)
    })
    .collect()
}

/// Compares (or, with PROTOKUBE_BLESS set, rewrites) a directory of generated files.
fn check(dir_name: &str, expected: Vec<(String, Vec<u8>)>) {
    let dir = crate::support::repo().join(dir_name);
    let fix = "run PROTOKUBE_BLESS=1 cargo test --test it generated_files";
    if std::env::var_os("PROTOKUBE_BLESS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        for (name, bytes) in &expected {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    present.sort();
    let mut wanted: Vec<String> = expected.iter().map(|(n, _)| n.clone()).collect();
    wanted.sort();
    assert_eq!(
        present, wanted,
        "{dir_name}/ does not hold exactly the generated files; {fix}"
    );
    for (name, bytes) in &expected {
        let current = std::fs::read(dir.join(name)).unwrap();
        assert!(current == *bytes, "{dir_name}/{name} is out of date; {fix}");
    }
}

#[test]
fn man_pages_are_current() {
    check("man", man_pages());
}

#[test]
fn completions_are_current() {
    check("completions", completions());
}
