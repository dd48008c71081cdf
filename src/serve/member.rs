//! The gossip member's home: it starts the member from a run's snapshot (who this node is, its
//! cluster, the cloud's seeds), on a thread and runtime of its own — so that nothing the
//! process waits on (the run lock, a hosts write, a run's child tools) can stall its
//! heartbeats, acks or probes — then keeps it: the hosts block from the view, the seeds asked
//! again on kOps' rhythm, the names file for runs in other processes, the metrics; and stops it
//! (memberlist leaves). Each step has its own deadline, never `--timeout`'s.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use tokio::time::Instant;

use crate::cloud::InstanceApi;
use crate::dns::hosts_file::{names_text, write_view, HostsUpdate};
use crate::error::{caused_by, CredentialRejected, UsageError};
use crate::gossip::member::Member;
use crate::gossip::transport::Transport;
use crate::gossip::Handle;
use crate::host::{Files, Host};
use crate::paths::{GOSSIP_NAMES_FILE, HOSTS_FILE};
use crate::plan::files::{plan_file, plan_removal};
use crate::providers::Connected;
use crate::report::Action;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::wait::Deadline;

/// kOps' seeding rhythm: the cloud asked again every hour…
const RESEED: Duration = Duration::from_hours(1);
/// …and a minute after an error, or while no peer answers.
const RESEED_SOON: Duration = Duration::from_mins(1);
/// How long a write of the hosts block waits for the run lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// The hosts block is checked again this often, should another writer have taken a line out.
const RECHECK: Duration = Duration::from_secs(10);
/// How long a stop waits for the member to leave and its thread to end.
const STOP_WAIT: Duration = Duration::from_secs(15);

/// How a provider connects the cloud (the registry's `connect`).
pub(crate) type Connect = fn(&Settings, &dyn Files) -> Result<Connected>;

/// A started member and what keeps it going.
pub(crate) struct Home {
    member: Member,
    thread: Option<std::thread::JoinHandle<()>>,
    cluster: String,
    settings: Arc<Settings>,
    connect: Connect,
    /// When the cloud is asked for seeds next.
    reseed_at: std::sync::Mutex<Instant>,
}

impl Home {
    /// Starts this node's member: its name (the instance's), the cloud's control-plane
    /// instances as seeds. What the runs left in the state file (the cluster kOps 1.36's unit
    /// learned from the tags, the masters of the last full check) is taken instead of asking
    /// the cloud again.
    pub(crate) async fn start(
        snapshot: &mut Snapshot<'_>,
        connect: Connect,
        transport: Arc<dyn Transport>,
    ) -> Result<Self> {
        let settings = snapshot.settings();
        let identity = snapshot.identity().await?.clone();
        let known = known_from_runs(snapshot, &identity.instance_id);
        let cluster = match (&settings.cluster, known.cluster) {
            (Some(cluster), _) => cluster.name.clone(),
            (None, Some(name)) => name,
            (None, None) => snapshot.cluster().await?.name,
        };
        let (seeds, asked) = if let Some(seeds) = known.seeds {
            (seeds, true)
        } else {
            let instances = snapshot.clients().await?.instances;
            match cloud_seeds(&*instances, &cluster).await {
                Ok(Some(seeds)) => (seeds, true),
                Ok(None) => (Vec::new(), false),
                Err(err) => return Err(err),
            }
        };
        let toward = seeds
            .first()
            .copied()
            .or_else(|| settings.gossip.seeds.first().map(|s| s.ip));
        let advertise = identity
            .internal_ip
            .or_else(|| toward.and_then(advertise_toward));
        let (member, thread) =
            spawn(&settings, &identity.instance_id, advertise, transport).await?;
        member.set_seeds(
            &seeds,
            &settings.gossip.seeds,
            &settings.gossip.seeds_secondary,
        );
        let first_ask = if asked && !seeds.is_empty() {
            RESEED
        } else {
            RESEED_SOON
        };
        Ok(Self {
            member,
            thread: Some(thread),
            cluster,
            settings,
            connect,
            reseed_at: std::sync::Mutex::new(Instant::now() + first_ask),
        })
    }

    pub(crate) fn handle(&self) -> &Handle {
        self.member.handle()
    }

    /// The listen ports, primary first.
    pub(crate) fn ports(&self) -> Vec<u16> {
        self.member.ports()
    }

    fn hosts_path(&self) -> Result<PathBuf> {
        self.settings.root.resolve(HOSTS_FILE)
    }

    /// Writes the view into the hosts block (or plans it, with `--dry-run`), holding the run
    /// lock while it writes when `lock` says so (not beside the old daemon's runs, which hold
    /// it themselves in this process).
    pub(crate) async fn write_block(&self, files: &dyn Files, lock: bool) -> Result<HostsUpdate> {
        let path = self.hosts_path()?;
        let view = self.handle().view();
        let _lock = if lock && !self.settings.dry_run {
            Some(files.lock(&self.settings.root, Deadline::after(LOCK_WAIT))?)
        } else {
            None
        };
        write_view(
            files,
            &path,
            Deadline::after(LOCK_WAIT),
            &view,
            self.settings.dry_run,
        )
        .await
    }

    /// Waits (up to `deadline`) for a peer of the primary protocol, then for the state to
    /// settle: true when a peer answered.
    pub(crate) async fn joined(&self, deadline: Deadline) -> bool {
        let handle = self.handle();
        let mut changes = handle.changes();
        while handle.primary_peers() == 0 {
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
    /// each change (and every 10 s), the seeds asked again on kOps' rhythm, the names file,
    /// and `metrics` after each round.
    pub(crate) async fn keep(&self, host: &dyn Host, lock: bool, metrics: &dyn Fn(&Handle)) {
        let files: &dyn Files = host;
        let handle = self.handle().clone();
        let mut changes = handle.changes();
        let mut warned = BTreeSet::new();
        loop {
            let view = handle.view();
            for warning in &view.skipped {
                if warned.len() < 1024 && warned.insert(warning.clone()) {
                    tracing::warn!("{warning}");
                }
            }
            match self.write_block(files, lock).await {
                Ok(update) => log_changes(&update),
                Err(err) => tracing::warn!("gossip: {err:#}"),
            }
            if let Err(err) = self.record_names(files, Some(&view.names())) {
                tracing::warn!("gossip: {err:#}");
            }
            metrics(&handle);
            let reseed_at = *self
                .reseed_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            tokio::select! {
                _ = changes.changed() => {}
                () = tokio::time::sleep(RECHECK) => {}
                () = tokio::time::sleep_until(reseed_at) => self.reseed(host).await,
            }
        }
    }

    /// Asks the cloud for the seeds again (kOps' rhythm: an hour after an answer, a minute
    /// after an error or while no peer answers); the seeds it has are kept when it cannot say.
    async fn reseed(&self, host: &dyn Host) {
        let asked = self.ask_seeds(host).await;
        let next = match &asked {
            Some(seeds) if !seeds.is_empty() && self.handle().primary_peers() > 0 => RESEED,
            _ => RESEED_SOON,
        };
        if let Some(seeds) = asked {
            let gossip = &self.settings.gossip;
            self.member
                .set_seeds(&seeds, &gossip.seeds, &gossip.seeds_secondary);
        }
        *self
            .reseed_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now() + next;
    }

    /// The seeds asked again, through a connection with a deadline of its own (the start's
    /// has long passed).
    async fn ask_seeds(&self, host: &dyn Host) -> Option<Vec<IpAddr>> {
        let mut settings = (*self.settings).clone();
        settings.deadline = Deadline::after(self.settings.deadline.timeout());
        let Connected { cloud, .. } = match (self.connect)(&settings, host) {
            Ok(connected) => connected,
            Err(err) => {
                tracing::warn!("gossip: connecting to ask for seeds: {err:#}");
                return None;
            }
        };
        let mut snapshot = Snapshot::new(&settings, &*cloud, host, VolumeScope::Region);
        let instances = snapshot.clients().await.ok()?.instances;
        cloud_seeds(&*instances, &self.cluster).await.ok().flatten()
    }

    /// Records the names the view holds for the runs of other processes (none: the record goes,
    /// as the member leaves); written only when they change, never in a dry run.
    fn record_names(&self, files: &dyn Files, names: Option<&BTreeSet<String>>) -> Result<()> {
        if self.settings.dry_run {
            return Ok(());
        }
        let path = self.settings.root.resolve(GOSSIP_NAMES_FILE)?;
        let fact = files.fact(&path)?;
        let change = match names {
            Some(names) => plan_file(&path, &fact, &names_text(names), 0o644),
            None => plan_removal(&path, &fact),
        };
        if change.action != Action::Unchanged {
            files.apply(&change)?;
        }
        Ok(())
    }

    /// Stops the member: memberlist leaves (a bounded wait), the thread ends, the names file
    /// goes.
    pub(crate) async fn stop(mut self, files: &dyn Files) {
        self.member.stop();
        if let Some(thread) = self.thread.take() {
            let joined = tokio::time::timeout(
                STOP_WAIT,
                tokio::task::spawn_blocking(move || thread.join()),
            )
            .await;
            if joined.is_err() {
                tracing::warn!("gossip: the member did not stop within {STOP_WAIT:?}");
            }
        }
        if let Err(err) = self.record_names(files, None) {
            tracing::warn!("gossip: {err:#}");
        }
    }
}

/// Starts the member on a thread and runtime of its own (its ports are bound there, so that
/// they are driven there); returns it once its ports are bound.
async fn spawn(
    settings: &Settings,
    node: &str,
    advertise: Option<IpAddr>,
    transport: Arc<dyn Transport>,
) -> Result<(Member, std::thread::JoinHandle<()>)> {
    let (sender, started) = tokio::sync::oneshot::channel();
    let gossip = settings.gossip.clone();
    let node = node.to_owned();
    let thread = std::thread::Builder::new()
        .name("gossip".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = sender.send(Err(
                        anyhow::Error::new(err).context("starting the gossip runtime")
                    ));
                    return;
                }
            };
            runtime.block_on(async move {
                match Member::start(&gossip, &node, advertise, transport).await {
                    Ok((member, running)) => {
                        if sender.send(Ok(member)).is_ok() {
                            running.await;
                        }
                    }
                    Err(err) => {
                        let _ = sender.send(Err(err));
                    }
                }
            });
        })
        .context("starting the gossip thread")?;
    let member = started
        .await
        .context("the gossip thread ended before the member started")??;
    Ok((member, thread))
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

/// The control-plane instances' private addresses by kOps' seed rules (the provider's, which say
/// which states count); none when the cloud cannot say now (the member listens all the same,
/// keeps the seeds it has, and asks again); an error when the node's own settings stand in the
/// way (a missing or rejected credential), which asking again will not mend.
async fn cloud_seeds(instances: &dyn InstanceApi, cluster: &str) -> Result<Option<Vec<IpAddr>>> {
    match instances.seed_masters(cluster).await {
        Ok(masters) => {
            let seeds: Vec<IpAddr> = masters
                .iter()
                .flat_map(|m| m.private_ips.iter().copied())
                .collect();
            tracing::info!(
                "gossip: the cloud's seeds for cluster `{cluster}`: {}",
                seeds
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(Some(seeds))
        }
        Err(err) if caused_by::<UsageError>(&err) || caused_by::<CredentialRejected>(&err) => {
            Err(err)
        }
        Err(err) => {
            tracing::warn!(
                "gossip: the control-plane instances could not be listed as seeds: {err:#}"
            );
            Ok(None)
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

fn log_changes(update: &HostsUpdate) {
    for change in &update.changes {
        tracing::info!(
            "gossip: hosts `{}` {}",
            change.target.escape_debug(),
            change.detail
        );
    }
}
