//! A link endpoint several nodes of one process share (a node host, [`crate::host`]): the
//! nodes whose configurations listen for links at one address.

use crate::shaper::Shaper;
use crate::tls::{self, Credentials};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

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
    pub handshakes: Arc<tokio::sync::Semaphore>,
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
            let handshakes = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES_IN_FLIGHT));
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
