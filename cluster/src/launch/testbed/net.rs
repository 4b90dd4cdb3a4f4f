//! The testbed's network: the bridge with the machine's address, the iptables rules that let
//! bridged frames through, and per host a namespace and a veth pair. Made and removed with
//! the helpers of [`netns`](crate::launch::netns) (`ip -batch`, entering a namespace with setns).

use super::{PREFIX, Plan};
use crate::launch::netns;
use std::process::Command;
use std::time::{Duration, Instant};

/// The chains that get the ACCEPT rule: FORWARD, and DOCKER-USER where the machine's Docker
/// made it (Docker's FORWARD policy is DROP, and bridged frames pass iptables).
fn chains() -> Vec<&'static str> {
    let docker_user = Command::new("iptables")
        .args(["-w", "-S", "DOCKER-USER"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut chains = vec!["FORWARD"];
    if docker_user {
        chains.push("DOCKER-USER");
    }
    chains
}

/// Make the network of `plan`: the bridge (then the machine-wide lock of `claimed` is let go),
/// the rules, the namespaces and veth pairs, each host's address and default route. What was
/// made stays for [`remove`].
pub(super) fn make(plan: &Plan, claimed: netns::Claimed) -> anyhow::Result<()> {
    let bridge = plan.bridge();
    netns::batch(
        "ip",
        None,
        &[
            format!("link add {bridge} type bridge"),
            format!("link set {bridge} addrgenmode none"),
            format!("addr add {}/{PREFIX} dev {bridge}", plan.bridge_address()),
            format!("link set {bridge} up"),
        ],
    )?
    .wait()?;
    // The block is the bridge's now: anyone choosing a block sees it.
    drop(claimed.lock);
    for chain in chains() {
        netns::run_ok(Command::new("iptables").args([
            "-w",
            "-I",
            chain,
            "-i",
            &bridge,
            "-o",
            &bridge,
            "-m",
            "comment",
            "--comment",
            &plan.comment(),
            "-j",
            "ACCEPT",
        ]))?;
    }
    let lines: Vec<String> = (1..=plan.hosts)
        .flat_map(|i| {
            let (ns, veth) = (plan.namespace(i), plan.veth(i));
            [
                format!("netns add {ns}"),
                format!("link add {veth} type veth peer name eth0 netns {ns}"),
                format!("link set {veth} addrgenmode none"),
                format!("link set {veth} master {bridge} up"),
            ]
        })
        .collect();
    netns::batch("ip", None, &lines)?.wait()?;
    let inside: Vec<netns::Batch> = (1..=plan.hosts)
        .map(|i| {
            let lines = [
                "link set lo up".to_string(),
                "link set eth0 addrgenmode none".into(),
                format!("addr add {}/24 dev eth0", plan.address(i)),
                "link set eth0 up".into(),
                format!("route add default via {}", plan.bridge_address()),
            ];
            netns::batch("ip", Some(&plan.namespace(i)), &lines)
        })
        .collect::<anyhow::Result<_>>()?;
    for batch in inside {
        batch.wait()?;
    }
    Ok(())
}

/// Set host `i`'s link up or down (the bridge's end of its veth pair).
pub(super) fn set_link(plan: &Plan, i: usize, up: bool) -> anyhow::Result<()> {
    let veth = plan.veth(i);
    netns::run_ok(Command::new("ip").args(["link", "set", &veth, if up { "up" } else { "down" }]))?;
    Ok(())
}

/// What of the network there is: the testbed's namespaces and links, and its rules.
fn present(plan: &Plan) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
    let mut names: Vec<String> = netns::names("/var/run/netns")
        .into_iter()
        .filter(|n| plan.owns(n))
        .collect();
    names.extend(
        netns::names("/sys/class/net")
            .into_iter()
            .filter(|n| plan.owns(n)),
    );
    let rules = netns::rule_specs(&netns::output("iptables", &["-w", "-S"])?, &plan.comment());
    Ok((names, rules))
}

/// Remove the network of `plan`, whatever was made of it: its rules, namespaces, veth pairs and
/// bridge (the processes inside the namespaces must be gone first). Idempotent; what it removed,
/// or an error naming what is left.
pub(super) fn remove(plan: &Plan) -> anyhow::Result<Vec<String>> {
    let (names, rules) = present(plan)?;
    let mut removed = Vec::new();
    for spec in &rules {
        netns::run_ok(Command::new("iptables").arg("-w").args(spec))?;
        removed.push(format!("iptables rule in {}", spec[1]));
    }
    let namespaces: Vec<String> = names
        .iter()
        .filter(|n| n.starts_with("crh-"))
        .map(|n| format!("netns del {n}"))
        .collect();
    if !namespaces.is_empty() {
        // -force: on past one that went meanwhile; what is left is checked below.
        let _ = netns::force(&namespaces);
    }
    // A namespace's end takes its veth pair with it, a moment later.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline
        && netns::names("/sys/class/net")
            .iter()
            .any(|n| plan.owns(n) && n.starts_with("crtv-"))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let links: Vec<String> = netns::names("/sys/class/net")
        .into_iter()
        .filter(|n| plan.owns(n))
        .map(|n| format!("link del {n}"))
        .collect();
    if !links.is_empty() {
        let _ = netns::force(&links);
    }
    removed.extend(names);
    let (left, rules) = present(plan)?;
    let mut left = left;
    left.extend(
        rules
            .iter()
            .map(|r| format!("the iptables rule in {}", r[1])),
    );
    anyhow::ensure!(
        left.is_empty(),
        "could not remove {} of the testbed's network: {}",
        left.len(),
        left.join(", ")
    );
    Ok(removed)
}
