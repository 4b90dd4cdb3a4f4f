//! The node's store apart from deliveries: what a restart reads back (the latest entries into
//! the output buffer, this node's unsettled sets into the outbox), the retention's pruning, and
//! the settled sets no other write took along.

use super::Node;
use crate::delivery::Resend;
use crate::env::now_us;
use crate::stats::{Event, Stats};
use cuberoute_protocol::SendRequest;
use std::sync::Arc;
use tracing::warn;

impl Node {
    /// At start, from the store: the latest kept sets back in the output buffer (up to
    /// `output` of them) under the output indices they had, new entries after every index the
    /// last run may have handed out; and this node's unsettled sets back in the outbox, to be
    /// sent again with their own set keys (those past their deadline settle as expired).
    pub async fn resume_from_store(&self, output: usize) -> Result<(), String> {
        let Some(keeping) = &self.keeping else {
            return Ok(());
        };
        let (kept, next) = keeping.resume_output(output).await?;
        self.output.refill(kept, next);
        let now = now_us();
        let mut settled = Vec::new();
        for (key, kept) in keeping.unsettled()? {
            if kept.deadline_us <= now {
                Stats::count(&self.delivery.counters.sets_expired);
                settled.push(key);
                continue;
            }
            // A set of one piece where the pair has more paths was sent single-path.
            let single = kept.shape.k == 1 && kept.envelopes.len() == 1;
            let routes = SendRequest {
                single,
                ..SendRequest::to(kept.dst)
            }
            .routes(self.topology, self.id)
            .map_err(|e| format!("kept set {} to {}: {e}", key.seq, kept.dst))?;
            let resend = Resend {
                routes,
                envelopes: kept.envelopes.into_iter().map(|e| e.into_vec()).collect(),
                trace: kept.trace,
                sealed: kept.sealed,
                shape: kept.shape,
            };
            match self.delivery.keep(key, resend, kept.deadline_us) {
                Ok(()) => self.stats.event(Event::StoreResumed),
                Err(e) => {
                    warn!(seq = key.seq, error = %e, "a kept set does not fit the outbox: left in the store")
                }
            }
        }
        self.settle_kept(settled);
        Ok(())
    }

    /// Drop what the store's retention no longer keeps, every minute.
    pub async fn run_store_pruning(self: Arc<Self>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        loop {
            keeping.prune(now_us());
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
    }

    /// Forget in the store the settled sets no other write took along, a second after they
    /// began to wait (a node that settles nothing never wakes for it).
    pub async fn run_settled_flush(self: Arc<Self>) {
        let Some(keeping) = &self.keeping else {
            return;
        };
        loop {
            keeping.settled_waiting().await;
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            keeping.flush_settled();
        }
    }
}
