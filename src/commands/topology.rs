//! `cuberoute topology <TOPO> [--json]`.

use cuberoute_protocol::paths::guarded::max_stretch;
use cuberoute_protocol::{NodeId, Topology};
use cuberoute_protocol::{RouteKind, flush_bound};
use serde_json::json;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `q:N` (hypercube Q_N), `eh:S,T` (exchanged hypercube EH(S,T)), `hhc:M` (hierarchical
    /// hypercube HHC_(2^M+M)), `mc:K,M` (metacube MC(K,M)) or `rdn:BASE,K` (recursive dual-net
    /// RDN^K(BASE), BASE one of ring3, q2, q3, q4).
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
            // The seed families are regular: nodes * degree / 2.
            t => t.node_count() as u128 * t.degree(NodeId(0)) as u128 / 2,
        };
        Facts { topology, edges }
    }

    /// k(u,v) for two s-type, two t-type and mixed nodes (all equal in Q_n).
    fn k_by_type(&self) -> (u32, u32, u32) {
        let t = self.topology;
        let (s_node, t_node) = (NodeId(0), NodeId(1));
        match t {
            Topology::Exchanged(_) => (
                t.local_connectivity(s_node, NodeId(2)),
                t.local_connectivity(t_node, NodeId(3)),
                t.local_connectivity(s_node, t_node),
            ),
            _ => {
                let k = t.connectivity();
                (k, k, k)
            }
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
            "flush_bound": t.has_guarded_protocol().then(|| flush_bound(t, RouteKind::Guarded)),
            "source_flush_bound": flush_bound(t, RouteKind::Source),
            "distance_exact": !matches!(t, Topology::Hhc(h) if h.m == 5)
                && !matches!(t, Topology::Metacube(mc) if mc.k == 5),
        });
        let (ss, tt, mixed) = self.k_by_type();
        match t {
            Topology::Exchanged(eh) => {
                value["degree"] = json!({"s_type": eh.s + 1, "t_type": eh.t + 1});
                value["k"] = json!({"s_s": ss, "t_t": tt, "mixed": mixed});
            }
            _ => {
                value["degree"] = json!(t.degree(NodeId(0)));
                value["k"] = json!(ss);
            }
        }
        value["algorithms"] = json!(algorithms(t));
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
            Topology::Hhc(h) => (
                format!(
                    "sigma({} bits) . pi({} bits)   id = sigma << {} | pi; internal edges flip a pi bit, the external edge flips sigma bit pi",
                    h.cube_dimension(),
                    h.m,
                    h.m
                ),
                format!("{}", h.m + 1),
                format!("{ss} for every pair"),
            ),
            Topology::Metacube(mc) => (
                format!(
                    "c({} bits) . M[{}] ... M[0] ({} bits each)   M[i] at bit m*i, c above; cube edges flip a bit of M[c], cross edges a bit of c",
                    mc.k,
                    mc.classes() - 1,
                    mc.m
                ),
                format!("{}", mc.k + mc.m),
                format!("{ss} for every pair"),
            ),
            Topology::DualNet(r) => (
                format!(
                    "(type, cluster, node) nested {} deep, base ids 0..{}   id = type * n^2 + cluster * n + node, n = {}",
                    r.k,
                    r.base.nodes() - 1,
                    r.nodes_at(r.k - 1)
                ),
                format!("{}", r.degree()),
                format!("{ss} for every pair"),
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
        ];
        let mut rows = rows.to_vec();
        match max_stretch(t) {
            Some(stretch) => {
                let bound = flush_bound(t, RouteKind::Guarded);
                rows.push(("longest route", format!("<= d + {stretch}")));
                rows.push(("flush bound B", format!("{bound} hops")));
            }
            None => rows.push((
                "routing",
                "source routes only (no guarded-action protocol on this family)".into(),
            )),
        }
        let source = flush_bound(t, RouteKind::Source);
        rows.push(("source B", format!("{source} hops (source-routed packets)")));
        rows.push(("algorithms", algorithms(t).join(", ")));
        for (key, value) in rows {
            out.push_str(&format!("  {key:<14} {value}\n"));
        }
        out
    }
}

/// The disjoint-path algorithms `cuberoute paths` runs on `t`.
fn algorithms(t: Topology) -> Vec<&'static str> {
    match t {
        Topology::Hypercube(_) => vec![
            "node-to-node (seed 004 protocol)",
            "Cube-N2S",
            "Cube-XFTN2S",
            "Cube-S2S",
            "HC-CONTAINER",
        ],
        Topology::Exchanged(_) => vec!["node-to-node (seed 004 protocol)"],
        Topology::Hhc(_) => vec![
            "node-to-node (HHC-iN2S to the neighbours of the destination)",
            "HHC-N2S",
            "HHC-iN2S",
            "HHC-S2S",
        ],
        Topology::Metacube(_) => vec!["MC-N2N", "MC-N2S"],
        Topology::DualNet(_) => vec![
            "node-to-node (RDN N2S to the neighbours of the destination)",
            "RDN N2S",
        ],
    }
}
