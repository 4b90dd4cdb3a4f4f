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

/// The most nodes of a process that publish every [`PUBLISH_EVERY`]: a node host of more
/// publishes each node proportionally less often ([`publish_period`]).
pub const PUBLISHED_A_PERIOD: usize = 4096;

/// How often each node of a process of `nodes` nodes publishes while busy: every
/// [`PUBLISH_EVERY`] up to [`PUBLISHED_A_PERIOD`] nodes, proportionally less often beyond, so
/// that a process publishes about that many nodes a second however many it runs. Publishing
/// is a node's every counter and each link's status copied into the registry: Q_16 in one
/// process spent over 40% of its core on it at saturation, each of its 65,536 nodes publishing
/// every second (BENCHMARKS.md); there, each node publishes every 16 s, within a usual scrape
/// interval. EH(5,5) in one process (2,048 nodes) publishes every second, as before.
pub fn publish_period(nodes: usize) -> Duration {
    PUBLISH_EVERY * nodes.div_ceil(PUBLISHED_A_PERIOD).max(1) as u32
}

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

/// Copy the node's counters and gauges into the metrics registry, forever: `every` (a second,
/// or longer in a large node host: [`publish_period`]) after activity, then every `every` while
/// there is activity or anything is queued, then once more when all is quiet, and then not
/// until the next activity. A hosted node's carry `label`
/// ([`node_label`]).
pub async fn publish_loop(node: Arc<Node>, label: Option<Label>, every: Duration) {
    let mut series = Series::new(label.is_some());
    let mut publish = || as_node(label.as_ref(), || publish(&node, &mut series));
    publish();
    loop {
        node.stats().activity().await;
        tokio::time::sleep(every).await;
        publish();
        while node.input_queued() > 0 || node.link_queued() > 0 {
            tokio::time::sleep(every).await;
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
    series.count(
        "cuberoute_sets_accepted_total",
        NO_LABEL,
        s.sets_accepted.load(Relaxed),
    );
    series.count(
        "cuberoute_packets_sent_total",
        NO_LABEL,
        s.packets_sent.load(Relaxed),
    );
    series.count(
        "cuberoute_packets_forwarded_total",
        NO_LABEL,
        s.packets_forwarded.load(Relaxed),
    );
    series.count(
        "cuberoute_packets_delivered_total",
        NO_LABEL,
        s.packets_delivered.load(Relaxed),
    );
    for (reason, n) in s.drops() {
        series.count(
            "cuberoute_packets_dropped_total",
            ("reason", reason.as_str()),
            n,
        );
    }
    let events = s.events();
    for (event, n) in &events {
        series.count("cuberoute_events_total", ("event", event.as_str()), *n);
    }
    // Liveness's suspicions, and those the neighbour then proved wrong: before it was taken
    // for dead (heard from again), and after (it linked again as the same process).
    let count = |event| events.get(&event).copied().unwrap_or(0);
    series.count(
        "cuberoute_links_suspected_total",
        NO_LABEL,
        count(Event::LinkSuspected),
    );
    series.count(
        "cuberoute_link_probes_total",
        NO_LABEL,
        count(Event::LinkProbeSent),
    );
    series.count(
        "cuberoute_links_found_alive_total",
        ("after", "suspicion"),
        count(Event::LinkFoundAlive),
    );
    series.count(
        "cuberoute_links_found_alive_total",
        ("after", "down"),
        count(Event::LinkDownFoundAlive),
    );
    series.count(
        "cuberoute_links_found_alive_total",
        ("after", "silence"),
        count(Event::LinkSilenceHeld),
    );
    let agreed = s.key_agreements();
    series.count(
        "cuberoute_key_agreements_total",
        ("side", "seal"),
        agreed.to_seal,
    );
    series.count(
        "cuberoute_key_agreements_total",
        ("side", "open"),
        agreed.to_open,
    );
    let sealing = node.sealing_status();
    series.level("cuberoute_seal_sessions", NO_LABEL, sealing.sessions as f64);
    series.level(
        "cuberoute_seal_handshakes_in_flight",
        NO_LABEL,
        sealing.handshakes_in_flight as f64,
    );
    series.level(
        "cuberoute_seal_waiting_sets",
        NO_LABEL,
        sealing.waiting_sets as f64,
    );
    for (what, n) in [
        ("initiated", sealing.initiated),
        ("answered", sealing.answered),
        ("erased", sealing.erased),
        ("evicted", sealing.evicted),
        ("derived_sealing", sealing.derived_sealing),
        ("derived_opening", sealing.derived_opening),
    ] {
        series.count("cuberoute_seal_sessions_total", ("event", what), n);
    }
    let around = node.down().status();
    series.level(
        "cuberoute_links_dead_known",
        NO_LABEL,
        around.dead_links.len() as f64,
    );
    series.level(
        "cuberoute_link_reports_held",
        NO_LABEL,
        around.reports_held as f64,
    );
    for (outcome, n) in [
        ("new", around.reports_new),
        ("known", around.reports_known),
        ("not_a_link", around.reports_not_a_link),
        ("full", around.reports_full),
    ] {
        series.count("cuberoute_link_reports_total", ("outcome", outcome), n);
    }
    series.count(
        "cuberoute_sets_rerouted_total",
        NO_LABEL,
        around.sets_rerouted,
    );
    series.count(
        "cuberoute_seal_handshakes_failed_total",
        NO_LABEL,
        sealing.handshakes_failed,
    );
    series.count(
        "cuberoute_seal_sets_sealed_again_total",
        NO_LABEL,
        sealing.sets_sealed_again,
    );
    series.count(
        "cuberoute_seal_answers_sent_again_total",
        NO_LABEL,
        sealing.answers_sent_again,
    );
    series.count(
        "cuberoute_seal_inits_resent_on_news_total",
        NO_LABEL,
        sealing.inits_resent_on_news,
    );
    series.build_info.get_or_insert_with(|| {
        let info = gauge!(
            "cuberoute_build_info",
            "version" => env!("CARGO_PKG_VERSION"),
            "wire_version" => cuberoute_protocol::wire::VERSION.to_string()
        );
        info.set(1.0);
        info
    });
    let mut links_up = 0u64;
    for (i, link) in node.links().enumerate() {
        let l = link.status();
        links_up += u64::from(l.up);
        let only_nonzero = series.only_nonzero;
        let rtt = l.transport.as_ref().map(|t| t.rtt_us as f64 / 1e6);
        // A hosted node's link has series once one is due: the link down after it was up (or
        // cut), or a figure other than 0 (at rest every link of a node host is up and idle: no
        // series at all; a link not up yet is in `cuberoute_links_up`).
        let went_down = !l.up && (l.down.is_some() || l.cut);
        let due = !only_nonzero
            || went_down
            || l.queued > 0
            || l.frames_written > 0
            || l.frames_received > 0
            || l.frames_resent > 0
            || rtt.is_some_and(|r| r != 0.0);
        let Some(of) = series.link(i, link.neighbour, due) else {
            continue;
        };
        let id = of.id;
        let n = || id.to_string();
        let set = |slot: &mut Option<Gauge>, value: f64, make: &dyn Fn() -> Gauge| {
            if slot.is_some() || value != 0.0 || !only_nonzero {
                slot.get_or_insert_with(make).set(value);
            }
        };
        let count = |slot: &mut Option<Counter>, value: u64, make: &dyn Fn() -> Counter| {
            if slot.is_some() || value != 0 || !only_nonzero {
                slot.get_or_insert_with(make).absolute(value);
            }
        };
        // Up is the rule of a hosted node's links: its series is registered once the link
        // went down (`cuberoute_links_up` counts the node's links up).
        if of.up.is_some() || went_down || !only_nonzero {
            of.up
                .get_or_insert_with(|| gauge!("cuberoute_link_up", "neighbour" => n()))
                .set(if l.up { 1.0 } else { 0.0 });
        }
        set(
            &mut of.buffer_depth,
            l.queued as f64,
            &|| gauge!("cuberoute_link_buffer_depth", "neighbour" => n()),
        );
        count(
            &mut of.frames_written,
            l.frames_written,
            &|| counter!("cuberoute_link_frames_written_total", "neighbour" => n()),
        );
        count(
            &mut of.frames_received,
            l.frames_received,
            &|| counter!("cuberoute_link_frames_received_total", "neighbour" => n()),
        );
        count(
            &mut of.frames_resent,
            l.frames_resent,
            &|| counter!("cuberoute_link_frames_resent_total", "neighbour" => n()),
        );
        if let Some(rtt) = rtt {
            set(
                &mut of.rtt,
                rtt,
                &|| gauge!("cuberoute_link_rtt_seconds", "neighbour" => n()),
            );
        }
    }
    series.level("cuberoute_links_up", NO_LABEL, links_up as f64);
    series.level(
        "cuberoute_buffered_bytes",
        NO_LABEL,
        node.budget().held() as f64,
    );
    series.level(
        "cuberoute_buffered_bytes_limit",
        NO_LABEL,
        node.budget().limit() as f64,
    );
    for (name, n) in node.delivery().counters.named() {
        series.count(
            "cuberoute_delivery_total",
            ("event", name.trim_start_matches("delivery_")),
            n,
        );
    }
    let (sets, bytes) = node.delivery().outbox_load();
    series.level("cuberoute_outbox_sets", NO_LABEL, sets as f64);
    series.level("cuberoute_outbox_bytes", NO_LABEL, bytes as f64);
    let (sets, bytes) = node.delivery().inbox_load();
    series.level("cuberoute_inbox_sets", NO_LABEL, sets as f64);
    series.level("cuberoute_inbox_bytes", NO_LABEL, bytes as f64);
    let shaper = node.chaos().shaper.counters();
    series.level("cuberoute_shaper_rules", NO_LABEL, shaper.rules as f64);
    series.level(
        "cuberoute_shaper_queued_datagrams",
        NO_LABEL,
        shaper.queued as f64,
    );
    series.count(
        "cuberoute_shaper_delayed_datagrams_total",
        NO_LABEL,
        shaper.delayed,
    );
    series.count(
        "cuberoute_shaper_reordered_datagrams_total",
        NO_LABEL,
        shaper.reordered,
    );
    series.count(
        "cuberoute_shaper_duplicated_datagrams_total",
        NO_LABEL,
        shaper.duplicated,
    );
    for (reason, n) in shaper.dropped {
        series.count(
            "cuberoute_shaper_dropped_datagrams_total",
            ("reason", reason),
            n,
        );
    }
    series.level(
        "cuberoute_input_buffer_depth",
        NO_LABEL,
        node.input_queued() as f64,
    );
    series.level(
        "cuberoute_output_buffer_depth",
        NO_LABEL,
        node.output().len() as f64,
    );
}

/// No label: a series named alone.
const NO_LABEL: (&str, &str) = ("", "");

/// A series' name and its one label, if any.
type SeriesKey = (&'static str, &'static str, Cow<'static, str>);

/// One node's series, each registered once (with the node's label, when hosted: [`as_node`])
/// and set at each [`publish`]: a lookup in the process's registry builds and compares a key
/// of names and labels, and a node host's 2,048 nodes each published about 100 of them a
/// second under load.
///
/// A node alone in its process registers every series at its first publish. A node of a node
/// host registers a series once its value is other than 0 (and keeps it after): a host of
/// 65,536 nodes would otherwise hold 10 million series, nearly all of them 0 at rest, 65 KiB a
/// node of registry (Q_16 in one process: 113 KiB a node before every node published, 178 KiB
/// after, BENCHMARKS.md), and a scrape of all of them. A link's up gauge, whose value at rest
/// is 1, is registered once the link went down after it was up (or was cut): every link up, 16 a node on Q_16, was the most
/// of what stayed (130 KiB a node), and `cuberoute_links_up` counts them a node.
#[derive(Default)]
struct Series {
    only_nonzero: bool,
    counters: HashMap<SeriesKey, Counter>,
    gauges: HashMap<SeriesKey, Gauge>,
    build_info: Option<Gauge>,
    /// Each link's, in the node's order of its links; `None` until one of its series is
    /// registered (a hosted node's idle links have none: 8 bytes each, not a link's handles).
    links: Vec<Option<Box<LinkSeries>>>,
}

/// A link's series, each registered when [`Series`] says.
struct LinkSeries {
    id: NodeId,
    up: Option<Gauge>,
    buffer_depth: Option<Gauge>,
    frames_written: Option<Counter>,
    frames_received: Option<Counter>,
    frames_resent: Option<Counter>,
    /// Registered once the link has a transport to measure (QUIC's).
    rtt: Option<Gauge>,
}

impl Series {
    /// The series of a node: of a node host's (`hosted`), registered only once nonzero.
    fn new(hosted: bool) -> Series {
        Series {
            only_nonzero: hosted,
            ..Series::default()
        }
    }

    /// Set counter `name` with its one `label` to `value`.
    fn count(
        &mut self,
        name: &'static str,
        label: (&'static str, impl Into<Cow<'static, str>>),
        value: u64,
    ) {
        let skip = self.only_nonzero && value == 0;
        let register = |name, key, value| match key {
            "" => counter!(name),
            _ => counter!(name, key => value),
        };
        if let Some(counter) = kept(&mut self.counters, name, label, skip, register) {
            counter.absolute(value);
        }
    }

    /// Set gauge `name` with its one `label` to `value`.
    fn level(
        &mut self,
        name: &'static str,
        label: (&'static str, impl Into<Cow<'static, str>>),
        value: f64,
    ) {
        let skip = self.only_nonzero && value == 0.0;
        let register = |name, key, value| match key {
            "" => gauge!(name),
            _ => gauge!(name, key => value),
        };
        if let Some(gauge) = kept(&mut self.gauges, name, label, skip, register) {
            gauge.set(value);
        }
    }

    /// The series of the node's `i`th link, to `neighbour`: made if `due`, else only if they
    /// are there already (a link to another neighbour in that place starts afresh).
    fn link(&mut self, i: usize, neighbour: NodeId, due: bool) -> Option<&mut LinkSeries> {
        if self.links.len() <= i {
            if !due {
                return None;
            }
            self.links.resize_with(i + 1, || None);
        }
        let slot = &mut self.links[i];
        if slot.as_ref().is_some_and(|l| l.id != neighbour) {
            *slot = None;
        }
        if slot.is_none() && due {
            *slot = Some(Box::new(LinkSeries::new(neighbour)));
        }
        slot.as_deref_mut()
    }
}

/// The handle of series `name` with its one `label` (`NO_LABEL`: none) in `handles`,
/// registered by `register` the first time unless `not_yet` (then `None` until it is).
fn kept<'a, H>(
    handles: &'a mut HashMap<SeriesKey, H>,
    name: &'static str,
    (key, value): (&'static str, impl Into<Cow<'static, str>>),
    not_yet: bool,
    register: impl FnOnce(&'static str, &'static str, Cow<'static, str>) -> H,
) -> Option<&'a H> {
    let entry = handles.entry((name, key, value.into()));
    match entry {
        std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
        std::collections::hash_map::Entry::Vacant(_) if not_yet => None,
        std::collections::hash_map::Entry::Vacant(e) => {
            let (name, key, value) = e.key().clone();
            Some(e.insert(register(name, key, value)))
        }
    }
}

impl LinkSeries {
    fn new(id: NodeId) -> LinkSeries {
        LinkSeries {
            id,
            up: None,
            buffer_depth: None,
            frames_written: None,
            frames_received: None,
            frames_resent: None,
            rtt: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_node_host_publishes_each_node_less_often() {
        assert_eq!(publish_period(1), PUBLISH_EVERY);
        assert_eq!(publish_period(PUBLISHED_A_PERIOD), PUBLISH_EVERY);
        assert_eq!(publish_period(PUBLISHED_A_PERIOD + 1), 2 * PUBLISH_EVERY);
        assert_eq!(publish_period(65_536), 16 * PUBLISH_EVERY);
    }
}
