//! The seam to a DNS service's zones (hosted zones, managed zones, …): the
//! record sets protokube reads and the changes it sends, in provider-neutral types.

use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use crate::plan::dns::zones::{RecordChange, RecordSet, Zone};

/// The answer to a batch of changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeResult {
    /// Accepted; poll its id to see it in effect.
    Submitted { change_id: String },
    /// Refused because a record set changed since it was read (another writer was first):
    /// read again and plan again.
    Conflict(String),
}

/// A DNS service's zones, as the zone walk uses them.
#[async_trait]
pub trait ZoneApi: Send + Sync {
    /// The service's name, for messages.
    fn service(&self) -> &'static str;

    /// The zone with this id, `None` when there is none.
    async fn zone_by_id(&self, id: &str) -> Result<Option<Zone>>;

    /// Every zone the credentials may see.
    async fn all_zones(&self) -> Result<Vec<Zone>>;

    /// The record sets in `zone` that decide what happens to `names` (the cluster `cluster`'s
    /// names there): at least every set at those names, at the names external-dns keeps their
    /// ownership at (`a-`, `aaaa-`, `cname-` before the name, see
    /// `plan::dns::zone_plan::EXTERNAL_DNS_PREFIXES`) and any NS set at or above them below the apex. A
    /// zone that does not exist (any more) is the error `ZoneGone`.
    async fn read(&self, zone: &Zone, names: &[&str], cluster: &str) -> Result<Vec<RecordSet>>;

    /// `changes` split into the requests the service accepts, in order, the changes of one
    /// name in the same request.
    fn batches(&self, changes: &[RecordChange]) -> Vec<Vec<RecordChange>> {
        vec![changes.to_vec()]
    }

    /// Sends one batch of changes to `zone`, all or nothing.
    async fn change_records(&self, zone: &Zone, changes: &[RecordChange]) -> Result<ChangeResult>;

    /// What waiting on change `change_id` waits for, in the service's words (for messages).
    fn awaited_change(&self, change_id: &str) -> String {
        format!("{} change `{change_id}` to be in effect", self.service())
    }

    /// Whether the change is in effect on the service's name servers.
    async fn change_in_sync(&self, zone: &Zone, change_id: &str) -> Result<bool>;
}

/// Where a run's zone clients come from, once the node's region is known.
#[async_trait]
pub trait ZoneService: Send + Sync {
    /// The zones' client for a node in `region` (credentials resolved once, shared with the
    /// cloud's clients where the provider can).
    async fn connect(&self, region: &str) -> Result<Arc<dyn ZoneApi>>;
}

/// A zone protokube remembered does not exist any more: the zones are looked up again.
#[derive(Debug)]
pub(crate) struct ZoneGone {
    pub(crate) zone_id: String,
}

impl std::fmt::Display for ZoneGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "zone `{}` does not exist", self.zone_id)
    }
}

impl std::error::Error for ZoneGone {}
