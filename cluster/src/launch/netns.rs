//! `cluster up --netns`: every node in a Linux network namespace of its own, with its own
//! address on a bridge, so that traffic between nodes crosses veth pairs and the kernel's queues
//! as between hosts. Root only; made with iproute2 (`ip -batch`, `bridge -batch`) and `iptables`.
//!
//! What one cluster makes, every name carrying its tag `T` (four hex digits, unique on the
//! machine; `I` is a node's place in id order):
//!
//! ```text
//! block    a /20 of 198.18.0.0/15 (RFC 2544's benchmarking range: never routed), the first
//!          that no address or route of the machine overlaps (larger past 4,093 nodes)
//! crb-T    the bridge, at block + 1: the host's side, how the CLI and clients reach the nodes.
//!          A bridge holds at most 1,024 ports: past 1,000 nodes, bridges crb-T-1, crb-T-2, ...
//!          hold the next thousands, each joined to crb-T by a veth pair crl-T-J / crh-T-J
//! cr-T-I   node I's namespace (/var/run/netns/cr-T-I): lo up, eth0 at block + 2 + I
//! crv-T-I  the host end of node I's veth pair, on its bridge; the other end is eth0 in cr-T-I
//!          (MAC 02:63:TT:TT:II:II)
//! static   every MAC is known beforehand, so nothing is broadcast or flooded: node I's eth0
//!          has its neighbours and the host as permanent neighbours, crb-T every node; every
//!          bridge has a static forwarding entry for every node and the host; no IPv6
//!          link-local address is made (addrgenmode none: no DAD, no MLD, no RS). With ARP
//!          and learning, EH(5,5)'s 2,048 nodes flooded the bridges (a frame to an address not
//!          learnt yet is copied to 1,000 ports), buried the machine in softirq and were not
//!          all reachable in 130 s
//! rule     iptables -I FORWARD -i crb-T+ -o crb-T+ -m comment --comment cuberoute-T -j ACCEPT
//!          (bridged traffic passes iptables where br_netfilter is loaded, and Docker drops it)
//! claim    /run/cuberoute/netns/T: the cluster directory that owns the tag
//! ```
//!
//! The caller records a [`NetnsRun`] in the run state before [`make`] makes anything, so that
//! [`remove`] finds it all after a launcher was killed half way. Removing goes by the tag:
//! every namespace, link and rule named with it, nothing else; it is idempotent, and refuses a
//! tag whose claim names another cluster.
//!
//! For other modules: [`node_namespace`], [`node_address`] and [`nodes`] read a running
//! cluster's namespaces and addresses from its directory; [`in_namespace`] runs a program in
//! one; [`enter`] moves a child into one before it executes (what `local::spawn` does).

use crate::launch::layout::ClusterDir;
use anyhow::Context;
use cuberoute_protocol::{NodeId, Topology};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// 198.18.0.0/15: every block is inside it.
const RANGE: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 18, 0, 0), 15);
/// A cluster's block is at least a /20.
const PREFIX: u8 = 20;
/// Nodes per bridge (the kernel allows 1,024 ports; the hub keeps room for the joins).
const PER_BRIDGE: usize = 1000;
/// Nodes per `ip -batch` (the launcher looks for an interrupt between two).
const CHUNK: usize = 64;
const NETNS_DIR: &str = "/var/run/netns";
const CLAIMS: &str = "/run/cuberoute/netns";

/// What a netns cluster made (or is about to make): recorded in the run state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NetnsRun {
    pub tag: String,
    /// The block: node `I` at `block + 2 + I`, the bridge at `block + 1`.
    pub block: Ipv4Addr,
    pub prefix: u8,
    /// How many namespaces (one per node, in id order).
    pub nodes: usize,
    /// Who owns the tag: the canonical cluster directory, as written in the claim file.
    pub claim: String,
}

impl NetnsRun {
    pub fn namespace(&self, index: usize) -> String {
        format!("cr-{}-{index}", self.tag)
    }

    /// Node `index`'s address.
    pub fn address(&self, index: usize) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.block) + 2 + index as u32)
    }

    /// The bridge's address: the host's side.
    pub fn host_address(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.block) + 1)
    }

    /// The bridge (`0`: the hub, with the host's address) that holds node `index`.
    pub fn bridge(&self, j: usize) -> String {
        match j {
            0 => format!("crb-{}", self.tag),
            j => format!("crb-{}-{j}", self.tag),
        }
    }

    fn bridges(&self) -> usize {
        self.nodes.div_ceil(PER_BRIDGE).max(1)
    }

    fn veth(&self, index: usize) -> String {
        format!("crv-{}-{index}", self.tag)
    }

    /// The comment that marks the iptables rule.
    pub fn comment(&self) -> String {
        format!("cuberoute-{}", self.tag)
    }

    fn mac(&self, index: usize) -> String {
        let tag = u16::from_str_radix(&self.tag, 16).unwrap_or(0);
        let [t0, t1] = tag.to_be_bytes();
        let [i0, i1] = (index as u16).to_be_bytes();
        format!("02:63:{t0:02x}:{t1:02x}:{i0:02x}:{i1:02x}")
    }

    /// The static forwarding entries of node `index`'s MAC, one per bridge (`bridge -batch`):
    /// on its own bridge its veth, on the hub the join from its bridge, on the others the
    /// join to the hub.
    fn forwarding(&self, index: usize) -> Vec<String> {
        let (mac, own, t) = (self.mac(index), index / PER_BRIDGE, &self.tag);
        (0..self.bridges())
            .map(|j| {
                let port = match j {
                    j if j == own => self.veth(index),
                    0 => format!("crh-{t}-{own}"),
                    j => format!("crl-{t}-{j}"),
                };
                format!("fdb replace {mac} dev {port} master static")
            })
            .collect()
    }

    /// One line for the user: what this is.
    pub fn describe(&self) -> String {
        format!(
            "{} namespaces cr-{}-*, bridge {}, {}/{}, iptables rule {}",
            self.nodes,
            self.tag,
            self.bridge(0),
            self.block,
            self.prefix,
            self.comment()
        )
    }

    /// Whether `name` (a namespace or a link) carries this cluster's tag.
    fn owns(&self, name: &str) -> bool {
        let t = &self.tag;
        name == format!("crb-{t}")
            || ["cr", "crb", "crv", "crl", "crh"].iter().any(|kind| {
                name.strip_prefix(&format!("{kind}-{t}-"))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
    }
}

/// Refuse unless this process runs as root.
pub fn need_root() -> anyhow::Result<()> {
    anyhow::ensure!(
        nix::unistd::Uid::effective().is_root(),
        "--netns needs root: it makes network namespaces, veth pairs, a bridge and an iptables \
         rule (run cuberoute as root)"
    );
    Ok(())
}

/// A tag and a block chosen and claimed, the machine-wide lock held until the bridge exists.
pub struct Reserved {
    run: NetnsRun,
    _lock: nix::fcntl::Flock<File>,
}

impl Reserved {
    pub fn run(&self) -> &NetnsRun {
        &self.run
    }
}

/// Choose a tag and a free block for `nodes` nodes of the cluster in `dir`, and claim the tag.
pub fn reserve(dir: &ClusterDir, nodes: usize) -> anyhow::Result<Reserved> {
    need_root()?;
    let claimed = claim_block(dir.path(), prefix_for(nodes)?)?;
    Ok(Reserved {
        run: NetnsRun {
            tag: claimed.tag,
            block: claimed.block,
            prefix: claimed.prefix,
            nodes,
            claim: claimed.claim,
        },
        _lock: claimed.lock,
    })
}

/// A tag and a block of 198.18.0.0/15 claimed for a directory ([`claim_block`]), with the
/// machine-wide lock: hold it until the block's bridge has its address, so that no one else
/// chooses the same block meanwhile.
pub struct Claimed {
    /// Four hex digits, unique on the machine among the tags of netns clusters and testbeds.
    pub tag: String,
    pub block: Ipv4Addr,
    pub prefix: u8,
    /// The canonical directory, as written in the claim file (`/run/cuberoute/netns/TAG`).
    pub claim: String,
    pub lock: nix::fcntl::Flock<File>,
}

/// Take the machine-wide lock, choose the first block of `prefix` in 198.18.0.0/15 that no
/// address or route of the machine overlaps and a tag no claim, namespace, link or rule
/// carries, and claim the tag for `dir` (however spelled: the claim is its canonical path).
/// `cluster up --netns` and `testbed up` (crate::launch::testbed) share the claims, so their tags
/// never meet.
pub fn claim_block(dir: &Path, prefix: u8) -> anyhow::Result<Claimed> {
    fs::create_dir_all(CLAIMS).with_context(|| format!("making {CLAIMS}"))?;
    let lock_path = Path::new(CLAIMS).join(".lock");
    let file = File::create(&lock_path).with_context(|| lock_path.display().to_string())?;
    let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| anyhow::anyhow!("locking {}: {e}", lock_path.display()))?;
    let mut taken = parse_addresses(&output("ip", &["-4", "-o", "addr", "show"])?);
    taken.extend(parse_routes(&output(
        "ip",
        &["-4", "route", "show", "table", "all"],
    )?));
    let block = free_block(prefix, &taken)?;
    let claim = fs::canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string();
    let rules = output("iptables", &["-w", "-S"])?;
    let tag = (0u32..4096)
        .map(|salt| tag_of(&claim, salt))
        .find(|tag| !tag_taken(tag, &rules))
        .context("no free tag for a netns cluster")?;
    fs::write(Path::new(CLAIMS).join(&tag), &claim).context("claiming the tag")?;
    Ok(Claimed {
        tag,
        block,
        prefix,
        claim,
        lock,
    })
}

/// Whether `tag` is claimed by someone other than `claim` (then nothing of it may be removed),
/// and the claim file's path.
pub fn claimed_by_other(tag: &str, claim: &str) -> (Option<String>, PathBuf) {
    let path = Path::new(CLAIMS).join(tag);
    let other = fs::read_to_string(&path)
        .ok()
        .filter(|owner| owner != claim);
    (other, path)
}

/// The prefix of a block that holds `nodes` nodes, the host and the network's two ends.
fn prefix_for(nodes: usize) -> anyhow::Result<u8> {
    let bits = (nodes + 3).next_power_of_two().trailing_zeros() as u8;
    let prefix = PREFIX.min(32 - bits.min(32));
    anyhow::ensure!(
        prefix >= RANGE.1,
        "{nodes} nodes do not fit in {}/{}",
        RANGE.0,
        RANGE.1
    );
    Ok(prefix)
}

/// A prefix of the machine (an address's network or a route's destination), as text.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Prefix {
    net: u32,
    len: u8,
    text: String,
}

impl Prefix {
    fn parse(text: &str) -> Option<Prefix> {
        let (addr, len) = text.split_once('/').unwrap_or((text, "32"));
        let len: u8 = len.parse().ok().filter(|l| *l <= 32)?;
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        Some(Prefix {
            net: u32::from(addr.parse::<Ipv4Addr>().ok()?) & mask,
            len,
            text: text.to_string(),
        })
    }

    /// The first and last address.
    fn span(&self) -> (u64, u64) {
        let size = 1u64 << (32 - self.len);
        (u64::from(self.net), u64::from(self.net) + size - 1)
    }

    fn overlaps(&self, other: &Prefix) -> bool {
        let ((a, b), (c, d)) = (self.span(), other.span());
        a <= d && c <= b
    }
}

/// The networks of `ip -4 -o addr show`.
fn parse_addresses(text: &str) -> Vec<Prefix> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|w| *w == "inet")?;
            Prefix::parse(words.next()?)
        })
        .collect()
}

/// The destinations of `ip -4 route show table all` (a default route claims no block).
fn parse_routes(text: &str) -> Vec<Prefix> {
    const TYPES: [&str; 10] = [
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "anycast",
        "blackhole",
        "unreachable",
        "prohibit",
        "throw",
        "nat",
    ];
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().skip_while(|w| TYPES.contains(w));
            Prefix::parse(words.next()?)
        })
        .collect()
}

/// The first block of `prefix` in 198.18.0.0/15 that nothing in `taken` overlaps.
fn free_block(prefix: u8, taken: &[Prefix]) -> anyhow::Result<Ipv4Addr> {
    let range = Prefix::parse(&format!("{}/{}", RANGE.0, RANGE.1)).expect("a prefix");
    let size = 1u32 << (32 - prefix);
    let blocks = 1u32 << (prefix - RANGE.1);
    (0..blocks)
        .map(|b| range.net + b * size)
        .find(|&net| {
            let block = Prefix {
                net,
                len: prefix,
                text: String::new(),
            };
            !taken.iter().any(|t| t.overlaps(&block))
        })
        .map(Ipv4Addr::from)
        .ok_or_else(|| {
            let mut overlapping: Vec<&str> = taken
                .iter()
                .filter(|t| t.overlaps(&range))
                .map(|t| t.text.as_str())
                .collect();
            overlapping.dedup();
            overlapping.truncate(8);
            anyhow::anyhow!(
                "no /{prefix} of {}/{} is free on this machine: its addresses and routes {} \
                 overlap every one (remove them, or take down netns clusters left running)",
                RANGE.0,
                RANGE.1,
                overlapping.join(", ")
            )
        })
}

/// Four hex digits from the claim (FNV-1a) and a salt.
fn tag_of(claim: &str, salt: u32) -> String {
    let hash = claim
        .bytes()
        .chain(salt.to_le_bytes())
        .fold(0x811c_9dc5u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
    format!("{:04x}", (hash ^ (hash >> 16)) & 0xffff)
}

/// Whether anything on the machine carries `tag`: a claim, a namespace, a link, a rule.
fn tag_taken(tag: &str, rules: &str) -> bool {
    let probe = NetnsRun {
        tag: tag.to_string(),
        block: RANGE.0,
        prefix: PREFIX,
        nodes: 0,
        claim: String::new(),
    };
    Path::new(CLAIMS).join(tag).exists()
        || names(NETNS_DIR).iter().any(|n| probe.owns(n))
        || names("/sys/class/net").iter().any(|n| probe.owns(n))
        || !rule_specs(rules, &probe.comment()).is_empty()
}

/// The names in a directory (none if it does not exist).
pub(crate) fn names(dir: &str) -> Vec<String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Make the network of the cluster of `topology` (whose ids are `0..nodes`): the bridges
/// (then the lock is let go), the rule, then the namespaces and veth pairs `CHUNK` at a time,
/// stopping with an error at the first chunk boundary after `interrupted` says so. What was
/// made stays for [`remove`].
pub fn make(
    reserved: Reserved,
    topology: Topology,
    interrupted: &dyn Fn() -> bool,
) -> anyhow::Result<()> {
    let run = &reserved.run;
    anyhow::ensure!(
        run.nodes as u64 == topology.node_count(),
        "not this topology's network"
    );
    let hub = run.bridge(0);
    let host_mac = run.mac(0xffff);
    let mut lines = vec![
        format!("link add {hub} address {host_mac} type bridge"),
        format!("link set {hub} addrgenmode none"),
        format!("addr add {}/{} dev {hub}", run.host_address(), run.prefix),
        format!("link set {hub} up"),
    ];
    for j in 1..run.bridges() {
        let (bridge, t) = (run.bridge(j), &run.tag);
        lines.extend([
            format!("link add {bridge} type bridge"),
            format!("link add crl-{t}-{j} type veth peer name crh-{t}-{j}"),
        ]);
        for link in [&bridge, &format!("crl-{t}-{j}"), &format!("crh-{t}-{j}")] {
            lines.push(format!("link set {link} addrgenmode none"));
        }
        lines.extend([
            format!("link set {bridge} up"),
            format!("link set crl-{t}-{j} master {bridge} up"),
            format!("link set crh-{t}-{j} master {hub} up"),
        ]);
    }
    ip(None, &lines)?.wait()?;
    let joins: Vec<String> = (1..run.bridges())
        .map(|j| {
            format!(
                "fdb replace {host_mac} dev crl-{}-{j} master static",
                run.tag
            )
        })
        .collect();
    if !joins.is_empty() {
        batch("bridge", None, &joins)?.wait()?;
    }
    drop(reserved._lock);
    run_ok(Command::new("iptables").args([
        "-w",
        "-I",
        "FORWARD",
        "-i",
        &format!("{hub}+"),
        "-o",
        &format!("{hub}+"),
        "-m",
        "comment",
        "--comment",
        &run.comment(),
        "-j",
        "ACCEPT",
    ]))?;
    let indices: Vec<usize> = (0..run.nodes).collect();
    for chunk in indices.chunks(CHUNK) {
        anyhow::ensure!(
            !interrupted(),
            "interrupted while making the cluster's namespaces"
        );
        let lines = chunk.iter().flat_map(|&i| {
            let (ns, veth, mac) = (run.namespace(i), run.veth(i), run.mac(i));
            [
                format!("netns add {ns}"),
                format!("link add {veth} type veth peer name eth0 address {mac} netns {ns}"),
                format!("link set {veth} addrgenmode none"),
                format!("link set {veth} master {} up", run.bridge(i / PER_BRIDGE)),
                format!(
                    "neigh replace {} lladdr {mac} dev {hub} nud permanent",
                    run.address(i)
                ),
            ]
        });
        ip(None, &lines.collect::<Vec<_>>())?.wait()?;
        let fdb: Vec<String> = chunk.iter().flat_map(|&i| run.forwarding(i)).collect();
        batch("bridge", None, &fdb)?.wait()?;
        // Inside each namespace, one `ip` each, all of the chunk at once.
        let inside: Vec<Batch> = chunk
            .iter()
            .map(|&i| {
                let address = format!("{}/{}", run.address(i), run.prefix);
                let mut lines = vec![
                    "link set lo up".into(),
                    format!("addr add {address} dev eth0"),
                    "link set eth0 addrgenmode none".into(),
                    "link set eth0 up".into(),
                    format!(
                        "neigh replace {} lladdr {host_mac} dev eth0 nud permanent",
                        run.host_address()
                    ),
                ];
                lines.extend(topology.neighbours(NodeId(i as u64)).map(|n| {
                    let n = n.0 as usize;
                    format!(
                        "neigh replace {} lladdr {} dev eth0 nud permanent",
                        run.address(n),
                        run.mac(n)
                    )
                }));
                batch("ip", Some(&run.namespace(i)), &lines)
            })
            .collect::<anyhow::Result<_>>()?;
        for batch in inside {
            batch.wait()?;
        }
    }
    Ok(())
}

/// An `ip -batch` or `bridge -batch` running.
pub(crate) struct Batch {
    child: std::process::Child,
    what: String,
}

impl Batch {
    pub(crate) fn wait(self) -> anyhow::Result<()> {
        let out = self.child.wait_with_output()?;
        anyhow::ensure!(
            out.status.success(),
            "{} failed ({}): {}",
            self.what,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(())
    }
}

fn ip(namespace: Option<&str>, lines: &[String]) -> anyhow::Result<Batch> {
    batch("ip", namespace, lines)
}

/// Start `PROGRAM -batch -` (`ip` or `bridge`, iproute2) on `lines`, inside namespace
/// `namespace` if given (entered with [`enter`]: `ip -n` would copy the mount namespace, with a
/// mount per netns, at every call, which made 2,048 nodes quadratic). The child dies with the
/// launcher (a launcher killed outright leaves no `ip` making things behind the back of `down`).
pub(crate) fn batch(
    program: &str,
    namespace: Option<&str>,
    lines: &[String],
) -> anyhow::Result<Batch> {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(program);
    command
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let ns = namespace.map(open).transpose()?;
    // SAFETY: a prctl and a setns on a file opened before the fork: async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            ns.as_ref().map_or(Ok(()), enter)
        });
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("running `{program}` (iproute2)"))?;
    let mut stdin = child.stdin.take().expect("piped");
    stdin.write_all((lines.join("\n") + "\n").as_bytes())?;
    drop(stdin);
    Ok(Batch {
        child,
        what: match namespace {
            Some(ns) => format!("{program} -batch in {ns}"),
            None => format!("{program} -batch"),
        },
    })
}

/// Run `command`; its stdout, or an error with its stderr.
pub(crate) fn run_ok(command: &mut Command) -> anyhow::Result<String> {
    let shown = format!("{command:?}");
    let out = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {shown}"))?;
    anyhow::ensure!(
        out.status.success(),
        "{shown} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn output(program: &str, args: &[&str]) -> anyhow::Result<String> {
    run_ok(Command::new(program).args(args))
}

/// The rules of `iptables -S` marked with `comment`, as the arguments that delete them.
pub(crate) fn rule_specs(rules: &str, comment: &str) -> Vec<Vec<String>> {
    rules
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let marked = words
                .windows(2)
                .any(|w| w[0] == "--comment" && w[1].trim_matches('"') == comment);
            let rest = words.strip_prefix(&["-A"])?;
            marked.then(|| {
                std::iter::once("-D")
                    .chain(rest.iter().copied())
                    .map(|w| w.trim_matches('"').to_string())
                    .collect()
            })
        })
        .collect()
}

/// Remove everything `run` names, whatever was made of it: processes still inside its
/// namespaces (SIGKILL; `cluster down` stopped the recorded ones first), its rules, its
/// namespaces, veth pairs and bridges, and its claim. Idempotent; fails naming what is left.
pub fn remove(run: &NetnsRun) -> anyhow::Result<()> {
    anyhow::ensure!(
        nix::unistd::Uid::effective().is_root(),
        "removing the network namespaces of a --netns cluster needs root"
    );
    let (other, claim) = claimed_by_other(&run.tag, &run.claim);
    if let Some(owner) = other {
        anyhow::bail!(
            "tag {} is claimed by another cluster ({owner}); nothing removed",
            run.tag
        );
    }
    kill_inside(run);
    kill_rule_writers(&run.comment());
    for spec in rule_specs(&output("iptables", &["-w", "-S"])?, &run.comment()) {
        run_ok(Command::new("iptables").arg("-w").args(&spec))?;
    }
    let owned = |dir| -> Vec<String> { names(dir).into_iter().filter(|n| run.owns(n)).collect() };
    let namespaces: Vec<String> = owned(NETNS_DIR)
        .iter()
        .map(|n| format!("netns del {n}"))
        .collect();
    if !namespaces.is_empty() {
        // -force: on past a namespace that went meanwhile; what is left is checked below.
        let _ = force(&namespaces);
    }
    // A namespace's end takes its veth pair with it, a moment later.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline
        && owned("/sys/class/net")
            .iter()
            .any(|n| n.starts_with("crv-"))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let links: Vec<String> = owned("/sys/class/net")
        .iter()
        .map(|n| format!("link del {n}"))
        .collect();
    if !links.is_empty() {
        let _ = force(&links);
    }
    let mut left = owned(NETNS_DIR);
    left.extend(owned("/sys/class/net"));
    if !rule_specs(&output("iptables", &["-w", "-S"])?, &run.comment()).is_empty() {
        left.push(format!("the iptables rule {}", run.comment()));
    }
    anyhow::ensure!(
        left.is_empty(),
        "could not remove {} of the cluster's network: {}",
        left.len(),
        left.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
    );
    let _ = fs::remove_file(claim);
    Ok(())
}

/// `ip -force -batch` on `lines`, its errors ignored.
pub(crate) fn force(lines: &[String]) -> anyhow::Result<()> {
    let mut child = Command::new("ip")
        .args(["-force", "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("running `ip` (iproute2)")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all((lines.join("\n") + "\n").as_bytes())?;
    child.wait()?;
    Ok(())
}

/// SIGKILL the processes whose command line names the rules' comment, again until none is left
/// (2 s at most): an `iptables` of an `up` killed outright may still wait on the xtables lock,
/// and would add its rule after [`remove`] listed them.
fn kill_rule_writers(comment: &str) {
    let naming = || -> Vec<i32> {
        names("/proc")
            .iter()
            .filter_map(|p| p.parse::<i32>().ok())
            .filter(|pid| {
                fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|&b| b == 0).any(|w| w == comment.as_bytes()))
            })
            .collect()
    };
    kill_until_gone(naming, Duration::from_secs(2));
}

/// SIGKILL every process in one of `run`'s namespaces (a daemon a killed launcher started but
/// never recorded), and wait up to 2 s for them to go.
fn kill_inside(run: &NetnsRun) {
    let owned: Vec<String> = names(NETNS_DIR)
        .into_iter()
        .filter(|n| run.owns(n))
        .collect();
    kill_in_namespaces(&owned, Duration::from_secs(2));
}

/// The pids of the processes in one of the network namespaces `namespaces` (names under
/// /var/run/netns; those that do not exist are skipped).
pub(crate) fn pids_in_namespaces(namespaces: &[String]) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let inodes: Vec<(u64, u64)> = namespaces
        .iter()
        .filter_map(|n| fs::metadata(namespace_path(n)).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    names("/proc")
        .iter()
        .filter_map(|p| p.parse::<i32>().ok())
        .filter(|pid| {
            fs::metadata(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|m| inodes.contains(&(m.dev(), m.ino())))
        })
        .collect()
}

/// SIGKILL every process in one of the network namespaces `namespaces`, again until none is
/// left or `within` has passed. How many were signalled.
pub(crate) fn kill_in_namespaces(namespaces: &[String], within: Duration) -> usize {
    kill_until_gone(|| pids_in_namespaces(namespaces), within)
}

/// SIGKILL the processes `pids` finds, again until it finds none or `within` has passed. How
/// many were signalled.
fn kill_until_gone(pids: impl Fn() -> Vec<i32>, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    let mut killed = std::collections::BTreeSet::new();
    loop {
        let pids = pids();
        if pids.is_empty() || Instant::now() > deadline {
            return killed.len();
        }
        for pid in pids {
            if nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
            {
                killed.insert(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The path of namespace `ns`.
pub fn namespace_path(ns: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(ns)
}

/// Open namespace `ns`, for [`enter`] in a child about to be spawned.
pub fn open(ns: &str) -> anyhow::Result<File> {
    let path = namespace_path(ns);
    File::open(&path).with_context(|| format!("opening the namespace {}", path.display()))
}

/// Move the calling thread into the network namespace `ns` (a file [`open`] gave): one
/// syscall, for a `pre_exec` hook, so that the program spawned runs inside with its own pid.
pub fn enter(ns: &File) -> std::io::Result<()> {
    nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
}

/// A command that runs `program` inside namespace `ns` (`nsenter --net=/var/run/netns/NS`);
/// add its arguments with `.args`. Needs root.
pub fn in_namespace(ns: &str, program: &str) -> Command {
    let mut command = Command::new("nsenter");
    command
        .arg(format!("--net={}", namespace_path(ns).display()))
        .arg("--")
        .arg(program);
    command
}

/// A node of a running netns cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetnsNode {
    pub id: NodeId,
    pub namespace: String,
    pub address: Ipv4Addr,
}

/// What these functions read of `DIR/run.toml` (the rest is `run_state::RunState`'s).
#[derive(Deserialize)]
struct Recorded {
    topology: Topology,
    #[serde(default)]
    netns: Option<NetnsRun>,
}

/// Every node of the netns cluster running in `dir`, in id order; `None` if the cluster there
/// is not a netns cluster (or nothing runs there).
pub fn nodes(dir: &ClusterDir) -> anyhow::Result<Option<Vec<NetnsNode>>> {
    let path = dir.run_state();
    if !path.exists() {
        return Ok(None);
    }
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let recorded: Recorded =
        toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
    Ok(recorded.netns.map(|run| {
        recorded
            .topology
            .nodes()
            .enumerate()
            .map(|(i, id)| NetnsNode {
                id,
                namespace: run.namespace(i),
                address: run.address(i),
            })
            .collect()
    }))
}

fn node(dir: &ClusterDir, id: NodeId) -> anyhow::Result<Option<NetnsNode>> {
    let Some(nodes) = nodes(dir)? else {
        return Ok(None);
    };
    let node = nodes.into_iter().find(|n| n.id == id);
    node.map(Some).with_context(|| {
        format!(
            "node {id} is not a node of the cluster in {}",
            dir.display()
        )
    })
}

/// The namespace of node `id` of the netns cluster running in `dir`; `None` if that cluster is
/// not a netns cluster.
pub fn node_namespace(dir: &ClusterDir, id: NodeId) -> anyhow::Result<Option<String>> {
    Ok(node(dir, id)?.map(|n| n.namespace))
}

/// The address of node `id` of the netns cluster running in `dir` (its eth0, which it binds);
/// `None` if that cluster is not a netns cluster.
pub fn node_address(dir: &ClusterDir, id: NodeId) -> anyhow::Result<Option<Ipv4Addr>> {
    Ok(node(dir, id)?.map(|n| n.address))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tag: &str, nodes: usize) -> NetnsRun {
        NetnsRun {
            tag: tag.into(),
            block: Ipv4Addr::new(198, 18, 16, 0),
            prefix: 20,
            nodes,
            claim: "/c".into(),
        }
    }

    #[test]
    fn the_address_plan() {
        let r = run("0a1f", 2048);
        assert_eq!(r.host_address(), Ipv4Addr::new(198, 18, 16, 1));
        assert_eq!(r.address(0), Ipv4Addr::new(198, 18, 16, 2));
        assert_eq!(r.address(2047), Ipv4Addr::new(198, 18, 24, 1));
        assert_eq!(r.namespace(7), "cr-0a1f-7");
        assert_eq!(r.bridges(), 3);
        assert_eq!(r.bridge(2), "crb-0a1f-2");
        assert_eq!(r.mac(258), "02:63:0a:1f:01:02");
        let ports: Vec<String> = r
            .forwarding(1500)
            .iter()
            .map(|l| l.split(' ').nth(4).unwrap().to_string())
            .collect();
        assert_eq!(ports, ["crh-0a1f-1", "crv-0a1f-1500", "crl-0a1f-2"]);
        assert_eq!(run("0a1f", 32).forwarding(3).len(), 1);
        for name in [r.bridge(0), r.bridge(2), r.veth(2047), r.namespace(2047)] {
            assert!(name.len() <= 15, "{name}");
            assert!(r.owns(&name), "{name}");
        }
        for other in [
            "crb-0a1f0",
            "cr-0a1f-",
            "cr-0a1f-1x",
            "crv-0a1e-1",
            "eth0",
            "crb-0a1",
        ] {
            assert!(!r.owns(other), "{other}");
        }
        assert_eq!(prefix_for(16).unwrap(), 20);
        assert_eq!(prefix_for(4093).unwrap(), 20);
        assert_eq!(prefix_for(4094).unwrap(), 19);
        assert!(prefix_for(200_000).is_err());
    }

    #[test]
    fn a_block_overlapping_the_machine_is_never_chosen() {
        let addresses = "1: lo    inet 127.0.0.1/8 scope host lo\n\
                         4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\n\
                         9: crb-1234    inet 198.18.0.1/20 scope global crb-1234\n";
        let routes = "default via 192.0.2.1 dev eth0\n\
                      198.18.16.0/21 dev tun0 scope link\n\
                      local 198.18.0.1 dev crb-1234 table local proto kernel scope host\n\
                      broadcast 127.255.255.255 dev lo table local proto kernel\n";
        let mut taken = parse_addresses(addresses);
        taken.extend(parse_routes(routes));
        assert_eq!(taken.len(), 6, "{taken:?}");
        assert_eq!(
            free_block(20, &taken).unwrap(),
            Ipv4Addr::new(198, 18, 32, 0)
        );
        taken.push(Prefix::parse("198.0.0.0/8").unwrap());
        let refused = free_block(20, &taken).unwrap_err().to_string();
        assert!(refused.contains("198.0.0.0/8"), "{refused}");
    }

    #[test]
    fn rules_are_found_by_their_comment_only() {
        let rules = "-P FORWARD DROP\n\
                     -A FORWARD -j DOCKER-USER\n\
                     -A FORWARD -i crb-0a1f+ -o crb-0a1f+ -m comment --comment cuberoute-0a1f -j ACCEPT\n\
                     -A FORWARD -i x -m comment --comment \"cuberoute-0a1f2\" -j ACCEPT\n";
        assert_eq!(
            rule_specs(rules, "cuberoute-0a1f"),
            vec![
                "-D FORWARD -i crb-0a1f+ -o crb-0a1f+ -m comment --comment cuberoute-0a1f -j ACCEPT"
                    .split(' ')
                    .map(String::from)
                    .collect::<Vec<_>>()
            ]
        );
        assert_eq!(rule_specs(rules, "cuberoute-0a1").len(), 0);
    }

    #[test]
    fn tags_are_four_hex_digits() {
        let a = tag_of("/tmp/a", 0);
        assert_eq!(a.len(), 4);
        assert!(u16::from_str_radix(&a, 16).is_ok());
        assert_eq!(a, tag_of("/tmp/a", 0));
        assert_ne!(a, tag_of("/tmp/a", 1));
    }
}
