//! A link to a neighbour that runs in this process (a node host, `crate::host`): the same
//! message buffer, sequence numbers, hello and acknowledgements as a QUIC link, emptied by a
//! call instead of a connection.
//!
//! Each side runs its own [`Link::run_local`]: while the neighbour's node runs (the host's
//! registry says so, [`LocalPeers`]), it reads the neighbour's hello from the neighbour's own
//! state (its incarnation, what it handled of this side's frames, its revocation serial), takes
//! the link for up, and hands each frame of its buffer to the neighbour's node
//! ([`LinkOwner::on_data`]) in the order they were queued; a frame handed over is handled, so it
//! is acknowledged at once. Reports of dead links and revocation lists go the same way. The
//! link goes down when the neighbour's node stops (it crashed, was stopped, or is restarted:
//! the host's registry says so at once, no probe needed) or when it is cut at either end, and up
//! again when the neighbour runs again and neither end is cut; what the neighbour had not handled is handed over again then, as
//! after a new hello on QUIC. No datagram, no TLS, no timer.
//!
//! While the link is up, a packet queued when its buffer is empty does not wait for this task
//! at all: the process's hand-off loop ([`super::handoff`]) hands it over by a call, with the
//! packets of every other link here, in one pass. This task then serves only what the buffer
//! holds: what was queued while the link was down, and what queued behind that.

use super::handoff::{Handoffs, LocalRoute};
use super::{Link, LinkOwner};
use crate::stats::Event;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::link::{Hello, LinkFrame};
use cuberoute_protocol::wire::{PREFIX_LEN, decode_body};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use tokio::sync::watch;

/// The nodes of this process, as its links see them: the node host's registry.
pub trait LocalPeers: Send + Sync {
    /// Whether node `id` belongs to this process (its links to here are local, whether it
    /// runs at the moment or not).
    fn holds(&self, id: NodeId) -> bool;
    /// Node `id`, while it runs here, with its link to `me`.
    fn peer(&self, id: NodeId, me: NodeId) -> Option<LocalPeer>;
    /// Changes whenever a node of this process starts or stops.
    fn changes(&self) -> watch::Receiver<u64>;
    /// The process's hand-off loop, if packets between its nodes go by it ([`super::handoff`]);
    /// without one, each link's task hands its buffer over.
    fn handoffs(&self) -> Option<Arc<Handoffs>> {
        None
    }
}

/// The hand-off route of a link while it is served: open from the link's going up, closed
/// (and taken out of the link) when serving ends, however it ends.
struct RouteOpen {
    link: Arc<Link>,
    route: Arc<LocalRoute>,
}

impl RouteOpen {
    fn new(
        link: &Arc<Link>,
        node: &Arc<dyn LinkOwner>,
        peer: &LocalPeer,
        handoffs: Arc<Handoffs>,
    ) -> RouteOpen {
        handoffs.start();
        let route = Arc::new(LocalRoute {
            sender: node.clone(),
            link: link.clone(),
            peer: peer.owner.clone(),
            peer_link: peer.link.clone(),
            peer_running: peer.running.clone(),
            span: peer.owner.span(),
            open: AtomicBool::new(true),
            handoffs,
        });
        link.lock().local = Some(route.clone());
        RouteOpen {
            link: link.clone(),
            route,
        }
    }
}

impl Drop for RouteOpen {
    fn drop(&mut self) {
        self.route.open.store(false, Relaxed);
        let mut state = self.link.lock();
        if state
            .local
            .as_ref()
            .is_some_and(|local| Arc::ptr_eq(local, &self.route))
        {
            state.local = None;
        }
    }
}

/// A running node of this process, as seen from one of its neighbours here.
#[derive(Clone)]
pub struct LocalPeer {
    pub owner: Arc<dyn LinkOwner>,
    /// Its link to the neighbour that asked.
    pub link: Arc<Link>,
    /// `false` once it stopped.
    pub running: watch::Receiver<bool>,
}

impl Link {
    /// Run a link to a neighbour of this process for as long as this node runs: wait until the
    /// neighbour runs (and the link is not cut), serve, repeat.
    pub async fn run_local(self: Arc<Self>, node: Arc<dyn LinkOwner>, peers: Arc<dyn LocalPeers>) {
        let mut cut = self.cut.subscribe();
        let mut changes = peers.changes();
        loop {
            let _ = cut.wait_for(|cut| !cut).await;
            changes.borrow_and_update();
            let running = peers
                .peer(self.neighbour, self.me)
                .filter(|peer| *peer.running.borrow());
            let Some(peer) = running else {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = cut.changed() => {}
                }
                continue;
            };
            if peer.link.is_cut() {
                // Cut (or revoked) at the neighbour's end: refused there, as its accept loop
                // refuses a connection.
                let mut theirs = peer.link.cut.subscribe();
                tokio::select! {
                    _ = theirs.wait_for(|cut| !cut) => {}
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = cut.changed() => {}
                }
                continue;
            }
            let result = self.serve_local(&node, peer, peers.handoffs()).await;
            self.went_down(&*node, &result);
        }
    }

    /// Serve the link while the neighbour runs and the link is not cut.
    async fn serve_local(
        self: &Arc<Self>,
        owner: &Arc<dyn LinkOwner>,
        mut peer: LocalPeer,
        handoffs: Option<Arc<Handoffs>>,
    ) -> anyhow::Result<()> {
        let node = &**owner;
        let hello = Hello {
            node: peer.owner.id(),
            topology: peer.owner.topology(),
            incarnation: peer.owner.incarnation(),
            received: peer.link.lock().received,
            revocation_serial: peer.owner.revocation_serial(),
            process: None,
        };
        if hello.node != self.neighbour || hello.topology != node.topology() {
            node.stats().event(Event::HelloMismatch);
            anyhow::bail!("bad hello from a node of this process");
        }
        self.on_hello(node.incarnation(), &hello);
        self.went_up(node, hello.incarnation);
        let _route = handoffs.map(|handoffs| RouteOpen::new(self, owner, &peer, handoffs));
        let mut cut = self.cut.subscribe();
        let mut theirs = peer.link.cut.subscribe();
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.hand_over.swap(false, Relaxed)
                && let Some(signed) = self.revocations_to_hand(node.signed_revocations())
            {
                let offered = peer.owner.on_revocations(self.me, &signed);
                peer.link.on_list_offered(offered);
                node.stats()
                    .event_about(Event::RevocationHanded, self.neighbour);
            }
            let reports = std::mem::take(&mut *self.reports.lock().expect("link lock"));
            if !reports.is_empty() {
                peer.owner.on_reports(self.me, reports);
            }
            let work = self.take_work(crate::env::Instant::now())?;
            match work.batch {
                Some(batch) => {
                    for frame in &batch.frames {
                        match decode_body::<LinkFrame>(&frame[PREFIX_LEN..]) {
                            Ok(LinkFrame::Data { seq, packet, mark }) => {
                                peer.link.frames_received.fetch_add(1, Relaxed);
                                peer.owner.on_data(self.me, &packet, mark);
                                peer.link.on_data(node.incarnation(), seq);
                            }
                            other => anyhow::bail!("a queued frame is not data: {other:?}"),
                        }
                    }
                    // Handed over is handled: acknowledged.
                    self.on_ack(batch.upto);
                    // Others' turn before the next batch.
                    tokio::task::yield_now().await;
                }
                None => tokio::select! {
                    () = &mut notified => {}
                    changed = peer.running.changed() => {
                        if changed.is_err() || !*peer.running.borrow() {
                            anyhow::bail!("the neighbour's node stopped (in this process)");
                        }
                    }
                    _ = cut.changed() => {}
                    _ = theirs.changed() => {}
                },
            }
            if self.is_cut() {
                anyhow::bail!("cut");
            }
            if peer.link.is_cut() {
                anyhow::bail!("cut at the neighbour");
            }
        }
    }
}
