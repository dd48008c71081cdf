//! `apply-channels`: the cluster's addon channels applied with kOps' channels tool.

use anyhow::Result;

use crate::error::UsageError;
use crate::host::Host;
use crate::report::Report;
use crate::settings::Settings;
use crate::steps;

pub(crate) async fn run(settings: &Settings, host: &dyn Host, report: &mut Report) -> Result<()> {
    if settings.channels.is_empty() {
        return Err(UsageError(
            "apply-channels needs --channels URL[,URL…] (nodeup passes the cluster's addon \
             channels, e.g. s3://<state store>/<cluster>/addons/bootstrap-channel.yaml)"
                .to_owned(),
        )
        .into());
    }
    let _lock = steps::lock(settings, host)?;
    // kOps' protokube applied channels only once the API answered (kOps 1.20 and later).
    let api = steps::kubernetes::connect(settings, host).await?;
    steps::kubernetes::wait_for_api(settings, &api).await?;
    steps::channels::run(settings, host, report).await
}
