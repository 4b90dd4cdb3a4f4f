//! A run's report as one self-contained HTML page (`report.html`) beside its JSON
//! (`report.json`): a summary table, the fault windows, and three SVG charts drawn by plotters
//! from a [`Timeline`]: the latency of every set over time, sets per second, and copies lost
//! per path. Nothing on the page is fetched from elsewhere: no script, font, style sheet or
//! image from any address; its style is inline and its charts are `<svg>` elements in the page.
//!
//! Each chart's `<svg>` has an id (`latency`, `rate`, `paths`); each fault window is drawn as
//! a `<g class="fault-window">` whose `data-what`, `data-place`, `data-mechanism`,
//! `data-start-ms` and `data-end-ms` say what it was, with its translucent band, its name and a
//! tooltip. Large runs are not drawn point by point: above [`charts::MAX_MARKERS`] markers,
//! those that would cover each other (same outcome, same copy, same small cell of pixels) are
//! drawn once, and the page says so; the counts are always over every set.

mod charts;

use crate::chaos::timeline::{Outcome, Timeline};
use crate::ops::percentiles::Percentiles;
use anyhow::Context;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use charts::MAX_MARKERS;

/// The report JSON shown on the page at most this long (it is whole in `report.json`).
const MAX_JSON_ON_PAGE: usize = 256 * 1024;

/// Text made safe to put in HTML or SVG, in an element or in a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// 75000 as `75,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Milliseconds with three significant digits (and no fewer whole digits).
fn ms(v: f64) -> String {
    if v >= 100.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn seconds(ms: f64) -> String {
    format!("{:.1}", ms / 1000.0)
}

/// The page's style: inline, nothing loaded.
const STYLE: &str = "
body { font-family: sans-serif; color: #222; background: #fafafa; margin: 0; }
main { max-width: 1120px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 17px; margin: 26px 0 4px; }
p.note { color: #555; font-size: 13px; margin: 2px 0 8px; }
table { border-collapse: collapse; font-size: 14px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 4px 10px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; font-weight: 600; }
.summary { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 6px;
  border-radius: 2px; vertical-align: -1px; }
svg.chart { display: block; max-width: 100%; height: auto; background: #fff;
  border: 1px solid #e2e2e2; }
details { margin-top: 26px; }
#verdict { border-left: 6px solid; padding: 6px 14px; margin: 10px 0 14px; background: #fff; }
#verdict.valid { border-color: #2e7d32; }
#verdict.invalid { border-color: #c62828; }
p.verdict { font-size: 18px; font-weight: 600; margin: 4px 0; }
#verdict.valid p.verdict { color: #2e7d32; }
#verdict.invalid p.verdict { color: #c62828; }
ul.reasons { margin: 4px 0 6px; }
pre { background: #fff; border: 1px solid #ddd; padding: 10px; font-size: 12px; overflow: auto;
  max-height: 480px; }
";

/// The three charts, each with its note; the lost copies' chart only if a copy was lost on a
/// path, and otherwise one line saying why not.
fn draw_charts(
    page: &mut String,
    timeline: &Timeline,
    report_json: &serde_json::Value,
    (latency, rate, bin_s, paths): (&charts::LatencyDrawn, &str, f64, &str),
) -> std::fmt::Result {
    let sets = &timeline.sets;
    page.push_str("<h2>Latency of every set over time</h2>\n<p class=\"note\">");
    write!(
        page,
        "One point a set at the time it was due: its first copy (●) and, when later, its last \
         (○), coloured by how the set ended; sets no copy of which arrived are drawn in the band \
         at the top. Latency in ms{}. Above the plot, each fault window in a lane of its own; in \
         the plot, its span shaded between dashed edges of its colour.",
        if latency.log { ", on a log scale" } else { "" }
    )?;
    if let Some(cell) = latency.cell {
        write!(
            page,
            " <strong>{} points, too many to draw one by one: points that would fall in the \
             same {cell}×{cell}-pixel cell with the same outcome and copy are drawn once \
             ({} markers).</strong> Every outcome and outlier stays visible; the counts are \
             over every set.",
            thousands(latency.points as u64),
            thousands(latency.markers as u64),
        )?;
    }
    page.push_str("</p>\n");
    page.push_str(&latency.svg);

    page.push_str("<h2>Sets per second</h2>\n<p class=\"note\">");
    writeln!(
        page,
        "Sets sent in each {} s, and how those sets ended, per second: the sets go on a \
         schedule through the faults, the repair and the restarts, so the sent line stays at \
         the run's rate. The fault windows as above.</p>",
        charts_bin(bin_s)
    )?;
    page.push_str(rate);

    page.push_str("<h2>Copies lost per path</h2>\n");
    if sets.iter().all(|s| s.paths_lost.is_empty()) {
        let plain = report_json["delivery"]
            .as_str()
            .is_none_or(|delivery| delivery == "plain");
        let why = if !plain {
            "The run's sets were sent in a delivery mode, whose pieces name no path: no copy \
             is lost on a path of its own."
        } else {
            "No copy was lost on any path."
        };
        writeln!(page, "<p class=\"note\" id=\"no-paths\">{why}</p>")?;
    } else {
        page.push_str(
            "<p class=\"note\">For each path index, how many sets lost their copy on that \
             path.</p>\n",
        );
        page.push_str(paths);
    }

    Ok(())
}

/// The run's verdict ([`crate::chaos::verdict`]) as the page's first words: valid or not, the
/// broken promises, what the mode allowed, and every check's count.
fn verdict(page: &mut String, verdict: &serde_json::Value) -> std::fmt::Result {
    let Some(valid) = verdict["valid"].as_bool() else {
        return Ok(());
    };
    let lines = |key: &str| -> Vec<String> {
        verdict[key]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()).map(escape).collect())
            .unwrap_or_default()
    };
    writeln!(
        page,
        "<section id=\"verdict\" class=\"{}\">\n<p class=\"verdict\">{}</p>",
        if valid { "valid" } else { "invalid" },
        if valid {
            "Valid: every promise of the run's faults and delivery mode held."
        } else {
            "Invalid: promises were broken."
        }
    )?;
    let reasons = lines("reasons");
    if !reasons.is_empty() {
        writeln!(page, "<ul class=\"reasons\">")?;
        for reason in reasons {
            writeln!(page, "<li>{reason}</li>")?;
        }
        writeln!(page, "</ul>")?;
    }
    for allowed in lines("allowed") {
        writeln!(page, "<p class=\"note\">Allowed: {allowed}.</p>")?;
    }
    let checks: Vec<String> = verdict["checks"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    format!(
                        "{} {}",
                        c["count"].as_u64().unwrap_or(0),
                        escape(c["check"].as_str().unwrap_or(""))
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    writeln!(
        page,
        "<p class=\"note\">Checked: {}.</p>\n</section>",
        checks.join(", ")
    )
}

/// The page: the title, the verdict, the summary, the fault windows, the three charts and the report JSON.
pub fn html(timeline: &Timeline, report_json: &serde_json::Value) -> anyhow::Result<String> {
    let sets = &timeline.sets;
    let colours = charts::window_colours(&timeline.windows);
    let latency = charts::latency(timeline, &colours).context("drawing the latency chart")?;
    let (rate, bin_s) = charts::rate(timeline, &colours).context("drawing the rates")?;
    let paths = charts::paths(timeline).context("drawing the copies lost per path")?;

    let title = if timeline.title.is_empty() {
        "cuberoute run".to_string()
    } else {
        format!("cuberoute run: {}", timeline.title)
    };
    let mut page = String::with_capacity(
        latency.svg.len() + rate.len() + paths.len() + 16 * 1024 + 64 * timeline.windows.len(),
    );
    writeln!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{t}</h1>",
        t = escape(&title)
    )?;
    verdict(&mut page, &report_json["verdict"])?;
    writeln!(
        page,
        "<p class=\"note\">{} sets over {} s, {} fault window{}. Times are from the start of \
         the run; a set's latency is from when it was due to the arrival of its first (or last) \
         copy (the sets go on a schedule, whatever the cluster does).</p>",
        thousands(sets.len() as u64),
        seconds(timeline.duration_ms),
        thousands(timeline.windows.len() as u64),
        if timeline.windows.len() == 1 { "" } else { "s" },
    )?;

    // The summary: outcomes, then latencies.
    page.push_str("<div class=\"summary\">\n<table id=\"outcomes\">\n<tr><th>sets</th><th>count</th><th>share</th></tr>\n");
    let share = |n: usize| {
        if sets.is_empty() {
            "–".to_string()
        } else {
            format!("{:.2}%", 100.0 * n as f64 / sets.len() as f64)
        }
    };
    writeln!(
        page,
        "<tr><td>sent</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
        thousands(sets.len() as u64),
        share(sets.len())
    )?;
    for o in Outcome::ALL {
        let n = sets.iter().filter(|s| s.outcome == o).count();
        writeln!(
            page,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            charts::hex(charts::outcome_colour(o)),
            o.name(),
            thousands(n as u64),
            share(n)
        )?;
    }
    page.push_str("</table>\n<table id=\"latencies\">\n<tr><th>latency (ms)</th><th>sets</th><th>p50</th><th>p99</th></tr>\n");
    for (name, of) in [
        (
            "first copy",
            (|s: &crate::chaos::timeline::SetPoint| s.first_ms) as fn(_) -> _,
        ),
        ("last copy", |s: &crate::chaos::timeline::SetPoint| {
            s.last_ms
        }),
    ] {
        let p = Percentiles::of(
            sets.iter()
                .filter_map(of)
                .filter(|v| v.is_finite())
                .map(|v| v * 1000.0),
        );
        let (p50, p99) = if p.samples == 0 {
            ("–".to_string(), "–".to_string())
        } else {
            (ms(p.p50_us / 1000.0), ms(p.p99_us / 1000.0))
        };
        writeln!(
            page,
            "<tr><td>{name}</td><td class=\"n\">{}</td><td class=\"n\">{p50}</td>\
             <td class=\"n\">{p99}</td></tr>",
            thousands(p.samples as u64)
        )?;
    }
    page.push_str("</table>\n</div>\n");

    // The fault windows.
    page.push_str("<h2>Fault windows</h2>\n");
    if timeline.windows.is_empty() {
        page.push_str("<p class=\"note\" id=\"no-windows\">No fault was injected.</p>\n");
    } else {
        page.push_str(
            "<table id=\"windows\">\n<tr><th>start (s)</th><th>end (s)</th><th>what</th>\
             <th>where</th><th>mechanism</th></tr>\n",
        );
        for (w, c) in timeline.windows.iter().zip(&colours) {
            writeln!(
                page,
                "<tr class=\"fault-window\"><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{}</td>\
                 <td>{}</td></tr>",
                seconds(w.start_ms),
                seconds(w.end_ms),
                charts::hex(*c),
                escape(&w.what),
                escape(&w.place),
                escape(&w.mechanism)
            )?;
        }
        page.push_str("</table>\n");
    }

    // The charts.
    if sets.is_empty() {
        page.push_str(
            "<h2>Charts</h2>\n<p class=\"note\" id=\"no-sets\">No set was sent: there is no \
             latency, rate or lost copy to draw.</p>\n",
        );
    } else {
        draw_charts(
            &mut page,
            timeline,
            report_json,
            (&latency, &rate, bin_s, &paths),
        )?;
    }

    // The report JSON itself, for what the charts do not show.
    let json = serde_json::to_string_pretty(report_json).context("writing the report JSON")?;
    page.push_str("<details id=\"report-json\">\n<summary>The run's report (JSON)</summary>\n");
    if json.len() > MAX_JSON_ON_PAGE {
        let mut cut = MAX_JSON_ON_PAGE;
        while !json.is_char_boundary(cut) {
            cut -= 1;
        }
        writeln!(
            page,
            "<p class=\"note\">The first {} of {} bytes; all of it is in report.json.</p>\n\
             <pre>{}</pre>",
            thousands(cut as u64),
            thousands(json.len() as u64),
            escape(&json[..cut])
        )?;
    } else {
        writeln!(page, "<pre>{}</pre>", escape(&json))?;
    }
    page.push_str("</details>\n</main>\n</body>\n</html>\n");
    Ok(page)
}

fn charts_bin(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// Write `DIR/report.html` and `DIR/report.json` (the report, pretty), making `DIR` if need
/// be; the page's path.
pub fn write(
    dir: &Path,
    timeline: &Timeline,
    report_json: &serde_json::Value,
) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot make the report's directory {}", dir.display()))?;
    let page = html(timeline, report_json)?;
    let html_path = dir.join("report.html");
    std::fs::write(&html_path, page)
        .with_context(|| format!("cannot write {}", html_path.display()))?;
    let json_path = dir.join("report.json");
    let mut json = serde_json::to_string_pretty(report_json).context("writing the report JSON")?;
    json.push('\n');
    std::fs::write(&json_path, json)
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    Ok(html_path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chaos::timeline::{FaultWindow, SetPoint};
    use serde_json::json;

    /// `n` sets over `seconds`, k = 3: most delivered, some partial (path 1 lost), lost in the
    /// window from a third to half of the run, a few failed.
    pub fn synthetic(n: usize, seconds: f64) -> Timeline {
        let duration_ms = seconds * 1000.0;
        let sets = (0..n)
            .map(|i| {
                let sent_ms = duration_ms * i as f64 / n.max(1) as f64;
                // A deterministic spread: most 1-5 ms, a tail to 300 ms.
                let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                let u = (h % 10_000) as f64 / 10_000.0;
                let first = 1.0 + 4.0 * u + if h % 97 == 0 { 250.0 * u } else { 0.0 };
                let in_window = sent_ms > duration_ms / 3.0 && sent_ms < duration_ms / 2.0;
                let (outcome, first_ms, last_ms, paths_lost) = if h % 211 == 0 {
                    (Outcome::Failed, None, None, vec![])
                } else if in_window && h % 5 == 0 {
                    (Outcome::Lost, None, None, vec![0, 1, 2])
                } else if in_window && h % 3 == 0 || h % 50 == 0 {
                    (Outcome::Partial, Some(first), Some(first * 1.5), vec![1])
                } else {
                    (Outcome::Delivered, Some(first), Some(first * 1.3), vec![])
                };
                SetPoint {
                    sent_ms,
                    first_ms,
                    last_ms,
                    outcome,
                    k: 3,
                    paths_lost,
                }
            })
            .collect();
        Timeline {
            title: "eh:2,2 crash,cut plain".into(),
            duration_ms,
            max_k: 3,
            sets,
            windows: vec![
                FaultWindow {
                    start_ms: duration_ms / 3.0,
                    end_ms: duration_ms / 2.0,
                    what: "crash".into(),
                    place: "node 5".into(),
                    mechanism: "process kill".into(),
                },
                FaultWindow {
                    start_ms: duration_ms * 0.6,
                    end_ms: duration_ms * 0.8,
                    what: "cut".into(),
                    place: "link 3-7".into(),
                    mechanism: "control API".into(),
                },
            ],
        }
    }

    fn count(page: &str, what: &str) -> usize {
        page.matches(what).count()
    }

    /// The `<svg ...>` element with this id, whole.
    fn svg<'a>(page: &'a str, id: &str) -> &'a str {
        let start = page
            .find(&format!("<svg id=\"{id}\""))
            .unwrap_or_else(|| panic!("no svg #{id}"));
        let end = start + page[start..].find("</svg>").unwrap() + "</svg>".len();
        &page[start..end]
    }

    #[test]
    fn the_page_has_the_three_charts_the_summary_and_the_windows() {
        let t = synthetic(600, 30.0);
        let page = html(&t, &json!({"sets": 600})).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.ends_with("</html>\n"));
        for id in ["latency", "rate", "paths"] {
            let chart = svg(&page, id);
            // Opened and closed once each, no stray `<svg` of plotters inside.
            assert_eq!(count(chart, "<svg"), 1, "{id}");
            assert!(count(chart, "<text") >= 5, "{id}: axes labelled");
        }
        let latency = svg(&page, "latency");
        // Every set drawn (600 sets, the delivered and partial ones twice).
        assert!(
            count(latency, "<circle") >= 600,
            "{}",
            count(latency, "<circle")
        );
        assert!(latency.contains("latency (ms"));
        assert!(latency.contains("time since the start of the run (s)"));
        assert_eq!(count(latency, "class=\"fault-window\""), 2);
        assert!(latency.contains("data-what=\"crash\" data-place=\"node 5\""));
        assert!(latency.contains(">crash · node 5</text>"));
        assert!(latency.contains(">cut · link 3-7</text>"));
        let rate = svg(&page, "rate");
        assert!(count(rate, "<polyline") >= 3);
        assert_eq!(count(rate, "class=\"fault-window\""), 2);
        let paths = svg(&page, "paths");
        // Three bars, and path 1 lost the most.
        assert!(count(paths, "<rect") >= 3);
        // The summary and the windows' table.
        assert!(page.contains("<td>sent</td><td class=\"n\">600</td>"));
        assert!(page.contains("<td>process kill</td>"));
        assert!(page.contains("<td>link 3-7</td>"));
        assert!(page.contains("p99"));
        assert!(page.contains("&quot;sets&quot;: 600"));
        assert!(!page.contains("too many to draw"));
    }

    #[test]
    fn text_is_escaped() {
        let mut t = synthetic(50, 5.0);
        t.title = "<script>alert('x')</script> & co".into();
        t.windows[0].what = "loss <5%>".into();
        t.windows[0].place = "node \"5\"".into();
        t.windows[1].mechanism = "a & b <i>".into();
        let page = html(&t, &json!({"note": "</pre><script>x</script>"})).unwrap();
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<i>"));
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"));
        assert!(page.contains("loss &lt;5%&gt;"));
        assert!(page.contains("data-place=\"node &quot;5&quot;\""));
        assert!(page.contains("a &amp; b &lt;i&gt;"));
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn nothing_is_fetched_from_elsewhere() {
        let page = html(&synthetic(300, 20.0), &json!({})).unwrap();
        let lower = page.to_lowercase();
        for refers in [
            "http://", "https://", "src=", "href=", "url(", "@import", "<script", "<link", "<img",
            "<iframe", "<object", "<embed",
        ] {
            assert!(!lower.contains(refers), "the page has {refers}");
        }
    }

    #[test]
    fn an_empty_timeline_gives_a_whole_page() {
        let page = html(&Timeline::default(), &json!(null)).unwrap();
        // No empty axes: one line says why there is nothing to draw.
        assert_eq!(count(&page, "<svg"), 0);
        assert!(page.contains("No set was sent: there is no latency, rate or lost copy to draw."));
        assert!(page.contains("No fault was injected."));
        assert!(!page.contains("NaN") && !page.contains("=\"inf"), "{page}");
        assert!(page.ends_with("</html>\n"));
        // One set, no window, nothing lost; one that failed.
        let mut t = Timeline {
            max_k: 1,
            ..Timeline::default()
        };
        t.sets.push(SetPoint {
            sent_ms: 0.0,
            first_ms: Some(0.0),
            last_ms: Some(0.0),
            outcome: Outcome::Delivered,
            k: 1,
            paths_lost: vec![],
        });
        let page = html(&t, &json!({})).unwrap();
        for id in ["latency", "rate"] {
            assert!(svg(&page, id).ends_with("</svg>"));
        }
        assert!(!page.contains("<svg id=\"paths\""));
        assert!(
            page.contains("<p class=\"note\" id=\"no-paths\">No copy was lost on any path.</p>")
        );
        let page = html(&t, &json!({"delivery": "reliable"})).unwrap();
        assert!(page.contains("a delivery mode, whose pieces name no path"));
        assert!(!page.contains("NaN"));
        t.sets[0].outcome = Outcome::Failed;
        t.sets[0].first_ms = None;
        t.sets[0].last_ms = None;
        assert!(!html(&t, &json!({})).unwrap().contains("NaN"));
    }

    #[test]
    fn the_verdict_opens_the_page() {
        let t = synthetic(60, 10.0);
        let valid = json!({"verdict": {"valid": true, "reasons": [], "allowed": ["sets no client got a copy of: 4"], "checks": [{"check": "corrupted", "count": 0}]}});
        let page = html(&t, &valid).unwrap();
        let at = page
            .find("<section id=\"verdict\" class=\"valid\">")
            .expect("a verdict");
        assert!(
            at < page.find("<div class=\"summary\">").unwrap(),
            "before the summary"
        );
        assert!(page.contains("Valid: every promise of the run's faults and delivery mode held."));
        assert!(page.contains("Allowed: sets no client got a copy of: 4."));
        assert!(page.contains("Checked: 0 corrupted."));
        let invalid = json!({"verdict": {"valid": false, "reasons": ["corrupted payloads handed to a client: <2>"], "allowed": [], "checks": []}});
        let page = html(&t, &invalid).unwrap();
        assert!(page.contains("<section id=\"verdict\" class=\"invalid\">"));
        assert!(page.contains("<li>corrupted payloads handed to a client: &lt;2&gt;</li>"));
        // A report without one (a study) has none.
        assert!(!html(&t, &json!({})).unwrap().contains("id=\"verdict\""));
    }

    #[test]
    fn overlapping_fault_windows_each_have_a_lane() {
        let mut t = synthetic(60, 30.0);
        for w in &mut t.windows {
            (w.start_ms, w.end_ms) = (5_000.0, 20_000.0);
        }
        let page = html(&t, &json!({})).unwrap();
        let latency = svg(&page, "latency");
        assert!(latency.contains("data-lane=\"0\""), "{latency}");
        assert!(latency.contains("data-lane=\"1\""), "{latency}");
        assert_eq!(count(latency, "<rect class=\"lane\""), 2);
    }

    #[test]
    fn a_large_run_is_merged_into_cells_and_stays_small() {
        let t = synthetic(75_000, 300.0);
        let start = std::time::Instant::now();
        let page = html(&t, &json!({"sets": 75_000})).unwrap();
        let took = start.elapsed();
        let latency = svg(&page, "latency");
        let circles = count(latency, "<circle");
        assert!(circles <= MAX_MARKERS + 20, "{circles}");
        assert!(page.contains("too many to draw one by one"));
        // Every outcome is still drawn.
        for o in Outcome::ALL {
            let fill = charts::hex(charts::outcome_colour(o));
            assert!(latency.contains(&fill), "{o:?}");
        }
        assert!(page.contains("<td>sent</td><td class=\"n\">75,000</td>"));
        eprintln!(
            "75,000 sets: page {} bytes, {circles} circles, in {took:?}",
            page.len()
        );
        assert!(page.len() < 2_000_000, "{}", page.len());
    }

    #[test]
    fn write_makes_the_directory_and_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b");
        let path = write(&out, &synthetic(20, 2.0), &json!({"sets": 20})).unwrap();
        assert_eq!(path, out.join("report.html"));
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("<svg id=\"paths\"")
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(json, json!({"sets": 20}));
        // A directory that cannot be made is named.
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let err = write(&file.join("x"), &Timeline::default(), &json!({})).unwrap_err();
        assert!(format!("{err:#}").contains("report's directory"), "{err:#}");
    }

    #[test]
    fn counts_read_with_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(75_000), "75,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(ms(0.1234), "0.123");
        assert_eq!(ms(12.345), "12.3");
        assert_eq!(ms(1234.4), "1234");
    }
}
