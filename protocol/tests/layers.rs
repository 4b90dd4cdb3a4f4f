//! The layers of `protocol/src`, checked: every file lies in one of the folders `topology`,
//! `paths`, `routing`, `delivery`, `seal` and `wire`, in that order from the bottom, and imports
//! only from its own layer and the layers below; and no two files import each other, directly or
//! round a longer loop. The compiler enforces neither (the layers are folders of one crate), so
//! this test does, with the checker the layering tests share (`tests/layering`, which says what
//! an import is and tests itself). `lib.rs` declares the layers and re-exports from all of them,
//! so it is exempt.

use cuberoute_layering::{Layers, Room, read_src};
use std::path::Path;

/// The layers, bottom first: each a folder of `src`.
const LAYERS: Layers = Layers {
    noun: "layer",
    layers: &[
        &[Room {
            name: "topology",
            modules: &["topology"],
        }],
        &[Room {
            name: "paths",
            modules: &["paths"],
        }],
        &[Room {
            name: "routing",
            modules: &["routing"],
        }],
        &[Room {
            name: "delivery",
            modules: &["delivery"],
        }],
        &[Room {
            name: "seal",
            modules: &["seal"],
        }],
        &[Room {
            name: "wire",
            modules: &["wire"],
        }],
    ],
    loops: true,
};

#[test]
fn imports_only_go_down_and_never_round_a_loop() {
    let files = read_src(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(files.len() > 40, "read {} files", files.len());
    let found = LAYERS.problems(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_folder_of_src_is_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    folders.sort();
    let mut layers: Vec<String> = LAYERS
        .layers
        .iter()
        .flat_map(|rooms| rooms.iter().map(|r| r.name.to_string()))
        .collect();
    layers.sort();
    assert_eq!(folders, layers);
    let loose: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(loose, ["lib.rs"], "every file but lib.rs lies in a layer");
}
