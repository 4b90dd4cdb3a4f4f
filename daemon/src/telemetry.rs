//! Metrics, served for Prometheus at `metrics_listen`; the counters of [`crate::stats::Stats`]
//! are copied into them once a second while anything happens, and not at all while the daemon
//! is idle. (Logs are [`crate::logging`].)
//!
//! A node host serves one exporter, at its first node's `metrics_listen`, with every node's
//! metrics: each series of a hosted node carries `node="ID"` ([`as_node`]), added by a
//! recorder around the process's ([`Labelled`]) so that what a node records is written once,
//! whether it runs alone or hosted.

use crate::node::Node;
use crate::stats::Event;
use cuberoute_protocol::NodeId;
use metrics::{
    Counter, Gauge, Histogram, Key, KeyName, Label, Metadata, Recorder, SharedString, Unit,
    counter, gauge,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How often counters are copied into the metrics registry while the daemon is busy.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The exporter's own upkeep timer, a fallback: [`publish`] runs the upkeep.
const UPKEEP_FALLBACK: Duration = Duration::from_secs(3600);

/// Delivery-latency histogram buckets, in seconds: 50 µs to 5 s.
const LATENCY_BUCKETS: [f64; 14] = [
    50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 500e-3, 1.0, 5.0,
];

/// The installed recorder, for [`publish`] to run its upkeep.
static RECORDER: OnceLock<PrometheusHandle> = OnceLock::new();

/// When the upkeep last ran: once a [`PUBLISH_EVERY`] for the process, however many of its
/// nodes publish (it walks every histogram, one per node of a node host).
static LAST_UPKEEP: Mutex<Option<std::time::Instant>> = Mutex::new(None);

/// The label a hosted node's series carry: `node="ID"`.
pub fn node_label(id: NodeId) -> Label {
    Label::new("node", id.to_string())
}

/// Run `f` with what it records labelled `node` (a hosted node's, [`node_label`]), or as it is
/// (`None`: a node alone in its process).
pub fn as_node<T>(node: Option<&Label>, f: impl FnOnce() -> T) -> T {
    let Some(node) = node else {
        return f();
    };
    metrics::with_recorder(|inner| metrics::with_local_recorder(&Labelled { inner, node }, f))
}

/// The process's recorder, with one more label on every series.
struct Labelled<'a> {
    inner: &'a dyn Recorder,
    node: &'a Label,
}

impl Labelled<'_> {
    fn key(&self, key: &Key) -> Key {
        key.with_extra_labels(vec![self.node.clone()])
    }
}

impl Recorder for Labelled<'_> {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_counter(key, unit, description)
    }
    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_gauge(key, unit, description)
    }
    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_histogram(key, unit, description)
    }
    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.inner.register_counter(&self.key(key), metadata)
    }
    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.inner.register_gauge(&self.key(key), metadata)
    }
    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        self.inner.register_histogram(&self.key(key), metadata)
    }
}

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
/// when all is quiet, and then not until the next activity. A hosted node's carry `label`
/// ([`node_label`]).
pub async fn publish_loop(node: Arc<Node>, label: Option<Label>) {
    let mut series = Series::default();
    let mut publish = || as_node(label.as_ref(), || publish(&node, &mut series));
    publish();
    loop {
        node.stats().activity().await;
        tokio::time::sleep(PUBLISH_EVERY).await;
        publish();
        while node.input_queued() > 0 || node.link_queued() > 0 {
            tokio::time::sleep(PUBLISH_EVERY).await;
            publish();
        }
    }
}

/// Fold the histograms' samples into their buckets, at most once a [`PUBLISH_EVERY`] (a scrape
/// folds them too: this only keeps them from piling up).
fn upkeep() {
    let Some(recorder) = RECORDER.get() else {
        return;
    };
    let now = std::time::Instant::now();
    {
        let mut last = LAST_UPKEEP.lock().expect("upkeep lock");
        if last.is_some_and(|at| now.duration_since(at) < PUBLISH_EVERY / 2) {
            return;
        }
        *last = Some(now);
    }
    recorder.run_upkeep();
}

fn publish(node: &Node, series: &mut Series) {
    upkeep();
    let s = node.stats();
    series
        .counter("cuberoute_sets_accepted_total", NO_LABEL)
        .absolute(s.sets_accepted.load(Relaxed));
    series
        .counter("cuberoute_packets_sent_total", NO_LABEL)
        .absolute(s.packets_sent.load(Relaxed));
    series
        .counter("cuberoute_packets_forwarded_total", NO_LABEL)
        .absolute(s.packets_forwarded.load(Relaxed));
    series
        .counter("cuberoute_packets_delivered_total", NO_LABEL)
        .absolute(s.packets_delivered.load(Relaxed));
    for (reason, n) in s.drops() {
        series
            .counter(
                "cuberoute_packets_dropped_total",
                ("reason", reason.as_str()),
            )
            .absolute(n);
    }
    let events = s.events();
    for (event, n) in &events {
        series
            .counter("cuberoute_events_total", ("event", event.as_str()))
            .absolute(*n);
    }
    // Liveness's suspicions, and those the neighbour then proved wrong: before it was taken
    // for dead (heard from again), and after (it linked again as the same process).
    let count = |event| events.get(&event).copied().unwrap_or(0);
    series
        .counter("cuberoute_links_suspected_total", NO_LABEL)
        .absolute(count(Event::LinkSuspected));
    series
        .counter("cuberoute_link_probes_total", NO_LABEL)
        .absolute(count(Event::LinkProbeSent));
    series
        .counter("cuberoute_links_found_alive_total", ("after", "suspicion"))
        .absolute(count(Event::LinkFoundAlive));
    series
        .counter("cuberoute_links_found_alive_total", ("after", "down"))
        .absolute(count(Event::LinkDownFoundAlive));
    series
        .counter("cuberoute_links_found_alive_total", ("after", "silence"))
        .absolute(count(Event::LinkSilenceHeld));
    let agreed = s.key_agreements();
    series
        .counter("cuberoute_key_agreements_total", ("side", "seal"))
        .absolute(agreed.to_seal);
    series
        .counter("cuberoute_key_agreements_total", ("side", "open"))
        .absolute(agreed.to_open);
    let sealing = node.sealing_status();
    series
        .gauge("cuberoute_seal_sessions", NO_LABEL)
        .set(sealing.sessions as f64);
    series
        .gauge("cuberoute_seal_handshakes_in_flight", NO_LABEL)
        .set(sealing.handshakes_in_flight as f64);
    series
        .gauge("cuberoute_seal_waiting_sets", NO_LABEL)
        .set(sealing.waiting_sets as f64);
    for (what, n) in [
        ("initiated", sealing.initiated),
        ("answered", sealing.answered),
        ("erased", sealing.erased),
        ("evicted", sealing.evicted),
        ("derived_sealing", sealing.derived_sealing),
        ("derived_opening", sealing.derived_opening),
    ] {
        series
            .counter("cuberoute_seal_sessions_total", ("event", what))
            .absolute(n);
    }
    let around = node.down().status();
    series
        .gauge("cuberoute_links_dead_known", NO_LABEL)
        .set(around.dead_links.len() as f64);
    series
        .gauge("cuberoute_link_reports_held", NO_LABEL)
        .set(around.reports_held as f64);
    for (outcome, n) in [
        ("new", around.reports_new),
        ("known", around.reports_known),
        ("not_a_link", around.reports_not_a_link),
        ("full", around.reports_full),
    ] {
        series
            .counter("cuberoute_link_reports_total", ("outcome", outcome))
            .absolute(n);
    }
    series
        .counter("cuberoute_sets_rerouted_total", NO_LABEL)
        .absolute(around.sets_rerouted);
    series
        .counter("cuberoute_seal_handshakes_failed_total", NO_LABEL)
        .absolute(sealing.handshakes_failed);
    series
        .counter("cuberoute_seal_sets_sealed_again_total", NO_LABEL)
        .absolute(sealing.sets_sealed_again);
    series
        .counter("cuberoute_seal_answers_sent_again_total", NO_LABEL)
        .absolute(sealing.answers_sent_again);
    series
        .counter("cuberoute_seal_inits_resent_on_news_total", NO_LABEL)
        .absolute(sealing.inits_resent_on_news);
    series.build_info.get_or_insert_with(|| {
        let info = gauge!(
            "cuberoute_build_info",
            "version" => env!("CARGO_PKG_VERSION"),
            "wire_version" => cuberoute_protocol::wire::VERSION.to_string()
        );
        info.set(1.0);
        info
    });
    for (i, link) in node.links().enumerate() {
        let l = link.status();
        let up = if l.up { 1.0 } else { 0.0 };
        let of = series.link(i, link.neighbour);
        of.up.set(up);
        of.buffer_depth.set(l.queued as f64);
        of.frames_written.absolute(l.frames_written);
        of.frames_received.absolute(l.frames_received);
        of.frames_resent.absolute(l.frames_resent);
        if let Some(t) = &l.transport {
            let neighbour = &of.neighbour;
            of.rtt
                .get_or_insert_with(
                    || gauge!("cuberoute_link_rtt_seconds", "neighbour" => neighbour.clone()),
                )
                .set(t.rtt_us as f64 / 1e6);
        }
    }
    series
        .gauge("cuberoute_buffered_bytes", NO_LABEL)
        .set(node.budget().held() as f64);
    series
        .gauge("cuberoute_buffered_bytes_limit", NO_LABEL)
        .set(node.budget().limit() as f64);
    for (name, n) in node.delivery().counters.named() {
        series
            .counter(
                "cuberoute_delivery_total",
                ("event", name.trim_start_matches("delivery_")),
            )
            .absolute(n);
    }
    let (sets, bytes) = node.delivery().outbox_load();
    series
        .gauge("cuberoute_outbox_sets", NO_LABEL)
        .set(sets as f64);
    series
        .gauge("cuberoute_outbox_bytes", NO_LABEL)
        .set(bytes as f64);
    let (sets, bytes) = node.delivery().inbox_load();
    series
        .gauge("cuberoute_inbox_sets", NO_LABEL)
        .set(sets as f64);
    series
        .gauge("cuberoute_inbox_bytes", NO_LABEL)
        .set(bytes as f64);
    let shaper = node.chaos().shaper.counters();
    series
        .gauge("cuberoute_shaper_rules", NO_LABEL)
        .set(shaper.rules as f64);
    series
        .gauge("cuberoute_shaper_queued_datagrams", NO_LABEL)
        .set(shaper.queued as f64);
    series
        .counter("cuberoute_shaper_delayed_datagrams_total", NO_LABEL)
        .absolute(shaper.delayed);
    series
        .counter("cuberoute_shaper_reordered_datagrams_total", NO_LABEL)
        .absolute(shaper.reordered);
    series
        .counter("cuberoute_shaper_duplicated_datagrams_total", NO_LABEL)
        .absolute(shaper.duplicated);
    for (reason, n) in shaper.dropped {
        series
            .counter(
                "cuberoute_shaper_dropped_datagrams_total",
                ("reason", reason),
            )
            .absolute(n);
    }
    series
        .gauge("cuberoute_input_buffer_depth", NO_LABEL)
        .set(node.input_queued() as f64);
    series
        .gauge("cuberoute_output_buffer_depth", NO_LABEL)
        .set(node.output().len() as f64);
}

/// No label: a series named alone.
const NO_LABEL: (&str, &str) = ("", "");

/// A series' name and its one label, if any.
type SeriesKey = (&'static str, &'static str, Cow<'static, str>);

/// One node's series, each registered once (with the node's label, when hosted: [`as_node`])
/// and set at each [`publish`]: a lookup in the process's registry builds and compares a key
/// of names and labels, and a node host's 2,048 nodes each published about 100 of them a
/// second under load.
#[derive(Default)]
struct Series {
    counters: HashMap<SeriesKey, Counter>,
    gauges: HashMap<SeriesKey, Gauge>,
    build_info: Option<Gauge>,
    /// Each link's, in the node's order of its links.
    links: Vec<LinkSeries>,
}

struct LinkSeries {
    id: NodeId,
    neighbour: String,
    up: Gauge,
    buffer_depth: Gauge,
    frames_written: Counter,
    frames_received: Counter,
    frames_resent: Counter,
    /// Registered once the link has a transport to measure (QUIC's).
    rtt: Option<Gauge>,
}

impl Series {
    fn counter(
        &mut self,
        name: &'static str,
        label: (&'static str, impl Into<Cow<'static, str>>),
    ) -> &Counter {
        kept(
            &mut self.counters,
            name,
            label,
            |name, key, value| match key {
                "" => counter!(name),
                _ => counter!(name, key => value),
            },
        )
    }

    fn gauge(
        &mut self,
        name: &'static str,
        label: (&'static str, impl Into<Cow<'static, str>>),
    ) -> &Gauge {
        kept(
            &mut self.gauges,
            name,
            label,
            |name, key, value| match key {
                "" => gauge!(name),
                _ => gauge!(name, key => value),
            },
        )
    }

    /// The series of the node's `i`th link, to `neighbour`.
    fn link(&mut self, i: usize, neighbour: NodeId) -> &mut LinkSeries {
        while self.links.len() <= i {
            self.links.push(LinkSeries::new(neighbour));
        }
        if self.links[i].id != neighbour {
            self.links[i] = LinkSeries::new(neighbour);
        }
        &mut self.links[i]
    }
}

/// The handle of series `name` with its one `label` (`NO_LABEL`: none) in `handles`,
/// registered by `register` the first time.
fn kept<'a, H>(
    handles: &'a mut HashMap<SeriesKey, H>,
    name: &'static str,
    (key, value): (&'static str, impl Into<Cow<'static, str>>),
    register: impl FnOnce(&'static str, &'static str, Cow<'static, str>) -> H,
) -> &'a H {
    handles
        .entry((name, key, value.into()))
        .or_insert_with_key(|(name, key, value)| register(name, key, value.clone()))
}

impl LinkSeries {
    fn new(id: NodeId) -> LinkSeries {
        let neighbour = id.to_string();
        let n = || neighbour.clone();
        LinkSeries {
            id,
            up: gauge!("cuberoute_link_up", "neighbour" => n()),
            buffer_depth: gauge!("cuberoute_link_buffer_depth", "neighbour" => n()),
            frames_written: counter!("cuberoute_link_frames_written_total", "neighbour" => n()),
            frames_received: counter!("cuberoute_link_frames_received_total", "neighbour" => n()),
            frames_resent: counter!("cuberoute_link_frames_resent_total", "neighbour" => n()),
            rtt: None,
            neighbour,
        }
    }
}
