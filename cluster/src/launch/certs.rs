//! The cluster's own certificate authority, and the certificates it issues: one per node (named
//! as `cuberoute_daemon::tls::node_name` says, usable as TLS server and client), the
//! operator's client certificate (every role), and client certificates of a role
//! (`cuberoute_daemon::roles`), issued later by the CA loaded back from the cluster directory
//! ([`LoadedCa`], `cluster client-cert`); and the client credentials a client of a cluster loads
//! ([`client_credentials`]: the operator's, or `--cert`'s, checked to be of this cluster's CA).

use crate::launch::layout::ClusterDir;
use anyhow::Context;
use cuberoute_daemon::roles::ClientRole;
use cuberoute_daemon::tls::{self, CLIENT_NAME, Credentials, Identity, node_name};
use cuberoute_protocol::NodeId;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// A certificate and its private key, in PEM.
pub struct Pem {
    pub cert: String,
    pub key: String,
}

/// A freshly generated cluster CA.
pub struct ClusterCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl ClusterCa {
    pub fn generate(cluster: &str) -> Result<ClusterCa, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(
            DnType::CommonName,
            format!("cuberoute cluster CA ({cluster})"),
        );
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(ClusterCa { issuer })
    }

    /// The CA certificate, which every node and client trusts.
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA's private key.
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// A node's certificate: a server when it accepts a link, a client when it dials one.
    pub fn issue_node(&self, id: NodeId) -> Result<Pem, rcgen::Error> {
        issue(
            &self.issuer,
            dns(node_name(id))?,
            format!("cuberoute node {id}"),
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )
    }

    /// The CA's signature of `message`: ECDSA P-256 with SHA-256, as the daemons check the key
    /// directory and revocation lists (`cuberoute_daemon::keys`).
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        sign_with(&self.issuer.key().serialize_der(), message)
            .expect("the CA's own key is an ECDSA P-256 key")
    }

    /// The operator's client certificate: every role.
    pub fn issue_client(&self) -> Result<Pem, rcgen::Error> {
        issue(
            &self.issuer,
            dns(CLIENT_NAME.to_string())?,
            "cuberoute client".to_string(),
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        )
    }

    /// A client certificate of `role`.
    pub fn issue_role(&self, role: &ClientRole) -> Result<Pem, rcgen::Error> {
        issue_role(&self.issuer, role)
    }
}

/// A cluster's CA loaded back from its directory (`ca.pem`, `ca.key`), to issue client
/// certificates of a role after the cluster was generated.
pub struct LoadedCa {
    issuer: Issuer<'static, KeyPair>,
}

impl LoadedCa {
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<LoadedCa, rcgen::Error> {
        let key = KeyPair::from_pem(key_pem)?;
        Ok(LoadedCa {
            issuer: Issuer::from_ca_cert_pem(cert_pem, key)?,
        })
    }

    /// A client certificate of `role`.
    pub fn issue_role(&self, role: &ClientRole) -> Result<Pem, rcgen::Error> {
        issue_role(&self.issuer, role)
    }
}

/// A certificate for `names`, signed by `issuer`, with a key of its own.
fn issue(
    issuer: &Issuer<'_, KeyPair>,
    names: Vec<SanType>,
    common_name: String,
    usages: Vec<ExtendedKeyUsagePurpose>,
) -> Result<Pem, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.subject_alt_names = names;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = usages;
    let cert = params.signed_by(&key, issuer)?;
    Ok(Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

fn dns(name: String) -> Result<Vec<SanType>, rcgen::Error> {
    Ok(vec![SanType::DnsName(name.try_into()?)])
}

/// A client certificate whose only name is the role's URI (`ClientRole::to_uri`): no DNS name,
/// so that neither a daemon nor a reader can take it for a node's or the operator's.
fn issue_role(issuer: &Issuer<'_, KeyPair>, role: &ClientRole) -> Result<Pem, rcgen::Error> {
    issue(
        issuer,
        vec![SanType::URI(role.to_uri().try_into()?)],
        format!("cuberoute client ({role})"),
        vec![ExtendedKeyUsagePurpose::ClientAuth],
    )
}

/// Sign `message` with a P-256 key in PKCS#8 DER (the CA's: rcgen's default key type).
fn sign_with(pkcs8: &[u8], message: &[u8]) -> Result<Vec<u8>, String> {
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
    let rng = ring::rand::SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8, &rng)
        .map_err(|e| format!("not an ECDSA P-256 key: {e}"))?;
    key.sign(&rng, message)
        .map(|s| s.as_ref().to_vec())
        .map_err(|e| format!("signing failed: {e}"))
}

/// The client credentials a client of `dir` uses: the operator's, or those of the directory
/// `--cert` named ([`ClusterDir::with_client`]), which must hold `ca.pem`, `client.pem` and
/// `client.key`, a client certificate signed by this cluster's CA (`DIR/ca.pem`, when the
/// cluster directory holds it) and by the CA beside it.
pub fn client_credentials(dir: &ClusterDir) -> anyhow::Result<Credentials> {
    let [ca, cert, key] = dir.client_credentials();
    let Some(cert_dir) = dir.client_dir() else {
        return Credentials::load(&ca, &cert, &key).context("loading the client certificate");
    };
    let shown = cert_dir.display();
    anyhow::ensure!(
        cert_dir.is_dir(),
        "--cert {shown}: no such directory (it holds a client certificate, as `cuberoute cluster client-cert --out` writes one)"
    );
    for file in [&ca, &cert, &key] {
        anyhow::ensure!(
            file.is_file(),
            "--cert {shown}: {} is missing (a client certificate's directory holds ca.pem, client.pem and client.key)",
            file.display()
        );
    }
    let credentials =
        Credentials::load(&ca, &cert, &key).map_err(|e| anyhow::anyhow!("--cert {shown}: {e}"))?;
    if let Identity::Node(id) = &credentials.identity {
        anyhow::bail!(
            "--cert {shown}: {} is node {id}'s certificate, not a client's",
            cert.display()
        );
    }
    tls::verify_client(&credentials.ca, credentials.certificate()).map_err(|e| {
        anyhow::anyhow!(
            "--cert {shown}: {} is not signed by the CA beside it ({e})",
            cert.display()
        )
    })?;
    let cluster_ca = dir.ca_cert();
    if cluster_ca.is_file() {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        let roots = CertificateDer::pem_file_iter(&cluster_ca)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", cluster_ca.display()))?;
        tls::verify_client(&roots, credentials.certificate()).map_err(|_| {
            anyhow::anyhow!(
                "--cert {shown}: the certificate is not signed by the CA of the cluster in {} (a certificate of another cluster?)",
                dir.display()
            )
        })?;
    }
    Ok(credentials)
}

/// Sign `message` with the CA key kept in PEM (a cluster directory's `ca.key`).
pub fn sign_with_pem(ca_key_pem: &str, message: &[u8]) -> anyhow::Result<Vec<u8>> {
    let key = KeyPair::from_pem(ca_key_pem)
        .map_err(|e| anyhow::anyhow!("the CA key does not read: {e}"))?;
    sign_with(&key.serialize_der(), message).map_err(|e| anyhow::anyhow!("the CA key: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuberoute_daemon::roles::Role;
    use cuberoute_daemon::tls::{Credentials, Identity};

    #[test]
    fn a_loaded_ca_issues_role_certificates_its_cluster_verifies() {
        let ca = ClusterCa::generate("q:2").unwrap();
        let other = ClusterCa::generate("q:2").unwrap();
        let loaded = LoadedCa::from_pem(&ca.cert_pem(), &ca.key_pem()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let role = ClientRole::new(Role::Send, Some(vec![NodeId(1), NodeId(3)])).unwrap();
        let pem = loaded.issue_role(&role).unwrap();
        let path = |f: &str| tmp.path().join(f);
        std::fs::write(path("ca.pem"), ca.cert_pem()).unwrap();
        std::fs::write(path("other.pem"), other.cert_pem()).unwrap();
        std::fs::write(path("c.pem"), &pem.cert).unwrap();
        std::fs::write(path("c.key"), &pem.key).unwrap();
        let credentials =
            Credentials::load(&path("ca.pem"), &path("c.pem"), &path("c.key")).unwrap();
        assert_eq!(credentials.identity, Identity::Client(role));
        let roots = |p: &str| {
            Credentials::load(&path(p), &path("c.pem"), &path("c.key"))
                .unwrap()
                .ca
        };
        let cert = credentials.certificate();
        assert_eq!(
            cuberoute_daemon::tls::verify_client(&roots("ca.pem"), cert),
            Ok(())
        );
        assert!(cuberoute_daemon::tls::verify_client(&roots("other.pem"), cert).is_err());
        // The operator's certificate keeps every role.
        let operator = ca.issue_client().unwrap();
        std::fs::write(path("o.pem"), &operator.cert).unwrap();
        std::fs::write(path("o.key"), &operator.key).unwrap();
        let credentials =
            Credentials::load(&path("ca.pem"), &path("o.pem"), &path("o.key")).unwrap();
        assert_eq!(credentials.identity, Identity::Client(ClientRole::OPERATOR));
    }
}
