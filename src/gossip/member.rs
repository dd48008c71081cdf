//! The member: its protocols started on their ports (primary first), the seeds each dials, this
//! node's own records, and the hosts block kept from the merged view.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::memberlist_member::MemberlistMember;
use super::mesh_connection::LocalPeer;
use super::mesh_member::{self, MeshMember};
use super::settings::{GossipSettings, Seed};
use super::store::Store;
use super::view::{hosts_with_view, Protocol, View};
use super::wire::mesh::peer_name;
use crate::host::{Files, HostsWrite};
use crate::plan::dns::hosts_block::{caught_mid_write, managed_records};
use crate::report::{Action, Change, ChangeKind};

/// A running member; its tasks end when it is dropped.
pub(crate) struct Member {
    store: Arc<Store>,
    /// Per protocol: its seeds (with its port), and its listen port.
    seeds: Vec<(watch::Sender<Vec<SocketAddr>>, u16, bool)>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Member {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Member {
    /// Binds every protocol's ports and starts them, as `node` (mesh's name; memberlist's is
    /// random, as kOps'), advertising `advertise` where a protocol listens on every address.
    pub(crate) async fn start(
        settings: &GossipSettings,
        node: &str,
        advertise: Option<IpAddr>,
    ) -> Result<Self> {
        let protocols: Vec<Protocol> = settings.endpoints().map(|e| e.protocol).collect();
        let store = Arc::new(Store::new(protocols));
        let mut member = Self {
            store: store.clone(),
            seeds: Vec::new(),
            tasks: Vec::new(),
        };
        for (index, endpoint) in settings.endpoints().enumerate() {
            let (sender, receiver) = watch::channel(Vec::new());
            let primary = index == 0;
            let port = match endpoint.protocol {
                Protocol::Mesh => {
                    let listener = mesh_member::bind(endpoint.listen).await?;
                    let port = listener
                        .local_addr()
                        .context("reading the mesh port")?
                        .port();
                    let mesh = MeshMember::new(
                        local_peer(node)?,
                        endpoint.secret.as_bytes().to_vec(),
                        store.clone(),
                        settings.conn_limit,
                    );
                    member
                        .tasks
                        .push(tokio::spawn(mesh.run(listener, receiver)));
                    port
                }
                Protocol::Memberlist => {
                    let ip = match endpoint.listen.ip() {
                        ip if ip.is_unspecified() => {
                            advertise.unwrap_or(IpAddr::from([127, 0, 0, 1]))
                        }
                        ip => ip,
                    };
                    let (list, listener) = MemberlistMember::bind(
                        endpoint.listen,
                        ip,
                        store.clone(),
                        settings.conn_limit,
                    )
                    .await?;
                    let port = listener
                        .local_addr()
                        .context("reading the memberlist port")?
                        .port();
                    member
                        .tasks
                        .push(tokio::spawn(list.run(listener, receiver)));
                    port
                }
            };
            tracing::info!(
                "gossip: {} listening on `{}`",
                endpoint.protocol.as_str(),
                SocketAddr::new(endpoint.listen.ip(), port)
            );
            member.seeds.push((sender, port, primary));
        }
        Ok(member)
    }

    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The listen ports, primary first.
    pub(crate) fn ports(&self) -> Vec<u16> {
        self.seeds.iter().map(|(_, port, _)| *port).collect()
    }

    /// Sets the seeds: an address without a port is dialled on each protocol's own port
    /// (kOps' rule); `explicit` ones are the primary's and the secondary's as given.
    pub(crate) fn set_seeds(&self, cloud: &[IpAddr], explicit: &[Seed], secondary: &[Seed]) {
        for (sender, port, primary) in &self.seeds {
            let given = if *primary { explicit } else { secondary };
            let mut addrs: BTreeSet<SocketAddr> =
                cloud.iter().map(|ip| SocketAddr::new(*ip, *port)).collect();
            addrs.extend(
                given
                    .iter()
                    .map(|seed| SocketAddr::new(seed.ip, seed.port.unwrap_or(*port))),
            );
            let addrs: Vec<SocketAddr> = addrs.into_iter().collect();
            sender.send_if_modified(|current| {
                let changed = *current != addrs;
                current.clone_from(&addrs);
                changed
            });
        }
    }
}

fn local_peer(node: &str) -> Result<LocalPeer> {
    let mut random = [0u8; 10];
    getrandom::fill(&mut random).map_err(|err| anyhow::anyhow!("no randomness: {err}"))?;
    let uid = u64::from_be_bytes([
        random[0], random[1], random[2], random[3], random[4], random[5], random[6], random[7],
    ])
    .max(1);
    Ok(LocalPeer {
        name: peer_name(node),
        nick_name: node.to_owned(),
        uid,
        short_id: u16::from_be_bytes([random[8], random[9]]) & 0x0fff,
    })
}

/// What writing the view into the hosts file did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostsUpdate {
    pub(crate) content: Vec<u8>,
    pub(crate) changes: Vec<Change>,
}

/// Writes `view` into the hosts block at `path` (in place, only when its lines change; again
/// when another writer raced it). With `dry_run`, only plans.
pub(crate) fn write_view(
    files: &dyn Files,
    path: &std::path::Path,
    view: &View,
    dry_run: bool,
) -> Result<HostsUpdate> {
    let mut seen_torn: Option<Vec<u8>> = None;
    for _ in 0..10 {
        let content = files.read_hosts(path)?;
        if caught_mid_write(&content) && seen_torn.as_deref() != Some(&content[..]) {
            seen_torn = Some(content);
            std::thread::sleep(Duration::from_millis(fastrand::u64(20..=60)));
            continue;
        }
        let new = if view.records.is_empty() && view.deleted.is_empty() {
            content.clone()
        } else {
            hosts_with_view(&content, view)
        };
        let changes = name_changes(&content, &new);
        if dry_run || files.write_hosts(path, &content, &new)? != HostsWrite::Raced {
            return Ok(HostsUpdate {
                content: new,
                changes,
            });
        }
        std::thread::sleep(Duration::from_millis(fastrand::u64(5..=50)));
    }
    anyhow::bail!(
        "the hosts file `{}` kept changing under another writer while the gossip view was \
         written (10 attempts)",
        path.display()
    )
}

/// One change per name of the block that the rewrite adds, changes or removes.
fn name_changes(old: &[u8], new: &[u8]) -> Vec<Change> {
    let (before, after) = (managed_records(old), managed_records(new));
    let show = |a: Option<&Vec<IpAddr>>| {
        a.map_or_else(
            || "none".to_owned(),
            |a| {
                a.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
        )
    };
    before
        .keys()
        .chain(after.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter_map(|name| {
            let (old, new) = (before.get(name), after.get(name));
            let action = match (old, new) {
                (None, Some(_)) => Action::Create,
                (Some(_), None) => Action::Delete,
                (Some(a), Some(b)) if a != b => Action::Update,
                _ => return None,
            };
            Some(Change {
                kind: ChangeKind::Hosts,
                target: name.clone(),
                action,
                detail: format!("{} -> {}", show(old), show(new)),
            })
        })
        .collect()
}
