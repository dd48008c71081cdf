//! The member: its protocols bound on their ports through the transport (primary first) and run
//! together, the seeds each dials, and the [`Handle`] that whoever uses the member holds.

use std::collections::BTreeSet;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Result;
use tokio::sync::watch;

use super::memberlist::Memberlist;
use super::mesh::connection::LocalPeer;
use super::mesh::Mesh;
use super::settings::{GossipSettings, Seed};
use super::store::Store;
use super::transport::Transport;
use super::view::Protocol;
use super::wire::mesh::peer_name;
use super::Handle;

/// What drives a started member until it is stopped (and has left).
pub(crate) type Running = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One protocol's place: its seeds and its port.
struct Endpoint {
    seeds: watch::Sender<Vec<SocketAddr>>,
    port: u16,
    primary: bool,
}

/// A started member: its handle, its seeds, the switch that stops it.
pub(crate) struct Member {
    handle: Handle,
    endpoints: Vec<Endpoint>,
    stop: watch::Sender<bool>,
}

impl Member {
    /// Binds every protocol's ports through `transport`, as `node` (mesh's name; memberlist's is
    /// random, as kOps'), advertising `advertise` where a protocol listens on every address.
    /// Returns the member and what runs it (on the runtime the ports were bound on).
    pub(crate) async fn start(
        settings: &GossipSettings,
        node: &str,
        advertise: Option<IpAddr>,
        transport: Arc<dyn Transport>,
    ) -> Result<(Self, Running)> {
        let protocols: Vec<Protocol> = settings.endpoints().map(|e| e.protocol).collect();
        let store = Arc::new(Store::new(protocols));
        let (stop, stopped) = watch::channel(false);
        let mut endpoints = Vec::new();
        let mut runs: Vec<Running> = Vec::new();
        for (index, endpoint) in settings.endpoints().enumerate() {
            let (seeds, receiver) = watch::channel(Vec::new());
            let (port, run): (u16, Running) = match endpoint.protocol {
                Protocol::Mesh => {
                    let mesh = Mesh::bind(
                        transport.clone(),
                        endpoint.listen,
                        local_peer(node)?,
                        endpoint.secret.as_bytes().to_vec(),
                        store.clone(),
                        settings.conn_limit,
                    )
                    .await?;
                    (mesh.port(), Box::pin(mesh.run(receiver, stopped.clone())))
                }
                Protocol::Memberlist => {
                    let ip = match endpoint.listen.ip() {
                        ip if ip.is_unspecified() => {
                            advertise.unwrap_or(IpAddr::from([127, 0, 0, 1]))
                        }
                        ip => ip,
                    };
                    let list = Memberlist::bind(
                        transport.clone(),
                        endpoint.listen,
                        ip,
                        store.clone(),
                        settings.conn_limit,
                    )
                    .await?;
                    (list.port(), Box::pin(list.run(receiver, stopped.clone())))
                }
            };
            tracing::info!(
                "gossip: {} listening on `{}`",
                endpoint.protocol.as_str(),
                SocketAddr::new(endpoint.listen.ip(), port)
            );
            endpoints.push(Endpoint {
                seeds,
                port,
                primary: index == 0,
            });
            runs.push(run);
        }
        let running: Running = Box::pin(async move {
            futures_util::future::join_all(runs).await;
        });
        let member = Self {
            handle: Handle::new(store, node),
            endpoints,
            stop,
        };
        member.handle.publish_zone();
        Ok((member, running))
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The listen ports, primary first.
    pub(crate) fn ports(&self) -> Vec<u16> {
        self.endpoints.iter().map(|e| e.port).collect()
    }

    /// Sets the seeds: an address without a port is dialled on each protocol's own port
    /// (kOps' rule); `explicit` ones are the primary's and the secondary's as given.
    pub(crate) fn set_seeds(&self, cloud: &[IpAddr], explicit: &[Seed], secondary: &[Seed]) {
        for endpoint in &self.endpoints {
            let given = if endpoint.primary {
                explicit
            } else {
                secondary
            };
            let port = endpoint.port;
            let mut addrs: BTreeSet<SocketAddr> =
                cloud.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
            addrs.extend(
                given
                    .iter()
                    .map(|seed| SocketAddr::new(seed.ip, seed.port.unwrap_or(port))),
            );
            let addrs: Vec<SocketAddr> = addrs.into_iter().collect();
            endpoint.seeds.send_if_modified(|current| {
                let changed = *current != addrs;
                current.clone_from(&addrs);
                changed
            });
        }
    }

    /// Stops the protocols (memberlist leaves first); what runs them then ends.
    pub(crate) fn stop(&self) {
        let _ = self.stop.send(true);
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
