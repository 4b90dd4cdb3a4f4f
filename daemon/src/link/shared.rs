//! A link endpoint several nodes of one process share (a node host, [`crate::host`]): the
//! nodes whose configurations listen for links at one address.

use crate::shaper::Shaper;
use crate::tls::{self, Credentials};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// A link endpoint the nodes of a process that listen on its address share
/// ([`crate::tls::Credentials::shared_endpoint`]): one socket, one accept loop
/// ([`crate::accept::accept_links`], the host its owner) that hands each connection to the
/// node its dialler named, one shaper, whose rules (set through any of those nodes) apply to every datagram
/// the endpoint sends, and one bound of [`HANDSHAKES_IN_FLIGHT`] on the dials its nodes have
/// in flight.
#[derive(Clone)]
pub struct SharedLinks {
    pub endpoint: quinn::Endpoint,
    pub shaper: Arc<Shaper>,
    pub handshakes: Arc<Handshakes>,
}

/// The handshakes a shared link endpoint has in flight: its nodes' dials, at most
/// [`HANDSHAKES_IN_FLIGHT`], and the connections it is accepting.
pub struct Handshakes {
    dials: tokio::sync::Semaphore,
    accepting: AtomicUsize,
}

impl Handshakes {
    pub fn new(dials: usize) -> Handshakes {
        Handshakes {
            dials: tokio::sync::Semaphore::new(dials),
            accepting: AtomicUsize::new(0),
        }
    }

    /// A permit to dial, once fewer than the bound are in flight.
    pub async fn dial(
        &self,
    ) -> Result<tokio::sync::SemaphorePermit<'_>, tokio::sync::AcquireError> {
        self.dials.acquire().await
    }

    /// One connection being accepted, until the guard is dropped.
    pub fn accepting(&self) -> Accepting<'_> {
        self.accepting.fetch_add(1, Relaxed);
        Accepting(&self.accepting)
    }

    /// Whether a handshake is in flight on the endpoint, either way. A link's knock waits
    /// while one is (`crate::link::KNOCK_AFTER`): at a start the nodes of one process dial
    /// thousands of neighbours in another, whose links knock after a second while the dials
    /// wait their turn, and each knock is one more handshake in the queue (Q_12 in two
    /// processes: 1,355 knocks for its 2,048 links between them, links up in 4.4 s; none, 3.0).
    pub fn busy(&self) -> bool {
        self.accepting.load(Relaxed) > 0 || self.dials.available_permits() < HANDSHAKES_IN_FLIGHT
    }
}

/// A connection being accepted ([`Handshakes::accepting`]).
pub struct Accepting<'a>(&'a AtomicUsize);

impl Drop for Accepting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The dials a shared link endpoint has in flight at most. At a start every node of a process
/// dials its neighbours elsewhere at once, each through the one socket, and the other process's
/// one socket takes them all: unbounded, Q_12 in two processes lost 111,622 datagrams to full
/// receive buffers and its 2,048 links between them took 13 to 18 s to come up, each lost
/// Initial sent again a backed-off probe timeout later.
pub const HANDSHAKES_IN_FLIGHT: usize = 64;

impl SharedLinks {
    /// One link endpoint for each address several of the nodes `listening` (each its address
    /// and credentials) listen on (a launcher gives the nodes of one process one address:
    /// `cuberoute cluster up --nodes-per-process`), made with their certificates; a node alone
    /// on its address makes its own, as a process of one node.
    pub fn make<'a>(
        listening: impl IntoIterator<Item = (SocketAddr, &'a Credentials)>,
    ) -> Result<HashMap<SocketAddr, SharedLinks>, String> {
        let mut shared = HashMap::new();
        for (listen, members) in shared_addresses(listening) {
            let shaper = Arc::new(Shaper::default());
            let endpoint = Credentials::shared_endpoint(
                &members,
                tls::ALPN_LINK,
                listen,
                Some(shaper.clone()),
            )
            .map_err(|e| {
                format!(
                    "cannot listen for the links of {} nodes at {listen}: {e}",
                    members.len()
                )
            })?;
            let handshakes = Arc::new(Handshakes::new(HANDSHAKES_IN_FLIGHT));
            shared.insert(
                listen,
                SharedLinks {
                    endpoint,
                    shaper,
                    handshakes,
                },
            );
        }
        Ok(shared)
    }
}

/// The addresses several of the nodes `listening` (each its address and credentials) listen
/// on, each with their credentials: where a process's nodes share an endpoint (links here; the
/// control API's in [`crate::host`]).
pub fn shared_addresses<'a>(
    listening: impl IntoIterator<Item = (SocketAddr, &'a Credentials)>,
) -> Vec<(SocketAddr, Vec<&'a Credentials>)> {
    let mut by_address: BTreeMap<SocketAddr, Vec<&Credentials>> = BTreeMap::new();
    for (listen, credentials) in listening {
        by_address.entry(listen).or_default().push(credentials);
    }
    by_address
        .into_iter()
        .filter(|(_, m)| m.len() > 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_endpoint_is_busy_while_it_dials_or_accepts() {
        let handshakes = Handshakes::new(HANDSHAKES_IN_FLIGHT);
        assert!(!handshakes.busy());
        let dialling = handshakes.dial().await.unwrap();
        assert!(handshakes.busy(), "a dial in flight");
        drop(dialling);
        assert!(!handshakes.busy());
        let accepting = handshakes.accepting();
        let again = handshakes.accepting();
        drop(accepting);
        assert!(handshakes.busy(), "one still being accepted");
        drop(again);
        assert!(!handshakes.busy());
    }
}
