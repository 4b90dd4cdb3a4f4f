//! The node's handshakes: a handshake message sent on every path to its peer, the sealing
//! timer (keys erased as they age, unanswered Inits sent again, handshakes given up), and the
//! peers this node holds sessions with, kept in the store and told of a restart.

use super::Node;
use crate::env::now_us;
use crate::stats::{Drop, Event, Stats};
use cuberoute_protocol::SendRequest;
use cuberoute_protocol::seal::session::Outgoing;
use cuberoute_protocol::wire::message::Message;
use cuberoute_protocol::wire::packet::set_checksum;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tracing::{debug, warn};

impl Node {
    /// Send a handshake message (an Init, or the Resp answering one) to `out.to` on the paths
    /// its attempt goes on ([`Outgoing::paths`]): a first attempt on one, the others on every
    /// path, as a set's copies go; a renewal's Inits on one each, in turn.
    pub(super) fn send_handshake(&self, out: Outgoing, what: Event) {
        let routes = match SendRequest::to(out.to).routes(self.topology, self.id) {
            // Around the dead links known, its k paths kept (an attempt names its paths).
            Ok(routes) => self.around(routes, true),
            Err(e) => {
                warn!(error = %e, to = %out.to, "no route for a handshake");
                return;
            }
        };
        let seq = self.next_seq.fetch_add(1, Relaxed);
        let sent_at_us = now_us();
        let paths = out.paths(routes.k());
        let first = paths.start;
        let messages = paths
            .map(|_| {
                let mut m = Message::new(self.id, seq, false, sent_at_us, false, out.bytes.clone())
                    .attempt(out.attempt)
                    .single(routes.is_single());
                m.sealed = true;
                m
            })
            .collect();
        let sends = self
            .process
            .lock()
            .expect("process lock")
            .start_from(&routes, first, messages);
        // Routine: counted, not streamed to `monitor`.
        self.stats.count_event(what);
        for (first, mut packet) in sends {
            set_checksum(&mut packet);
            debug!(to = %out.to, attempt = out.attempt, "handshake");
            if self.send_to(first, &packet, None) {
                Stats::count(&self.stats.packets_sent);
            }
        }
    }

    /// A path may have come back (a link of this node up, or a neighbour's report of one): the
    /// handshakes cut off by what healed go again now rather than at the end of their backoff.
    pub(super) fn path_back(&self) {
        for init in self.sealing.path_back(&self.keys, &self.stats) {
            self.send_handshake(init, Event::HandshakeInitResent);
        }
    }

    /// Keep in the store the peers this node holds sessions with, so that a restart can tell
    /// them ([`Node::recover_sealing_peers`]): when a session is made (the store's writer takes
    /// every write waiting into one commit), or with the delivered reliable set that made it.
    /// Forever; nothing without a store.
    pub async fn run_sealing_peers(self: Arc<Self>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        loop {
            self.sealing.session_made().await;
            if let Some(peers) = self.sealing.peers_if_changed() {
                keeping.keep_sealing_peers(&peers);
            }
        }
    }

    /// At start: the nodes this node held sessions with before (its store's list) seal to it
    /// under sessions it no longer has; a handshake with each moves them to a new one before
    /// their next sets are lost. Fifty every 50 ms.
    pub async fn recover_sealing_peers(self: Arc<Self>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        let peers = match keeping.sealing_peers() {
            Ok(peers) => peers,
            Err(e) => {
                warn!(error = %e, "the sealing peers kept in the store are not read");
                return;
            }
        };
        // Until each is sent, it counts as a handshake in flight (readiness waits for them).
        self.sealing.to_recover(peers.len());
        for chunk in peers.chunks(50) {
            for &peer in chunk {
                if peer != self.id
                    && self.topology.contains(peer)
                    && let Some(init) = self.sealing.recover(&self.keys, &self.stats, peer)
                {
                    self.send_handshake(init, Event::HandshakeInitSent);
                }
                self.sealing.recovered_one();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The sealing timer, forever: erase keys as they age, send unanswered Inits again, give up
    /// handshakes that had every attempt (and the sets waiting for them).
    pub async fn run_seal_timer(self: Arc<Self>) {
        let mut next_us = None;
        loop {
            self.sealing.sleep(next_us).await;
            let tick = self.sealing.tick(&self.keys, &self.stats);
            for init in tick.inits {
                self.send_handshake(init, Event::HandshakeInitResent);
            }
            for peer in tick.failed {
                warn!(%peer, "no answer to any handshake: the sets waiting for it are dropped");
                self.give_up_waiting(peer, Drop::HandshakeFailed);
            }
            next_us = tick.next_us;
        }
    }
}
