//! `cluster view` in a real headless browser: Chromium (installed from Debian's packages by
//! tests/browser/install-chromium when missing), driven over the DevTools protocol. The page
//! draws every node and link, follows the cluster live (a cut link and a crashed node show as
//! such), draws delivered paths, and a screenshot is kept in target/test-artifacts/.

mod common;

use common::{Cluster, read_until, stat_fields, within};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tungstenite::stream::MaybeTlsStream;

/// A headless Chromium, killed when dropped, with every process it started: Debian's
/// `/usr/bin/chromium*` is a shell script that runs the browser as its child (not `exec`), and
/// the browser starts zygotes, renderers and a GPU process, so the browser runs in a process
/// group of its own and the whole group is killed.
struct Browser {
    child: Child,
    socket: tungstenite::WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

/// The browser on PATH, installing one with the project's script if there is none.
fn find_browser() -> Result<PathBuf, String> {
    let find = || {
        ["chromium-headless-shell", "chromium", "google-chrome"]
            .iter()
            .find_map(|name| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|dir| dir.join(name))
                        .find(|p| p.is_file())
                })
            })
    };
    if let Some(browser) = find() {
        return Ok(browser);
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/browser/install-chromium"
    );
    let out = Command::new(script)
        .output()
        .map_err(|e| format!("{script}: {e}"))?;
    find().ok_or_else(|| {
        format!(
            "{script} could not install Chromium: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

impl Browser {
    /// Start the browser and open `url` in a tab.
    fn open(browser: &PathBuf, url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(browser)
            .process_group(0)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the browser starts");
        let said = read_until(child.stderr.as_mut().unwrap(), "DevTools listening on");
        let ws = said
            .lines()
            .last()
            .and_then(|l| l.split_whitespace().last())
            .unwrap()
            .to_string();
        // Chromium keeps writing to stderr: drain it so that it never blocks.
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let (socket, _) = tungstenite::connect(&ws).expect("the DevTools socket opens");
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
        }
        let mut b = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = b.call(None, "Target.createTarget", json!({ "url": url }));
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = b.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b
    }

    /// Call a DevTools method (in the tab's session, if `session`), and return its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        self.socket
            .send(tungstenite::Message::text(message.to_string()))
            .unwrap();
        loop {
            let reply = self.socket.read().expect("DevTools answers");
            let Ok(text) = reply.to_text() else { continue };
            let reply: Value = serde_json::from_str(text).unwrap();
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// Evaluate `expression` in the page.
    fn eval(&mut self, expression: &str) -> Value {
        let session = self.session.clone();
        let result = self.call(
            Some(&session),
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        result["result"]["value"].clone()
    }

    /// Wait up to `limit` for `expression` to be true in the page; how long it took.
    fn wait_for(&mut self, expression: &str, limit: Duration) -> Duration {
        within(limit, || self.eval(expression) == true)
            .unwrap_or_else(|| panic!("not true within {limit:?}: {expression}"))
    }

    fn screenshot(&mut self, file: &PathBuf) {
        use base64::Engine;
        let session = self.session.clone();
        let shot = self.call(Some(&session), "Page.captureScreenshot", json!({}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

#[test]
fn the_view_draws_the_cluster_and_follows_a_cut_link_and_a_crashed_node() {
    let browser = match find_browser() {
        Ok(browser) => browser,
        Err(why) => {
            // Said on the real stderr (the harness does not capture it): never a silent pass.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** BROWSER TEST SKIPPED: {why}\n*** install one with tests/browser/install-chromium\n"
            );
            return;
        }
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
