//! `cuberoute cluster revoke --node N [--json]`: take a node out of the cluster for good
//! (`cuberoute_cluster::ops::revoke`); `--list`: the cluster's revocation list and the serial in
//! force at every node; `--push`: push the list in force again to nodes that missed it.
//! Exits 2 for an unknown or already revoked node or no cluster, 1 if the CA key cannot be
//! read or a node refused the list.

use crate::commands::args::ClientArg;
use crate::commands::{runtime, usage};
use cuberoute_cluster::ops::revoke::{self, Listing, Report, RevokeError, Taken};
use cuberoute_protocol::{NodeId, Topology};
use std::io::Write;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dir: ClientArg,
    /// The node to take out of the cluster: every node refuses its links and its sets from
    /// now on, and after a restart too.
    #[arg(long, required_unless_present_any = ["list", "push"], conflicts_with_all = ["list", "push"])]
    pub node: Option<String>,
    /// Show the cluster's revocation list and the serial in force at every node.
    #[arg(long, conflicts_with = "push")]
    pub list: bool,
    /// Write the list in force into every node's directory again (a node's file holding a
    /// later list stays) and push it to every node. A node that missed a push is handed the
    /// list by its neighbours when its links come up; this reaches one that links with none.
    #[arg(long)]
    pub push: bool,
    /// One JSON document.
    #[arg(long)]
    pub json: bool,
}

fn failed(e: RevokeError) -> anyhow::Error {
    if e.is_usage() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let dir = args.dir.checked()?;
    if !dir.is_cluster() {
        return Err(failed(RevokeError::NoCluster(dir.path().into())));
    }
    let topology = cuberoute_daemon::manifest::Manifest::load(&dir.manifest())
        .map_err(|e| usage(e.to_string()))?
        .topology;
    let runtime = runtime()?;
    let _guard = runtime.enter();
    if args.list {
        let listing = runtime
            .block_on(revoke::list(&dir, Duration::from_secs(5)))
            .map_err(failed)?;
        return write_listing(&mut std::io::stdout().lock(), topology, &listing, args.json);
    }
    let node = match &args.node {
        Some(text) => Some(crate::commands::parse_node(topology, text)?),
        None => None,
    };
    let report = runtime
        .block_on(revoke::revoke(&dir, node))
        .map_err(failed)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_report(&mut out, topology, &report)?;
    }
    let refused = report.refused();
    if let Some((first, why)) = refused.first() {
        anyhow::bail!(
            "{} of {} nodes refused the revocation list (serial {}); node {}: {why}",
            refused.len(),
            report.nodes.len(),
            report.serial,
            name(topology, *first)
        );
    }
    Ok(())
}

fn names(topology: Topology, nodes: &[NodeId]) -> String {
    let names: Vec<String> = nodes.iter().map(|&n| name(topology, n)).collect();
    names.join(", ")
}

fn name(topology: Topology, node: NodeId) -> String {
    crate::print::node(topology, node)
}

fn write_report(out: &mut impl Write, topology: Topology, report: &Report) -> std::io::Result<()> {
    match report.node {
        Some(node) => write!(out, "node {} revoked", name(topology, node))?,
        None => write!(out, "revocation list pushed again")?,
    }
    writeln!(
        out,
        ": list serial {} revokes {}; written in the cluster directory and {} node directories",
        report.serial,
        names(topology, &report.revoked),
        report.files_written
    )?;
    if !report.without_directory.is_empty() {
        writeln!(
            out,
            "  no directory here (they learn it by the push only): {}",
            names(topology, &report.without_directory)
        )?;
    }
    let (took, silent, refused) = (report.took(), report.silent(), report.refused());
    writeln!(
        out,
        "pushed to {} nodes in {} ms: {} took it, {} did not answer, {} refused it",
        report.nodes.len(),
        report.push_ms,
        took.len(),
        silent.len(),
        refused.len()
    )?;
    for answer in &report.nodes {
        if let Taken::Took { serial, .. } = &answer.taken
            && *serial != report.serial
        {
            writeln!(
                out,
                "  node {}: holds serial {serial}",
                name(topology, answer.id)
            )?;
        }
    }
    for (node, error) in &silent {
        writeln!(
            out,
            "  node {}: did not answer ({error}); its neighbours hand it the list when it links again, and it reads the list at its next start",
            name(topology, *node)
        )?;
    }
    for (node, error) in &refused {
        writeln!(out, "  node {}: REFUSED: {error}", name(topology, *node))?;
    }
    Ok(())
}

fn write_listing(
    out: &mut impl Write,
    topology: Topology,
    listing: &Listing,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, listing)?;
        writeln!(out)?;
        return Ok(());
    }
    if listing.serial == 0 {
        writeln!(out, "no node is revoked")?;
    } else {
        writeln!(
            out,
            "revocation list serial {}: {} revoked: {}",
            listing.serial,
            listing.revoked.len(),
            names(topology, &listing.revoked)
        )?;
    }
    let (behind, silent) = (listing.behind(), listing.silent());
    writeln!(
        out,
        "in force at {} of {} nodes",
        listing.nodes.len() - behind.len() - silent.len(),
        listing.nodes.len()
    )?;
    for (node, serial) in &behind {
        let note = if listing.revoked.contains(node) {
            " (revoked itself)"
        } else {
            ""
        };
        writeln!(
            out,
            "  node {}: holds serial {serial}{note}; `cluster revoke --push` pushes the list again",
            name(topology, *node)
        )?;
    }
    for (node, error) in &silent {
        writeln!(
            out,
            "  node {}: does not answer ({error})",
            name(topology, *node)
        )?;
    }
    Ok(())
}
