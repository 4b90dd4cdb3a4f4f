//! The node host's hand-off loop: one task per process that moves every frame between two of
//! its nodes by a call, in passes, instead of waking a link's task for each.
//!
//! While a link to a neighbour of this process is up ([`super::local`]) and its message
//! buffer is empty, [`super::Link::enqueue`] puts the packet here ([`Handoffs::push`]) rather
//! than in the buffer: no frame is encoded, no sequence number taken, and only the first
//! packet of a pass wakes the loop. The loop hands each packet to the neighbour's node
//! ([`super::LinkOwner::on_data`], in that node's span), and what that node forwards to another
//! node here joins the same pass. A packet is handled when it is handed over, so it is
//! acknowledged then, as the link's own task does with a batch of its buffer.
//!
//! A packet whose link went down meanwhile (the neighbour stopped or crashed, either end was
//! cut) goes into the link's buffer instead, as if it had been queued a moment later: it is
//! handed over when the link is up again, or counted as dropped with the buffer. The buffer
//! holds what this loop does not, so a link's frames are handed over in the order they were
//! queued, except around a restart of the neighbour, where no order was promised on QUIC
//! either (each batch is a stream of its own).
//!
//! Packets waiting here hold their bytes of the sending node's budget
//! (`buffers.memory_mib`), as they would in the buffer.

use super::{ChaosMark, Link, LinkOwner, NotQueued};
use crate::stats::Drop;
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, watch};

/// How many packets the loop hands over before it lets the process's other tasks run.
const PASS: usize = 256;

/// The packets handed from one node of this process to another and not handled yet.
#[derive(Default)]
pub struct Handoffs {
    queue: Mutex<VecDeque<Handoff>>,
    wake: Notify,
    started: AtomicBool,
}

/// A link that is up between two nodes of this process, as the hand-off loop uses it: set in
/// the sending link while it is served ([`super::local`]), closed when serving ends.
pub struct LocalRoute {
    /// The sending node and its link to the neighbour.
    pub(super) sender: Arc<dyn LinkOwner>,
    pub(super) link: Arc<Link>,
    /// The neighbour's node, its link back, and whether it runs.
    pub(super) peer: Arc<dyn LinkOwner>,
    pub(super) peer_link: Arc<Link>,
    pub(super) peer_running: watch::Receiver<bool>,
    /// The neighbour node's span, which its log lines carry.
    pub(super) span: tracing::Span,
    pub(super) open: AtomicBool,
    pub(super) handoffs: Arc<Handoffs>,
}

struct Handoff {
    route: Arc<LocalRoute>,
    packet: Vec<u8>,
    mark: Option<ChaosMark>,
}

impl LocalRoute {
    /// Whether a packet may be handed over now: the route is open, the neighbour runs, and
    /// neither end is cut.
    fn passable(&self) -> bool {
        self.open.load(Relaxed)
            && *self.peer_running.borrow()
            && !self.link.is_cut()
            && !self.peer_link.is_cut()
    }
}

impl Handoffs {
    /// Start the loop on this runtime, once.
    pub fn start(self: &Arc<Self>) {
        if !self.started.swap(true, Relaxed) {
            tokio::spawn(self.clone().run());
        }
    }

    /// Queue `packet` for the neighbour of `route` (its bytes already held of the budget).
    pub(super) fn push(&self, route: Arc<LocalRoute>, packet: Vec<u8>, mark: Option<ChaosMark>) {
        let first = {
            let mut queue = self.queue.lock().expect("hand-off lock");
            queue.push_back(Handoff {
                route,
                packet,
                mark,
            });
            queue.len() == 1
        };
        if first {
            self.wake.notify_one();
        }
    }

    async fn run(self: Arc<Self>) {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let pass = std::mem::take(&mut *self.queue.lock().expect("hand-off lock"));
            if pass.is_empty() {
                notified.await;
                continue;
            }
            for (i, handoff) in pass.into_iter().enumerate() {
                handoff.hand();
                if i % PASS == PASS - 1 {
                    tokio::task::yield_now().await;
                }
            }
            tokio::task::yield_now().await;
        }
    }
}

impl Handoff {
    fn hand(self) {
        let Handoff {
            route,
            packet,
            mark,
        } = self;
        let link = &route.link;
        link.budget.release(packet.len());
        if route.passable() {
            link.handed.fetch_sub(1, Relaxed);
            route.peer_link.frames_received.fetch_add(1, Relaxed);
            let _entered = route.span.enter();
            route.peer.on_data(link.me, &packet, mark);
            return;
        }
        // The link went down while the packet waited: into its buffer, for when it is up again.
        let drop = if link.is_revoked() {
            Some(Drop::Revoked)
        } else if link.stopped.load(Relaxed) {
            Some(Drop::Shutdown)
        } else {
            match link.enqueue_buffered(link.lock(), packet, mark) {
                Ok(()) => None,
                Err(NotQueued::Full) => Some(Drop::LinkBufferFull),
                Err(NotQueued::OverBudget) => Some(Drop::MemoryBound),
                Err(NotQueued::TooLarge) => Some(Drop::FrameTooLarge),
            }
        };
        // Counted out of the loop once it is in the buffer or dropped: `queued` never misses it.
        link.handed.fetch_sub(1, Relaxed);
        if let Some(drop) = drop {
            route.sender.stats().drop(drop);
            link.count_drop(drop.as_str());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ListOffered, Report, shared};
    use super::*;
    use crate::budget::Budget;
    use crate::liveness::Liveness;
    use crate::stats::Stats;
    use cuberoute_protocol::{NodeId, Topology};

    /// A node that records what it is handed.
    struct Recorder {
        id: NodeId,
        stats: Stats,
        liveness: Liveness,
        got: Mutex<Vec<(NodeId, Vec<u8>)>>,
    }

    impl LinkOwner for Recorder {
        fn id(&self) -> NodeId {
            self.id
        }
        fn topology(&self) -> Topology {
            "q:1".parse().unwrap()
        }
        fn incarnation(&self) -> u64 {
            1
        }
        fn stats(&self) -> &Stats {
            &self.stats
        }
        fn on_data(&self, from: NodeId, packet: &[u8], _mark: Option<ChaosMark>) {
            self.got.lock().unwrap().push((from, packet.to_vec()));
        }
        fn revocation_serial(&self) -> u64 {
            0
        }
        fn signed_revocations(&self) -> Option<(u64, Arc<[u8]>)> {
            None
        }
        fn on_revocations(&self, _: NodeId, _: &[u8]) -> ListOffered {
            ListOffered::Invalid
        }
        fn liveness(&self) -> &Liveness {
            &self.liveness
        }
        fn link_went(&self, _: NodeId, _: bool) {}
        fn on_reports(&self, _: NodeId, _: Vec<Report>) -> bool {
            false
        }
        fn reports(&self) -> Vec<Report> {
            Vec::new()
        }
        fn handshakes(&self) -> Option<&shared::Handshakes> {
            None
        }
    }

    fn recorder(id: u64) -> Arc<Recorder> {
        Arc::new(Recorder {
            id: NodeId(id),
            stats: Stats::default(),
            liveness: Liveness::new(Default::default()),
            got: Mutex::new(Vec::new()),
        })
    }

    /// Node 0's link to node 1 and back, with node 0's budget; the route from 0 to 1 open, with
    /// node 1 running as `running` says.
    fn linked(
        budget: &Arc<Budget>,
        running: &watch::Receiver<bool>,
    ) -> (Arc<Recorder>, Arc<Recorder>, Arc<Link>, Arc<LocalRoute>) {
        let (zero, one) = (recorder(0), recorder(1));
        let link = Arc::new(Link::new(
            NodeId(0),
            NodeId(1),
            "x:1".into(),
            4,
            budget.clone(),
        ));
        let back = Arc::new(Link::new(
            NodeId(1),
            NodeId(0),
            "x:1".into(),
            4,
            Arc::new(Budget::new(usize::MAX)),
        ));
        let route = Arc::new(LocalRoute {
            sender: zero.clone(),
            link: link.clone(),
            peer: one.clone(),
            peer_link: back,
            peer_running: running.clone(),
            span: tracing::Span::none(),
            open: AtomicBool::new(true),
            handoffs: Arc::default(),
        });
        link.lock().local = Some(route.clone());
        (zero, one, link, route)
    }

    #[tokio::test]
    async fn a_packet_between_two_nodes_here_is_handed_over_by_the_loop_not_buffered() {
        let budget = Arc::new(Budget::new(1000));
        let (_running, seen) = watch::channel(true);
        let (_zero, one, link, route) = linked(&budget, &seen);
        route.handoffs.start();
        link.enqueue(vec![7; 100], None).unwrap();
        link.enqueue(vec![8; 100], None).unwrap();
        // Nothing in the buffer; the bytes held of the sender's budget until handed over.
        assert_eq!(link.lock().queue.len(), 0);
        assert_eq!(link.queued(), 2);
        assert_eq!(budget.held(), 200);
        while link.queued() > 0 {
            tokio::task::yield_now().await;
        }
        let got = one.got.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![(NodeId(0), vec![7; 100]), (NodeId(0), vec![8; 100])]
        );
        assert_eq!(budget.held(), 0);
        assert_eq!(link.status().frames_written, 2);
        // Over the budget: refused, as the buffer refuses.
        assert_eq!(
            link.enqueue(vec![0; 1001], None),
            Err(NotQueued::OverBudget)
        );
    }

    #[tokio::test]
    async fn a_packet_whose_neighbour_stopped_while_it_waited_goes_into_the_buffer() {
        let budget = Arc::new(Budget::new(usize::MAX));
        let (running, seen) = watch::channel(true);
        let (_zero, one, link, route) = linked(&budget, &seen);
        link.enqueue(vec![1; 10], None).unwrap();
        running.send_replace(false);
        route.handoffs.start();
        while link.handed.load(Relaxed) > 0 {
            tokio::task::yield_now().await;
        }
        assert!(one.got.lock().unwrap().is_empty());
        assert_eq!(
            link.lock().queue.len(),
            1,
            "kept for when the link is up again"
        );
        // While the buffer holds a packet, the next one queues behind it (the order kept).
        running.send_replace(true);
        link.enqueue(vec![2; 10], None).unwrap();
        assert_eq!(link.lock().queue.len(), 2);
    }

    #[tokio::test]
    async fn a_packet_given_back_after_its_node_stopped_is_counted_dropped() {
        let budget = Arc::new(Budget::new(usize::MAX));
        let (_running, seen) = watch::channel(true);
        let (zero, _one, link, route) = linked(&budget, &seen);
        link.enqueue(vec![1; 10], None).unwrap();
        route.open.store(false, Relaxed);
        assert_eq!(link.take_queued(), 0);
        route.handoffs.start();
        while link.handed.load(Relaxed) > 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(zero.stats.drops().get(&Drop::Shutdown), Some(&1));
        assert_eq!(link.lock().queue.len(), 0);
        assert_eq!(budget.held(), 0);
    }

    #[tokio::test]
    async fn without_a_route_a_packet_is_buffered() {
        let budget = Arc::new(Budget::new(usize::MAX));
        let (_running, seen) = watch::channel(true);
        let (_zero, _one, link, _route) = linked(&budget, &seen);
        link.lock().local = None;
        link.enqueue(vec![1; 10], None).unwrap();
        assert_eq!(link.lock().queue.len(), 1);
        assert_eq!(link.handed.load(Relaxed), 0);
    }
}
