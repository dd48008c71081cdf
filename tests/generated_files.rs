//! Files generated from the clap definitions and kept in the repository: man pages in `man/` and
//! shell completions in `completions/`. These tests fail when they drift; regenerate with
//! `PROTOKUBE_BLESS=1 cargo test --test generated_files`.

use std::path::Path;

use clap::CommandFactory;
use protokube::cli::Cli;

fn render_man(command: &clap::Command) -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .expect("rendering a man page");
    out
}

/// The command with environment values hidden, so the developer's shell cannot leak in.
fn command() -> clap::Command {
    Cli::command().mut_args(|a| a.hide_env_values(true))
}

/// Every man page: `protokube.1` and one `protokube-<command>.1` per subcommand.
fn man_pages() -> Vec<(String, Vec<u8>)> {
    let top = command();
    let mut pages = vec![("protokube.1".to_owned(), render_man(&top))];
    for sub in top.get_subcommands() {
        let name = format!("protokube-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(&*Box::leak(name.clone().into_boxed_str()))
            .mut_args(|a| a.hide_env_values(true));
        pages.push((format!("{name}.1"), render_man(&sub)));
    }
    pages
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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir_name);
    let fix = "run PROTOKUBE_BLESS=1 cargo test --test generated_files";
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
