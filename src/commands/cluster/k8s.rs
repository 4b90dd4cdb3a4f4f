//! `cluster k8s <TOPO>`: Kubernetes manifests for a cluster.

use super::super::usage;
use crate::commands::args::DirArg;
use cuberoute_cluster::launch::generate::{self, Addressing};
use cuberoute_cluster::launch::start::ensure_free;
use cuberoute_cluster::{Ports, launch::k8s};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    /// Where the certificates are generated; the Secret is written there too.
    #[command(flatten)]
    pub dir: DirArg,
    /// Where to write the Service, ConfigMap and StatefulSet (default: DIR/k8s).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// The image the pods run (load it into the cluster's nodes, or push it to a registry).
    #[arg(long, default_value = concat!("cuberoute:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Let the nodes take fault injection from clients of role chaos (`chaos.allow = true`).
    /// By default they refuse it: on real hosts no client certificate turns a node into a
    /// capturing or forging relay.
    #[arg(long)]
    pub allow_chaos: bool,
    /// How many nodes each pod runs as one process (a node host): pod N runs nodes N * per to
    /// N * per + per - 1, blocks of ids (on the hypercube families, subcubes). Default 1: a pod
    /// a node.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub nodes_per_pod: u64,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let topology = super::super::parse_topology(&args.topology)?;
    if topology.node_count() > 10_000 {
        return Err(usage(format!(
            "{topology} has {} nodes: too many pods for one StatefulSet here",
            topology.node_count()
        )));
    }
    let valid_name = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !valid_name(&args.namespace) {
        return Err(usage(format!(
            "--namespace {:?} is not a DNS label",
            args.namespace
        )));
    }
    if args.nodes_per_pod == 0 || args.nodes_per_pod > topology.node_count() {
        return Err(usage(format!(
            "--nodes-per-pod {}: from 1 to the {} nodes of {topology}",
            args.nodes_per_pod,
            topology.node_count()
        )));
    }
    let pods = topology.node_count().div_ceil(args.nodes_per_pod);
    let dir = args.dir.cluster();
    ensure_free(&dir)?;
    let ports = Ports::default();
    generate::generate(
        &dir,
        topology,
        &Addressing::Kubernetes {
            name: k8s::NAME.into(),
            namespace: args.namespace.clone(),
            ports,
            per_pod: args.nodes_per_pod,
        },
    )?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| dir.path().join("k8s"));
    std::fs::create_dir_all(&output)?;
    for (file, text) in k8s::manifests(
        topology,
        &args.namespace,
        &args.image,
        ports,
        args.allow_chaos,
        args.nodes_per_pod,
    ) {
        std::fs::write(output.join(file), text)?;
    }
    let secret = dir.path().join("k8s-secret.yaml");
    let secret_yaml = k8s::secret(&dir, topology, &args.namespace)?;
    std::fs::write(&secret, &secret_yaml)?;
    if secret_yaml.len() > k8s::OBJECT_LIMIT_BYTES {
        eprintln!(
            "warning: the Secret is {} bytes, more than the {} Kubernetes stores in one object: \
             split it, or mount the certificates and keys another way",
            secret_yaml.len(),
            k8s::OBJECT_LIMIT_BYTES
        );
    }
    let each = match args.nodes_per_pod {
        1 => String::new(),
        n => format!(" of up to {n} nodes each"),
    };
    println!(
        "Kubernetes manifests for {topology} ({pods} pods{each}) written to {}; the Secret to {}",
        output.display(),
        secret.display()
    );
    println!(
        "  apply:   kubectl apply -f {} -f {}",
        secret.display(),
        output.display()
    );
    Ok(())
}
