//! Client roles: what a client certificate may ask of a daemon's control API. The cluster CA
//! writes the role into the certificate, so a daemon decides from the certificate alone.
//!
//! Four roles, each allowing what the one before it allows (docs/security.md, "Client
//! certificates and their roles"):
//!
//! | role | requests | commands |
//! |---|---|---|
//! | `read` | `Status`, `Recv`, `Await`, `AwaitMany`, `Settled`, `Notices` | `cluster status`, `show`, `recv`, `monitor`, `cluster view`, `cluster revoke --list` |
//! | `send` | `Send`, `SendMany`, `Consume` (at the `--as` nodes only, if the certificate names any: each set of a `SendMany` from one of them) | `send`, `recv --consume`, `ping` |
//! | `operate` | `Reload`, `Revoke` | `cluster reload`, `cluster revoke` |
//! | `chaos` | `Inject` (every fault, ending one too), `Captured` | `chaos ...` through the control API |
//!
//! `ping` needs `send`: it is not a read-only probe, its rounds are sets sent from the source
//! that reach the destination's output like any other. `Captured` needs `chaos`: it reads the
//! payloads a relay kept of other nodes' sets, not a node's own output.
//!
//! How the certificate says it: its subject alternative name holds one URI,
//! `cuberoute:role:<role>` or `cuberoute:role:<role>:as:<id>,<id>,...` (decimal ids, ascending,
//! no repeats), and no DNS name; [`crate::tls::identity_of`] refuses a certificate that names
//! a role and anything else (a node, the client name), or a malformed role. A daemon older
//! than roles finds no name it knows in such a certificate and refuses it: a role certificate
//! never opens more than its role anywhere. The cluster's operator certificate names
//! `client.cuberoute` and no role: it has every role at every node ([`ClientRole::OPERATOR`]).

use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::control::{ControlError, ControlErrorKind, Request};
use std::fmt;

/// How every refusal by role begins.
pub const REFUSAL_PREFIX: &str = "this client certificate has role ";

/// Whether a daemon's refusal is one of a request beyond the certificate's role.
pub fn is_role_refusal(error: &ControlError) -> bool {
    error.kind == ControlErrorKind::Forbidden && error.message.starts_with(REFUSAL_PREFIX)
}

/// What a client certificate may ask for; each role allows what the roles before it allow.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Role {
    Read,
    Send,
    Operate,
    Chaos,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Read, Role::Send, Role::Operate, Role::Chaos];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Send => "send",
            Role::Operate => "operate",
            Role::Chaos => "chaos",
        }
    }

    /// Whether the role sends (and so may be limited to some nodes with `--as`).
    pub fn sends(self) -> bool {
        self >= Role::Send
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(text: &str) -> Result<Role, String> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| format!("unknown role {text:?}: read, send, operate or chaos"))
    }
}

/// The role a client certificate carries, and the nodes it may send at and consume from
/// (`None`: any node).
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct ClientRole {
    pub role: Role,
    /// Ascending, without repeats; never empty.
    pub as_nodes: Option<Vec<NodeId>>,
}

/// The scheme and prefix of the URI a role certificate names.
pub const ROLE_URI_PREFIX: &str = "cuberoute:role:";
/// The most nodes one certificate may name with `--as` (each id is up to 20 digits of the
/// certificate, which every control handshake carries).
pub const MAX_AS_NODES: usize = 1024;

impl ClientRole {
    /// The cluster's operator certificate: every role, at every node.
    pub const OPERATOR: ClientRole = ClientRole {
        role: Role::Chaos,
        as_nodes: None,
    };

    /// A role limited to `as_nodes` if any are given: sorted, repeats removed. `Err` if the
    /// role does not send but nodes are given, or too many are.
    pub fn new(role: Role, as_nodes: Option<Vec<NodeId>>) -> Result<ClientRole, String> {
        let as_nodes = match as_nodes {
            None => None,
            Some(mut nodes) => {
                if !role.sends() {
                    return Err(format!(
                        "--as names the nodes a certificate sends at; role {role} does not send"
                    ));
                }
                nodes.sort();
                nodes.dedup();
                if nodes.is_empty() {
                    return Err("--as names no node".into());
                }
                if nodes.len() > MAX_AS_NODES {
                    return Err(format!(
                        "--as names {} nodes; a certificate names at most {MAX_AS_NODES}",
                        nodes.len()
                    ));
                }
                Some(nodes)
            }
        };
        Ok(ClientRole { role, as_nodes })
    }

    /// The URI the certificate's subject alternative name holds.
    pub fn to_uri(&self) -> String {
        let mut uri = format!("{ROLE_URI_PREFIX}{}", self.role);
        if let Some(nodes) = &self.as_nodes {
            let ids: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
            uri.push_str(":as:");
            uri.push_str(&ids.join(","));
        }
        uri
    }

    /// Read a URI [`ClientRole::to_uri`] wrote; `None` if it does not start with
    /// [`ROLE_URI_PREFIX`], `Some(Err)` if it does but is not exactly such a URI.
    pub fn from_uri(uri: &str) -> Option<Result<ClientRole, String>> {
        let rest = uri.strip_prefix(ROLE_URI_PREFIX)?;
        Some(Self::parse_rest(rest).map_err(|why| format!("role URI {uri:?}: {why}")))
    }

    fn parse_rest(rest: &str) -> Result<ClientRole, String> {
        let (role, nodes) = match rest.split_once(':') {
            None => (rest, None),
            Some((role, tail)) => {
                let ids = tail
                    .strip_prefix("as:")
                    .ok_or("expected ':as:' after the role")?;
                (role, Some(ids))
            }
        };
        let role: Role = role.parse()?;
        let as_nodes = match nodes {
            None => None,
            Some(ids) => {
                let mut nodes = Vec::new();
                for id in ids.split(',') {
                    let canonical = !id.is_empty()
                        && id.bytes().all(|b| b.is_ascii_digit())
                        && (id == "0" || !id.starts_with('0'));
                    let node = canonical
                        .then(|| id.parse::<u64>().ok())
                        .flatten()
                        .ok_or_else(|| format!("{id:?} is not a node id"))?;
                    if nodes.last().is_some_and(|&last| last >= node) {
                        return Err("node ids not ascending".into());
                    }
                    if nodes.len() == MAX_AS_NODES {
                        return Err(format!("more than {MAX_AS_NODES} nodes"));
                    }
                    nodes.push(node);
                }
                Some(nodes.into_iter().map(NodeId).collect())
            }
        };
        if as_nodes.is_some() && !role.sends() {
            return Err(format!("role {role} does not send, yet names nodes"));
        }
        Ok(ClientRole { role, as_nodes })
    }

    /// Whether this role may make `request` of node `at`; if not, the one line saying why.
    pub fn allows(&self, at: NodeId, request: &Request) -> Result<(), String> {
        let (needed, what) = needed(request);
        if self.role < needed {
            return Err(format!(
                "{REFUSAL_PREFIX}{}; {what} needs role {needed}",
                self.role
            ));
        }
        if let Some(nodes) = &self.as_nodes
            && let Some(at) = limited_at(at, request)
                .into_iter()
                .find(|at| nodes.binary_search(at).is_err())
        {
            return Err(format!(
                "{REFUSAL_PREFIX}{} as node{} {} only; {what} at node {at} is refused",
                self.role,
                if nodes.len() == 1 { "" } else { "s" },
                list(nodes)
            ));
        }
        Ok(())
    }
}

/// At most eight ids, then how many more.
fn list(nodes: &[NodeId]) -> String {
    let mut ids: Vec<String> = nodes.iter().take(8).map(|n| n.0.to_string()).collect();
    if nodes.len() > 8 {
        ids.push(format!("and {} more", nodes.len() - 8));
    }
    ids.join(",")
}

impl fmt::Display for ClientRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "role {}", self.role)?;
        if let Some(nodes) = &self.as_nodes {
            write!(f, " as {}", list(nodes))?;
        }
        Ok(())
    }
}

/// The role `request` needs, and what to call it in a refusal.
pub fn needed(request: &Request) -> (Role, &'static str) {
    match request {
        Request::Status | Request::Hosted { .. } | Request::HostReadiness => (Role::Read, "status"),
        Request::Recv { .. } => (Role::Read, "recv"),
        Request::Await { .. } | Request::AwaitMany { .. } => {
            (Role::Read, "waiting for a set's copies")
        }
        Request::Settled { .. } => (Role::Read, "waiting for a reliable set's outcome"),
        Request::Notices { .. } => (Role::Read, "monitor"),
        Request::Send(_) | Request::SendMany(_) => (Role::Send, "send"),
        Request::Consume { .. } => (Role::Send, "consume"),
        Request::Reload => (Role::Operate, "reload"),
        Request::Revoke { .. } => (Role::Operate, "revoke"),
        Request::Inject(_) => (Role::Chaos, "chaos"),
        Request::Captured { .. } => (Role::Chaos, "chaos captured"),
    }
}

/// Where `--as` limits `request`, made of node `at`: the nodes it sends a set from, or takes
/// (for good) what a node's store keeps from; none for any other request.
fn limited_at(at: NodeId, request: &Request) -> Vec<NodeId> {
    match request {
        Request::Send(_) | Request::Consume { .. } => vec![at],
        Request::SendMany(sets) => sets.iter().map(|set| set.from).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_protocol::SendRequest;
    use cuberoute_protocol::delivery::Mode;
    use cuberoute_protocol::wire::control::{AwaitOne, Fault, SendOne, SendSet, ShapeRule};

    fn every_request() -> Vec<Request> {
        vec![
            Request::Status,
            Request::Recv {
                after: 0,
                max: 1,
                wait_ms: 0,
                clear: None,
            },
            Request::Await {
                src: NodeId(1),
                seq: 0,
                sent_at_us: 0,
                copies: 0,
                timeout_ms: 0,
                sealed: true,
                mode: Mode::default(),
            },
            Request::Settled {
                seq: 0,
                sent_at_us: 0,
                wait_ms: 0,
            },
            Request::Notices {
                after: 0,
                max: 1,
                wait_ms: 0,
            },
            Request::Send(SendSet {
                request: SendRequest::to(NodeId(3)),
                payload: vec![],
                trace: false,
                mode: Mode::default(),
                deadline_ms: 0,
                clear: false,
            }),
            Request::Consume {
                consumer: "c".into(),
                taken: None,
                max: 1,
                wait_ms: 0,
                clear: None,
            },
            Request::Reload,
            Request::Revoke { signed: vec![] },
            Request::Inject(Fault::CorruptState {
                seed: 0,
                every_ms: 0,
                for_ms: 0,
            }),
            Request::Inject(Fault::Heal {
                neighbour: NodeId(1),
            }),
            Request::Inject(Fault::Capture { on: false }),
            Request::Inject(Fault::Shape(ShapeRule::default())),
            Request::Inject(Fault::Unshape),
            Request::Captured { after: 0, max: 1 },
            Request::Hosted { after: None },
            Request::HostReadiness,
            Request::SendMany(vec![one_set(1)]),
            Request::AwaitMany {
                sets: vec![AwaitOne {
                    dst: NodeId(1),
                    src: NodeId(3),
                    seq: 0,
                    sent_at_us: 0,
                    copies: 0,
                    sealed: true,
                    mode: Mode::default(),
                }],
                timeout_ms: 0,
            },
        ]
    }

    /// A set to send from `from`, as [`Request::SendMany`] carries it.
    fn one_set(from: u64) -> SendOne {
        SendOne {
            from: NodeId(from),
            set: SendSet {
                request: SendRequest::to(NodeId(9)),
                payload: vec![],
                trace: false,
                mode: Mode::default(),
                deadline_ms: 0,
                clear: false,
            },
        }
    }

    fn role(role: Role, as_nodes: Option<&[u64]>) -> ClientRole {
        ClientRole::new(
            role,
            as_nodes.map(|n| n.iter().copied().map(NodeId).collect()),
        )
        .unwrap()
    }

    #[test]
    fn every_request_needs_the_role_of_its_kind() {
        for request in every_request() {
            let expected = match &request {
                Request::Status
                | Request::Hosted { .. }
                | Request::HostReadiness
                | Request::Recv { .. }
                | Request::Await { .. }
                | Request::AwaitMany { .. }
                | Request::Settled { .. }
                | Request::Notices { .. } => Role::Read,
                Request::Send(_) | Request::SendMany(_) | Request::Consume { .. } => Role::Send,
                Request::Reload | Request::Revoke { .. } => Role::Operate,
                // Ending a fault too: a read or send certificate cannot heal a cut it did not make.
                Request::Inject(_) | Request::Captured { .. } => Role::Chaos,
            };
            assert_eq!(needed(&request).0, expected, "{request:?}");
        }
    }

    #[test]
    fn roles_are_cumulative_and_a_refusal_names_the_role_needed() {
        for have in Role::ALL {
            let client = role(have, None);
            for request in every_request() {
                let (need, what) = needed(&request);
                match client.allows(NodeId(0), &request) {
                    Ok(()) => assert!(have >= need, "{have} allowed {request:?}"),
                    Err(line) => {
                        assert!(have < need, "{have} refused {request:?}: {line}");
                        assert_eq!(
                            line,
                            format!(
                                "this client certificate has role {have}; {what} needs role {need}"
                            )
                        );
                        assert!(!line.contains('\n'));
                    }
                }
            }
        }
        assert_eq!(
            role(Role::Read, None)
                .allows(NodeId(0), &every_request()[5])
                .unwrap_err(),
            "this client certificate has role read; send needs role send"
        );
        for request in every_request() {
            assert_eq!(ClientRole::OPERATOR.allows(NodeId(9), &request), Ok(()));
        }
    }

    #[test]
    fn as_nodes_limit_sending_and_consuming_only() {
        let client = role(Role::Send, Some(&[1]));
        for request in every_request() {
            let at_1 = client.allows(NodeId(1), &request);
            let at_2 = client.allows(NodeId(2), &request);
            match &request {
                Request::Send(_) | Request::Consume { .. } => {
                    assert_eq!(at_1, Ok(()));
                    let line = at_2.unwrap_err();
                    assert!(
                        line.starts_with("this client certificate has role send as node 1 only; ")
                            && line.ends_with(" at node 2 is refused"),
                        "{line}"
                    );
                }
                // Reading is not limited; what the role lacks is refused everywhere.
                _ => assert_eq!(at_1, at_2, "{request:?}"),
            }
        }
        let many = role(Role::Chaos, Some(&[7, 3, 5, 3]));
        assert_eq!(many.as_nodes, Some(vec![NodeId(3), NodeId(5), NodeId(7)]));
        assert!(many.allows(NodeId(5), &every_request()[5]).is_ok());
        assert!(
            many.allows(NodeId(4), &every_request()[5])
                .unwrap_err()
                .contains("as nodes 3,5,7 only")
        );
        // Operating and chaos are not limited by --as.
        assert!(many.allows(NodeId(4), &Request::Reload).is_ok());
        // Many sets in one request: each from a node --as names, wherever the request goes.
        let sets = |from: &[u64]| Request::SendMany(from.iter().map(|&n| one_set(n)).collect());
        assert!(many.allows(NodeId(4), &sets(&[3, 7, 5])).is_ok());
        let line = many.allows(NodeId(3), &sets(&[3, 4, 5])).unwrap_err();
        assert!(line.ends_with("send at node 4 is refused"), "{line}");
    }

    #[test]
    fn roles_round_trip_through_their_uri() {
        let cases = [
            (role(Role::Read, None), "cuberoute:role:read"),
            (role(Role::Send, None), "cuberoute:role:send"),
            (role(Role::Send, Some(&[1])), "cuberoute:role:send:as:1"),
            (
                role(Role::Operate, Some(&[0, 12, u64::MAX])),
                "cuberoute:role:operate:as:0,12,18446744073709551615",
            ),
            (role(Role::Chaos, None), "cuberoute:role:chaos"),
        ];
        for (client, uri) in cases {
            assert_eq!(client.to_uri(), uri);
            assert_eq!(ClientRole::from_uri(uri), Some(Ok(client)));
        }
    }

    #[test]
    fn malformed_role_uris_are_refused_and_others_are_not_role_uris() {
        for other in [
            "https://example.com",
            "cuberoute:node:1",
            "cuberoute:rolex",
            "",
        ] {
            assert_eq!(ClientRole::from_uri(other), None, "{other}");
        }
        for bad in [
            "cuberoute:role:",
            "cuberoute:role:admin",
            "cuberoute:role:READ",
            "cuberoute:role:read:as:1",
            "cuberoute:role:send:as:",
            "cuberoute:role:send:as:1,",
            "cuberoute:role:send:as:,1",
            "cuberoute:role:send:as:2,1",
            "cuberoute:role:send:as:1,1",
            "cuberoute:role:send:as:01",
            "cuberoute:role:send:as:+1",
            "cuberoute:role:send:as:-1",
            "cuberoute:role:send:as:1 ",
            "cuberoute:role:send:as:18446744073709551616",
            "cuberoute:role:send:1",
            "cuberoute:role:send:as:1:as:2",
            "cuberoute:role:send:nodes:1",
        ] {
            assert!(
                matches!(ClientRole::from_uri(bad), Some(Err(_))),
                "{bad}: {:?}",
                ClientRole::from_uri(bad)
            );
        }
        let too_many: Vec<String> = (0..=MAX_AS_NODES as u64).map(|i| i.to_string()).collect();
        let uri = format!("cuberoute:role:send:as:{}", too_many.join(","));
        assert!(matches!(ClientRole::from_uri(&uri), Some(Err(_))));
    }

    #[test]
    fn as_nodes_need_a_role_that_sends() {
        let err = ClientRole::new(Role::Read, Some(vec![NodeId(1)])).unwrap_err();
        assert_eq!(
            err,
            "--as names the nodes a certificate sends at; role read does not send"
        );
        assert!(ClientRole::new(Role::Send, Some(vec![])).is_err());
        let too_many = (0..=MAX_AS_NODES as u64).map(NodeId).collect();
        assert!(ClientRole::new(Role::Send, Some(too_many)).is_err());
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        assert!("admin".parse::<Role>().is_err());
    }
}
