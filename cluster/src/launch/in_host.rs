//! One node of a node host crashed or started again while its process runs on
//! (`chaos kill`, `chaos restart`, the chaos run's `crash` and `crash-ends`): asked of another
//! node of the same process (`Fault::CrashHosted`, `Fault::RestartHosted`), whose host drops
//! the node's tasks as a killed process would lose them, or starts it from its configuration and
//! store as a restarted process would (`cuberoute_daemon::host`). The whole process is killed
//! and restarted by [`local`](crate::launch::local) as always.
//!
//! The callers are synchronous (a runner's kill and restart), some of them on a runtime's
//! thread: the request runs on a thread of its own with a runtime of its own.

use crate::launch::certs::client_credentials;
use crate::launch::layout::ClusterDir;
use cuberoute_daemon::client::{Client, ClientError};
use cuberoute_daemon::manifest::Manifest;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{Fault, Request, Response};

/// Crash node `id` in its process, asking the first of `via` (other nodes of the process that
/// run) that answers.
pub fn crash(dir: &ClusterDir, id: NodeId, via: &[NodeId]) -> anyhow::Result<String> {
    ask(dir, via, Fault::CrashHosted { node: id })
}

/// Start node `id` again in its process; returns once it runs.
pub fn restart(dir: &ClusterDir, id: NodeId, via: &[NodeId]) -> anyhow::Result<String> {
    ask(dir, via, Fault::RestartHosted { node: id })
}

fn ask(dir: &ClusterDir, via: &[NodeId], fault: Fault) -> anyhow::Result<String> {
    anyhow::ensure!(!via.is_empty(), "no other node of its process runs");
    let credentials = client_credentials(dir)?;
    let manifest = Manifest::load(&dir.manifest())?;
    let asked = || -> anyhow::Result<String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let client = Client::new(&credentials)?;
            ask_first(&client, &manifest, via, fault, || true)
                .await?
                .ok_or_else(|| anyhow::anyhow!("given up"))
        })
    };
    std::thread::scope(|s| {
        s.spawn(asked)
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the request's thread panicked")))
    })
}

/// Ask `fault` of the first node of `via` (nodes of one process) that answers, through
/// `client`: what it did, or why none did. `still` is asked before each connection and again
/// before the request: false gives up (`Ok(None)`), as the simulator does when the process was
/// crashed or started again whole since the fault was asked for.
pub async fn ask_first(
    client: &Client,
    manifest: &Manifest,
    via: &[NodeId],
    fault: Fault,
    still: impl Fn() -> bool,
) -> anyhow::Result<Option<String>> {
    let request = Request::Inject(fault);
    let mut unreachable = Vec::new();
    for &node in via {
        let addr = manifest
            .node(node)
            .map(|n| n.control.clone())
            .ok_or_else(|| anyhow::anyhow!("node {node} is not in the manifest"))?;
        if !still() {
            return Ok(None);
        }
        let answer = match client.connect(node, &addr).await {
            Ok(connection) if !still() => {
                connection.close();
                return Ok(None);
            }
            Ok(connection) => {
                let answer = connection.request(&request).await;
                connection.close();
                answer
            }
            Err(e) => Err(e),
        };
        match answer {
            Ok(Response::Injected(done)) => return Ok(Some(done)),
            Ok(other) => anyhow::bail!("node {node} answered {other:?}"),
            Err(e @ ClientError::Refused { .. }) => return Err(e.into()),
            Err(e) => unreachable.push(e.to_string()),
        }
    }
    anyhow::bail!(
        "no node of the process answered: {}",
        unreachable.join("; ")
    )
}
