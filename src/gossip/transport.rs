//! The seam between the gossip protocols and the network: streams (TCP) and packets (UDP) at
//! socket addresses. Production uses the node's sockets ([`Sockets`]); the protocols' unit
//! tests use an in-memory network on tokio's virtual clock (`memory`), as chitchat's transport
//! seam does. Every connection the member opens goes through a [`Dialer`], which holds the one
//! rule no message may break: at most a few connections to one address in a minute.

#[cfg(test)]
pub(crate) mod memory;

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// A byte stream to a peer.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// A boxed stream.
pub(crate) type BoxStream = Box<dyn Stream>;

/// Where streams arrive.
#[async_trait]
pub(crate) trait Listener: Send + Sync {
    /// The next stream and the address it came from.
    async fn accept(&self) -> io::Result<(BoxStream, SocketAddr)>;
    /// The address it listens on (the port chosen when it was bound to port 0).
    fn local_addr(&self) -> SocketAddr;
}

/// Serves the streams `listener` accepts, each by `serve` on a task of its own holding one of
/// `slots` (`GOSSIP_DNS_CONN_LIMIT`); a stream beyond the limit is closed at once, said in a
/// debug line of `protocol`'s. Runs until dropped, and the tasks with it.
pub(crate) async fn serve_accepted<F, Fut>(
    listener: &dyn Listener,
    slots: &Arc<Semaphore>,
    protocol: &str,
    serve: F,
) where
    F: Fn(BoxStream, SocketAddr, OwnedSemaphorePermit) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut serving = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, from)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    tracing::debug!("{protocol}: refused `{from}`: GOSSIP_DNS_CONN_LIMIT reached");
                    continue;
                };
                serving.spawn(serve(stream, from, slot));
            }
            Some(_) = serving.join_next(), if !serving.is_empty() => {}
        }
    }
}

/// A datagram socket.
#[async_trait]
pub(crate) trait Packets: Send + Sync {
    /// The next datagram into `buffer`: its length and sender.
    async fn recv(&self, buffer: &mut [u8]) -> io::Result<(usize, SocketAddr)>;
    /// Sends one datagram without waiting (a full buffer drops it, as UDP may).
    fn send(&self, bytes: &[u8], to: SocketAddr);
}

/// The network the member lives on.
#[async_trait]
pub(crate) trait Transport: Send + Sync {
    /// Listens for streams at `addr` (port 0: a free one).
    async fn listen(&self, addr: SocketAddr) -> io::Result<Box<dyn Listener>>;
    /// Binds a datagram socket at `addr`.
    async fn bind_packets(&self, addr: SocketAddr) -> io::Result<Arc<dyn Packets>>;
    /// Opens a stream to `to`, from the address `from` when one is given (mesh dials from the
    /// address it listens on, as Go's mesh does).
    async fn connect(&self, from: Option<IpAddr>, to: SocketAddr) -> io::Result<BoxStream>;
}

/// The node's own sockets (tokio's TCP and UDP).
pub(crate) struct Sockets;

struct TcpListener(tokio::net::TcpListener);
struct UdpSocket(tokio::net::UdpSocket);

#[async_trait]
impl Listener for TcpListener {
    async fn accept(&self) -> io::Result<(BoxStream, SocketAddr)> {
        let (stream, from) = self.0.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok((Box::new(stream), from))
    }

    fn local_addr(&self) -> SocketAddr {
        self.0
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }
}

#[async_trait]
impl Packets for UdpSocket {
    async fn recv(&self, buffer: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.0.recv_from(buffer).await
    }

    fn send(&self, bytes: &[u8], to: SocketAddr) {
        let _ = self.0.try_send_to(bytes, to);
    }
}

#[async_trait]
impl Transport for Sockets {
    async fn listen(&self, addr: SocketAddr) -> io::Result<Box<dyn Listener>> {
        Ok(Box::new(TcpListener(
            tokio::net::TcpListener::bind(addr).await?,
        )))
    }

    async fn bind_packets(&self, addr: SocketAddr) -> io::Result<Arc<dyn Packets>> {
        Ok(Arc::new(UdpSocket(
            tokio::net::UdpSocket::bind(addr).await?,
        )))
    }

    async fn connect(&self, from: Option<IpAddr>, to: SocketAddr) -> io::Result<BoxStream> {
        let stream = match from.filter(|ip| !ip.is_unspecified() && ip.is_ipv4() == to.is_ipv4()) {
            Some(ip) => {
                let socket = if ip.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                socket.bind(SocketAddr::new(ip, 0))?;
                socket.connect(to).await?
            }
            None => tokio::net::TcpStream::connect(to).await?,
        };
        let _ = stream.set_nodelay(true);
        Ok(Box::new(stream))
    }
}

/// Connections opened to one address in any minute, whatever asks for them.
pub(crate) const CONNECTIONS_PER_MINUTE: usize = 8;
/// Addresses whose recent connections are remembered (older ones are forgotten first).
const REMEMBERED: usize = 4096;

/// Opens the member's connections, within [`CONNECTIONS_PER_MINUTE`] per address and a
/// deadline each.
pub(crate) struct Dialer {
    transport: Arc<dyn Transport>,
    from: Option<IpAddr>,
    opened: Mutex<BTreeMap<SocketAddr, VecDeque<Instant>>>,
    per_minute: usize,
}

/// Why no connection was opened.
#[derive(Debug)]
pub(crate) enum DialError {
    /// The address had its connections for this minute.
    Budget,
    /// The peer did not answer in time.
    Timeout,
    /// The network said no.
    Io(io::Error),
}

impl std::fmt::Display for DialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Budget => write!(
                f,
                "no connection: {CONNECTIONS_PER_MINUTE} were opened to it in the last minute"
            ),
            Self::Timeout => write!(f, "no answer in time"),
            Self::Io(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for DialError {}

impl Dialer {
    pub(crate) fn new(transport: Arc<dyn Transport>) -> Self {
        Self::with_budget(transport, CONNECTIONS_PER_MINUTE)
    }

    pub(crate) fn with_budget(transport: Arc<dyn Transport>, per_minute: usize) -> Self {
        Self {
            transport,
            from: None,
            opened: Mutex::new(BTreeMap::new()),
            per_minute,
        }
    }

    /// Dials from `ip` (the address the protocol listens on, when it is one).
    pub(crate) fn from(mut self, ip: IpAddr) -> Self {
        self.from = Some(ip);
        self
    }

    /// Whether a connection to `to` may be opened now; if so, it is counted.
    pub(crate) fn take(&self, to: SocketAddr) -> bool {
        let now = Instant::now();
        let minute_ago = now.checked_sub(Duration::from_mins(1));
        let mut opened = self
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let times = opened.entry(to).or_default();
        while times.front().is_some_and(|t| Some(*t) <= minute_ago) {
            times.pop_front();
        }
        if times.len() >= self.per_minute {
            return false;
        }
        times.push_back(now);
        if opened.len() > REMEMBERED {
            opened.retain(|_, times| times.back().is_some_and(|t| Some(*t) > minute_ago));
        }
        true
    }

    /// Opens a stream to `to` within `timeout`, if its budget allows.
    pub(crate) async fn connect(
        &self,
        to: SocketAddr,
        timeout: Duration,
    ) -> Result<BoxStream, DialError> {
        if !self.take(to) {
            return Err(DialError::Budget);
        }
        match tokio::time::timeout(timeout, self.transport.connect(self.from, to)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(err)) => Err(DialError::Io(err)),
            Err(_) => Err(DialError::Timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::memory::Network;
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_address_gets_a_few_connections_a_minute_whatever_asks() {
        let network = Network::new();
        let server = network.node([10, 0, 0, 1]);
        let listener = server
            .listen("10.0.0.1:4000".parse().unwrap())
            .await
            .unwrap();
        let dialer = Dialer::new(Arc::new(network.node([10, 0, 0, 2])));
        let to = listener.local_addr();
        for _ in 0..CONNECTIONS_PER_MINUTE {
            dialer.connect(to, Duration::from_secs(1)).await.unwrap();
        }
        let refused = dialer.connect(to, Duration::from_secs(1)).await;
        assert!(
            matches!(refused, Err(DialError::Budget)),
            "{:?}",
            refused.err()
        );
        assert_eq!(network.connections_to(to), CONNECTIONS_PER_MINUTE);
        // Another address has its own budget; a minute later this one has it again.
        assert!(dialer.take("10.0.0.3:4000".parse().unwrap()));
        tokio::time::advance(Duration::from_secs(61)).await;
        dialer.connect(to, Duration::from_secs(1)).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_address_times_out_and_a_closed_one_is_refused() {
        let network = Network::new();
        let dialer = Dialer::new(Arc::new(network.node([10, 0, 0, 2])));
        let closed = dialer
            .connect("10.0.0.9:4000".parse().unwrap(), Duration::from_secs(1))
            .await;
        assert!(
            matches!(closed, Err(DialError::Io(_))),
            "{:?}",
            closed.err()
        );
        let server = network.node([10, 0, 0, 1]);
        let listener = server
            .listen("10.0.0.1:4000".parse().unwrap())
            .await
            .unwrap();
        network.cut([10, 0, 0, 1]);
        let silent = dialer
            .connect(listener.local_addr(), Duration::from_secs(1))
            .await;
        assert!(
            matches!(silent, Err(DialError::Timeout)),
            "{:?}",
            silent.err()
        );
    }
}
