//! Nowhere: a run that publishes no names (`--dns none`, a cluster without DNS, a worker where
//! only masters write), with the reason said once.

use anyhow::Result;
use async_trait::async_trait;

use super::target::{Desired, DnsTarget, Known, PublishOutcome};
use crate::cloud::InstanceInfo;
use crate::plan::records::DesiredRecord;
use crate::plan::volumes::EtcdVolume;
use crate::report::Report;
use crate::snapshot::Snapshot;

/// No names from this node.
pub struct Nowhere {
    pub why: String,
}

#[async_trait(?Send)]
impl DnsTarget for Nowhere {
    fn idle_reason(&self) -> Option<&str> {
        Some(&self.why)
    }

    fn master_records(&self, _: &[EtcdVolume], _: &[InstanceInfo]) -> Vec<DesiredRecord> {
        Vec::new()
    }

    async fn publish(
        &self,
        _: &mut Snapshot<'_>,
        _: Desired,
        _: &Known,
        _: &mut Report,
    ) -> Result<PublishOutcome> {
        Ok(PublishOutcome::nothing())
    }

    async fn release(&self, _: &mut Snapshot<'_>, _: &mut Report) -> Result<()> {
        Ok(())
    }
}
