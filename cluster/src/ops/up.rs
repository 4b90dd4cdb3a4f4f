//! The end of a start (`cluster up`, `demo`, `bench`): the readiness wait of a cluster just
//! spawned ([`wait_started`]), which stops one whose daemon died while starting and, on local
//! processes, one interrupted, and says where the start's time and CPU went; and the wait on a
//! cluster already running ([`wait_running`]). The start itself is the launching room's
//! (`launch::start`).

use crate::launch::layout::ClusterDir;
use crate::launch::phases::Phases;
use crate::launch::runner;
use crate::launch::start::{Refused, Spawned};
use crate::launch::start_cpu::StartCpu;
use crate::ops::cluster_client::ClusterClient;
use crate::ops::ready::{self, NotReady, Progress};
use cuberoute_protocol::Topology;
use std::time::{Duration, Instant};

/// A cluster up, every link up.
pub struct Up {
    pub dir: ClusterDir,
    pub topology: Topology,
    /// Where the start's time went; the phases end with (`answering`, for local processes,
    /// and) `links`, and their total is the time from the start until every link was up.
    pub phases: Phases,
    /// What the start cost the processors (local processes).
    pub cpu: Option<StartCpu>,
}

/// Wait until the cluster `spawned` is ready, at most `timeout` from the start's beginning;
/// `on_round` sees every round of the wait (for a progress display). A cluster with a node that
/// died while starting is stopped (the first dead node's last log line says why); one that is
/// late is left running; local processes interrupted (SIGINT, SIGTERM) are stopped.
pub async fn wait_started(
    spawned: Spawned,
    timeout: Duration,
    on_round: &mut dyn FnMut(&Progress),
) -> anyhow::Result<Up> {
    let Spawned {
        dir,
        topology,
        mut phases,
        local,
    } = spawned;
    let waiting = wait_ready(&dir, phases.started(), timeout, on_round);
    let Some((mark, interrupt)) = local else {
        waiting.await?;
        phases.end("links");
        return Ok(Up {
            dir,
            topology,
            phases,
            cpu: None,
        });
    };
    let ready = tokio::select! {
        ready = waiting => Some(ready),
        () = interrupt.wait() => None,
    };
    let Some(ready) = ready else {
        let stopped = runner::stop(&dir)?;
        return Err(crate::launch::interrupted::Interrupted(format!(
            "{stopped} (while waiting for it)"
        ))
        .into());
    };
    phases.end_at("answering", ready?);
    phases.end("links");
    let cpu = StartCpu::measure(&runner::pids(&dir)?, mark);
    drop(interrupt);
    Ok(Up {
        dir,
        topology,
        phases,
        cpu: Some(cpu),
    })
}

/// [`ready::wait_ready`], `timeout` counted from `started`. A cluster with a node that died
/// while starting is stopped; one that is late is left running. Returns when a round of the
/// wait first found every node answering.
async fn wait_ready(
    dir: &ClusterDir,
    started: Instant,
    timeout: Duration,
    on_round: &mut dyn FnMut(&Progress),
) -> anyhow::Result<Instant> {
    let cluster = ClusterClient::open(dir)?;
    let mut answering = None;
    let waited = ready::wait_ready(
        &cluster,
        timeout.saturating_sub(started.elapsed()),
        &mut |round| {
            if answering.is_none() && round.answering == round.nodes {
                answering = Some(Instant::now());
            }
            on_round(round);
        },
    )
    .await;
    cluster.close();
    match waited {
        Ok(_) => Ok(answering.unwrap_or_else(Instant::now)),
        Err(NotReady::Dead(dead)) => {
            let _ = runner::stop(dir);
            // The first dead node's last words say why (an address in use, a bad file).
            let why = dead
                .iter()
                .find_map(|(id, _)| Some((*id, dir.last_log_line(*id)?)))
                .map(|(id, line)| format!("; node {} said: {line}", id.0))
                .unwrap_or_default();
            anyhow::bail!(
                "{}{why}; the cluster was stopped (see the logs in {})",
                NotReady::Dead(dead),
                dir.logs().display()
            )
        }
        Err(e) => anyhow::bail!(
            "{e}. It is left running: see `cuberoute cluster status --dir {}`",
            dir.display()
        ),
    }
}

/// [`ready::wait_ready`] on a cluster that was already running (for `timeout`, by default
/// [`ready::default_timeout`]): fails, naming what is not ready, and leaves it as it is. No
/// cluster in `dir` is [`Refused`].
pub async fn wait_running(dir: &ClusterDir, timeout: Option<Duration>) -> anyhow::Result<()> {
    let cluster = ClusterClient::open(dir).map_err(|e| Refused(format!("{e:#}")))?;
    let timeout =
        timeout.unwrap_or_else(|| ready::default_timeout(cluster.manifest.topology.node_count()));
    let waited = ready::wait_ready(&cluster, timeout, &mut |_| {}).await;
    cluster.close();
    waited.map(|_| ()).map_err(|e| {
        anyhow::anyhow!(
            "{e} (the cluster in {}); see `cuberoute cluster status --dir {}`",
            dir.display(),
            dir.display()
        )
    })
}
