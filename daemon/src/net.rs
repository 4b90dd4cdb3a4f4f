//! The daemon's one seam to the network: every QUIC endpoint is bound, and every address looked
//! up, here. On a real machine that is a UDP socket and the system's resolver; inside a turmoil
//! simulation (`cuberoute sim`) it is turmoil's simulated UDP and its host names, and the same
//! quinn, TLS and daemon code runs over it. The link endpoint's real socket has the node's
//! shaper in front of its sends (`crate::shaper`), which the chaos tooling sets.

use crate::io_counts::CountingRuntime;
use crate::shaper::{ShapedSocket, Shaper};
use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, UdpPoller};
use std::fmt;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Whether this code runs inside a turmoil simulation.
pub fn simulated() -> bool {
    turmoil::in_simulation()
}

/// A QUIC endpoint on `listen` (`0.0.0.0:0` for a client). With a `shaper` the datagrams it
/// sends go through that shaper's rules (`crate::shaper`: delay, jitter, reordering,
/// duplication in user space); on a real socket only: a simulated one is never shaped.
pub fn endpoint(
    config: quinn::EndpointConfig,
    server: Option<quinn::ServerConfig>,
    listen: SocketAddr,
    receive_buffer: Option<usize>,
    shaper: Option<Arc<Shaper>>,
) -> io::Result<quinn::Endpoint> {
    let runtime = Arc::new(CountingRuntime);
    if simulated() {
        let mut config = config;
        // quinn's own randomness (packet numbers skipped, connection ids) from the run's seed.
        config.rng_seed(Some(crate::env::random()));
        let socket = SimSocket::bind(listen)?;
        return quinn::Endpoint::new_with_abstract_socket(config, server, socket, runtime);
    }
    let socket = std::net::UdpSocket::bind(listen)?;
    if let Some(bytes) = receive_buffer {
        set_receive_buffer(&socket, bytes);
    }
    match shaper {
        None => quinn::Endpoint::new(config, server, socket, runtime),
        Some(shaper) => {
            // What `Endpoint::new` does, with the shaper in front of quinn's socket.
            let socket = ShapedSocket::new(runtime.wrap_udp_socket(socket)?, shaper);
            quinn::Endpoint::new_with_abstract_socket(config, server, socket, runtime)
        }
    }
}

/// Ask for a receive buffer of `bytes`. The kernel grants at most `net.core.rmem_max` (4 MiB
/// here, about 900 small datagrams on loopback), except to a process allowed to administer the
/// network (`CAP_NET_ADMIN`, root's), which may force it (`SO_RCVBUFFORCE`), as quic-go does: a
/// node host's control socket at 4 MiB dropped thousands of datagrams a second under 1,024
/// waiting clients, each a request or an answer QUIC sent again only after a probe timeout
/// (BENCHMARKS.md, "Several nodes per process"). A smaller buffer than asked for only makes
/// drops likelier: not an error.
fn set_receive_buffer(socket: &std::net::UdpSocket, bytes: usize) {
    let socket2 = socket2::SockRef::from(socket);
    let _ = socket2.set_recv_buffer_size(bytes);
    // Linux reports twice what it granted (its bookkeeping's share included).
    let granted = socket2.recv_buffer_size().map_or(0, |doubled| doubled / 2);
    if granted < bytes {
        use std::os::fd::AsRawFd;
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: the socket is open for the call, and the option is one c_int read from
        // `value`, whose size is passed.
        let _ = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                std::ptr::from_ref(&value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
}

/// The first address `addr` (`host:port`) names.
pub async fn lookup(addr: &str) -> io::Result<SocketAddr> {
    if simulated() {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not host:port"))?;
        return Ok(SocketAddr::new(turmoil::lookup(host), port));
    }
    tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the name resolves to no address"))
}

type Readable = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// A turmoil UDP socket as quinn's abstract socket: one datagram per call each way.
struct SimSocket {
    socket: Arc<turmoil::net::UdpSocket>,
    local: SocketAddr,
    /// The wait for the next datagram, kept between polls.
    readable: Mutex<Option<Readable>>,
}

impl fmt::Debug for SimSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimSocket")
            .field("local", &self.local)
            .finish()
    }
}

impl SimSocket {
    fn bind(listen: SocketAddr) -> io::Result<Arc<SimSocket>> {
        use futures_util::FutureExt;
        // turmoil's bind does not wait for anything: it is ready at its first poll.
        let socket = turmoil::net::UdpSocket::bind(listen)
            .now_or_never()
            .unwrap_or_else(|| Err(io::Error::other("the simulated bind did not complete")))?;
        Ok(Arc::new(SimSocket {
            local: socket.local_addr()?,
            socket: Arc::new(socket),
            readable: Mutex::new(None),
        }))
    }
}

#[derive(Debug)]
struct AlwaysWritable;

impl UdpPoller for AlwaysWritable {
    fn poll_writable(self: Pin<&mut Self>, _: &mut Context) -> Poll<io::Result<()>> {
        // turmoil's UDP has no backpressure: a datagram is queued or lost, never refused.
        Poll::Ready(Ok(()))
    }
}

impl AsyncUdpSocket for SimSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Box::pin(AlwaysWritable)
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        match self
            .socket
            .try_send_to(transmit.contents, transmit.destination)
        {
            Ok(_) => Ok(()),
            // A host that is down or partitioned away loses the datagram, as a network would.
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.socket.try_recv_from(&mut bufs[0]) {
                Ok((len, addr)) => {
                    meta[0] = RecvMeta {
                        addr,
                        len,
                        stride: len,
                        ..RecvMeta::default()
                    };
                    return Poll::Ready(Ok(1));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut slot = self.readable.lock().expect("socket lock");
                    let wait = slot.get_or_insert_with(|| {
                        let socket = self.socket.clone();
                        Box::pin(async move { socket.readable().await })
                    });
                    match wait.as_mut().poll(cx) {
                        Poll::Ready(Ok(())) => *slot = None,
                        Poll::Ready(Err(e)) => {
                            *slot = None;
                            return Poll::Ready(Err(e));
                        }
                        Poll::Pending => return Poll::Pending,
                    }
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this process may administer the network (`CAP_NET_ADMIN` in its effective set).
    fn may_administer_the_network() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
                u64::from_str_radix(caps.trim(), 16).ok()
            })
            .is_some_and(|caps| caps & (1 << 12) != 0)
    }

    /// A buffer beyond `net.core.rmem_max` is forced where the process may (a node host's
    /// control socket), else the kernel's most is taken.
    #[test]
    fn a_receive_buffer_beyond_the_kernels_most_is_forced_where_allowed() {
        let most: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let asked = most * 4;
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        set_receive_buffer(&socket, asked);
        let granted = socket2::SockRef::from(&socket).recv_buffer_size().unwrap() / 2;
        if may_administer_the_network() {
            assert!(granted >= asked, "{granted} of {asked}");
        } else {
            assert!(granted >= most, "{granted}, the kernel's most {most}");
        }
    }
}
