//! The template engine: Tera with the built-in templates (or `--templates` overrides), the
//! `yaml` filter every interpolated value goes through, and the check that a rendered manifest
//! is one valid `v1 Pod`.

use std::collections::HashMap;

use anyhow::{anyhow, bail, Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize as _;
use tera::{Tera, Value};

use crate::plan::static_pods::MANIFEST_MARKER;

/// The built-in templates, compiled into the binary.
pub const BUILTIN_TEMPLATES: &[(&str, &str)] = &[
    (
        "_resources.yaml",
        include_str!("../../../templates/_resources.yaml"),
    ),
    ("etcd.yaml", include_str!("../../../templates/etcd.yaml")),
    (
        "kube-apiserver.yaml",
        include_str!("../../../templates/kube-apiserver.yaml"),
    ),
    (
        "kube-controller-manager.yaml",
        include_str!("../../../templates/kube-controller-manager.yaml"),
    ),
    (
        "kube-scheduler.yaml",
        include_str!("../../../templates/kube-scheduler.yaml"),
    ),
    (
        "kube-proxy.yaml",
        include_str!("../../../templates/kube-proxy.yaml"),
    ),
];

/// Compiles the templates: each built-in one, replaced by the text of the same name in
/// `overrides` (file name → text) when there is one.
pub fn compile_templates(overrides: &[(String, String)]) -> Result<Tera> {
    let mut sources: Vec<(String, String)> = Vec::new();
    for (name, builtin) in BUILTIN_TEMPLATES {
        let text = match overrides.iter().find(|(n, _)| n == name) {
            Some((_, text)) => {
                tracing::debug!("template `{name}` overridden");
                text.clone()
            }
            None => (*builtin).to_owned(),
        };
        sources.push((name.to_string(), text));
    }
    let mut tera = Tera::default();
    tera.autoescape_on(Vec::new());
    tera.add_raw_templates(sources)
        .map_err(|err| anyhow!("{}", tera_error_chain(&err)))
        .context("compiling the manifest templates")?;
    tera.register_filter("yaml", yaml_filter);
    Ok(tera)
}

/// Tera's errors keep the useful part in their sources.
pub(crate) fn tera_error_chain(err: &tera::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        parts.push(inner.to_string());
        source = inner.source();
    }
    parts.join(": ")
}

/// Renders one template with a context, under protokube's first line. Leading blank lines are
/// dropped: Tera keeps the line break after a comment that opens a template.
pub fn render(tera: &Tera, template: &str, context: &tera::Context) -> Result<String> {
    let text = tera.render(template, context).map_err(|err| {
        anyhow!(
            "rendering template `{template}`: {}",
            tera_error_chain(&err)
        )
    })?;
    // The first line says whose manifest this is (`static_pods::MANIFEST_MARKER`): protokube
    // knows its own pods by it, never by the image they run.
    Ok(format!(
        "{MANIFEST_MARKER}\n{}",
        text.trim_start_matches(['\n', '\r'])
    ))
}

/// `{{ value | yaml }}`: a string becomes a double-quoted YAML scalar with every special
/// character escaped, so no value can add keys, lines or documents; numbers and booleans stay
/// plain.
fn yaml_filter(value: &Value, _args: &HashMap<String, Value>) -> tera::Result<Value> {
    match value {
        Value::String(s) => Ok(Value::String(quote_yaml(s))),
        Value::Number(n) => Ok(Value::String(n.to_string())),
        Value::Bool(b) => Ok(Value::String(b.to_string())),
        Value::Null => Ok(Value::String("null".to_owned())),
        other => Err(tera::Error::msg(format!(
            "the yaml filter takes a string, number or boolean, not {other}"
        ))),
    }
}

/// A YAML double-quoted scalar for `s`.
pub fn quote_yaml(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if ('\u{80}'..='\u{9f}').contains(&c)
                || c == '\u{2028}'
                || c == '\u{2029}'
                || c == '\u{feff}' =>
            {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Checks that `text` is exactly one YAML document holding a valid `v1 Pod` with no unknown or
/// misspelt fields; returns the pod.
pub fn validate_pod(text: &str, template: &str) -> Result<Pod> {
    let mut documents = Vec::new();
    for document in yaml_serde::Deserializer::from_str(text) {
        let value = yaml_serde::Value::deserialize(document)
            .map_err(|err| anyhow!("template `{template}` does not render valid YAML: {err}"))?;
        documents.push(value);
    }
    if documents.len() != 1 {
        bail!(
            "template `{template}` renders {} YAML documents, expected exactly one Pod",
            documents.len()
        );
    }
    let mut unknown = Vec::new();
    let pod: Pod = serde_ignored::deserialize(documents.remove(0), |path| {
        unknown.push(path.to_string());
    })
    .map_err(|err| anyhow!("template `{template}` does not render a valid v1 Pod: {err}"))?;
    if !unknown.is_empty() {
        bail!(
            "template `{template}` renders unknown or misspelt Pod field(s): {}",
            unknown.join(", ")
        );
    }
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_hostile_values_in_one_scalar() {
        for hostile in [
            "a\nb: c",
            "x\"\n---\nkind: Secret",
            "# comment",
            "key: value",
            "tab\there",
            "back\\slash",
            "nul\0bell\x07",
            "\u{2028}line sep",
            "ünïcode ✓",
            "",
        ] {
            let doc = format!("value: {}\n", quote_yaml(hostile));
            let docs: Vec<yaml_serde::Value> = yaml_serde::Deserializer::from_str(&doc)
                .map(|d| yaml_serde::Value::deserialize(d).unwrap())
                .collect();
            assert_eq!(docs.len(), 1, "{hostile:?}");
            let mapping = docs[0].as_mapping().unwrap();
            assert_eq!(mapping.len(), 1, "{hostile:?}");
            assert_eq!(docs[0]["value"].as_str(), Some(hostile), "{hostile:?}");
        }
    }

    #[test]
    fn pods_are_validated_strictly() {
        let good = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: c\n    image: i\n";
        validate_pod(good, "t").unwrap();
        let misspelt = good.replace("    image: i", "    imagee: i");
        let err = validate_pod(&misspelt, "t").unwrap_err();
        assert!(err.to_string().contains("imagee"), "{err}");
        let two = format!("{good}---\n{good}");
        assert!(validate_pod(&two, "t")
            .unwrap_err()
            .to_string()
            .contains("2 YAML documents"));
        let wrong_kind = good.replace("kind: Pod", "kind: Secret");
        assert!(validate_pod(&wrong_kind, "t").is_err());
        let bad_type = good.replace("name: x", "name: [x]");
        assert!(validate_pod(&bad_type, "t").is_err());
    }
}
