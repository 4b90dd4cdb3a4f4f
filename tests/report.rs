//! The report page (`cuberoute_cluster::chaos::page`) in a real headless browser: a page written for
//! a synthetic run with two fault windows is loaded from its file, and its three charts, its
//! fault windows (drawn on the charts and listed in the table) and the absence of anything
//! fetched are checked in the page; a screenshot of the whole page is kept in
//! target/test-artifacts/report.png. A run of 75,000 sets gives a page that loads quickly.

mod common;

use common::browser::{Browser, find_browser_or_say_why};
use cuberoute_cluster::chaos::page;
use cuberoute_cluster::chaos::timeline::{FaultWindow, Outcome, SetPoint, Timeline};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `n` sets over `seconds`, k = 3: mostly delivered in 1 to 6 ms with a few slow ones; during
/// the crash window (a third to a half of the run) a fifth lost and a third partial (path 1);
/// a few failed throughout.
fn timeline(n: usize, seconds: f64) -> Timeline {
    let duration_ms = seconds * 1000.0;
    let sets = (0..n)
        .map(|i| {
            let sent_ms = duration_ms * i as f64 / n as f64;
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            let u = (h % 10_000) as f64 / 10_000.0;
            let first = 1.0 + 5.0 * u + if h % 89 == 0 { 200.0 * u } else { 0.0 };
            let crashed = sent_ms > duration_ms / 3.0 && sent_ms < duration_ms / 2.0;
            let (outcome, first_ms, last_ms, paths_lost) = if h % 199 == 0 {
                (Outcome::Failed, None, None, vec![])
            } else if crashed && h % 5 == 0 {
                (Outcome::Lost, None, None, vec![0, 1, 2])
            } else if crashed && h % 3 == 0 {
                (Outcome::Partial, Some(first), Some(first * 1.6), vec![1])
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
        title: "eh:2,2 — crash, cut — plain".into(),
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
                start_ms: duration_ms * 0.62,
                end_ms: duration_ms * 0.8,
                what: "cut".into(),
                place: "link 3-7".into(),
                mechanism: "control API".into(),
            },
        ],
    }
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn artifacts() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts")
}

#[test]
fn the_report_page_shows_its_charts_and_fault_windows_in_a_browser() {
    let Some(browser) = find_browser_or_say_why() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let t = timeline(1_200, 60.0);
    let page_path = page::write(dir.path(), &t, &json!({ "sets": 1_200 })).unwrap();
    assert!(dir.path().join("report.json").is_file());
    let mut page = Browser::open(&browser, &file_url(&page_path));
    page.wait_for(
        "document.readyState == 'complete' && !!document.querySelector('svg#paths')",
        Duration::from_secs(15),
    );

    // The three charts, laid out at a useful size, with content.
    let charts = page.eval(
        "['latency', 'rate', 'paths'].map(id => { const s = document.getElementById(id); \
         const r = s.getBoundingClientRect(); return { tag: s.tagName, w: r.width, h: r.height, \
         circles: s.querySelectorAll('circle').length, \
         lines: s.querySelectorAll('polyline, line, path').length, \
         rects: s.querySelectorAll('rect').length, \
         texts: s.querySelectorAll('text').length }; })",
    );
    eprintln!("charts: {charts}");
    for (i, id) in ["latency", "rate", "paths"].iter().enumerate() {
        let c = &charts[i];
        assert_eq!(c["tag"], "svg", "{id}");
        assert!(c["w"].as_f64().unwrap() > 600.0, "{id}: {c}");
        assert!(c["h"].as_f64().unwrap() > 150.0, "{id}: {c}");
        assert!(
            c["texts"].as_u64().unwrap() >= 8,
            "{id}: axes labelled: {c}"
        );
    }
    // Every set is a point (delivered and partial ones twice), the rates three lines or more,
    // and the three paths three bars.
    assert!(
        charts[0]["circles"].as_u64().unwrap() >= 1_200,
        "{}",
        charts[0]
    );
    assert!(charts[1]["lines"].as_u64().unwrap() >= 3, "{}", charts[1]);
    assert!(charts[2]["rects"].as_u64().unwrap() >= 3, "{}", charts[2]);
    // Each chart names its axes with their units.
    let text = |id: &str| format!("document.getElementById('{id}').textContent");
    let latency_text = page.eval(&text("latency"));
    let latency_text = latency_text.as_str().unwrap();
    assert!(latency_text.contains("latency (ms"), "{latency_text}");
    assert!(latency_text.contains("time since the start of the run (s)"));
    assert!(latency_text.contains("delivered"), "a legend");
    assert!(
        page.eval(&text("rate"))
            .as_str()
            .unwrap()
            .contains("sets/s")
    );

    // The fault windows: a band and a visible name on both time charts, a row in the table.
    let windows = page.eval(
        "['latency', 'rate'].map(id => [...document.querySelectorAll('#' + id + ' g.fault-window')] \
         .map(g => { const band = g.querySelector('rect').getBoundingClientRect(); \
         const name = g.querySelector('text.fault-name'); \
         const at = name ? name.getBoundingClientRect() : null; \
         return { what: g.dataset.what, place: g.dataset.place, band: band.width, \
         opacity: Number(g.querySelector('rect').getAttribute('fill-opacity')), \
         name: name ? name.textContent : null, shown: !!at && at.width > 20 && at.height > 5 }; }))",
    );
    eprintln!("windows: {windows}");
    for chart in windows.as_array().unwrap() {
        let chart = chart.as_array().unwrap();
        assert_eq!(chart.len(), 2, "{chart:?}");
        for (w, (what, place)) in chart.iter().zip([("crash", "node 5"), ("cut", "link 3-7")]) {
            assert_eq!(w["what"], what);
            assert_eq!(w["place"], place);
            assert!(w["band"].as_f64().unwrap() > 20.0, "{w}");
            let opacity = w["opacity"].as_f64().unwrap();
            assert!(opacity > 0.0 && opacity < 0.5, "translucent: {w}");
            assert_eq!(w["name"], format!("{what} · {place}"));
            assert_eq!(w["shown"], true, "{w}");
        }
    }
    let table = page
        .eval("[...document.querySelectorAll('#windows tr.fault-window')].map(r => r.innerText)");
    let table = table.as_array().unwrap();
    assert_eq!(table.len(), 2);
    for (row, words) in table.iter().zip([
        ["20.0", "30.0", "crash", "node 5", "process kill"],
        ["37.2", "48.0", "cut", "link 3-7", "control API"],
    ]) {
        for w in words {
            assert!(row.as_str().unwrap().contains(w), "{row} lacks {w}");
        }
    }
    // The summary counts every set.
    let outcomes = page.eval("document.getElementById('outcomes').innerText");
    assert!(outcomes.as_str().unwrap().contains("1,200"), "{outcomes}");

    // Nothing was fetched, and nothing refers elsewhere.
    assert_eq!(
        page.eval("performance.getEntriesByType('resource').length"),
        0
    );
    assert_eq!(
        page.eval(
            "document.querySelectorAll('[src], [href], link, script, img, iframe, object, embed').length"
        ),
        0
    );

    let shot = artifacts().join("report.png");
    page.screenshot_page(&shot);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "{}",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());

    // A large run: its page stays small and loads quickly; its points are merged, and it says
    // so.
    let big = timeline(75_000, 300.0);
    let big_dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let big_path = page::write(big_dir.path(), &big, &json!({ "sets": 75_000 })).unwrap();
    let wrote = start.elapsed();
    let size = std::fs::metadata(&big_path).unwrap().len();
    drop(page);
    let start = Instant::now();
    let mut page = Browser::open(&browser, &file_url(&big_path));
    page.wait_for(
        "document.readyState == 'complete' && !!document.querySelector('svg#paths')",
        Duration::from_secs(20),
    );
    // From starting the browser to the page drawn: an upper bound of the page's load.
    let loaded = start.elapsed();
    let page_ms = page
        .eval("performance.getEntriesByType('navigation')[0].duration")
        .as_f64()
        .unwrap();
    let circles = page
        .eval("document.querySelectorAll('#latency circle').length")
        .as_u64()
        .unwrap();
    eprintln!(
        "75,000 sets: report.html {size} bytes, written in {wrote:?}, loaded in {page_ms:.0} ms \
         ({loaded:?} with the browser's start), {circles} circles"
    );
    assert!(size < 1_500_000, "{size} bytes");
    assert!(page_ms < 5_000.0, "{page_ms} ms");
    assert!(loaded < Duration::from_secs(15), "{loaded:?}");
    assert!(circles as usize <= page::MAX_MARKERS + 20, "{circles}");
    let note = page.eval("document.body.innerText");
    assert!(
        note.as_str()
            .unwrap()
            .contains("too many to draw one by one")
    );
    assert!(note.as_str().unwrap().contains("75,000"));
    page.screenshot_page(&artifacts().join("report-75k.png"));
}

/// `sim --report`: a simulated run with loss and a partition writes a page whose latency chart
/// has a point for every set it sent and whose fault windows are the run's, in a real browser.
#[test]
fn a_simulated_runs_page_shows_its_sets_and_fault_windows() {
    let Some(browser) = find_browser_or_say_why() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = common::ok(&[
        "sim",
        "eh:1,1",
        "--seed",
        "3",
        "--duration",
        "4s",
        "--rate",
        "25",
        "--faults",
        "loss,partition",
        "--report",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    let run: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let beside: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(beside, run, "the JSON beside the page is the run's");
    let sent = run["sets_sent"].as_u64().unwrap();
    let windows: Vec<(String, String)> = run["fault_windows"]
        .as_array()
        .unwrap_or_else(|| panic!("{run}"))
        .iter()
        .map(|w| {
            (
                w["what"].as_str().unwrap().to_string(),
                w["place"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(sent >= 50, "{run}");
    assert!(
        windows.iter().any(|(what, _)| what.starts_with("loss"))
            && windows.iter().any(|(what, _)| what == "partition"),
        "{windows:?}"
    );

    let mut page = Browser::open(&browser, &file_url(&dir.path().join("report.html")));
    page.wait_for(
        "document.readyState == 'complete' && !!document.querySelector('svg#latency')",
        Duration::from_secs(15),
    );
    // The verdict comes first, above everything else, and says what the JSON says.
    let verdict = page.eval(
        "(() => { const v = document.getElementById('verdict'); \
         const first = document.querySelector('main > :not(h1)'); \
         return { class: v.className, text: v.innerText, first: first === v }; })()",
    );
    eprintln!("verdict: {verdict}");
    assert_eq!(verdict["first"], true, "{verdict}");
    let valid = run["verdict"]["valid"].as_bool().unwrap();
    assert_eq!(verdict["class"], if valid { "valid" } else { "invalid" });
    assert!(
        verdict["text"]
            .as_str()
            .unwrap()
            .starts_with(if valid { "Valid" } else { "Invalid" }),
        "{verdict}"
    );
    assert!(
        valid,
        "plain sets lost to loss and a partition are allowed: {run}"
    );
    let circles = page
        .eval("document.querySelectorAll('#latency circle').length")
        .as_u64()
        .unwrap();
    assert!(circles >= sent, "{circles} points for {sent} sets");
    let drawn = page.eval(
        "[...document.querySelectorAll('#latency g.fault-window')] \
         .map(g => [g.dataset.what, g.dataset.place])",
    );
    let drawn: Vec<(String, String)> = drawn
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w[0].as_str().unwrap().to_string(),
                w[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(drawn, windows, "every window of the run, drawn");
    let rows = page
        .eval("document.querySelectorAll('#windows tr.fault-window').length")
        .as_u64()
        .unwrap();
    assert_eq!(rows as usize, windows.len());
    let outcomes = page.eval("document.getElementById('outcomes').innerText");
    assert!(
        outcomes.as_str().unwrap().contains(&sent.to_string()),
        "{outcomes}"
    );
    page.screenshot_page(&artifacts().join("report-sim.png"));
}
