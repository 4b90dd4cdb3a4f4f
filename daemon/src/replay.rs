//! A replaying relay's second sends: the packets the relay faults kept for a replay
//! ([`crate::relay`], which decides which and when) sent again, unchanged, to the neighbour
//! each went to, through the node's normal send path. One task per node, asleep while nothing
//! is kept.

use crate::env::Instant;
use crate::node::Node;
use std::sync::Arc;
use tracing::debug;

/// Forever: send every kept packet when it is due, then sleep until the next is due or one is
/// kept.
pub async fn run(node: Arc<Node>) {
    let relay = &node.chaos().relay;
    loop {
        let (due, next) = relay.due_replays(Instant::now());
        for (to, packet) in due {
            debug!(%to, seq = packet.message.seq, "replay");
            if node.send_again(to, &packet) {
                relay.replayed();
            }
        }
        match next {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = relay.replay_kept() => {}
                }
            }
            None => relay.replay_kept().await,
        }
    }
}
