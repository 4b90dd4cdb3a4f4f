//! `cuberoute topology <TOPO> [--json]`.

use cuberoute_protocol::actions::{flush_bound, max_stretch};
use cuberoute_protocol::{NodeId, Topology};
use serde_json::json;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `q:N` (binary hypercube Q_N) or `eh:S,T` (exchanged hypercube EH(S,T)).
    topology: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let topology = super::parse_topology(&args.topology)?;
    let facts = Facts::of(topology);
    if args.json {
        println!("{}", facts.json());
    } else {
        print!("{}", facts.text());
    }
    Ok(())
}

/// Everything `topology` prints, computed once.
struct Facts {
    topology: Topology,
    edges: u128,
}

impl Facts {
    fn of(topology: Topology) -> Facts {
        let edges = match topology {
            Topology::Hypercube(q) => q.n as u128 * (1u128 << (q.n - 1)),
            Topology::Exchanged(eh) => {
                let (s, t) = (eh.s as u128, eh.t as u128);
                // s-edges in 2^t s-subcubes, t-edges in 2^s t-subcubes, one dummy edge per pair.
                (1u128 << eh.t) * s * (1u128 << (eh.s - 1))
                    + (1u128 << eh.s) * t * (1u128 << (eh.t - 1))
                    + (1u128 << (eh.s + eh.t))
            }
        };
        Facts { topology, edges }
    }

    /// k(u,v) for two s-type, two t-type and mixed nodes (all equal in Q_n).
    fn k_by_type(&self) -> (u32, u32, u32) {
        let t = self.topology;
        let (s_node, t_node) = (NodeId(0), NodeId(1));
        match t {
            Topology::Hypercube(_) => {
                let k = t.connectivity();
                (k, k, k)
            }
            Topology::Exchanged(_) => (
                t.local_connectivity(s_node, NodeId(2)),
                t.local_connectivity(t_node, NodeId(3)),
                t.local_connectivity(s_node, t_node),
            ),
        }
    }

    fn json(&self) -> serde_json::Value {
        let t = self.topology;
        let mut value = json!({
            "topology": t.to_string(),
            "description": t.describe(),
            "id_bits": t.bits(),
            "nodes": t.node_count(),
            "edges": self.edges.to_string().parse::<serde_json::Number>().ok(),
            "diameter": t.diameter(),
            "connectivity": t.connectivity(),
            "max_stretch": max_stretch(t),
            "flush_bound": flush_bound(t),
        });
        let (ss, tt, mixed) = self.k_by_type();
        match t {
            Topology::Hypercube(q) => {
                value["degree"] = json!(q.n);
                value["k"] = json!(ss);
            }
            Topology::Exchanged(eh) => {
                value["degree"] = json!({"s_type": eh.s + 1, "t_type": eh.t + 1});
                value["k"] = json!({"s_s": ss, "t_t": tt, "mixed": mixed});
            }
        }
        value
    }

    fn text(&self) -> String {
        let t = self.topology;
        let (ss, tt, mixed) = self.k_by_type();
        let mut out = format!("{} ({t})\n", t.describe());
        let (layout, degree, k) = match t {
            Topology::Hypercube(q) => (
                format!("{} bits, one per dimension", q.n),
                format!("{}", q.n),
                format!("{ss} for every pair"),
            ),
            Topology::Exchanged(eh) => (
                format!(
                    "a({} bits) . b({} bits) . c   id = a << {} | b << 1 | c; c = 0 s-type, c = 1 t-type",
                    eh.s,
                    eh.t,
                    eh.t + 1
                ),
                format!(
                    "{} for s-type nodes, {} for t-type nodes",
                    eh.s + 1,
                    eh.t + 1
                ),
                format!(
                    "{ss} between s-type nodes, {tt} between t-type nodes, {mixed} between mixed"
                ),
            ),
        };
        let rows = [
            ("nodes", t.node_count().to_string()),
            ("edges", self.edges.to_string()),
            ("node id", layout),
            ("degree", degree),
            ("diameter", t.diameter().to_string()),
            ("connectivity", t.connectivity().to_string()),
            ("k(u,v)", k),
            ("longest route", format!("<= d + {}", max_stretch(t))),
            ("flush bound B", format!("{} hops", flush_bound(t))),
        ];
        for (key, value) in rows {
            out.push_str(&format!("  {key:<14} {value}\n"));
        }
        out
    }
}
