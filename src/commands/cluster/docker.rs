//! `cluster up --docker`, `cluster compose` and `cluster image`: clusters of containers from the
//! FROM-scratch image.

use super::super::parse_topology;
use super::UpArgs;
use crate::commands::args::DirArg;
use crate::print;
use cuberoute_cluster::launch::docker::{self, DEFAULT_IMAGE};
use cuberoute_cluster::launch::hosting::NodesPerProcess;
use cuberoute_cluster::launch::start::{Containers, Note, check_subnet, ensure_free};
use cuberoute_cluster::{Ports, launch::compose};
use std::net::Ipv4Addr;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct DockerArgs {
    /// Run every node as a container with docker compose, from the FROM-scratch image (built
    /// first if missing).
    #[arg(long)]
    pub docker: bool,
    /// The /16 network the containers get (node i at subnet + 2 + i).
    #[arg(long, default_value = "10.200.0.0")]
    pub subnet: Ipv4Addr,
    /// The image to run.
    #[arg(long, default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// How many nodes each container runs (with --docker): N, or `auto` (one container per
    /// core). The nodes of a container are one process, linked with each other by a call and
    /// sharing its ports (docs/daemon.md, "Several nodes in one process").
    #[arg(long, value_name = "N|auto", default_value = "1")]
    pub nodes_per_container: NodesPerProcess,
}

#[derive(clap::Args, Debug)]
pub struct ComposeArgs {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    #[command(flatten)]
    pub dir: DirArg,
    /// Where to write the compose file (default: DIR/compose.yml).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The /16 network the containers get (node i at subnet + 2 + i).
    #[arg(long, default_value = "10.200.0.0")]
    pub subnet: Ipv4Addr,
    /// The image to run.
    #[arg(long, default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// How many nodes each container runs: N, or `auto` (one container per core).
    #[arg(long, value_name = "N|auto", default_value = "1")]
    pub nodes_per_container: NodesPerProcess,
}

/// `cluster compose`: the cluster directory for containers, and its compose file.
pub fn compose(args: &ComposeArgs) -> anyhow::Result<()> {
    let topology = parse_topology(&args.topology)?;
    let containers = Containers {
        topology,
        dir: args.dir.cluster(),
        subnet: args.subnet,
        image: args.image.clone(),
        nodes_per_container: args.nodes_per_container,
    };
    let groups = containers.groups()?;
    check_subnet(args.subnet, topology)?;
    let dir = &containers.dir;
    ensure_free(dir)?;
    let run = docker::prepare(dir, topology, args.subnet, &args.image, &groups)?;
    if let Some(output) = &args.output {
        std::fs::write(
            output,
            compose::compose_file(
                topology,
                args.subnet,
                Ports::default(),
                &args.image,
                &groups,
            ),
        )?;
    }
    let file = args.output.as_deref().unwrap_or(&run.compose_file);
    println!(
        "compose file for {topology} ({} services) written to {}; its node directories are in {}",
        groups.len(),
        file.display(),
        dir.nodes().display()
    );
    println!(
        "  run it:  CUBEROUTE_DIR={} docker-compose -f {} up -d   (or: cuberoute cluster up {topology} --docker)",
        std::path::absolute(dir.path())?.display(),
        file.display()
    );
    Ok(())
}

/// `cluster image`.
pub fn image() -> anyhow::Result<()> {
    print::note(Note::ImageBuilt(&docker::build_this_image()?));
    Ok(())
}

/// `cluster up --docker`: generate, build the image if missing, compose up, wait until every
/// container is healthy and every link is up; print a summary.
pub fn up(args: &UpArgs) -> anyhow::Result<()> {
    let containers = Containers {
        topology: parse_topology(&args.init.topology)?,
        dir: args.init.dir.cluster(),
        subnet: args.docker.subnet,
        image: args.docker.image.clone(),
        nodes_per_container: args.docker.nodes_per_container,
    };
    let up = print::start_containers(&containers, args.timeout(containers.topology))?;
    let what = print::hosted(containers.nodes_per_container, "container", "containers");
    print::up_summary(&up, &what)
}
