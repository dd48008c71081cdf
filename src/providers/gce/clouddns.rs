//! Cloud DNS v1 behind the zone seam, on the Google API layer GCE's compute client uses
//! (`api.rs`): managed zones (public or private by `visibility`), the record sets at
//! each name read per name, one `changes.create` per batch with exact deletions and additions
//! (an upsert deletes the set it replaces as read), and a change someone else made first (412
//! `conditionNotMet`, 409 `alreadyExists`) answered as a conflict to re-read and re-plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;
use hyper::Method;
use serde::Deserialize;
use serde_json::json;

use crate::dns::zoned::api::{ChangeResult, ZoneApi, ZoneGone, ZoneService};
use crate::names::normalize_dns_name;
use crate::plan::dns::zone_plan::EXTERNAL_DNS_PREFIXES;
use crate::plan::dns::zones::Zone;
use crate::plan::dns::zones::{RecordAction, RecordChange, RecordSet};
use crate::providers::gce::api::{request_id, required, GoogleApi, GoogleError, GoogleService};
use crate::providers::http::escape;

/// Additions and deletions per change at most (Cloud DNS' quota per change is 1 000 each).
const CHANGE_LIMIT: usize = 1000;

/// Cloud DNS clients on the run's Google API layer.
pub(crate) struct CloudDnsService {
    api: Arc<GoogleApi>,
}

impl CloudDnsService {
    pub(crate) fn new(api: Arc<GoogleApi>) -> Self {
        Self { api }
    }
}

#[async_trait]
impl ZoneService for CloudDnsService {
    async fn connect(&self, _region: &str) -> Result<Arc<dyn ZoneApi>> {
        Ok(Arc::new(CloudDns {
            project: self.api.project().await?,
            api: self.api.clone(),
        }))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManagedZone {
    id: Option<String>,
    dns_name: Option<String>,
    visibility: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ZonesPage {
    #[serde(default)]
    managed_zones: Vec<ManagedZone>,
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceRecordSet {
    name: Option<String>,
    #[serde(rename = "type")]
    record_type: Option<String>,
    ttl: Option<i64>,
    #[serde(default)]
    rrdatas: Vec<String>,
    routing_policy: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordsPage {
    #[serde(default)]
    rrsets: Vec<ResourceRecordSet>,
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct Change {
    id: Option<String>,
    status: Option<String>,
}

/// Cloud DNS' managed zones of one project.
pub(crate) struct CloudDns {
    api: Arc<GoogleApi>,
    project: String,
}

fn zone(managed: ManagedZone) -> Result<Zone> {
    Ok(Zone {
        id: required(managed.id, "id", "dns.managedZones")?,
        name: normalize_dns_name(&required(managed.dns_name, "dnsName", "dns.managedZones")?),
        private: managed.visibility.as_deref() == Some("private"),
    })
}

/// The fully qualified form Cloud DNS names carry (`a.example.com.`).
fn fqdn(name: &str) -> String {
    format!("{}.", name.trim_end_matches('.'))
}

/// A record set in Cloud DNS' shape.
fn rrset(set: &RecordSet) -> serde_json::Value {
    json!({
        "name": fqdn(&set.name),
        "type": set.record_type,
        "ttl": set.ttl,
        "rrdatas": set.values,
    })
}

impl CloudDns {
    fn zone_path(&self, zone: &Zone, rest: &str) -> String {
        format!(
            "projects/{}/managedZones/{}{rest}",
            escape(&self.project),
            escape(&zone.id)
        )
    }

    /// The record sets at `name` (every type), a zone that is gone being [`ZoneGone`].
    async fn at(&self, zone: &Zone, name: &str) -> Result<Vec<RecordSet>> {
        let path = self.zone_path(zone, "/rrsets");
        let fqdn = fqdn(name);
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("name", fqdn.as_str())];
            if let Some(token) = &token {
                query.push(("pageToken", token.as_str()));
            }
            let page: RecordsPage = match self
                .api
                .call(
                    GoogleService::Dns,
                    "dns.resourceRecordSets.list",
                    Method::GET,
                    &path,
                    &query,
                    None,
                )
                .await
            {
                Ok(page) => page,
                Err(err) if GoogleError::in_chain(&err).is_some_and(|e| e.status == 404) => {
                    return Err(ZoneGone {
                        zone_id: zone.id.clone(),
                    }
                    .into())
                }
                Err(err) => return Err(err),
            };
            for set in page.rrsets {
                out.push(RecordSet {
                    name: normalize_dns_name(&required(
                        set.name,
                        "name",
                        "dns.resourceRecordSets",
                    )?),
                    record_type: required(set.record_type, "type", "dns.resourceRecordSets")?,
                    ttl: set.ttl,
                    values: set.rrdatas,
                    // A routing policy serves answers protokube does not write.
                    alias: set.routing_policy.is_some(),
                });
            }
            token = page.next_page_token.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(out);
            }
        }
    }
}

#[async_trait]
impl ZoneApi for CloudDns {
    fn service(&self) -> &'static str {
        "Cloud DNS"
    }

    async fn zone_by_id(&self, id: &str) -> Result<Option<Zone>> {
        let path = format!(
            "projects/{}/managedZones/{}",
            escape(&self.project),
            escape(id)
        );
        match self
            .api
            .call::<ManagedZone>(
                GoogleService::Dns,
                "dns.managedZones.get",
                Method::GET,
                &path,
                &[],
                None,
            )
            .await
        {
            Ok(managed) => zone(managed).map(Some),
            Err(err) if GoogleError::in_chain(&err).is_some_and(|e| e.status == 404) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn all_zones(&self) -> Result<Vec<Zone>> {
        let path = format!("projects/{}/managedZones", escape(&self.project));
        let mut zones = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let query: Vec<(&str, &str)> =
                token.iter().map(|t| ("pageToken", t.as_str())).collect();
            let page: ZonesPage = self
                .api
                .call(
                    GoogleService::Dns,
                    "dns.managedZones.list",
                    Method::GET,
                    &path,
                    &query,
                    None,
                )
                .await?;
            for managed in page.managed_zones {
                zones.push(zone(managed)?);
            }
            token = page.next_page_token.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(zones);
            }
        }
    }

    /// Each name read by itself (Cloud DNS lists a zone by name, not by subtree, so cost does
    /// not grow with the zone); a name that holds records but no TXT of its own has
    /// external-dns' ownership names read too; the cluster's own name is read for an NS that
    /// delegates its subtree.
    async fn read(&self, zone: &Zone, names: &[&str], cluster: &str) -> Result<Vec<RecordSet>> {
        let mut read: BTreeMap<String, Vec<RecordSet>> = BTreeMap::new();
        let mut wanted: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        if crate::names::is_within(cluster, &zone.name) && cluster != zone.name {
            wanted.push(cluster.to_owned());
        }
        for name in &wanted {
            if !read.contains_key(name) {
                let sets = self.at(zone, name).await?;
                read.insert(name.clone(), sets);
            }
        }
        for name in names {
            let sets = &read[*name];
            let has_txt = sets.iter().any(|s| s.record_type == "TXT");
            if !sets.is_empty() && !has_txt {
                for prefix in EXTERNAL_DNS_PREFIXES {
                    let at = format!("{prefix}{name}");
                    if let std::collections::btree_map::Entry::Vacant(entry) = read.entry(at) {
                        let sets = self.at(zone, entry.key()).await?;
                        entry.insert(sets);
                    }
                }
            }
        }
        Ok(read.into_values().flatten().collect())
    }

    fn batches(&self, changes: &[RecordChange]) -> Vec<Vec<RecordChange>> {
        // A name's changes stay together; each batch within the quota of one change.
        let mut out: Vec<Vec<RecordChange>> = Vec::new();
        let mut weight = 0;
        for change in changes {
            let w = if change.action == RecordAction::Upsert {
                2
            } else {
                1
            };
            let same_name = out
                .last()
                .and_then(|b| b.last())
                .is_some_and(|c| c.record.name == change.record.name);
            match out.last_mut() {
                Some(batch) if same_name || weight + w <= CHANGE_LIMIT => {
                    batch.push(change.clone());
                }
                _ => {
                    out.push(vec![change.clone()]);
                    weight = 0;
                }
            }
            weight += w;
        }
        out
    }

    async fn change_records(&self, zone: &Zone, changes: &[RecordChange]) -> Result<ChangeResult> {
        let mut additions = Vec::new();
        let mut deletions = Vec::new();
        for change in changes {
            match change.action {
                RecordAction::Create => additions.push(rrset(&change.record)),
                RecordAction::Delete => deletions.push(rrset(&change.record)),
                RecordAction::Upsert => {
                    if let Some(held) = &change.replaces {
                        deletions.push(rrset(held));
                    }
                    additions.push(rrset(&change.record));
                }
            }
        }
        let body = json!({"additions": additions, "deletions": deletions});
        let path = self.zone_path(zone, "/changes");
        let id = request_id();
        match self
            .api
            .call::<Change>(
                GoogleService::Dns,
                "dns.changes.create",
                Method::POST,
                &path,
                &[("clientOperationId", id.as_str())],
                Some(body),
            )
            .await
        {
            Ok(change) => Ok(ChangeResult::Submitted {
                change_id: required(change.id, "id", "dns.changes.create")?,
            }),
            Err(err) => match GoogleError::in_chain(&err) {
                Some(e) if e.status == 409 || e.status == 412 => {
                    Ok(ChangeResult::Conflict(e.message.clone()))
                }
                // Cloud DNS answers 404 `notFound` both for a zone that is gone and for a
                // deletion of a set that is gone (someone removed the name since it was read,
                // or a retried change was applied the first time): the zone tells which.
                Some(e) if e.status == 404 => {
                    let message = e.message.clone();
                    if self.zone_by_id(&zone.id).await?.is_some() {
                        Ok(ChangeResult::Conflict(message))
                    } else {
                        Err(ZoneGone {
                            zone_id: zone.id.clone(),
                        }
                        .into())
                    }
                }
                _ => Err(err),
            },
        }
    }

    fn awaited_change(&self, change_id: &str) -> String {
        format!("Cloud DNS change `{change_id}` to be done")
    }

    async fn change_in_sync(&self, zone: &Zone, change_id: &str) -> Result<bool> {
        let path = self.zone_path(zone, &format!("/changes/{}", escape(change_id)));
        let change: Change = self
            .api
            .call(
                GoogleService::Dns,
                "dns.changes.get",
                Method::GET,
                &path,
                &[],
                None,
            )
            .await?;
        Ok(change.status.as_deref() == Some("done"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::memory::record_set;

    #[test]
    fn names_are_fully_qualified_and_sets_keep_their_values() {
        assert_eq!(fqdn("a.example.com"), "a.example.com.");
        assert_eq!(fqdn("a.example.com."), "a.example.com.");
        let set = record_set("a.example.com", "TXT", &["\"heritage=protokube\""]);
        assert_eq!(
            rrset(&set),
            json!({"name": "a.example.com.", "type": "TXT", "ttl": 60, "rrdatas": ["\"heritage=protokube\""]})
        );
    }
}
