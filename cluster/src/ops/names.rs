//! How the operator's tools name a node, the one place that decides it: in the topology's
//! notation (`00.10.1` on EH(2,2), as the papers write it), or by its integer id once the
//! command was given `--numeric`. What is printed, and the errors the cluster client makes,
//! name nodes through here; every command takes either spelling as input.

use cuberoute_protocol::{NodeId, Topology};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Whether nodes are named by their integer ids, for the whole process (one command).
static NUMERIC: AtomicBool = AtomicBool::new(false);

/// Name nodes by their integer ids from now on (`--numeric`).
pub fn name_nodes_numerically() {
    NUMERIC.store(true, Relaxed);
}

/// `v` as every command names it.
pub fn node(topology: Topology, v: NodeId) -> String {
    if NUMERIC.load(Relaxed) {
        v.0.to_string()
    } else {
        topology.format_node(v)
    }
}
