//! What is true of one cloud provider, said once in its own folder (`providers/<provider>/`,
//! as afterburn's providers are one folder each): its name, its zone service and the names
//! `--dns` takes for it, its flags' defaults and checks, how a refused call is explained, what
//! its calls are counted as. The registry (`providers/mod.rs`) picks one by `--cloud`'s word;
//! nothing else matches on the provider.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use crate::spec::ClusterSpec;

/// One cloud provider's facts.
#[derive(Debug)]
pub(crate) struct Provider {
    /// `--cloud`'s word for it, and what its calls are counted as (`protokube_<name>_calls`).
    pub(crate) name: &'static str,
    /// What it is, for `--cloud`'s help.
    pub(crate) summary: &'static str,
    /// Its DNS service, whose zones `--dns zones` publishes to, for messages.
    pub(crate) zone_service: &'static str,
    /// The names `--dns` takes for that service, besides `zones`: ours and kOps' own.
    pub(crate) zone_service_names: &'static [&'static str],
    /// Variables of the provider's own tools that give the region, read as if given with
    /// `--region` (its SDK's region variable).
    pub(crate) region_variables: &'static [&'static str],
    /// Whether kOps labels each etcd volume there with every member of its etcd cluster
    /// (`<me>/<m1,m2,…>`); where it does not (kOps ≥ 1.36 writes `<me>/<me>` on some clouds),
    /// the members come from the spec, else from every volume of the key.
    pub(crate) labels_every_member: bool,
    /// The API roots its flags may move: each flag, and where it points by default.
    pub(crate) endpoints: &'static [Endpoint],
    /// Whether protokube is the gossip member only there (DESIGN §14): etcd-manager attaches
    /// etcd's volumes and dns-controller publishes the names, in every kOps version protokube
    /// supports on that cloud; the commands that would need them are refused.
    pub(crate) member_only: bool,
    /// Why a cluster spec leaves the names to another component on this cloud, if it does
    /// (kOps' IRSA clusters on AWS: the control-plane role has no DNS permission).
    pub(crate) names_left_by_spec: fn(&ClusterSpec) -> Option<&'static str>,
    /// Who lacks a permission the cloud refused, in kOps' words for the node's role
    /// (`master`: a control-plane node, of cluster `cluster`), and the page of the project's
    /// documents that lists every permission protokube uses there.
    pub(crate) denied_to: fn(master: bool, cluster: &str) -> (String, &'static str),
}

/// An API root a flag may move.
#[derive(Debug)]
pub(crate) struct Endpoint {
    /// The flag that moves it.
    pub(crate) flag: &'static str,
    /// The flag's variable (`PROTOKUBE_` and the flag in upper snake case).
    pub(crate) variable: &'static str,
    /// What it is, for the flag's help.
    pub(crate) what: &'static str,
    /// Where it points unless the flag says otherwise.
    pub(crate) default: &'static str,
    /// The variable of the cloud's own tools that moves it too, read when the flag is not
    /// given.
    pub(crate) sdk_variable: Option<&'static str>,
}

impl Provider {
    /// Whether `name`, given to `--dns`, names this provider's zone service.
    pub(crate) fn answers_to(&self, name: &str) -> bool {
        self.zone_service_names.contains(&name)
    }

    /// The API roots of this run: each of the provider's endpoint flags as given in `given`
    /// (flag → value; flags of other providers are not looked at), else its default; each an
    /// `http://` or `https://` URL with a host, normalized to end in `/`.
    pub(crate) fn endpoints(
        &self,
        given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<&'static str, String>> {
        self.endpoints
            .iter()
            .map(|endpoint| {
                let sdk = endpoint.sdk_variable.and_then(|v| std::env::var(v).ok());
                let value = given
                    .get(endpoint.flag)
                    .map(String::as_str)
                    .or(sdk.as_deref().filter(|v| !v.is_empty()));
                Ok((
                    endpoint.flag,
                    api_root(endpoint.flag, value, endpoint.default)?,
                ))
            })
            .collect()
    }
}

/// An API root flag's URL: `http://` or `https://` with a host, normalized to end in `/`
/// (`None`: `default`).
fn api_root(flag: &str, given: Option<&str>, default: &str) -> Result<String> {
    let url = given.unwrap_or(default).trim();
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.and_then(|r| r.split('/').next()).unwrap_or_default();
    let plain = url
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'?' | b'#' | b'\\' | b'"'));
    if host.is_empty() || !plain || host.contains('@') {
        bail!(
            "{flag}: `{}` is not an API root (an `https://` URL with a host, e.g. \
             `{default}`)",
            url.escape_debug()
        );
    }
    Ok(if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_roots_are_urls_with_a_host_ending_in_a_slash() {
        assert_eq!(
            api_root("--x", Some("https://h:1/v1"), "https://d/").unwrap(),
            "https://h:1/v1/"
        );
        assert_eq!(api_root("--x", None, "https://d/").unwrap(), "https://d/");
        for bad in ["ftp://h/", "https://", "https://u@h/", "https://h/?q", "h/"] {
            let err = api_root("--x", Some(bad), "https://d/").unwrap_err();
            assert!(err.to_string().starts_with("--x: "), "{bad}: {err}");
        }
    }
}
