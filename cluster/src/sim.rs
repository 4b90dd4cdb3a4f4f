//! `cuberoute sim`: a whole cluster in one process, on turmoil's simulated network and clock.
//! Every node is a turmoil host running the real daemon (`cuberoute_daemon::run_until`: its
//! links, buffers, acknowledgements, control API, QUIC and TLS) over the seam of
//! `cuberoute_daemon::net`; a client host sends sets through the control API, as
//! `cuberoute send` does, and counts what arrived. Time and every random draw (the daemons',
//! quinn's, turmoil's) come from the seed, so a run is a function of its options.

use crate::client::ClusterClient;
use crate::generate::{Addressing, Ports, generate, service_name};
use crate::layout::ClusterDir;
use crate::percentiles::Percentiles;
use crate::traffic::SendOptions;
use cuberoute_daemon::config::{DaemonArgs, NodeConfig};
use cuberoute_daemon::env;
use cuberoute_protocol::{NodeId, SendRequest, Topology};
use serde::Serialize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimOptions {
    pub topology: Topology,
    pub seed: u64,
    /// Simulated time of traffic (after the cluster is up).
    pub duration: Duration,
    /// Sets sent per simulated second.
    pub rate: f64,
    /// One-way latency of every datagram: drawn between these (turmoil's latency curve).
    pub min_latency: Duration,
    pub max_latency: Duration,
}

/// What a run did. The same options give the same report, byte for byte, but for the
/// wall-clock figures ([`SimReport::without_wall_clock`]).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SimReport {
    pub topology: String,
    pub seed: u64,
    pub sets_sent: u64,
    pub copies_expected: u64,
    pub copies_delivered: u64,
    pub sets_with_a_copy: u64,
    pub sets_lost: u64,
    pub sets_failed_to_send: u64,
    pub path_mismatches: u64,
    /// Copy latency (source `input` to delivery), in simulated µs.
    pub latency_us: Percentiles,
    /// Simulated time from the start until every link was up.
    pub ready_after_ms: u64,
    /// Simulated time of the whole run, and the wall-clock time it took.
    pub simulated_ms: u64,
    pub wall_ms: u64,
    pub simulated_seconds_per_wall_second: f64,
}

impl SimReport {
    /// The report without what depends on the machine (wall-clock time): what two runs of one
    /// seed must agree on.
    pub fn without_wall_clock(&self) -> SimReport {
        SimReport {
            wall_ms: 0,
            simulated_seconds_per_wall_second: 0.0,
            ..self.clone()
        }
    }
}

/// The client's tally, shared with the host that sends.
#[derive(Default)]
struct Tally {
    report: SimReport,
    latencies: Vec<u64>,
}

/// Run the simulation, generating the cluster's files (certificates, configurations,
/// manifests) into `dir`.
pub fn run(options: &SimOptions, dir: &ClusterDir) -> anyhow::Result<SimReport> {
    let topology = options.topology;
    generate(
        dir,
        topology,
        &Addressing::Simulated {
            ports: Ports::default(),
        },
    )?;
    // Everything random in the daemons (and quinn through them) draws from the seed.
    env::seed_simulation(Some(options.seed));
    let ready_timeout = Duration::from_secs(30 + topology.node_count() / 10);
    let mut sim = turmoil::Builder::new()
        .rng_seed(options.seed)
        .simulation_duration(ready_timeout + options.duration + Duration::from_secs(30))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(options.min_latency)
        .max_message_latency(options.max_latency)
        .udp_capacity(1 << 16)
        .build();
    for node in topology.nodes() {
        let config_path = dir
            .path()
            .join("nodes")
            .join(node.0.to_string())
            .join("node.toml");
        sim.host(service_name(node), move || {
            let args = DaemonArgs {
                config: Some(config_path.clone()),
                ..DaemonArgs::default()
            };
            async move {
                let mut config = NodeConfig::resolve(&args)?;
                // No metrics endpoint: it would bind a real TCP socket.
                config.metrics_listen = None;
                cuberoute_daemon::run_until(config, args, false, std::future::pending()).await?;
                Ok(())
            }
        });
    }
    let tally = Arc::new(Mutex::new(Tally::default()));
    {
        let (tally, dir, options) = (tally.clone(), dir.clone(), options.clone());
        sim.client("client", async move {
            drive(&dir, &options, ready_timeout, &tally).await?;
            Ok(())
        });
    }
    let wall = Instant::now();
    let result = sim.run();
    let simulated = sim.elapsed();
    env::seed_simulation(None);
    result.map_err(|e| anyhow::anyhow!("the simulation failed: {e}"))?;
    let mut tally = std::mem::take(&mut *tally.lock().expect("tally lock"));
    let mut report = std::mem::take(&mut tally.report);
    report.topology = topology.to_string();
    report.seed = options.seed;
    report.latency_us = Percentiles::of_us(tally.latencies.iter().copied());
    report.simulated_ms = simulated.as_millis() as u64;
    report.wall_ms = wall.elapsed().as_millis() as u64;
    report.simulated_seconds_per_wall_second =
        (simulated.as_secs_f64() / wall.elapsed().as_secs_f64().max(1e-9) * 100.0).round() / 100.0;
    Ok(report)
}

/// The client host: wait until every link is up, then send sets at the rate for the duration,
/// each between two nodes drawn from the seed, and wait for their copies.
async fn drive(
    dir: &ClusterDir,
    options: &SimOptions,
    ready_timeout: Duration,
    tally: &Mutex<Tally>,
) -> anyhow::Result<()> {
    let cluster = ClusterClient::open(dir)?;
    let topology = options.topology;
    let started = tokio::time::Instant::now();
    loop {
        let statuses = cluster.statuses(Duration::from_secs(2)).await;
        let (up, total) = crate::client::links_up(&statuses, &cluster.manifest);
        if up == total {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < ready_timeout,
            "{up} of {total} link ends up after {ready_timeout:?} of simulated time"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tally.lock().expect("tally lock").report.ready_after_ms = started.elapsed().as_millis() as u64;

    let sets = (options.rate * options.duration.as_secs_f64()).round() as u64;
    let interval = Duration::from_secs_f64(1.0 / options.rate.max(1e-3));
    let n = topology.node_count();
    let mut sends = Vec::new();
    for i in 0..sets {
        let from = NodeId(env::random_range(0..n));
        let to = loop {
            let to = NodeId(env::random_range(0..n));
            if to != from {
                break to;
            }
        };
        let cluster = cluster.clone();
        let payload = format!("sim {i}").into_bytes();
        sends.push(tokio::spawn(async move {
            let options = SendOptions {
                trace: true,
                wait: Some(Duration::from_secs(5)),
                ..SendOptions::default()
            };
            (
                from,
                to,
                cluster
                    .send(from, SendRequest::to(to), payload, options)
                    .await,
            )
        }));
        tokio::time::sleep(interval).await;
    }
    for send in sends {
        let (from, to, result) = send.await?;
        let mut tally = tally.lock().expect("tally lock");
        let t = &mut tally.report;
        t.sets_sent += 1;
        let report = match result {
            Ok(report) => report,
            Err(_) => {
                t.sets_failed_to_send += 1;
                continue;
            }
        };
        let expected = crate::route::constructed(topology, from, to);
        t.copies_expected += u64::from(report.k);
        let delivered = report.copies_delivered() as u64;
        t.copies_delivered += delivered;
        if delivered > 0 {
            t.sets_with_a_copy += 1;
        } else {
            t.sets_lost += 1;
        }
        for copy in report.copies.iter().filter(|c| c.delivered) {
            let path = copy
                .path
                .as_ref()
                .map(|p| p.iter().map(|&v| NodeId(v)).collect::<Vec<_>>());
            if path.as_ref() != expected.get(usize::from(copy.index)) {
                t.path_mismatches += 1;
            }
        }
        let latencies: Vec<u64> = report.copies.iter().filter_map(|c| c.latency_us).collect();
        tally.latencies.extend(latencies);
    }
    cluster.close();
    Ok(())
}
