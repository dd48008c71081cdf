//! GCE labels and kOps' metadata keys: kOps puts `k8s-io-cluster-name=<cluster, '.' → '-'>`,
//! `k8s-io-role-master`, `k8s-io-role-control-plane` and `k8s-io-etcd-<key>=<EncodeGCELabel(…)>`
//! on a cluster's disks and instances (`upup/pkg/fi/cloudup/gce/labels.go`, `utils.go`); this
//! maps them onto the keys the rest of protokube reads (`cloud/tags.rs`) and back. Pure.

use std::collections::BTreeMap;

use crate::cloud::tags;
use crate::cloud::tags::FORMATTED as FORMATTED_TAG;

/// The cluster label (its value is the cluster name with `.` as `-`, not encoded).
pub(crate) const CLUSTER_LABEL: &str = "k8s-io-cluster-name";
/// Role labels: `k8s-io-role-<role>`.
pub(crate) const ROLE_PREFIX: &str = "k8s-io-role-";
/// Membership labels: `k8s-io-etcd-<cluster key>=<EncodeGCELabel("me/m1,m2,…")>`.
pub(crate) const ETCD_PREFIX: &str = "k8s-io-etcd-";
/// The label protokube sets on a disk it formatted: the filesystem's UUID (label-safe as it is).
pub(crate) const FORMATTED_LABEL: &str = "k8s-io-protokube-formatted";
/// The labels of the etcd versions protokube records, values encoded.
pub(crate) const ETCD_VERSION_PREFIX: &str = "k8s-io-protokube-etcd-version-";

/// kOps' `EncodeGCELabel`: every byte outside `[0-9a-z]` as `-` and two hex digits
/// (`a/a,b` → `a-2fa-2cb`).
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_digit() || byte.is_ascii_lowercase() {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("-{byte:02x}"));
        }
    }
    out
}

/// kOps' `DecodeGCELabel`, the reverse of [`encode`]: `None` for a value that is not one.
pub(crate) fn decode(label: &str) -> Option<String> {
    let bytes = label.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'-' {
            let hex = label.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The network tags kOps gives the instances of `role` (`master`, `control-plane`) in
/// `cluster`: `<cluster, '.' → '-'>-k8s-io-role-<role>`, as kOps ≤ 1.22 writes it
/// (`GCETagForRole`), and as kOps ≥ 1.23 writes it (`TagForRole`: `ClusterPrefixedName`, the
/// cluster part cut to fit 63 characters with a hash of it).
pub(crate) fn role_tags(cluster: &str, role: &str) -> [String; 2] {
    let suffix = format!("-{ROLE_PREFIX}{role}");
    let safe = cluster_value(cluster);
    let plain = format!("{safe}{suffix}");
    let room = 63_usize.saturating_sub(suffix.len());
    let prefixed = if safe.len() <= room {
        plain.clone()
    } else {
        let hash = kops_hash(&safe);
        let keep = room.saturating_sub(hash.len() + 1).min(safe.len());
        format!("{}-{hash}{suffix}", &safe[..keep])
    };
    [plain, prefixed]
}

/// kOps' `truncate.HashString(s, 6)`: FNV-1a (32 bits), base32 "hex" lowercased, its first six
/// characters.
fn kops_hash(value: &str) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut hash: u32 = 0x811c_9dc5;
    for byte in value.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // Six characters of five bits each: the hash's first 30 bits.
    (0..6)
        .map(|i| char::from(ALPHABET[((hash >> (27 - 5 * i)) & 31) as usize]))
        .collect()
}

/// The list filter of the cluster's resources: kOps' cluster label (AIP-160,
/// `labels.k8s-io-cluster-name="<value>"`). What it returns is checked again where it is read.
pub(crate) fn cluster_filter(cluster: &str) -> String {
    format!("labels.{CLUSTER_LABEL}=\"{}\"", cluster_value(cluster))
}

/// The cluster label's value for `cluster`: kOps' `SafeClusterName`.
pub(crate) fn cluster_value(cluster: &str) -> String {
    cluster.replace('.', "-")
}

/// The metadata of a disk or instance under kOps' keys, from its GCE `labels`; `cluster` is the
/// cluster the caller looks for (the label carries it with `.` as `-`, which cannot be undone):
/// its label value maps back to it, any other value stays as it is (and matches no cluster).
/// As for kOps, two clusters whose names differ only in `.` and `-` are one to GCE's labels.
/// A membership or version label that does not decode keeps its raw value, so the volume is
/// refused as malformed where it is read.
pub(crate) fn to_tags(
    labels: &BTreeMap<String, String>,
    cluster: Option<&str>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (key, value) in labels {
        let decoded = || decode(value).unwrap_or_else(|| value.clone());
        if key == CLUSTER_LABEL {
            let name = cluster
                .filter(|c| cluster_value(c) == *value)
                .map_or_else(|| value.clone(), str::to_owned);
            out.insert(tags::CLUSTER.to_owned(), name);
        } else if key == FORMATTED_LABEL {
            out.insert(FORMATTED_TAG.to_owned(), value.clone());
        } else if let Some(encoded_key) = key.strip_prefix(ETCD_VERSION_PREFIX) {
            // protokube encodes the cluster key of its own label (`my-etcd` → `my-2detcd`):
            // read back exactly as written.
            let cluster_key = decode(encoded_key).unwrap_or_else(|| encoded_key.to_owned());
            out.insert(
                format!("{}{cluster_key}", tags::ETCD_VERSION_PREFIX),
                decoded(),
            );
        } else if let Some(cluster_key) = key.strip_prefix(ETCD_PREFIX) {
            out.insert(format!("{}{cluster_key}", tags::ETCD_PREFIX), decoded());
        } else if key == &format!("{ROLE_PREFIX}master") {
            out.insert(tags::MASTER_ROLE.to_owned(), value.clone());
        } else if key == &format!("{ROLE_PREFIX}control-plane") {
            out.insert(tags::CONTROL_PLANE_ROLE.to_owned(), value.clone());
        }
    }
    out
}

/// kOps' keys as GCE labels, for messages: the key an operator finds on the disk or instance,
/// and the value as stored (encoded where kOps encodes it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GceLabels;

impl crate::cloud::MetadataWords for GceLabels {
    fn noun(&self) -> &'static str {
        "label"
    }

    fn key(&self, key: &str) -> String {
        if key == tags::CLUSTER {
            CLUSTER_LABEL.to_owned()
        } else if key == FORMATTED_TAG {
            FORMATTED_LABEL.to_owned()
        } else if key == tags::MASTER_ROLE {
            format!("{ROLE_PREFIX}master")
        } else if key == tags::CONTROL_PLANE_ROLE {
            format!("{ROLE_PREFIX}control-plane")
        } else if let Some(cluster_key) = key.strip_prefix(tags::ETCD_VERSION_PREFIX) {
            format!("{ETCD_VERSION_PREFIX}{}", encode(cluster_key))
        } else if let Some(cluster_key) = key.strip_prefix(tags::ETCD_PREFIX) {
            format!("{ETCD_PREFIX}{cluster_key}")
        } else {
            key.to_owned()
        }
    }

    fn value(&self, key: &str, value: &str) -> String {
        if key == tags::CLUSTER {
            cluster_value(value)
        } else if key.starts_with(tags::ETCD_PREFIX) || key.starts_with(tags::ETCD_VERSION_PREFIX) {
            encode(value)
        } else {
            value.to_owned()
        }
    }
}

/// The GCE label for a key and value protokube writes (`tag_volume`): the formatted tag as it
/// is (a UUID), an etcd version encoded; `None` for a key protokube never writes.
pub(crate) fn from_tag(key: &str, value: &str) -> Option<(String, String)> {
    if key == FORMATTED_TAG {
        return Some((FORMATTED_LABEL.to_owned(), value.to_owned()));
    }
    let cluster_key = key.strip_prefix(tags::ETCD_VERSION_PREFIX)?;
    Some((
        format!("{ETCD_VERSION_PREFIX}{}", encode(cluster_key)),
        encode(value),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kops_encoding_round_trips() {
        assert_eq!(encode("a/a,b,c"), "a-2fa-2cb-2cc");
        assert_eq!(encode("3.5.13"), "3-2e5-2e13");
        assert_eq!(decode("a-2fa-2cb-2cc").as_deref(), Some("a/a,b,c"));
        for value in ["me/m1,m2", "a-b/a-b", "3.5.13", ""] {
            assert_eq!(decode(&encode(value)).as_deref(), Some(value));
        }
        assert_eq!(decode("a-2"), None);
        assert_eq!(decode("a-zz"), None);
    }

    #[test]
    fn kops_labels_read_as_kops_tags_for_the_cluster_looked_for() {
        let labels = BTreeMap::from([
            (CLUSTER_LABEL.to_owned(), "ha-example-com".to_owned()),
            ("k8s-io-role-master".to_owned(), "master".to_owned()),
            ("k8s-io-etcd-main".to_owned(), encode("a/a,b,c")),
            ("k8s-io-etcd-events".to_owned(), "a-zz".to_owned()),
            (
                FORMATTED_LABEL.to_owned(),
                "0e5b6f0c-7c0d-4d52-9b36-1ad2f0c1a8a1".to_owned(),
            ),
            (
                "k8s-io-protokube-etcd-version-main".to_owned(),
                encode("3.5.13"),
            ),
            ("unrelated".to_owned(), "x".to_owned()),
        ]);
        let read = to_tags(&labels, Some("ha.example.com"));
        assert_eq!(read[tags::CLUSTER], "ha.example.com");
        assert_eq!(read[tags::MASTER_ROLE], "master");
        assert_eq!(read["k8s.io/etcd/main"], "a/a,b,c");
        // Not a label kOps' encoding makes: kept raw, refused as malformed downstream.
        assert_eq!(read["k8s.io/etcd/events"], "a-zz");
        assert_eq!(read[FORMATTED_TAG], "0e5b6f0c-7c0d-4d52-9b36-1ad2f0c1a8a1");
        assert_eq!(read["k8s.io/protokube/etcd-version/main"], "3.5.13");
        assert_eq!(read.len(), 6);
        // Another cluster's disk keeps its label's value, and matches no cluster name.
        assert_eq!(
            to_tags(&labels, Some("other.example.com"))[tags::CLUSTER],
            "ha-example-com"
        );
    }

    #[test]
    fn role_tags_are_kops_network_tags_long_names_cut_with_kops_hash() {
        assert_eq!(
            role_tags("ha.example.com", "master"),
            [
                "ha-example-com-k8s-io-role-master".to_owned(),
                "ha-example-com-k8s-io-role-master".to_owned()
            ]
        );
        // kOps' integration test `minimal_gce_longclustername` (release-1.30
        // tests/integration/update_cluster/minimal_gce_longclustername/kubernetes.tf).
        let [plain, prefixed] = role_tags(
            "minimal-gce-with-a-very-very-very-very-very-long-name.example.com",
            "master",
        );
        assert_eq!(
            plain,
            "minimal-gce-with-a-very-very-very-very-very-long-name-example-com-k8s-io-role-master"
        );
        assert_eq!(
            prefixed,
            "minimal-gce-with-a-very-very-very-ver-96dqvi-k8s-io-role-master"
        );
        assert_eq!(
            role_tags(
                "minimal-gce-with-a-very-very-very-very-very-long-name.example.com",
                "control-plane"
            )[1],
            "minimal-gce-with-a-very-very-v-96dqvi-k8s-io-role-control-plane"
        );
    }

    #[test]
    fn what_protokube_writes_becomes_valid_labels() {
        assert_eq!(
            from_tag(FORMATTED_TAG, "0e5b6f0c-7c0d"),
            Some((FORMATTED_LABEL.to_owned(), "0e5b6f0c-7c0d".to_owned()))
        );
        assert_eq!(
            from_tag("k8s.io/protokube/etcd-version/main", "3.5.13"),
            Some((
                "k8s-io-protokube-etcd-version-main".to_owned(),
                "3-2e5-2e13".to_owned()
            ))
        );
        assert_eq!(from_tag("k8s.io/etcd/main", "a/a"), None);
    }
}
