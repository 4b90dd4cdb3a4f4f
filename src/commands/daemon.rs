//! `cuberoute daemon --config node.toml [flags]`: run one node until SIGTERM; with `--check`,
//! check its configuration and exit. With `--with-config other.toml` (again for each), or a
//! list of them in a file (`--with-configs LIST`), the process hosts those nodes too, as it
//! does the nodes of its pod when its configuration says `nodes_per_pod`.

use cuberoute_daemon::config::{DaemonArgs, NodeConfig};

pub fn run(args: DaemonArgs) -> anyhow::Result<()> {
    let config = NodeConfig::resolve(&args).map_err(|e| super::usage(e.to_string()))?;
    let pod = config.pod.clone().unwrap_or_default();
    let mut hosted = vec![(config, args.clone())];
    // A pod of several nodes (`nodes_per_pod`): the others from the same configuration.
    for id in pod.iter().skip(1) {
        let args = DaemonArgs {
            id: Some(id.0.to_string()),
            id_from_hostname: false,
            ..args.clone()
        };
        let config = NodeConfig::resolve(&args)
            .map_err(|e| super::usage(format!("node {id} of the pod: {e}")))?;
        hosted.push((config, args));
    }
    for path in &args.hosted_configs().map_err(super::usage)? {
        let args = DaemonArgs {
            config: Some(path.clone()),
            ..DaemonArgs::default()
        };
        let config = NodeConfig::resolve(&args)
            .map_err(|e| super::usage(format!("{}: {e}", path.display())))?;
        hosted.push((config, args));
    }
    let configs: Vec<NodeConfig> = hosted.iter().map(|(c, _)| c.clone()).collect();
    cuberoute_daemon::host::check(&configs).map_err(super::usage)?;
    if args.check {
        for (config, _) in &hosted {
            check(config)?;
        }
        return Ok(());
    }
    // Before the store's writer thread, the one other thread, starts.
    cuberoute_daemon::quiet::tune_allocator();
    cuberoute_daemon::logging::init_logging(&configs[0].log_level, configs[0].log_format);
    // One thread per process: a cluster runs many daemons on few cores.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if hosted.len() == 1 {
        let (config, args) = hosted.pop().expect("one");
        return runtime.block_on(cuberoute_daemon::run(config, args));
    }
    let (configs, args): (Vec<_>, Vec<_>) = hosted.into_iter().unzip();
    runtime.block_on(cuberoute_daemon::run_host(configs, args))
}

/// `--check` of one node: its store, and the summary.
fn check(config: &NodeConfig) -> anyhow::Result<()> {
    {
        let store = match &config.store {
            Some(store) => {
                let identity = cuberoute_daemon::keeping::identity(
                    config.topology,
                    config.id,
                    &config.credentials.ca,
                );
                cuberoute_daemon::keeping::check(store, &identity)
                    .map_err(|e| super::usage(format!("config key `store.path`: {e}")))?
            }
            None => "none: reliable sets are kept in memory only".to_string(),
        };
        print!("{}", summary(config));
        println!("  store {store}");
    }
    Ok(())
}

/// What `--check` prints: the configuration the daemon would run with.
fn summary(c: &NodeConfig) -> String {
    let b = &c.buffers;
    let metrics = c
        .metrics_listen
        .map_or("off".to_string(), |a| a.to_string());
    format!(
        "configuration OK: node {} ({}) of {}\n\
         \x20 listen {}, control {}, metrics {}\n\
         \x20 certificate names {}; manifest lists {} nodes\n\
         \x20 sealing {}: key directory of {} nodes, {} revoked\n\
         \x20 buffers: input {} sets, link {} packets, output {} copies, {} requests, {} MiB in all\n\
         \x20 log level {}, format {}; fault injection {}; niceness {}\n\
         \x20 liveness: a probe every {}, a neighbour silent {} intervals ({}) taken for dead\n",
        c.id,
        crate::print::node(c.topology, c.id),
        c.topology,
        c.listen,
        c.control_listen,
        metrics,
        c.credentials.identity,
        c.manifest.nodes.len(),
        if c.seal { "on" } else { "off" },
        c.keys.len(),
        c.keys.revocations().revoked.len(),
        b.input,
        b.link,
        b.output,
        b.requests,
        b.memory_bytes >> 20,
        c.log_level,
        c.log_format.as_str(),
        if c.chaos_allowed {
            "allowed"
        } else {
            "refused"
        },
        c.nice,
        humantime::format_duration(c.liveness.interval),
        c.liveness.multiplier,
        humantime::format_duration(c.liveness.detection_time())
    )
}
