//! `cluster placement <TOPO> --hosts N`: which host each node would run on over N hosts, and
//! what losing each host costs, for every placement (or the one named).

use super::super::usage;
use cuberoute_cluster::launch::placement::{Cost, Placement, PlacementKind};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The topology: `q:N`, `eh:S,T`, `hhc:M`, `mc:K,M` or `rdn:BASE,K`.
    pub topology: String,
    /// How many hosts the nodes are spread over.
    #[arg(long, default_value_t = 3)]
    pub hosts: usize,
    /// Only this placement: `paths` (the default of `cluster swarm`), `packed` or `spread`.
    #[arg(long)]
    pub placement: Option<String>,
    /// Also list each host's nodes.
    #[arg(long)]
    pub nodes: bool,
    /// One JSON object per placement, one per line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let topology = super::super::parse_topology(&args.topology)?;
    let kinds = match &args.placement {
        Some(name) => vec![
            name.parse::<PlacementKind>()
                .map_err(|e| usage(e.to_string()))?,
        ],
        None => PlacementKind::ALL.to_vec(),
    };
    for kind in kinds {
        let placement =
            Placement::new(topology, args.hosts, kind).map_err(|e| usage(e.to_string()))?;
        let cost = placement.cost();
        if args.json {
            let hosts: Vec<Vec<u64>> = (0..placement.hosts())
                .map(|h| placement.nodes_on(h).iter().map(|n| n.0).collect())
                .collect();
            let mut value = serde_json::to_value(&cost)?;
            value["nodes"] = serde_json::to_value(hosts)?;
            println!("{value}");
        } else {
            print_cost(&placement, &cost, args.nodes);
        }
    }
    Ok(())
}

fn print_cost(placement: &Placement, cost: &Cost, nodes: bool) {
    println!(
        "{} over {} hosts, placement {}: {} ordered pairs{}",
        cost.topology,
        cost.hosts,
        cost.placement,
        cost.pairs,
        if cost.sampled {
            " (a fixed sample)"
        } else {
            ""
        }
    );
    println!(
        "  {:<6} {:>5} {:>10} {:>7} {:>12} {:>12} {:>11}",
        "lost", "nodes", "ends lost", "others", "keep a path", "keep all k", "paths kept"
    );
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    for loss in &cost.losses {
        println!(
            "  h{:<5} {:>5} {:>10} {:>7} {:>12} {:>12} {:>11}",
            loss.host + 1,
            loss.nodes,
            loss.ends_lost,
            loss.pairs,
            pct(loss.keep_one_share()),
            pct(loss.keep_all_share()),
            pct(loss.paths_kept_share()),
        );
        if nodes {
            let ids: Vec<String> = placement
                .nodes_on(loss.host)
                .iter()
                .map(|n| n.0.to_string())
                .collect();
            println!("         nodes {}", ids.join(","));
        }
    }
}
