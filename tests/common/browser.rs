//! A headless Chromium driven over the DevTools protocol, for the browser tests (view.rs,
//! report.rs): found on PATH or installed from Debian's packages by
//! tests/browser/install-chromium.

use super::{read_until, within};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tungstenite::stream::MaybeTlsStream;

/// The browser, or `None` after saying on the real stderr why there is none (the harness does
/// not capture it): a browser test never passes silently.
pub fn find_browser_or_say_why() -> Option<PathBuf> {
    match find_browser() {
        Ok(browser) => Some(browser),
        Err(why) => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** BROWSER TEST SKIPPED: {why}\n*** install one with tests/browser/install-chromium\n"
            );
            None
        }
    }
}

/// A headless Chromium, killed when dropped, with every process it started: Debian's
/// `/usr/bin/chromium*` is a shell script that runs the browser as its child (not `exec`), and
/// the browser starts zygotes, renderers and a GPU process, so the browser runs in a process
/// group of its own and the whole group is killed.
pub struct Browser {
    pub child: Child,
    socket: tungstenite::WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

/// The browser on PATH, installing one with the project's script if there is none.
pub fn find_browser() -> Result<PathBuf, String> {
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
    pub fn open(browser: &PathBuf, url: &str) -> Browser {
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
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
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
    pub fn eval(&mut self, expression: &str) -> Value {
        let session = self.session.clone();
        let result = self.call(
            Some(&session),
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        result["result"]["value"].clone()
    }

    /// Wait up to `limit` for `expression` to be true in the page; how long it took.
    pub fn wait_for(&mut self, expression: &str, limit: Duration) -> Duration {
        within(limit, || self.eval(expression) == true)
            .unwrap_or_else(|| panic!("not true within {limit:?}: {expression}"))
    }

    pub fn screenshot(&mut self, file: &PathBuf) {
        self.screenshot_with(file, json!({}));
    }

    /// A screenshot of the whole page, not only the window.
    pub fn screenshot_page(&mut self, file: &PathBuf) {
        let size = self
            .eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]");
        let clip = json!({ "x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1 });
        self.screenshot_with(file, json!({ "captureBeyondViewport": true, "clip": clip }));
    }

    /// `Page.captureScreenshot` with `params`, written as a PNG to `file`.
    pub fn screenshot_with(&mut self, file: &PathBuf, params: Value) {
        use base64::Engine;
        let session = self.session.clone();
        let shot = self.call(Some(&session), "Page.captureScreenshot", params);
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
