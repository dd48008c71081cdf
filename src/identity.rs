//! This node's identity: instance id, zone, region and addresses from the cloud's metadata
//! service, each overridable by its flag. Only what a command needs is fetched, and nothing when
//! every flag is given.

use std::net::IpAddr;

use anyhow::{anyhow, Context as _, Result};

use crate::cloud::{InstanceMetadata, MetadataItem};

/// Identity values given on the command line (or their `PROTOKUBE_*` variables).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IdentityOverrides {
    pub(crate) instance_id: Option<String>,
    pub(crate) availability_zone: Option<String>,
    pub(crate) region: Option<String>,
    pub(crate) internal_ip: Option<IpAddr>,
    pub(crate) external_ip: Option<IpAddr>,
}

/// Who and where this node is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeIdentity {
    pub(crate) instance_id: String,
    pub(crate) availability_zone: String,
    pub(crate) region: String,
    /// `--internal-ip`, when given.
    pub(crate) internal_ip: Option<IpAddr>,
    /// `--external-ip`, when given.
    pub(crate) external_ip: Option<IpAddr>,
}

/// One identity item: its flag and the metadata service's item.
struct Item {
    flag: &'static str,
    item: MetadataItem,
}

const INSTANCE_ID: Item = Item {
    flag: "--instance-id",
    item: MetadataItem::InstanceId,
};
const ZONE: Item = Item {
    flag: "--availability-zone",
    item: MetadataItem::Zone,
};
const REGION: Item = Item {
    flag: "--region",
    item: MetadataItem::Region,
};
/// Resolves the node identity: flags first, then the metadata service for what is missing.
///
/// When the metadata service cannot be reached the error names every flag still needed.
pub(crate) async fn resolve(
    overrides: &IdentityOverrides,
    metadata: &dyn InstanceMetadata,
) -> Result<NodeIdentity> {
    let mut missing: Vec<&'static str> = Vec::new();
    if overrides.instance_id.is_none() {
        missing.push(INSTANCE_ID.flag);
    }
    if overrides.availability_zone.is_none() {
        missing.push(ZONE.flag);
    }
    if overrides.region.is_none() {
        missing.push(REGION.flag);
    }
    let fetch = |item: &'static Item| {
        let missing = missing.clone();
        async move {
            metadata.get(item.item).await.with_context(|| {
                format!(
                    "cannot read `{}` from {}; on a machine without it pass {}",
                    metadata.path(item.item),
                    metadata.service(),
                    missing.join(", ")
                )
            })
        }
    };
    let required = |value: Option<String>, item: &'static Item| {
        value
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                anyhow!(
                    "{} has no `{}`; pass {}",
                    metadata.service(),
                    metadata.path(item.item),
                    item.flag
                )
            })
    };
    let instance_id = match &overrides.instance_id {
        Some(id) => id.clone(),
        None => required(fetch(&INSTANCE_ID).await?, &INSTANCE_ID)?,
    };
    let availability_zone = match &overrides.availability_zone {
        Some(zone) => zone.clone(),
        None => required(fetch(&ZONE).await?, &ZONE)?,
    };
    let region = match &overrides.region {
        Some(region) => region.clone(),
        None => required(fetch(&REGION).await?, &REGION)?,
    };
    // Values given as flags were checked with the settings; the metadata service's are checked
    // here, unless its provider checks its own spelling of them.
    if !metadata.checks_its_names() {
        check_identity_value("instance id", &instance_id, INSTANCE_ID.flag)?;
        check_identity_value("availability zone", &availability_zone, ZONE.flag)?;
        check_identity_value("region", &region, REGION.flag)?;
    }
    Ok(NodeIdentity {
        instance_id,
        availability_zone,
        region,
        internal_ip: overrides.internal_ip,
        external_ip: overrides.external_ip,
    })
}

/// Identity values go into API filters and log lines: plain `[a-z0-9-]` only.
pub(crate) fn check_identity_value(what: &str, value: &str, flag: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(anyhow!(
            "{what} `{}` is not valid (lowercase letters, digits and `-`); check {flag}",
            value.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// Metadata double: fixed answers, records which paths were asked.
    #[derive(Default)]
    struct FakeMetadata {
        items: BTreeMap<&'static str, &'static str>,
        unreachable: bool,
        asked: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl InstanceMetadata for FakeMetadata {
        fn service(&self) -> &'static str {
            "the fake metadata service"
        }

        fn path(&self, item: MetadataItem) -> &'static str {
            crate::providers::aws::imds::path(item)
        }

        async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
            let path = self.path(item);
            self.asked.lock().unwrap().push(path.to_owned());
            if self.unreachable {
                return Err(anyhow!("connection refused"));
            }
            Ok(self.items.get(path).map(std::string::ToString::to_string))
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn ec2_metadata() -> FakeMetadata {
        FakeMetadata {
            items: BTreeMap::from([
                ("instance-id", "i-0123"),
                ("placement/availability-zone", "us-test-1a"),
                ("placement/region", "us-test-1"),
                ("local-ipv4", "10.0.0.5"),
            ]),
            ..Default::default()
        }
    }

    #[test]
    fn flags_win_and_a_fully_overridden_identity_asks_nothing() {
        let metadata = FakeMetadata {
            unreachable: true,
            ..Default::default()
        };
        let overrides = IdentityOverrides {
            instance_id: Some("i-flag".into()),
            availability_zone: Some("eu-west-1b".into()),
            region: Some("eu-west-1".into()),
            ..Default::default()
        };
        let id = block_on(resolve(&overrides, &metadata)).unwrap();
        assert_eq!(id.instance_id, "i-flag");
        assert!(metadata.asked.lock().unwrap().is_empty());
    }

    #[test]
    fn unreachable_metadata_names_the_flags_to_pass() {
        let metadata = FakeMetadata {
            unreachable: true,
            ..Default::default()
        };
        let overrides = IdentityOverrides {
            region: Some("us-test-1".into()),
            ..Default::default()
        };
        let err = block_on(resolve(&overrides, &metadata)).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("pass --instance-id, --availability-zone"),
            "{text}"
        );
        assert!(!text.contains("--region"), "{text}");
    }

    #[test]
    fn hostile_metadata_values_are_refused() {
        let mut metadata = ec2_metadata();
        metadata
            .items
            .insert("placement/availability-zone", "us-test-1a\nx: y");
        let err = block_on(resolve(&IdentityOverrides::default(), &metadata)).unwrap_err();
        assert!(format!("{err:#}").contains("availability zone"), "{err:#}");
    }
}
