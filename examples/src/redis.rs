//! A Redis-protocol key-value server: the store, the commands, and the connection loop.
//!
//! Commands: `PING`, `ECHO`, `GET`, `SET` (with `EX`, `PX`, `NX`, `XX`), `DEL`, `INCR`,
//! `EXISTS`, `MGET`, `MSET`, plus `QUIT`, `COMMAND` (an empty list) and `CONFIG GET` (the
//! `save` and `appendonly` settings `redis-benchmark` asks for). Replies are what
//! `redis-server` sends.
//!
//! The store is sharded: keys hash to one of [`SHARDS`] maps, each behind its own mutex, so
//! cores contend only on the same shard. `MSET` and `MGET` are per key, not atomic across
//! shards. Keys with a TTL expire when read after their deadline, and a sweep
//! ([`Store::sweep`]) removes the ones nobody reads.
//!
//! A connection answers every whole request in each received chunk (pipelining) and sends
//! all the replies with one write; it holds no buffer while idle (see [`serve_connection`]).
//! Its input never grows past [`MAX_REQUEST`](crate::resp::MAX_REQUEST) and its output is
//! sent once it passes [`FLUSH_AT`]; on a protocol error it replies
//! `-ERR Protocol error: ...` and closes.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::resp::{self, Parsed, MAX_REQUEST};

/// How many shards the store has.
pub const SHARDS: usize = 64;
/// Replies are sent once this many bytes are waiting, even mid-batch.
pub const FLUSH_AT: usize = 256 * 1024;

/// FxHash (the rustc hasher): keys come from our own clients, and it is several times
/// cheaper than SipHash on short keys.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Map = HashMap<Box<[u8]>, Value, BuildHasherDefault<FxHasher>>;

struct Value {
    data: Box<[u8]>,
    expires: Option<Instant>,
}

impl Value {
    fn live(&self, now: &mut Option<Instant>) -> bool {
        match self.expires {
            None => true,
            Some(t) => t > *now.get_or_insert_with(Instant::now),
        }
    }
}

#[derive(Default)]
struct Shard {
    map: Map,
    /// Whether any key here may have a TTL (cleared by a sweep that finds none).
    has_ttl: bool,
}

impl Shard {
    /// The live value of `key`, removing it if it expired.
    fn get(&mut self, key: &[u8], now: &mut Option<Instant>) -> Option<&mut Value> {
        let live = self.map.get(key)?.live(now);
        if !live {
            self.map.remove(key);
            return None;
        }
        self.map.get_mut(key)
    }
}

/// The key space, shared by every core.
pub struct Store {
    shards: Box<[Mutex<Shard>]>,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("shards", &SHARDS).finish()
    }
}

impl Store {
    fn shard(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        let h = BuildHasherDefault::<FxHasher>::default().hash_one(key);
        // A panic while a shard was locked leaves a usable map: take it anyway.
        self.shards[(h >> 58) as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Removes every key whose TTL has passed; returns how many.
    pub fn sweep(&self) -> usize {
        let now = Instant::now();
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            if !shard.has_ttl {
                continue;
            }
            let before = shard.map.len();
            shard.map.retain(|_, v| v.expires.is_none_or(|t| t > now));
            removed += before - shard.map.len();
            shard.has_ttl = shard.map.values().any(|v| v.expires.is_some());
        }
        removed
    }

    /// Runs one request, appending its reply to `out`. `args` are ranges of `buf`.
    pub fn execute(&self, buf: &[u8], args: &[Range<usize>], out: &mut Vec<u8>) -> Action {
        let Some(name) = args.first() else {
            return Action::Continue;
        };
        let name = &buf[name.clone()];
        let arg = |i: usize| &buf[args[i].clone()];
        let n = args.len();
        let mut now = None;
        let is = |cmd: &str| name.eq_ignore_ascii_case(cmd.as_bytes());
        let arity = |out: &mut Vec<u8>| {
            let msg = format!(
                "wrong number of arguments for '{}' command",
                resp::printable(name).to_ascii_lowercase()
            );
            resp::error(out, &msg);
            Action::Continue
        };
        if is("GET") {
            if n != 2 {
                return arity(out);
            }
            match self.shard(arg(1)).get(arg(1), &mut now) {
                Some(v) => resp::bulk(out, &v.data),
                None => resp::null(out),
            }
        } else if is("SET") {
            if n < 3 {
                return arity(out);
            }
            self.set(&args[1..], buf, out);
        } else if is("PING") {
            match n {
                1 => resp::simple(out, "PONG"),
                2 => resp::bulk(out, arg(1)),
                _ => return arity(out),
            }
        } else if is("INCR") {
            if n != 2 {
                return arity(out);
            }
            self.incr(arg(1), out);
        } else if is("MSET") {
            if n < 3 || n % 2 != 1 {
                return arity(out);
            }
            for pair in args[1..].chunks_exact(2) {
                let (key, value) = (&buf[pair[0].clone()], &buf[pair[1].clone()]);
                self.shard(key).map.insert(
                    key.into(),
                    Value {
                        data: value.into(),
                        expires: None,
                    },
                );
            }
            resp::simple(out, "OK");
        } else if is("MGET") {
            if n < 2 {
                return arity(out);
            }
            resp::array(out, n - 1);
            for i in 1..n {
                match self.shard(arg(i)).get(arg(i), &mut now) {
                    Some(v) => resp::bulk(out, &v.data),
                    None => resp::null(out),
                }
            }
        } else if is("DEL") || is("EXISTS") {
            if n < 2 {
                return arity(out);
            }
            let del = is("DEL");
            let mut count = 0;
            for i in 1..n {
                let mut shard = self.shard(arg(i));
                if shard.get(arg(i), &mut now).is_some() {
                    count += 1;
                    if del {
                        shard.map.remove(arg(i));
                    }
                }
            }
            resp::integer(out, count);
        } else if is("ECHO") {
            if n != 2 {
                return arity(out);
            }
            resp::bulk(out, arg(1));
        } else if is("QUIT") {
            resp::simple(out, "OK");
            return Action::Close;
        } else if is("COMMAND") {
            resp::array(out, 0);
        } else if is("CONFIG") {
            if n != 3 || !arg(1).eq_ignore_ascii_case(b"GET") {
                resp::error(out, "only CONFIG GET <parameter> is supported");
                return Action::Continue;
            }
            let value: Option<&[u8]> = match arg(2).to_ascii_lowercase().as_slice() {
                b"save" => Some(b""),
                b"appendonly" => Some(b"no"),
                _ => None,
            };
            match value {
                Some(v) => {
                    resp::array(out, 2);
                    resp::bulk(out, &arg(2).to_ascii_lowercase());
                    resp::bulk(out, v);
                }
                None => resp::array(out, 0),
            }
        } else {
            let msg = format!("unknown command '{}'", resp::printable(name));
            resp::error(out, &msg);
        }
        Action::Continue
    }

    /// `SET key value [EX seconds | PX milliseconds] [NX | XX]`.
    fn set(&self, args: &[Range<usize>], buf: &[u8], out: &mut Vec<u8>) {
        let (key, value) = (&buf[args[0].clone()], &buf[args[1].clone()]);
        let mut ttl = None;
        let (mut nx, mut xx) = (false, false);
        let mut opts = args[2..].iter().map(|r| &buf[r.clone()]);
        while let Some(opt) = opts.next() {
            if opt.eq_ignore_ascii_case(b"NX") && !xx {
                nx = true;
            } else if opt.eq_ignore_ascii_case(b"XX") && !nx {
                xx = true;
            } else if (opt.eq_ignore_ascii_case(b"EX") || opt.eq_ignore_ascii_case(b"PX"))
                && ttl.is_none()
            {
                let unit_ms = if opt.eq_ignore_ascii_case(b"EX") {
                    1000
                } else {
                    1
                };
                let Some(n) = opts.next() else {
                    return resp::error(out, "syntax error");
                };
                match resp::parse_i64(n) {
                    Some(n) if n > 0 => {
                        ttl = Some(Duration::from_millis((n as u64).saturating_mul(unit_ms)));
                    }
                    _ => return resp::error(out, "invalid expire time in 'set' command"),
                }
            } else {
                return resp::error(out, "syntax error");
            }
        }
        let mut now = None;
        let expires = ttl.map(|d| {
            let now = *now.get_or_insert_with(Instant::now);
            // Past Instant's range is "never" in practice.
            now.checked_add(d)
                .unwrap_or(now + Duration::from_secs(100 * 365 * 86400))
        });
        let mut shard = self.shard(key);
        if nx || xx {
            let exists = shard.get(key, &mut now).is_some();
            if exists == nx {
                return resp::null(out);
            }
        }
        shard.has_ttl |= expires.is_some();
        shard.map.insert(
            key.into(),
            Value {
                data: value.into(),
                expires,
            },
        );
        resp::simple(out, "OK");
    }

    fn incr(&self, key: &[u8], out: &mut Vec<u8>) {
        let mut now = None;
        let mut shard = self.shard(key);
        let (current, expires) = match shard.get(key, &mut now) {
            None => (0, None),
            Some(v) => match resp::parse_i64(&v.data) {
                Some(n) => (n, v.expires),
                None => return resp::error(out, "value is not an integer or out of range"),
            },
        };
        let Some(next) = current.checked_add(1) else {
            return resp::error(out, "increment or decrement would overflow");
        };
        let mut data = Vec::with_capacity(20);
        resp::push_i64(&mut data, next);
        shard.map.insert(
            key.into(),
            Value {
                data: data.into(),
                expires,
            },
        );
        resp::integer(out, next);
    }
}

/// What the connection does after a request.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Action {
    /// Read the next request.
    Continue,
    /// Send the replies, then close (`QUIT`).
    Close,
}

/// Answers requests on `stream` until the peer closes, sends `QUIT`, sends something that
/// is not RESP, or a request larger than [`MAX_REQUEST`].
///
/// Reads chunks from the core's shared receive ring (`read_chunk`): an idle connection
/// holds no buffer. Whole requests are answered straight from the chunk; only a request
/// cut across chunks is copied, into `pending`, until it is whole. Replies collect in `out`
/// and go out in one write, which runs while the next chunk is awaited (pipelining); `out`
/// is freed once sent, so an idle connection holds none either.
pub async fn serve_connection(stream: corering_net::TcpStream, store: &Store) {
    let (mut reader, writer) = stream.into_split();
    let mut pending: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut args = Vec::new();
    loop {
        let read = reader.read_chunk();
        let chunk = if out.is_empty() {
            read.await
        } else {
            let (sent, read) = futures::join!(send(&writer, std::mem::take(&mut out)), read);
            if !sent {
                return;
            }
            read
        };
        let chunk = match chunk {
            Ok(c) if !c.is_empty() => c,
            _ => return,
        };
        // Whole requests straight from the chunk, unless a cut one waits in `pending`.
        let close = if pending.is_empty() {
            let Some((used, close)) = answer(&chunk, store, &mut args, &mut out, &writer).await
            else {
                return;
            };
            pending.extend_from_slice(&chunk[used..]);
            close
        } else {
            pending.extend_from_slice(&chunk);
            let Some((used, close)) = answer(&pending, store, &mut args, &mut out, &writer).await
            else {
                return;
            };
            pending.drain(..used);
            close
        };
        drop(chunk);
        if pending.is_empty() {
            // Free a buffer a cut request grew.
            pending = Vec::new();
        }
        if close || pending.len() >= MAX_REQUEST {
            if pending.len() >= MAX_REQUEST && !close {
                resp::error(&mut out, "Protocol error: request too large");
            }
            if !out.is_empty() && !send(&writer, out).await {
                return;
            }
            // FIN after the replies, so the peer reads them before the socket goes.
            let _ = writer.shutdown_socket(std::net::Shutdown::Write).await;
            return;
        }
    }
}

/// Answers every whole request at the start of `input` into `out` (sending it whenever it
/// passes [`FLUSH_AT`]): how many bytes were used and whether to close, or `None` if the
/// peer is gone.
async fn answer(
    input: &[u8],
    store: &Store,
    args: &mut Vec<Range<usize>>,
    out: &mut Vec<u8>,
    writer: &corering_net::tcp::OwnedWriteHalf,
) -> Option<(usize, bool)> {
    let mut start = 0;
    loop {
        match resp::parse(&input[start..], args) {
            Parsed::Request(len) => {
                let req = &input[start..start + len];
                let close = store.execute(req, args, out) == Action::Close;
                start += len;
                if out.len() >= FLUSH_AT && !send(writer, std::mem::take(out)).await {
                    return None;
                }
                if close {
                    return Some((start, true));
                }
            }
            Parsed::Incomplete => return Some((start, false)),
            Parsed::Error(msg) => {
                resp::error(out, msg);
                return Some((start, true));
            }
        }
    }
}

/// Sends `out` whole; `false` if the peer is gone.
async fn send(writer: &corering_net::tcp::OwnedWriteHalf, out: Vec<u8>) -> bool {
    writer.write_all_owned(out).await.0.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(store: &Store, req: &[u8]) -> Vec<u8> {
        let mut args = Vec::new();
        let mut out = Vec::new();
        let mut at = 0;
        while at < req.len() {
            match resp::parse(&req[at..], &mut args) {
                Parsed::Request(len) => {
                    store.execute(&req[at..at + len], &args, &mut out);
                    at += len;
                }
                other => panic!("{other:?}"),
            }
        }
        out
    }

    #[test]
    fn commands() {
        let s = Store::default();
        assert_eq!(run(&s, b"PING\r\n"), b"+PONG\r\n");
        assert_eq!(run(&s, b"GET k\r\n"), b"$-1\r\n");
        assert_eq!(run(&s, b"SET k v\r\nGET k\r\n"), b"+OK\r\n$1\r\nv\r\n");
        assert_eq!(run(&s, b"SET k w NX\r\nSET n 1 XX\r\n"), b"$-1\r\n$-1\r\n");
        assert_eq!(run(&s, b"INCR c\r\nINCR c\r\n"), b":1\r\n:2\r\n");
        assert_eq!(
            run(&s, b"INCR k\r\n"),
            b"-ERR value is not an integer or out of range\r\n"
        );
        assert_eq!(
            run(&s, b"MSET a 1 b 2\r\nMGET a x b\r\n"),
            b"+OK\r\n*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n"
        );
        assert_eq!(
            run(&s, b"EXISTS a b x\r\nDEL a x\r\nEXISTS a\r\n"),
            b":2\r\n:1\r\n:0\r\n"
        );
        assert_eq!(run(&s, b"echo hi\r\n"), b"$2\r\nhi\r\n");
        assert_eq!(
            run(&s, b"GET\r\n"),
            b"-ERR wrong number of arguments for 'get' command\r\n"
        );
        assert_eq!(run(&s, b"NOPE\r\n"), b"-ERR unknown command 'NOPE'\r\n");
        assert_eq!(
            run(&s, b"SET k v EX 0\r\n"),
            b"-ERR invalid expire time in 'set' command\r\n"
        );
        assert_eq!(run(&s, b"SET k v EX\r\n"), b"-ERR syntax error\r\n");
        assert_eq!(
            run(&s, b"CONFIG GET save\r\n"),
            b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n"
        );
    }

    #[test]
    fn ttl_expires() {
        let s = Store::default();
        assert_eq!(
            run(&s, b"SET t v PX 1\r\nSET u v PX 1\r\n"),
            b"+OK\r\n+OK\r\n"
        );
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(run(&s, b"GET t\r\n"), b"$-1\r\n");
        assert_eq!(s.sweep(), 1, "u expired unread");
        assert_eq!(s.sweep(), 0);
    }
}
