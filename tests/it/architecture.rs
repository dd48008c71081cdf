//! The shape of the code (ARCHITECTURE.md), checked so it cannot drift: thin command files that do not
//! import each other, nothing below the commands importing the CLI layer or a command, no
//! import cycles between modules nor between files, planning free of effects, the machine
//! touched under `host/linux/` only and reached from outside `host/` by the composition root
//! alone, the pure DNS rules in `plan/dns/` and effects only in `dns/`, a provider's words only
//! in its own folders and the registry (the one list of providers), what does not end in
//! `serve/` with the gossip member a value (no static state), the protocols on their transport
//! seam and free of files and runs, one writer of the hosts block, every retry through the
//! wait module, test support compiled for tests only, clap in the CLI layer only, functions
//! that fit on a screen (tests too), and a `//!` line at the top of every file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, with its text.
fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let src = crate::support::repo().join("src");
    let mut out = Vec::new();
    walk(&src, &mut out);
    out.sort();
    out.into_iter()
        .map(|(p, t)| (p.strip_prefix(&src).unwrap().to_owned(), t))
        .collect()
}

/// The module a file is: `plan/manifests/etcd.rs` → `plan::manifests::etcd`, `cmd/mod.rs` → `cmd`.
fn module_of(path: &Path) -> String {
    let mut parts: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without its unit tests (they may use anything): cut at the
/// `#[cfg(test)]` that opens `mod tests`.
fn without_tests(text: &str) -> &str {
    text.find("\nmod tests {")
        .and_then(|i| text[..i].rfind("#[cfg(test)]"))
        .map_or(text, |i| &text[..i])
}

/// Files that exist for the unit tests alone (`#[cfg(test)]` where they are declared).
const TEST_SUPPORT: [&str; 4] = [
    "host/memory.rs",
    "cloud/memory.rs",
    "dns/memory.rs",
    "steps/testing.rs",
];

/// The composition root: it picks the real node and runs the commands (the one-shot runner and
/// the wing for what does not end), and may name them all.
const COMPOSITION_ROOT: [&str; 4] = ["lib.rs", "main.rs", "run.rs", "serve/mod.rs"];

/// The paths every `use` declaration of `code` names, groups expanded at any depth and in any
/// layout: `use crate::{a::X, b::{c, self}};` → `crate::a::X`, `crate::b::c`, `crate::b`.
fn use_paths(code: &str) -> Vec<String> {
    fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
        let tree = tree.trim();
        let Some(open) = tree.find('{') else {
            let item = tree.split(" as ").next().unwrap_or(tree).trim();
            match item {
                "" => {}
                "self" | "*" => out.push(prefix.trim_end_matches("::").to_owned()),
                item => out.push(format!("{prefix}{item}")),
            }
            return;
        };
        let head = format!("{prefix}{}", tree[..open].trim());
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&head, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&head, &inner[start..], out);
    }
    // rustfmt starts every `use` declaration on a line of its own.
    let mut out = Vec::new();
    let mut declaration: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim();
        let start = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p));
        let text = match (&mut declaration, start) {
            (Some(open), _) => {
                open.push(' ');
                open.push_str(trimmed);
                open.clone()
            }
            (None, Some(rest)) => rest.to_owned(),
            (None, None) => continue,
        };
        match text.find(';') {
            Some(end) => {
                expand("", &text[..end], &mut out);
                declaration = None;
            }
            None => declaration = Some(text),
        }
    }
    out
}

#[test]
fn grouped_and_nested_uses_are_read() {
    let code = "use crate::{\n    a::X,\n    b::{c, self, d::Y as Z},\n};\npub(crate) use super::e;\nfn f() { reuse(); }";
    assert_eq!(
        use_paths(code),
        [
            "crate::a::X",
            "crate::b::c",
            "crate::b",
            "crate::b::d::Y",
            "super::e"
        ]
    );
}

/// The `crate::a::b` paths a file names, as module paths (`a::b`), deepest first cut at what
/// exists as a module.
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        // The longest prefix that is a module.
        for n in (1..=parts.len()).rev() {
            let candidate = parts[..n].join("::");
            if modules.contains(&candidate) {
                out.insert(candidate);
                break;
            }
        }
    }
    out
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap()
}

struct Graph {
    /// module → modules it imports (outside its own tests).
    edges: BTreeMap<String, BTreeSet<String>>,
    texts: BTreeMap<String, String>,
}

fn graph() -> Graph {
    let sources = sources();
    let modules: BTreeSet<String> = sources.iter().map(|(p, _)| module_of(p)).collect();
    let mut edges = BTreeMap::new();
    let mut texts = BTreeMap::new();
    for (path, text) in &sources {
        let module = module_of(path);
        edges.insert(module.clone(), imports(without_tests(text), &modules));
        texts.insert(module, text.clone());
    }
    Graph { edges, texts }
}

#[test]
fn command_files_are_thin_and_do_not_import_each_other() {
    let graph = graph();
    for (module, imports) in &graph.edges {
        if !module.starts_with("cmd::") {
            continue;
        }
        for import in imports {
            assert!(
                !import.starts_with("cmd"),
                "{module} imports {import}: commands share steps, not each other"
            );
        }
        let lines = graph.texts[module].lines().count();
        assert!(
            lines < 80,
            "{module} has {lines} lines: a command only wires steps"
        );
    }
}

#[test]
fn nothing_below_the_commands_imports_the_cli_or_a_command() {
    let graph = graph();
    for (module, imports) in &graph.edges {
        if ["main", "lib", "cli", "run"].contains(&module.as_str())
            || ["cmd", "serve"].contains(&top(module))
        {
            continue;
        }
        for import in imports {
            assert!(
                top(import) != "cli" && top(import) != "cmd",
                "{module} imports {import}"
            );
        }
    }
}

#[test]
fn modules_form_no_cycle() {
    let graph = graph();
    // Between top-level modules (a file's own submodules may refer to each other).
    let mut tops: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (module, imports) in &graph.edges {
        if module == "lib" || module == "main" {
            continue;
        }
        let from = top(module);
        let entry = tops.entry(from).or_default();
        for import in imports {
            if top(import) != from {
                entry.insert(top(import));
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit<'a>(
        node: &'a str,
        tops: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(i) = stack.iter().position(|n| *n == node) {
            panic!("import cycle: {} -> {node}", stack[i..].join(" -> "));
        }
        stack.push(node);
        for next in tops.get(node).into_iter().flatten() {
            visit(next, tops, stack, done);
        }
        stack.pop();
        done.insert(node);
    }
    let mut done = BTreeSet::new();
    for node in tops.keys() {
        visit(node, &tops, &mut Vec::new(), &mut done);
    }
}

/// Pure planning outside `plan/`: a provider's batching lives with its DNS code, held to the
/// same rule.
const PURE_ELSEWHERE: [&str; 1] = ["providers::aws::route53::batch"];

#[test]
fn planning_has_no_effects() {
    let graph = graph();
    for (module, imports) in &graph.edges {
        if top(module) != "plan" && !PURE_ELSEWHERE.contains(&module.as_str()) {
            continue;
        }
        for import in imports {
            assert!(
                ![
                    "apply",
                    "steps",
                    "snapshot",
                    "settings",
                    "providers",
                    "host::linux",
                    "dns::zoned::walk",
                ]
                .iter()
                .any(|layer| import == layer || import.starts_with(&format!("{layer}::"))),
                "{module} (pure planning) imports {import}"
            );
        }
        let code = without_tests(&graph.texts[module]);
        for effect in ["fs_err::", "std::fs::", "std::process", "tokio::", ".await"] {
            assert!(
                !code.contains(effect),
                "{module} (pure planning) uses {effect}"
            );
        }
    }
}

/// The files under `dns/` that neither are nor call an effect: the factory that picks the run's
/// target.
const DNS_WITHOUT_EFFECTS: [&str; 1] = ["dns/mod.rs"];

#[test]
fn the_dns_rules_live_in_one_place() {
    // The pure rules (records, zones, a zone's changes, the hosts block) are `plan/dns/`, held
    // to the planning rule and needing nothing from `dns/`; every file under `dns/` applies them.
    let graph = graph();
    for (module, imports) in &graph.edges {
        if module.starts_with("plan::dns") {
            for import in imports {
                assert!(
                    top(import) != "dns",
                    "{module} (the DNS rules) imports {import}"
                );
            }
        }
        // A target is handed the run's facts by the step that asks it; it reads none itself.
        if top(module) == "dns" {
            for import in imports {
                assert!(
                    top(import) != "snapshot" && top(import) != "steps",
                    "{module} (where names go) imports {import}"
                );
            }
        }
    }
    for (path, text) in sources() {
        let name = path.to_string_lossy().into_owned();
        if !name.starts_with("dns/")
            || DNS_WITHOUT_EFFECTS.contains(&name.as_str())
            || TEST_SUPPORT.contains(&name.as_str())
        {
            continue;
        }
        assert!(
            without_tests(&text).contains("async"),
            "{name} has no effect: a pure DNS rule belongs in plan/dns/"
        );
    }
}

/// What touches the machine itself: files, system calls, mounts, child processes.
const NODE_EFFECTS: [&str; 9] = [
    "fs_err::",
    "std::fs",
    "rustix::",
    "libc::",
    "unsafe ",
    "std::process::Command",
    "std::process::{",
    "tokio::process",
    "std::os::unix::fs",
];

#[test]
fn the_machine_is_touched_under_the_linux_host_only() {
    for (path, text) in sources() {
        if path.starts_with("host/linux") {
            continue;
        }
        let code = without_tests(&text);
        for effect in NODE_EFFECTS {
            assert!(
                !code.contains(effect),
                "{} uses {effect}: the node is reached through `host` (its Linux implementation \
                 in host/linux/ is the only user)",
                path.display()
            );
        }
    }
}

#[test]
fn only_the_composition_root_reaches_the_linux_host_from_outside_host() {
    // Everything else is given the node (`&dyn Host`, `&dyn Files`), so it runs on the
    // in-memory one in its unit tests.
    for (path, text) in sources() {
        let name = path.display().to_string();
        if path.starts_with("host") || COMPOSITION_ROOT.contains(&name.as_str()) {
            continue;
        }
        assert!(
            !without_tests(&text).contains("host::linux"),
            "{name} names `host::linux`: it is given the node through the host traits instead"
        );
    }
}

/// Each provider: the folders its code lives in, and its words (lowercase), which appear
/// nowhere else but where the command line names the providers.
const PROVIDERS: [(&str, &[&str], &[&str]); 7] = [
    (
        "AWS",
        &["providers/aws/"],
        &[
            "ec2",
            "ebs",
            "route53",
            "route 53",
            "xvd",
            "imds",
            "amazon",
            "elastic block",
        ],
    ),
    (
        "Google Cloud",
        &["providers/gce/"],
        &["gce", "compute engine", "cloud dns", "clouddns", "google-"],
    ),
    (
        "Hetzner Cloud",
        &["providers/hetzner/"],
        &["hetzner", "hcloud"],
    ),
    (
        "DigitalOcean",
        &["providers/digitalocean/"],
        &["digitalocean", "droplet", "godo", "pydo"],
    ),
    (
        "OpenStack",
        &["providers/openstack/"],
        &["openstack", "keystone", "nova", "gophercloud"],
    ),
    (
        "Azure",
        &["providers/azure/"],
        &["azure", "resource manager", "scale set", "vmss"],
    ),
    (
        "Scaleway",
        &["providers/scaleway/"],
        &["scaleway", "scw_", "ipam"],
    ),
];

/// The registry that lists the providers: the one product file outside their folders that may
/// name them (ARCHITECTURE.md).
const NAMES_PROVIDERS: [&str; 1] = ["providers/mod.rs"];

/// Files whose doc comments are the command line's help: there (and only there) a doc comment
/// may name a provider, its code never.
const HELP_TEXT: [&str; 2] = ["cli.rs", "flags.rs"];

/// The lines of `text` (outside its unit tests, comments included) that name one of `words`,
/// as `line: text`; module declarations (`mod route53;`) are a folder's listing, not a use.
fn lines_naming(text: &str, words: &[&str]) -> Vec<String> {
    without_tests(text)
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let trimmed = line.trim_start();
            !(trimmed.starts_with("mod ") || trimmed.starts_with("pub mod "))
        })
        .filter(|(_, line)| {
            let lower = line.to_lowercase();
            words.iter().any(|word| {
                lower.match_indices(word).any(|(at, _)| {
                    // A whole word: `ebs` is not in `webserver`.
                    let before = lower[..at].chars().next_back();
                    let after = lower[at + word.len()..].chars().next();
                    let glued_before = before.is_some_and(char::is_alphanumeric);
                    let glued_after = word.len() <= 3 && after.is_some_and(char::is_alphabetic);
                    !(glued_before || glued_after)
                })
            })
        })
        .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
        .collect()
}

/// A provider has one home, `providers/<provider>/` (its value, its cloud, its zone service,
/// its `connect`, its endpoint flags), and one line of the registry, the one list of providers in
/// `providers/mod.rs`: `--cloud` takes its words and its default from it (no mirror enum), the
/// endpoint flags come from each provider's own declaration, nothing matches on a provider, and
/// the registry is read where the command line is parsed, once per run.
#[test]
fn the_registry_is_the_one_list_of_providers() {
    let mut mirrors = Vec::new();
    for (path, text) in sources() {
        let name = path.display().to_string();
        let code = without_tests(&text);
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            let reads_registry =
                line.contains("providers::all()") || line.contains("providers::registry(");
            if line.contains("CloudArg") || line.contains("=> Some(Registered {") {
                mirrors.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
            if reads_registry && !["cli.rs", "providers/mod.rs"].contains(&name.as_str()) {
                mirrors.push(format!(
                    "{name}:{}: {} (reads the registry)",
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        mirrors.is_empty(),
        "the providers listed or looked up outside the registry:\n{}",
        mirrors.join("\n")
    );
    let registry =
        std::fs::read_to_string(crate::support::repo().join("src/providers/mod.rs")).unwrap();
    let code = without_tests(&registry);
    assert!(
        code.contains(&format!(
            "static REGISTRY: [Registered; {}]",
            PROVIDERS.len()
        )),
        "one registry line per provider"
    );
    let cli = std::fs::read_to_string(crate::support::repo().join("src/cli.rs")).unwrap();
    assert!(
        cli.contains("pub(crate) cloud: Registered,"),
        "--cloud parses to the registry's value"
    );
    // Each provider is one folder.
    for (provider, folders, _) in PROVIDERS {
        assert_eq!(folders.len(), 1, "{provider}: {folders:?}");
        assert!(
            crate::support::repo()
                .join("src")
                .join(folders[0])
                .join("mod.rs")
                .exists(),
            "{provider}"
        );
    }
}

#[test]
fn a_providers_words_stay_in_its_own_folders() {
    let mut misplaced = Vec::new();
    for (path, text) in sources() {
        let name = path.display().to_string();
        if NAMES_PROVIDERS.contains(&name.as_str()) {
            continue;
        }
        for (provider, folders, words) in PROVIDERS {
            if folders.iter().any(|folder| name.starts_with(folder)) {
                continue;
            }
            for line in lines_naming(&text, words) {
                let help = line
                    .split_once(": ")
                    .is_some_and(|(_, code)| code.starts_with("///"));
                if help && HELP_TEXT.contains(&name.as_str()) {
                    continue;
                }
                misplaced.push(format!("{name}:{line} ({provider})"));
            }
        }
    }
    assert!(
        misplaced.is_empty(),
        "a provider's words outside its folder (providers/<provider>/), the registry and the \
         command line's help:\n{}",
        misplaced.join("\n")
    );
    // The check sees what it is meant to.
    assert_eq!(
        lines_naming("//! EBS volumes\nlet x = webserver;\n", &["ebs"]),
        ["1: //! EBS volumes"]
    );
    assert!(lines_naming("pub mod route53;\n", &["route53"]).is_empty());
}

/// The modules a file refers to: `crate::…` paths, `super::…` paths, and, in a file with
/// submodules (`mod.rs`), a submodule named by its path (`walk::publish`).
fn file_imports(module: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = imports(code, modules);
    let parent: Vec<&str> = module.split("::").collect::<Vec<_>>();
    let parent = &parent[..parent.len().saturating_sub(1)];
    // Every `use`, groups expanded: the module each path lands in, else (an item of the
    // crate's root) `lib`.
    for path in use_paths(code) {
        let mut parts: Vec<&str> = path.split("::").collect();
        let (base, named): (Vec<&str>, usize) = match parts.first().copied() {
            Some("crate") => (Vec::new(), 1),
            Some("super") => (parent.to_vec(), 1),
            Some("self") => (module.split("::").collect(), 1),
            // The crate's root names its modules without `crate::`.
            Some(first) if module == "lib" && modules.contains(first) => (Vec::new(), 0),
            _ => continue,
        };
        parts.drain(..named);
        let mut full = base.clone();
        full.extend(parts);
        let found = (1..=full.len())
            .rev()
            .map(|n| full[..n].join("::"))
            .find(|candidate| modules.contains(candidate));
        match found {
            Some(found) => {
                out.insert(found);
            }
            None if base.is_empty() && !full.is_empty() => {
                out.insert("lib".to_owned());
            }
            None => {}
        }
    }
    for (i, _) in code.match_indices("super::") {
        let rest: String = code[i + "super::".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let mut parts: Vec<&str> = parent.to_vec();
        parts.extend(rest.split("::").filter(|p| !p.is_empty()));
        if let Some(found) = (1..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .find(|candidate| modules.contains(candidate))
        {
            out.insert(found);
        }
    }
    for child in modules {
        let Some(name) = child
            .strip_prefix(module)
            .and_then(|rest| rest.strip_prefix("::"))
            .filter(|rest| !rest.contains("::"))
        else {
            continue;
        };
        let named = code.match_indices(&format!("{name}::")).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                || code[..at].ends_with("self::")
        });
        if named {
            out.insert(child.clone());
        }
    }
    out.remove(module);
    out
}

/// `text` without its comments (lines from `//`).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn files_form_no_cycle() {
    let sources = sources();
    let modules: BTreeSet<String> = sources.iter().map(|(p, _)| module_of(p)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in &sources {
        let module = module_of(path);
        if module == "main" {
            continue;
        }
        let code = without_comments(without_tests(text));
        edges.insert(module.clone(), file_imports(&module, &code, &modules));
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(i) = stack.iter().position(|n| n == node) {
            panic!(
                "import cycle between files: {} -> {node}",
                stack[i..].join(" -> ")
            );
        }
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, stack, done);
        }
        stack.pop();
        done.insert(node.to_owned());
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, &edges, &mut Vec::new(), &mut done);
    }
    // The check sees a cycle through `super::` and a parent's use of its child.
    let modules: BTreeSet<String> = ["a", "a::b"].iter().map(|m| (*m).to_owned()).collect();
    assert!(file_imports("a::b", "use super::X;", &modules).contains("a"));
    assert!(file_imports("a", "let y = b::f();", &modules).contains("a::b"));
    assert!(file_imports("a", "let y = xb::f();", &modules).is_empty());
}

#[test]
fn test_support_is_compiled_for_tests_only() {
    for file in TEST_SUPPORT {
        let module = module_of(Path::new(file));
        let (parent, name) = module.rsplit_once("::").unwrap();
        let declaring = format!("src/{}/mod.rs", parent.replace("::", "/"));
        let text = std::fs::read_to_string(crate::support::repo().join(&declaring)).unwrap();
        assert!(
            ["pub ", "pub(crate) ", ""]
                .iter()
                .any(|vis| text.contains(&format!("#[cfg(test)]\n{vis}mod {name};"))),
            "{declaring} declares {name} without #[cfg(test)]"
        );
    }
}

#[test]
fn every_file_says_what_it_is_for() {
    for (path, text) in sources() {
        assert!(
            text.starts_with("//! "),
            "{} does not start with a `//!` line",
            path.display()
        );
    }
}

#[test]
fn clap_is_used_by_the_cli_layer_only() {
    // The domain's enums (output, log format, blank check, DNS provider) are plain types; the
    // CLI layer (the flags, declared once, and the command line around them) maps its own clap
    // types onto them.
    for (path, text) in sources() {
        if text.contains("clap::") || text.contains("use clap") {
            assert!(
                [Path::new("cli.rs"), Path::new("flags.rs")].contains(&path.as_path()),
                "{} uses clap",
                path.display()
            );
        }
    }
}

/// The string literals of Rust source `text` (raw strings and byte strings included), as
/// written between their quotes, with the line each starts on; comments and char literals
/// skipped.
fn string_literals(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let line = |at: usize| text[..at].matches('\n').count() + 1;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if bytes[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') is skipped whole; a lifetime is one quote.
            let body = &rest[1..];
            let len = if body.starts_with('\\') {
                body.find('\'').map_or(1, |end| end + 2)
            } else {
                body.char_indices()
                    .nth(1)
                    .filter(|(_, c)| *c == '\'')
                    .map_or(1, |(end, _)| end + 2)
            };
            i += len;
        } else if rest.starts_with("r\"") || rest.starts_with("r#") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let open = 1 + hashes;
            if rest[open..].starts_with('"') {
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + open + 1;
                let end = start + text[start..].find(&close).unwrap();
                out.push((line(i), &text[start..end]));
                i = end + close.len();
            } else {
                i += 1;
            }
        } else if bytes[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push((line(i), &text[start..j]));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn no_message_carries_a_line_broken_without_a_backslash() {
    // A string literal continued on the next line without `\` keeps the newline and the next
    // line's indentation: a message with a run of spaces in the middle.
    let mut broken = Vec::new();
    for (path, text) in sources() {
        for (line, literal) in string_literals(&text) {
            let mut lines = literal.split('\n');
            lines.next();
            let indented_without_backslash = literal
                .split('\n')
                .zip(lines)
                .any(|(before, after)| !before.ends_with('\\') && after.starts_with("  "));
            if indented_without_backslash && !literal.starts_with('\n') {
                broken.push(format!("{}:{line}", path.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "literals broken without `\\`: {broken:?}"
    );
    let sample =
        "let a = 'x'; let b: &'static str = \"one \\\n  two\"; // \"not\"\nlet c = \"x\n    y\";";
    assert_eq!(string_literals(sample).len(), 2);
    assert_eq!(string_literals(sample)[1], (3, "x\n    y"));
}

/// Every item of the crate is `pub(crate)` or narrower unless it is a door: `lib.rs` declares
/// its modules private and names the doors (what the binary uses, and `testing` for these
/// tests), and `unreachable_pub` (denied in CI by clippy's `-D warnings`) turns any `pub` that
/// no door reaches into a warning. Counted here so that the balance is seen to hold.
#[test]
fn pub_is_a_door() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("#![warn(unreachable_pub)]"),
        "lib.rs lost the lint"
    );
    let public_modules: Vec<&str> = lib
        .lines()
        .filter(|line| line.starts_with("pub mod ") && !line.starts_with("pub mod testing "))
        .collect();
    assert!(
        public_modules.is_empty(),
        "modules are private; doors are re-exports: {public_modules:?}"
    );
    let (mut doors, mut restricted) = (0, 0);
    for (_, text) in sources() {
        for line in text.lines().map(str::trim_start) {
            if line.starts_with("pub ") {
                doors += 1;
            } else if line.starts_with("pub(") {
                restricted += 1;
            }
        }
    }
    assert!(
        doors * 4 < restricted,
        "{doors} `pub` against {restricted} restricted: a `pub` is a door, not the default"
    );
}

/// What does not end lives in `serve/`: the stop signals are caught there alone, and the
/// member is a value handed to what uses it — no `static` holds mutable state (logging keeps
/// its own, set once at start).
#[test]
fn what_does_not_end_lives_in_serve_and_holds_no_static_state() {
    for (path, text) in sources() {
        let name = path.display().to_string();
        let code = without_tests(&text);
        if code.contains("tokio::signal") {
            assert_eq!(name, "serve/signals.rs", "{name} catches signals");
        }
        if name == "logging.rs" {
            continue;
        }
        for line in code.lines().map(str::trim_start) {
            let declares = line.starts_with("static ") || line.contains(" static ");
            let mutable = [
                "Mutex",
                "RwLock",
                "Atomic",
                "RefCell",
                "Cell<",
                "static mut",
            ]
            .iter()
            .any(|kind| line.contains(kind));
            assert!(
                !(declares && mutable && !line.starts_with("//")),
                "{name}: a static holding mutable state: {line}"
            );
        }
    }
}

/// The gossip protocols and their view touch no file and know no run: `gossip/` imports none
/// of the layers that do; its wire and its view are pure; the protocols reach the network
/// through the transport seam alone (real sockets in `transport.rs`, the in-memory network in
/// their unit tests).
#[test]
fn the_gossip_protocols_know_no_file_and_no_run() {
    let graph = graph();
    for (module, imports) in &graph.edges {
        if top(module) != "gossip" {
            continue;
        }
        for import in imports {
            assert!(
                ![
                    "host",
                    "dns",
                    "settings",
                    "snapshot",
                    "steps",
                    "providers",
                    "cmd",
                    "serve",
                    "run",
                    "cli",
                    "flags",
                ]
                .contains(&top(import)),
                "{module} (the gossip protocols) imports {import}"
            );
        }
        let code = without_tests(&graph.texts[module]);
        let pure = module.starts_with("gossip::wire") || module == "gossip::view";
        for effect in [
            "tokio::",
            ".await",
            "std::net::UdpSocket",
            "std::net::TcpStream",
        ] {
            assert!(
                !(pure && code.contains(effect)),
                "{module} (pure) uses {effect}"
            );
        }
        if module != "gossip::transport" {
            assert!(
                !code.contains("tokio::net"),
                "{module} opens sockets itself: the protocols go through the transport seam"
            );
        }
    }
}

/// The hosts block has one writer, in the DNS layer, that the one-shot target and the member
/// both call: nothing else writes the hosts file.
#[test]
fn the_hosts_block_has_one_writer() {
    for (path, text) in sources() {
        let name = path.display().to_string();
        if name.starts_with("host/") || name == "dns/hosts_file.rs" {
            continue;
        }
        assert!(
            !without_tests(&text).contains("write_hosts("),
            "{name} writes the hosts file itself: it goes through dns::hosts_file"
        );
    }
}

/// Every wait and retry goes through the wait module (`poll_until`, `retry_until`): no other
/// file pauses by hand between attempts (the protocols, which run on their own clock, and the
/// long-running wing, which paces itself, aside; the node's own blocking waits are under
/// `host/linux/`).
#[test]
fn every_retry_goes_through_the_wait_module() {
    for (path, text) in sources() {
        let name = path.display().to_string();
        if name == "wait.rs" || name.starts_with("gossip/") || name.starts_with("serve/") {
            continue;
        }
        let code = without_tests(&text);
        assert!(
            !code.contains("tokio::time::sleep("),
            "{name} pauses by hand: retry through wait::retry_until or wait::poll_until"
        );
        if !name.starts_with("host/linux") {
            assert!(
                !code.contains("std::thread::sleep"),
                "{name} blocks its thread to pause"
            );
        }
    }
}

/// The lines of each function of `text` that has a body: (name, first line, line count).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(at) = line.find("fn ") else { continue };
        let before = line[..at].trim();
        let is_item = before.split_whitespace().all(|word| {
            ["pub", "async", "const", "unsafe"].contains(&word) || word.starts_with("pub(")
        });
        if !is_item || line.trim_start().starts_with("//") {
            continue;
        }
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut depth = 0i32;
        for (offset, body_line) in lines[start..].iter().enumerate() {
            if depth == 0
                && offset > 0
                && body_line.trim_end().ends_with(';')
                && !body_line.contains('{')
            {
                break;
            }
            depth += body_line.matches('{').count() as i32 - body_line.matches('}').count() as i32;
            if depth == 0 && body_line.contains('}') {
                found.push((name.clone(), start + 1, offset + 1));
                break;
            }
        }
    }
    found
}

/// Every `.rs` file under `tests/it/`, with its text.
fn test_sources() -> Vec<(PathBuf, String)> {
    let dir = crate::support::repo().join("tests/it");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("support")).unwrap())
    {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((
                path.strip_prefix(crate::support::repo())
                    .unwrap()
                    .to_owned(),
                text,
            ));
        }
    }
    out
}

/// Functions fit on a screen: none over 100 lines, unit tests and integration tests included.
#[test]
fn no_function_is_over_100_lines() {
    let long: Vec<String> = sources()
        .into_iter()
        .chain(test_sources())
        .flat_map(|(path, text)| {
            function_lengths(&text)
                .into_iter()
                .filter(|(_, _, lines)| *lines > 100)
                .map(move |(name, line, lines)| {
                    format!("{}:{line} {name}: {lines} lines", path.display())
                })
        })
        .collect();
    assert!(long.is_empty(), "split these: {long:#?}");
}

#[test]
fn function_lengths_are_counted_from_signature_to_closing_brace() {
    let code =
        "fn a() {\n    x();\n}\n\npub(crate) async fn b(\n    y: u8,\n) -> u8 {\n    { y }\n}\n";
    assert_eq!(
        function_lengths(code),
        [("a".to_owned(), 1, 3), ("b".to_owned(), 5, 5)]
    );
}
