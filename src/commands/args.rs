//! The argument blocks more than one command takes, each flattened into a command's own `Args`
//! (`#[command(flatten)]`): the cluster directory ([`DirArg`]), the cluster and the client
//! certificate of a client command ([`ClientArg`]), a pair of nodes ([`PairArgs`]) and JSON
//! output ([`JsonArg`]). One definition of each flag: its spelling, its type and its parsing.
//!
//! Where a command words a flag's help its own way, it keeps its wording with
//! `#[command(mut_arg("json", |a| a.help("...")))]` on its `Args` (the help of each command is
//! as it was before these blocks were shared). This is the one module of `commands/` that the
//! commands share besides `mod.rs`.

use super::usage;
use cuberoute_cluster::{ClusterClient, ClusterDir};
use std::path::PathBuf;

pub const DEFAULT_DIR: &str = "cuberoute-cluster";

#[derive(clap::Args, Debug, Clone)]
pub struct DirArg {
    /// The cluster directory.
    #[arg(long, default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
}

impl DirArg {
    pub fn cluster(&self) -> ClusterDir {
        ClusterDir::new(&self.dir)
    }
}

/// The cluster a client command talks to, and the client certificate it talks with.
#[derive(clap::Args, Debug, Clone)]
pub struct ClientArg {
    #[command(flatten)]
    pub dir: DirArg,
    /// The client certificate: a directory holding ca.pem, client.pem and client.key, as
    /// `cuberoute cluster client-cert --out` writes one; the nodes answer what its role allows.
    /// Default: the cluster's operator certificate in --dir (every role).
    #[arg(long, value_name = "CERT_DIR")]
    pub cert: Option<PathBuf>,
}

impl ClientArg {
    /// The cluster, reached with --cert's credentials (unchecked: see [`ClientArg::checked`]).
    pub fn cluster(&self) -> ClusterDir {
        self.dir.cluster().with_client(self.cert.clone())
    }

    /// The cluster, once --cert is known to hold a client certificate of it (a usage error
    /// otherwise: missing, incomplete, or of another cluster).
    pub fn checked(&self) -> anyhow::Result<ClusterDir> {
        let dir = self.cluster();
        if dir.client_dir().is_some() {
            cuberoute_cluster::launch::certs::client_credentials(&dir)
                .map_err(|e| usage(format!("{e:#}")))?;
        }
        Ok(dir)
    }

    /// A client of the cluster (needs a tokio runtime); no cluster there or an unusable --cert
    /// is a usage error.
    pub fn open(&self) -> anyhow::Result<ClusterClient> {
        ClusterClient::open(&self.cluster()).map_err(|e| usage(format!("{e:#}")))
    }
}

/// A source and a destination: `--from` and `--to`.
#[derive(clap::Args, Debug, Clone)]
pub struct PairArgs {
    /// The source node.
    #[arg(long)]
    pub from: String,
    /// The destination node.
    #[arg(long)]
    pub to: String,
}

/// `--json`: the output as JSON instead of text.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct JsonArg {
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}
