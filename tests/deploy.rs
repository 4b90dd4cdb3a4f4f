//! Generated deployment files: the checked-in examples stay in sync with the generators, and
//! the Kubernetes manifests hold their invariants. No Docker or Kubernetes needed.

mod common;

use common::ok;
use serde_yaml_ng::Value;
use std::path::Path;

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn the_compose_example_is_what_the_generator_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eh-1-2.yml");
    ok(&[
        "cluster",
        "compose",
        "eh:1,2",
        "--dir",
        tmp.path().join("c").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let generated = std::fs::read_to_string(&out).unwrap();
    let checked_in = std::fs::read_to_string(repo("deploy/compose/eh-1-2.yml")).unwrap();
    assert!(
        generated == checked_in,
        "deploy/compose/eh-1-2.yml is stale: regenerate it with \
         `cuberoute cluster compose eh:1,2 --dir <tmp> -o deploy/compose/eh-1-2.yml`"
    );
    let yaml: Value = serde_yaml_ng::from_str(&generated).unwrap();
    let services = yaml["services"].as_mapping().unwrap();
    assert_eq!(services.len(), 16);
    for (name, service) in services {
        let id: u64 = name
            .as_str()
            .unwrap()
            .strip_prefix("node-")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(service["hostname"], name.clone());
        assert_eq!(
            service["volumes"][0],
            format!("${{CUBEROUTE_DIR:-.}}/nodes/{id}:/node:ro")
        );
        assert_eq!(
            service["networks"]["cuberoute"]["ipv4_address"],
            format!("10.200.0.{}", id + 2)
        );
        // The store on a named volume of the service's own, which outlives the container.
        assert_eq!(
            service["volumes"][1],
            format!("store-{id}:/var/lib/cuberoute")
        );
        assert!(
            yaml["volumes"][format!("store-{id}").as_str()].is_mapping(),
            "the volume store-{id} is declared"
        );
        assert_eq!(service["healthcheck"]["test"][2], "status");
        assert_eq!(service["restart"], "unless-stopped");
    }
    assert_eq!(yaml["volumes"].as_mapping().unwrap().len(), 16);
    // The nodes' manifest names peers by service; the client's by fixed address.
    let c = tmp.path().join("c");
    let peers = std::fs::read_to_string(c.join("nodes/5/manifest.toml")).unwrap();
    assert!(peers.contains("addr = \"node-4:7000\""), "{peers}");
    // ...and lists only the node itself and its neighbours (EH(1,2): 4, 7 and 1).
    let listed: Vec<&str> = peers
        .lines()
        .filter_map(|l| l.strip_prefix("addr = \""))
        .collect();
    assert_eq!(
        listed,
        [
            "node-5:7000\"",
            "node-4:7000\"",
            "node-7:7000\"",
            "node-1:7000\""
        ],
        "{peers}"
    );
    let client = std::fs::read_to_string(c.join("manifest.toml")).unwrap();
    assert!(client.contains("control = \"10.200.0.7:7001\""), "{client}");
    // Every node's configuration keeps its store on that volume (its directory is mounted
    // read-only), and reads the revocation list from its directory, where `cluster revoke`
    // writes it on the host.
    for id in 0..16 {
        let file = c.join(format!("nodes/{id}/node.toml"));
        let config =
            cuberoute_daemon::config::NodeConfig::resolve(&cuberoute_daemon::config::DaemonArgs {
                config: Some(file.clone()),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(
            config.store.map(|s| s.path),
            Some("/var/lib/cuberoute/store.redb".into()),
            "{}",
            file.display()
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("revoked = \"revoked.bin\""), "{text}");
    }
}

fn load(dir: &Path, file: &str) -> Value {
    serde_yaml_ng::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
}

/// Everything `cluster k8s` writes goes under its `--dir` (regression: the manifests went to
/// `deploy/k8s` of the working directory, overwriting a checkout's examples).
#[test]
fn kubernetes_manifests_are_in_sync_and_hold_their_invariants() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    let out = dir.join("k8s");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_cuberoute"))
        .args(["cluster", "k8s", "eh:1,2", "--dir", dir.to_str().unwrap()])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stray: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
    assert!(
        stray.is_empty(),
        "written into the working directory: {stray:?}"
    );
    for file in ["service.yaml", "configmap.yaml", "statefulset.yaml"] {
        let generated = std::fs::read_to_string(out.join(file)).unwrap();
        let checked_in = std::fs::read_to_string(repo("deploy/k8s").join(file)).unwrap();
        assert!(
            generated == checked_in,
            "deploy/k8s/{file} is stale: regenerate with \
             `cuberoute cluster k8s eh:1,2 --dir <tmp> -o deploy/k8s`"
        );
    }
    let service = load(&out, "service.yaml");
    let configmap = load(&out, "configmap.yaml");
    let statefulset = load(&out, "statefulset.yaml");
    let name = statefulset["metadata"]["name"].as_str().unwrap();
    let namespace = statefulset["metadata"]["namespace"].as_str().unwrap();

    // Replicas: one pod per node.
    assert_eq!(statefulset["spec"]["replicas"], 16);
    // The headless Service is the StatefulSet's, and selects its pods.
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(
        service["metadata"]["name"],
        statefulset["spec"]["serviceName"]
    );
    assert_eq!(
        service["spec"]["selector"],
        statefulset["spec"]["template"]["metadata"]["labels"]
    );
    // Readiness is the health command.
    let container = &statefulset["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["readinessProbe"]["exec"]["command"][1], "status");
    assert_eq!(container["readinessProbe"]["exec"]["command"][2], "--local");
    // The config takes the id from the pod ordinal and the certificate from the Secret.
    let node_toml = configmap["data"]["node.toml"].as_str().unwrap();
    assert!(node_toml.contains("id_from_hostname = true"));
    assert!(node_toml.contains("cert = \"/certs/node-{id}.pem\""));
    // Every neighbour address of every node is the pod DNS name of that neighbour.
    let manifest = cuberoute_daemon::manifest::Manifest::parse(
        configmap["data"]["manifest.toml"].as_str().unwrap(),
    )
    .unwrap();
    let topology = manifest.topology;
    let replicas = statefulset["spec"]["replicas"].as_u64().unwrap();
    assert_eq!(manifest.nodes.len() as u64, replicas);
    for node in &manifest.nodes {
        for neighbour in topology.neighbours(node.id) {
            let entry = manifest.node(neighbour).unwrap();
            let host = entry.addr.rsplit_once(':').unwrap().0;
            let expected = format!(
                "{name}-{}.{name}.{namespace}.svc.cluster.local",
                neighbour.0
            );
            assert_eq!(host, expected);
            assert!(neighbour.0 < replicas, "pod {host} does not exist");
        }
    }
    // The Secret holds the CA and a certificate and key per pod, and stays out of deploy/.
    let secret = load(&dir, "k8s-secret.yaml");
    let data = secret["stringData"].as_mapping().unwrap();
    assert_eq!(data.len(), 1 + 2 * 16);
    assert!(
        secret["stringData"]["node-15.key"]
            .as_str()
            .unwrap()
            .contains("PRIVATE KEY")
    );
    assert_eq!(
        container["volumeMounts"][1]["mountPath"], "/certs",
        "the Secret is mounted where the config looks"
    );
    // Sealing: the key directory and a sealing key per pod, as bytes, where the config looks;
    // the revocation list and the store on the pod's claim.
    assert!(node_toml.contains("seal = true"));
    assert!(node_toml.contains("directory = \"/certs/keys.bin\""));
    assert!(node_toml.contains("secret = \"/certs/seal-{id}.key\""));
    assert!(node_toml.contains("revoked = \"/var/lib/cuberoute/revoked.bin\""));
    assert!(
        node_toml.contains("[store]\npath = \"/var/lib/cuberoute/store.redb\"\n"),
        "{node_toml}"
    );
    // Real hosts: no fault injection, whatever the client certificate, unless asked for.
    assert!(
        node_toml.contains("\n[chaos]\nallow = false\n"),
        "{node_toml}"
    );
    let allowing = tmp.path().join("allowing");
    common::ok(&[
        "cluster",
        "k8s",
        "eh:1,2",
        "--dir",
        allowing.to_str().unwrap(),
        "--allow-chaos",
    ]);
    let allowed = load(&allowing.join("k8s"), "configmap.yaml");
    let allowed = allowed["data"]["node.toml"].as_str().unwrap();
    assert!(allowed.contains("\n[chaos]\nallow = true\n"), "{allowed}");
    let binary = secret["data"].as_mapping().unwrap();
    assert_eq!(binary.len(), 1 + 16);
    use base64::Engine;
    let seal_key = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["seal-15.key"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        seal_key,
        std::fs::read(dir.join("nodes/15/seal.key")).unwrap()
    );
    assert!(secret["data"]["keys.bin"].as_str().is_some());
    assert_eq!(
        container["volumeMounts"][2]["mountPath"],
        "/var/lib/cuberoute"
    );
    assert_eq!(container["volumeMounts"][2]["name"], "store");
    assert_eq!(container["volumeMounts"][2].get("readOnly"), None);
    // That volume is the pod's own claim, not an emptyDir: it outlives the pod.
    let volumes = statefulset["spec"]["template"]["spec"]["volumes"]
        .as_sequence()
        .unwrap();
    assert!(
        volumes
            .iter()
            .all(|v| v["name"] != "store" && v.get("emptyDir").is_none()),
        "{volumes:?}"
    );
    let claims = statefulset["spec"]["volumeClaimTemplates"]
        .as_sequence()
        .unwrap();
    assert_eq!(claims.len(), 1);
    let claim = &claims[0];
    assert_eq!(claim["metadata"]["name"], "store");
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteOnce");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
    assert_eq!(
        claim["spec"].get("storageClassName"),
        None,
        "the default class"
    );
    // The store's entries fit the claim.
    let max_mib: u64 = node_toml
        .lines()
        .find_map(|l| l.strip_prefix("max_mib = "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        max_mib > 0 && max_mib <= 512,
        "{max_mib} MiB on a 1Gi claim"
    );
    assert_eq!(
        statefulset["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"],
        "Delete"
    );
}

/// `cluster k8s --nodes-per-pod 4`: a StatefulSet of a pod per four nodes, each running them as
/// one node host from the one configuration (`nodes_per_pod`: pod P the nodes 4P to 4P + 3),
/// each node's store and revocation list apart on the pod's claim, every node reached at its
/// pod's DNS name. Refused: 0 and more than the nodes.
#[test]
fn kubernetes_pods_of_several_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    let said = common::ok(&[
        "cluster",
        "k8s",
        "eh:1,2",
        "--dir",
        dir.to_str().unwrap(),
        "--nodes-per-pod",
        "4",
    ]);
    assert!(said.contains("(4 pods of up to 4 nodes each)"), "{said}");
    let out = dir.join("k8s");
    let configmap = load(&out, "configmap.yaml");
    let statefulset = load(&out, "statefulset.yaml");
    assert_eq!(statefulset["spec"]["replicas"], 4);
    // A claim a pod, 1Gi for each of its nodes' stores.
    assert_eq!(
        statefulset["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
        "4Gi"
    );
    let node_toml = configmap["data"]["node.toml"].as_str().unwrap();
    assert!(node_toml.contains("\nnodes_per_pod = 4\n"), "{node_toml}");
    assert!(node_toml.contains("id_from_hostname = true"), "{node_toml}");
    assert!(
        node_toml.contains("path = \"/var/lib/cuberoute/store-{id}.redb\""),
        "{node_toml}"
    );
    assert!(
        node_toml.contains("revoked = \"/var/lib/cuberoute/revoked-{id}.bin\""),
        "{node_toml}"
    );
    let manifest = cuberoute_daemon::manifest::Manifest::parse(
        configmap["data"]["manifest.toml"].as_str().unwrap(),
    )
    .unwrap();
    for node in &manifest.nodes {
        let host = node.addr.rsplit_once(':').unwrap().0;
        assert_eq!(
            host,
            format!(
                "cuberoute-{}.cuberoute.default.svc.cluster.local",
                node.id.0 / 4
            )
        );
        assert_eq!(node.control.rsplit_once(':').unwrap().0, host);
    }
    for bad in ["0", "17"] {
        let out = common::cuberoute(&[
            "cluster",
            "k8s",
            "eh:1,2",
            "--dir",
            tmp.path().join(bad).to_str().unwrap(),
            "--nodes-per-pod",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "--nodes-per-pod {bad}");
        assert!(common::stderr(&out).contains("--nodes-per-pod"), "{bad}");
    }
}

/// `cluster init`, `compose` and `k8s` write everything under `--dir` (or `-o`), nothing into
/// the working directory.
#[test]
fn generating_commands_write_only_under_their_dir() {
    let cwd = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let in_cwd = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuberoute"))
            .args(args)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let dir = |name: &str| elsewhere.path().join(name).to_str().unwrap().to_string();
    in_cwd(&["cluster", "init", "q:2", "--dir", &dir("init")]);
    in_cwd(&["cluster", "compose", "q:2", "--dir", &dir("compose")]);
    in_cwd(&["cluster", "k8s", "q:2", "--dir", &dir("k8s")]);
    let stray: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
    assert!(
        stray.is_empty(),
        "written into the working directory: {stray:?}"
    );
    let e = elsewhere.path();
    assert!(e.join("init/manifest.toml").is_file());
    assert!(e.join("compose/compose.yml").is_file());
    assert!(e.join("k8s/k8s/statefulset.yaml").is_file());
    assert!(e.join("k8s/k8s-secret.yaml").is_file());
}

/// kubernetes-validate 1.37.0 (PyPI), where tests/k8s/install-kubernetes-validate puts it (its
/// virtualenv under the user's cache) or on PATH, or why there is none.
fn kubernetes_validate() -> Result<std::path::PathBuf, String> {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let tools = env("CUBEROUTE_TOOLS")
        .map(std::path::PathBuf::from)
        .or_else(|| env("XDG_CACHE_HOME").map(|c| Path::new(&c).join("cuberoute")))
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".cache/cuberoute")));
    let venv = tools.map(|t| t.join("kubernetes-validate-1.37.0/bin/kubernetes-validate"));
    let on_path = env("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubernetes-validate"))
            .find(|p| p.is_file())
    });
    let answers = |tool: &Path| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    venv.into_iter()
        .chain(on_path)
        .find(|tool| answers(tool))
        .ok_or_else(|| {
            "kubernetes-validate is neither in the virtualenv of \
             tests/k8s/install-kubernetes-validate nor on PATH"
                .to_string()
        })
}

/// The manifests `cluster k8s` writes pass Kubernetes' JSON schemas (offline, strictly: an
/// unknown field fails) for 1.27, the first release that honours the StatefulSet's
/// `persistentVolumeClaimRetentionPolicy` without a feature gate, and 1.37. What only an API
/// server checks is not seen here (deploy/README.md, "Where these manifests have run").
#[test]
fn kubernetes_manifests_pass_the_schemas() {
    let tool = match kubernetes_validate() {
        Ok(tool) => tool,
        Err(why) => {
            // On the real stderr (the harness does not capture it): the check never passes
            // silently.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** NOTE: the Kubernetes schema check did NOT run: {why}\n\
                 *** install it with tests/k8s/install-kubernetes-validate\n"
            );
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    ok(&["cluster", "k8s", "eh:1,2", "--dir", dir.to_str().unwrap()]);
    let files = [
        dir.join("k8s-secret.yaml"),
        dir.join("k8s/service.yaml"),
        dir.join("k8s/configmap.yaml"),
        dir.join("k8s/statefulset.yaml"),
    ];
    let validate = |version: &str, files: &[std::path::PathBuf]| {
        let out = std::process::Command::new(&tool)
            .args(["--strict", "-k", version])
            .args(files)
            .output()
            .unwrap();
        let text = format!(
            "{} --strict -k {version}: {}\n{}{}",
            tool.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    for version in ["1.27.0", "1.37.0"] {
        let (passed, text) = validate(version, &files);
        assert!(passed, "{text}");
        for resource in [
            "secret/cuberoute-certs",
            "service/cuberoute",
            "configmap/cuberoute-config",
            "statefulset/cuberoute",
        ] {
            assert!(
                text.contains(&format!("passed for resource {resource}")),
                "{text}"
            );
        }
    }

    // The check can fail: a misspelt field is rejected.
    let good = std::fs::read_to_string(&files[3]).unwrap();
    assert!(good.contains("\n  replicas: 16\n"), "{good}");
    let bad = tmp.path().join("statefulset-misspelt.yaml");
    std::fs::write(
        &bad,
        good.replace("\n  replicas: 16\n", "\n  replicass: 16\n"),
    )
    .unwrap();
    let (passed, text) = validate("1.37.0", std::slice::from_ref(&bad));
    assert!(!passed, "a misspelt field passed: {text}");
    assert!(text.contains("'replicass' was unexpected"), "{text}");
}
