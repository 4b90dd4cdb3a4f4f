//! A cluster of containers, run with docker compose: `docker compose` (v2) where it exists,
//! else `docker-compose` (v1). Every operation names the project and the compose file, so that
//! several clusters can run side by side.

use crate::launch::compose;
use crate::launch::generate::{Addressing, Ports};
use crate::launch::layout::{ClusterDir, NODE_HOSTED_LIST};
use anyhow::Context;
use cuberoute_protocol::NodeId;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The image every generated compose file and manifest uses unless told otherwise.
pub const DEFAULT_IMAGE: &str = "cuberoute:local";

/// How a docker cluster was started: recorded in `DIR/run.toml`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DockerRun {
    pub project: String,
    pub compose_file: PathBuf,
    pub subnet: Ipv4Addr,
    /// Nodes crashed inside a container whose other nodes run on (`chaos kill` of a node
    /// host's node: [`crate::launch::in_host`]), until started there again or their container
    /// stops.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crashed: Vec<NodeId>,
}

/// The compose program of this machine.
#[derive(Clone, Debug)]
pub struct Compose {
    program: Vec<String>,
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the Docker engine answers.
pub fn available() -> Result<(), String> {
    match Command::new("docker").arg("info").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("docker info failed")
            .to_string()),
        Err(e) => Err(format!("cannot run docker: {e}")),
    }
}

impl Compose {
    pub fn detect() -> anyhow::Result<Compose> {
        if succeeds("docker", &["compose", "version"]) {
            Ok(Compose {
                program: vec!["docker".into(), "compose".into()],
            })
        } else if succeeds("docker-compose", &["version"]) {
            Ok(Compose {
                program: vec!["docker-compose".into()],
            })
        } else {
            anyhow::bail!("neither `docker compose` nor `docker-compose` is available")
        }
    }

    fn command(&self, run: &DockerRun) -> Command {
        let mut command = Command::new(&self.program[0]);
        command
            .args(&self.program[1..])
            .arg("-p")
            .arg(&run.project)
            .arg("-f")
            .arg(&run.compose_file);
        command
    }

    /// Run a compose subcommand; its output, or an error with its stderr.
    pub fn run(&self, run: &DockerRun, args: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .command(run)
            .args(args)
            .output()
            .with_context(|| format!("running {} {args:?}", self.program.join(" ")))?;
        anyhow::ensure!(
            out.status.success(),
            "{} {} failed: {}",
            self.program.join(" "),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out)
    }

    /// Run a compose subcommand with its output going to ours.
    pub fn run_inherit(&self, run: &DockerRun, args: &[&str]) -> anyhow::Result<()> {
        let status = self.command(run).args(args).status()?;
        anyhow::ensure!(
            status.success(),
            "{} {args:?} failed",
            self.program.join(" ")
        );
        Ok(())
    }
}

/// A compose project name for a cluster directory: stable, and distinct for distinct paths.
pub fn project_name(dir: &ClusterDir) -> String {
    let absolute = std::path::absolute(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
    let name: String = absolute
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(20)
        .collect();
    let hash = fnv1a(absolute.to_string_lossy().as_bytes());
    format!("cuberoute{name}{hash:08x}")
}

fn fnv1a(bytes: &[u8]) -> u32 {
    // FNV-1a: enough to tell two directories apart in a project name.
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Generate the cluster for containers and write its compose file to `DIR/compose.yml`: a
/// container for each of `containers` (the nodes each runs, in id order; every node in one).
/// Every node's configuration keeps its store on its container's volume
/// ([`compose::container_config`]), and a container of several has its list of them
/// ([`compose::hosted_list`]). Store volumes left by an earlier cluster of this
/// directory's project are removed first: their stores belong to the CA about to be replaced,
/// and a node refuses a store of another cluster.
pub fn prepare(
    dir: &ClusterDir,
    topology: cuberoute_protocol::Topology,
    subnet: Ipv4Addr,
    image: &str,
    containers: &[Vec<NodeId>],
) -> anyhow::Result<DockerRun> {
    let project = project_name(dir);
    remove_volumes(&project, dir)?;
    let ports = Ports::default();
    let addressing = Addressing::Docker {
        subnet,
        ports,
        containers: crate::launch::generate::containers(topology, containers),
    };
    crate::launch::generate::generate(dir, topology, &addressing)?;
    for nodes in containers {
        let hosted = nodes.len() > 1;
        for &id in nodes {
            let config = dir.node_config(id);
            let text = std::fs::read_to_string(&config)
                .with_context(|| format!("reading {}", config.display()))?;
            let text = compose::container_config(&text, &compose::store_path(id, hosted));
            std::fs::write(&config, text)
                .with_context(|| format!("writing {}", config.display()))?;
        }
        if hosted {
            let list = dir.node_dir(nodes[0]).join(NODE_HOSTED_LIST);
            std::fs::write(&list, compose::hosted_list(nodes))
                .with_context(|| format!("writing {}", list.display()))?;
        }
    }
    let compose_file = dir.path().join(compose::COMPOSE_FILE);
    std::fs::write(
        &compose_file,
        compose::compose_file(topology, subnet, ports, image, containers),
    )
    .with_context(|| format!("writing {}", compose_file.display()))?;
    Ok(DockerRun {
        project,
        compose_file: std::path::absolute(&compose_file)?,
        subnet,
        crashed: Vec::new(),
    })
}

/// Remove the volumes docker compose made for `project` (`down --volumes` left undone), before
/// anything in `dir` is generated again. Nothing to do without `docker` or an engine that
/// answers; an error if one is still in use (a stopped container of the project holds it:
/// `cluster down` removes both).
fn remove_volumes(project: &str, dir: &ClusterDir) -> anyhow::Result<()> {
    let filter = format!("label=com.docker.compose.project={project}");
    let Ok(out) = Command::new("docker")
        .args(["volume", "ls", "-q", "--filter", &filter])
        .stderr(Stdio::null())
        .output()
    else {
        return Ok(());
    };
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if !out.status.success() || names.is_empty() {
        return Ok(());
    }
    let rm = Command::new("docker")
        .args(["volume", "rm"])
        .args(&names)
        .output()
        .context("running docker volume rm")?;
    anyhow::ensure!(
        rm.status.success(),
        "containers of an earlier cluster in {} (compose project {project}) still hold its store \
         volumes ({}); take it down first: `cuberoute cluster down --dir {}`",
        dir.display(),
        String::from_utf8_lossy(&rm.stderr)
            .lines()
            .next()
            .unwrap_or("docker volume rm failed")
            .trim(),
        dir.display()
    );
    Ok(())
}

/// The ids of a project's containers: running ones, or (`all`) stopped ones too.
fn container_ids(run: &DockerRun, all: bool) -> anyhow::Result<Vec<String>> {
    let filter = format!("label=com.docker.compose.project={}", run.project);
    let mut args = vec!["ps", "-q", "--filter", &filter];
    if all {
        args.push("-a");
    }
    let out = Command::new("docker").args(&args).output()?;
    anyhow::ensure!(
        out.status.success(),
        "docker ps failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// The compose project whose containers run the cluster in `dir`, however it was started
/// (`cluster up --docker`, or `docker-compose -f DIR/compose.yml up` by hand, as deploy/README.md
/// says): the project of the containers one of whose bind mounts is a node directory of `dir`
/// (`DIR/nodes/<id>`, however either path is spelled), and its compose file from their labels.
/// `None` if no container mounts one (or there is no `docker`); an error if the engine does not
/// answer, or if containers of several projects mount one.
pub fn discover(dir: &ClusterDir) -> anyhow::Result<Option<DockerRun>> {
    let nodes = std::fs::canonicalize(dir.nodes())
        .with_context(|| format!("{} has no node directories", dir.display()))?;
    let out = match Command::new("docker")
        .args(["ps", "-aq", "--filter", "label=com.docker.compose.project"])
        .output()
    {
        // Without docker, no container runs anything.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => other.context("running docker ps")?,
    };
    anyhow::ensure!(
        out.status.success(),
        "docker ps failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Ok(None);
    }
    let out = Command::new("docker")
        .arg("inspect")
        .arg("--format")
        .arg(
            "{{index .Config.Labels \"com.docker.compose.project\"}}\t\
             {{index .Config.Labels \"com.docker.compose.project.working_dir\"}}\t\
             {{index .Config.Labels \"com.docker.compose.project.config_files\"}}\t\
             {{range .Mounts}}{{.Source}}\t{{end}}",
        )
        .args(&ids)
        .output()
        .context("running docker inspect")?;
    anyhow::ensure!(
        out.status.success(),
        "docker inspect failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let mounts_a_node = |source: &str| {
        let source = Path::new(source);
        let source = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        source.parent() == Some(nodes.as_path())
    };
    let mut projects: std::collections::BTreeMap<String, PathBuf> = Default::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut fields = line.split('\t');
        let (Some(project), Some(working_dir), Some(files)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if project.is_empty() || !fields.any(mounts_a_node) {
            continue;
        }
        // The first compose file. The label holds it as it was named on the command line
        // (docker-compose v1: relative to wherever that ran), and the project's directory is
        // the file's own unless told otherwise: look for its name there.
        let labelled = files
            .split(',')
            .next()
            .filter(|f| !f.is_empty())
            .map(Path::new);
        let compose_file = match labelled {
            Some(f) if f.is_absolute() && f.is_file() => f.to_path_buf(),
            Some(f) => f
                .file_name()
                .map(|name| Path::new(working_dir).join(name))
                .filter(|f| f.is_file())
                .unwrap_or_else(|| dir.path().join(compose::COMPOSE_FILE)),
            None => dir.path().join(compose::COMPOSE_FILE),
        };
        projects.insert(project.to_string(), compose_file);
    }
    if projects.len() > 1 {
        let names: Vec<&str> = projects.keys().map(String::as_str).collect();
        anyhow::bail!(
            "containers of {} compose projects mount {}: {}; take all but one down \
             (`docker-compose -p NAME -f FILE down`)",
            names.len(),
            nodes.display(),
            names.join(", ")
        );
    }
    let Some((project, compose_file)) = projects.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(DockerRun {
        project,
        compose_file: std::path::absolute(compose_file)?,
        subnet: subnet_of(dir).unwrap_or(Ipv4Addr::UNSPECIFIED),
        crashed: Vec::new(),
    }))
}

/// The /16 network of a container cluster, from the address of its first node in the client's
/// manifest (node i is at subnet + 2 + i).
fn subnet_of(dir: &ClusterDir) -> Option<Ipv4Addr> {
    let manifest = cuberoute_daemon::manifest::Manifest::load(&dir.manifest()).ok()?;
    let first = manifest.nodes.first()?;
    let host = first.control.rsplit_once(':')?.0;
    let ip: Ipv4Addr = host.parse().ok()?;
    Some(Ipv4Addr::from(u32::from(ip) & 0xffff_0000))
}

/// One container's state, as docker reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    pub service: String,
    /// `running`, `exited`, ...
    pub state: String,
    /// `healthy`, `unhealthy`, `starting`, or empty without a healthcheck.
    pub health: String,
}

/// The containers of a compose project.
pub fn containers(run: &DockerRun) -> anyhow::Result<Vec<Container>> {
    let ids = container_ids(run, true)?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let out = Command::new("docker")
        .arg("inspect")
        .arg("--format")
        .arg(
            "{{index .Config.Labels \"com.docker.compose.service\"}} {{.State.Status}} \
             {{if .State.Health}}{{.State.Health.Status}}{{end}}",
        )
        .args(&ids)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "docker inspect failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            Some(Container {
                service: fields.next()?.to_string(),
                state: fields.next()?.to_string(),
                health: fields.next().unwrap_or("").to_string(),
            })
        })
        .collect())
}

/// The host pids of the main processes of a project's running containers.
pub fn container_pids(run: &DockerRun) -> anyhow::Result<Vec<u32>> {
    let ids = container_ids(run, false)?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let out = Command::new("docker")
        .args(["inspect", "--format", "{{.State.Pid}}"])
        .args(&ids)
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|&p| p != 0)
        .collect())
}

/// Whether the image exists in the local engine.
pub fn image_exists(image: &str) -> bool {
    succeeds("docker", &["image", "inspect", image])
}

/// The size of an image in bytes.
pub fn image_size(image: &str) -> anyhow::Result<u64> {
    let out = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Size}}", image])
        .output()?;
    anyhow::ensure!(out.status.success(), "no image {image}");
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

/// Build the static binary and the FROM-scratch image from the source tree at `workspace`;
/// tag it `cuberoute:<version>` and `cuberoute:local`. Returns the tags.
pub fn build_image(workspace: &Path, version: &str) -> anyhow::Result<Vec<String>> {
    anyhow::ensure!(
        workspace.join("deploy/Dockerfile").is_file(),
        "{} is not a cuberoute source tree (no deploy/Dockerfile): the image is built from source",
        workspace.display()
    );
    let target = "x86_64-unknown-linux-gnu";
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_a_crate) {
            cargo.env_remove(name);
        }
    }
    let status = cargo
        .current_dir(workspace)
        // RUSTFLAGS replaces .cargo/config.toml's flags: repeat them.
        .env(
            "RUSTFLAGS",
            "-C target-feature=+crt-static --cfg tokio_unstable",
        )
        .args([
            "build",
            "--profile",
            "image",
            "--target",
            target,
            "--bin",
            "cuberoute",
        ])
        .status()
        .context("running cargo")?;
    anyhow::ensure!(status.success(), "the static build failed");
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let binary = target_dir.join(target).join("image").join("cuberoute");
    let context = std::env::temp_dir().join(format!("cuberoute-image-{}", std::process::id()));
    std::fs::create_dir_all(&context)?;
    std::fs::copy(&binary, context.join("cuberoute"))
        .with_context(|| format!("copying {}", binary.display()))?;
    let tags = vec![
        format!("cuberoute:{version}"),
        "cuberoute:local".to_string(),
    ];
    let mut build = Command::new("docker");
    build
        .arg("build")
        .arg("-q")
        .arg("-f")
        .arg(workspace.join("deploy/Dockerfile"));
    for tag in &tags {
        build.arg("-t").arg(tag);
    }
    let out = build
        .arg(&context)
        .output()
        .context("running docker build")?;
    let _ = std::fs::remove_dir_all(&context);
    anyhow::ensure!(
        out.status.success(),
        "docker build failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(tags)
}

/// The source tree this program was built from, where [`build_this_image`] builds.
pub fn source_tree() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cluster crate is a folder of the workspace")
}

/// An image [`build_this_image`] built.
#[derive(Debug)]
pub struct BuiltImage {
    pub tags: Vec<String>,
    pub took: Duration,
    pub bytes: u64,
}

/// `cluster image`: build this program's static binary from [`source_tree`] and the
/// FROM-scratch image of it, tagged with this version and `cuberoute:local`.
pub fn build_this_image() -> anyhow::Result<BuiltImage> {
    available().map_err(|e| anyhow::anyhow!("the Docker engine is not available: {e}"))?;
    let started = Instant::now();
    let tags = build_image(source_tree(), env!("CARGO_PKG_VERSION"))?;
    let bytes = image_size(&tags[0])?;
    Ok(BuiltImage {
        tags,
        took: started.elapsed(),
        bytes,
    })
}

/// Whether `name` is one of the variables cargo sets for a crate's program it runs (`cargo run`,
/// `cargo test`). The image's build leaves them out: ring's build script asks to run again when
/// `CARGO_MANIFEST_DIR` changes, so the same build from a test and from a shell would otherwise
/// each make the other's stale, from ring up to the binary.
fn set_by_cargo_for_a_crate(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// The pid (on this machine) of each running node container of `run`: its network namespace is
/// `/proc/PID/ns/net`, which is where the network faults of `crate::chaos::netfault` are applied.
pub fn node_pids(run: &DockerRun) -> anyhow::Result<Vec<(NodeId, u32)>> {
    let ids = container_ids(run, false)?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let out = Command::new("docker")
        .args([
            "inspect",
            "-f",
            "{{.State.Pid}} {{index .Config.Labels \"com.docker.compose.service\"}}",
        ])
        .args(&ids)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "docker inspect failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (pid, service) = line.split_once(' ')?;
            let id = service.strip_prefix("node-")?.parse().ok()?;
            let pid = pid.parse().ok().filter(|&p| p > 0)?;
            Some((NodeId(id), pid))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{NodeId, prepare, set_by_cargo_for_a_crate};
    use cuberoute_protocol::Topology;
    use std::net::Ipv4Addr;

    #[test]
    fn the_image_build_leaves_out_what_cargo_set_for_its_caller_only() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_EXE_cuberoute",
            "CARGO_CRATE_NAME",
            "CARGO_TARGET_TMPDIR",
            "OUT_DIR",
        ] {
            assert!(set_by_cargo_for_a_crate(name), "{name}");
        }
        // What configures cargo itself, or the machine, stays.
        for name in [
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO",
            "PATH",
            "RUSTFLAGS",
        ] {
            assert!(!set_by_cargo_for_a_crate(name), "{name}");
        }
    }

    /// With several nodes a container, each container is one node host: its first node's
    /// configuration and the list of the others, each node's directory mounted apart, one
    /// volume with a store file a node, at its first node's address; the nodes' manifests name
    /// the container's service and the client's its address, where its nodes share the
    /// ports; the manifest tells the containers apart again.
    #[test]
    fn a_container_of_several_nodes_runs_them_as_one_process() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = crate::launch::layout::ClusterDir::new(tmp.path());
        let topology: Topology = "q:3".parse().unwrap();
        let groups = vec![
            vec![NodeId(0), NodeId(3), NodeId(5), NodeId(6)],
            vec![NodeId(1), NodeId(2), NodeId(4), NodeId(7)],
        ];
        let subnet = Ipv4Addr::new(10, 200, 0, 0);
        let run = prepare(&dir, topology, subnet, "img", &groups).unwrap();
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&run.compose_file).unwrap()).unwrap();
        let services = yaml["services"].as_mapping().unwrap();
        assert_eq!(services.len(), 2);
        let host = &yaml["services"]["host-1"];
        assert_eq!(
            host["command"],
            serde_yaml_ng::to_value([
                "daemon",
                "--config",
                "/node/1/node.toml",
                "--with-configs",
                "/node/1/hosted.txt"
            ])
            .unwrap()
        );
        assert_eq!(host["networks"]["cuberoute"]["ipv4_address"], "10.200.0.3");
        assert_eq!(host["volumes"][0], "${CUBEROUTE_DIR:-.}/nodes/1:/node/1:ro");
        assert_eq!(host["volumes"][3], "${CUBEROUTE_DIR:-.}/nodes/7:/node/7:ro");
        assert_eq!(host["volumes"][4], "store-1:/var/lib/cuberoute");
        // Its own nodes' directories, and no other's.
        let mounted: Vec<&str> = host["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str()?.strip_prefix("${CUBEROUTE_DIR:-.}/nodes/"))
            .map(|v| v.split(':').next().unwrap())
            .collect();
        assert_eq!(mounted, ["1", "2", "4", "7"]);
        assert_eq!(host["healthcheck"]["test"][5], "/node/1/node.toml");
        assert_eq!(yaml["volumes"].as_mapping().unwrap().len(), 2);
        let list = std::fs::read_to_string(
            dir.node_dir(NodeId(1))
                .join(crate::launch::layout::NODE_HOSTED_LIST),
        );
        assert_eq!(
            list.unwrap(),
            "/node/2/node.toml\n/node/4/node.toml\n/node/7/node.toml\n"
        );
        let config = |id: u64| -> toml::Table {
            std::fs::read_to_string(dir.node_config(NodeId(id)))
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(
            config(4)["store"]["path"].as_str(),
            Some("/var/lib/cuberoute/store-4.redb")
        );
        assert_eq!(config(4)["listen"].as_str(), Some("0.0.0.0:7000"));
        // Node 4's neighbours: 0 in host-0, 5 in host-0, 6 in host-0 and none else.
        let node_manifest = cuberoute_daemon::manifest::Manifest::load(
            &dir.node_dir(NodeId(4))
                .join(crate::launch::layout::NODE_MANIFEST),
        )
        .unwrap();
        assert_eq!(node_manifest.node(NodeId(4)).unwrap().addr, "host-1:7000");
        assert_eq!(node_manifest.node(NodeId(5)).unwrap().addr, "host-0:7000");
        let client = cuberoute_daemon::manifest::Manifest::load(&dir.manifest()).unwrap();
        assert_eq!(client.node(NodeId(7)).unwrap().control, "10.200.0.3:7001");
        assert_eq!(client.node(NodeId(6)).unwrap().control, "10.200.0.2:7001");
        assert_eq!(crate::launch::hosting::processes(&client), groups);
    }
}
