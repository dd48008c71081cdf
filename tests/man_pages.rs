//! The man pages in `man/` are generated from the clap definitions; this test fails when they
//! drift. Regenerate with `PROTOKUBE_UPDATE_MAN=1 cargo test --test man_pages`.

use std::path::Path;

use clap::CommandFactory;
use protokube::cli::Cli;

fn render(command: &clap::Command) -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .expect("rendering a man page");
    out
}

/// Every page: `protokube.1` and one `protokube-<command>.1` per subcommand.
fn pages() -> Vec<(String, Vec<u8>)> {
    // Environment values must not leak into the pages.
    let top = Cli::command().mut_args(|a| a.hide_env_values(true));
    let mut pages = vec![("protokube.1".to_owned(), render(&top))];
    for sub in top.get_subcommands() {
        let name = format!("protokube-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(&*Box::leak(name.clone().into_boxed_str()))
            .mut_args(|a| a.hide_env_values(true));
        pages.push((format!("{name}.1"), render(&sub)));
    }
    pages
}

#[test]
fn man_pages_are_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let update = std::env::var_os("PROTOKUBE_UPDATE_MAN").is_some();
    let expected = pages();
    if update {
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
        "man/ does not hold exactly the generated pages; run PROTOKUBE_UPDATE_MAN=1 cargo test --test man_pages"
    );
    for (name, bytes) in &expected {
        let current = std::fs::read(dir.join(name)).unwrap();
        assert!(
            current == *bytes,
            "man/{name} is out of date; run PROTOKUBE_UPDATE_MAN=1 cargo test --test man_pages"
        );
    }
}
