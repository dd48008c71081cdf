//! `label-node`: kOps' mandatory control-plane labels on this node, through the Kubernetes API.

use anyhow::Result;

use crate::error::UsageError;
use crate::host::Host;
use crate::report::Report;
use crate::settings::Settings;
use crate::steps;

pub(crate) async fn run(settings: &Settings, host: &dyn Host, report: &mut Report) -> Result<()> {
    let node = settings.node_name.as_deref().ok_or_else(|| {
        UsageError("label-node needs --node-name NAME (this node's name in Kubernetes)".to_owned())
    })?;
    let _lock = steps::lock(settings, host)?;
    let api = steps::kubernetes::connect(settings, host).await?;
    steps::labels::run(settings, &api, node, report).await
}
