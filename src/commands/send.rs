//! `cuberoute send --from S --to D (--message TEXT | --file F) [--split | --single] [--wait] [--json]`,
//! and on Q_n the source-routed forms: `--to D1,D2,...` (one copy to each, over disjoint paths;
//! `--avoid F1,...` keeps off faulty nodes) and `--to D --constraint I` (the container).
//! On hhc:M, mc:K,M and rdn:BASE,K every send is source-routed: `--to D` sends k copies over
//! the k disjoint paths of `cuberoute paths`, `--to D1,D2,...` one copy to each.

use super::args::{ClientArg, JsonArg, PairArgs};
use super::{runtime, usage};
use crate::print;
use cuberoute_cluster::ClusterClient;
use cuberoute_cluster::ops::traffic::SendOptions;
use cuberoute_daemon::client::ClientError;
use cuberoute_daemon::roles;
use cuberoute_protocol::SendRequest;
use cuberoute_protocol::delivery::{MAX_CODED_PAYLOAD, Mode, Scheme};
use cuberoute_protocol::wire::control::ControlErrorKind;
use cuberoute_protocol::wire::control::MAX_PAYLOAD_LEN;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
#[command(
    mut_arg("to", |a| a.help(
        "The destination node; on q:N, hhc:M, mc:K,M and rdn:BASE,K also a list D1,D2,... \
         (a disjoint multicast)"
    )),
    mut_arg("json", |a| a.help("Print the report as one JSON line")),
)]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    #[command(flatten)]
    pub pair: PairArgs,
    /// Source-routed, on q:N: nodes the paths must avoid.
    #[arg(long, value_name = "F1,F2,...")]
    pub avoid: Option<String>,
    /// Source-routed, on q:N: keep every node of every path at weight I or I+1.
    #[arg(long, value_name = "I", conflicts_with = "avoid")]
    pub constraint: Option<u32>,
    /// The payload, as text.
    #[arg(long, conflicts_with = "file", required_unless_present = "file")]
    pub message: Option<String>,
    /// The payload, read from a file.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Cut the payload into k parts, one per path, instead of sending it on every path (one
    /// destination: the guarded-action protocol, a container, or a seed family's k paths).
    #[arg(long)]
    pub split: bool,
    /// Send one copy on one path instead of k copies on the k disjoint paths: the shortest of
    /// the k paths (the fewest hops; ties: the lowest index). For comparisons with k paths;
    /// plain or --reliable.
    #[arg(long, conflicts_with_all = ["split", "code", "secret", "byzantine"])]
    pub single: bool,
    /// Wait for the copies and print a delivery report with each copy's path.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits for the copies (a reliable set lives on at its source: --life).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// With --reliable: how long the source keeps the set, sending it again until the
    /// destination acknowledges it, whether or not the client still waits [default: 2m; at
    /// most 10m]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub life: Option<Duration>,
    /// Delivery mode: the destination's client gets the payload exactly once; the source sends
    /// the set again until the destination acknowledges it or its --life ends. Combines
    /// with --code, --secret and --byzantine. See docs/delivery.md.
    #[arg(long)]
    pub reliable: bool,
    /// Delivery mode: Reed-Solomon over the k paths, k-T data and T parity shards; any T paths
    /// may be lost (1 <= T <= k-1).
    #[arg(long, value_name = "T")]
    pub code: Option<u8>,
    /// Delivery mode: Shamir shares with threshold T+1, one per path; T relays on distinct
    /// paths learn nothing (1 <= T <= k-1).
    #[arg(long, value_name = "T")]
    pub secret: Option<u8>,
    /// Delivery mode: accept the payload only when T+1 paths agree (k >= 2T+1); with --code,
    /// by fingerprinted shards.
    #[arg(long, value_name = "T")]
    pub byzantine: Option<u8>,
    /// Send the set clear: not sealed end to end, so that every relay reads it and a relay can
    /// forge it (for experiments and comparisons; docs/security.md).
    #[arg(long)]
    pub clear: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    let payload = match (&args.message, &args.file) {
        (Some(text), _) => text.clone().into_bytes(),
        (None, Some(file)) => std::fs::read(file)
            .map_err(|e| usage(format!("cannot read --file {}: {e}", file.display())))?,
        (None, None) => return Err(usage("give --message or --file")),
    };
    if args.life.is_some() && !args.reliable {
        return Err(usage(
            "--life is how long the source keeps a reliable set: give it with --reliable",
        ));
    }
    let life = super::life(args.life)?;
    let mode = Mode {
        scheme: Scheme::from_options(args.code, args.secret, args.byzantine)
            .map_err(|e| usage(e.to_string()))?,
        reliable: args.reliable,
    };
    // The daemon checks the mode's own limit against k; these bound what a request may carry.
    let limit = if mode.is_plain() {
        MAX_PAYLOAD_LEN
    } else {
        MAX_CODED_PAYLOAD
    };
    if payload.len() > limit {
        return Err(usage(format!(
            "the payload has {} bytes; the limit is {limit} in {mode} mode",
            payload.len()
        )));
    }
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = ClusterClient::open(&dir).map_err(|e| usage(format!("{e:#}")))?;
    let topology = cluster.manifest.topology;
    let from = super::parse_node(topology, &args.pair.from)?;
    let to = super::parse_set(topology, &args.pair.to, "--to")?;
    let avoid = match &args.avoid {
        Some(text) => super::parse_set(topology, text, "--avoid")?,
        None => Vec::new(),
    };
    let options = SendOptions {
        trace: args.wait,
        wait: args.wait.then_some(args.timeout),
        mode,
        life: Some(life),
        clear: args.clear,
    };
    let request = SendRequest {
        to,
        avoid,
        constraint: args.constraint,
        split: args.split,
        single: args.single,
    };
    // The source's daemon decides how the request travels, or refuses it (exit 2).
    let sending = runtime.block_on(cluster.send(from, request, payload, options));
    let report = sending.map_err(|e| match &e {
        // Beyond the certificate's role: the daemon's one line, exit 1.
        ClientError::Refused { error, .. } if roles::is_role_refusal(error) => {
            anyhow::anyhow!(e.to_string())
        }
        // The daemon refused the request as malformed: the user's to fix.
        ClientError::Refused { error, .. }
            if !matches!(
                error.kind,
                ControlErrorKind::ShuttingDown | ControlErrorKind::Busy
            ) =>
        {
            usage(e.to_string())
        }
        _ => anyhow::Error::new(e).context("send failed"),
    })?;
    cluster.close();
    let mut out = std::io::stdout().lock();
    if args.output.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print::write_report(&mut out, topology, &report, args.wait)?;
    }
    if args.wait && !mode.is_plain() && !report.delivered {
        let lives_on = match report.acked {
            Some(true) => {
                String::from(": its destination acknowledged it since (`recv` there has it)")
            }
            Some(false) => String::from(": its source gave it up"),
            None if mode.reliable => format!(
                ": its source keeps sending it until it is acknowledged or its life of {} ends",
                humantime::format_duration(life)
            ),
            None => String::new(),
        };
        anyhow::bail!(
            "the set was not delivered within {} ({mode}){lives_on}",
            humantime::format_duration(args.timeout)
        );
    }
    if args.wait && mode.is_plain() && report.copies_delivered() < report.k as usize {
        anyhow::bail!(
            "{} of {} copies were not delivered within {:?}",
            report.k as usize - report.copies_delivered(),
            report.k,
            args.timeout
        );
    }
    Ok(())
}
