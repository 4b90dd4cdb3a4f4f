//! Sending through a cluster as a client does: hand a set to the source's control API and,
//! when asked to wait, collect the delivery report from the destination.

use crate::client::ClusterClient;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::SendRequest;
use cuberoute_protocol::wire::control::{Delivery, Request, Response};
use serde::Serialize;
use std::time::Duration;

/// How a client waits for a set.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendOptions {
    /// Collect the path of every copy.
    pub trace: bool,
    /// Wait this long for every copy at the destination.
    pub wait: Option<Duration>,
}

/// One destination, or several (a source-routed multicast).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Destinations {
    One(u64),
    Many(Vec<u64>),
}

/// What became of one set. Serialises to the schema of `cuberoute send --json`.
#[derive(Clone, Debug, Serialize)]
pub struct SendReport {
    pub from: u64,
    pub to: Destinations,
    pub k: u32,
    #[serde(skip)]
    pub seq: u64,
    /// Whether the set is one payload cut into k parts.
    #[serde(skip)]
    pub split: bool,
    pub copies: Vec<CopyReport>,
    /// The copies as delivered, payloads included (empty without waiting).
    #[serde(skip)]
    pub deliveries: Vec<Delivery>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CopyReport {
    pub index: u8,
    /// Where this copy goes, when the set has several destinations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
    pub delivered: bool,
    pub hops: Option<u32>,
    pub path: Option<Vec<u64>>,
    pub latency_us: Option<u64>,
}

impl SendReport {
    pub fn delivered(&self) -> usize {
        self.copies.iter().filter(|c| c.delivered).count()
    }

    /// The payload as the destination got it: a copy's, or the parts joined in index order.
    /// `None` unless every part of a split set (or at least one copy) arrived.
    pub fn payload(&self) -> Option<Vec<u8>> {
        if self.split {
            (self.deliveries.len() == self.k as usize).then(|| {
                self.deliveries
                    .iter()
                    .flat_map(|d| d.payload.clone())
                    .collect()
            })
        } else {
            self.deliveries.first().map(|d| d.payload.clone())
        }
    }
}

fn unexpected(node: NodeId, response: Response) -> ClientError {
    ClientError::Stream {
        node,
        message: format!("unexpected answer {response:?}"),
    }
}

impl ClusterClient {
    /// Send `payload` from `from` as `request` says (the front door decides how it travels),
    /// and with [`SendOptions::wait`] wait for the copies at their destinations.
    pub async fn send(
        &self,
        from: NodeId,
        request: SendRequest,
        payload: Vec<u8>,
        options: SendOptions,
    ) -> Result<SendReport, ClientError> {
        let topology = self.manifest.topology;
        let many = !request.is_node_to_node(topology);
        let split = request.split;
        let to = if many {
            Destinations::Many(request.to.iter().map(|v| v.0).collect())
        } else {
            Destinations::One(request.to[0].0)
        };
        let ask = Request::Send {
            request,
            payload,
            trace: options.trace,
        };
        let (seq, k, sent_at, copy_to) = match self.request(from, &ask).await? {
            Response::Accepted {
                seq,
                k,
                sent_at_us,
                to,
            } => (seq, k, sent_at_us, to),
            other => return Err(unexpected(from, other)),
        };
        let deliveries = match options.wait {
            None => Vec::new(),
            Some(wait) => {
                self.await_copies(from, (seq, sent_at), &copy_to, wait)
                    .await?
            }
        };
        let mut report = report(from, to, k, seq, &copy_to, many, deliveries);
        report.split = split;
        Ok(report)
    }

    /// Wait at every destination, at once, for the copies of the set (`from`, `seq`, sent at
    /// `sent_at_us`) meant for it.
    async fn await_copies(
        &self,
        from: NodeId,
        (seq, sent_at_us): (u64, u64),
        copy_to: &[NodeId],
        wait: Duration,
    ) -> Result<Vec<Delivery>, ClientError> {
        let mut destinations: Vec<NodeId> = copy_to.to_vec();
        destinations.sort();
        destinations.dedup();
        let asks = destinations.iter().map(|&d| {
            let copies = copy_to.iter().filter(|&&t| t == d).count() as u32;
            let request = Request::Await {
                src: from,
                seq,
                sent_at_us,
                copies,
                timeout_ms: wait.as_millis().min(u128::from(u32::MAX)) as u32,
            };
            async move {
                match self.request(d, &request).await? {
                    Response::Copies(copies) => Ok(copies),
                    other => Err(unexpected(d, other)),
                }
            }
        });
        let mut all = Vec::new();
        for copies in futures_util::future::join_all(asks).await {
            all.extend(copies?);
        }
        // A copy counts only at its own destination.
        all.retain(|d| copy_to.get(d.index as usize) == Some(&d.dst));
        all.sort_by_key(|d| d.index);
        Ok(all)
    }
}

fn report(
    from: NodeId,
    to: Destinations,
    k: u32,
    seq: u64,
    copy_to: &[NodeId],
    per_copy_destination: bool,
    deliveries: Vec<Delivery>,
) -> SendReport {
    let copies = (0..k as u8)
        .map(|index| {
            let to = per_copy_destination
                .then(|| copy_to.get(index as usize).map(|v| v.0))
                .flatten();
            match deliveries.iter().find(|d| d.index == index) {
                Some(d) => CopyReport {
                    index,
                    to,
                    delivered: true,
                    hops: Some(d.hops),
                    path: d.path.as_ref().map(|p| p.iter().map(|v| v.0).collect()),
                    latency_us: Some(d.latency_us),
                },
                None => CopyReport {
                    index,
                    to,
                    delivered: false,
                    hops: None,
                    path: None,
                    latency_us: None,
                },
            }
        })
        .collect();
    SendReport {
        from: from.0,
        to,
        k,
        seq,
        split: false,
        copies,
        deliveries,
    }
}
