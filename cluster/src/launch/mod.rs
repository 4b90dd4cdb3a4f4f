//! Launching: starting and stopping the daemons of a cluster on every backend (local processes,
//! processes in network namespaces of their own, docker compose, Kubernetes manifests, a Docker
//! Swarm over several hosts), and the files, certificates and records they start from. The
//! bottom room: it imports no other room of the crate.
//!
//! * [`certs`]: the cluster CA, the certificates it issues, and a client's credentials loaded
//!   back (the operator's, or `--cert`'s);
//! * [`layout`]: the files of a cluster directory;
//! * [`generate`]: writing a cluster directory for a topology and an addressing;
//! * [`capacity`]: how many daemons this machine holds (memory, processes), and why not more;
//! * [`run_state`]: what runs a cluster, by backend, as `DIR/run.toml` records it;
//! * [`local`]: local daemon processes: start, stop, signal;
//! * [`hosting`]: which nodes share a process (`--nodes-per-process`), placed as hosts are;
//! * [`in_host`]: one node of such a process crashed or started again, by asking the process;
//! * [`netns`]: `cluster up --netns`, a network namespace per node on a bridge;
//! * [`compose`], [`docker`]: the compose file; compose up and down, the image, containers;
//! * [`k8s`]: the Kubernetes manifests;
//! * [`placement`]: which host each node runs on over several hosts, and what a lost host costs;
//! * [`swarm`]: `cluster swarm`, one container per node over the hosts of a Docker Swarm;
//! * [`testbed`]: `cuberoute testbed`, a Docker Swarm of several engines on one machine;
//! * [`runner`]: what runs a cluster's nodes, processes or containers, behind one interface;
//! * [`start`]: starting a cluster: the checks, generating it, spawning its processes or its
//!   compose project's containers; what the caller must fix is `start::Refused`;
//! * [`owned`]: the clusters a command starts for itself and takes down (`bench`);
//! * [`phases`]: where the time of `cluster up` went, phase by phase;
//! * [`start_cpu`]: what a start cost the processors;
//! * [`usage`]: CPU time, scheduler runs, RSS and PSS of daemon processes, from `/proc`.

pub mod capacity;
pub mod certs;
pub mod compose;
pub mod docker;
pub mod generate;
pub mod hosting;
pub mod in_host;
pub mod interrupted;
pub mod k8s;
pub mod layout;
pub mod local;
pub mod netns;
pub mod owned;
pub mod phases;
pub mod placement;
pub mod run_state;
pub mod runner;
pub mod start;
pub mod start_cpu;
pub mod swarm;
pub mod testbed;
pub mod usage;
