//! Nowhere: a run that publishes no names (`--dns none`, a cluster without DNS, a worker where
//! only masters write), with the reason said once.

use anyhow::Result;
use async_trait::async_trait;

use super::target::{Desired, DnsTarget, Known, PublishOutcome, Releasing, RunFacts};
use crate::cloud::InstanceInfo;
use crate::plan::dns::records::DesiredRecord;
use crate::plan::volumes::EtcdVolume;
use crate::report::Report;

/// No names from this node.
pub(crate) struct Nowhere {
    pub(crate) why: String,
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
        _: &RunFacts,
        _: Desired,
        _: &Known,
        _: &mut Report,
    ) -> Result<PublishOutcome> {
        Ok(PublishOutcome::nothing())
    }

    async fn release(&self, _: &Releasing, _: &mut Report) -> Result<()> {
        Ok(())
    }
}
