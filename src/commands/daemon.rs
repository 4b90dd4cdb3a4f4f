//! `cuberoute daemon --config node.toml [flags]`: run one node until SIGTERM.

use cuberoute_daemon::config::{DaemonArgs, NodeConfig};

pub fn run(args: DaemonArgs) -> anyhow::Result<()> {
    let config = NodeConfig::resolve(&args).map_err(|e| super::usage(e.to_string()))?;
    cuberoute_daemon::telemetry::init_logging(config.log_format);
    // One thread per daemon: a cluster runs many daemons on few cores.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(cuberoute_daemon::run(config))
}
