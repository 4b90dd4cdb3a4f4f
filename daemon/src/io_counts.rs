//! What wakes a daemon, counted where quinn meets the system: the datagrams its endpoints send
//! and receive (and the system calls that carry them), and the timers that expire (QUIC's,
//! through [`CountingRuntime`], and the links' own, through [`link_timer_fired`]).
//!
//! A process runs one daemon, so the counts are the process's ([`PROCESS`]); inside a turmoil
//! simulation every simulated node shares them. `cuberoute bench` reads them from each node's
//! status and divides them by the packet-hops of a window (docs/daemon.md, "Wake-ups").

use cuberoute_protocol::wire::control::IoCounters;
use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncTimer, AsyncUdpSocket, Runtime, TokioRuntime, UdpPoller};
use std::fmt;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// The counts of one process.
#[derive(Default)]
pub struct IoCounts {
    datagrams_sent: AtomicU64,
    send_calls: AtomicU64,
    datagrams_received: AtomicU64,
    receive_calls: AtomicU64,
    quic_timers_fired: AtomicU64,
    link_timers_fired: AtomicU64,
    /// PINGs sent on control connections that have closed. No connection is held here: in a
    /// simulation a crashed host's connections must go with it.
    control_pings: AtomicU64,
}

/// This process's counts.
pub static PROCESS: IoCounts = IoCounts {
    datagrams_sent: AtomicU64::new(0),
    send_calls: AtomicU64::new(0),
    datagrams_received: AtomicU64::new(0),
    receive_calls: AtomicU64::new(0),
    quic_timers_fired: AtomicU64::new(0),
    link_timers_fired: AtomicU64::new(0),
    control_pings: AtomicU64::new(0),
};

/// Count one expiry of a link's own timer.
pub fn link_timer_fired() {
    PROCESS.link_timers_fired.fetch_add(1, Relaxed);
}

impl IoCounts {
    /// Count the PINGs of a control connection that has closed. (The daemon sends no
    /// keep-alive of its own on them: these are loss and path MTU probes.)
    pub fn control_closed(&self, connection: &quinn::Connection) {
        self.control_pings
            .fetch_add(connection.stats().frame_tx.ping, Relaxed);
    }

    /// The counts now. `links` are the link connections open now: their PING and ACK frames
    /// are added to the PINGs of the closed control connections.
    pub fn snapshot(&self, links: &[quinn::Connection]) -> IoCounters {
        let mut pings_sent = 0;
        let mut link_ack_frames_sent = 0;
        for link in links {
            let frames = link.stats().frame_tx;
            pings_sent += frames.ping;
            link_ack_frames_sent += frames.acks;
        }
        pings_sent += self.control_pings.load(Relaxed);
        IoCounters {
            datagrams_sent: self.datagrams_sent.load(Relaxed),
            send_calls: self.send_calls.load(Relaxed),
            datagrams_received: self.datagrams_received.load(Relaxed),
            receive_calls: self.receive_calls.load(Relaxed),
            quic_timers_fired: self.quic_timers_fired.load(Relaxed),
            link_timers_fired: self.link_timers_fired.load(Relaxed),
            pings_sent,
            link_ack_frames_sent,
        }
    }
}

/// quinn's tokio runtime, with its timers and sockets counted in [`PROCESS`].
#[derive(Debug)]
pub struct CountingRuntime;

impl Runtime for CountingRuntime {
    fn new_timer(&self, at: Instant) -> Pin<Box<dyn AsyncTimer>> {
        Box::pin(CountingTimer::new(TokioRuntime.new_timer(at)))
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        TokioRuntime.spawn(future)
    }

    fn wrap_udp_socket(&self, socket: std::net::UdpSocket) -> io::Result<Arc<dyn AsyncUdpSocket>> {
        Ok(Arc::new(CountingSocket(
            TokioRuntime.wrap_udp_socket(socket)?,
        )))
    }

    fn now(&self) -> Instant {
        TokioRuntime.now()
    }
}

/// A QUIC connection's timer. quinn notices an expiry by the clock when its connection runs
/// anyway, so what is counted is the timer waking the connection: its waker is wrapped in
/// one that counts ([`TimerWaker`]). A timer moved later or dropped wakes nobody.
struct CountingTimer {
    inner: Pin<Box<dyn AsyncTimer>>,
    /// The last waker the connection gave, and the counting one that wraps it.
    waker: Option<(Waker, Waker)>,
}

impl fmt::Debug for CountingTimer {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_tuple("CountingTimer").field(&self.inner).finish()
    }
}

impl CountingTimer {
    fn new(inner: Pin<Box<dyn AsyncTimer>>) -> CountingTimer {
        CountingTimer { inner, waker: None }
    }
}

impl AsyncTimer for CountingTimer {
    fn reset(mut self: Pin<&mut Self>, at: Instant) {
        self.inner.as_mut().reset(at)
    }

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        let this = &mut *self;
        let given = cx.waker();
        let counting = match &this.waker {
            Some((original, counting)) if original.will_wake(given) => counting.clone(),
            _ => {
                let counting = Waker::from(Arc::new(TimerWaker(given.clone())));
                this.waker = Some((given.clone(), counting.clone()));
                counting
            }
        };
        this.inner
            .as_mut()
            .poll(&mut Context::from_waker(&counting))
    }
}

/// Counts a timer's expiry, then wakes what waits on it.
struct TimerWaker(Waker);

impl Wake for TimerWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        PROCESS.quic_timers_fired.fetch_add(1, Relaxed);
        self.0.wake_by_ref()
    }
}

/// A UDP socket whose datagrams and calls are counted.
pub struct CountingSocket(Arc<dyn AsyncUdpSocket>);

impl fmt::Debug for CountingSocket {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_tuple("CountingSocket").field(&self.0).finish()
    }
}

/// The datagrams of one transmit: a GSO batch is cut into `segment_size` pieces.
fn datagrams_of(transmit: &Transmit) -> u64 {
    match transmit.segment_size {
        Some(size) if size > 0 => transmit.contents.len().div_ceil(size) as u64,
        _ => 1,
    }
}

/// The datagrams `meta` says one receive call returned: a GRO batch holds `len / stride`.
fn datagrams_received(meta: &[RecvMeta]) -> u64 {
    meta.iter()
        .map(|m| m.len.div_ceil(m.stride.max(1)) as u64)
        .sum()
}

impl AsyncUdpSocket for CountingSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.0.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.0.try_send(transmit)?;
        PROCESS.send_calls.fetch_add(1, Relaxed);
        PROCESS
            .datagrams_sent
            .fetch_add(datagrams_of(transmit), Relaxed);
        Ok(())
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let poll = self.0.poll_recv(cx, bufs, meta);
        if let Poll::Ready(Ok(n)) = poll {
            PROCESS.receive_calls.fetch_add(1, Relaxed);
            PROCESS
                .datagrams_received
                .fetch_add(datagrams_received(&meta[..n]), Relaxed);
        }
        poll
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.0.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.0.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.0.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn transmit(contents: &[u8], segment_size: Option<usize>) -> Transmit<'_> {
        Transmit {
            destination: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 1),
            ecn: None,
            contents,
            segment_size,
            src_ip: None,
        }
    }

    #[test]
    fn a_gso_batch_counts_each_datagram() {
        assert_eq!(datagrams_of(&transmit(&[0; 1200], None)), 1);
        assert_eq!(datagrams_of(&transmit(&[0; 1200], Some(1200))), 1);
        // The last segment may be short.
        assert_eq!(datagrams_of(&transmit(&[0; 2500], Some(1200))), 3);
    }

    #[tokio::test]
    async fn sends_receives_and_timers_are_counted() {
        let before = PROCESS.snapshot(&[]);
        let runtime = CountingRuntime;
        let a = runtime
            .wrap_udp_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
            .unwrap();
        let b = runtime
            .wrap_udp_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
            .unwrap();
        let to = b.local_addr().unwrap();
        let mut sent = transmit(b"hello", None);
        sent.destination = to;
        let mut poller = a.clone().create_io_poller();
        std::future::poll_fn(|cx| poller.as_mut().poll_writable(cx))
            .await
            .unwrap();
        a.try_send(&sent).unwrap();
        let mut buf = [0u8; 64];
        let mut meta = [RecvMeta::default()];
        let n =
            std::future::poll_fn(|cx| b.poll_recv(cx, &mut [IoSliceMut::new(&mut buf)], &mut meta))
                .await
                .unwrap();
        assert_eq!(n, 1);
        let mut timer = runtime.new_timer(Instant::now() + std::time::Duration::from_millis(5));
        std::future::poll_fn(|cx| timer.as_mut().poll(cx)).await;
        let after = PROCESS.snapshot(&[]);
        // Other tests of this process may count too: at least ours.
        assert!(after.send_calls > before.send_calls);
        assert!(after.datagrams_sent > before.datagrams_sent);
        assert!(after.receive_calls > before.receive_calls);
        assert!(after.datagrams_received > before.datagrams_received);
        assert!(after.quic_timers_fired > before.quic_timers_fired);
    }
}
