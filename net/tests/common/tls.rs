//! A self-signed certificate for `localhost` and the rustls configurations around it.

use std::sync::Arc;

use corering_net::tls::rustls::{self, pki_types};

/// The server and client configurations of one fresh self-signed certificate, with the
/// given ALPN protocols on each side.
pub fn configs(
    server_alpn: &[&[u8]],
    client_alpn: &[&[u8]],
) -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = certified.cert.der().clone();
    let key = pki_types::PrivateKeyDer::Pkcs8(pki_types::PrivatePkcs8KeyDer::from(
        certified.key_pair.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    server.alpn_protocols = server_alpn.iter().map(|p| p.to_vec()).collect();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = client_alpn.iter().map(|p| p.to_vec()).collect();
    (Arc::new(server), Arc::new(client))
}
