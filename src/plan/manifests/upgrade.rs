//! The etcd version guard: the version a volume's etcd data last ran — as the running etcd
//! reports it on its client port — is recorded on the volume (`k8s.io/manifests/etcd-version`);
//! a manifest that would run it backwards a minor version, or skip one, is refused before
//! anything is written (etcd-manager#197). Pure.

use std::fmt;

/// The file on a volume, beside its manifests, that records the etcd version its data last ran.
pub(crate) const VERSION_FILE: &str = "etcd-version";

/// An etcd version, `major.minor.patch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EtcdVersion {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    pub(crate) patch: u64,
}

impl fmt::Display for EtcdVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl EtcdVersion {
    /// `3.5.13`, `v3.5.13`, `3.5.13-0` (an image tag's build suffix ignored).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_start_matches('v');
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let version = Self {
            major: parts.next()??,
            minor: parts.next()??,
            patch: parts.next()??,
        };
        parts.next().is_none().then_some(version)
    }

    /// The version an etcd image runs, from its tag (`registry.k8s.io/etcd:3.5.13-0`); `None`
    /// for a tag that is not a version (`latest`, a digest).
    pub(crate) fn of_image(image: &str) -> Option<Self> {
        let name = image.split('@').next()?;
        let (_, tag) = name.rsplit_once(':')?;
        if tag.contains('/') {
            return None; // a registry port, no tag
        }
        Self::parse(tag)
    }
}

/// Where a running etcd pod answers `GET /version`: its client port on this node's loopback
/// (the pod has the host's network and listens on every address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EtcdEndpoint {
    pub(crate) port: u16,
    /// An IPv6 cluster's etcd listens on `[::]`: asked at `[::1]`.
    pub(crate) ipv6: bool,
    /// `https`, with what the pod's flags name (host paths, as the pod mounts them).
    pub(crate) tls: Option<EtcdClientTls>,
}

/// How to speak TLS to an etcd pod: its CA to verify it, and the certificate and key to show
/// when it asks for client certificates (`--tls-auth`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EtcdClientTls {
    pub(crate) ca: Option<String>,
    pub(crate) identity: Option<(String, String)>,
}

impl EtcdEndpoint {
    /// `http://127.0.0.1:4001`, as said in messages.
    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let host = if self.ipv6 { "[::1]" } else { "127.0.0.1" };
        format!("{scheme}://{host}:{}", self.port)
    }
}

/// The version this etcd server runs, from the body of its `GET /version` answer
/// (`{"etcdserver":"3.5.13","etcdcluster":"3.5.0"}`).
pub(crate) fn parse_version_answer(body: &[u8]) -> Result<EtcdVersion, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        etcdserver: String,
    }
    let answer: Answer = serde_json::from_slice(body)
        .map_err(|err| format!("its /version answer is not etcd's ({err})"))?;
    EtcdVersion::parse(&answer.etcdserver).ok_or_else(|| {
        format!(
            "its /version answer names `{}`, not an etcd version",
            answer.etcdserver.escape_debug()
        )
    })
}

/// Whether data last run by `recorded` may run `wanted`: the same minor (any patch), or the
/// next minor; never back a minor, never two ahead. The refusal says what to do.
pub(crate) fn check_upgrade(recorded: EtcdVersion, wanted: EtcdVersion) -> Result<(), String> {
    let (from, to) = (
        (recorded.major, recorded.minor),
        (wanted.major, wanted.minor),
    );
    if to < from {
        return Err(format!(
            "its etcd data was last run by etcd {recorded}, and etcd {wanted} cannot read it \
             (etcd never goes back a minor version): keep the spec's etcd version at \
             {}.{}.x or later, or restore a backup taken with {}.{}",
            recorded.major, recorded.minor, wanted.major, wanted.minor
        ));
    }
    let next_minor = (recorded.major, recorded.minor + 1);
    if to > next_minor {
        return Err(format!(
            "its etcd data was last run by etcd {recorded}, and etcd upgrades one minor version \
             at a time: set the spec's etcd version to {}.{}.x first, let it run, then to \
             {wanted}",
            next_minor.0, next_minor.1
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> EtcdVersion {
        EtcdVersion::parse(text).unwrap()
    }

    #[test]
    fn versions_from_text_and_image_tags() {
        assert_eq!(v("3.5.13"), v("v3.5.13"));
        assert_eq!(v("3.5.13-0").to_string(), "3.5.13");
        assert_eq!(
            EtcdVersion::of_image("registry.k8s.io/etcd:3.4.13-0"),
            Some(v("3.4.13"))
        );
        assert_eq!(
            EtcdVersion::of_image("quay.io/coreos/etcd:v3.5.1"),
            Some(v("3.5.1"))
        );
        assert_eq!(EtcdVersion::of_image("registry:5000/etcd"), None);
        assert_eq!(EtcdVersion::of_image("etcd:latest"), None);
        assert_eq!(EtcdVersion::of_image("etcd@sha256:abc"), None);
        assert_eq!(EtcdVersion::parse("3.5"), None);
        assert_eq!(EtcdVersion::parse("3.5.1.2"), None);
        assert!(v("3.4.23") < v("3.5.0"));
    }

    #[test]
    fn the_version_etcd_reports_is_its_servers() {
        assert_eq!(
            parse_version_answer(br#"{"etcdserver":"3.4.23","etcdcluster":"3.4.0"}"#),
            Ok(v("3.4.23"))
        );
        assert!(parse_version_answer(b"404 page not found").is_err());
        let odd = parse_version_answer(br#"{"etcdserver":"not\nthere"}"#).unwrap_err();
        assert!(odd.contains(r"not\nthere"), "{odd}");
        let endpoint = EtcdEndpoint {
            port: 4001,
            ipv6: true,
            tls: None,
        };
        assert_eq!(endpoint.url(), "http://[::1]:4001");
    }

    #[test]
    fn a_minor_at_a_time_and_never_back() {
        assert!(check_upgrade(v("3.5.13"), v("3.5.13")).is_ok());
        assert!(
            check_upgrade(v("3.5.13"), v("3.5.9")).is_ok(),
            "patches may go back"
        );
        assert!(check_upgrade(v("3.4.23"), v("3.5.13")).is_ok());
        let down = check_upgrade(v("3.5.13"), v("3.4.23")).unwrap_err();
        assert!(down.contains("3.5.13") && down.contains("3.5.x"), "{down}");
        let skip = check_upgrade(v("3.4.23"), v("3.6.0")).unwrap_err();
        assert!(skip.contains("3.5.x first"), "{skip}");
        assert!(check_upgrade(v("3.5.0"), v("4.0.0")).is_err());
        assert!(check_upgrade(v("3.5.0"), v("2.3.0")).is_err());
    }
}
