//! `cuberoute testbed up | down | status | cut | restore`: a Docker Swarm of several engines on
//! one machine, each host a network namespace of its own ([`cuberoute_cluster::launch::testbed`]).
//! This module parses, calls and prints; a bad host count or host name, a directory without a
//! testbed and a user who is not root are usage errors (exit 2).

use super::usage;
use cuberoute_cluster::launch::docker::DEFAULT_IMAGE;
use cuberoute_cluster::launch::local::interrupt::Catch;
use cuberoute_cluster::launch::testbed::{self, HostStatus, NoTestbed, UnknownHost, UpOptions};
use std::io::Write;
use std::path::PathBuf;

pub const DEFAULT_DIR: &str = "cuberoute-testbed";

#[derive(clap::Args, Debug, Clone)]
pub struct DirArg {
    /// The testbed directory: its state (testbed.toml), each host's daemon.json and dockerd.log.
    #[arg(long, default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Make N hosts, each a network namespace with an address of its own and a Docker engine,
    /// load the image into every engine and join them in one Swarm (h1 its manager). Root only.
    Up(UpArgs),
    /// Remove everything of the testbed: containers, engines, mounts, data, namespaces, bridge,
    /// iptables rules. Also after an `up` that was killed half way.
    Down(DirArg),
    /// Per host: address, engine, swarm state and role, the manager's view, containers.
    Status(StatusArgs),
    /// Cut a host's link: the other hosts and the machine no longer reach it, nor it them (its
    /// engine runs on).
    Cut(HostArgs),
    /// Bring a cut host's link up again.
    Restore(HostArgs),
}

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// How many hosts (2 to 9), named h1 .. hN.
    #[arg(long, default_value_t = testbed::DEFAULT_HOSTS)]
    pub hosts: usize,
    #[command(flatten)]
    pub dir: DirArg,
    /// The image loaded into every engine (build it with `cuberoute cluster image`).
    #[arg(long, default_value = DEFAULT_IMAGE)]
    pub image: String,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct HostArgs {
    /// The host: h1 .. hN.
    pub host: String,
    #[command(flatten)]
    pub dir: DirArg,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Up(args) => up(&args),
        Command::Down(args) => down(&args),
        Command::Status(args) => status(&args),
        Command::Cut(args) => link(&args, true),
        Command::Restore(args) => link(&args, false),
    }
}

/// A refusal of the library that the user must fix, as a usage error.
fn refusal(e: anyhow::Error) -> anyhow::Error {
    if e.downcast_ref::<NoTestbed>().is_some() || e.downcast_ref::<UnknownHost>().is_some() {
        usage(e.to_string())
    } else {
        e
    }
}

fn root() -> anyhow::Result<()> {
    testbed::need_root().map_err(|e| usage(e.to_string()))
}

fn up(args: &UpArgs) -> anyhow::Result<()> {
    testbed::check_hosts(args.hosts).map_err(usage)?;
    root()?;
    let dir = &args.dir.dir;
    if let Ok(existing) = testbed::load(dir) {
        return Err(usage(format!(
            "a testbed (tag {}) is already in {}: `cuberoute testbed down --dir {}` first",
            existing.tag,
            dir.display(),
            dir.display()
        )));
    }
    // Ctrl-C (or SIGTERM) while it is made removes what was made.
    let interrupt = Catch::install();
    let options = UpOptions {
        dir: dir.clone(),
        hosts: args.hosts,
        image: args.image.clone(),
    };
    let (testbed, times) = testbed::up(&options, &interrupt, &mut |line| println!("{line}"))?;
    let d = dir.display();
    println!(
        "testbed up in {:.1} s: {} hosts, a Swarm of {} engines, in {d}",
        times.total.as_secs_f64(),
        testbed.hosts.len(),
        testbed.hosts.len()
    );
    for (k, host) in testbed.hosts.iter().enumerate() {
        println!(
            "  {:<3} {:<15} docker -H {}{}",
            host.name,
            host.address.to_string(),
            host.docker_host(),
            if k == 0 { "  (manager)" } else { "" }
        );
    }
    println!("  status:  cuberoute testbed status --dir {d}");
    println!("  cut:     cuberoute testbed cut --dir {d} h2   (and restore)");
    println!("  down:    cuberoute testbed down --dir {d}");
    Ok(())
}

fn down(args: &DirArg) -> anyhow::Result<()> {
    let dir = &args.dir;
    if testbed::load(dir).is_ok() {
        root()?;
    }
    match testbed::down(dir)? {
        None => println!("no testbed in {}: nothing to take down", dir.display()),
        Some(removed) => {
            println!(
                "testbed {} down in {:.1} s",
                removed.tag,
                removed.elapsed.as_secs_f64()
            );
            for line in removed.lines() {
                println!("  {line}");
            }
        }
    }
    Ok(())
}

fn link(args: &HostArgs, cut: bool) -> anyhow::Result<()> {
    let dir = &args.dir.dir;
    let testbed = testbed::load(dir).map_err(refusal)?;
    if testbed.host(&args.host).is_none() {
        return Err(usage(
            UnknownHost {
                name: args.host.clone(),
                hosts: testbed.hosts.len(),
            }
            .to_string(),
        ));
    }
    root()?;
    let host = if cut {
        testbed::cut(dir, &args.host)
    } else {
        testbed::restore(dir, &args.host)
    }
    .map_err(refusal)?;
    if cut {
        println!(
            "{} ({}) cut: its link to the bridge is down; `cuberoute testbed restore --dir {} {}` \
             brings it back",
            host.name,
            host.address,
            dir.display(),
            host.name
        );
    } else {
        println!("{} ({}) restored: its link is up", host.name, host.address);
    }
    Ok(())
}

fn status(args: &StatusArgs) -> anyhow::Result<()> {
    let (testbed, hosts) = testbed::status(&args.dir.dir).map_err(refusal)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(
            &mut out,
            &serde_json::json!({
                "dir": testbed.dir, "tag": testbed.tag, "block": testbed.block,
                "image": testbed.image, "manager": testbed.manager_endpoint(),
                "hosts": hosts,
            }),
        )?;
        writeln!(out)?;
    } else {
        write_status(&mut out, &testbed, &hosts)?;
    }
    let stopped: Vec<&str> = hosts
        .iter()
        .filter(|h| !h.engine_running || !h.answers)
        .map(|h| h.host.name.as_str())
        .collect();
    if !stopped.is_empty() {
        anyhow::bail!("the engines of {} do not run or answer", stopped.join(", "));
    }
    Ok(())
}

fn write_status(
    out: &mut impl Write,
    testbed: &testbed::Testbed,
    hosts: &[HostStatus],
) -> std::io::Result<()> {
    writeln!(
        out,
        "testbed {} in {}: {} hosts in {}/18, manager h1 at {}, image {}",
        testbed.tag,
        testbed.dir.display(),
        hosts.len(),
        testbed.block,
        testbed.manager_endpoint(),
        testbed.image
    )?;
    writeln!(
        out,
        "{:<4} {:<15} {:<16} {:<16} {:<8} {:<10} link",
        "host", "address", "engine", "swarm", "node", "containers"
    )?;
    for h in hosts {
        let engine = match (h.pid, h.engine_running, h.answers) {
            (Some(pid), true, true) => format!("up ({pid})"),
            (Some(pid), true, false) => format!("silent ({pid})"),
            (_, false, _) => "stopped".to_string(),
            (None, true, _) => "?".to_string(),
        };
        let swarm = format!("{} {}", h.swarm_state, h.role);
        writeln!(
            out,
            "{:<4} {:<15} {:<16} {:<16} {:<8} {:<10} {}",
            h.host.name,
            h.host.address.to_string(),
            engine,
            swarm.trim(),
            if h.node_status.is_empty() {
                "-"
            } else {
                &h.node_status
            },
            format!("{}/{}", h.containers_running, h.containers),
            if h.host.cut { "CUT" } else { "up" }
        )?;
    }
    writeln!(
        out,
        "engines: docker -H unix://{}",
        testbed
            .manager()
            .socket
            .display()
            .to_string()
            .replace("/h1/", "/hI/")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("testbed").chain(args.iter().copied()))
            .map(|c| c.command)
    }

    #[test]
    fn arguments() {
        let Command::Up(up) = parse(&["up"]).unwrap() else {
            panic!("not up")
        };
        assert_eq!(up.hosts, 3);
        assert_eq!(up.dir.dir, PathBuf::from(DEFAULT_DIR));
        assert_eq!(up.image, DEFAULT_IMAGE);
        let Command::Up(up) =
            parse(&["up", "--hosts", "5", "--dir", "tb", "--image", "x:y"]).unwrap()
        else {
            panic!("not up")
        };
        assert_eq!(
            (up.hosts, up.dir.dir, up.image.as_str()),
            (5, PathBuf::from("tb"), "x:y")
        );
        let Command::Cut(cut) = parse(&["cut", "--dir", "tb", "h2"]).unwrap() else {
            panic!("not cut")
        };
        assert_eq!(
            (cut.host.as_str(), cut.dir.dir),
            ("h2", PathBuf::from("tb"))
        );
        assert!(matches!(
            parse(&["status", "--json"]).unwrap(),
            Command::Status(StatusArgs { json: true, .. })
        ));
        assert!(matches!(
            parse(&["restore", "h1"]).unwrap(),
            Command::Restore(_)
        ));
        assert!(matches!(parse(&["down"]).unwrap(), Command::Down(_)));
        assert!(parse(&["cut"]).is_err());
        assert!(parse(&["up", "--hosts", "-1"]).is_err());
    }

    #[test]
    fn a_host_count_out_of_range_is_a_usage_error() {
        for hosts in [0, 1, 10] {
            let err = up(&UpArgs {
                hosts,
                dir: DirArg {
                    dir: PathBuf::from("/nonexistent/tb"),
                },
                image: DEFAULT_IMAGE.into(),
            })
            .unwrap_err();
            assert_eq!(super::super::exit_code(&err), 2, "{err}");
            assert!(err.to_string().contains("2 to 9"), "{err}");
        }
    }

    #[test]
    fn a_directory_without_a_testbed_is_a_usage_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DirArg {
            dir: tmp.path().to_path_buf(),
        };
        let err = link(
            &HostArgs {
                host: "h2".into(),
                dir: dir.clone(),
            },
            true,
        )
        .unwrap_err();
        assert_eq!(super::super::exit_code(&err), 2, "{err}");
        let err = status(&StatusArgs { dir, json: false }).unwrap_err();
        assert_eq!(super::super::exit_code(&err), 2, "{err}");
    }
}
