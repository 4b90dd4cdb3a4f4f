//! The image in every engine, and the swarm: h1 its manager, the others workers, every node
//! labelled with its host's name; what the manager sees of the nodes.

use super::engine::{self, docker, run};
use super::{MANAGER_PORT, Plan, State, Testbed};
use crate::launch::local::interrupt::Catch;
use crate::launch::swarm::stack::HOST_LABEL;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Load the state's image into every engine: `docker save` once from the machine's engine into
/// DIR/image.tar, `docker load` of it into every engine at once; then check each has it.
pub(super) fn load_image(dir: &Path, state: &State) -> anyhow::Result<()> {
    let plan = state.plan();
    let tar = dir.join("image.tar");
    let loaded = run(
        Command::new("docker")
            .args(["save", "-o"])
            .arg(&tar)
            .arg(&state.image),
        Duration::from_secs(300),
    )
    .and_then(|_| {
        std::thread::scope(|s| {
            let loads: Vec<_> = (1..=plan.hosts)
                .map(|i| {
                    let (plan, tar) = (&plan, &tar);
                    s.spawn(move || {
                        run(
                            docker(&plan.socket(i)).args(["load", "-q", "-i"]).arg(tar),
                            Duration::from_secs(300),
                        )
                    })
                })
                .collect();
            loads
                .into_iter()
                .try_for_each(|l| l.join().expect("a load thread").map(|_| ()))
        })
    });
    let _ = std::fs::remove_file(&tar);
    loaded?;
    for i in 1..=plan.hosts {
        run(
            docker(&plan.socket(i)).args(["image", "inspect", "--format", "{{.Id}}", &state.image]),
            Duration::from_secs(30),
        )
        .map_err(|e| anyhow::anyhow!("the image is not in the engine of h{i}: {e}"))?;
    }
    Ok(())
}

/// Make the swarm: `swarm init` on h1, `swarm join` as workers on the others (at once), a label
/// `cuberoute.host=hI` on each node. The node ids, in host order.
pub(super) fn form(state: &State, interrupt: &Catch) -> anyhow::Result<Vec<String>> {
    let plan = state.plan();
    let manager = plan.socket(1);
    let limit = Duration::from_secs(60);
    run(
        docker(&manager).args([
            "swarm",
            "init",
            "--advertise-addr",
            &plan.address(1).to_string(),
            "--default-addr-pool",
            &plan.swarm_pool(),
            "--default-addr-pool-mask-length",
            "24",
        ]),
        limit,
    )?;
    anyhow::ensure!(!interrupt.caught(), "interrupted");
    let token = run(
        docker(&manager).args(["swarm", "join-token", "-q", "worker"]),
        limit,
    )?;
    let token = token.trim();
    let endpoint = format!("{}:{MANAGER_PORT}", plan.address(1));
    std::thread::scope(|s| {
        let joins: Vec<_> = (2..=plan.hosts)
            .map(|i| {
                let (plan, endpoint) = (&plan, &endpoint);
                s.spawn(move || {
                    run(
                        docker(&plan.socket(i)).args([
                            "swarm",
                            "join",
                            "--token",
                            token,
                            "--advertise-addr",
                            &plan.address(i).to_string(),
                            endpoint,
                        ]),
                        limit,
                    )
                    .map_err(|e| anyhow::anyhow!("h{i} joining the swarm: {e}"))
                })
            })
            .collect();
        joins
            .into_iter()
            .try_for_each(|j| j.join().expect("a join thread").map(|_| ()))
    })?;
    anyhow::ensure!(!interrupt.caught(), "interrupted");
    let mut ids = Vec::new();
    for i in 1..=plan.hosts {
        let id = engine::info(&plan.socket(i))
            .map(|info| info.node_id)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| anyhow::anyhow!("the engine of h{i} names no swarm node"))?;
        run(
            docker(&manager).args([
                "node",
                "update",
                "--label-add",
                &format!("{HOST_LABEL}={}", Plan::name(i)),
                &id,
            ]),
            limit,
        )?;
        ids.push(id);
    }
    Ok(ids)
}

/// One node as `docker node ls` on the manager shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct NodeRow {
    pub id: String,
    /// `Ready`, `Down`, `Unknown`, `Disconnected`.
    pub status: String,
    pub availability: String,
    /// `Leader`, `Reachable`, `Unreachable`; empty for a worker.
    pub manager_status: String,
}

const NODE_FORMAT: &str = "{{.ID}}\t{{.Status}}\t{{.Availability}}\t{{.ManagerStatus}}";

fn parse_nodes(text: &str) -> Vec<NodeRow> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            Some(NodeRow {
                id: fields.next()?.trim().to_string(),
                status: fields.next()?.trim().to_string(),
                availability: fields.next()?.trim().to_string(),
                manager_status: fields.next().unwrap_or("").trim().to_string(),
            })
        })
        .filter(|n| !n.id.is_empty())
        .collect()
}

/// The swarm's nodes, as the manager at `socket` sees them.
pub(super) fn nodes(socket: &Path) -> anyhow::Result<Vec<NodeRow>> {
    let out = run(
        docker(socket).args(["node", "ls", "--format", NODE_FORMAT]),
        Duration::from_secs(10),
    )?;
    Ok(parse_nodes(&out))
}

/// The nodes as the testbed's manager sees them; none if it does not answer.
pub(super) fn manager_view(testbed: &Testbed) -> Vec<NodeRow> {
    nodes(&testbed.manager().socket).unwrap_or_default()
}

/// Wait until the manager shows every recorded node Ready.
pub(super) fn wait_ready(
    state: &State,
    timeout: Duration,
    interrupt: &Catch,
) -> anyhow::Result<()> {
    let manager = state.plan().socket(1);
    let deadline = Instant::now() + timeout;
    loop {
        anyhow::ensure!(!interrupt.caught(), "interrupted");
        let seen = nodes(&manager).unwrap_or_default();
        let not_ready: Vec<&str> = state
            .engines
            .iter()
            .filter(|e| {
                !seen
                    .iter()
                    .any(|n| Some(&n.id) == e.node_id.as_ref() && n.status == "Ready")
            })
            .map(|e| e.name.as_str())
            .collect();
        if not_ready.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the swarm's manager does not show {} Ready within {} s (it sees: {:?})",
            not_ready.join(", "),
            timeout.as_secs(),
            seen
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_managers_view_is_read_per_node() {
        let text = "p1x\tReady\tActive\tLeader\n\
                    q2y\tDown\tActive\t\n\
                    r3z\tReady\tDrain\n\
                    \n";
        let nodes = parse_nodes(text);
        assert_eq!(nodes.len(), 3);
        assert_eq!(
            nodes[0],
            NodeRow {
                id: "p1x".into(),
                status: "Ready".into(),
                availability: "Active".into(),
                manager_status: "Leader".into(),
            }
        );
        assert_eq!(nodes[1].status, "Down");
        assert_eq!(nodes[1].manager_status, "");
        assert_eq!(nodes[2].availability, "Drain");
    }
}
