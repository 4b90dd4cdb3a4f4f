//! `cluster view` in a real headless browser: Chromium (installed from Debian's packages by
//! tests/browser/install-chromium when missing), driven over the DevTools protocol. The page
//! draws every node and link, follows the cluster live (a cut link and a crashed node show as
//! such), draws delivered paths, and a screenshot is kept in target/test-artifacts/.

mod common;

use common::browser::{Browser, find_browser_or_say_why};
use common::{Cluster, stat_fields, within};
use std::path::PathBuf;
use std::time::Duration;

#[test]
fn the_view_draws_the_cluster_and_follows_a_cut_link_and_a_crashed_node() {
    let Some(browser) = find_browser_or_say_why() else {
        return;
    };
    let cluster = Cluster::up("eh:2,2", "127.2.80.0");
    let mut view = cluster.spawn(&["cluster", "view"]);
    let said = view.wait_for_stdout("http://127.0.0.1:");
    let url = said
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();
    let mut page = Browser::open(&browser, &url);

    page.wait_for(
        "Number(document.body.dataset.updates || 0) >= 1",
        Duration::from_secs(15),
    );
    assert_eq!(
        page.eval("document.querySelectorAll('circle.node').length"),
        32
    );
    assert_eq!(
        page.eval("document.querySelectorAll('path.link').length"),
        48
    );
    page.wait_for(
        "document.querySelectorAll('path.link.up').length == 48 && document.body.dataset.nodesUp == '32'",
        Duration::from_secs(10),
    );

    // A set delivered: its three paths are drawn.
    cluster.ok(&[
        "send",
        "--from",
        "0",
        "--to",
        "30",
        "--message",
        "v",
        "--wait",
    ]);
    page.wait_for(
        "Number(document.body.dataset.flows || 0) >= 3",
        Duration::from_secs(10),
    );
    // One colour for the set's three copies; the side panel names nodes as the map does.
    assert_eq!(
        page.eval(
            "new Set([...document.querySelectorAll('path.flow')].map(p => p.getAttribute('stroke'))).size"
        ),
        1
    );
    let deliveries = page.eval("document.getElementById('deliveries').textContent");
    let deliveries = deliveries.as_str().unwrap();
    assert!(
        deliveries.contains("00.00.0 -> 11.11.0 copy ") && deliveries.contains(" via 00.00.0 "),
        "{deliveries}"
    );
    // A legend for every colour and mark of the map.
    assert_eq!(
        page.eval("[...document.querySelectorAll('#legend [data-mark]')].map(e => e.dataset.mark).join(' ')"),
        "node-up node-busy node-down link-up link-dummy link-down link-cut link-unknown flow"
    );
    // The drawing fills the window's width or its height (the nodes' box, inside the layout's
    // margins for labels and arcs: 76% of a 1280 px window's canvas when written).
    let filled: f64 = page
        .eval(
            "(() => { const c = document.getElementById('canvas'), r = document.getElementById('nodes').getBoundingClientRect(); \
             return Math.max(r.width / c.clientWidth, r.height / c.clientHeight); })()",
        )
        .as_f64()
        .unwrap();
    assert!(filled > 0.7, "the drawing takes {filled} of the window");

    // A cut link, then a crashed node, show as such.
    cluster.ok(&["chaos", "cut", "--link", "0-1"]);
    let cut = page.wait_for(
        "document.querySelector('path.link[data-a=\"0\"][data-b=\"1\"]').classList.contains('cut')",
        Duration::from_secs(5),
    );
    let pid = cluster.node_status(5)["pid"].as_u64().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let crashed = page.wait_for(
        "document.querySelector('circle.node[data-id=\"5\"]').classList.contains('down')",
        Duration::from_secs(8),
    );
    eprintln!("the page showed the cut after {cut:?}, the crash after {crashed:?}");
    // The circle turns at the notice that the node does not answer; the count at the next
    // round of statuses.
    page.wait_for(
        "document.body.dataset.nodesUp == '31'",
        Duration::from_secs(5),
    );
    // Its notices say so, in the topology's notation.
    page.wait_for(
        "document.getElementById('notices').textContent.includes('node 00.10.1 not answering')",
        Duration::from_secs(8),
    );
    let notices = page.eval("document.getElementById('notices').textContent");
    let notices = notices.as_str().unwrap();
    assert!(notices.contains("cut"), "{notices}");

    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts");
    let shot = artifacts.join("cluster-view.png");
    page.screenshot(&shot);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());

    // The page and its routes answer; a second view on the same port is refused.
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    cluster.refused(&["cluster", "view", "--port", &port]);

    // Nothing of the browser outlives the test.
    let group = page.child.id();
    drop(page);
    let left = within(Duration::from_secs(5), || {
        running_in_group(group).is_empty()
    });
    assert!(
        left.is_some(),
        "browser processes left behind: {:?}",
        running_in_group(group)
    );
}

/// Processes of process group `group` that have not exited (a zombie has).
fn running_in_group(group: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            // State, ppid, pgrp.
            stat_fields(pid).is_some_and(|f| {
                f.len() > 2 && f[0] != "Z" && f[2].parse::<u32>().ok() == Some(group)
            })
        })
        .collect()
}
