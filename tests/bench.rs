//! `cuberoute bench` on a small cluster of real processes: what woke the daemons, counted
//! apart, and the ring of as many raw relays as the cluster has daemons, in its JSON; nothing
//! left running afterwards. (The figures themselves are BENCHMARKS.md's, never asserted here.)

use serde_json::Value;
use std::process::Command;

/// A bench takes fixed addresses (its clusters', its baseline's): one at a time.
static ONE_BENCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

/// How many processes' command lines mention both `needle` and `word`.
fn processes_mentioning_both(needle: &str, word: &str) -> usize {
    processes_mentioning(needle)
        .into_iter()
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(word))
        })
        .count()
}

fn number(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn bench_counts_what_wakes_the_daemons_and_runs_a_ring_and_a_mesh_of_their_number() {
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["bench", "q:2", "--dir", dir_arg, "--json"])
        .args([
            "--samples",
            "5",
            "--duration",
            "1s",
            "--concurrency",
            "4",
            "--quiet",
            "1s",
            "--sweep",
            "8",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let figures: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cluster = &figures["clusters"][0];
    assert_eq!(cluster["topology"], "q:2");
    // The load generator raises its priority where it may: as root, to -20.
    let nice = number(cluster, "load_generator_nice");
    if nix::unistd::geteuid().is_root() {
        assert_eq!(nice, -20.0, "{cluster}");
    }

    // What the start cost: every daemon read, and its CPU no more than the start's wall time
    // on every core.
    let start = &cluster["startup_cpu"];
    assert_eq!(number(start, "daemons"), 4.0, "{start}");
    let cores = number(start, "cores");
    let daemons = number(start, "daemons_seconds");
    assert!(daemons > 0.0, "{start}");
    assert!(
        daemons + number(start, "launcher_seconds")
            <= (number(cluster, "startup_seconds") + 0.1) * cores,
        "{start}"
    );

    // Every packet-hop is a datagram some daemon received, after a wake-up.
    for window in ["wakeups_sequential", "wakeups_saturation"] {
        let w = &cluster[window];
        assert!(number(w, "packet_hops") > 0.0, "{window}: {w}");
        assert!(number(w, "wakeups") > 0.0, "{window}: {w}");
        for positive in [
            "wakeups_per_packet_hop",
            "datagrams_sent_per_packet_hop",
            "send_calls_per_packet_hop",
            "receive_calls_per_packet_hop",
        ] {
            assert!(number(w, positive) > 0.0, "{window}.{positive}: {w}");
        }
        for counted in [
            "preempted_per_packet_hop",
            "timer_wakeups_per_packet_hop",
            "quic_timers_per_packet_hop",
            "link_timers_per_packet_hop",
            "keepalives_per_packet_hop",
            "link_ack_frames_per_packet_hop",
        ] {
            assert!(number(w, counted) >= 0.0, "{window}.{counted}: {w}");
        }
        // A live cluster under load loses no link: a slow neighbour is not a dead one.
        assert_eq!(number(w, "links_lost"), 0.0, "{window}: {w}");
        assert_eq!(number(w, "frames_resent"), 0.0, "{window}: {w}");
        let timers =
            number(w, "quic_timers_per_packet_hop") + number(w, "link_timers_per_packet_hop");
        assert!((number(w, "timer_wakeups_per_packet_hop") - timers).abs() < 1e-9);
    }
    assert_eq!(
        number(cluster, "wakeups_per_packet_hop"),
        number(&cluster["wakeups_saturation"], "wakeups_per_packet_hop")
    );

    // One set at a time on the farthest and the adjacent pair of Q_2: each set of either takes
    // four packet-hops (two paths of two hops; one of one and one of three), so no line splits
    // their CPU into a set's and a hop's.
    for window in ["cpu_sequential", "cpu_sequential_adjacent"] {
        let cost = &cluster[window];
        assert_eq!(number(cost, "packet_hops"), 5.0 * 4.0, "{window}: {cost}");
        assert!(number(cost, "cpu_seconds") > 0.0, "{window}: {cost}");
    }
    assert!(cluster["cpu_sequential_split"].is_null(), "{cluster}");

    // The client's two requests per set, measured apart: each costs the daemons something,
    // and less than a whole set (four packet-hops and the same two requests) does.
    let requests = &cluster["cpu_sequential_requests"];
    assert_eq!(number(requests, "requests_per_set"), 2.0, "{requests}");
    let per_request = number(requests, "cpu_us_per_request");
    let per_set = number(&cluster["cpu_sequential"], "cpu_seconds") * 1e6 / 5.0;
    assert!(per_request > 0.0 && per_request < per_set, "{requests}");
    let besides = number(requests, "cpu_us_per_packet_hop_besides");
    assert!(
        besides < number(&cluster["cpu_sequential"], "cpu_us_per_packet_hop"),
        "{requests}"
    );

    // The sweep: one more saturation run, with 8 sets in flight, on the live cluster.
    let sweep = cluster["saturation_sweep"].as_array().expect("a sweep");
    assert_eq!(sweep.len(), 1, "{sweep:?}");
    let point = &sweep[0];
    assert_eq!(point["saturation"]["concurrency"], 8, "{point}");
    assert!(
        number(&point["saturation"], "sets_completed") > 0.0,
        "{point}"
    );
    assert!(number(&point["saturation"], "packet_hops_per_second") > 0.0);
    assert!(
        number(&point["cpu"], "cpu_us_per_packet_hop") > 0.0,
        "{point}"
    );
    assert!(
        number(&point["wakeups"], "wakeups_per_packet_hop") > 0.0,
        "{point}"
    );
    assert_eq!(number(&point["wakeups"], "links_lost"), 0.0, "{point}");

    // Key agreements: Q_2 has 12 ordered pairs, and the warm-up met two of them (node 0 to the
    // farthest and to the adjacent node), so the random pairs of both runs set up at most ten,
    // each at both ends: every set completed, so every pair sealed to was opened.
    let runs = [
        (
            &cluster["key_agreements_saturation"],
            &cluster["cpu_saturation"],
        ),
        (&point["key_agreements"], &point["cpu"]),
    ];
    let mut agreed = 0.0;
    for (k, cpu) in runs {
        assert_eq!(number(k, "to_seal"), number(k, "to_open"), "{k}");
        agreed += number(k, "to_seal");
        let share = number(k, "share_of_cpu");
        assert!((0.0..=1.0).contains(&share), "{k}");
        assert_eq!(
            number(k, "cpu_seconds") > 0.0,
            number(k, "to_seal") > 0.0,
            "{k}"
        );
        assert!(
            number(k, "cpu_us_per_packet_hop_besides") <= number(cpu, "cpu_us_per_packet_hop"),
            "{k} {cpu}"
        );
    }
    let first = number(&cluster["key_agreements_saturation"], "to_seal");
    assert!(
        first >= 1.0 && agreed <= 10.0,
        "{first} then {agreed} in all"
    );

    // The ring: the cluster's four nodes, this process being node 0.
    let ring = &cluster["relay_ring"];
    assert_eq!(ring["processes"], 4, "{ring}");
    for positive in [
        "cpu_us_per_frame_hop_sequential",
        "cpu_us_per_frame_hop_pipelined",
        "frame_hops_per_second",
        "wakeups_per_frame_hop_sequential",
    ] {
        assert!(number(ring, positive) > 0.0, "ring.{positive}: {ring}");
    }
    assert!(number(&ring["per_hop"], "p50_us") > 0.0);

    // The mesh: the same four processes on the square's links, frames touring eight random
    // pairs (at least one hop each), as many touring as the saturation run had packets in
    // flight (4 sets of k = 2 copies).
    let mesh = &cluster["relay_mesh"];
    assert_eq!(mesh["processes"], 4, "{mesh}");
    assert_eq!(mesh["window"], 8, "{mesh}");
    assert!(number(mesh, "hops_per_tour") >= number(mesh, "pairs_per_tour"));
    for positive in [
        "cpu_us_per_frame_hop_sequential",
        "cpu_us_per_frame_hop_pipelined",
        "frame_hops_per_second",
        "wakeups_per_frame_hop_sequential",
    ] {
        assert!(number(mesh, positive) > 0.0, "mesh.{positive}: {mesh}");
    }
    assert!(number(&mesh["per_hop"], "p50_us") > 0.0);

    // No daemon and no relay of the ring is left: each had the cluster's directory in its
    // command line (the daemon's configuration, the relay's certificate).
    let left = processes_mentioning(dir_arg);
    assert!(left.is_empty(), "left running: {left:?}");
}

/// A bench killed while its ring or its mesh runs takes their relays with it: each relay ends
/// with the bench that started it.
#[test]
fn a_killed_bench_leaves_no_relay_of_its_ring() {
    killed_while_running("bench-relay-ring");
}

#[test]
fn a_killed_bench_leaves_no_relay_of_its_mesh() {
    killed_while_running("bench-relay-mesh");
}

fn killed_while_running(relay_command: &str) {
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap().to_string();
    let mut bench = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["bench", "q:2", "--dir", &dir_arg, "--json"])
        .args([
            "--samples",
            "5",
            "--duration",
            "3s",
            "--concurrency",
            "4",
            "--quiet",
            "1s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let relays = || processes_mentioning_both(&dir_arg, relay_command);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while relays() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "no {relay_command} started"
        );
        assert!(bench.try_wait().unwrap().is_none(), "the bench ended first");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    bench.kill().unwrap();
    bench.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while relays() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "relays left running 30 s after their bench was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Ctrl-C or SIGTERM while a bench's cluster runs stops the cluster: its daemons, each in a
/// process group of their own, are not left running, and the bench ends with status 130.
#[test]
fn an_interrupted_bench_stops_its_cluster() {
    for signal in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        interrupted_while_its_cluster_runs(signal);
    }
}

/// Killed outright, a bench cannot stop its cluster; the kernel ends its daemons for it (each
/// started to end with the bench).
#[test]
fn a_killed_bench_takes_its_daemons_with_it() {
    interrupted_while_its_cluster_runs(nix::sys::signal::Signal::SIGKILL);
}

fn interrupted_while_its_cluster_runs(signal: nix::sys::signal::Signal) {
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap().to_string();
    let mut bench = Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["bench", "q:2", "--dir", &dir_arg, "--json"])
        .args(["--samples", "200", "--duration", "3s", "--concurrency", "4"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let daemons = || processes_mentioning_both(&dir_arg, "\0daemon\0");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while daemons() < 4 {
        assert!(std::time::Instant::now() < deadline, "no cluster started");
        assert!(bench.try_wait().unwrap().is_none(), "the bench ended first");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Into the measurement, past the start.
    std::thread::sleep(std::time::Duration::from_millis(500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(bench.id() as i32), signal).unwrap();
    let out = bench.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if signal == nix::sys::signal::Signal::SIGKILL {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(9), "{stderr}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while daemons() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "daemons left running 30 s after their bench was killed"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        return;
    }
    assert_eq!(out.status.code(), Some(130), "{signal}: {stderr}");
    assert!(
        stderr.contains("interrupted: cluster in") && stderr.contains("stopped"),
        "{signal}: {stderr}"
    );
    assert_eq!(daemons(), 0, "{signal}: daemons left after the bench ended");
    assert!(
        !dir.path().join("q-2").join("run.toml").exists(),
        "{signal}: the run state is left"
    );
}
