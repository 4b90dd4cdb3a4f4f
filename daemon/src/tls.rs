//! Identities and mutual TLS: every certificate is signed by the cluster's own CA and names
//! either one node or a client, in its DNS subject alternative name.
//!
//! * A node's certificate names `n<ID>.node.cuberoute`. Dialling a neighbour, a node asks for
//!   exactly that name, so the TLS handshake itself proves who answered. Accepting a link, a
//!   node reads the name from the peer's certificate and checks that it is a neighbour.
//! * The cluster's operator certificate names `client.cuberoute`: a client with every role.
//! * A client certificate of a role names no DNS name but one URI, `cuberoute:role:<role>` (with
//!   `:as:<ids>` when it sends at some nodes only): [`crate::roles`]. Only a client certificate
//!   opens the control API, and a daemon answers only what its role allows.
//!
//! A certificate that names more than one of these, or a malformed role, names nobody: it is
//! refused wherever it is presented.
//!
//! ring is the only crypto provider compiled in, and there is no platform verifier: the cluster
//! CA is the only root (docs/daemon.md, "Identities and mutual TLS").

use crate::roles::ClientRole;
use cuberoute_protocol::NodeId;
use cuberoute_protocol::wire::{MAX_FRAME_LEN, PREFIX_LEN};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// ALPN of neighbour links.
pub const ALPN_LINK: &[u8] = b"cuberoute-link/1";
/// ALPN of the control API.
pub const ALPN_CONTROL: &[u8] = b"cuberoute-control/1";

/// The DNS name a client certificate carries.
pub const CLIENT_NAME: &str = "client.cuberoute";
const NODE_SUFFIX: &str = ".node.cuberoute";

/// An idle link sends a keep-alive this often; it must stay well below the idle timeout, or an
/// idle link would be closed as dead. It is rare on purpose: a link with traffic is checked by
/// its acknowledgements (`link::SILENT_LINK`), and an idle one lazily (docs/daemon.md, "Links").
pub const KEEP_ALIVE: Duration = Duration::from_secs(120);
/// A link with nothing received for this long is dead: two keep-alives may go unanswered.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(365);
/// The round-trip time a connection assumes before it has measured one.
pub const INITIAL_RTT: Duration = Duration::from_millis(10);
/// A control connection: a client that waits keeps it open with keep-alives (the daemon sends
/// none: the client's, acknowledged, keep it open both ways, at half the wake-ups); one that
/// went away without closing it (a killed process) is forgotten after [`CONTROL_IDLE_TIMEOUT`].
pub const CONTROL_KEEP_ALIVE: Duration = Duration::from_secs(2);
pub const CONTROL_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The receive buffer a shared link endpoint asks for, per node it serves, and at most (the
/// kernel gives at most `net.core.rmem_max`, 4 MiB here).
pub const SHARED_BUFFER_PER_MEMBER: usize = 16 << 10;
pub const SHARED_BUFFER_MAX: usize = 64 << 20;

/// The DNS name a node's certificate carries.
pub fn node_name(id: NodeId) -> String {
    format!("n{}{NODE_SUFFIX}", id.0)
}

/// Who a certificate says its holder is: a node, or a client with its role (the operator's
/// certificate: [`ClientRole::OPERATOR`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Identity {
    Node(NodeId),
    Client(ClientRole),
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Node(id) => write!(f, "node {id}"),
            Identity::Client(role) if *role == ClientRole::OPERATOR => {
                f.write_str("the operator's client (every role)")
            }
            Identity::Client(role) => write!(f, "a client of {role}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {message}")]
    Read {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{what} {path} holds no certificate")]
    Empty { what: &'static str, path: PathBuf },
    #[error("the CA certificate {path} is not usable: {message}")]
    BadCa { path: PathBuf, message: String },
    #[error("certificate {path} and key do not make a usable identity: {message}")]
    BadIdentity { path: PathBuf, message: String },
    #[error("certificate {path}: {why}")]
    Anonymous { path: PathBuf, why: IdentityError },
}

/// Why a peer's certificate does not give an identity.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("the peer presented no certificate")]
    NoCertificate,
    #[error("the certificate cannot be parsed")]
    Unparsable,
    #[error("the certificate names no cuberoute node or client")]
    Anonymous,
    #[error("the certificate names more than one cuberoute node or client")]
    Ambiguous,
    #[error("the certificate names a malformed client role: {0}")]
    BadRole(String),
}

/// A CA, and a certificate chain with its key, loaded from PEM files.
#[derive(Debug)]
pub struct Credentials {
    roots: Arc<RootCertStore>,
    /// The cluster CA's certificates: what signed the key directory too.
    pub ca: Vec<CertificateDer<'static>>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// Who the certificate names.
    pub identity: Identity,
    /// A digest of the CA, the chain and the key, to tell whether a reload would change them.
    pub digest: u64,
}

impl Clone for Credentials {
    fn clone(&self) -> Self {
        Credentials {
            roots: self.roots.clone(),
            ca: self.ca.clone(),
            chain: self.chain.clone(),
            key: self.key.clone_key(),
            identity: self.identity.clone(),
            digest: self.digest,
        }
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Credentials {
    /// Load the CA certificate, a certificate chain and its private key.
    pub fn load(ca: &Path, cert: &Path, key: &Path) -> Result<Credentials, TlsError> {
        let read_certs = |what, path: &Path| -> Result<Vec<CertificateDer<'static>>, TlsError> {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| TlsError::Read {
                    what,
                    path: path.into(),
                    message: e.to_string(),
                })?;
            if certs.is_empty() {
                return Err(TlsError::Empty {
                    what,
                    path: path.into(),
                });
            }
            Ok(certs)
        };
        let mut roots = RootCertStore::empty();
        let ca_certs = read_certs("CA certificate", ca)?;
        let mut digest = std::hash::DefaultHasher::new();
        ca_certs.hash(&mut digest);
        for ca_cert in ca_certs.iter().cloned() {
            roots.add(ca_cert).map_err(|e| TlsError::BadCa {
                path: ca.into(),
                message: e.to_string(),
            })?;
        }
        let chain = read_certs("certificate", cert)?;
        let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Read {
            what: "private key",
            path: key.into(),
            message: e.to_string(),
        })?;
        let identity = identity_of(&chain[0]).map_err(|why| TlsError::Anonymous {
            path: cert.into(),
            why,
        })?;
        chain.hash(&mut digest);
        key.secret_der().hash(&mut digest);
        let credentials = Credentials {
            roots: Arc::new(roots),
            ca: ca_certs,
            chain,
            key,
            identity,
            digest: digest.finish(),
        };
        // Building a server config checks that the key matches the certificate.
        credentials
            .rustls_server(ALPN_LINK)
            .map_err(|message| TlsError::BadIdentity {
                path: cert.into(),
                message,
            })?;
        Ok(credentials)
    }

    /// The certificate itself (the first of the chain).
    pub fn certificate(&self) -> &CertificateDer<'static> {
        &self.chain[0]
    }

    fn rustls_server(&self, alpn: &[u8]) -> Result<rustls::ServerConfig, String> {
        let config = self
            .server_builder()?
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| e.to_string())?;
        Ok(server_finished(config, alpn))
    }

    /// A TLS 1.3 server under this identity's CA, which requires a client certificate of it.
    fn server_builder(
        &self,
    ) -> Result<rustls::ConfigBuilder<rustls::ServerConfig, rustls::server::WantsServerCert>, String>
    {
        let verifier = WebPkiClientVerifier::builder_with_provider(self.roots.clone(), provider())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| e.to_string())?
            .with_client_cert_verifier(verifier))
    }

    /// This identity's certificate and key, as a server presents them.
    fn certified_key(&self) -> Result<rustls::sign::CertifiedKey, String> {
        rustls::sign::CertifiedKey::from_der(self.chain.clone(), self.key.clone_key(), &provider())
            .map_err(|e| e.to_string())
    }

    /// A QUIC server config that requires a client certificate signed by the cluster CA.
    pub fn server_config(&self, alpn: &[u8]) -> quinn::ServerConfig {
        let config = self
            .rustls_server(alpn)
            .expect("checked when the credentials were loaded");
        quic_server(config, alpn)
    }

    /// A QUIC endpoint on `listen` that serves `alpn` ([`Credentials::server_config`]), whose
    /// stateless-reset key and connection-ID key are derived from this identity's private key
    /// and `alpn`: the same after a restart, so that a restarted process recognises the
    /// connection IDs its former self issued and resets those connections at their first packet.
    /// With a `shaper`, its rules apply to the datagrams the endpoint sends ([`crate::net`]).
    pub fn endpoint(
        &self,
        alpn: &[u8],
        listen: std::net::SocketAddr,
        shaper: Option<Arc<crate::shaper::Shaper>>,
    ) -> std::io::Result<quinn::Endpoint> {
        self.endpoint_serving(self.server_config(alpn), alpn, listen, None, shaper)
    }

    /// A QUIC endpoint on `listen` shared by the nodes of one process whose `members` are
    /// (a node host, [`crate::host`]): a node dialling one of them names it (SNI, the name its
    /// certificate must carry: [`server_name`]), and is answered with that node's certificate,
    /// and the connection is its ([`server_name_of`]). One CA for all (the host checks it);
    /// the keys of its resets and connection IDs are the first member's, as
    /// [`Credentials::endpoint`] derives them.
    pub fn shared_endpoint(
        members: &[&Credentials],
        alpn: &[u8],
        listen: std::net::SocketAddr,
        shaper: Option<Arc<crate::shaper::Shaper>>,
    ) -> std::io::Result<quinn::Endpoint> {
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        let first = members
            .first()
            .ok_or_else(|| invalid("a shared endpoint needs a member".into()))?;
        let mut by_name = rustls::server::ResolvesServerCertUsingSni::new();
        for member in members {
            let Identity::Node(id) = member.identity else {
                return Err(invalid(format!("{} is not a node", member.identity)));
            };
            by_name
                .add(&node_name(id), member.certified_key().map_err(invalid)?)
                .map_err(|e| invalid(e.to_string()))?;
        }
        let config = first
            .server_builder()
            .map_err(invalid)?
            .with_cert_resolver(Arc::new(by_name));
        let server = quic_server(server_finished(config, alpn), alpn);
        // Every member's neighbours in other processes dial it at once at a start: the
        // default receive buffer (208 KiB) dropped most of their Initials, and each came again
        // a backed-off probe timeout later (EH(5,5) in two processes: its 1,024 links between
        // them up in 2 to 5 s instead of 0.5).
        let buffer = (members.len() * SHARED_BUFFER_PER_MEMBER).min(SHARED_BUFFER_MAX);
        first.endpoint_serving(server, alpn, listen, Some(buffer), shaper)
    }

    fn endpoint_serving(
        &self,
        server: quinn::ServerConfig,
        alpn: &[u8],
        listen: std::net::SocketAddr,
        receive_buffer: Option<usize>,
        shaper: Option<Arc<crate::shaper::Shaper>>,
    ) -> std::io::Result<quinn::Endpoint> {
        let derive = |what: &[u8]| {
            let secret = [self.key.secret_der(), b"cuberoute ", what, alpn].concat();
            ring::digest::digest(&ring::digest::SHA256, &secret)
        };
        let reset_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, derive(b"reset").as_ref());
        let cid_key = derive(b"cid").as_ref()[..8]
            .try_into()
            .map(u64::from_le_bytes)
            .expect("a SHA-256 digest has 8 bytes");
        let mut config = quinn::EndpointConfig::new(Arc::new(reset_key));
        config.cid_generator(move || {
            Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key))
        });
        // Every neighbour of a restarted node may need its reset at the same moment.
        config.min_reset_interval(Duration::from_millis(1));
        crate::net::endpoint(config, Some(server), listen, receive_buffer, shaper)
    }

    /// A QUIC client config that presents our certificate and trusts only the cluster CA.
    pub fn client_config(&self, alpn: &[u8]) -> quinn::ClientConfig {
        let mut config = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("ring supports TLS 1.3")
            .with_root_certificates(self.roots.clone())
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())
            .expect("checked when the credentials were loaded");
        config.alpn_protocols = vec![alpn.to_vec()];
        // No resumption, as the server side (`rustls_server`): nor a cache of sessions.
        config.resumption = rustls::client::Resumption::disabled();
        let crypto = QuicClientConfig::try_from(config).expect("TLS 1.3 with a QUIC cipher suite");
        let mut client = quinn::ClientConfig::new(Arc::new(crypto));
        client.transport_config(transport(alpn, Side::Client));
        client
    }
}

/// `config` serving `alpn`, with no resumption: every connection shows and checks a certificate
/// (a resumed session would carry the identity of its first, whatever was revoked since), and
/// no session cache per endpoint (50 KiB each in rustls's default, two endpoints per node).
fn server_finished(mut config: rustls::ServerConfig, alpn: &[u8]) -> rustls::ServerConfig {
    config.alpn_protocols = vec![alpn.to_vec()];
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    config
}

fn quic_server(config: rustls::ServerConfig, alpn: &[u8]) -> quinn::ServerConfig {
    let crypto = QuicServerConfig::try_from(config).expect("TLS 1.3 with a QUIC cipher suite");
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    server.transport_config(transport(alpn, Side::Server));
    server
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// The transport of a link, or of a control connection (any other ALPN). On a link only the
/// dialler sends keep-alives: the acceptor's acknowledgements of them keep the link open both
/// ways, at half the datagrams.
fn transport(alpn: &[u8], side: Side) -> Arc<quinn::TransportConfig> {
    let (keep_alive, idle) = if alpn == ALPN_LINK {
        ((side == Side::Client).then_some(KEEP_ALIVE), IDLE_TIMEOUT)
    } else {
        (
            (side == Side::Client).then_some(CONTROL_KEEP_ALIVE),
            CONTROL_IDLE_TIMEOUT,
        )
    };
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(keep_alive);
    // Neighbours and clients are on one machine or one network, not across the world (QUIC's
    // default guess is 333 ms): a handshake packet sent before the peer's process was up is
    // sent again after about 30 ms rather than 1 s, then at doubling intervals.
    transport.initial_rtt(INITIAL_RTT);
    if alpn == ALPN_LINK {
        // A link is one bidirectional stream for the hellos and one unidirectional stream per
        // batch of frames. quinn sizes per-connection stream state by these limits, and a
        // daemon holds one connection per neighbour.
        transport.max_concurrent_bidi_streams(1u32.into());
        transport.max_concurrent_uni_streams(LINK_BATCHES_IN_FLIGHT.into());
        // QUIC's acknowledgement of a batch is the link's (link.rs). The link asks its
        // neighbour, with QUIC's ACK frequency extension, to acknowledge lazily: after 16
        // packets or QUIC's delayed-acknowledgement time, so that frames following each other
        // closely share one acknowledgement; a lone batch asks for its own at once
        // (link::LONE_AFTER), since its delayed acknowledgement would be a timer that wakes
        // the neighbour once more.
        let mut acks = quinn::AckFrequencyConfig::default();
        acks.ack_eliciting_threshold(LINK_ACK_ELICITING_THRESHOLD.into());
        transport.ack_frequency_config(Some(acks));
    } else {
        // A client may wait on many sets at once, one stream each; a daemon opens none towards
        // its client. quinn sizes a connection's stream state by these limits: a client that
        // allowed 4,096 streams on each of its 2,048 connections held 755 MiB.
        let incoming: u32 = match side {
            Side::Server => 4096,
            Side::Client => 0,
        };
        transport.max_concurrent_bidi_streams(incoming.into());
        transport.max_concurrent_uni_streams(0u32.into());
        // What one control connection may buffer either way, in the transport: requests not
        // read yet (a daemon reads one when its control bytes allow) and answers the client
        // has not acknowledged. One frame fits a stream's window.
        let frame = (PREFIX_LEN + MAX_FRAME_LEN) as u32;
        transport.stream_receive_window(frame.into());
        transport.receive_window((2 * frame).into());
        transport.send_window(2 * u64::from(frame));
    }
    transport.max_idle_timeout(Some(idle.try_into().expect("seconds fit a VarInt")));
    Arc::new(transport)
}

/// A link asks its neighbour to acknowledge QUIC packets at once only after this many.
const LINK_ACK_ELICITING_THRESHOLD: u32 = 16;

/// Batches a link may have written and not yet seen acknowledged. The neighbour grants more as
/// it reads them, with a frame of its own that wakes this node (and is acknowledged) only
/// after an eighth of them: the more, the rarer, but quinn keeps a small entry for each.
const LINK_BATCHES_IN_FLIGHT: u32 = 256;

/// The identity a DER certificate names: exactly one node name, client name or role URI among
/// its subject alternative names (other names are ignored).
pub fn identity_of(cert: &CertificateDer<'_>) -> Result<Identity, IdentityError> {
    use x509_parser::extensions::GeneralName;
    let (_, parsed) =
        x509_parser::parse_x509_certificate(cert).map_err(|_| IdentityError::Unparsable)?;
    let san = parsed
        .subject_alternative_name()
        .map_err(|_| IdentityError::Unparsable)?
        .ok_or(IdentityError::Anonymous)?;
    let mut found = None;
    for name in &san.value.general_names {
        let identity = match name {
            GeneralName::DNSName(dns) => identity_of_name(dns),
            GeneralName::URI(uri) => match ClientRole::from_uri(uri) {
                Some(Ok(role)) => Some(Identity::Client(role)),
                Some(Err(why)) => return Err(IdentityError::BadRole(why)),
                None => None,
            },
            _ => None,
        };
        if let Some(identity) = identity {
            if found.is_some() {
                return Err(IdentityError::Ambiguous);
            }
            found = Some(identity);
        }
    }
    found.ok_or(IdentityError::Anonymous)
}

/// Whether `cert` is a client certificate that chains to one of `roots` (valid now, for client
/// authentication): what a daemon's handshake checks of a client.
pub fn verify_client(
    roots: &[CertificateDer<'static>],
    cert: &CertificateDer<'_>,
) -> Result<(), String> {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root.clone()).map_err(|e| e.to_string())?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(store), provider())
        .build()
        .map_err(|e| e.to_string())?;
    verifier
        .verify_client_cert(cert, &[], rustls_pki_types::UnixTime::now())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn identity_of_name(name: &str) -> Option<Identity> {
    if name == CLIENT_NAME {
        return Some(Identity::Client(ClientRole::OPERATOR));
    }
    let digits = name.strip_prefix('n')?.strip_suffix(NODE_SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|id| Identity::Node(NodeId(id)))
}

/// The identity the peer of an established connection proved in its handshake.
pub fn peer_identity(connection: &quinn::Connection) -> Result<Identity, IdentityError> {
    let certs = connection
        .peer_identity()
        .and_then(|any| any.downcast::<Vec<CertificateDer<'static>>>().ok())
        .ok_or(IdentityError::NoCertificate)?;
    identity_of(certs.first().ok_or(IdentityError::NoCertificate)?)
}

/// The node an accepted connection's dialler asked for by name (SNI): on an endpoint shared by
/// several nodes ([`Credentials::shared_endpoint`]), whose connection it is.
pub fn server_name_of(connection: &quinn::Connection) -> Option<NodeId> {
    let data = connection
        .handshake_data()?
        .downcast::<quinn::crypto::rustls::HandshakeData>()
        .ok()?;
    match identity_of_name(data.server_name.as_deref()?)? {
        Identity::Node(id) => Some(id),
        Identity::Client(_) => None,
    }
}

/// The TLS server name to ask for when dialling `node`.
pub fn server_name(node: NodeId) -> ServerName<'static> {
    ServerName::try_from(node_name(node)).expect("node names are valid DNS names")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for id in [0, 7, u64::MAX >> 1] {
            assert_eq!(
                identity_of_name(&node_name(NodeId(id))),
                Some(Identity::Node(NodeId(id)))
            );
        }
        assert_eq!(
            identity_of_name(CLIENT_NAME),
            Some(Identity::Client(ClientRole::OPERATOR))
        );
        for bad in [
            "n.node.cuberoute",
            "n-1.node.cuberoute",
            "n1x.node.cuberoute",
            "n1.node.cuberoute.evil",
            "x1.node.cuberoute",
            "n99999999999999999999.node.cuberoute",
            "localhost",
        ] {
            assert_eq!(identity_of_name(bad), None, "{bad}");
        }
    }

    /// A certificate with these subject alternative names, signed by `ca` (or self-signed).
    fn cert_naming(
        names: Vec<rcgen::SanType>,
        ca: Option<&rcgen::CertifiedIssuer<'static, rcgen::KeyPair>>,
    ) -> CertificateDer<'static> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = names;
        let cert = match ca {
            Some(ca) => params.signed_by(&key, ca).unwrap(),
            None => params.self_signed(&key).unwrap(),
        };
        cert.der().clone()
    }

    fn dns(name: &str) -> rcgen::SanType {
        rcgen::SanType::DnsName(name.try_into().unwrap())
    }

    fn uri(name: &str) -> rcgen::SanType {
        rcgen::SanType::URI(name.try_into().unwrap())
    }

    fn ca() -> rcgen::CertifiedIssuer<'static, rcgen::KeyPair> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
    }

    /// Node `id`'s credentials under `ca`.
    fn node_credentials(
        ca: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
        id: NodeId,
    ) -> Credentials {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![dns(&node_name(id))];
        let cert = params.signed_by(&key, ca).unwrap().der().clone();
        let mut roots = RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        Credentials {
            roots: Arc::new(roots),
            ca: vec![ca.der().clone()],
            chain: vec![cert],
            key: PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            identity: Identity::Node(id),
            digest: 0,
        }
    }

    /// A dialler that gives up before its first packet is sent closes in that packet. The
    /// accepting endpoint, closed, is let go at once all the same (quinn-proto, patched in
    /// vendor/quinn-proto: such a connection waited for the link's idle timeout, 365 s, and held
    /// the endpoint's socket that long, so a node crashed inside its process could not listen
    /// again).
    #[tokio::test]
    async fn a_connection_closed_in_its_first_packet_lets_its_endpoint_go() {
        let ca = ca();
        let server = node_credentials(&ca, NodeId(3))
            .endpoint(ALPN_LINK, ([127, 0, 0, 1], 0).into(), None)
            .unwrap();
        let dialler = node_credentials(&ca, NodeId(4))
            .endpoint(ALPN_LINK, ([127, 0, 0, 1], 0).into(), None)
            .unwrap();
        let config = node_credentials(&ca, NodeId(4)).client_config(ALPN_LINK);
        let to = server.local_addr().unwrap();
        // Given up before its driver ran: its first datagram carries CONNECTION_CLOSE.
        drop(
            dialler
                .connect_with(config, to, &node_name(NodeId(3)))
                .unwrap(),
        );
        let incoming = tokio::time::timeout(Duration::from_secs(10), server.accept())
            .await
            .expect("the closing Initial arrives")
            .expect("the endpoint is open");
        assert!(
            incoming.await.is_err(),
            "the connection was closed by its dialler"
        );
        server.close(0u32.into(), b"");
        tokio::time::timeout(Duration::from_secs(10), server.wait_idle())
            .await
            .expect("the closed connection is drained well before the link's idle timeout");
    }

    /// One endpoint for nodes 1 and 2 of a process: a dialler naming either is answered with
    /// that node's certificate (its client verifies the name) and the connection says which it
    /// asked for; one naming a node the endpoint does not serve is refused in the handshake.
    #[tokio::test]
    async fn a_shared_endpoint_answers_for_each_of_its_nodes_by_name() {
        let ca = ca();
        let (one, two) = (
            node_credentials(&ca, NodeId(1)),
            node_credentials(&ca, NodeId(2)),
        );
        let shared = Credentials::shared_endpoint(
            &[&one, &two],
            ALPN_LINK,
            ([127, 0, 0, 1], 0).into(),
            None,
        )
        .unwrap();
        let to = shared.local_addr().unwrap();
        let dialler = node_credentials(&ca, NodeId(3));
        let client = dialler
            .endpoint(ALPN_LINK, ([127, 0, 0, 1], 0).into(), None)
            .unwrap();
        let accept = {
            let shared = shared.clone();
            tokio::spawn(async move {
                // Three dials: the stranger's handshake fails here.
                let mut named = Vec::new();
                for _ in 0..3 {
                    let incoming = shared.accept().await.unwrap();
                    if let Ok(connection) = incoming.await {
                        named.push(server_name_of(&connection));
                    }
                }
                named
            })
        };
        for id in [2, 1] {
            let connection = client
                .connect_with(dialler.client_config(ALPN_LINK), to, &node_name(NodeId(id)))
                .unwrap()
                .await
                .unwrap();
            assert_eq!(peer_identity(&connection), Ok(Identity::Node(NodeId(id))));
        }
        let stranger = client
            .connect_with(dialler.client_config(ALPN_LINK), to, &node_name(NodeId(4)))
            .unwrap()
            .await;
        assert!(stranger.is_err(), "node 4 is not served there");
        let named = tokio::time::timeout(Duration::from_secs(10), accept)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(named, vec![Some(NodeId(2)), Some(NodeId(1))]);
    }

    #[test]
    fn no_session_is_resumed_every_connection_shows_its_certificate() {
        let credentials = node_credentials(&ca(), NodeId(3));
        for alpn in [ALPN_LINK, ALPN_CONTROL] {
            let server = credentials.rustls_server(alpn).unwrap();
            // Nothing kept to resume from, and no ticket handed out to resume with.
            assert!(!server.session_storage.can_cache());
            assert_eq!(server.send_tls13_tickets, 0);
        }
    }

    #[test]
    fn a_certificate_names_one_node_or_client_or_nobody() {
        use crate::roles::Role;
        let send_as_1 = ClientRole::new(Role::Send, Some(vec![NodeId(1)])).unwrap();
        let cases = [
            (
                vec![dns(&node_name(NodeId(5)))],
                Ok(Identity::Node(NodeId(5))),
            ),
            (
                vec![dns(CLIENT_NAME)],
                Ok(Identity::Client(ClientRole::OPERATOR)),
            ),
            (
                vec![uri("cuberoute:role:send:as:1")],
                Ok(Identity::Client(send_as_1.clone())),
            ),
            // Other names beside one of ours are ignored.
            (
                vec![dns("example.com"), uri("cuberoute:role:send:as:1")],
                Ok(Identity::Client(send_as_1)),
            ),
            (vec![dns("example.com")], Err(IdentityError::Anonymous)),
            (vec![], Err(IdentityError::Anonymous)),
            // A role never rides on a node's or the operator's certificate, nor two roles on one.
            (
                vec![dns(&node_name(NodeId(5))), uri("cuberoute:role:read")],
                Err(IdentityError::Ambiguous),
            ),
            (
                vec![dns(CLIENT_NAME), uri("cuberoute:role:read")],
                Err(IdentityError::Ambiguous),
            ),
            (
                vec![uri("cuberoute:role:read"), uri("cuberoute:role:chaos")],
                Err(IdentityError::Ambiguous),
            ),
            (
                vec![dns(&node_name(NodeId(5))), dns(&node_name(NodeId(6)))],
                Err(IdentityError::Ambiguous),
            ),
        ];
        for (names, expected) in cases {
            let shown = format!("{names:?}");
            assert_eq!(identity_of(&cert_naming(names, None)), expected, "{shown}");
        }
        // A malformed role makes the certificate name nobody, whatever else it names.
        for names in [
            vec![uri("cuberoute:role:admin")],
            vec![uri("cuberoute:role:read:as:1")],
            vec![dns(CLIENT_NAME), uri("cuberoute:role:send:as:2,1")],
        ] {
            let shown = format!("{names:?}");
            assert!(
                matches!(
                    identity_of(&cert_naming(names, None)),
                    Err(IdentityError::BadRole(_))
                ),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_client_certificate_verifies_under_its_own_ca_only() {
        let (ours, theirs) = (ca(), ca());
        let cert = cert_naming(vec![uri("cuberoute:role:read")], Some(&ours));
        let root = |ca: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>| {
            vec![CertificateDer::from(ca.der().to_vec())]
        };
        assert_eq!(verify_client(&root(&ours), &cert), Ok(()));
        assert!(verify_client(&root(&theirs), &cert).is_err());
        assert!(verify_client(&root(&ours), &cert_naming(vec![dns(CLIENT_NAME)], None)).is_err());
    }
}
