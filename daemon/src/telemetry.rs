//! Metrics, served for Prometheus at `metrics_listen`; the counters of [`crate::stats::Stats`]
//! are copied into them once a second while anything happens, and not at all while the daemon
//! is idle. (Logs are [`crate::logging`].)

use crate::node::Node;
use crate::stats::Event;
use metrics::{counter, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
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
        node.stats().activity().await;
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
    let s = node.stats();
    counter!("cuberoute_sets_accepted_total").absolute(s.sets_accepted.load(Relaxed));
    counter!("cuberoute_packets_sent_total").absolute(s.packets_sent.load(Relaxed));
    counter!("cuberoute_packets_forwarded_total").absolute(s.packets_forwarded.load(Relaxed));
    counter!("cuberoute_packets_delivered_total").absolute(s.packets_delivered.load(Relaxed));
    for (reason, n) in s.drops() {
        counter!("cuberoute_packets_dropped_total", "reason" => reason.as_str()).absolute(n);
    }
    let events = s.events();
    for (event, n) in &events {
        counter!("cuberoute_events_total", "event" => event.as_str()).absolute(*n);
    }
    // Liveness's suspicions, and those the neighbour then proved wrong: before it was taken
    // for dead (heard from again), and after (it linked again as the same process).
    let count = |event| events.get(&event).copied().unwrap_or(0);
    counter!("cuberoute_links_suspected_total").absolute(count(Event::LinkSuspected));
    counter!("cuberoute_link_probes_total").absolute(count(Event::LinkProbeSent));
    counter!("cuberoute_links_found_alive_total", "after" => "suspicion")
        .absolute(count(Event::LinkFoundAlive));
    counter!("cuberoute_links_found_alive_total", "after" => "down")
        .absolute(count(Event::LinkDownFoundAlive));
    counter!("cuberoute_links_found_alive_total", "after" => "silence")
        .absolute(count(Event::LinkSilenceHeld));
    let agreed = s.key_agreements();
    counter!("cuberoute_key_agreements_total", "side" => "seal").absolute(agreed.to_seal);
    counter!("cuberoute_key_agreements_total", "side" => "open").absolute(agreed.to_open);
    let sealing = node.sealing_status();
    gauge!("cuberoute_seal_sessions").set(sealing.sessions as f64);
    gauge!("cuberoute_seal_handshakes_in_flight").set(sealing.handshakes_in_flight as f64);
    gauge!("cuberoute_seal_waiting_sets").set(sealing.waiting_sets as f64);
    for (what, n) in [
        ("initiated", sealing.initiated),
        ("answered", sealing.answered),
        ("erased", sealing.erased),
        ("evicted", sealing.evicted),
        ("derived_sealing", sealing.derived_sealing),
        ("derived_opening", sealing.derived_opening),
    ] {
        counter!("cuberoute_seal_sessions_total", "event" => what).absolute(n);
    }
    let around = node.down().status();
    gauge!("cuberoute_links_dead_known").set(around.dead_links.len() as f64);
    gauge!("cuberoute_link_reports_held").set(around.reports_held as f64);
    for (outcome, n) in [
        ("new", around.reports_new),
        ("known", around.reports_known),
        ("not_a_link", around.reports_not_a_link),
        ("full", around.reports_full),
    ] {
        counter!("cuberoute_link_reports_total", "outcome" => outcome).absolute(n);
    }
    counter!("cuberoute_sets_rerouted_total").absolute(around.sets_rerouted);
    counter!("cuberoute_seal_handshakes_failed_total").absolute(sealing.handshakes_failed);
    counter!("cuberoute_seal_sets_sealed_again_total").absolute(sealing.sets_sealed_again);
    counter!("cuberoute_seal_answers_sent_again_total").absolute(sealing.answers_sent_again);
    counter!("cuberoute_seal_inits_resent_on_news_total").absolute(sealing.inits_resent_on_news);
    gauge!(
        "cuberoute_build_info",
        "version" => env!("CARGO_PKG_VERSION"),
        "wire_version" => cuberoute_protocol::wire::VERSION.to_string()
    )
    .set(1.0);
    for link in node.links() {
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
    gauge!("cuberoute_buffered_bytes").set(node.budget().held() as f64);
    gauge!("cuberoute_buffered_bytes_limit").set(node.budget().limit() as f64);
    for (name, n) in node.delivery().counters.named() {
        counter!("cuberoute_delivery_total", "event" => name.trim_start_matches("delivery_"))
            .absolute(n);
    }
    let (sets, bytes) = node.delivery().outbox_load();
    gauge!("cuberoute_outbox_sets").set(sets as f64);
    gauge!("cuberoute_outbox_bytes").set(bytes as f64);
    let (sets, bytes) = node.delivery().inbox_load();
    gauge!("cuberoute_inbox_sets").set(sets as f64);
    gauge!("cuberoute_inbox_bytes").set(bytes as f64);
    let shaper = node.chaos().shaper.counters();
    gauge!("cuberoute_shaper_rules").set(shaper.rules as f64);
    gauge!("cuberoute_shaper_queued_datagrams").set(shaper.queued as f64);
    counter!("cuberoute_shaper_delayed_datagrams_total").absolute(shaper.delayed);
    counter!("cuberoute_shaper_reordered_datagrams_total").absolute(shaper.reordered);
    counter!("cuberoute_shaper_duplicated_datagrams_total").absolute(shaper.duplicated);
    for (reason, n) in shaper.dropped {
        counter!("cuberoute_shaper_dropped_datagrams_total", "reason" => reason).absolute(n);
    }
    gauge!("cuberoute_input_buffer_depth").set(node.input_queued() as f64);
    gauge!("cuberoute_output_buffer_depth").set(node.output().len() as f64);
}
