//! An in-memory network for the protocols' unit tests: each node an IP address, streams as
//! in-memory pipes, datagrams as queues, on tokio's clock (paused in the tests, so that seconds
//! of protocol time pass in milliseconds). A node can be cut off (its packets dropped, its
//! connections left unanswered); what crosses is counted.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::{BoxStream, Listener, Packets, Transport};

/// Bytes an in-memory stream buffers each way.
const PIPE: usize = 1 << 20;
/// Datagrams queued for a socket before more are dropped.
const QUEUE: usize = 1024;

type Arrival = (tokio::io::DuplexStream, SocketAddr);
type Datagram = (Vec<u8>, SocketAddr);

/// The network: its nodes' listeners and sockets, who is cut off, what crossed.
#[derive(Clone, Default)]
pub(crate) struct Network {
    inner: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    listeners: BTreeMap<SocketAddr, (u64, mpsc::Sender<Arrival>)>,
    sockets: BTreeMap<SocketAddr, (u64, mpsc::Sender<Datagram>)>,
    cut: Vec<IpAddr>,
    blocked: Vec<(IpAddr, IpAddr)>,
    next_id: u64,
    next_port: u16,
    connections: BTreeMap<SocketAddr, usize>,
    packets: BTreeMap<SocketAddr, usize>,
}

impl State {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn port(&mut self) -> u16 {
        self.next_port = self.next_port.max(40_000).wrapping_add(1).max(40_001);
        self.next_port
    }

    fn is_cut(&self, ip: IpAddr) -> bool {
        self.cut.contains(&ip)
    }

    /// Whether nothing passes between `from` and `to`.
    fn separates(&self, from: IpAddr, to: IpAddr) -> bool {
        self.is_cut(from)
            || self.is_cut(to)
            || self
                .blocked
                .iter()
                .any(|(a, b)| (*a, *b) == (from, to) || (*a, *b) == (to, from))
    }
}

impl Network {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A node of the network at `ip`.
    pub(crate) fn node(&self, ip: impl Into<IpAddr>) -> Node {
        Node {
            network: self.clone(),
            ip: ip.into(),
        }
    }

    /// Cuts `ip` off: its datagrams are dropped both ways and new connections to it are
    /// left unanswered.
    pub(crate) fn cut(&self, ip: impl Into<IpAddr>) {
        self.state().cut.push(ip.into());
    }

    /// Blocks everything between `a` and `b` (each still reaches the others).
    pub(crate) fn block(&self, a: impl Into<IpAddr>, b: impl Into<IpAddr>) {
        self.state().blocked.push((a.into(), b.into()));
    }

    /// Joins `ip` again.
    pub(crate) fn heal(&self, ip: impl Into<IpAddr>) {
        let ip = ip.into();
        self.state().cut.retain(|c| *c != ip);
    }

    /// Connections opened to `to` so far.
    pub(crate) fn connections_to(&self, to: SocketAddr) -> usize {
        self.state().connections.get(&to).copied().unwrap_or(0)
    }

    /// Connections opened to any address so far.
    pub(crate) fn connections(&self) -> usize {
        self.state().connections.values().sum()
    }

    /// Datagrams sent to `to` so far.
    pub(crate) fn packets_to(&self, to: SocketAddr) -> usize {
        self.state().packets.get(&to).copied().unwrap_or(0)
    }

    fn place(&self, ip: IpAddr, addr: SocketAddr) -> SocketAddr {
        let ip = if addr.ip().is_unspecified() {
            ip
        } else {
            addr.ip()
        };
        let port = if addr.port() == 0 {
            self.state().port()
        } else {
            addr.port()
        };
        SocketAddr::new(ip, port)
    }
}

/// One node's view of the network: its transport.
#[derive(Clone)]
pub(crate) struct Node {
    network: Network,
    ip: IpAddr,
}

struct MemoryListener {
    network: Network,
    addr: SocketAddr,
    id: u64,
    arrivals: tokio::sync::Mutex<mpsc::Receiver<Arrival>>,
}

struct MemoryPackets {
    network: Network,
    addr: SocketAddr,
    id: u64,
    arrivals: tokio::sync::Mutex<mpsc::Receiver<Datagram>>,
}

impl Drop for MemoryListener {
    fn drop(&mut self) {
        let mut state = self.network.state();
        if state
            .listeners
            .get(&self.addr)
            .is_some_and(|(id, _)| *id == self.id)
        {
            state.listeners.remove(&self.addr);
        }
    }
}

impl Drop for MemoryPackets {
    fn drop(&mut self) {
        let mut state = self.network.state();
        if state
            .sockets
            .get(&self.addr)
            .is_some_and(|(id, _)| *id == self.id)
        {
            state.sockets.remove(&self.addr);
        }
    }
}

#[async_trait]
impl Listener for MemoryListener {
    async fn accept(&self) -> io::Result<(BoxStream, SocketAddr)> {
        match self.arrivals.lock().await.recv().await {
            Some((stream, from)) => Ok((Box::new(stream), from)),
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

#[async_trait]
impl Packets for MemoryPackets {
    async fn recv(&self, buffer: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let Some((bytes, from)) = self.arrivals.lock().await.recv().await else {
            return std::future::pending().await;
        };
        let len = bytes.len().min(buffer.len());
        buffer[..len].copy_from_slice(&bytes[..len]);
        Ok((len, from))
    }

    fn send(&self, bytes: &[u8], to: SocketAddr) {
        let mut state = self.network.state();
        *state.packets.entry(to).or_default() += 1;
        if state.separates(self.addr.ip(), to.ip()) {
            return;
        }
        if let Some((_, sender)) = state.sockets.get(&to) {
            let _ = sender.try_send((bytes.to_vec(), self.addr));
        }
    }
}

fn in_use(addr: SocketAddr) -> io::Error {
    io::Error::new(io::ErrorKind::AddrInUse, format!("`{addr}` is in use"))
}

#[async_trait]
impl Transport for Node {
    async fn listen(&self, addr: SocketAddr) -> io::Result<Box<dyn Listener>> {
        let addr = self.network.place(self.ip, addr);
        let (sender, receiver) = mpsc::channel(QUEUE);
        let mut state = self.network.state();
        if state.listeners.contains_key(&addr) {
            return Err(in_use(addr));
        }
        let id = state.id();
        state.listeners.insert(addr, (id, sender));
        Ok(Box::new(MemoryListener {
            network: self.network.clone(),
            addr,
            id,
            arrivals: tokio::sync::Mutex::new(receiver),
        }))
    }

    async fn bind_packets(&self, addr: SocketAddr) -> io::Result<Arc<dyn Packets>> {
        let addr = self.network.place(self.ip, addr);
        let (sender, receiver) = mpsc::channel(QUEUE);
        let mut state = self.network.state();
        if state.sockets.contains_key(&addr) {
            return Err(in_use(addr));
        }
        let id = state.id();
        state.sockets.insert(addr, (id, sender));
        Ok(Arc::new(MemoryPackets {
            network: self.network.clone(),
            addr,
            id,
            arrivals: tokio::sync::Mutex::new(receiver),
        }))
    }

    async fn connect(&self, _from: Option<IpAddr>, to: SocketAddr) -> io::Result<BoxStream> {
        let arrival = {
            let mut state = self.network.state();
            *state.connections.entry(to).or_default() += 1;
            if state.separates(self.ip, to.ip()) {
                None
            } else {
                let from = SocketAddr::new(self.ip, state.port());
                let sender = state.listeners.get(&to).map(|(_, s)| s.clone());
                Some((sender, from))
            }
        };
        let Some((sender, from)) = arrival else {
            return std::future::pending().await;
        };
        let refused =
            || io::Error::new(io::ErrorKind::ConnectionRefused, format!("`{to}` refused"));
        let sender = sender.ok_or_else(refused)?;
        let (ours, theirs) = tokio::io::duplex(PIPE);
        sender.send((theirs, from)).await.map_err(|_| refused())?;
        Ok(Box::new(ours))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test(start_paused = true)]
    async fn streams_and_datagrams_cross_and_a_cut_node_hears_nothing() {
        let network = Network::new();
        let (a, b) = (network.node([10, 0, 0, 1]), network.node([10, 0, 0, 2]));
        let listener = b.listen("0.0.0.0:4000".parse().unwrap()).await.unwrap();
        assert_eq!(listener.local_addr(), "10.0.0.2:4000".parse().unwrap());
        let mut stream = a.connect(None, listener.local_addr()).await.unwrap();
        let (mut accepted, from) = listener.accept().await.unwrap();
        assert_eq!(from.ip(), IpAddr::from([10, 0, 0, 1]));
        stream.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        accepted.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");
        let (pa, pb) = (
            a.bind_packets("10.0.0.1:4000".parse().unwrap())
                .await
                .unwrap(),
            b.bind_packets("10.0.0.2:4000".parse().unwrap())
                .await
                .unwrap(),
        );
        pa.send(b"ping", "10.0.0.2:4000".parse().unwrap());
        let mut buffer = [0u8; 16];
        let (len, from) = pb.recv(&mut buffer).await.unwrap();
        assert_eq!(
            (&buffer[..len], from),
            (&b"ping"[..], "10.0.0.1:4000".parse().unwrap())
        );
        network.cut([10, 0, 0, 2]);
        pa.send(b"lost", "10.0.0.2:4000".parse().unwrap());
        let heard =
            tokio::time::timeout(std::time::Duration::from_secs(5), pb.recv(&mut buffer)).await;
        assert!(heard.is_err(), "a cut node hears nothing");
        assert_eq!(network.packets_to("10.0.0.2:4000".parse().unwrap()), 2);
        drop(listener);
        network.heal([10, 0, 0, 2]);
        assert!(
            a.connect(None, "10.0.0.2:4000".parse().unwrap())
                .await
                .is_err(),
            "nobody listens"
        );
    }
}
