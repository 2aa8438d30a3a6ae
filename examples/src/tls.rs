//! TLS set-up shared by `axum`, `axum-tokio` and `http-client`: rustls (through
//! [`corering_net::tls::rustls`]) with the `ring` provider, certificates and keys read from PEM, and a
//! self-signed certificate for `localhost` and `127.0.0.1` made at startup with rcgen.

use std::io;
use std::sync::Arc;

use corering_net::tls::rustls;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The names the self-signed certificate is good for.
pub const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// rustls's `ring` provider (the only one built: no aws-lc-rs).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server's certificate chain and key.
#[derive(Debug)]
pub struct Identity {
    /// The chain, leaf first.
    pub certs: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
    /// The certificate in PEM when it was made here (self-signed), for clients to trust.
    pub self_signed_pem: Option<String>,
}

impl Identity {
    /// Reads the chain from `cert` and the key from `key` (PEM files).
    ///
    /// # Errors
    /// A file that cannot be read, or holds no certificate or no key.
    pub fn from_pem_files(cert: &str, key: &str) -> io::Result<Identity> {
        let certs = read_certs(cert)?;
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{key}: {e}")))?;
        Ok(Identity {
            certs,
            key,
            self_signed_pem: None,
        })
    }

    /// A fresh self-signed certificate for [`SELF_SIGNED_NAMES`] (rcgen, ECDSA P-256).
    ///
    /// # Errors
    /// If rcgen fails (it should not).
    pub fn self_signed() -> io::Result<Identity> {
        let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|s| s.to_string()).collect();
        let rcgen::CertifiedKey { cert, key_pair } =
            rcgen::generate_simple_self_signed(names).map_err(io::Error::other)?;
        Ok(Identity {
            certs: vec![cert.der().clone()],
            key: PrivatePkcs8KeyDer::from(key_pair.serialize_der()).into(),
            self_signed_pem: Some(cert.pem()),
        })
    }

    /// `--cert` and `--key` if both are given, else a self-signed certificate.
    ///
    /// # Errors
    /// As [`from_pem_files`](Identity::from_pem_files); one of the two given without the
    /// other.
    pub fn from_args(cert: Option<&str>, key: Option<&str>) -> io::Result<Identity> {
        match (cert, key) {
            (Some(c), Some(k)) => Identity::from_pem_files(c, k),
            (None, None) => Identity::self_signed(),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--cert and --key go together",
            )),
        }
    }

    /// Writes the self-signed certificate (PEM) to `path`, for clients to trust
    /// (`curl --cacert`, `http-client --cacert`).
    ///
    /// # Errors
    /// Not self-signed here (read from files), or the file cannot be written.
    pub fn save_self_signed(&self, path: &str) -> io::Result<()> {
        let Some(pem) = &self.self_signed_pem else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only a self-signed certificate made here can be saved (not one from --cert)",
            ));
        };
        std::fs::write(path, pem).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
    }

    /// A server configuration for this identity: TLS 1.2 and 1.3, no client certificates,
    /// ALPN `h2` then `http/1.1`.
    ///
    /// # Errors
    /// A key that does not match the certificate, or of a kind rustls does not take.
    pub fn server_config(self) -> io::Result<Arc<rustls::ServerConfig>> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(self.certs, self.key)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Every certificate in the PEM file `path`.
///
/// # Errors
/// A file that cannot be read or parsed, or holds no certificate.
pub fn read_certs(path: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    let bad = |e: rustls::pki_types::pem::Error| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {e}"))
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(bad)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    if certs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: no certificate in it"),
        ));
    }
    Ok(certs)
}
