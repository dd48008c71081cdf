//! What build this is: `protokube --version` (one line), `protokube version` (text or JSON),
//! and the metrics' `protokube_build_info`. Filled in at build time by `build.rs`.

use serde::Serialize;

/// The build's facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuildInfo {
    pub(crate) version: &'static str,
    /// Short git commit, or `unknown` outside a git checkout.
    pub(crate) commit: &'static str,
    /// The commit's date (`YYYY-MM-DD`).
    pub(crate) build_date: &'static str,
    pub(crate) rustc: &'static str,
    pub(crate) target: &'static str,
    pub(crate) features: Vec<&'static str>,
}

/// `protokube --version`'s long form: version, commit and date.
pub(crate) const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("PROTOKUBE_COMMIT"),
    " ",
    env!("PROTOKUBE_BUILD_DATE"),
    ")"
);

impl BuildInfo {
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("PROTOKUBE_COMMIT"),
            build_date: env!("PROTOKUBE_BUILD_DATE"),
            rustc: env!("PROTOKUBE_RUSTC"),
            target: env!("PROTOKUBE_TARGET"),
            features: env!("PROTOKUBE_FEATURES")
                .split(',')
                .filter(|f| !f.is_empty())
                .collect(),
        }
    }

    /// The text form: one `key: value` line each.
    pub fn text(&self) -> String {
        let features = if self.features.is_empty() {
            "none".to_owned()
        } else {
            self.features.join(", ")
        };
        format!(
            "protokube {}\ncommit: {}\nbuild date: {}\nrustc: {}\ntarget: {}\nfeatures: {features}\n",
            self.version, self.commit, self.build_date, self.rustc, self.target
        )
    }
}
