//! An HTTP client on `corering_net::hyper::Client`: fetches URLs over HTTP/1.1, h2c
//! (`--http2-prior-knowledge`) and HTTPS (h2 or http/1.1 by ALPN, rustls with `ring`),
//! `-n` times each on one client, and says how many connections it opened (1 per origin when
//! connections are reused).
//!
//! `cargo run --release -p examples --bin http-client -- -n 5 http://127.0.0.1:8080/`, or
//! `http-client -k --body https://127.0.0.1:8443/json` against `axum --tls-port 8443`.
//! Exits 1 if any request failed or got a status outside 2xx (unless `--ignore-status`).

use std::io;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use corering_net::hyper::Client;
use corering_net::tls::{rustls, TlsConnector};
use examples::args::Args;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

const USAGE: &str = "\
http-client: fetch URLs with corering_net::hyper::Client on io_uring (HTTP/1.1, h2c, HTTPS)

usage: http-client [options] URL...

  -n N                      requests per URL, one after another, on one client
                            (default 1)
  -X, --method METHOD       the request method (default GET; POST with --data)
  -d, --data DATA           the request body; @FILE reads it from FILE
  --http2-prior-knowledge   HTTP/2 to http:// URLs without asking first (h2c)
  --http1.1                 offer only http/1.1 by ALPN to https:// URLs (default:
                            h2, then http/1.1)
  -k, --insecure            accept any server certificate for https:// URLs (the
                            handshake's signatures are still checked)
  --cacert FILE             trust the certificates in FILE (PEM); default: the
                            system's bundle, /etc/ssl/certs/ca-certificates.crt
  --body                    print each response body after its status line
  --ignore-status           a status outside 2xx is no failure
  --timeout SECS            limit for each request, body included (default 10)
  -h, --help                this text

Prints one line per request (method, URL, status, HTTP version, body length) and, at the
end, `connections opened: K`. Exits 1 if any request failed or got a status outside 2xx.
";

/// The system's CA bundle (Debian's path), used without `--cacert` or `--insecure`.
const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt";

struct Options {
    urls: Vec<hyper::Uri>,
    requests: u32,
    method: Method,
    data: Bytes,
    body: bool,
    ignore_status: bool,
    timeout: Duration,
}

fn main() -> ExitCode {
    // Short flags, as curl spells them, to the long ones the parser knows.
    let argv = std::env::args().skip(1).map(|a| {
        match a.as_str() {
            "-n" => "--requests",
            "-X" => "--method",
            "-d" => "--data",
            "-k" => "--insecure",
            _ => return a,
        }
        .to_string()
    });
    let args = Args::parse_from(
        USAGE,
        &["requests", "method", "data", "cacert", "timeout"],
        &[
            "http2-prior-knowledge",
            "http1.1",
            "insecure",
            "body",
            "ignore-status",
        ],
        argv,
    );
    let urls: Vec<hyper::Uri> = args
        .positional()
        .iter()
        .map(|u| {
            u.parse()
                .unwrap_or_else(|e| args.usage_error(format!("URL {u:?}: {e}")))
        })
        .collect();
    if urls.is_empty() {
        args.usage_error("no URL");
    }
    let data = match args.string("data") {
        None => Bytes::new(),
        Some(d) => match d.strip_prefix('@') {
            Some(path) => match std::fs::read(path) {
                Ok(b) => Bytes::from(b),
                Err(e) => args.usage_error(format!("--data @{path}: {e}")),
            },
            None => Bytes::from(d.to_owned()),
        },
    };
    let default_method = if args.string("data").is_some() {
        "POST"
    } else {
        "GET"
    };
    let method = args
        .string("method")
        .unwrap_or(default_method)
        .parse()
        .unwrap_or_else(|e| args.usage_error(format!("--method: {e}")));
    let opts = Options {
        urls,
        requests: args.value("requests", 1u32),
        method,
        data,
        body: args.switch("body"),
        ignore_status: args.switch("ignore-status"),
        timeout: Duration::try_from_secs_f64(args.value("timeout", 10.0))
            .unwrap_or_else(|e| args.usage_error(format!("--timeout: {e}"))),
    };
    let tls = match tls_connector(
        args.switch("insecure"),
        args.string("cacert"),
        args.switch("http1.1"),
    ) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("http-client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let client: Client<Full<Bytes>> = Client::builder()
        .http2_prior_knowledge(args.switch("http2-prior-knowledge"))
        .tls(tls)
        .build();
    match examples::run(1, fetch_all(client, opts)) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("http-client: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every request of every URL in turn; the number that failed.
async fn fetch_all(client: Client<Full<Bytes>>, opts: Options) -> io::Result<u32> {
    let mut failed = 0;
    for url in &opts.urls {
        for _ in 0..opts.requests {
            let what = format!("{} {url}", opts.method);
            match runtime::time::timeout(opts.timeout, fetch(&client, url, &opts)).await {
                Ok(Ok((status, version, body))) => {
                    println!("{what}: {status}, {version:?}, {} bytes", body.len());
                    if opts.body {
                        println!("{}", String::from_utf8_lossy(&body));
                    }
                    if !status.is_success() && !opts.ignore_status {
                        failed += 1;
                    }
                }
                Ok(Err(e)) => {
                    eprintln!("{what}: {e}");
                    failed += 1;
                }
                Err(_) => {
                    eprintln!("{what}: no complete response within {:?}", opts.timeout);
                    failed += 1;
                }
            }
        }
    }
    println!("connections opened: {}", client.connections_opened());
    Ok(failed)
}

/// One request: its status, HTTP version and whole body.
async fn fetch(
    client: &Client<Full<Bytes>>,
    url: &hyper::Uri,
    opts: &Options,
) -> io::Result<(hyper::StatusCode, hyper::Version, Bytes)> {
    let req = Request::builder()
        .method(opts.method.clone())
        .uri(url.clone())
        .body(Full::new(opts.data.clone()))
        .map_err(io::Error::other)?;
    let res = client.request(req).await?;
    let (status, version) = (res.status(), res.version());
    let body = res.into_body().collect().await.map_err(io::Error::other)?;
    Ok((status, version, body.to_bytes()))
}

/// The TLS side: which servers to trust, and what to offer by ALPN.
fn tls_connector(
    insecure: bool,
    cacert: Option<&str>,
    http1_only: bool,
) -> io::Result<TlsConnector> {
    let provider = examples::tls::provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        match cacert {
            Some(path) => {
                for cert in examples::tls::read_certs(path)? {
                    roots.add(cert).map_err(|e| {
                        io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {e}"))
                    })?;
                }
            }
            // The system bundle if there is one; without it only --insecure or --cacert
            // reach an https:// URL.
            None => {
                if let Ok(certs) = examples::tls::read_certs(SYSTEM_CAS) {
                    roots.add_parsable_certificates(certs);
                }
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = if http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    Ok(TlsConnector::new(Arc::new(config)))
}

/// `--insecure`: any certificate chain and name are accepted, but the server must still
/// prove it holds the certificate's key (the handshake signatures are verified with the
/// provider's algorithms), so the connection is encrypted to whoever holds that key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
