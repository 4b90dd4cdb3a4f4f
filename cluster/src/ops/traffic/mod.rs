//! Sending through a cluster as a client does: hand a set to the source's control API and,
//! when asked to wait, collect the delivery report from the destination.

use crate::ops::cluster_client::ClusterClient;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::SendRequest;
use cuberoute_protocol::delivery::{Mode, Settlement};
use cuberoute_protocol::wire::control::{
    Accepted, Delivery, MAX_WAIT_MS, Request, Response, SendSet,
};
use serde::Serialize;
use std::time::Duration;

mod many;
pub use many::SetToSend;

/// How a client sends a set and waits for it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendOptions {
    /// Collect the path of every copy.
    pub trace: bool,
    /// Wait this long for every copy at the destination (in a delivery mode: for the one
    /// rebuilt payload).
    pub wait: Option<Duration>,
    /// The delivery mode (plain by default).
    pub mode: Mode,
    /// How long the source of a reliable set keeps it, sending it again until the destination
    /// acknowledges it (its life); [`DEFAULT_LIFE`] unless given. Apart from the wait: a
    /// client may stop waiting long before the set's life ends.
    pub life: Option<Duration>,
    /// Ask the source not to seal the set (sealed by default, unless the node does not seal).
    pub clear: bool,
}

/// How long a reliable set is kept at its source unless the client says: two minutes, as a
/// Kafka producer keeps trying (`delivery.timeout.ms`), so that a partition shorter than that
/// loses nothing acknowledged or accepted.
pub const DEFAULT_LIFE: Duration = Duration::from_secs(120);

pub use cuberoute_daemon::config::MAX_LIFE;

/// How long a waiting client waits at least, after the set arrived, for the source's word on a
/// reliable set: its acknowledgement's way back, or its deadline's timer. Otherwise it waits
/// as long as the wait for the set had left: a chaos run, which waits a reliable set's whole
/// life, hears how every set ended, however many acknowledgements were lost on the way back.
const SETTLEMENT_WAIT: Duration = Duration::from_secs(5);

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
    /// The set's sequence id at its source: with `from` and `sent_at_us`, the set's name, as
    /// `recv` and a consumer print it.
    pub seq: u64,
    /// The source's clock when it took the set.
    pub sent_at_us: u64,
    /// Whether the set is one payload cut into k parts.
    #[serde(skip)]
    pub split: bool,
    pub copies: Vec<CopyReport>,
    /// The copies as delivered, payloads included (empty without waiting).
    #[serde(skip)]
    pub deliveries: Vec<Delivery>,
    /// The delivery mode, as `--delivery` writes it (`plain`, `reliable+code:1`, ...).
    #[serde(serialize_with = "display")]
    pub mode: Mode,
    /// Whether the payload reached the destination's client (with a wait): at least one copy
    /// in the plain mode, the rebuilt payload otherwise.
    pub delivered: bool,
    /// Plain: the copies that did not arrive within the wait; a delivery mode: 1 if the set
    /// did not, else 0.
    pub lost: u32,
    /// Reliable: how many times the source sent the set, once it was acknowledged or expired.
    pub attempts: Option<u32>,
    /// Whether the source's last word on a reliable set was an acknowledgement.
    pub acked: Option<bool>,
    /// The bytes of the k messages' payloads on the wire for one attempt.
    pub wire_bytes: u64,
    /// The payload's bytes (k copies of it cost k times as much).
    pub payload_bytes: u64,
    /// The paths whose pieces the destination rejected as forged or misshapen.
    pub rejected_paths: Vec<u8>,
    /// Whether the set went sealed end to end.
    pub sealed: bool,
}

fn display<S: serde::Serializer>(mode: &Mode, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(mode)
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
    /// Copies (or, in a delivery mode, rebuilt payloads) delivered.
    pub fn copies_delivered(&self) -> usize {
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

impl ClusterClient {
    fn unexpected(&self, node: NodeId, response: Response) -> ClientError {
        ClientError::Stream {
            node,
            name: self.name(node),
            message: format!("unexpected answer {response:?}"),
        }
    }

    /// Send `payload` from `from` as `request` says (the front door decides how it travels),
    /// and with [`SendOptions::wait`] wait for the copies at their destinations.
    ///
    /// Waiting for a set that is not reliable at a destination whose process is known to have
    /// exited would only time out: that is [`ClientError::Down`] at once, and nothing is sent.
    /// A reliable set is kept and sent again until the destination is back: waiting for it is
    /// what a reliable wait asks.
    pub async fn send(
        &self,
        from: NodeId,
        request: SendRequest,
        payload: Vec<u8>,
        options: SendOptions,
    ) -> Result<SendReport, ClientError> {
        if let Some(down) = self.down_for_waiting(&request, options) {
            return Err(down);
        }
        let sent = Sent::of(self.manifest.topology, from, &request, &payload);
        let mode = options.mode;
        let started = tokio::time::Instant::now();
        let ask = Request::Send(SendSet {
            request,
            payload,
            trace: options.trace,
            mode,
            deadline_ms: millis(options.life.unwrap_or(DEFAULT_LIFE)),
            clear: options.clear,
        });
        let accepted = match self.request(from, &ask).await? {
            Response::Accepted(accepted) => accepted,
            other => return Err(self.unexpected(from, other)),
        };
        let set = (accepted.seq, accepted.sent_at_us);
        let kind = (accepted.sealed, mode);
        let deliveries = match options.wait {
            None => Vec::new(),
            Some(wait) if mode.is_plain() => {
                self.await_copies(from, set, kind, &accepted.to, wait)
                    .await?
            }
            Some(wait) => {
                self.await_set(from, set, kind, accepted.to[0], wait)
                    .await?
            }
        };
        let settlement = match options.wait {
            // Delivered or not, the source says how the set ended: acknowledged (the
            // acknowledgement may still be on its way back), or given up at its deadline,
            // which has passed by now if the set never arrived. A source that cannot be asked
            // leaves it unsettled in the report.
            Some(wait) if mode.reliable => {
                let until = (started + wait).max(tokio::time::Instant::now() + SETTLEMENT_WAIT);
                self.settled_by(from, set, until).await
            }
            _ => None,
        };
        Ok(sent.report(accepted, options, deliveries, settlement))
    }

    /// Why a set may not be sent to be waited for, if a destination is known down (see
    /// [`ClusterClient::send`]).
    fn down_for_waiting(&self, request: &SendRequest, options: SendOptions) -> Option<ClientError> {
        if options.wait.is_none() || options.mode.reliable {
            return None;
        }
        let (node, why) = request
            .to
            .iter()
            .find_map(|&n| self.known_down(n).map(|why| (n, why)))?;
        Some(ClientError::Down {
            node,
            name: self.name(node),
            why,
        })
    }

    /// Wait at the destination `dst` for the one entry of a set in a delivery mode. A
    /// destination that does not answer is asked again until the wait is over: a reliable set
    /// may well outlive its destination's restart.
    async fn await_set(
        &self,
        from: NodeId,
        (seq, sent_at_us): (u64, u64),
        (sealed, mode): (bool, Mode),
        dst: NodeId,
        wait: Duration,
    ) -> Result<Vec<Delivery>, ClientError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let request = Request::Await {
                src: from,
                seq,
                sent_at_us,
                copies: 1,
                timeout_ms: millis(left),
                sealed,
                mode,
            };
            match self.request(dst, &request).await {
                Ok(Response::Copies(entries)) => return Ok(entries),
                Ok(other) => return Err(self.unexpected(dst, other)),
                // A destination known down may be restarted meanwhile (a chaos run).
                Err(
                    ClientError::Unreachable { .. }
                    | ClientError::Stream { .. }
                    | ClientError::Down { .. },
                ) if left > Duration::from_millis(500) => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(
                    ClientError::Unreachable { .. }
                    | ClientError::Stream { .. }
                    | ClientError::Down { .. },
                ) => {
                    return Ok(Vec::new());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// How the reliable set (`seq`, `sent_at_us`) from `from` ended, waiting up to `wait`.
    pub async fn settled(
        &self,
        from: NodeId,
        (seq, sent_at_us): (u64, u64),
        wait: Duration,
    ) -> Result<Option<Settlement>, ClientError> {
        let request = Request::Settled {
            seq,
            sent_at_us,
            wait_ms: millis(wait),
        };
        match self.request(from, &request).await? {
            Response::Settled(settled) => Ok(settled),
            other => Err(self.unexpected(from, other)),
        }
    }

    /// How the reliable set (`from`, `seq`, sent at `sent_at_us`) ended, asked until `until` (in
    /// requests no longer than a node waits for one); `None` if it had not settled by then, or
    /// its source could not be asked.
    async fn settled_by(
        &self,
        from: NodeId,
        set: (u64, u64),
        until: tokio::time::Instant,
    ) -> Option<Settlement> {
        loop {
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            let ask = left.min(Duration::from_millis(u64::from(MAX_WAIT_MS)));
            let asked = tokio::time::Instant::now();
            match self.settled(from, set, ask).await {
                Ok(Some(settled)) => return Some(settled),
                // A node answers `None` once the wait is over: ask again while time is left.
                Ok(None) if ask < left && asked.elapsed() >= ask => continue,
                _ => return None,
            }
        }
    }

    /// Wait at every destination, at once, for the copies of the set (`from`, `seq`, sent at
    /// `sent_at_us`) meant for it.
    async fn await_copies(
        &self,
        from: NodeId,
        (seq, sent_at_us): (u64, u64),
        (sealed, mode): (bool, Mode),
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
                timeout_ms: millis(wait),
                sealed,
                mode,
            };
            async move {
                match self.request(d, &request).await? {
                    Response::Copies(copies) => Ok(copies),
                    other => Err(self.unexpected(d, other)),
                }
            }
        });
        let mut all = Vec::new();
        for copies in futures_util::future::join_all(asks).await {
            all.extend(copies?);
        }
        Ok(at_their_destinations(all, copy_to))
    }
}

/// The copies that reached their own destinations (`copy_to[i]` for copy `i`: a copy counts
/// only there), in index order.
fn at_their_destinations(mut copies: Vec<Delivery>, copy_to: &[NodeId]) -> Vec<Delivery> {
    copies.retain(|d| copy_to.get(d.index as usize) == Some(&d.dst));
    copies.sort_by_key(|d| d.index);
    copies
}

/// What a client knows of a set before its source takes it, for its report.
struct Sent {
    from: NodeId,
    to: Destinations,
    /// Whether its copies go to several destinations (a source-routed multicast).
    many: bool,
    split: bool,
    payload_bytes: u64,
}

impl Sent {
    fn of(
        topology: cuberoute_protocol::Topology,
        from: NodeId,
        request: &SendRequest,
        payload: &[u8],
    ) -> Sent {
        let many = !request.is_node_to_node(topology);
        Sent {
            from,
            to: if many {
                Destinations::Many(request.to.iter().map(|v| v.0).collect())
            } else {
                Destinations::One(request.to[0].0)
            },
            many,
            split: request.split,
            payload_bytes: payload.len() as u64,
        }
    }

    /// The report of the set its source took as `accepted`, with the copies delivered (when
    /// the client waited) and how a reliable set ended (when it was asked).
    fn report(
        self,
        accepted: Accepted,
        options: SendOptions,
        deliveries: Vec<Delivery>,
        settlement: Option<Settlement>,
    ) -> SendReport {
        let mode = options.mode;
        let k = accepted.k;
        let mut report = report(
            self.from,
            self.to,
            k,
            accepted.seq,
            &accepted.to,
            self.many,
            deliveries,
        );
        report.split = self.split;
        report.sent_at_us = accepted.sent_at_us;
        report.mode = mode;
        report.wire_bytes = accepted.wire_bytes;
        report.sealed = accepted.sealed;
        report.payload_bytes = self.payload_bytes;
        report.attempts = settlement.map(Settlement::attempts);
        report.acked = settlement.map(|s| matches!(s, Settlement::Acked { .. }));
        if options.wait.is_some() {
            let got = report.copies_delivered() as u32;
            report.delivered = got > 0;
            report.lost = if mode.is_plain() {
                k - got
            } else {
                1 - got.min(1)
            };
        }
        if !mode.is_plain() {
            // One entry stands for the whole set: the piece that completed it.
            report.copies.retain(|c| c.delivered);
        }
        report.rejected_paths = report
            .deliveries
            .iter()
            .flat_map(|d| d.rejected_paths.iter().copied())
            .collect();
        report
    }
}

fn millis(d: Duration) -> u32 {
    d.as_millis().min(u128::from(u32::MAX)) as u32
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
        sent_at_us: 0,
        split: false,
        copies,
        deliveries,
        mode: Mode::PLAIN,
        delivered: false,
        lost: 0,
        attempts: None,
        acked: None,
        wire_bytes: 0,
        payload_bytes: 0,
        rejected_paths: Vec::new(),
        sealed: false,
    }
}
