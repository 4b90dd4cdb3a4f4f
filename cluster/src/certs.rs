//! The cluster's own certificate authority, and the certificates it issues: one per node (named
//! as `cuberoute_daemon::tls::node_name` says, usable as TLS server and client), and one for
//! clients.

use cuberoute_daemon::tls::{CLIENT_NAME, node_name};
use cuberoute_protocol::NodeId;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
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

    fn issue(
        &self,
        name: String,
        common_name: String,
        usages: Vec<ExtendedKeyUsagePurpose>,
    ) -> Result<Pem, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![name])?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = usages;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }

    /// A node's certificate: a server when it accepts a link, a client when it dials one.
    pub fn issue_node(&self, id: NodeId) -> Result<Pem, rcgen::Error> {
        self.issue(
            node_name(id),
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

    /// The clients' certificate.
    pub fn issue_client(&self) -> Result<Pem, rcgen::Error> {
        self.issue(
            CLIENT_NAME.to_string(),
            "cuberoute client".to_string(),
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        )
    }
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

/// Sign `message` with the CA key kept in PEM (a cluster directory's `ca.key`).
pub fn sign_with_pem(ca_key_pem: &str, message: &[u8]) -> anyhow::Result<Vec<u8>> {
    let key = KeyPair::from_pem(ca_key_pem)
        .map_err(|e| anyhow::anyhow!("the CA key does not read: {e}"))?;
    sign_with(&key.serialize_der(), message).map_err(|e| anyhow::anyhow!("the CA key: {e}"))
}
