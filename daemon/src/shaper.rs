//! Network faults in user space: delay, jitter, reordering and duplication of the datagrams a
//! node's link socket sends, done in the daemon's socket because the kernel here has no netem
//! (issue 26). The chaos tooling sets the rules through the control API
//! ([`Fault::Shape`](cuberoute_protocol::wire::control::Fault::Shape), `Fault::Unshape`;
//! `crate::faults` carries them out).
//!
//! [`ShapedSocket`] wraps the real UDP socket (quinn's own, from its runtime) and is what
//! `crate::net::endpoint` gives quinn for the link endpoint. While no rule is in force a send
//! costs one atomic load more than quinn's own socket, and a GSO batch passes untouched. While
//! one is, every datagram to a destination a rule matches is treated by that rule:
//!
//! * held back `delay` plus a uniform draw in ±`jitter` (never less than no delay);
//! * `reorder` ppm of them held back a further max(delay, 1 ms), so that later ones overtake it;
//! * `duplicate` ppm of them sent twice (the copy goes out with the original).
//!
//! A GSO batch to such a destination is cut into its datagrams, each treated alone. A datagram
//! held back for no time goes out at once, in line; the others wait in one queue ordered by due
//! time (a binary heap; equal times in the order they came), which one task per socket empties
//! with the inner socket's `try_send`. The queue holds at most [`MAX_HELD_DATAGRAMS`] datagrams
//! and [`MAX_HELD_BYTES`] bytes. Nothing is dropped silently: a datagram the queue has no room
//! for (`queue_full`), one the socket would block on when it is due (`would_block`), one it
//! refuses (`send_error`) and one still held when the socket closes (`socket_closed`) are
//! counted ([`Shaper::counters`]), beside what was delayed, reordered and duplicated.
//!
//! Only the real socket is shaped: inside a turmoil simulation the link endpoint runs on the
//! simulated network, which has its own faults (loss, partitions), and `crate::faults` refuses
//! a shape request there. The control endpoint is never shaped, so that clients keep their
//! measuring and steering channel. Randomness comes from [`crate::env`]; time is tokio's,
//! whose timers have a resolution of a millisecond: a delay is kept to within about 1 ms.

use crate::env::{self, Instant};
use cuberoute_protocol::wire::control::{ShapeRule, ShaperCounters};
use quinn::udp::{EcnCodepoint, RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

/// The most datagrams one socket holds back at once.
pub const MAX_HELD_DATAGRAMS: usize = 100_000;
/// The most bytes one socket holds back at once.
pub const MAX_HELD_BYTES: usize = 16 << 20;

/// How one destination's datagrams are treated: a [`ShapeRule`] without its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rule {
    pub delay_us: u32,
    pub jitter_us: u32,
    pub reorder_ppm: u32,
    pub duplicate_ppm: u32,
}

impl From<&ShapeRule> for Rule {
    fn from(r: &ShapeRule) -> Rule {
        Rule {
            delay_us: r.delay_us,
            jitter_us: r.jitter_us,
            reorder_ppm: r.reorder_ppm,
            duplicate_ppm: r.duplicate_ppm,
        }
    }
}

/// What becomes of one datagram under a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    /// How long it is held back (zero: sent at once).
    pub delay: Duration,
    /// Held back the extra max(delay, 1 ms).
    pub reordered: bool,
    /// Sent twice.
    pub duplicated: bool,
}

impl Rule {
    /// The fate of a datagram, given the draws: `jitter` in [-jitter_us, jitter_us], `reorder`
    /// and `duplicate` in [0, 1,000,000).
    pub fn fate(&self, jitter: i64, reorder: u32, duplicate: u32) -> Fate {
        let reordered = reorder < self.reorder_ppm;
        let mut us = (i64::from(self.delay_us) + jitter).max(0) as u64;
        if reordered {
            us += u64::from(self.delay_us.max(1000));
        }
        Fate {
            delay: Duration::from_micros(us),
            reordered,
            duplicated: duplicate < self.duplicate_ppm,
        }
    }

    /// The fate of a datagram, drawn from [`crate::env`]'s random numbers.
    pub fn draw(&self) -> Fate {
        let j = i64::from(self.jitter_us);
        let jitter = if j > 0 { env::random_range(-j..=j) } else { 0 };
        let ppm = |p: u32| {
            if p == 0 {
                u32::MAX
            } else {
                env::random_range(0..1_000_000)
            }
        };
        self.fate(jitter, ppm(self.reorder_ppm), ppm(self.duplicate_ppm))
    }
}

/// The rules in force: one per destination address, and one for every other destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Rules {
    every: Option<Rule>,
    by_ip: HashMap<IpAddr, Rule>,
}

impl Rules {
    fn len(&self) -> usize {
        self.by_ip.len() + usize::from(self.every.is_some())
    }

    /// The rule for `ip`: its own, else the rule for every destination.
    fn for_ip(&self, ip: IpAddr) -> Option<Rule> {
        self.by_ip
            .get(&ip.to_canonical())
            .or(self.every.as_ref())
            .copied()
    }
}

/// Why the shaper dropped a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    QueueFull,
    WouldBlock,
    SendError,
    SocketClosed,
}

impl Dropped {
    const ALL: [Dropped; 4] = [
        Dropped::QueueFull,
        Dropped::WouldBlock,
        Dropped::SendError,
        Dropped::SocketClosed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Dropped::QueueFull => "queue_full",
            Dropped::WouldBlock => "would_block",
            Dropped::SendError => "send_error",
            Dropped::SocketClosed => "socket_closed",
        }
    }
}

/// A node's shaping rules and what they did: shared by the node (which sets the rules) and its
/// link socket (which follows them).
#[derive(Debug, Default)]
pub struct Shaper {
    /// Whether any rule is in force: the one load an unshaped send costs.
    active: AtomicBool,
    rules: RwLock<Rules>,
    delayed: AtomicU64,
    reordered: AtomicU64,
    duplicated: AtomicU64,
    queued: AtomicU64,
    dropped: [AtomicU64; 4],
}

impl Shaper {
    /// Put `rule` in force for its destinations (every destination if it names none),
    /// replacing an earlier rule for the same ones. Returns the number of rules in force.
    pub fn shape(&self, rule: &ShapeRule) -> usize {
        let mut rules = self.rules.write().expect("shaper rules");
        let one = Rule::from(rule);
        if rule.to.is_empty() {
            rules.every = Some(one);
        }
        for ip in &rule.to {
            rules.by_ip.insert(ip.to_canonical(), one);
        }
        self.active.store(rules.len() > 0, Relaxed);
        rules.len()
    }

    /// Remove every rule. Returns how many there were.
    pub fn unshape(&self) -> usize {
        let mut rules = self.rules.write().expect("shaper rules");
        let n = rules.len();
        *rules = Rules::default();
        self.active.store(false, Relaxed);
        n
    }

    /// Whether any rule is in force.
    pub fn is_active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// The rule that applies to datagrams for `ip`, if one does.
    pub fn rule_for(&self, ip: IpAddr) -> Option<Rule> {
        if !self.is_active() {
            return None;
        }
        self.rules.read().expect("shaper rules").for_ip(ip)
    }

    pub fn counters(&self) -> ShaperCounters {
        let dropped: BTreeMap<String, u64> = Dropped::ALL
            .iter()
            .map(|&why| {
                (
                    why.as_str().to_string(),
                    self.dropped[why as usize].load(Relaxed),
                )
            })
            .filter(|&(_, n)| n > 0)
            .collect();
        ShaperCounters {
            rules: self.rules.read().expect("shaper rules").len() as u64,
            delayed: self.delayed.load(Relaxed),
            reordered: self.reordered.load(Relaxed),
            duplicated: self.duplicated.load(Relaxed),
            queued: self.queued.load(Relaxed),
            dropped,
        }
    }

    fn count_drop(&self, why: Dropped) {
        self.dropped[why as usize].fetch_add(1, Relaxed);
    }
}

/// A datagram held back.
#[derive(Debug)]
struct Held {
    due: Instant,
    /// Arrival order: equal due times leave in it.
    order: u64,
    destination: SocketAddr,
    ecn: Option<EcnCodepoint>,
    src_ip: Option<IpAddr>,
    bytes: Vec<u8>,
}

impl Held {
    fn key(&self) -> (Instant, u64) {
        (self.due, self.order)
    }

    fn transmit(&self) -> Transmit<'_> {
        Transmit {
            destination: self.destination,
            ecn: self.ecn,
            contents: &self.bytes,
            segment_size: None,
            src_ip: self.src_ip,
        }
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Held {}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Held) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Held {
    fn cmp(&self, other: &Held) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// The datagrams one socket holds back, earliest due first, within its bounds.
#[derive(Debug)]
struct Queue {
    state: Mutex<QueueState>,
    /// Wakes the sending task: an earlier due time, or the socket closed.
    wake: tokio::sync::Notify,
    closed: AtomicBool,
    max_datagrams: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct QueueState {
    heap: BinaryHeap<Reverse<Held>>,
    bytes: usize,
    next_order: u64,
}

impl Queue {
    fn new(max_datagrams: usize, max_bytes: usize) -> Queue {
        Queue {
            state: Mutex::default(),
            wake: tokio::sync::Notify::new(),
            closed: AtomicBool::new(false),
            max_datagrams,
            max_bytes,
        }
    }

    /// Hold `transmit`'s `datagram` until `due`; false if the queue has no room for it.
    fn push(&self, due: Instant, transmit: &Transmit, datagram: &[u8]) -> bool {
        let mut state = self.state.lock().expect("shaper queue");
        if state.heap.len() >= self.max_datagrams || state.bytes + datagram.len() > self.max_bytes {
            return false;
        }
        let order = state.next_order;
        state.next_order += 1;
        state.bytes += datagram.len();
        let earliest = state.heap.peek().is_none_or(|Reverse(h)| due < h.due);
        state.heap.push(Reverse(Held {
            due,
            order,
            destination: transmit.destination,
            ecn: transmit.ecn,
            src_ip: transmit.src_ip,
            bytes: datagram.to_vec(),
        }));
        drop(state);
        if earliest {
            self.wake.notify_one();
        }
        true
    }

    /// Every datagram due by `now`, in order, and the due time of the next one.
    fn take_due(&self, now: Instant) -> (Vec<Held>, Option<Instant>) {
        let mut state = self.state.lock().expect("shaper queue");
        let mut due = Vec::new();
        while state.heap.peek().is_some_and(|Reverse(h)| h.due <= now) {
            let Reverse(held) = state.heap.pop().expect("peeked");
            state.bytes -= held.bytes.len();
            due.push(held);
        }
        (due, state.heap.peek().map(|Reverse(h)| h.due))
    }

    /// Everything still held, when the socket closes.
    fn take_all(&self) -> usize {
        let mut state = self.state.lock().expect("shaper queue");
        let n = state.heap.len();
        state.heap.clear();
        state.bytes = 0;
        n
    }

    fn close(&self) {
        self.closed.store(true, Relaxed);
        self.wake.notify_one();
    }
}

/// quinn's socket with the shaper in front of its sends ([`crate::net::endpoint`] gives it to
/// the link endpoint).
pub struct ShapedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    shaper: Arc<Shaper>,
    queue: Arc<Queue>,
}

impl fmt::Debug for ShapedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShapedSocket")
            .field("inner", &self.inner)
            .field("active", &self.shaper.is_active())
            .finish()
    }
}

impl ShapedSocket {
    /// Wrap `inner`, following `shaper`'s rules; starts the task that sends what is held back
    /// (needs a tokio runtime).
    pub fn new(inner: Arc<dyn AsyncUdpSocket>, shaper: Arc<Shaper>) -> Arc<ShapedSocket> {
        ShapedSocket::with_bounds(inner, shaper, MAX_HELD_DATAGRAMS, MAX_HELD_BYTES)
    }

    fn with_bounds(
        inner: Arc<dyn AsyncUdpSocket>,
        shaper: Arc<Shaper>,
        max_datagrams: usize,
        max_bytes: usize,
    ) -> Arc<ShapedSocket> {
        let queue = Arc::new(Queue::new(max_datagrams, max_bytes));
        tokio::spawn(send_when_due(queue.clone(), inner.clone(), shaper.clone()));
        Arc::new(ShapedSocket {
            inner,
            shaper,
            queue,
        })
    }

    /// A transmit to a destination `rule` matches: each datagram by its own fate.
    fn send_shaped(&self, transmit: &Transmit, rule: Rule) -> io::Result<()> {
        let len = transmit.contents.len();
        let size = transmit.segment_size.unwrap_or(len).clamp(1, len.max(1));
        let now = Instant::now();
        // Until anything is sent or held, a socket that would block says so, and quinn tries
        // the whole transmit again later (backpressure, as without shaping).
        let mut first = true;
        for datagram in transmit.contents.chunks(size) {
            let fate = rule.draw();
            let copies = 1 + usize::from(fate.duplicated);
            if fate.delay.is_zero() {
                let one = Transmit {
                    destination: transmit.destination,
                    ecn: transmit.ecn,
                    contents: datagram,
                    segment_size: None,
                    src_ip: transmit.src_ip,
                };
                for copy in 0..copies {
                    if copy == 1 {
                        self.shaper.duplicated.fetch_add(1, Relaxed);
                    }
                    match self.inner.try_send(&one) {
                        Ok(()) => {}
                        Err(e) if first => return Err(e),
                        Err(e) => self.shaper.count_drop(failure(&e)),
                    }
                    first = false;
                }
                continue;
            }
            first = false;
            let due = now + fate.delay;
            for copy in 0..copies {
                if copy == 1 {
                    self.shaper.duplicated.fetch_add(1, Relaxed);
                }
                if !self.queue.push(due, transmit, datagram) {
                    self.shaper.count_drop(Dropped::QueueFull);
                    continue;
                }
                self.shaper.queued.fetch_add(1, Relaxed);
                if copy == 0 {
                    self.shaper.delayed.fetch_add(1, Relaxed);
                    if fate.reordered {
                        self.shaper.reordered.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        Ok(())
    }
}

fn failure(e: &io::Error) -> Dropped {
    if e.kind() == io::ErrorKind::WouldBlock {
        Dropped::WouldBlock
    } else {
        Dropped::SendError
    }
}

impl Drop for ShapedSocket {
    fn drop(&mut self) {
        self.queue.close();
    }
}

/// The one task per shaped socket: send each held datagram when it is due, until the socket
/// closes (what is still held then is counted as dropped).
async fn send_when_due(queue: Arc<Queue>, inner: Arc<dyn AsyncUdpSocket>, shaper: Arc<Shaper>) {
    loop {
        if queue.closed.load(Relaxed) {
            let left = queue.take_all() as u64;
            shaper.queued.fetch_sub(left, Relaxed);
            shaper.dropped[Dropped::SocketClosed as usize].fetch_add(left, Relaxed);
            return;
        }
        let (due, next) = queue.take_due(Instant::now());
        for held in due {
            shaper.queued.fetch_sub(1, Relaxed);
            if let Err(e) = inner.try_send(&held.transmit()) {
                shaper.count_drop(failure(&e));
            }
        }
        let woken = queue.wake.notified();
        match next {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = woken => {}
                }
            }
            None => woken.await,
        }
    }
}

impl AsyncUdpSocket for ShapedSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        if !self.shaper.is_active() {
            return self.inner.try_send(transmit);
        }
        match self.shaper.rule_for(transmit.destination.ip()) {
            None => self.inner.try_send(transmit),
            Some(rule) => self.send_shaped(transmit, rule),
        }
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::Runtime;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    fn rule(to: &[IpAddr], delay_us: u32) -> ShapeRule {
        ShapeRule {
            to: to.to_vec(),
            delay_us,
            ..ShapeRule::default()
        }
    }

    #[test]
    fn rules_match_their_addresses_then_every_destination() {
        let shaper = Shaper::default();
        assert!(!shaper.is_active());
        assert_eq!(shaper.rule_for(ip(1)), None);
        assert_eq!(shaper.shape(&rule(&[ip(1), ip(2)], 10)), 2);
        assert!(shaper.is_active());
        assert_eq!(shaper.rule_for(ip(1)).unwrap().delay_us, 10);
        assert_eq!(
            shaper.rule_for(ip(3)),
            None,
            "no rule for every destination yet"
        );
        // A later rule for the same address replaces the earlier; the others stay.
        assert_eq!(shaper.shape(&rule(&[ip(2)], 20)), 2);
        assert_eq!(shaper.rule_for(ip(1)).unwrap().delay_us, 10);
        assert_eq!(shaper.rule_for(ip(2)).unwrap().delay_us, 20);
        // No address: every other destination; an address's own rule comes first.
        assert_eq!(shaper.shape(&rule(&[], 30)), 3);
        assert_eq!(shaper.rule_for(ip(3)).unwrap().delay_us, 30);
        assert_eq!(shaper.rule_for(ip(2)).unwrap().delay_us, 20);
        // An IPv4 address seen through a dual-stack socket is the same address.
        let mapped = IpAddr::V6(Ipv4Addr::new(127, 0, 0, 2).to_ipv6_mapped());
        assert_eq!(shaper.rule_for(mapped).unwrap().delay_us, 20);
        assert_eq!(
            shaper
                .rule_for(IpAddr::V6(Ipv6Addr::LOCALHOST))
                .unwrap()
                .delay_us,
            30
        );
        assert_eq!(shaper.counters().rules, 3);
        assert_eq!(shaper.unshape(), 3);
        assert!(!shaper.is_active());
        assert_eq!(shaper.rule_for(ip(1)), None);
        assert_eq!(shaper.counters().rules, 0);
    }

    #[test]
    fn jitter_stays_within_its_bounds_and_never_below_zero() {
        let r = Rule {
            delay_us: 20_000,
            jitter_us: 5_000,
            ..Rule::default()
        };
        let us = |f: Fate| f.delay.as_micros() as i64;
        assert_eq!(us(r.fate(-5_000, u32::MAX, u32::MAX)), 15_000);
        assert_eq!(us(r.fate(5_000, u32::MAX, u32::MAX)), 25_000);
        let (mut low, mut high) = (i64::MAX, i64::MIN);
        for _ in 0..20_000 {
            let f = r.draw();
            assert!(!f.reordered && !f.duplicated);
            low = low.min(us(f));
            high = high.max(us(f));
        }
        assert!((15_000..15_500).contains(&low), "{low}");
        assert!((24_500..=25_000).contains(&high), "{high}");
        // Jitter wider than the delay: never a negative delay, sometimes none.
        let wide = Rule {
            delay_us: 1_000,
            jitter_us: 3_000,
            ..Rule::default()
        };
        assert_eq!(wide.fate(-3_000, u32::MAX, u32::MAX).delay, Duration::ZERO);
        let draws: Vec<Fate> = (0..10_000).map(|_| wide.draw()).collect();
        assert!(
            draws
                .iter()
                .all(|f| f.delay <= Duration::from_micros(4_000))
        );
        assert!(draws.iter().any(|f| f.delay.is_zero()));
        // No jitter: exactly the delay.
        let exact = Rule {
            delay_us: 7,
            ..Rule::default()
        };
        assert!((0..100).all(|_| exact.draw().delay == Duration::from_micros(7)));
    }

    #[test]
    fn shares_are_drawn_per_million() {
        let all = Rule {
            reorder_ppm: 1_000_000,
            duplicate_ppm: 1_000_000,
            ..Rule::default()
        };
        let none = Rule::default();
        for _ in 0..1000 {
            let f = all.draw();
            assert!(f.reordered && f.duplicated);
            // Reordered with no delay: held back the minimum of 1 ms.
            assert_eq!(f.delay, Duration::from_millis(1));
            let f = none.draw();
            assert!(!f.reordered && !f.duplicated && f.delay.is_zero());
        }
        let half = Rule {
            duplicate_ppm: 500_000,
            ..Rule::default()
        };
        let twice = (0..10_000).filter(|_| half.draw().duplicated).count();
        assert!((4_500..5_500).contains(&twice), "{twice}");
    }

    fn transmit(contents: &[u8]) -> Transmit<'_> {
        Transmit {
            destination: "127.0.0.1:9".parse().unwrap(),
            ecn: None,
            contents,
            segment_size: None,
            src_ip: None,
        }
    }

    #[test]
    fn the_queue_sends_by_due_time_and_a_reordered_datagram_is_overtaken() {
        let queue = Queue::new(100, 1 << 20);
        let start = Instant::now();
        let r = Rule {
            delay_us: 5_000,
            reorder_ppm: 1,
            ..Rule::default()
        };
        // Ten datagrams 100 µs apart, each held back 5 ms; the fourth is reordered (a draw of 0
        // is below 1 ppm): held back a further 5 ms, so the six after it overtake it.
        for i in 0..10u8 {
            let fate = r.fate(0, if i == 3 { 0 } else { 999_999 }, u32::MAX);
            assert_eq!(fate.reordered, i == 3);
            let sent = start + Duration::from_micros(100 * u64::from(i));
            assert!(queue.push(sent + fate.delay, &transmit(&[i]), &[i]));
        }
        // Nothing is due before 5 ms.
        let (due, next) = queue.take_due(start + Duration::from_micros(4_999));
        assert!(due.is_empty());
        assert_eq!(next, Some(start + Duration::from_millis(5)));
        let (due, next) = queue.take_due(start + Duration::from_millis(6));
        let order: Vec<u8> = due.iter().map(|h| h.bytes[0]).collect();
        assert_eq!(order, [0, 1, 2, 4, 5, 6, 7, 8, 9]);
        assert_eq!(next, Some(start + Duration::from_micros(10_300)));
        let (due, next) = queue.take_due(start + Duration::from_millis(11));
        assert_eq!(due.iter().map(|h| h.bytes[0]).collect::<Vec<_>>(), [3]);
        assert_eq!(next, None);
        // Equal due times leave in the order they came.
        for i in 0..5u8 {
            assert!(queue.push(start, &transmit(&[i]), &[i]));
        }
        let (due, _) = queue.take_due(start);
        assert_eq!(
            due.iter().map(|h| h.bytes[0]).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn the_queue_keeps_its_bounds() {
        let queue = Queue::new(3, 10);
        let now = Instant::now();
        assert!(queue.push(now, &transmit(&[0; 4]), &[0; 4]));
        assert!(queue.push(now, &transmit(&[0; 4]), &[0; 4]));
        assert!(
            !queue.push(now, &transmit(&[0; 4]), &[0; 4]),
            "12 bytes > 10"
        );
        assert!(queue.push(now, &transmit(&[0; 2]), &[0; 2]));
        assert!(
            !queue.push(now, &transmit(&[0]), &[0]),
            "3 datagrams at most"
        );
        let (due, _) = queue.take_due(now);
        assert_eq!(due.len(), 3);
        assert!(queue.push(now, &transmit(&[0; 10]), &[0; 10]));
    }

    /// A real socket pair on loopback: a shaped GSO batch arrives as its datagrams, each twice,
    /// no sooner than the delay; an unshaped one passes untouched; the queue's bound drops and
    /// counts.
    #[tokio::test]
    async fn a_real_socket_delays_splits_and_duplicates() {
        let receiver = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let to = receiver.local_addr().unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let inner = quinn::TokioRuntime.wrap_udp_socket(sender).unwrap();
        let shaper = Arc::new(Shaper::default());
        let socket = ShapedSocket::with_bounds(inner, shaper.clone(), 100, 1 << 20);
        let contents: Vec<u8> = (0..30).collect();
        let batch = Transmit {
            destination: to,
            ecn: None,
            contents: &contents,
            segment_size: Some(10),
            src_ip: None,
        };
        let mut buf = [0u8; 100];
        // A new socket is writable once the reactor has seen it so.
        let mut poller = socket.clone().create_io_poller();
        std::future::poll_fn(|cx| poller.as_mut().poll_writable(cx))
            .await
            .unwrap();
        // No rule: at once, however the socket sends a batch (GSO or not).
        socket.try_send(&batch).unwrap();
        let mut got = Vec::new();
        while got.len() < 30 {
            let n = receiver.recv(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, contents);
        shaper.shape(&ShapeRule {
            to: vec![to.ip()],
            delay_us: 30_000,
            duplicate_ppm: 1_000_000,
            ..ShapeRule::default()
        });
        let sent = Instant::now();
        socket.try_send(&batch).unwrap();
        assert_eq!(shaper.counters().queued, 6);
        let mut datagrams = Vec::new();
        for _ in 0..6 {
            let n = receiver.recv(&mut buf).await.unwrap();
            datagrams.push(buf[..n].to_vec());
        }
        assert!(sent.elapsed() >= Duration::from_millis(30));
        datagrams.sort();
        let expected: Vec<Vec<u8>> = contents
            .chunks(10)
            .flat_map(|d| [d.to_vec(), d.to_vec()])
            .collect();
        assert_eq!(datagrams, expected);
        let c = shaper.counters();
        assert_eq!(
            (c.delayed, c.duplicated, c.reordered, c.queued),
            (3, 3, 0, 0)
        );
        assert!(c.dropped.is_empty());
        // The queue holds 100: 60 batches of 6 datagrams overflow it, and every datagram is
        // sent or counted.
        for _ in 0..60 {
            socket.try_send(&batch).unwrap();
        }
        let c = shaper.counters();
        assert_eq!(c.dropped["queue_full"], 360 - 100);
        assert_eq!(c.queued, 100);
        drop(socket);
        tokio::time::sleep(Duration::from_millis(10)).await;
        let c = shaper.counters();
        assert_eq!(c.dropped["socket_closed"], 100);
        assert_eq!(c.queued, 0);
    }
}
