//! What the publish, verify and reset steps ask of the place names go ([`DnsTarget`]), the
//! facts of the run they hand it ([`RunFacts`], [`Releasing`]: a target reads nothing of the run
//! itself), and what a publish leaves for the verify step ([`PublishOutcome`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::InstanceInfo;
use crate::plan::dns::hosts_block::HostRecords;
use crate::plan::dns::records::DesiredRecord;
use crate::plan::state::{LeftAlone, MissingName};
use crate::plan::volumes::EtcdVolume;
use crate::report::Report;
use crate::state::KnownZones;

/// A place names go: a DNS service's zones, the hosts file, or nowhere.
#[async_trait(?Send)]
pub(crate) trait DnsTarget {
    /// Why this node publishes nothing here (said once by the step), or `None` when it does.
    fn idle_reason(&self) -> Option<&str> {
        None
    }

    /// Whether kOps' dns-controller publishes the cluster's names in the same place (a DNS
    /// service's zones): the old protokube beside etcd-manager left them to it.
    fn shared_with_dns_controller(&self) -> bool {
        false
    }

    /// Whether this target needs the run's cloud facts ([`RunFacts::region`], and to release:
    /// this node's addresses and the cluster's names): a DNS service's zones do, the hosts file
    /// does not, so a run that publishes there asks the cloud nothing more.
    fn needs_cloud_facts(&self) -> bool {
        false
    }

    /// The names this target keeps on the node itself (the hosts file's managed block), as they
    /// stand now: what a worker's last full check is compared with. `None` where the names live
    /// elsewhere (a worker then needs no masters at all).
    fn names_on_node(&self) -> Result<Option<HostRecords>> {
        Ok(None)
    }

    /// The records a control-plane node wants, from the etcd volumes' members and the masters.
    fn master_records(
        &self,
        volumes: &[EtcdVolume],
        masters: &[InstanceInfo],
    ) -> Vec<DesiredRecord>;

    /// Makes the names stand as `desired` wants them and says what is in place.
    async fn publish(
        &self,
        facts: &RunFacts,
        desired: Desired,
        known: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome>;

    /// Takes this node out of the names it published.
    async fn release(&self, releasing: &Releasing, report: &mut Report) -> Result<()>;

    /// Removes each of `names` that still holds kOps' placeholder address (kOps ≤ 1.22's
    /// `--remove-dns-names` beside etcd-manager); nothing where names are not in a DNS service.
    async fn remove_placeholders(
        &self,
        _facts: &RunFacts,
        _names: &[String],
        _report: &mut Report,
    ) -> Result<()> {
        Ok(())
    }
}

/// What the run knows that a target acts on, gathered by the step that asks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunFacts {
    /// The node's region, where a DNS service's client connects; only for a target that
    /// [needs the cloud's facts](DnsTarget::needs_cloud_facts).
    pub(crate) region: Option<String>,
    /// The owned names no longer the cluster's, as the state file remembers them waited out.
    pub(crate) missing: BTreeMap<String, MissingName>,
}

impl RunFacts {
    /// The region, which the step gathers for every target that needs the cloud's facts.
    pub(crate) fn region(&self) -> Result<&str> {
        self.region
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("the node's region was not gathered for the DNS target"))
    }
}

/// What taking this node out of its names looks at (gathered for a target that needs the
/// cloud's facts; empty for one that does not).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Releasing {
    pub(crate) facts: RunFacts,
    /// This node's addresses: the records holding them are this node's to take out.
    pub(crate) own_addresses: Vec<IpAddr>,
    /// The cluster's names, whose zones and subtrees are read.
    pub(crate) names: Vec<DesiredRecord>,
}

/// The names a node wants, as the publish step computed them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Desired {
    /// The records, their names checked as DNS names.
    pub(crate) records: Vec<DesiredRecord>,
    /// The etcd names of every member some volume of the cloud's full answer lists: only an
    /// etcd name outside this set may go. `None`: the answer named no etcd member at all (a
    /// worker, a glitch, etcd-manager owning etcd): no etcd name goes.
    pub(crate) listed_etcd_names: Option<BTreeSet<String>>,
}

/// What `sync` on a master knows from its last full check (docs/performance.md); nothing for every other
/// run, which looks in full.
#[derive(Clone, Debug, Default)]
pub(crate) struct Known {
    /// The zones the rules chose when last found (remembered in the state file).
    pub(crate) zones: Option<KnownZones>,
    /// The names the recorded check found published; `Some` only when this run trusts it.
    pub(crate) trusted_names: Option<Vec<DesiredRecord>>,
    /// The names that check left alone to their holders.
    pub(crate) left_alone: Vec<LeftAlone>,
}

/// What the publish step found, for the verify step (`sync` on a master).
#[derive(Clone, Debug)]
pub(crate) struct PublishOutcome {
    /// The names that stand in the zones as desired now, or are left alone to their holders;
    /// an empty list where nothing goes to a DNS service; `None` after a dry run, whose plan is
    /// not in place yet.
    pub(crate) names_in_place: Option<Vec<DesiredRecord>>,
    /// The desired names left alone because someone else holds them (warned about).
    pub(crate) left_alone: Vec<LeftAlone>,
    /// The zones the rules chose, when a DNS service was looked at.
    pub(crate) zones: Option<KnownZones>,
    /// The owned names no longer the cluster's, waited out, when the zones were read in full.
    pub(crate) missing: Option<BTreeMap<String, MissingName>>,
    /// The hosts file's managed block as this run wrote it (or, in a dry run, would).
    pub(crate) hosts_block: Option<HostRecords>,
}

impl PublishOutcome {
    /// Nothing published to a DNS service: nothing there to verify.
    pub(crate) fn nothing() -> Self {
        Self {
            names_in_place: Some(Vec::new()),
            left_alone: Vec::new(),
            zones: None,
            missing: None,
            hosts_block: None,
        }
    }
}
