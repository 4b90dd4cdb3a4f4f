//! The rooms of `cluster/src`, checked: every module lies in one of the rooms `launch`, `ops`,
//! `chaos` and `bench`, and imports go one way: `launch` at the bottom, `ops` above it, `chaos`
//! and `bench` on top, neither importing the other. A module imports its own room and the rooms
//! below; never a room above, nor the room beside it. The compiler enforces none of it (the
//! rooms are folders of one crate), so this test does, with the checker the layering tests share
//! (`tests/layering`, which says what an import is and tests itself). Loops between the files of
//! one room are allowed (a folder's `mod.rs` and its files use each other). `lib.rs` declares
//! the rooms and re-exports from them, so it is exempt.

use cuberoute_layering::{Layers, Room, read_src};
use std::collections::BTreeMap;
use std::path::Path;

/// The rooms, bottom first; ARCHITECTURE.md's cluster section gives the same order.
const ROOMS: Layers = Layers {
    noun: "layer",
    layers: &[
        &[Room {
            name: "launch",
            modules: &["launch"],
        }],
        &[Room {
            name: "ops",
            modules: &["ops"],
        }],
        &[
            Room {
                name: "chaos",
                modules: &["chaos"],
            },
            Room {
                name: "bench",
                modules: &["bench"],
            },
        ],
    ],
    loops: false,
};

fn cluster_src() -> BTreeMap<String, String> {
    read_src(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn imports_go_down_and_never_sideways() {
    let files = cluster_src();
    assert!(files.len() > 40, "read {} files", files.len());
    let found = ROOMS.problems(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every file but `lib.rs` lies in a room's folder, and every room is there.
#[test]
fn every_module_is_in_a_room() {
    let files = cluster_src();
    let loose: Vec<&String> = files
        .keys()
        .filter(|f| !f.contains('/') && *f != "lib.rs")
        .collect();
    assert!(loose.is_empty(), "in no room: {loose:?}");
    let named = ROOMS.unused(&files);
    assert!(named.is_empty(), "{named:?}");
}
