//! Judging a chaos run: what became of each set its traffic sent (`SetResult`, from the
//! set's await), what else reached the clients (the sweep of every node's output at the end,
//! `Judge`: sets never sent, other payloads, duplicates, entries of another mode or sealing),
//! what the capturing relays kept and leaked, what the forging relays did, and what a lost host
//! cost against what the placement promised. The running is [`run`](super::run), the totals
//! [`report`](super::report).

use crate::chaos::scenario::Phase;
use crate::chaos::schedule::Schedule;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::traffic::SendReport;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::delivery::{Mode, Settlement};
use cuberoute_protocol::wire::control::{
    Captured, Delivery, MAX_RECV_BATCH, NodeStatus, Request, Response,
};
use cuberoute_protocol::{NodeId, SendRequest, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What one set became.
#[derive(Clone, Debug)]
pub(super) struct SetResult {
    pub(super) phase: Phase,
    /// When it was sent, in ms from the start of the run.
    pub(super) sent_ms: f64,
    /// The copies (path indices) that arrived (plain sets).
    pub(super) indices: BTreeSet<u8>,
    /// The set's name at its source (for matching captures), and what was sent.
    pub(super) from: NodeId,
    pub(super) to: NodeId,
    pub(super) seq: u64,
    pub(super) sent_at_us: u64,
    pub(super) payload: Vec<u8>,
    pub(super) k: u32,
    /// Entries the destination's client got: copies (plain) or rebuilt payloads.
    pub(super) delivered: u32,
    /// Entries beyond one per copy (plain) or one per set (a delivery mode).
    pub(super) duplicates: u32,
    /// Delivered entries whose payload differs from what was sent while relays forged.
    pub(super) forged: u32,
    /// Reliable: how the source settled the set, if it did.
    pub(super) settlement: Option<Settlement>,
    pub(super) wire_bytes: u64,
    /// Delivered copies whose payload differs from what was sent.
    pub(super) corrupted: u32,
    /// Delivered copies whose path is neither the protocol's construction nor a path around
    /// dead links (a simple path of real links, disjoint from the set's other copies).
    pub(super) path_mismatches: u32,
    /// Delivered copies that went around dead links: not the construction's path, but a simple
    /// path of real links disjoint from the set's other copies.
    pub(super) rerouted: u32,
    /// The paths of the copies delivered, when traced (plain sets: one per copy).
    pub(super) paths: Vec<Vec<NodeId>>,
    /// Whether the copy on the shortest constructed path arrived (the single-path baseline).
    pub(super) shortest_delivered: bool,
    /// Each copy's latency from when the set was due (its [`late_us`](Self::late_us) in).
    pub(super) latencies_us: Vec<u64>,
    /// How late the set was sent against its schedule.
    pub(super) late_us: u64,
    /// The request failed (the source was unreachable).
    pub(super) failed: bool,
    /// The source refused the set at once, and why.
    pub(super) refused: Option<String>,
    /// Whether it went sealed.
    pub(super) sealed: bool,
    /// The output entries its await judged: (node, output index, copy index for a plain set).
    pub(super) judged: Vec<(NodeId, u64, Option<u8>)>,
}

impl SetResult {
    /// A set about to be sent, on `k` paths (0: the topology has none for it): nothing has
    /// arrived yet.
    pub(super) fn sent(
        (phase, sent_ms): (Phase, f64),
        (from, to): (NodeId, NodeId),
        payload: &[u8],
        k: u32,
    ) -> SetResult {
        SetResult {
            phase,
            sent_ms,
            indices: BTreeSet::new(),
            from,
            to,
            seq: 0,
            sent_at_us: 0,
            payload: payload.to_vec(),
            duplicates: 0,
            forged: 0,
            settlement: None,
            wire_bytes: 0,
            k,
            delivered: 0,
            corrupted: 0,
            path_mismatches: 0,
            rerouted: 0,
            paths: Vec::new(),
            shortest_delivered: false,
            latencies_us: Vec::new(),
            late_us: 0,
            failed: false,
            refused: None,
            sealed: false,
            judged: Vec::new(),
        }
    }

    /// The source could not be asked, or refused the set at once.
    pub(super) fn failed(&mut self, error: ClientError) {
        self.failed = true;
        if let ClientError::Refused { error, .. } = error {
            self.refused = Some(error.to_string());
        }
    }

    /// Judge what the set's await reported: each entry the destination's client got (a copy,
    /// or the whole set in a delivery mode `mode`) against the payload sent and the `expected`
    /// paths; a payload that differs is forged while relays were `forging`, else corrupted.
    pub(super) fn judge(
        &mut self,
        topology: Topology,
        report: &SendReport,
        expected: &[Vec<NodeId>],
        mode: Mode,
        forging: bool,
    ) {
        let shortest = (0..expected.len())
            .min_by_key(|&i| expected[i].len())
            .unwrap_or_default();
        if !mode.is_plain() {
            // A set in a delivery mode reaches the client as one entry.
            self.k = 1;
        }
        self.seq = report.seq;
        self.sent_at_us = report.sent_at_us;
        self.settlement = match (report.acked, report.attempts) {
            (Some(true), Some(attempts)) => Some(Settlement::Acked { attempts }),
            (Some(false), Some(attempts)) => Some(Settlement::Expired { attempts }),
            _ => None,
        };
        self.wire_bytes = report.wire_bytes;
        self.sealed = report.sealed;
        let distinct: BTreeSet<u8> = report.deliveries.iter().map(|d| d.index).collect();
        self.indices = distinct.clone();
        let once = if mode.is_plain() {
            distinct.len()
        } else {
            distinct.len().min(1)
        };
        self.duplicates = (report.deliveries.len() - once) as u32;
        for d in &report.deliveries {
            self.judged
                .push((d.dst, d.output_index, mode.is_plain().then_some(d.index)));
            self.delivered += 1;
            self.latencies_us.push(d.latency_us);
            if d.payload != self.payload {
                if forging {
                    self.forged += 1;
                } else {
                    self.corrupted += 1;
                }
            }
            let path_ok = d.path.as_ref() == expected.get(d.index as usize);
            if path_ok {
                if d.index as usize == shortest {
                    self.shortest_delivered = true;
                }
            } else if d
                .path
                .as_ref()
                .is_some_and(|p| is_route(topology, report.from, d.dst, p))
            {
                self.rerouted += 1;
            } else {
                self.path_mismatches += 1;
            }
            if let Some(path) = &d.path {
                self.paths.push(path.clone());
            }
        }
        // Copies around dead links must still be internally disjoint.
        if self.rerouted > 0 && !internally_disjoint(&self.paths) {
            self.path_mismatches += self.rerouted;
            self.rerouted = 0;
        }
    }
}

/// Whether `path` is a simple path of real links from `from` to `to`.
pub(super) fn is_route(topology: Topology, from: u64, to: NodeId, path: &[NodeId]) -> bool {
    let distinct: BTreeSet<NodeId> = path.iter().copied().collect();
    path.len() >= 2
        && path[0] == NodeId(from)
        && path[path.len() - 1] == to
        && distinct.len() == path.len()
        && path.windows(2).all(|w| topology.is_adjacent(w[0], w[1]))
}

/// Whether no two of `paths` share an inner node.
pub(super) fn internally_disjoint(paths: &[Vec<NodeId>]) -> bool {
    let mut seen = BTreeSet::new();
    paths
        .iter()
        .flat_map(|p| p[1..p.len().saturating_sub(1)].iter())
        .all(|v| seen.insert(*v))
}

/// What the forging relays did: packets rewritten, by what, and packets sent again.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Forgeries {
    pub payload: u64,
    pub header: u64,
    pub source: u64,
    pub attempt: u64,
    pub replayed: u64,
}

/// The end-of-run sweep: every node's output entries since the run started (paged
/// `Request::Recv`, clear entries included), judged against what the run sent. Entries an
/// await judged already are not judged again.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Sweep {
    /// Entries read.
    pub entries: u64,
    /// Entries of the run's sealing and mode that no await judged, naming a set the run never
    /// sent (forged, or corrupted in a run without forging relays) ...
    pub unknown_sets: u64,
    /// ... or a set it sent, with another payload or at another node ...
    pub other_payloads: u64,
    /// ... or a copy (plain) or set (a mode) the client had already got: duplicates.
    pub duplicates: u64,
    /// Entries in another mode than the run's, or clear in a sealed run: a client waiting for
    /// the run's sets never takes them (`Await` names the mode and sealing). The run sends
    /// nothing else, so a relay made each of them up: with the seal off, a relay that rewrites
    /// a piece's mode makes a set of another shape (docs/delivery.md).
    pub not_taken: u64,
    /// Entries overwritten before the sweep read them, which it could not judge.
    pub missed: u64,
    /// Nodes whose output could not be read.
    pub nodes_unread: u64,
}

/// Which entries the sweep counts as one copy (plain) or one set (a mode) a client got:
/// (node, source, sequence id, send time, the copy index of a plain set).
type EntryGroup = (NodeId, NodeId, u64, u64, Option<u8>);

/// A set's name: source, sequence id, send time.
type SetName = (NodeId, u64, u64);

/// Judges output entries one by one ([`Judge::entry`]) against the sets a run sent and the
/// entries its awaits judged.
pub(super) struct Judge {
    sealed: bool,
    mode: Mode,
    /// Each set sent: its destination and payload.
    sent: BTreeMap<SetName, (NodeId, Vec<u8>)>,
    /// The entries awaits judged, by node, output index and set: an output index alone may
    /// name another entry in a restarted node's output.
    judged: BTreeSet<(NodeId, u64, SetName)>,
    judged_groups: BTreeSet<EntryGroup>,
    /// Entries of each group no await judged.
    unjudged: BTreeMap<EntryGroup, u64>,
    sweep: Sweep,
}

impl Judge {
    /// For a run whose sets went `sealed` in `mode`.
    pub(super) fn new(sealed: bool, mode: Mode, results: &[SetResult]) -> Judge {
        let mut judge = Judge {
            sealed,
            mode,
            sent: BTreeMap::new(),
            judged: BTreeSet::new(),
            judged_groups: BTreeSet::new(),
            unjudged: BTreeMap::new(),
            sweep: Sweep::default(),
        };
        for r in results.iter().filter(|r| !r.failed) {
            judge
                .sent
                .insert((r.from, r.seq, r.sent_at_us), (r.to, r.payload.clone()));
            for &(node, output_index, index) in &r.judged {
                judge
                    .judged
                    .insert((node, output_index, (r.from, r.seq, r.sent_at_us)));
                judge
                    .judged_groups
                    .insert((node, r.from, r.seq, r.sent_at_us, index));
            }
        }
        judge
    }

    /// Judge one entry of `node`'s output.
    pub(super) fn entry(&mut self, node: NodeId, d: &Delivery) {
        self.sweep.entries += 1;
        if d.sealed != self.sealed || d.mode != self.mode {
            self.sweep.not_taken += 1;
            return;
        }
        let group = (
            node,
            d.src,
            d.seq,
            d.sent_at_us,
            self.mode.is_plain().then_some(d.index),
        );
        let name = (d.src, d.seq, d.sent_at_us);
        if self.judged.contains(&(node, d.output_index, name)) {
            return;
        }
        *self.unjudged.entry(group).or_default() += 1;
        match self.sent.get(&name) {
            None => self.sweep.unknown_sets += 1,
            Some((to, payload)) if *to != node || *payload != d.payload => {
                self.sweep.other_payloads += 1;
            }
            Some(_) => {}
        }
    }

    /// `n` entries overwritten before they could be read.
    pub(super) fn missed(&mut self, n: u64) {
        self.sweep.missed += n;
    }

    /// What was found. A group's entries beyond the first the client got are duplicates (the
    /// first may be an awaited one, already judged).
    pub(super) fn done(mut self) -> Sweep {
        self.sweep.duplicates = self
            .unjudged
            .iter()
            .map(|(group, &n)| n - u64::from(!self.judged_groups.contains(group)))
            .sum();
        self.sweep
    }
}

/// What one lost host cost the sets sent while it was gone. A path "avoids" the host when no
/// node strictly between its ends is on it: the placement promises that its copy arrives.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct HostLossOutcome {
    /// `h1`, `h2`, ...
    pub host: String,
    pub nodes: Vec<u64>,
    /// Sets whose two ends were on other hosts.
    pub sets_between_others: u64,
    /// ... of which some path avoided the host (the placement promised a copy) ...
    pub promised_a_copy: u64,
    /// ... and of those, how many got one.
    pub kept_a_copy: u64,
    /// Sets none of whose paths avoided the host; and of those, how many got a copy all the
    /// same (held in a buffer until the host was back, within the wait).
    pub promised_none: u64,
    pub got_one_anyway: u64,
    /// Plain runs: copies on constructed paths that avoid the host (what the placement
    /// promised), and copies that arrived on paths avoiding it: those, and those a source sent
    /// around the host's dead links (so more can arrive than were promised).
    pub copies_promised: u64,
    pub copies_kept: u64,
    /// Sets that missed a copy on a path avoiding the host (the promise broken).
    pub below_promise: u64,
    /// Reliable runs: sets sent to a node on the lost host, and how many arrived (once it was
    /// back).
    pub sets_to_lost_host: u64,
    pub delivered_to_lost_host: u64,
    /// The first few sets below the promise, to tell why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<MissedSet>,
}

/// A set below the placement's promise: the paths that avoided the lost host, and what came.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct MissedSet {
    pub from: u64,
    pub to: u64,
    /// When it was sent, in ms from the start of the run.
    pub sent_ms: u64,
    /// The constructed paths that avoid the lost host.
    pub promised: Vec<Vec<u64>>,
    /// The copies that arrived: their paths when traced, else their indices.
    pub arrived: Vec<Vec<u64>>,
    pub indices: Vec<u8>,
}

/// How many [`MissedSet`]s an outcome keeps.
const MISSED_KEPT: usize = 8;

pub(super) fn host_loss_outcome(
    topology: Topology,
    (host, lost): (usize, &[NodeId]),
    also: &Schedule,
    reliable: bool,
    results: &[SetResult],
) -> HostLossOutcome {
    // A path through a node the run crashed or a link it cut is not promised either.
    let spared = |p: &Vec<NodeId>| {
        (p.len() < 3
            || p[1..p.len() - 1]
                .iter()
                .all(|v| !lost.contains(v) && !also.crashed.contains(v)))
            && p.windows(2)
                .all(|l| !also.cut.contains(&(l[0], l[1])) && !also.cut.contains(&(l[1], l[0])))
    };
    let mut out = HostLossOutcome {
        host: crate::launch::swarm::stack::host_name(host),
        nodes: lost.iter().map(|n| n.0).collect(),
        ..HostLossOutcome::default()
    };
    for r in results.iter().filter(|r| r.phase == Phase::WithFaults) {
        if lost.contains(&r.to) {
            out.sets_to_lost_host += 1;
            out.delivered_to_lost_host += u64::from(r.delivered > 0);
            continue;
        }
        if lost.contains(&r.from) || also.crashed.contains(&r.from) || also.crashed.contains(&r.to)
        {
            continue;
        }
        out.sets_between_others += 1;
        let Ok(system) = SendRequest::to(r.to).route_system(topology, r.from) else {
            continue;
        };
        let avoiding: Vec<u8> = system
            .paths
            .iter()
            .enumerate()
            .filter(|(_, p)| spared(p))
            .map(|(i, _)| i as u8)
            .collect();
        if avoiding.is_empty() {
            out.promised_none += 1;
            out.got_one_anyway += u64::from(r.delivered > 0);
            continue;
        }
        out.promised_a_copy += 1;
        out.kept_a_copy += u64::from(r.delivered > 0);
        // A reliable set is judged as a whole: it arrives once, whatever path brought it.
        let missed = if reliable {
            r.delivered == 0
        } else {
            // The copies that arrived on paths avoiding the host: the constructed ones the
            // placement counted on, or others a source took around the host's dead links.
            let kept = if r.paths.is_empty() {
                avoiding.iter().filter(|i| r.indices.contains(i)).count()
            } else {
                let around: BTreeSet<&Vec<NodeId>> = r
                    .paths
                    .iter()
                    .filter(|p| p.len() < 3 || p[1..p.len() - 1].iter().all(|v| !lost.contains(v)))
                    .collect();
                around.len()
            };
            out.copies_promised += avoiding.len() as u64;
            out.copies_kept += kept as u64;
            kept < avoiding.len()
        };
        out.below_promise += u64::from(missed);
        if missed && out.missed.len() < MISSED_KEPT {
            let ids = |p: &Vec<NodeId>| p.iter().map(|v| v.0).collect();
            out.missed.push(MissedSet {
                from: r.from.0,
                to: r.to.0,
                sent_ms: r.sent_ms as u64,
                promised: avoiding
                    .iter()
                    .map(|&i| ids(&system.paths[usize::from(i)]))
                    .collect(),
                arrived: r.paths.iter().map(ids).collect(),
                indices: r.indices.iter().copied().collect(),
            });
        }
    }
    out
}

/// Where each node's output stands: the index its next entry will have (a `Recv` from beyond
/// the newest answers with it). Nodes that do not answer are left out (swept from 0).
pub(super) async fn output_cursors(
    client: &ClusterClient,
    nodes: &[NodeId],
) -> BTreeMap<NodeId, u64> {
    let ask = Request::Recv {
        after: u64::MAX,
        max: 1,
        wait_ms: 0,
        clear: Some(true),
    };
    let requests = nodes.iter().map(|&id| (id, ask.clone())).collect();
    client
        .request_each(requests, Duration::from_secs(3))
        .await
        .into_iter()
        .filter_map(|(id, answer)| match answer {
            Ok(Response::Output { next, .. }) => Some((id, next)),
            _ => None,
        })
        .collect()
}

/// Read every node's output from `from` on, clear entries included, 16 nodes at a time, and
/// judge each entry; entries overwritten before they were read are counted missed.
pub(super) async fn sweep_outputs(
    client: &ClusterClient,
    from: &BTreeMap<NodeId, u64>,
    judge: &mut Judge,
) {
    use futures_util::StreamExt;
    let reads = futures_util::stream::iter(
        from.iter()
            .map(|(&id, &after)| async move { (id, read_output(client, id, after).await) }),
    )
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    for (id, read) in reads {
        match read {
            Ok((entries, missed)) => {
                judge.missed(missed);
                for d in &entries {
                    judge.entry(id, d);
                }
            }
            Err(_) => judge.sweep.nodes_unread += 1,
        }
    }
}

/// Node `id`'s output entries from index `after` on, and how many of those were overwritten
/// before they could be read.
async fn read_output(
    client: &ClusterClient,
    id: NodeId,
    mut after: u64,
) -> anyhow::Result<(Vec<Delivery>, u64)> {
    let (mut all, mut missed) = (Vec::new(), 0);
    loop {
        let ask = Request::Recv {
            after,
            max: MAX_RECV_BATCH,
            wait_ms: 0,
            clear: Some(true),
        };
        let answer = tokio::time::timeout(Duration::from_secs(10), client.request(id, &ask))
            .await
            .map_err(|_| anyhow::anyhow!("node {}: no answer within 10 s", client.name(id)))??;
        match answer {
            Response::Output {
                entries,
                next,
                overwritten,
            } => {
                // Each page counts those from where it starts, past the last page's (output
                // indices have gaps: the entries cannot tell).
                missed += overwritten;
                if entries.is_empty() {
                    return Ok((all, missed));
                }
                all.extend(entries);
                after = after.max(next);
            }
            Response::Error(e) => anyhow::bail!("node {}: {e}", client.name(id)),
            other => anyhow::bail!("node {}: unexpected answer {other:?}", client.name(id)),
        }
    }
}

/// What the forging `relays` did between the two snapshots.
pub(super) fn forgeries(
    before: &BTreeMap<NodeId, NodeStatus>,
    after: &BTreeMap<NodeId, NodeStatus>,
    relays: &[NodeId],
) -> Forgeries {
    let mut f = Forgeries::default();
    for id in relays {
        let Some(now) = after.get(id) else { continue };
        let zero = Default::default();
        let then = before
            .get(id)
            .filter(|b| b.incarnation == now.incarnation)
            .map_or(&zero, |b| &b.chaos);
        let (c, t) = (&now.chaos, then);
        f.payload += c.forged_payload - t.forged_payload;
        f.header += c.forged_header - t.forged_header;
        f.source += c.forged_source - t.forged_source;
        f.attempt += c.forged_attempt - t.forged_attempt;
        f.replayed += c.replayed - t.replayed;
    }
    f
}

/// How many payloads the capturing `relays` kept, and how many of those hold their set's
/// payload or any 8-byte run of it.
pub(super) async fn captures_and_leaks(
    client: &ClusterClient,
    relays: &[NodeId],
    results: &[SetResult],
) -> anyhow::Result<(u64, u64)> {
    let sent: BTreeMap<(NodeId, u64, u64), &[u8]> = results
        .iter()
        .map(|r| ((r.from, r.seq, r.sent_at_us), r.payload.as_slice()))
        .collect();
    let (mut captured, mut leaked) = (0, 0);
    for &relay in relays {
        for c in captured_by(client, relay).await? {
            let Some(payload) = sent.get(&(c.src, c.seq, c.sent_at_us)) else {
                continue;
            };
            captured += 1;
            leaked += u64::from(leaks(&c.payload, payload));
        }
    }
    Ok((captured, leaked))
}

/// Whether `captured` holds `payload` whole or any 8-byte run of it.
pub fn leaks(captured: &[u8], payload: &[u8]) -> bool {
    if payload.len() < 8 {
        return !payload.is_empty() && captured.windows(payload.len()).any(|w| w == payload);
    }
    let runs: std::collections::HashSet<&[u8]> = captured.windows(8).collect();
    payload.windows(8).any(|w| runs.contains(w))
}

/// Every payload node `id` kept as a capturing relay, oldest first (paged through
/// `Request::Captured`).
pub async fn captured_by(client: &ClusterClient, id: NodeId) -> anyhow::Result<Vec<Captured>> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        match client
            .request(id, &Request::Captured { after, max: 1024 })
            .await?
        {
            Response::Captured { entries, next } => {
                if entries.is_empty() {
                    return Ok(all);
                }
                all.extend(entries);
                after = next;
            }
            Response::Error(e) => anyhow::bail!("node {}: {e}", client.name(id)),
            other => anyhow::bail!("node {}: unexpected answer {other:?}", client.name(id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(from: u64, to: u64, seq: u64, payload: &[u8]) -> SetResult {
        let mut r = SetResult::sent(
            (Phase::WithFaults, seq as f64),
            (NodeId(from), NodeId(to)),
            payload,
            3,
        );
        (r.seq, r.sent_at_us) = (seq, 100 + seq);
        r
    }

    /// A lost host's outcome counts, set by set, the copies on paths that avoid it: all of
    /// them arrived (the promise kept), one missing (below it), none promised, and a set to
    /// the lost host.
    #[test]
    fn a_path_around_dead_links_is_a_simple_path_of_real_links_disjoint_from_the_others() {
        let q3: Topology = "q:3".parse().unwrap();
        let p = |v: &[u64]| v.iter().map(|&n| NodeId(n)).collect::<Vec<_>>();
        assert!(is_route(q3, 0, NodeId(7), &p(&[0, 2, 6, 7])));
        assert!(!is_route(q3, 0, NodeId(7), &p(&[0, 3, 7])), "not links");
        assert!(
            !is_route(q3, 0, NodeId(7), &p(&[0, 2, 0, 1, 3, 7])),
            "not simple"
        );
        assert!(
            !is_route(q3, 1, NodeId(7), &p(&[0, 2, 6, 7])),
            "another source"
        );
        assert!(internally_disjoint(&[p(&[0, 2, 6, 7]), p(&[0, 4, 5, 7])]));
        assert!(!internally_disjoint(&[p(&[0, 2, 6, 7]), p(&[0, 4, 6, 7])]));
    }

    #[test]
    fn a_lost_hosts_outcome_is_judged_path_by_path() {
        let topology: Topology = "q:3".parse().unwrap();
        let lost = [NodeId(1), NodeId(2)];
        let avoiding = |from: u64, to: u64| -> BTreeSet<u8> {
            let system = SendRequest::to(NodeId(to))
                .route_system(topology, NodeId(from))
                .unwrap();
            system
                .paths
                .iter()
                .enumerate()
                .filter(|(_, p)| p[1..p.len() - 1].iter().all(|v| !lost.contains(v)))
                .map(|(i, _)| i as u8)
                .collect()
        };
        // 0 -> 7: paths through 1, 2 and 4; one avoids the lost host.
        let promised = avoiding(0, 7);
        assert_eq!(promised.len(), 1, "{promised:?}");
        let mut kept = result(0, 7, 1, b"a");
        kept.indices = promised.clone();
        kept.delivered = 1;
        let mut missed = result(0, 7, 2, b"b");
        missed.delivered = 0;
        // A set to a node on the lost host.
        let mut to_lost = result(0, 2, 3, b"c");
        to_lost.delivered = 0;
        let mut before = result(0, 7, 4, b"d");
        before.phase = Phase::FaultFree;
        let out = host_loss_outcome(
            topology,
            (1, &lost),
            &Schedule::default(),
            false,
            &[kept, missed, to_lost, before],
        );
        assert_eq!(out.host, "h2");
        assert_eq!(out.nodes, vec![1, 2]);
        assert_eq!(out.sets_between_others, 2);
        assert_eq!(out.promised_a_copy, 2);
        assert_eq!(out.kept_a_copy, 1);
        assert_eq!(out.copies_promised, 2);
        assert_eq!(out.copies_kept, 1);
        assert_eq!(out.below_promise, 1);
        assert_eq!(out.missed.len(), 1);
        assert_eq!((out.missed[0].from, out.missed[0].to), (0, 7));
        assert_eq!(out.missed[0].promised.len(), 1);
        assert!(out.missed[0].arrived.is_empty());
        assert_eq!((out.sets_to_lost_host, out.delivered_to_lost_host), (1, 0));
    }

    fn entry(
        output_index: u64,
        (from, to, seq): (u64, u64, u64),
        index: u8,
        payload: &[u8],
    ) -> Delivery {
        Delivery {
            output_index,
            src: NodeId(from),
            dst: NodeId(to),
            seq,
            sent_at_us: 100 + seq,
            index,
            k: 3,
            split: false,
            hops: 2,
            path: None,
            latency_us: 1,
            mode: Mode::PLAIN,
            rejected_paths: Vec::new(),
            sealed: false,
            payload: payload.to_vec(),
        }
    }

    /// A plain clear run: set 1 from 0 to 7 awaited (copies 0 and 1 judged); the sweep finds
    /// its third copy late (fine), that copy again (a duplicate), a copy of a set never sent
    /// and one with another payload (forged), and an entry of another mode (not taken).
    #[test]
    fn the_sweep_counts_what_the_awaits_did_not_judge_once() {
        let mut sent = result(0, 7, 1, b"pay 10");
        sent.judged = vec![(NodeId(7), 10, Some(0)), (NodeId(7), 11, Some(1))];
        let other = result(2, 7, 2, b"pay 20");
        let mut judge = Judge::new(false, Mode::PLAIN, &[sent, other]);
        let seven = NodeId(7);
        judge.entry(seven, &entry(10, (0, 7, 1), 0, b"pay 10"));
        judge.entry(seven, &entry(11, (0, 7, 1), 1, b"pay 10"));
        judge.entry(seven, &entry(12, (0, 7, 1), 2, b"pay 10"));
        judge.entry(seven, &entry(13, (0, 7, 1), 1, b"pay 10"));
        judge.entry(seven, &entry(14, (5, 7, 1), 0, b"pay 10"));
        judge.entry(seven, &entry(15, (2, 7, 2), 2, b"pay 99"));
        judge.entry(seven, &entry(16, (2, 7, 2 ^ 0x5a), 0, b"pay 20"));
        let mut reliable = entry(17, (2, 7, 2), 1, b"forged");
        reliable.mode = "reliable".parse().unwrap();
        judge.entry(seven, &reliable);
        let mut sealed = entry(18, (2, 7, 2), 1, b"pay 20");
        sealed.sealed = true;
        judge.entry(seven, &sealed);
        judge.missed(3);
        assert_eq!(
            judge.done(),
            Sweep {
                entries: 9,
                unknown_sets: 2,
                other_payloads: 1,
                duplicates: 1,
                not_taken: 2,
                missed: 3,
                nodes_unread: 0,
            }
        );
    }

    /// A restarted node numbers its output from 0 again: an entry at an index an await judged
    /// before the restart is judged anew when it is another set's.
    #[test]
    fn an_output_index_judged_before_a_restart_names_no_other_entry() {
        let mut sent = result(0, 7, 1, b"pay 10");
        sent.judged = vec![(NodeId(7), 0, Some(0))];
        let mut judge = Judge::new(false, Mode::PLAIN, &[sent]);
        judge.entry(NodeId(7), &entry(0, (3, 7, 9), 0, b"made up"));
        assert_eq!(judge.done().unknown_sets, 1);
    }

    /// In a delivery mode one entry is the whole set: a second entry of a set is a duplicate
    /// whatever its path; an entry at a node the set was not sent to is another payload.
    #[test]
    fn in_a_mode_a_set_counts_once_whatever_its_path() {
        let mode: Mode = "byzantine:1".parse().unwrap();
        let mut sent = result(0, 7, 1, b"x");
        sent.judged = vec![(NodeId(7), 4, None)];
        let mut judge = Judge::new(false, mode, &[sent]);
        for (at, index) in [(4, 0), (5, 2)] {
            let mut d = entry(at, (0, 7, 1), index, b"x");
            d.mode = mode;
            judge.entry(NodeId(7), &d);
        }
        let mut elsewhere = entry(9, (0, 6, 1), 0, b"x");
        elsewhere.mode = mode;
        judge.entry(NodeId(6), &elsewhere);
        let sweep = judge.done();
        assert_eq!(
            (sweep.duplicates, sweep.other_payloads),
            (1, 1),
            "{sweep:?}"
        );
    }
}
