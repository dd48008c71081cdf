//! Validation of names that end up in DNS names, file names and manifests (DNS-1123 rules).

/// True when `name` is a DNS-1123 label: 1–63 of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_dns1123_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// True when `name` is a DNS-1123 subdomain: dot-separated labels, 253 characters at most.
pub(crate) fn is_dns1123_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns1123_label)
}

/// Checks a name protokube publishes: labels of 1 to 63 characters of `[a-z0-9-]`, not starting
/// or ending with `-` (so no wildcard and no empty label), 253 characters at most in all.
pub(crate) fn check_dns_name(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err(format!(
            "`{}` is {} characters long; a DNS name has 253 at most",
            name.escape_debug(),
            name.len()
        ));
    }
    for label in name.split('.') {
        if label == "*" {
            return Err(format!("`{}` is a wildcard name", name.escape_debug()));
        }
        if label.len() > 63 {
            return Err(format!(
                "`{}` has a label of {} characters (`{label}`); a DNS label has 63 at most",
                name.escape_debug(),
                label.len()
            ));
        }
        if !is_dns1123_label(label) {
            return Err(format!(
                "`{}` is not a valid DNS name (lowercase letters, digits, `-` and `.`, each label \
                 starting and ending with a letter or digit)",
                name.escape_debug()
            ));
        }
    }
    Ok(())
}

/// Checks a cluster name (it becomes part of DNS names and tag filters).
pub(crate) fn check_cluster_name(name: &str) -> Result<(), String> {
    if is_dns1123_subdomain(name) {
        Ok(())
    } else {
        Err(format!(
            "cluster name `{}` is not a valid DNS name (lowercase letters, digits, `-` and `.`, \
             each label starting and ending with a letter or digit)",
            name.escape_debug()
        ))
    }
}

/// A DNS name as protokube compares them: lowercase, no trailing dot, a service's octal escape `\052` for `*`
/// undone.
pub(crate) fn normalize_dns_name(name: &str) -> String {
    name.trim_end_matches('.')
        .replace("\\052", "*")
        .to_ascii_lowercase()
}

/// True when `name` is `apex` or a name below it.
pub(crate) fn is_within(name: &str, apex: &str) -> bool {
    name == apex
        || name
            .strip_suffix(apex)
            .is_some_and(|head| head.ends_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        for good in ["a", "us-test-1a", "etcd-events", "0", &"a".repeat(63)] {
            assert!(is_dns1123_label(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "A",
            "a.b",
            "a b",
            "a\nb",
            "é",
            "a_b",
            &"a".repeat(64),
        ] {
            assert!(!is_dns1123_label(bad), "{bad:?}");
        }
    }

    #[test]
    fn published_names() {
        assert!(check_dns_name("api.c.example.com").is_ok());
        assert!(check_dns_name("*.example.com")
            .unwrap_err()
            .contains("wildcard"));
        let long = format!("etcd-{}-{}.internal.c", "k".repeat(40), "m".repeat(30));
        assert!(check_dns_name(&long)
            .unwrap_err()
            .contains("label of 76 characters"));
        let total = vec!["a".repeat(60); 5].join(".");
        assert!(check_dns_name(&total).unwrap_err().contains("253 at most"));
        assert!(check_dns_name("a\tb.c").is_err());
        assert!(check_dns_name("a..b").is_err());
    }

    #[test]
    fn within_and_normalized() {
        assert!(is_within("a.b.c", "b.c"));
        assert!(is_within("b.c", "b.c"));
        assert!(!is_within("ab.c", "b.c"));
        assert!(!is_within("c", "b.c"));
        assert_eq!(normalize_dns_name("\\052.Example.COM."), "*.example.com");
    }

    #[test]
    fn subdomains_and_cluster_names() {
        assert!(is_dns1123_subdomain("minimal.k8s.local"));
        assert!(is_dns1123_subdomain("ha.example.com"));
        assert!(!is_dns1123_subdomain("ha..example.com"));
        assert!(!is_dns1123_subdomain("ha.example.com."));
        assert!(check_cluster_name("c.example.com").is_ok());
        let err = check_cluster_name("c.example.com\ninjected: 1").unwrap_err();
        assert!(err.contains(r"c.example.com\ninjected: 1"), "{err}");
    }
}
