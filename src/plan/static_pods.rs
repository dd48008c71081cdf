//! Static-pod manifests read as kubelet reads them, to tell whose pods a node runs: kubelet
//! decodes a file's first YAML (or JSON) document — after a UTF-8 or UTF-16 byte-order mark,
//! CRLF line ends, with a trailing `---` or a second document ignored, duplicate keys taken
//! (the last one wins for kubelet) — and runs it when it is a `v1 Pod`. Read here without
//! failing on what kubelet accepts; where a reading is ambiguous (duplicate keys, merge keys)
//! every value counts, so a pod kubelet may run is never missed. Pure.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess};

/// The first line of every manifest protokube writes: what tells its own pods from anyone
/// else's, whatever image they run.
pub(crate) const MANIFEST_MARKER: &str =
    "# Written by protokube (render-manifests): changes here are replaced on its next run.";

/// The largest manifest kubelet reads (its `maxConfigLength`, 10 MB); a larger file is one
/// protokube cannot read either.
pub(crate) const MAX_STATIC_POD_BYTES: u64 = 10 << 20;

/// What a file of the manifest directory is, read as kubelet reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StaticPod {
    /// One of protokube's own manifests (its first line is [`MANIFEST_MARKER`]).
    Protokube,
    /// A pod kubelet runs: its names and images (every value of a duplicated key).
    Pod(PodFacts),
    /// A document kubelet does not run as a pod (another kind, a `List`, a scalar, empty).
    NotAPod,
}

/// What a pod is, as far as telling etcd-manager's from others goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodFacts {
    /// `metadata.name`, every value given.
    pub(crate) names: Vec<String>,
    /// The images of its containers and init containers.
    pub(crate) images: Vec<String>,
}

impl PodFacts {
    /// Whether this is one of kOps' etcd-manager pods: named `etcd-manager-…`, or running an
    /// etcd-manager image (a path segment of the image's repository starting with
    /// `etcd-manager`, e.g. `registry.k8s.io/etcd-manager/etcd-manager-slim:v3.0.20260707`).
    pub(crate) fn is_etcd_manager(&self) -> bool {
        self.names.iter().any(|n| n.starts_with("etcd-manager-"))
            || self.images.iter().any(|i| is_etcd_manager_image(i))
    }
}

/// Reads a manifest's bytes as kubelet does; an error says why they cannot be read (not
/// UTF-8/UTF-16 text, not YAML).
pub(crate) fn read_static_pod(bytes: &[u8]) -> Result<StaticPod, String> {
    let text = decode_text(bytes)?;
    if text.lines().next().map(|l| l.trim_end_matches('\r')) == Some(MANIFEST_MARKER) {
        return Ok(StaticPod::Protokube);
    }
    let Some(document) = yaml_serde::Deserializer::from_str(&text).next() else {
        return Ok(StaticPod::NotAPod);
    };
    let node = Node::deserialize(document).map_err(|err| format!("not YAML or JSON: {err}"))?;
    let kinds = node.strings(&["kind"]);
    if !kinds.iter().any(|k| k == "Pod") {
        return Ok(StaticPod::NotAPod);
    }
    let mut images = Vec::new();
    for key in ["containers", "initContainers"] {
        for containers in node.all(&["spec", key]) {
            if let Node::Seq(items) = containers {
                for item in items {
                    images.extend(item.strings(&["image"]));
                }
            }
        }
    }
    Ok(StaticPod::Pod(PodFacts {
        names: node.strings(&["metadata", "name"]),
        images,
    }))
}

/// The text of a manifest: UTF-8 (a byte-order mark dropped) or UTF-16 with its byte-order
/// mark, as kubelet's YAML reader takes them.
fn decode_text(bytes: &[u8]) -> Result<String, String> {
    let utf16 = |big_endian: bool, rest: &[u8]| -> Result<String, String> {
        if !rest.len().is_multiple_of(2) {
            return Err("UTF-16 text with an odd number of bytes".to_owned());
        }
        let units = rest.chunks_exact(2).map(|pair| {
            let pair = [pair[0], pair[1]];
            if big_endian {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|_| "UTF-16 text that does not decode".to_owned())
    };
    match bytes {
        [0xEF, 0xBB, 0xBF, rest @ ..] => utf8(rest),
        [0xFF, 0xFE, rest @ ..] => utf16(false, rest),
        [0xFE, 0xFF, rest @ ..] => utf16(true, rest),
        _ => utf8(bytes),
    }
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "neither UTF-8 nor UTF-16 text".to_owned())
}

/// An image reference whose repository has a path segment starting with `etcd-manager`.
fn is_etcd_manager_image(image: &str) -> bool {
    let without_digest = image.split('@').next().unwrap_or_default();
    // A tag follows the last `:` after the last `/` (a registry's port comes before a `/`).
    let repository = match without_digest.rsplit_once('/') {
        Some((head, last)) => format!("{head}/{}", last.split(':').next().unwrap_or_default()),
        None => without_digest
            .split(':')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    repository
        .split('/')
        .any(|segment| segment.starts_with("etcd-manager"))
}

/// A YAML document as read here: scalars as text, mappings as their entries in order with
/// duplicate keys kept (kubelet takes the last; every one is looked at here).
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Null,
    Scalar(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// Every value at `path` (keys of nested mappings), duplicates and merge keys (`<<`)
    /// included.
    fn all<'a>(&'a self, path: &[&str]) -> Vec<&'a Node> {
        let Some((first, rest)) = path.split_first() else {
            return vec![self];
        };
        self.values(first)
            .into_iter()
            .flat_map(|value| value.all(rest))
            .collect()
    }

    /// The text of every scalar at `path`.
    fn strings(&self, path: &[&str]) -> Vec<String> {
        self.all(path)
            .into_iter()
            .filter_map(|node| match node {
                Node::Scalar(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every value of `key` in this mapping and in the mappings it merges (`<<`).
    fn values<'a>(&'a self, key: &str) -> Vec<&'a Node> {
        let Node::Map(entries) = self else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (k, value) in entries {
            match k {
                Node::Scalar(name) if name == key => found.push(value),
                Node::Scalar(name) if name == "<<" => match value {
                    Node::Seq(merged) => {
                        found.extend(merged.iter().flat_map(|m| m.values(key)));
                    }
                    merged => found.extend(merged.values(key)),
                },
                _ => {}
            }
        }
        found
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> de::Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_u128<E>(self, v: u128) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(v))
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Node::Map(entries))
    }

    /// A tagged value (`!Tag value`): the value, its tag dropped (kubelet's decoder does not
    /// look at tags either).
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Node, A::Error> {
        let (_tag, variant): (String, _) = data.variant()?;
        variant.newtype_variant()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KOPS_POD: &str =
        include_str!("../../tests/fixtures/kops/etcd-manager/etcd-main-master-us-test-1a.manifest");

    fn etcd_manager(bytes: &[u8]) -> bool {
        matches!(read_static_pod(bytes), Ok(StaticPod::Pod(facts)) if facts.is_etcd_manager())
    }

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut bytes = if big_endian {
            vec![0xFE, 0xFF]
        } else {
            vec![0xFF, 0xFE]
        };
        for unit in text.encode_utf16() {
            bytes.extend(if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        bytes
    }

    #[test]
    fn kops_pod_in_every_shape_kubelet_runs() {
        assert!(etcd_manager(KOPS_POD.as_bytes()));
        let crlf = KOPS_POD.replace('\n', "\r\n");
        let with_bom = [&[0xEF, 0xBB, 0xBF][..], KOPS_POD.as_bytes()].concat();
        let trailing = format!("{KOPS_POD}---\n");
        let second = format!("{KOPS_POD}---\napiVersion: v1\nkind: ConfigMap\n");
        let broken_second = format!("{KOPS_POD}---\n: : [ not yaml\n");
        let leading = format!("---\n{KOPS_POD}");
        let duplicate = KOPS_POD.replacen("kind: Pod", "kind: Pod\nkind: Pod", 1);
        for shape in [
            crlf.as_bytes(),
            &with_bom,
            trailing.as_bytes(),
            second.as_bytes(),
            broken_second.as_bytes(),
            leading.as_bytes(),
            duplicate.as_bytes(),
            &utf16(KOPS_POD, false),
            &utf16(KOPS_POD, true),
        ] {
            assert!(etcd_manager(shape), "{}", String::from_utf8_lossy(shape));
        }
    }

    #[test]
    fn duplicate_and_merged_keys_count_every_value() {
        // kubelet takes the last `name`; either one makes it etcd-manager's.
        let first_wins = "kind: Pod\nmetadata:\n  name: etcd-manager-main\n  name: other\n";
        let last_wins = "kind: Pod\nmetadata:\n  name: other\n  name: etcd-manager-main\n";
        let merged = "base: &b\n  image: kopeio/etcd-manager:1.0\nkind: Pod\nmetadata: {name: x}\n\
                      spec:\n  containers:\n  - <<: *b\n    name: c\n";
        let json = r#"{"kind": "Pod", "metadata": {"name": "x"}, "spec": {"initContainers": [{"image": "r.io/etcd-manager-slim:v3"}]}}"#;
        for text in [first_wins, last_wins, merged, json] {
            assert!(etcd_manager(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn what_kubelet_does_not_run_as_a_pod_is_not_a_pod() {
        let list = format!(
            "apiVersion: v1\nkind: List\nitems:\n- {}\n",
            KOPS_POD.replace('\n', "\n  ")
        );
        for text in [
            list.as_str(),
            "",
            "# only a comment\n",
            "just a string\n",
            "kind: ConfigMap\nmetadata: {name: etcd-manager-main}\n",
            // The pod is the second document: kubelet reads the first only.
            "kind: ConfigMap\n---\nkind: Pod\nmetadata: {name: etcd-manager-main}\n",
        ] {
            assert_eq!(
                read_static_pod(text.as_bytes()),
                Ok(StaticPod::NotAPod),
                "{text}"
            );
        }
    }

    #[test]
    fn what_cannot_be_read_says_why() {
        for (bytes, why) in [
            (&b"kind: Pod\nmetadata: [unclosed\n"[..], "not YAML"),
            (&[0xC3, 0x28, 0x0A][..], "neither UTF-8"),
            (&[0xFF, 0xFE, 0x41][..], "odd number"),
        ] {
            let err = read_static_pod(bytes).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }

    #[test]
    fn protokube_s_own_manifests_are_known_by_their_first_line_not_their_image() {
        let own = format!(
            "{MANIFEST_MARKER}\r\napiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd-server\n\
             spec:\n  containers:\n  - image: registry.example.com/etcd-manager-mirror/etcd:3.5.13\n"
        );
        assert_eq!(read_static_pod(own.as_bytes()), Ok(StaticPod::Protokube));
        // The same pod without the marker runs an etcd-manager image as far as anyone can tell.
        let other = own.split_once('\n').unwrap().1;
        assert!(etcd_manager(other.as_bytes()));
    }

    #[test]
    fn images_by_repository_segment() {
        for (image, expected) in [
            (
                "registry.k8s.io/etcd-manager/etcd-manager-slim:v3.0.20260707",
                true,
            ),
            ("registry.example.com:5000/kops/etcd-manager:1.0", true),
            ("etcd-manager-slim@sha256:abc", true),
            ("registry.k8s.io/etcd:3.5.13-0", false),
            ("registry.example.com:5000/etcd:etcd-manager", false),
        ] {
            assert_eq!(is_etcd_manager_image(image), expected, "{image}");
        }
    }
}
