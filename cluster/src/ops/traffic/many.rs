//! Many sets with one pair of requests a process: the sets from the nodes of one process go to
//! it in one [`Request::SendMany`], and the waits at the nodes of one process in one
//! [`Request::AwaitMany`] (each at most [`MAX_SETS_PER_REQUEST`] sets). A node host runs its
//! nodes behind one control endpoint; a request a set would cost it more than the sets' hops
//! (BENCHMARKS.md, "Several nodes per process").

use super::{DEFAULT_LIFE, SendOptions, SendReport, Sent, at_their_destinations, millis};
use crate::ops::cluster_client::ClusterClient;
use cuberoute_daemon::client::ClientError;
use cuberoute_protocol::delivery::Mode;
use cuberoute_protocol::wire::control::{
    Accepted, AwaitOne, ControlError, ControlErrorKind, Delivery, MAX_SETS_PER_REQUEST, Request,
    Response, SendOne, SendSet,
};
use cuberoute_protocol::{NodeId, SendRequest};
use futures_util::future::join_all;
use std::collections::HashMap;

/// One set to send: its source, what it asks for and its payload.
#[derive(Clone, Debug)]
pub struct SetToSend {
    pub from: NodeId,
    pub request: SendRequest,
    pub payload: Vec<u8>,
}

impl ClusterClient {
    /// Send every set with the same `options`, in one [`Request::SendMany`] a process of
    /// sources (in chunks of at most [`MAX_SETS_PER_REQUEST`] sets, all at once), and with
    /// [`SendOptions::wait`] wait for them in one [`Request::AwaitMany`] a process of
    /// destinations: each set's report, or why it was not sent or waited for, in the order
    /// given. One request that fails fails each of its sets.
    ///
    /// A report says which copies arrived, their hops and times; not their payloads or paths
    /// (`recv` reads those), nor how a reliable set ended (ask [`ClusterClient::settled`]).
    /// Waiting for a set that is not reliable at a destination known to be down would only
    /// time out: that set is [`ClientError::Down`] at once, and not sent.
    pub async fn send_many(
        &self,
        sets: Vec<SetToSend>,
        options: SendOptions,
    ) -> Vec<Result<SendReport, ClientError>> {
        let mut outcomes: Vec<Option<Result<(Sent, Accepted), ClientError>>> = Vec::new();
        let mut asked: Vec<Option<Sent>> = Vec::new();
        let mut asks = Vec::new();
        for (i, set) in sets.into_iter().enumerate() {
            if let Some(down) = self.down_for_waiting(&set.request, options) {
                outcomes.push(Some(Err(down)));
                asked.push(None);
                continue;
            }
            outcomes.push(None);
            asked.push(Some(Sent::of(
                self.manifest.topology,
                set.from,
                &set.request,
                &set.payload,
            )));
            let one = SendOne {
                from: set.from,
                set: SendSet {
                    request: set.request,
                    payload: set.payload,
                    trace: options.trace,
                    mode: options.mode,
                    deadline_ms: millis(options.life.unwrap_or(DEFAULT_LIFE)),
                    clear: options.clear,
                },
            };
            asks.push((i, set.from, one));
        }
        let taken = self
            .in_requests(asks, Request::SendMany, |answer| match answer {
                Response::SentMany(each) => Ok(each),
                other => Err(other),
            })
            .await;
        for (i, answer) in taken {
            let sent = asked[i].take().expect("each set is asked once");
            outcomes[i] = Some(match answer {
                Ok(Ok(accepted)) => Ok((sent, accepted)),
                Ok(Err(error)) => Err(self.refused(sent.from, error)),
                Err(e) => Err(e),
            });
        }
        let mut copies: Vec<Vec<Delivery>> = vec![Vec::new(); outcomes.len()];
        if let Some(wait) = options.wait {
            let mut waits = Vec::new();
            for (i, outcome) in outcomes.iter().enumerate() {
                if let Some(Ok((sent, accepted))) = outcome {
                    let each = awaits(sent.from, accepted, options.mode);
                    waits.extend(each.map(|one| ((i, one.dst), one.dst, one)));
                }
            }
            let timeout_ms = millis(wait);
            let make = |sets| Request::AwaitMany { sets, timeout_ms };
            let waited = self
                .in_requests(waits, make, |answer| match answer {
                    Response::CopiesMany(each) => Ok(each),
                    other => Err(other),
                })
                .await;
            for ((i, dst), answer) in waited {
                match answer {
                    Ok(Ok(delivered)) => copies[i].extend(delivered),
                    Ok(Err(error)) => outcomes[i] = Some(Err(self.refused(dst, error))),
                    Err(e) => outcomes[i] = Some(Err(e)),
                }
            }
        }
        outcomes
            .into_iter()
            .zip(copies)
            .map(|(outcome, copies)| {
                let (sent, accepted) = outcome.expect("every set has an outcome")?;
                let copies = at_their_destinations(copies, &accepted.to);
                Ok(sent.report(accepted, options, copies, None))
            })
            .collect()
    }

    /// Ask for `items` (each with its key and the node whose process takes it) in requests
    /// `make` builds: one process's items in each, at most [`MAX_SETS_PER_REQUEST`] of them,
    /// each asked of the first node of its process not known to be down (a node crashed
    /// inside its process no longer answers for it); the processes all at once, one process's
    /// requests one after the other, in the order of its items (so that a source takes its
    /// sets in the order given). Each item's key and its own answer, as `each` takes the
    /// answers out of a request's response (one an item, in order), or the request's error.
    async fn in_requests<K: Clone, T, A>(
        &self,
        items: Vec<(K, NodeId, T)>,
        make: impl Fn(Vec<T>) -> Request,
        each: impl Fn(Response) -> Result<Vec<A>, Response>,
    ) -> Vec<(K, Result<A, ClientError>)> {
        let (make, each) = (&make, &each);
        let processes = self
            .by_process(items)
            .into_iter()
            .map(|(at, chunks)| async move {
                let mut answers = Vec::new();
                for chunk in chunks {
                    let (keys, items): (Vec<K>, Vec<T>) = chunk.into_iter().unzip();
                    let answer = self.request(at, &make(items)).await;
                    let answer = answer.and_then(|response| match each(response) {
                        Ok(each) if each.len() == keys.len() => Ok(each),
                        Ok(each) => Err(self.refused(
                            at,
                            ControlError::new(
                                ControlErrorKind::BadRequest,
                                format!("{} answers to {} sets", each.len(), keys.len()),
                            ),
                        )),
                        Err(Response::Error(error)) => Err(self.refused(at, error)),
                        Err(other) => Err(self.unexpected(at, other)),
                    });
                    match answer {
                        Ok(each) => answers.extend(keys.into_iter().zip(each.into_iter().map(Ok))),
                        Err(e) => answers.extend(keys.into_iter().map(|key| (key, Err(e.clone())))),
                    }
                }
                answers
            });
        join_all(processes).await.into_iter().flatten().collect()
    }

    /// `items` by process, in the order given, in chunks of at most
    /// [`MAX_SETS_PER_REQUEST`], each process with the node of it to ask.
    #[allow(clippy::type_complexity)]
    fn by_process<K, T>(&self, items: Vec<(K, NodeId, T)>) -> Vec<(NodeId, Vec<Vec<(K, T)>>)> {
        let processes = self.process_of();
        let mut groups: Vec<(Option<usize>, Vec<(K, NodeId, T)>)> = Vec::new();
        let mut group_of: HashMap<Option<usize>, usize> = HashMap::new();
        for (key, node, item) in items {
            let process = processes.of.get(&node).copied();
            let g = *group_of.entry(process).or_insert_with(|| {
                groups.push((process, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push((key, node, item));
        }
        groups
            .into_iter()
            .map(|(process, group)| {
                let members = process.map_or(&[][..], |p| processes.nodes[p].as_slice());
                let ask = members
                    .iter()
                    .copied()
                    .find(|&n| self.known_down(n).is_none())
                    .unwrap_or(group[0].1);
                let mut group = group.into_iter().peekable();
                let mut chunks = Vec::new();
                while group.peek().is_some() {
                    let chunk = group.by_ref().take(MAX_SETS_PER_REQUEST);
                    chunks.push(chunk.map(|(key, _, item)| (key, item)).collect());
                }
                (ask, chunks)
            })
            .collect()
    }

    fn refused(&self, node: NodeId, error: ControlError) -> ClientError {
        ClientError::Refused {
            node,
            name: self.name(node),
            error,
        }
    }
}

/// The waits for one taken set: one at each of its destinations for the copies meant for it
/// (in a delivery mode: the one rebuilt payload).
fn awaits(from: NodeId, accepted: &Accepted, mode: Mode) -> impl Iterator<Item = AwaitOne> {
    let mut destinations = accepted.to.clone();
    destinations.sort();
    destinations.dedup();
    let (seq, sent_at_us, sealed) = (accepted.seq, accepted.sent_at_us, accepted.sealed);
    let copies_to: Vec<u32> = destinations
        .iter()
        .map(|&d| accepted.to.iter().filter(|&&t| t == d).count() as u32)
        .collect();
    destinations
        .into_iter()
        .zip(copies_to)
        .map(move |(dst, count)| AwaitOne {
            dst,
            src: from,
            seq,
            sent_at_us,
            copies: if mode.is_plain() { count } else { 1 },
            sealed,
            mode,
        })
}
