//! `cluster up --docker`, `cluster compose` and `cluster image`: clusters of containers from the
//! FROM-scratch image.

use super::super::{runtime, usage};
use super::{UpArgs, check_size, ensure_free, print_summary, wait_ready};
use crate::commands::args::DirArg;
use cuberoute_cluster::launch::docker::{self, Compose};
use cuberoute_cluster::launch::run_state::RunState;
use cuberoute_cluster::{Ports, launch::compose};
use cuberoute_protocol::Topology;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The image every generated compose file and manifest uses unless told otherwise.
pub const DEFAULT_IMAGE: &str = "cuberoute:local";

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
}

impl DockerArgs {
    /// Not a docker cluster.
    pub fn none() -> DockerArgs {
        DockerArgs {
            docker: false,
            subnet: Ipv4Addr::new(10, 200, 0, 0),
            image: DEFAULT_IMAGE.into(),
        }
    }
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
}

fn check_subnet(subnet: Ipv4Addr, topology: Topology) -> anyhow::Result<()> {
    if u32::from(subnet) & 0xffff != 0 || topology.node_count() > 65_000 {
        return Err(usage(format!(
            "--subnet {subnet} must be the base of a /16 (like 10.200.0.0)"
        )));
    }
    Ok(())
}

/// `cluster compose`: the cluster directory for containers, and its compose file.
pub fn compose(args: &ComposeArgs) -> anyhow::Result<()> {
    let topology = super::super::parse_topology(&args.topology)?;
    check_size(topology)?;
    check_subnet(args.subnet, topology)?;
    let dir = args.dir.cluster();
    ensure_free(&dir)?;
    let run = docker::prepare(&dir, topology, args.subnet, &args.image)?;
    if let Some(output) = &args.output {
        std::fs::write(
            output,
            compose::compose_file(topology, args.subnet, Ports::default(), &args.image),
        )?;
    }
    let file = args.output.as_deref().unwrap_or(&run.compose_file);
    println!(
        "compose file for {topology} ({} services) written to {}; its node directories are in {}",
        topology.node_count(),
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

/// The source tree the binary was built from, where `cluster image` builds.
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `cluster image`.
pub fn image() -> anyhow::Result<()> {
    docker::available().map_err(|e| anyhow::anyhow!("the Docker engine is not available: {e}"))?;
    let started = Instant::now();
    let tags = docker::build_image(workspace(), env!("CARGO_PKG_VERSION"))?;
    let size = docker::image_size(&tags[0])?;
    println!(
        "built {} in {:.0} s: {:.1} MB, FROM scratch",
        tags.join(" and "),
        started.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );
    Ok(())
}

/// `cluster up --docker`: generate, build the image if missing, compose up, wait until every
/// container is healthy and every link is up; print a summary. Returns that time.
pub fn up(args: &UpArgs) -> anyhow::Result<Duration> {
    let elapsed = start(args)?;
    let topology = super::super::parse_topology(&args.init.topology)?;
    print_summary(
        &args.init.dir.cluster(),
        topology,
        "containers",
        elapsed,
        None,
    )?;
    Ok(elapsed)
}

/// The work of `up`, without the summary.
pub fn start(args: &UpArgs) -> anyhow::Result<Duration> {
    let topology = super::super::parse_topology(&args.init.topology)?;
    check_size(topology)?;
    check_subnet(args.docker.subnet, topology)?;
    docker::available().map_err(|e| anyhow::anyhow!("the Docker engine is not available: {e}"))?;
    let compose = Compose::detect()?;
    let dir = args.init.dir.cluster();
    ensure_free(&dir)?;
    if args.docker.image == DEFAULT_IMAGE && workspace().join("deploy/Dockerfile").is_file() {
        // The default image is this build's: brought up to date from the source tree this
        // binary was built from (cargo and docker rebuild only what changed), so that the
        // containers never run an older daemon than the client speaks to.
        eprintln!("bringing the image {DEFAULT_IMAGE} up to date (cuberoute cluster image)");
        image()?;
    } else if !docker::image_exists(&args.docker.image) {
        return Err(usage(format!("there is no image {}", args.docker.image)));
    }
    let started = Instant::now();
    let run = docker::prepare(&dir, topology, args.docker.subnet, &args.docker.image)?;
    RunState::Compose {
        topology,
        run: run.clone(),
    }
    .save(&dir)?;
    if let Err(e) = compose.run(&run, &["up", "-d"]) {
        let _ = cuberoute_cluster::launch::runner::stop(&dir);
        return Err(e);
    }
    runtime()?.block_on(wait_ready(&dir, started, args.timeout(topology)))?;
    Ok(started.elapsed())
}
