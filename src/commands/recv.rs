//! `cuberoute recv --node D [--follow] [--json] [--clear]`: read D's output buffer; with
//! `--consume [NAME]`, take the reliable sets D's store keeps, as the consumer NAME (sealed
//! ones only on a node that seals, unless `--clear`).

use super::args::{ClientArg, JsonArg};
use super::{runtime, usage};
use anyhow::Context;
use cuberoute_protocol::wire::control::{
    Delivery, MAX_CONSUMER_LEN, MAX_RECV_BATCH, Request, Response, is_consumer_name,
};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The node whose output buffer to read.
    #[arg(long)]
    pub node: String,
    /// Keep reading: print copies as they are delivered.
    #[arg(long, short)]
    pub follow: bool,
    #[command(flatten)]
    pub output: JsonArg,
    /// Start at this output index.
    #[arg(long, default_value_t = 0)]
    pub after: u64,
    /// Show the sets that came clear too, marked so (by default only sealed ones, unless the
    /// node does not seal: a clear set's source and payload are whatever a relay made them).
    /// With --consume: take the clear sets too.
    #[arg(long)]
    pub clear: bool,
    /// Take the reliable sets the node's store keeps, as the named consumer (default
    /// `default`): each is printed once, and what this consumer took is not given to it again,
    /// across restarts of the node. Plain sets are not in the store. On a node that seals, only
    /// sealed sets are taken unless --clear is given: the clear ones are passed over for good by
    /// this consumer (they stay in the store, for a consumer that asks for them from its
    /// start).
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "default", conflicts_with = "after")]
    pub consume: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    let node = super::parse_node(topology, &args.node)?;
    if let Some(consumer) = &args.consume
        && !is_consumer_name(consumer)
    {
        return Err(usage(format!(
            "--consume {consumer:?}: a consumer name is 1 to {MAX_CONSUMER_LEN} letters, digits, '-', '_' or '.'"
        )));
    }
    let mut after = args.after;
    // A consumer's place: what it printed is taken, told to the node with the next request.
    let mut taken = None;
    let mut printed = 0usize;
    let mut out = std::io::stdout().lock();
    loop {
        let wait_ms = if args.follow { 1000 } else { 0 };
        let request = match &args.consume {
            Some(consumer) => Request::Consume {
                consumer: consumer.clone(),
                taken,
                max: MAX_RECV_BATCH,
                wait_ms,
                clear: args.clear.then_some(true),
            },
            None => Request::Recv {
                after,
                max: MAX_RECV_BATCH,
                wait_ms,
                clear: args.clear.then_some(true),
            },
        };
        let (entries, next) = match runtime
            .block_on(cluster.request(node, &request))
            .context("recv failed")?
        {
            Response::Output {
                entries,
                next,
                overwritten,
            } => {
                // Each answer counts those past what the last one passed. Said on stderr:
                // what reads stdout gets the entries and nothing else.
                if overwritten > 0 {
                    eprintln!(
                        "{} overwritten at node {} before any client read {}",
                        crate::print::count(overwritten, "entry"),
                        crate::print::node(topology, node),
                        if overwritten == 1 { "it" } else { "them" }
                    );
                }
                (entries, next)
            }
            other => anyhow::bail!("unexpected answer {other:?}"),
        };
        for entry in &entries {
            if args.output.json {
                serde_json::to_writer(&mut out, &json(entry))?;
                writeln!(out)?;
            } else {
                let name = |v| crate::print::node(topology, v);
                let what = if !entry.mode.is_plain() {
                    let rejected = if entry.rejected_paths.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", paths {} rejected",
                            crate::print::path_numbers(&entry.rejected_paths)
                        )
                    };
                    format!("set ({}{rejected}) of {} pieces", entry.mode, entry.k)
                } else {
                    let kind = if entry.split { "part" } else { "copy" };
                    // Numbered from 1, as `send`, `monitor` and the view number them.
                    format!("{kind} {}/{}", u32::from(entry.index) + 1, entry.k)
                };
                writeln!(
                    out,
                    "#{} {}from {} seq {} {what} ({}, {} µs): {}",
                    entry.output_index,
                    if entry.sealed { "" } else { "CLEAR " },
                    name(entry.src),
                    entry.seq,
                    crate::print::count(entry.hops, "hop"),
                    entry.latency_us,
                    String::from_utf8_lossy(&entry.payload)
                )?;
            }
        }
        out.flush()?;
        printed += entries.len();
        after = next;
        if args.consume.is_some() && !entries.is_empty() {
            taken = Some(next);
        } else if entries.is_empty() && !args.follow {
            if printed == 0 && !args.output.json {
                // Said on stderr: what reads stdout gets the entries and nothing else.
                let node = crate::print::node(topology, node);
                match &args.consume {
                    Some(consumer) => eprintln!(
                        "nothing left for consumer {consumer} at node {node}: it took every entry"
                    ),
                    None if args.after == 0 => eprintln!("no entry at node {node}"),
                    None => eprintln!("no entry at node {node} after #{}", args.after),
                }
            }
            return Ok(());
        }
    }
}

fn json(d: &Delivery) -> serde_json::Value {
    serde_json::json!({
        "output_index": d.output_index,
        "from": d.src.0,
        "to": d.dst.0,
        "seq": d.seq,
        "index": d.index,
        "k": d.k,
        "split": d.split,
        "hops": d.hops,
        "latency_us": d.latency_us,
        "path": d.path.as_ref().map(|p| p.iter().map(|v| v.0).collect::<Vec<_>>()),
        "mode": d.mode.to_string(),
        "rejected_paths": d.rejected_paths,
        "sealed": d.sealed,
        "payload": String::from_utf8_lossy(&d.payload),
    })
}
