//! The tiers of `daemon/src`, checked: every module of the daemon lies in one of the tiers of
//! [`TIERS`], and imports only from its own tier and the tiers below; and no two files import
//! each other, directly or round a longer loop (a module's files, such as `node/`'s, included).
//! ARCHITECTURE.md's daemon section gives the same order. The compiler enforces neither (the
//! modules are one crate), so this test does, with the checker the layering tests share
//! (`tests/layering`, which says what an import is and tests itself). `lib.rs` declares the
//! modules and starts the node from all of them, so it is exempt: it is the top.

use cuberoute_layering::{Layers, Room, read_src};
use std::collections::BTreeMap;
use std::path::Path;

/// The tiers, bottom first: each a name and the modules in it (the first part of their path).
const TIERS: Layers = Layers {
    noun: "tier",
    layers: &[
        &[Room {
            name: "ground",
            modules: &[
                "env",
                "io_counts",
                "shaper",
                "net",
                "priority",
                "keys",
                "roles",
                "tls",
                "client",
                "manifest",
                "disk",
                "store",
                "config",
                "packed",
                "journal",
                "stats",
                "logging",
                "reload",
                "budget",
                "waiters",
                "liveness",
                "exits",
            ],
        }],
        &[Room {
            name: "node's parts",
            modules: &[
                "output", "relay", "chaos", "delivery", "sealing", "keeping", "down",
            ],
        }],
        &[Room {
            name: "link",
            modules: &["link"],
        }],
        &[Room {
            name: "node",
            modules: &["node"],
        }],
        &[Room {
            name: "on a node",
            modules: &[
                "faults",
                "replay",
                "accept",
                "control",
                "telemetry",
                "quiet",
                "host",
            ],
        }],
    ],
    loops: true,
};

fn daemon_src() -> BTreeMap<String, String> {
    read_src(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn imports_only_go_down_and_never_round_a_loop() {
    let files = daemon_src();
    assert!(files.len() > 30, "read {} files", files.len());
    let found = TIERS.problems(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every module of `src` is in exactly one tier, and every module a tier names is there.
#[test]
fn every_module_is_in_one_tier() {
    let files = daemon_src();
    let unlisted: Vec<String> = TIERS
        .problems(&files)
        .into_iter()
        .filter(|p| p.contains("is in no room"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "{unlisted:?}; put each in the lowest tier its imports allow, here and in ARCHITECTURE.md"
    );
    let named = TIERS.unused(&files);
    assert!(named.is_empty(), "{named:?}");
}
