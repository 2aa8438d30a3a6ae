//! crud's cache: item JSON kept for 200 ms (HttpArena's absolute TTL), in Redis when
//! `REDIS_URL` is set (one redis-rs multiplexed connection per core), otherwise in a map the
//! cores share.
//!
//! redis-rs's async client needs a `Send` stream and a runtime feature (`tokio-comp`); on
//! this runtime [`connect`] opens the socket itself (a `corering_net::TcpStream`, `!Send`:
//! it belongs to its core), hands it to redis-rs inside a [`SendWrapper`] (which checks at
//! run time that only the core's own thread touches it), runs the connection's driver as a
//! task of that core, and turns redis-rs's response timeout off: that timeout is redis-rs's
//! one call into tokio's timer, which does not exist in this process.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo};
use send_wrapper::SendWrapper;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long a cached item lives, from when it was cached.
pub const TTL: Duration = Duration::from_millis(200);

/// Where cached items live.
#[derive(Clone)]
pub enum Cache {
    /// Redis, through one multiplexed connection (per core on this runtime).
    Redis(MultiplexedConnection),
    /// A map in this process, shared by every core.
    Memory(Arc<Memory>),
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cache::Redis(_) => "Cache::Redis",
            Cache::Memory(_) => "Cache::Memory",
        })
    }
}

fn redis_error(e: redis::RedisError) -> io::Error {
    io::Error::other(format!("redis: {e}"))
}

impl Cache {
    /// The value under `key` if it has not expired.
    ///
    /// # Errors
    /// Redis's error (the connection lost, say).
    pub async fn get(&self, key: &str) -> io::Result<Option<Bytes>> {
        match self {
            Cache::Redis(conn) => {
                let value: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(key)
                    .query_async(&mut conn.clone())
                    .await
                    .map_err(redis_error)?;
                Ok(value.map(Bytes::from))
            }
            Cache::Memory(memory) => Ok(memory.get(key)),
        }
    }

    /// Keeps `value` under `key` for [`TTL`].
    ///
    /// # Errors
    /// Redis's error.
    pub async fn set(&self, key: &str, value: Bytes) -> io::Result<()> {
        match self {
            Cache::Redis(conn) => redis::cmd("SET")
                .arg(key)
                .arg(&value[..])
                .arg("PX")
                .arg(TTL.as_millis() as u64)
                .exec_async(&mut conn.clone())
                .await
                .map_err(redis_error),
            Cache::Memory(memory) => {
                memory.set(key, value);
                Ok(())
            }
        }
    }

    /// Forgets `key`.
    ///
    /// # Errors
    /// Redis's error.
    pub async fn remove(&self, key: &str) -> io::Result<()> {
        match self {
            Cache::Redis(conn) => redis::cmd("DEL")
                .arg(key)
                .exec_async(&mut conn.clone())
                .await
                .map_err(redis_error),
            Cache::Memory(memory) => {
                memory.remove(key);
                Ok(())
            }
        }
    }
}

/// The in-process cache: entries with their expiry, expired ones dropped when read and
/// swept when the map grows past [`Memory::SWEEP_AT`] entries.
#[derive(Debug, Default)]
pub struct Memory {
    map: Mutex<HashMap<String, (Instant, Bytes)>>,
}

impl Memory {
    /// The size at which a `set` first drops every expired entry.
    pub const SWEEP_AT: usize = 100_000;

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Bytes)>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, key: &str) -> Option<Bytes> {
        let mut map = self.map();
        match map.get(key) {
            Some((expires, value)) if *expires > Instant::now() => Some(value.clone()),
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    fn set(&self, key: &str, value: Bytes) {
        let now = Instant::now();
        let mut map = self.map();
        if map.len() >= Memory::SWEEP_AT {
            map.retain(|_, (expires, _)| *expires > now);
        }
        map.insert(key.to_owned(), (now + TTL, value));
    }

    fn remove(&self, key: &str) {
        self.map().remove(key);
    }
}

/// A socket of this runtime seen as `Send` by redis-rs: every use checks that it is on the
/// thread that made it (a panic otherwise, which cannot happen here: the only user is the
/// connection's driver, a task of that thread's core).
struct OnCore<S>(SendWrapper<S>);

impl<S: AsyncRead + Unpin> AsyncRead for OnCore<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for OnCore<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

/// Opens a redis-rs multiplexed connection to `url` (`redis://host:port[/db]`) over this
/// runtime's TCP, for this core; its driver runs as a task of this core until the
/// connection closes.
///
/// # Errors
/// A URL that is not a TCP Redis URL (`InvalidInput`), the connect's error, or Redis's
/// answer to the handshake.
pub async fn connect(url: &str) -> io::Result<MultiplexedConnection> {
    let info = url.into_connection_info().map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("REDIS_URL {url}: {e}"))
    })?;
    let ConnectionAddr::Tcp(host, port) = info.addr() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("REDIS_URL {url}: only redis:// over TCP is supported"),
        ));
    };
    let stream = corering_net::TcpStream::connect((host.as_str(), *port)).await?;
    stream.set_nodelay(true)?;
    let config = AsyncConnectionConfig::new().set_response_timeout(None);
    let (conn, driver) = MultiplexedConnection::new_with_config(
        info.redis_settings(),
        OnCore(SendWrapper::new(stream)),
        config,
    )
    .await
    .map_err(redis_error)?;
    drop(runtime::spawn_local(driver));
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_expires_and_forgets() {
        let m = Memory::default();
        m.set("a", Bytes::from_static(b"1"));
        assert_eq!(m.get("a").as_deref(), Some(&b"1"[..]));
        m.remove("a");
        assert!(m.get("a").is_none());
        m.set("b", Bytes::from_static(b"2"));
        std::thread::sleep(TTL + Duration::from_millis(20));
        assert!(m.get("b").is_none(), "expired after the TTL");
        assert!(m.map().is_empty(), "an expired entry is dropped when read");
    }
}
