//! The subcommands, and the error convention they share: bad input is a [`UsageError`] and
//! exits 2; anything else exits 1.

pub mod bench;
pub mod chaos;
pub mod cluster;
pub mod cube_paths;
pub mod daemon;
pub mod demo;
pub mod family_paths;
pub mod paths;
pub mod recv;
pub mod send;
pub mod status;
pub mod study;
pub mod study_seed;
pub mod topology;

use cuberoute_protocol::{NodeId, Topology};

/// Input the user must fix: a malformed topology or id, a node out of range, a bad option.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// 2 for a [`UsageError`] anywhere in the chain, else 1.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<UsageError>()) {
        2
    } else {
        1
    }
}

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Read a topology name, as a usage error when malformed.
pub fn parse_topology(text: &str) -> anyhow::Result<Topology> {
    text.parse().map_err(|e| usage(format!("{e}")))
}

/// Read a node id of `topology`, as a usage error when malformed or out of range.
pub fn parse_node(topology: Topology, text: &str) -> anyhow::Result<NodeId> {
    topology.parse_node(text).map_err(|e| usage(format!("{e}")))
}

/// The async runtime of the client commands.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
