//! TLS on rustls (the `tls` feature): [`TlsAcceptor`] and [`TlsConnector`] wrap any stream of
//! this crate (or anything with the futures-io traits) in a [`TlsStream`], which has the same
//! traits as a [`TcpStream`](crate::TcpStream): futures-io's `AsyncRead`, `AsyncBufRead` and
//! `AsyncWrite`, tokio's under the `tokio-io` feature, and so [`HyperIo`] for hyper.
//!
//! The record layer is rustls through `futures-rustls`, with rustls's `ring` crypto provider.
//! rustls is re-exported as [`rustls`] so that configurations are built against the same
//! version. Every byte still moves through the ring: the TLS stream reads and writes its
//! inner stream through the inner stream's own buffers and ops.
//!
//! A handshake has a deadline ([`TlsAcceptor::handshake_timeout`], 10 s by default): a peer
//! that stops mid-handshake gets `TimedOut`, and dropping the error drops the socket.
//!
//! ALPN is set in the rustls configuration (`alpn_protocols`, e.g. `h2` and `http/1.1`); the
//! protocol agreed is [`TlsStream::alpn_protocol`].
//!
//! [`HyperIo`]: crate::hyper::HyperIo
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use corering_net::tls::rustls::pki_types::pem::PemObject;
//! use corering_net::tls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
//! use corering_net::tls::{rustls, TlsAcceptor};
//!
//! # #[runtime::main]
//! # async fn main() -> std::io::Result<()> {
//! let certs = CertificateDer::pem_file_iter("cert.pem")
//!     .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
//!     .map_err(std::io::Error::other)?;
//! let key = PrivateKeyDer::from_pem_file("key.pem").map_err(std::io::Error::other)?;
//! let provider = Arc::new(rustls::crypto::ring::default_provider());
//! let mut config = rustls::ServerConfig::builder_with_provider(provider)
//!     .with_safe_default_protocol_versions()
//!     .map_err(std::io::Error::other)?
//!     .with_no_client_auth()
//!     .with_single_cert(certs, key)
//!     .map_err(std::io::Error::other)?;
//! config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
//! let acceptor = TlsAcceptor::new(Arc::new(config));
//! let listener = corering_net::TcpListener::bind("127.0.0.1:8443")?;
//! let (stream, _peer) = listener.accept().await?;
//! let tls = acceptor.accept(stream).await?;
//! println!("ALPN: {:?}", tls.alpn_protocol());
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures::io::{AsyncBufRead, AsyncRead, AsyncWrite};
pub use futures_rustls::rustls;
use rustls::pki_types::ServerName;

/// How long a handshake may take unless set otherwise.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The plaintext read buffer of `AsyncBufRead`: one TLS record's largest payload.
const READ_CAP: usize = 16 * 1024;

/// Accepts TLS connections: the server side of the handshake, with a deadline.
#[derive(Clone)]
pub struct TlsAcceptor {
    inner: futures_rustls::TlsAcceptor,
    handshake_timeout: Duration,
}

impl TlsAcceptor {
    /// An acceptor for `config` (its certificate, key and ALPN protocols), with a 10 s
    /// handshake deadline.
    pub fn new(config: Arc<rustls::ServerConfig>) -> TlsAcceptor {
        TlsAcceptor {
            inner: futures_rustls::TlsAcceptor::from(config),
            handshake_timeout: HANDSHAKE_TIMEOUT,
        }
    }

    /// Sets how long a handshake may take before it fails with `TimedOut`.
    pub fn handshake_timeout(mut self, timeout: Duration) -> TlsAcceptor {
        self.handshake_timeout = timeout;
        self
    }

    /// Runs the server side of the handshake on `stream`.
    ///
    /// # Errors
    /// `TimedOut` past the deadline; `InvalidData` (from rustls) for a malformed or refused
    /// handshake; the stream's own errors.
    pub async fn accept<S>(&self, stream: S) -> io::Result<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let accept = self.inner.accept(stream);
        handshake(self.handshake_timeout, accept, || {
            "TLS handshake (server)".into()
        })
        .await
    }
}

impl fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

/// Opens TLS connections: the client side of the handshake, with a deadline.
#[derive(Clone)]
pub struct TlsConnector {
    inner: futures_rustls::TlsConnector,
    handshake_timeout: Duration,
}

impl TlsConnector {
    /// A connector for `config` (its root certificates and ALPN protocols), with a 10 s
    /// handshake deadline.
    pub fn new(config: Arc<rustls::ClientConfig>) -> TlsConnector {
        TlsConnector {
            inner: futures_rustls::TlsConnector::from(config),
            handshake_timeout: HANDSHAKE_TIMEOUT,
        }
    }

    /// Sets how long a handshake may take before it fails with `TimedOut`.
    pub fn handshake_timeout(mut self, timeout: Duration) -> TlsConnector {
        self.handshake_timeout = timeout;
        self
    }

    /// Runs the client side of the handshake on `stream`, checking the server's certificate
    /// against `server_name` (a DNS name or an IP address).
    ///
    /// # Errors
    /// `InvalidInput` if `server_name` is neither; `TimedOut` past the deadline;
    /// `InvalidData` (from rustls) for a certificate that does not verify or a refused
    /// handshake; the stream's own errors.
    pub async fn connect<S>(&self, server_name: &str, stream: S) -> io::Result<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let name = ServerName::try_from(server_name.to_owned()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TLS server name {server_name:?}: {e}"),
            )
        })?;
        let connect = self.inner.connect(name, stream);
        handshake(self.handshake_timeout, connect, || {
            format!("TLS handshake with {server_name}")
        })
        .await
    }
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnector")
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

/// Runs a handshake under its deadline; errors say which (`what`), keeping their kind, and
/// a late one is `TimedOut`.
async fn handshake<S, T>(
    deadline: Duration,
    handshake: impl std::future::Future<Output = io::Result<T>>,
    what: impl FnOnce() -> String,
) -> io::Result<TlsStream<S>>
where
    T: Into<futures_rustls::TlsStream<S>>,
{
    match runtime::time::timeout(deadline, handshake).await {
        Ok(Ok(s)) => Ok(TlsStream::new(s.into())),
        Ok(Err(e)) => Err(runtime::ext::error_context(e, what())),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{} took longer than {deadline:?}", what()),
        )),
    }
}

/// A TLS connection over `S`, client or server side: usable wherever a
/// [`TcpStream`](crate::TcpStream) is (the futures-io traits, tokio's under `tokio-io`,
/// [`HyperIo`](crate::hyper::HyperIo)).
///
/// `AsyncRead` decrypts straight into the caller's buffer; `AsyncBufRead` (what `HyperIo`
/// uses) decrypts into a 16 KiB buffer allocated on its first use. Close
/// (`poll_close`) before dropping to send the peer a `close_notify` and flush what was
/// written.
pub struct TlsStream<S> {
    inner: futures_rustls::TlsStream<S>,
    /// Decrypted bytes `buf[pos..len]` not yet consumed (`AsyncBufRead`).
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
}

impl<S> TlsStream<S> {
    fn new(inner: futures_rustls::TlsStream<S>) -> TlsStream<S> {
        TlsStream {
            inner,
            buf: Box::default(),
            pos: 0,
            len: 0,
        }
    }

    /// The stream underneath.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref().0
    }

    /// The stream underneath, mutably (writing to it directly corrupts the TLS session).
    pub fn get_mut(&mut self) -> &mut S {
        self.inner.get_mut().0
    }

    /// The rustls connection state: negotiated version, cipher suite, peer certificates.
    pub fn connection(&self) -> &rustls::CommonState {
        self.inner.get_ref().1
    }

    /// The application protocol agreed by ALPN (e.g. `b"h2"`), if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.connection().alpn_protocol()
    }

    /// The server name the client sent (SNI); on the server side only.
    pub fn server_name(&self) -> Option<&str> {
        match &self.inner {
            futures_rustls::TlsStream::Server(s) => s.get_ref().1.server_name(),
            futures_rustls::TlsStream::Client(_) => None,
        }
    }

    /// Decrypted bytes buffered by `AsyncBufRead` and not yet consumed.
    fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..self.len]
    }

    fn consume_buffered(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.len);
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream<S> {
    /// Decrypted bytes, decrypting more into the buffer first if none are buffered; empty at
    /// end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        if self.pos >= self.len {
            if self.buf.is_empty() {
                self.buf = vec![0u8; READ_CAP].into_boxed_slice();
            }
            let n = ready!(Pin::new(&mut self.inner).poll_read(cx, &mut self.buf))?;
            self.pos = 0;
            self.len = n;
        }
        Poll::Ready(Ok(self.buffered()))
    }

    /// Copies buffered bytes into `out`, or decrypts straight into it if none are buffered.
    fn poll_read_slice(&mut self, cx: &mut Context<'_>, out: &mut [u8]) -> Poll<io::Result<usize>> {
        if self.pos < self.len {
            let avail = self.buffered();
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            self.consume_buffered(n);
            return Poll::Ready(Ok(n));
        }
        Pin::new(&mut self.inner).poll_read(cx, out)
    }
}

impl<S: fmt::Debug> fmt::Debug for TlsStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsStream")
            .field("inner", self.get_ref())
            .field("alpn_protocol", &self.alpn_protocol())
            .field("buffered", &(self.len - self.pos))
            .finish()
    }
}

impl<S: std::os::fd::AsRawFd> std::os::fd::AsRawFd for TlsStream<S> {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.get_ref().as_raw_fd()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_read_slice(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncBufRead for TlsStream<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_mut().poll_fill(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().consume_buffered(amt);
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

#[cfg(feature = "tokio-io")]
impl<S: AsyncRead + AsyncWrite + Unpin> tokio::io::AsyncRead for TlsStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let this = self.get_mut();
        let n = ready!(this.poll_read_slice(cx, buf.initialize_unfilled()))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "tokio-io")]
impl<S: AsyncRead + AsyncWrite + Unpin> tokio::io::AsyncBufRead for TlsStream<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_mut().poll_fill(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().consume_buffered(amt);
    }
}

#[cfg(feature = "tokio-io")]
impl<S: AsyncRead + AsyncWrite + Unpin> tokio::io::AsyncWrite for TlsStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        AsyncWrite::poll_write(self, cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        AsyncWrite::poll_write_vectored(self, cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        AsyncWrite::poll_flush(self, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        AsyncWrite::poll_close(self, cx)
    }
}
