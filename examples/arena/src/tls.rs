//! The TLS listeners' configurations, from `TLS_CERT` and `TLS_KEY` (rustls, ring).

use std::io;
use std::path::Path;
use std::sync::Arc;

use corering_net::tls::rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A server configuration for the certificate chain in `cert` and the key in `key` (PEM),
/// offering `alpn` (most preferred first).
///
/// # Errors
/// A file that cannot be read or holds no certificate or key, or a key that does not fit
/// the certificate (each error names its file).
pub fn server_config(
    cert: &Path,
    key: &Path,
    alpn: &[&[u8]],
) -> io::Result<Arc<rustls::ServerConfig>> {
    let named = |path: &Path, e: &dyn std::fmt::Display| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| named(cert, &e))?;
    if certs.is_empty() {
        return Err(named(cert, &"no certificate"));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| named(key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .map_err(|e| named(key, &e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn httparena_certificate_loads_and_bad_paths_are_named() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("certs");
        let config =
            server_config(&dir.join("server.crt"), &dir.join("server.key"), &[b"h2"]).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
        let err =
            server_config(Path::new("/nonexistent.crt"), &dir.join("server.key"), &[]).unwrap_err();
        assert!(err.to_string().contains("/nonexistent.crt"), "{err}");
        let err = server_config(&dir.join("server.crt"), &dir.join("server.crt"), &[]).unwrap_err();
        assert!(err.to_string().contains("server.crt"), "{err}");
    }
}
