//! Which nodes share a process (`cluster up --nodes-per-process N|auto`, issue 50): one node
//! per process by default; with N, groups of at most N nodes, each run by one process as a node
//! host (`cuberoute daemon --config A --with-config B ...`, whose nodes link with each other by
//! a call). A process lost is every node of it lost at once, as a host is: up to
//! [`MAX_HOSTS`] processes of at most [`PLACED_UP_TO`] nodes in all, the nodes are grouped by the
//! placement that keeps the most pairs a path when one is lost ([`PlacementKind::Paths`], as
//! `cluster placement` shows it); beyond, in blocks of consecutive ids (on the hypercube
//! families, subcubes), since that placement's search grows too long to wait for at a start
//! (2026-12-06, two hosts: 0.3 s for Q_5, 3.0 s for Q_6, 3.3 s for Q_7, 23 s for Q_8, 144 s for
//! EH(5,5)).

use super::placement::{MAX_HOSTS, Placement, PlacementKind};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_protocol::{NodeId, Topology};
use std::str::FromStr;

/// The most nodes the placement's search groups; larger clusters go in blocks of ids.
pub const PLACED_UP_TO: usize = 64;

use cuberoute_daemon::host::FILES_PER_NODE;

/// Open files a node host keeps for the rest: its runtime, its output, clients' connections.
pub const FILES_PER_PROCESS: u64 = 256;

/// What bounds the nodes of one process by its open files: the process's hard limit (a node
/// host raises its soft limit to it, `cuberoute_daemon::host::raise_open_files`), and the files
/// a node holds at most: its store, once it keeps a set ([`FILES_PER_NODE`]), or none at all
/// when the cluster keeps reliable sets in memory (`--no-store`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFiles {
    pub limit: u64,
    pub per_node: u64,
}

impl OpenFiles {
    /// This machine's limit (none if it cannot be read), for nodes with a store or without.
    pub fn here(stores: bool) -> OpenFiles {
        let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(u64::MAX, |(_, hard)| hard);
        OpenFiles {
            limit,
            per_node: if stores { FILES_PER_NODE } else { 0 },
        }
    }

    /// The most nodes one process runs.
    pub fn fit(&self) -> usize {
        match self.per_node {
            0 => usize::MAX,
            per_node => (self.limit.saturating_sub(FILES_PER_PROCESS) / per_node).max(1) as usize,
        }
    }
}

/// How many nodes one process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodesPerProcess {
    Count(usize),
    /// As many processes as the machine has cores (and at least one node each).
    Auto,
}

impl Default for NodesPerProcess {
    fn default() -> Self {
        NodesPerProcess::Count(1)
    }
}

impl FromStr for NodesPerProcess {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(NodesPerProcess::Auto);
        }
        match s.parse::<usize>() {
            Ok(0) => Err("the nodes a process runs must be at least 1 (or auto)".into()),
            Ok(n) => Ok(NodesPerProcess::Count(n)),
            Err(_) => Err(format!("{s}: a number of nodes, at least 1, or auto")),
        }
    }
}

/// How many nodes each process runs, and how many processes there are, on a machine of
/// `cores` cores whose processes may hold `files` open files each; an error (for the user) when
/// `per` is more than the nodes or than a process may hold. Auto: a process per core, or more
/// where the open files demand it, the nodes spread evenly.
pub fn shape(
    topology: Topology,
    per: NodesPerProcess,
    cores: usize,
    files: OpenFiles,
) -> Result<(usize, usize), String> {
    let n = topology.node_count() as usize;
    let fits = files.fit();
    let per = match per {
        NodesPerProcess::Count(0) => {
            return Err("the nodes a process runs must be at least 1 (or auto)".into());
        }
        NodesPerProcess::Count(per) if per > n => {
            return Err(format!(
                "{per} nodes a process: {topology} has only {n} nodes"
            ));
        }
        NodesPerProcess::Count(per) if per > fits => {
            return Err(format!(
                "{per} nodes a process: a process may hold at most {fits} nodes here (its open-files limit is {}, {} per node: its store; with --no-store a node holds none)",
                files.limit, files.per_node
            ));
        }
        NodesPerProcess::Count(per) => per,
        NodesPerProcess::Auto => {
            let processes = n.div_ceil(n.div_ceil(cores.max(1)).min(fits));
            n.div_ceil(processes)
        }
    };
    Ok((per, n.div_ceil(per)))
}

/// The processes of `topology`'s nodes, each the nodes one process runs (in id order), as
/// [`shape`] counts them.
pub fn groups(
    topology: Topology,
    per: NodesPerProcess,
    cores: usize,
    files: OpenFiles,
) -> Result<Vec<Vec<NodeId>>, String> {
    let (per, processes) = shape(topology, per, cores, files)?;
    let nodes: Vec<NodeId> = topology.nodes().collect();
    let n = nodes.len();
    Ok(if per == 1 {
        nodes.into_iter().map(|v| vec![v]).collect()
    } else if processes == 1 {
        vec![nodes]
    } else if processes <= MAX_HOSTS && n <= PLACED_UP_TO {
        // Balanced: sizes differ by one at most, so none is over `per`.
        let placement =
            Placement::new(topology, processes, PlacementKind::Paths).map_err(|e| e.to_string())?;
        (0..processes).map(|p| placement.nodes_on(p)).collect()
    } else {
        nodes.chunks(per).map(<[NodeId]>::to_vec).collect()
    })
}

/// For each node (in node order), the index in node order of the first node of its group
/// (`groups`: the processes or containers, each node in one; a node in none is its own): the
/// node whose address the group's links and control API take.
pub fn homes(topology: Topology, groups: &[Vec<NodeId>]) -> Vec<u32> {
    let index: std::collections::HashMap<NodeId, u32> = topology
        .nodes()
        .enumerate()
        .map(|(i, id)| (id, i as u32))
        .collect();
    let mut homes: Vec<u32> = (0..index.len() as u32).collect();
    for group in groups {
        let home = group.iter().map(|id| index[id]).min().unwrap_or_default();
        for id in group {
            homes[index[id] as usize] = home;
        }
    }
    homes
}

/// The nodes of each process of a cluster (in id order, the processes in the order of their
/// first node), from its manifest: the nodes of one process share its control address (a
/// local node host's, or a container's), a node alone has its own. Read from the manifest,
/// so that a cluster started by hand is known as well as one this program started.
pub fn processes(manifest: &Manifest) -> Vec<Vec<NodeId>> {
    let mut by_address: std::collections::HashMap<&str, Vec<NodeId>> = Default::default();
    for node in &manifest.nodes {
        by_address.entry(&node.control).or_default().push(node.id);
    }
    let mut processes: Vec<Vec<NodeId>> = by_address
        .into_values()
        .map(|mut nodes| {
            nodes.sort();
            nodes
        })
        .collect();
    processes.sort();
    processes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit of `limit` open files, for nodes with a store.
    fn files(limit: u64) -> OpenFiles {
        OpenFiles {
            limit,
            per_node: FILES_PER_NODE,
        }
    }

    fn check(topology: &str, per: NodesPerProcess, cores: usize) -> Vec<Vec<NodeId>> {
        let t: Topology = topology.parse().unwrap();
        let groups = groups(t, per, cores, files(20_000)).unwrap();
        let mut all: Vec<NodeId> = groups.iter().flatten().copied().collect();
        all.sort();
        assert_eq!(
            all,
            t.nodes().collect::<Vec<_>>(),
            "{topology}: each node once"
        );
        groups
    }

    #[test]
    fn every_node_is_in_one_process_and_none_holds_more_than_asked() {
        let one = check("q:3", NodesPerProcess::default(), 2);
        assert_eq!(one.len(), 8);
        for (topology, per) in [
            ("q:3", 3),
            ("eh:2,2", 4),
            ("eh:2,2", 32),
            ("q:8", 8),
            ("q:8", 128),
        ] {
            let groups = check(topology, NodesPerProcess::Count(per), 2);
            assert!(groups.iter().all(|g| !g.is_empty() && g.len() <= per));
            let n: usize = groups.iter().map(Vec::len).sum();
            assert_eq!(groups.len(), n.div_ceil(per), "{topology} {per}");
        }
        // Beyond the placement's reach: blocks of consecutive ids.
        let blocks = check("q:8", NodesPerProcess::Count(128), 2);
        assert_eq!(blocks[1], (128..256).map(NodeId).collect::<Vec<_>>());
        // Auto: a process per core.
        assert_eq!(check("eh:2,2", NodesPerProcess::Auto, 2).len(), 2);
        assert_eq!(check("q:3", NodesPerProcess::Auto, 16).len(), 8);
    }

    #[test]
    fn the_processes_are_placed_to_keep_pairs_a_path_when_one_is_lost() {
        let t: Topology = "eh:2,2".parse().unwrap();
        let groups = check("eh:2,2", NodesPerProcess::Count(11), 2);
        let placement = Placement::new(t, 3, PlacementKind::Paths).unwrap();
        for (p, group) in groups.iter().enumerate() {
            assert_eq!(group, &placement.nodes_on(p));
        }
    }

    #[test]
    fn bad_counts_are_refused_with_the_reason() {
        let t: Topology = "q:3".parse().unwrap();
        assert!("0".parse::<NodesPerProcess>().is_err());
        assert!("x".parse::<NodesPerProcess>().is_err());
        assert_eq!("auto".parse(), Ok(NodesPerProcess::Auto));
        let e = groups(t, NodesPerProcess::Count(9), 2, files(20_000)).unwrap_err();
        assert!(e.contains("only 8 nodes"), "{e}");
        assert!(groups(t, NodesPerProcess::Count(0), 2, files(20_000)).is_err());
        // More than a process may hold open.
        let e = groups(t, NodesPerProcess::Count(8), 2, files(256 + 7)).unwrap_err();
        assert!(e.contains("at most 7 nodes here"), "{e}");
    }

    #[test]
    fn auto_takes_a_process_per_core_or_as_many_as_the_open_files_need() {
        let q16: Topology = "q:16".parse().unwrap();
        // 20,000 open files: 19,744 nodes a process, so 4 processes of 16,384.
        assert_eq!(files(20_000).fit(), 19_744);
        assert_eq!(
            shape(q16, NodesPerProcess::Auto, 2, files(20_000)),
            Ok((16384, 4))
        );
        assert_eq!(
            shape(q16, NodesPerProcess::Auto, 2, files(1 << 20)),
            Ok((32768, 2))
        );
        let eh55: Topology = "eh:5,5".parse().unwrap();
        assert_eq!(
            shape(eh55, NodesPerProcess::Auto, 2, files(20_000)),
            Ok((1024, 2))
        );
        let g = groups(q16, NodesPerProcess::Auto, 2, files(20_000)).unwrap();
        assert!(g.iter().all(|g| g.len() == 16384) && g.len() == 4);
        // Without stores a node holds no file: any number fit, a process per core.
        let storeless = OpenFiles {
            limit: 20_000,
            per_node: 0,
        };
        assert_eq!(storeless.fit(), usize::MAX);
        assert_eq!(
            shape(q16, NodesPerProcess::Auto, 2, storeless),
            Ok((32768, 2))
        );
        assert_eq!(
            shape(q16, NodesPerProcess::Count(65536), 2, storeless),
            Ok((65536, 1))
        );
    }
}
