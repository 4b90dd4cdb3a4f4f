//! Logs and metrics. Logs go to stderr, filtered by `log_level` (or else `RUST_LOG`, or else
//! `info`), as text or one JSON object per line; a reload changes either. Metrics are served
//! for Prometheus at `metrics_listen`; the counters of [`crate::stats::Stats`] are copied into
//! them once a second while anything happens, and not at all while the daemon is idle.

use crate::config::LogFormat;
use crate::node::Node;
use metrics::{counter, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, fmt, reload};

/// How often counters are copied into the metrics registry while the daemon is busy.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The exporter's own upkeep timer, a fallback: [`publish`] runs the upkeep.
const UPKEEP_FALLBACK: Duration = Duration::from_secs(3600);

/// Delivery-latency histogram buckets, in seconds: 50 µs to 5 s.
const LATENCY_BUCKETS: [f64; 14] = [
    50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 500e-3, 1.0, 5.0,
];

/// The filters of the two log layers, text and JSON: the one in use has the log level, the
/// other is off. A reload sets them anew.
struct LogHandles {
    text: SetFilter,
    json: SetFilter,
}

type SetFilter = Box<dyn Fn(EnvFilter) -> Result<(), reload::Error> + Send + Sync>;

static LOG: OnceLock<LogHandles> = OnceLock::new();

/// Check a log level (an `EnvFilter` directive such as `info` or `warn,cuberoute_daemon=debug`).
pub fn parse_log_level(level: &str) -> Result<EnvFilter, String> {
    EnvFilter::try_new(level).map_err(|e| format!("{level:?} is not a log filter: {e}"))
}

fn filters(level: &str, format: LogFormat) -> (EnvFilter, EnvFilter) {
    let level = parse_log_level(level).unwrap_or_else(|_| EnvFilter::new("info"));
    match format {
        LogFormat::Text => (level, EnvFilter::new("off")),
        LogFormat::Json => (EnvFilter::new("off"), level),
    }
}

/// Install the log subscriber, logging at `level` in `format` on stderr. A second call (in
/// tests) is ignored.
pub fn init_logging(level: &str, format: LogFormat) {
    let (text, json) = filters(level, format);
    let (text, text_handle) = reload::Layer::new(text);
    let (json, json_handle) = reload::Layer::new(json);
    let installed = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_writer(std::io::stderr)
                .with_filter(text),
        )
        .with(
            fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .with_filter(json),
        )
        .try_init();
    if installed.is_ok() {
        let _ = LOG.set(LogHandles {
            text: Box::new(move |f| text_handle.reload(f)),
            json: Box::new(move |f| json_handle.reload(f)),
        });
    }
}

/// Log at `level` in `format` from now on (a reload). Without [`init_logging`] (in tests), does
/// nothing.
pub fn set_logging(level: &str, format: LogFormat) -> Result<(), String> {
    let Some(handles) = LOG.get() else {
        return Ok(());
    };
    let (text, json) = filters(level, format);
    (handles.text)(text).map_err(|e| e.to_string())?;
    (handles.json)(json).map_err(|e| e.to_string())
}

/// The installed recorder, for [`publish`] to run its upkeep.
static RECORDER: OnceLock<PrometheusHandle> = OnceLock::new();

/// Serve Prometheus metrics over HTTP at `addr`. Needs a tokio runtime.
pub fn install_metrics(addr: SocketAddr) -> anyhow::Result<()> {
    let cannot = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot serve metrics at {addr}: {e}");
    let (recorder, exporter) = PrometheusBuilder::new()
        .with_http_listener(addr)
        // The upkeep drains recorded histogram samples into their buckets. [`publish`] runs it
        // while the daemon is busy, so that samples never pile up, and the exporter's own timer
        // (5 s by default) would only wake an idle daemon for nothing.
        .upkeep_timeout(UPKEEP_FALLBACK)
        .set_buckets_for_metric(
            Matcher::Full("cuberoute_delivery_latency_seconds".into()),
            &LATENCY_BUCKETS,
        )?
        .build()
        .map_err(|e| cannot(&e))?;
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|e| cannot(&e))?;
    tokio::spawn(exporter);
    let _ = RECORDER.set(handle);
    Ok(())
}

/// Copy the node's counters and gauges into the metrics registry, forever: a second after
/// activity, then every second while there is activity or anything is queued, then once more
/// when all is quiet, and then not until the next activity.
pub async fn publish_loop(node: Arc<Node>) {
    publish(&node);
    loop {
        node.stats.activity().await;
        tokio::time::sleep(PUBLISH_EVERY).await;
        publish(&node);
        while node.input_queued() > 0 || node.link_queued() > 0 {
            tokio::time::sleep(PUBLISH_EVERY).await;
            publish(&node);
        }
    }
}

fn publish(node: &Node) {
    if let Some(recorder) = RECORDER.get() {
        recorder.run_upkeep();
    }
    let s = &node.stats;
    counter!("cuberoute_sets_accepted_total").absolute(s.sets_accepted.load(Relaxed));
    counter!("cuberoute_packets_sent_total").absolute(s.packets_sent.load(Relaxed));
    counter!("cuberoute_packets_forwarded_total").absolute(s.packets_forwarded.load(Relaxed));
    counter!("cuberoute_packets_delivered_total").absolute(s.packets_delivered.load(Relaxed));
    for (reason, n) in s.drops() {
        counter!("cuberoute_packets_dropped_total", "reason" => reason.as_str()).absolute(n);
    }
    for (event, n) in s.events() {
        counter!("cuberoute_events_total", "event" => event.as_str()).absolute(n);
    }
    gauge!(
        "cuberoute_build_info",
        "version" => env!("CARGO_PKG_VERSION"),
        "wire_version" => cuberoute_protocol::wire::VERSION.to_string()
    )
    .set(1.0);
    for link in node.links.values() {
        let l = link.status();
        let neighbour = link.neighbour.to_string();
        let up = if l.up { 1.0 } else { 0.0 };
        gauge!("cuberoute_link_up", "neighbour" => neighbour.clone()).set(up);
        gauge!("cuberoute_link_buffer_depth", "neighbour" => neighbour.clone())
            .set(l.queued as f64);
        counter!("cuberoute_link_frames_written_total", "neighbour" => neighbour.clone())
            .absolute(l.frames_written);
        counter!("cuberoute_link_frames_received_total", "neighbour" => neighbour.clone())
            .absolute(l.frames_received);
        counter!("cuberoute_link_frames_resent_total", "neighbour" => neighbour.clone())
            .absolute(l.frames_resent);
        if let Some(t) = &l.transport {
            gauge!("cuberoute_link_rtt_seconds", "neighbour" => neighbour)
                .set(t.rtt_us as f64 / 1e6);
        }
    }
    gauge!("cuberoute_buffered_bytes").set(node.budget.held() as f64);
    gauge!("cuberoute_buffered_bytes_limit").set(node.budget.limit() as f64);
    for (name, n) in node.delivery.counters.named() {
        counter!("cuberoute_delivery_total", "event" => name.trim_start_matches("delivery_"))
            .absolute(n);
    }
    let (sets, bytes) = node.delivery.outbox_load();
    gauge!("cuberoute_outbox_sets").set(sets as f64);
    gauge!("cuberoute_outbox_bytes").set(bytes as f64);
    let (sets, bytes) = node.delivery.inbox_load();
    gauge!("cuberoute_inbox_sets").set(sets as f64);
    gauge!("cuberoute_inbox_bytes").set(bytes as f64);
    gauge!("cuberoute_input_buffer_depth").set(node.input_queued() as f64);
    gauge!("cuberoute_output_buffer_depth").set(node.output.len() as f64);
}
