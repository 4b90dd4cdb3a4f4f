//! `cuberoute status --local [--config FILE]`: is the daemon of this node up? The container
//! healthcheck. It reads the node's configuration, and asks the daemon for its status with the
//! node's own certificate.

use super::{runtime, usage};
use cuberoute_daemon::client::Client;
use cuberoute_daemon::config::{DaemonArgs, NodeConfig};
use cuberoute_protocol::wire::control::{Request, Response};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ask the daemon configured in --config, on this machine (the only form so far).
    #[arg(long, required = true)]
    pub local: bool,
    /// The node's configuration.
    #[arg(long, default_value = "/node/node.toml")]
    pub config: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let config = NodeConfig::resolve(&DaemonArgs {
        config: Some(args.config),
        ..DaemonArgs::default()
    })
    .map_err(|e| usage(e.to_string()))?;
    let mut control = config.control_listen;
    if control.ip().is_unspecified() {
        control.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let runtime = runtime()?;
    let status = runtime.block_on(async {
        let client = Client::new(&config.credentials)?;
        let connection = client.connect(config.id, &control.to_string()).await?;
        let response = connection.request(&Request::Status).await;
        connection.close();
        anyhow::Ok(response?)
    })?;
    let Response::Status(status) = status else {
        anyhow::bail!("unexpected answer {status:?}");
    };
    println!(
        "node {} of {} up {:.1} s: {}/{} links up, {} forwarded, {} delivered, {} dropped; fault injection {}",
        crate::print::node(status.topology, status.id),
        status.topology,
        status.uptime_ms as f64 / 1000.0,
        status.links_up(),
        status.links.len(),
        status.counters.packets_forwarded,
        status.counters.packets_delivered,
        status.counters.dropped_total(),
        if status.config.chaos_allowed {
            "allowed"
        } else {
            "refused"
        }
    );
    Ok(())
}
