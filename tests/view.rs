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
    assert_eq!(page.eval("document.body.dataset.nodesUp"), "31");

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
