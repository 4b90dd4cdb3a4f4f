//! The seed families' forms of `cuberoute paths` (issue 7): on `hhc:M`, `mc:K,M` and
//! `rdn:BASE,K`, node-to-node, node-to-set (`--to-set`) and set-to-set (`--from-set --to-set`)
//! wherever one of the papers has an algorithm, printed with the schema of `cube_paths`.
//!
//! | topology | FROM TO | --to-set | --from-set --to-set |
//! |---|---|---|---|
//! | `hhc:M` | m+1 paths, HHC-iN2S to the neighbours of TO (ours) | HHC-iN2S, or HHC-N2S with `--algorithm n2s` | HHC-S2S |
//! | `mc:K,M` | MC-N2N | MC-N2S | none |
//! | `rdn:BASE,K` | d_0+K paths, RDN N2S to the neighbours of TO (ours) | RDN N2S | none |
//!
//! Every answer says, when the paper's construction did not give it, how it was obtained
//! (`"construction"` in JSON, a line in text).

use super::cube_paths::{Answer, Request, parse_set, print};
use super::usage;
use cuberoute_protocol::family::{Construction, FamilyError, Path, PathSystem};
use cuberoute_protocol::source_route::{self, RouteRequest, RoutesError};
use cuberoute_protocol::{NodeId, Topology, dualnet, hhc, metacube};

pub fn run(topology: Topology, req: Request) -> anyhow::Result<()> {
    if topology.has_guarded_protocol() {
        return Err(usage(format!(
            "--to-set and --from-set need q:N, hhc:M, mc:K,M or rdn:BASE,K, not {topology}"
        )));
    }
    if req.algorithm.is_some()
        && !(matches!(topology, Topology::Hhc(_)) && req.to_set.is_some() && req.from_set.is_none())
    {
        return Err(usage(
            "--algorithm chooses between HHC-N2S and HHC-iN2S: it needs hhc:M and --to-set",
        ));
    }
    let answer = if let Some(sources) = &req.from_set {
        let srcs = parse_set(topology, sources, "--from-set")?;
        let dests = parse_set(
            topology,
            req.to_set.as_deref().unwrap_or_default(),
            "--to-set",
        )?;
        set_to_set(topology, srcs, dests)?
    } else if let Some(set) = &req.to_set {
        let from = req
            .from
            .as_deref()
            .ok_or_else(|| usage("--to-set needs FROM (or --from-set for set-to-set)"))?;
        let s = super::parse_node(topology, from)?;
        let dests = parse_set(topology, set, "--to-set")?;
        node_to_set(topology, s, dests, req.algorithm.as_deref())?
    } else {
        let (Some(from), Some(to)) = (&req.from, &req.to) else {
            return Err(usage("FROM and TO are required"));
        };
        let s = super::parse_node(topology, from)?;
        let d = super::parse_node(topology, to)?;
        node_to_node(topology, s, d)?
    };
    print(&answer, req.json, req.svg.as_deref())
}

/// A refusal is the user's to fix (exit 2), an internal error is ours (exit 1).
fn refused(err: FamilyError) -> anyhow::Error {
    match err {
        FamilyError::Internal(_) => anyhow::anyhow!(err),
        other => usage(other.to_string()),
    }
}

/// How a path system was obtained, when it is not the paper's construction.
fn note(system: &PathSystem) -> Option<String> {
    match system.construction {
        Construction::Paper => None,
        Construction::Corrected(why) => Some(format!("corrected: {why}")),
        Construction::ExactSearch(why) => Some(format!("exact search (min-cost flow): {why}")),
        Construction::Isomorphic(why) => Some(format!("through an isomorphism: {why}")),
    }
}

/// The node-to-node paths of a seed family, with the algorithm's name and bound.
pub fn node_to_node_system(
    topology: Topology,
    s: NodeId,
    d: NodeId,
) -> anyhow::Result<(PathSystem, &'static str, usize)> {
    if s == d {
        return Err(usage(format!(
            "FROM and TO are the same node {}: there are no paths to route over",
            topology.format_node(s)
        )));
    }
    let (algorithm, bound) = match topology {
        Topology::Hhc(h) => (
            "node-to-node by HHC-iN2S to the neighbours of TO",
            hhc::in2s::bound(h.m) + 1,
        ),
        Topology::Metacube(mc) => ("MC-N2N", metacube::n2n::bound(mc, s, d)),
        Topology::DualNet(r) => (
            "node-to-node by RDN N2S to the neighbours of TO",
            dualnet::n2s::bound(r) + 1,
        ),
        other => unreachable!("{other} has the guarded-action protocol"),
    };
    Ok((source_routed(topology, s, d)?, algorithm, bound))
}

/// The k paths a daemon of `topology` at `s` sends a set to `d` over: one decision
/// ([`source_route::route_system`]) answers both. (`--to-set` names its algorithm itself, and
/// is node-to-set even with one destination.)
fn source_routed(topology: Topology, s: NodeId, d: NodeId) -> anyhow::Result<PathSystem> {
    let request = RouteRequest {
        to: vec![d],
        ..RouteRequest::default()
    };
    source_route::route_system(topology, s, &request).map_err(|e| match e {
        RoutesError::Family(err) => refused(err),
        other => usage(other.to_string()),
    })
}

fn node_to_node(topology: Topology, s: NodeId, d: NodeId) -> anyhow::Result<Answer> {
    let (system, algorithm, bound) = node_to_node_system(topology, s, d)?;
    Ok(answer(
        topology,
        vec![s],
        vec![d],
        (true, true),
        algorithm,
        bound,
        system,
    ))
}

fn node_to_set(
    topology: Topology,
    s: NodeId,
    dests: Vec<NodeId>,
    algorithm: Option<&str>,
) -> anyhow::Result<Answer> {
    let n = dests.len();
    let (system, name, bound) = match (topology, algorithm) {
        (Topology::Hhc(h), None | Some("in2s")) => (
            hhc::in2s::hhc_in2s(h, s, &dests).map_err(refused)?,
            "HHC-iN2S",
            hhc::in2s::bound(h.m),
        ),
        (Topology::Hhc(h), Some("n2s")) => (
            hhc::n2s::hhc_n2s(h, s, &dests).map_err(refused)?,
            "HHC-N2S",
            hhc::n2s::bound(h.m),
        ),
        (Topology::Hhc(_), Some(other)) => {
            return Err(usage(format!(
                "--algorithm {other:?}: expected n2s (HHC-N2S) or in2s (HHC-iN2S)"
            )));
        }
        (Topology::Metacube(mc), _) => (
            metacube::n2s::mc_n2s(mc, s, &dests).map_err(refused)?,
            "MC-N2S",
            metacube::n2s::bound(mc, n),
        ),
        (Topology::DualNet(r), _) => (
            dualnet::n2s::rdn_n2s(r, s, &dests).map_err(refused)?,
            "RDN N2S",
            dualnet::n2s::bound(r),
        ),
        (other, _) => unreachable!("{other} has the guarded-action protocol"),
    };
    Ok(answer(
        topology,
        vec![s],
        dests,
        (true, false),
        name,
        bound,
        system,
    ))
}

fn set_to_set(topology: Topology, srcs: Vec<NodeId>, dests: Vec<NodeId>) -> anyhow::Result<Answer> {
    let Topology::Hhc(h) = topology else {
        return Err(usage(format!(
            "--from-set: the papers give a set-to-set algorithm for hhc:M (HHC-S2S) and q:N only, not {topology}"
        )));
    };
    let system = hhc::s2s::hhc_s2s(h, &srcs, &dests).map_err(refused)?;
    let bound = hhc::s2s::bound(h.m, srcs.len());
    Ok(answer(
        topology,
        srcs,
        dests,
        (false, false),
        "HHC-S2S",
        bound,
        system,
    ))
}

fn answer(
    topology: Topology,
    from: Vec<NodeId>,
    to: Vec<NodeId>,
    single: (bool, bool),
    algorithm: &'static str,
    bound: usize,
    system: PathSystem,
) -> Answer {
    let construction = note(&system);
    let paths: Vec<Path> = system.paths;
    Answer {
        topology,
        from,
        to,
        single,
        avoid: None,
        constraint: None,
        algorithm,
        bound,
        construction,
        paths,
    }
}
