//! DNS zones and their choice by kOps' `--zone` rules (`*`, `*/*`, `*/ID`, `NAME`, `NAME/ID`),
//! `spec.dnsZone`, else the longest-suffix zone. Pure.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// A DNS service's zone. Names are lowercase, without the trailing dot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zone {
    /// The service's id of it (without any path prefix).
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) private: bool,
}

/// One `--zone` rule.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ZoneRule {
    /// `*` or `*/*`: any hosted zone.
    Any,
    /// `*/ID`.
    Id(String),
    /// `NAME`.
    Name(String),
    /// `NAME/ID`.
    NameId(String, String),
}

impl ZoneRule {
    /// Parses a `--zone` value.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "--zone `{}` is not `*`, `*/*`, `*/ID`, `NAME` or `NAME/ID`",
                text.escape_debug()
            )
        };
        let valid_name = |n: &str| crate::names::is_dns1123_subdomain(&n.to_ascii_lowercase());
        let valid_id = |i: &str| {
            !i.is_empty() && i.len() <= 32 && i.bytes().all(|b| b.is_ascii_alphanumeric())
        };
        let text = text.trim();
        Ok(match text.split_once('/') {
            None if text == "*" => ZoneRule::Any,
            None if valid_name(text.trim_end_matches('.')) => {
                ZoneRule::Name(text.trim_end_matches('.').to_ascii_lowercase())
            }
            Some(("*", "*")) => ZoneRule::Any,
            Some(("*", id)) if valid_id(id) => ZoneRule::Id(id.to_owned()),
            Some((name, id)) if valid_name(name.trim_end_matches('.')) && valid_id(id) => {
                ZoneRule::NameId(
                    name.trim_end_matches('.').to_ascii_lowercase(),
                    id.to_owned(),
                )
            }
            _ => return Err(bad()),
        })
    }

    /// The rule for `spec.dnsZone`, which kOps lets be a zone id or a zone name: as kOps
    /// decides, a value without a dot is an id.
    pub(crate) fn from_spec(dns_zone: &str) -> Result<Self, String> {
        let looks_like_id = !dns_zone.contains('.')
            && !dns_zone.is_empty()
            && dns_zone.len() <= 32
            && dns_zone.bytes().all(|b| b.is_ascii_alphanumeric());
        if looks_like_id {
            Ok(ZoneRule::Id(dns_zone.to_owned()))
        } else {
            ZoneRule::parse(dns_zone).map_err(|e| format!("spec.dnsZone: {e}"))
        }
    }

    pub(crate) fn allows(&self, zone: &Zone) -> bool {
        match self {
            ZoneRule::Any => true,
            ZoneRule::Id(id) => zone.id == *id,
            ZoneRule::Name(name) => zone.name == *name,
            ZoneRule::NameId(name, id) => zone.name == *name && zone.id == *id,
        }
    }
}

/// The zone a name goes to: the allowed zone with the longest name that is a suffix of it.
/// Two zones of that name (a public and a private one) are ambiguous: the error says how to pick.
pub(crate) fn zone_for<'a>(name: &str, zones: &'a [Zone]) -> Result<Option<&'a Zone>> {
    let matching: Vec<&Zone> = zones
        .iter()
        .filter(|z| name == z.name || name.ends_with(&format!(".{}", z.name)))
        .collect();
    let Some(longest) = matching.iter().map(|z| z.name.len()).max() else {
        return Ok(None);
    };
    let best: Vec<&&Zone> = matching
        .iter()
        .filter(|z| z.name.len() == longest)
        .collect();
    if best.len() > 1 {
        bail!(
            "`{name}` fits several zones named `{}` ({}); choose one with --zone NAME/ID",
            best[0].name,
            best.iter()
                .map(|z| z.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(Some(best[0]))
}

/// A record set. Names are lowercase, without the trailing dot; TXT values keep their quotes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordSet {
    pub(crate) name: String,
    pub(crate) record_type: String,
    pub(crate) ttl: Option<i64>,
    pub(crate) values: Vec<String>,
    /// Served by the service from something else (an alias to a load balancer, …): it has no
    /// values of its own, and protokube never writes it.
    pub(crate) alias: bool,
}

/// What a change does to a record set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordAction {
    /// Adds a record set; refused when one of that name and type exists (another writer was
    /// first).
    Create,
    /// Replaces the record set of that name and type, or adds it.
    Upsert,
    /// Removes a record set; its values and TTL must be the ones the service holds.
    Delete,
}

/// One change of a zone's changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordChange {
    pub(crate) action: RecordAction,
    pub(crate) record: RecordSet,
    /// For an upsert, the set it replaces as read (a service that changes by exact deletions
    /// and additions deletes it).
    pub(crate) replaces: Option<RecordSet>,
}

impl RecordChange {
    /// Adds `record`.
    pub(crate) fn create(record: RecordSet) -> Self {
        Self {
            action: RecordAction::Create,
            record,
            replaces: None,
        }
    }

    /// Puts `record` in place of `held`, the set of its name and type as read.
    pub(crate) fn upsert(record: RecordSet, held: RecordSet) -> Self {
        Self {
            action: RecordAction::Upsert,
            record,
            replaces: Some(held),
        }
    }

    /// Removes `record`, exactly as held.
    pub(crate) fn delete(record: RecordSet) -> Self {
        Self {
            action: RecordAction::Delete,
            record,
            replaces: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(id: &str, name: &str) -> Zone {
        Zone {
            id: id.into(),
            name: name.into(),
            private: false,
        }
    }

    #[test]
    fn kops_zone_rule_syntax() {
        assert_eq!(ZoneRule::parse("*"), Ok(ZoneRule::Any));
        assert_eq!(ZoneRule::parse("*/*"), Ok(ZoneRule::Any));
        assert_eq!(
            ZoneRule::parse("*/Z1AFAKE1ZON3YO"),
            Ok(ZoneRule::Id("Z1AFAKE1ZON3YO".into()))
        );
        assert_eq!(
            ZoneRule::parse("Example.com."),
            Ok(ZoneRule::Name("example.com".into()))
        );
        assert_eq!(
            ZoneRule::parse("example.com/Z1"),
            Ok(ZoneRule::NameId("example.com".into(), "Z1".into()))
        );
        for bad in ["", "a/b/c", "*/", "bad name/Z1", "x\ny", "*/Z-1"] {
            assert!(ZoneRule::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            ZoneRule::from_spec("Z1AFAKE1ZON3YO"),
            Ok(ZoneRule::Id("Z1AFAKE1ZON3YO".into()))
        );
        assert_eq!(
            ZoneRule::from_spec("example.com"),
            Ok(ZoneRule::Name("example.com".into()))
        );
    }

    #[test]
    fn longest_suffix_wins_and_twins_are_ambiguous() {
        let zones = [
            zone("Z1", "example.com"),
            zone("Z2", "c.example.com"),
            zone("Z3", "other.com"),
        ];
        assert_eq!(
            zone_for("api.c.example.com", &zones).unwrap().unwrap().id,
            "Z2"
        );
        assert_eq!(
            zone_for("api.d.example.com", &zones).unwrap().unwrap().id,
            "Z1"
        );
        assert_eq!(zone_for("c.example.com", &zones).unwrap().unwrap().id, "Z2");
        assert!(zone_for("api.example.org", &zones).unwrap().is_none());
        assert!(zone_for("xexample.com", &zones).unwrap().is_none());
        let twins = [zone("Z1", "example.com"), zone("Z2", "example.com")];
        let err = zone_for("api.example.com", &twins).unwrap_err();
        assert!(err.to_string().contains("--zone NAME/ID"), "{err}");
    }
}
