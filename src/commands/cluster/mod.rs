//! `cuberoute cluster ...`: a whole network as local processes or as containers.
//!
//! * `up`, `init`: [`up`] (local processes) and [`docker`] (`up --docker`, `compose`, `image`);
//! * `k8s`: [`k8s`]; `placement`: [`placement`]; `swarm`: [`swarm`];
//! * `status`, `down`, `logs`: here, the same for both kinds of cluster;
//! * `reload`, `revoke`, `view`: [`reload`], [`revoke`], [`view`];
//! * `client-cert`: [`client_cert`], a client certificate of a role.

pub mod client_cert;
pub mod docker;
pub mod k8s;
pub mod placement;
pub mod reload;
pub mod revoke;
pub mod swarm;
pub mod up;
pub mod view;

use super::args::{ClientArg, DirArg};
use super::{runtime, usage};
use crate::print;
use cuberoute_cluster::launch::runner;
use std::time::Duration;

pub use up::{InitArgs, UpArgs};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Generate a cluster and start it (local processes, or containers with --docker); wait
    /// until every node is up and every link is up.
    Up(UpArgs),
    /// Generate a cluster directory (CA, certificates, manifest, configs) without starting it.
    Init(InitArgs),
    /// Generate a cluster for containers and write its docker compose file.
    Compose(docker::ComposeArgs),
    /// Build the static binary and the FROM-scratch image cuberoute:<version> and cuberoute:local.
    Image,
    /// Write Kubernetes manifests: a StatefulSet with a headless Service.
    K8s(k8s::Args),
    /// Which host each node would run on over several hosts, and what losing one host costs
    /// (pairs cut off by an end, pairs that keep a path, paths kept), per placement.
    Placement(placement::Args),
    /// Deploy one container per node over the hosts of a Docker Swarm (a testbed's, or a real
    /// one's through its manager), each pinned to its host by the placement; wait until every
    /// task runs and every link is up.
    Swarm(swarm::Args),
    /// Per node: up or down, links up of degree, packet counters.
    Status(StatusArgs),
    /// Stop every node of the cluster and leave no process, container or network behind.
    Down(DownArgs),
    /// Print one node's log.
    Logs(LogsArgs),
    /// Every node (or those named) reads its configuration file again, as on SIGHUP: applies
    /// what may change without a restart, and says what changed and what needs a restart.
    Reload(reload::Args),
    /// Take a node out of the cluster for good: a new revocation list signed by the cluster's
    /// CA, written into every node's directory and pushed to every node, which refuse the
    /// node's links and sets from then on (--list: what is revoked, and where it is in force).
    Revoke(revoke::Args),
    /// Serve a live view of the cluster in the browser on 127.0.0.1: the topology, each link's
    /// state and load, each node's counters, the paths of sets as they are delivered.
    View(view::Args),
    /// Issue a client certificate of a role, signed by the cluster's CA, into a directory of
    /// its own that `--cert` then names: read (status, show, recv, monitor, view), send (also
    /// send, recv --consume and ping; --as limits it to some nodes), operate (also reload and
    /// revoke) or chaos (also every chaos request). The operator's certificate has every role.
    ClientCert(client_cert::Args),
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub dir: ClientArg,
    #[arg(long)]
    pub json: bool,
    /// First wait until the cluster is ready (every node answering, every link up, every
    /// container healthy), as `cluster up` does; fail if it is not within --timeout.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits (default: 30 s plus 100 ms per node).
    #[arg(long, requires = "wait", value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
}

#[derive(clap::Args, Debug)]
pub struct DownArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// Keep the containers' store volumes (compose and Swarm).
    #[arg(long)]
    pub keep_volumes: bool,
}

#[derive(clap::Args, Debug)]
pub struct LogsArgs {
    /// The node whose log to print.
    #[arg(long, value_name = "NODE", required_unless_present = "node_argument")]
    pub node: Option<String>,
    /// The node as an argument, the spelling before `--node` (kept for scripts).
    #[arg(hide = true, value_name = "NODE", conflicts_with = "node")]
    pub node_argument: Option<String>,
    #[command(flatten)]
    pub dir: DirArg,
    /// Keep printing what the node logs.
    #[arg(long, short)]
    pub follow: bool,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Up(args) if args.netns && args.docker.docker => Err(usage(
            "--netns does not combine with --docker: compose gives every container a network \
             namespace of its own already",
        )),
        Command::Up(args)
            if args.docker.docker
                && args.nodes_per_process
                    != cuberoute_cluster::launch::hosting::NodesPerProcess::default() =>
        {
            Err(usage(
                "--nodes-per-process is for local processes: with --docker, --nodes-per-container",
            ))
        }
        Command::Up(args)
            if !args.docker.docker
                && args.docker.nodes_per_container
                    != cuberoute_cluster::launch::hosting::NodesPerProcess::default() =>
        {
            Err(usage(
                "--nodes-per-container is for containers (--docker): local processes take --nodes-per-process",
            ))
        }
        Command::Up(args) if args.docker.docker => docker::up(&args),
        Command::Up(args) => up::up(&args),
        Command::Init(args) => up::init_command(&args),
        Command::Compose(args) => docker::compose(&args),
        Command::Image => docker::image(),
        Command::K8s(args) => k8s::run(&args),
        Command::Placement(args) => placement::run(&args),
        Command::Status(args) if args.wait => {
            let dir = args.dir.checked()?;
            runtime()?.block_on(cuberoute_cluster::ops::up::wait_running(&dir, args.timeout))?;
            print::status(&dir, args.json)
        }
        Command::Status(args) => print::status(&args.dir.checked()?, args.json),
        Command::Swarm(args) => swarm::run(&args),
        Command::Down(args) => print::down(&args.dir.cluster(), args.keep_volumes),
        Command::Logs(args) => logs(&args),
        Command::Reload(args) => reload::run(&args),
        Command::Revoke(args) => revoke::run(&args),
        Command::View(args) => view::run(&args),
        Command::ClientCert(args) => client_cert::run(&args),
    }
}

fn logs(args: &LogsArgs) -> anyhow::Result<()> {
    let dir = args.dir.cluster();
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())
        .map_err(|e| usage(e.to_string()))?;
    let node = args
        .node
        .as_deref()
        .or(args.node_argument.as_deref())
        .expect("clap requires one");
    let id = super::parse_node(manifest.topology, node)?;
    runner::logs(&dir, id, args.follow).map_err(|e| usage(e.to_string()))
}
