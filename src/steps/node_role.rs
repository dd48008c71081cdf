//! A `sync` not given the cluster — kOps 1.36's unit (`--cloud=aws --containerized=false
//! --gossip=true --v=4 --gossip-*`) names neither the cluster nor the node's role — learns it
//! from this instance's tags (`KubernetesCluster`, and kOps' `k8s.io/role/master` /
//! `k8s.io/role/control-plane` on control-plane instances). They are asked once (one
//! `DescribeInstances`) and remembered in the state file, so a timer or the old daemon's minute
//! loop does not ask again.

use anyhow::Result;

use crate::cloud::tags;
use crate::plan::state::LearnedNode;
use crate::snapshot::Snapshot;

/// This instance's cluster and role: remembered, else read from its tags (and remembered,
/// except by a dry run). `snapshot` is the run's, before it knows them.
pub(crate) async fn learn(snapshot: &mut Snapshot<'_>) -> Result<LearnedNode> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let instance_id = snapshot.identity().await?.instance_id.clone();
    let mut state = snapshot.state()?.clone();
    if let Some(known) = state.node.as_ref().filter(|n| n.instance_id == instance_id) {
        tracing::debug!(
            "instance `{instance_id}`: cluster `{}`, control plane {} (remembered)",
            known.cluster,
            known.control_plane
        );
        return Ok(known.clone());
    }
    let found = snapshot
        .clients()
        .await?
        .instances
        .instance_tags(&instance_id)
        .await?;
    let cluster = tags::cluster_of(&instance_id, &found, snapshot.words())?;
    let node = LearnedNode {
        instance_id,
        cluster,
        control_plane: found.contains_key(tags::MASTER_ROLE)
            || found.contains_key(tags::CONTROL_PLANE_ROLE),
    };
    tracing::info!(
        "instance `{}` of cluster `{}` is {} (from its tags; remembered)",
        node.instance_id,
        node.cluster,
        if node.control_plane {
            "a control-plane node"
        } else {
            "not a control-plane node"
        }
    );
    if !settings.dry_run {
        state.node = Some(node.clone());
        super::save_state(snapshot, state)?;
    }
    Ok(node)
}
