//! `cuberoute cluster client-cert --role read|send|operate|chaos [--as N,...] --out DIR`: a
//! client certificate of a role, signed by the cluster's CA
//! (`cuberoute_cluster::launch::generate::write_client_cert`; the roles are
//! `cuberoute_daemon::roles`). Exits 2 for an unknown role, `--as` with a role that does not send
//! or with a node outside the topology, no cluster (or no CA) in --dir, or an --out that holds
//! credentials already.

use crate::commands::args::DirArg;
use crate::commands::usage;
use cuberoute_cluster::launch::generate::{ClientCertError, write_client_cert};
use cuberoute_daemon::roles::{ClientRole, Role};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The cluster whose CA signs (its directory holds ca.pem and ca.key).
    #[command(flatten)]
    pub dir: DirArg,
    /// What the certificate may ask of the nodes, each role allowing what the ones before it
    /// do: read (status, show, recv, monitor, cluster view), send (also send, recv --consume,
    /// ping), operate (also cluster reload, cluster revoke), chaos (also every chaos request).
    #[arg(long)]
    pub role: String,
    /// Send and consume only at these nodes (comma-separated); a send or recv --consume at any
    /// other node is refused. Only for a role that sends.
    #[arg(long = "as", value_name = "N,...")]
    pub as_nodes: Option<String>,
    /// The directory to write ca.pem, client.pem and client.key into (made if missing; never
    /// one that holds a certificate already).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let role: Role = args
        .role
        .parse()
        .map_err(|e: String| usage(format!("--role: {e}")))?;
    let dir = args.dir.cluster();
    if !dir.is_cluster() {
        return Err(usage(format!(
            "{} holds no cluster (no manifest.toml): start one with `cuberoute cluster up`",
            dir.display()
        )));
    }
    let topology = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())
        .map_err(|e| usage(e.to_string()))?
        .topology;
    let as_nodes = match &args.as_nodes {
        Some(text) => Some(crate::commands::parse_set(topology, text, "--as")?),
        None => None,
    };
    let client = ClientRole::new(role, as_nodes).map_err(usage)?;
    let files = write_client_cert(&dir, &client, &args.out).map_err(|e| match e {
        ClientCertError::Usage(m) => usage(m),
        ClientCertError::Other(e) => e,
    })?;
    let shown = |p: &PathBuf| p.display().to_string();
    println!(
        "a client certificate of {client} for {topology} in {}: {}, {}, {}",
        dir.display(),
        shown(&files[0]),
        shown(&files[1]),
        shown(&files[2])
    );
    println!(
        "  use:     cuberoute cluster status --dir {} --cert {}",
        dir.display(),
        args.out.display()
    );
    Ok(())
}
