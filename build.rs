//! Build information for `protokube --version` and `protokube version`: the git commit and its
//! date (the commit's, so the same commit builds the same binary), the compiler, the target and
//! the enabled cargo features. Outside a git checkout the commit and date are `unknown`.

use std::process::Command;

fn main() {
    let run = |program: &str, args: &[&str]| -> Option<String> {
        let out = Command::new(program).args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let git = |args: &[&str]| run("git", args);
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = run(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(key, _)| {
            key.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .collect();
    features.sort();
    println!("cargo:rustc-env=PROTOKUBE_COMMIT={commit}");
    println!("cargo:rustc-env=PROTOKUBE_BUILD_DATE={date}");
    println!("cargo:rustc-env=PROTOKUBE_RUSTC={rustc_version}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=PROTOKUBE_TARGET={target}");
    println!("cargo:rustc-env=PROTOKUBE_FEATURES={}", features.join(","));
    // A new commit moves HEAD or the branch it names (none on a detached HEAD).
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for path in std::iter::once("HEAD".to_owned()).chain(branch) {
        if let Some(file) = git(&["rev-parse", "--git-path", &path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
