//! The home for long-running work, beside the one-shot runs: the gossip member, started from a run's
//! snapshot (who this node is, its cluster, the cloud's seeds), then kept going — the hosts
//! block from the view, the seeds asked again while no peer answers — each step with its own
//! deadline, never `--timeout`'s, and the run lock taken only to write.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::cloud::InstanceApi;
use crate::gossip::member::{write_view, HostsUpdate, Member};
use crate::gossip::view::{View, ZONE_KEY, ZONE_VALUE};
use crate::host::Files;
use crate::host::Host;
use crate::paths::{GOSSIP_NAMES_FILE, HOSTS_FILE};
use crate::plan::files::{plan_file, plan_removal};
use crate::providers::Connected;
use crate::report::Action;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::wait::Deadline;

/// How often the seeds are asked for again while the member has no peer (kOps: at most once
/// a minute).
const RESEED_INTERVAL: Duration = Duration::from_mins(1);
/// How long a write of the hosts block waits for the run lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// A started member and what it needs to keep going.
pub(crate) struct Running {
    pub(crate) member: Member,
    node: String,
    cluster: String,
    settings: Arc<Settings>,
    /// The provider's connection, made again (with a fresh deadline) to ask for seeds later.
    connect: Connect,
}

/// How a provider connects the cloud (the registry's `connect`).
pub(crate) type Connect = fn(&Settings, &dyn Files) -> Result<Connected>;

/// What the composition root gives the long-running member: the provider's connection, and
/// what writes the metrics file.
pub(crate) struct Wiring<'a> {
    pub(crate) connect: Connect,
    pub(crate) metrics: &'a dyn Fn(),
}

/// Starts this node's member: its name (the instance's), the cloud's control-plane
/// instances as seeds, `dns/local/NS/local` published; the process's live member from now on.
/// What the runs left in the state file (the cluster kOps 1.36's unit learned from the tags,
/// the masters of the last full check) is taken instead of asking the cloud again.
pub(crate) async fn start(snapshot: &mut Snapshot<'_>, connect: Connect) -> Result<Running> {
    let settings = snapshot.settings();
    let identity = snapshot.identity().await?.clone();
    let known = known_from_runs(snapshot, &identity.instance_id);
    let cluster = match (&settings.cluster, known.cluster) {
        (Some(cluster), _) => cluster.name.clone(),
        (None, Some(name)) => name,
        (None, None) => snapshot.cluster().await?.name,
    };
    let seeds = if let Some(seeds) = known.seeds {
        seeds
    } else {
        let instances = snapshot.clients().await?.instances;
        cloud_seeds(&*instances, &cluster).await.unwrap_or_default()
    };
    let toward = seeds
        .first()
        .copied()
        .or_else(|| settings.gossip.seeds.first().map(|s| s.ip));
    let advertise = identity
        .internal_ip
        .or_else(|| toward.and_then(advertise_toward));
    let member = Member::start(&settings.gossip, &identity.instance_id, advertise).await?;
    member.set_seeds(
        &seeds,
        &settings.gossip.seeds,
        &settings.gossip.seeds_secondary,
    );
    member.store().publish(
        &[(ZONE_KEY.to_owned(), Some(ZONE_VALUE.to_vec()))],
        &identity.instance_id,
    );
    crate::gossip::set_live(Some((member.store().clone(), identity.instance_id.clone())));
    Ok(Running {
        member,
        node: identity.instance_id,
        cluster,
        settings,
        connect,
    })
}

/// What the one-shot runs recorded of this node: its cluster and the control-plane instances'
/// private addresses (none when the state file says nothing, or cannot be read).
struct KnownFromRuns {
    cluster: Option<String>,
    seeds: Option<Vec<IpAddr>>,
}

fn known_from_runs(snapshot: &mut Snapshot<'_>, instance_id: &str) -> KnownFromRuns {
    let Ok(state) = snapshot.state() else {
        return KnownFromRuns {
            cluster: None,
            seeds: None,
        };
    };
    let addresses = |masters: &[crate::cloud::InstanceInfo]| {
        masters
            .iter()
            .flat_map(|m| m.private_ips.iter().copied())
            .collect::<Vec<_>>()
    };
    KnownFromRuns {
        cluster: state
            .node
            .as_ref()
            .filter(|n| n.instance_id == instance_id)
            .map(|n| n.cluster.clone())
            .or_else(|| state.worker.as_ref().map(|w| w.cluster.clone())),
        seeds: state
            .verified
            .as_ref()
            .map(|v| addresses(&v.masters))
            .or_else(|| state.worker.as_ref().map(|w| addresses(&w.masters))),
    }
}

/// The control-plane instances' private addresses (kOps' seeds); none when the cloud cannot
/// say now (the member listens all the same, keeps the seeds it has, and asks again).
async fn cloud_seeds(instances: &dyn InstanceApi, cluster: &str) -> Option<Vec<IpAddr>> {
    match instances.running_masters(cluster).await {
        Ok(masters) => Some(
            masters
                .iter()
                .flat_map(|m| m.private_ips.iter().copied())
                .collect(),
        ),
        Err(err) => {
            tracing::warn!(
                "gossip: the control-plane instances could not be listed as seeds: {err:#}"
            );
            None
        }
    }
}

/// The local address the node reaches `seed` from (no packet is sent).
fn advertise_toward(seed: IpAddr) -> Option<IpAddr> {
    let any: IpAddr = if seed.is_ipv4() {
        IpAddr::from([0, 0, 0, 0])
    } else {
        IpAddr::from([0u16; 8])
    };
    let socket = std::net::UdpSocket::bind(SocketAddr::new(any, 0)).ok()?;
    socket.connect(SocketAddr::new(seed, 4000)).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

impl Running {
    fn hosts_path(&self) -> Result<PathBuf> {
        self.settings.root.resolve(HOSTS_FILE)
    }

    /// The view now.
    pub(crate) fn view(&self) -> View {
        self.member.store().view()
    }

    /// Writes the view into the hosts block (or plans it, with `--dry-run`), holding the run
    /// lock while it writes when `lock` says so.
    pub(crate) fn write_hosts(&self, files: &dyn Files, lock: bool) -> Result<HostsUpdate> {
        let path = self.hosts_path()?;
        let view = self.view();
        let _lock = if lock && !self.settings.dry_run {
            Some(files.lock(&self.settings.root, Deadline::after(LOCK_WAIT))?)
        } else {
            None
        };
        write_view(files, &path, &view, self.settings.dry_run)
    }

    /// Waits (up to `deadline`) for a peer, then for its state to settle: true when a peer
    /// answered.
    pub(crate) async fn joined(&self, deadline: Deadline) -> bool {
        let store = self.member.store();
        let mut changes = store.changes();
        while store.peer_count() == 0 {
            if deadline.remaining().is_zero() {
                return false;
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), changes.changed()).await;
        }
        // Mesh sends the whole state right after the handshake, memberlist in the join's
        // push/pull: wait for changes to stop for a moment.
        let settle = Deadline::after(Duration::from_secs(3)).earliest(deadline);
        while tokio::time::timeout(Duration::from_millis(300), changes.changed())
            .await
            .is_ok_and(|changed| changed.is_ok())
        {
            if settle.remaining().is_zero() {
                break;
            }
        }
        true
    }

    /// Keeps the member going until the future is dropped: the hosts block within a second of
    /// each change (and every 10 s, should another writer have taken a line out), the seeds
    /// asked again at most once a minute while no peer answers, the metrics file when given.
    pub(crate) async fn keep(&self, host: &dyn Host, lock: bool, metrics: &dyn Fn()) {
        let files: &dyn Files = host;
        let store = self.member.store().clone();
        let mut changes = store.changes();
        let mut warned = std::collections::BTreeSet::new();
        let mut reseed = tokio::time::interval(RESEED_INTERVAL);
        reseed.tick().await;
        loop {
            for warning in self.view().skipped {
                if warned.insert(warning.clone()) {
                    tracing::warn!("{warning}");
                }
            }
            match self.write_hosts(files, lock) {
                Ok(update) => log_changes(&update),
                Err(err) => tracing::warn!("gossip: {err:#}"),
            }
            if let Err(err) = self.record_names(files, Some(&self.view().names())) {
                tracing::warn!("gossip: {err:#}");
            }
            metrics();
            tokio::select! {
                _ = changes.changed() => {}
                () = tokio::time::sleep(Duration::from_secs(10)) => {}
                _ = reseed.tick() => {
                    if store.peer_count() == 0 {
                        if let Some(seeds) = self.ask_seeds(host).await {
                            let gossip = &self.settings.gossip;
                            self.member.set_seeds(&seeds, &gossip.seeds, &gossip.seeds_secondary);
                        }
                    }
                }
            }
        }
    }

    /// The seeds asked again, through a connection with a deadline of its own (the start's
    /// has long passed).
    async fn ask_seeds(&self, host: &dyn Host) -> Option<Vec<IpAddr>> {
        let mut settings = (*self.settings).clone();
        settings.deadline = Deadline::after(self.settings.deadline.timeout());
        let connected = (self.connect)(&settings, host);
        let Connected { cloud, .. } = match connected {
            Ok(connected) => connected,
            Err(err) => {
                tracing::warn!("gossip: connecting to ask for seeds: {err:#}");
                return None;
            }
        };
        let mut snapshot = Snapshot::new(&settings, &*cloud, host, VolumeScope::Region);
        let instances = snapshot.clients().await.ok()?.instances;
        cloud_seeds(&*instances, &self.cluster).await
    }

    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// Records the names the view holds for the runs of other processes (none: the record goes,
    /// as the member leaves); written only when they change, never in a dry run.
    fn record_names(
        &self,
        files: &dyn Files,
        names: Option<&std::collections::BTreeSet<String>>,
    ) -> Result<()> {
        if self.settings.dry_run {
            return Ok(());
        }
        let path = self.settings.root.resolve(GOSSIP_NAMES_FILE)?;
        let fact = files.fact(&path)?;
        let change = match names {
            Some(names) => plan_file(&path, &fact, &crate::gossip::names_text(names), 0o644),
            None => plan_removal(&path, &fact),
        };
        if change.action != Action::Unchanged {
            files.apply(&change)?;
        }
        Ok(())
    }

    /// The member leaves: its names are no longer held.
    pub(crate) fn leave(&self, files: &dyn Files) {
        if let Err(err) = self.record_names(files, None) {
            tracing::warn!("gossip: {err:#}");
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        crate::gossip::set_live(None);
    }
}

fn log_changes(update: &HostsUpdate) {
    for change in &update.changes {
        tracing::info!(
            "gossip: hosts `{}` {}",
            change.target.escape_debug(),
            change.detail
        );
    }
}
