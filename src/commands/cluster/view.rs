//! `cuberoute cluster view [--port P]`: serve the live view of the cluster on 127.0.0.1 and
//! print its address; runs until interrupted (`cuberoute_cluster::ops::view`).

use crate::commands::args::ClientArg;
use crate::commands::{runtime, usage};
use cuberoute_cluster::ops::view::{self, MAX_NODES};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The port on 127.0.0.1 (0: any free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let cluster = args.dir.open()?;
    let topology = cluster.manifest.topology;
    if topology.node_count() > MAX_NODES {
        return Err(usage(format!(
            "{topology} has {} nodes: the view draws at most {MAX_NODES}",
            topology.node_count()
        )));
    }
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
            .await
            .map_err(|e| usage(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
        let addr = listener.local_addr()?;
        println!("cluster view of {topology}: http://{addr}/  (Ctrl-C to stop)");
        tokio::select! {
            served = view::serve(cluster, crate::svg::drawing(topology), listener) => served,
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    })
}
