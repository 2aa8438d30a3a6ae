//! The harness of `net_error_kinds.rs`: a row is a socket state built step by step, run
//! once on std sockets and once on ours (made both ways, through every API), and every
//! outcome compared. See that file.

use std::io::{self, Read, Write};
use std::net::Shutdown as How;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net as unet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use corering_net::{TcpListener, TcpStream, UnixListener, UnixStream};
use futures::io::{AsyncReadExt as _, AsyncWriteExt as _};
use runtime::time::{sleep, timeout};
use runtime::Builder;

/// The most any one call may wait (a wrong row fails rather than hang).
const LIMIT: Duration = Duration::from_secs(20);
/// What a small write writes.
const DATA: &[u8] = b"hello";
/// A write far larger than what the socket buffers of both ends hold.
const BIG: usize = 64 << 20;

/// A call's outcome: its count, or its error's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Got {
    Ok(usize),
    Err(io::ErrorKind),
}

pub fn got(r: io::Result<usize>) -> Got {
    r.map_or_else(|e| Got::Err(e.kind()), Got::Ok)
}

fn got_unit(r: io::Result<()>) -> Got {
    got(r.map(|()| 0))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Tcp,
    Unix,
}

/// One step of a row: a call of ours (its outcome compared), or what the peer does.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// A read of up to 64 bytes.
    Read,
    /// A write of `DATA` (the traits' `write_all` and `flush`).
    Write,
    /// A shutdown (the traits' close/shutdown for `Write`).
    Shut(How),
    /// A write of `BIG` bytes while the peer goes with what it holds unread (once bytes
    /// reached it: our send is under way, stopped short), resetting on TCP.
    WriteWhilePeerGoes,
    /// The peer resets: `SO_LINGER` 0, then close.
    PeerReset,
    /// The peer closes.
    PeerDrop,
    /// The peer shuts a direction down.
    PeerShut(How),
}

/// Which calls of ours a row goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Futures,
    #[cfg(feature = "tokio-io")]
    Tokio,
    Owned,
}

const APIS: &[Api] = &[
    Api::Futures,
    #[cfg(feature = "tokio-io")]
    Api::Tokio,
    Api::Owned,
];

/// How our socket is made: accepted by our listener (a direct descriptor for TCP where the
/// kernel has them) or connected by our `connect`.
#[derive(Clone, Copy, Debug)]
enum Origin {
    Accepted,
    Connected,
}

/// A socket of either family.
enum Sock<T, U> {
    Tcp(T),
    Unix(U),
}

type Std = Sock<std::net::TcpStream, unet::UnixStream>;
type Ours = Sock<TcpStream, UnixStream>;

/// `$e` with `$s` bound to the socket, whichever family.
macro_rules! each {
    ($v:expr, $s:ident => $e:expr) => {
        match $v {
            Sock::Tcp($s) => $e,
            Sock::Unix($s) => $e,
        }
    };
}

impl<T: AsFd, U: AsFd> Sock<T, U> {
    fn fd(&self) -> BorrowedFd<'_> {
        each!(self, s => s.as_fd())
    }
}

/// One row: a family's state, built by `steps`; `want` is std's outcome of the last one.
pub struct Row {
    family: Family,
    name: &'static str,
    steps: &'static [Step],
    want: Got,
}

/// A path for a Unix socket, unique in this process.
pub fn sock_path() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("corering-kinds-{}-{n}.sock", std::process::id()))
}

/// Waits until `fd` polls with one of `events` (the peer's step has reached it).
fn wait_for(fd: BorrowedFd<'_>, events: libc::c_short) {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        // SAFETY: `p` is one live pollfd for the call.
        let r = unsafe { libc::poll(&mut p, 1, LIMIT.as_millis() as libc::c_int) };
        assert!(r > 0, "the state never reached our socket: poll {r}");
        if p.revents & events != 0 {
            return;
        }
    }
}

/// The bytes queued unread at `fd` (`FIONREAD`).
fn unread(fd: BorrowedFd<'_>) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to the live local `n`.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    assert_eq!(r, 0, "FIONREAD: {}", io::Error::last_os_error());
    n as usize
}

/// Does the peer's step `step` to `peer` (taken: it goes), then waits until `ours` shows it.
fn peer_step(step: Step, peer: &mut Option<Std>, ours: BorrowedFd<'_>) {
    let p = peer.as_ref().expect("the peer is still there");
    match step {
        Step::PeerReset => {
            socket2::SockRef::from(&p.fd())
                .set_linger(Some(Duration::ZERO))
                .unwrap();
            drop(peer.take());
            wait_for(ours, libc::POLLHUP);
        }
        Step::PeerDrop => {
            drop(peer.take());
            wait_for(ours, libc::POLLHUP | libc::POLLRDHUP);
        }
        Step::PeerShut(how) => {
            each!(p, s => s.shutdown(how)).unwrap();
            if how != How::Read {
                wait_for(ours, libc::POLLRDHUP);
            }
        }
        other => unreachable!("not a peer step: {other:?}"),
    }
}

/// The peer goes (reset on TCP) once bytes of ours reached it.
async fn go_when_reached(family: Family, peer: Std) {
    while unread(peer.fd()) == 0 {
        sleep(Duration::from_millis(1)).await;
    }
    if family == Family::Tcp {
        socket2::SockRef::from(&peer.fd())
            .set_linger(Some(Duration::ZERO))
            .unwrap();
    }
}

/// A connected std pair: (ours, the peer).
fn std_pair(family: Family) -> (Std, Std) {
    match family {
        Family::Tcp => {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (a, _) = l.accept().unwrap();
            (Sock::Tcp(a), Sock::Tcp(c))
        }
        Family::Unix => {
            let (a, b) = unet::UnixStream::pair().unwrap();
            (Sock::Unix(a), Sock::Unix(b))
        }
    }
}

/// Runs `row` on std sockets: the outcome of each call of ours.
fn run_std(row: &Row) -> Vec<Got> {
    let (mut ours, peer) = std_pair(row.family);
    each!(&ours, s => s.set_read_timeout(Some(LIMIT))).unwrap();
    let mut peer = Some(peer);
    let mut out = Vec::new();
    for &step in row.steps {
        let r = match step {
            Step::Read => got(each!(&mut ours, s => s.read(&mut [0u8; 64]))),
            Step::Write => got_unit(each!(&mut ours, s => s.write_all(DATA))),
            Step::Shut(how) => got_unit(each!(&ours, s => s.shutdown(how))),
            Step::WriteWhilePeerGoes => {
                let w = each!(&ours, s => s.try_clone().map(|c| -> Box<dyn Write + Send> {
                    Box::new(c)
                }))
                .unwrap();
                let writer = std::thread::spawn(move || {
                    let mut w = w;
                    got_unit(w.write_all(&vec![0x5a; BIG]))
                });
                let p = peer.take().expect("the peer is still there");
                while unread(p.fd()) == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                if row.family == Family::Tcp {
                    socket2::SockRef::from(&p.fd())
                        .set_linger(Some(Duration::ZERO))
                        .unwrap();
                }
                drop(p);
                writer.join().unwrap()
            }
            peer_only => {
                peer_step(peer_only, &mut peer, ours.fd());
                continue;
            }
        };
        out.push(r);
    }
    out
}

/// Our socket made as `origin` says, and its std peer.
async fn our_pair(family: Family, origin: Origin) -> (Ours, Std) {
    match (family, origin) {
        (Family::Tcp, Origin::Accepted) => {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (a, _) = l.accept().await.unwrap();
            (Sock::Tcp(a), Sock::Tcp(c))
        }
        (Family::Tcp, Origin::Connected) => {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            let (a, _) = l.accept().unwrap();
            (Sock::Tcp(c), Sock::Tcp(a))
        }
        (Family::Unix, Origin::Accepted) => {
            let path = sock_path();
            let l = UnixListener::bind(&path).unwrap();
            let c = unet::UnixStream::connect(&path).unwrap();
            let (a, _) = l.accept().await.unwrap();
            std::fs::remove_file(&path).unwrap();
            (Sock::Unix(a), Sock::Unix(c))
        }
        (Family::Unix, Origin::Connected) => {
            let path = sock_path();
            let l = unet::UnixListener::bind(&path).unwrap();
            let c = UnixStream::connect(&path).await.unwrap();
            let (a, _) = l.accept().unwrap();
            std::fs::remove_file(&path).unwrap();
            (Sock::Unix(c), Sock::Unix(a))
        }
    }
}

async fn our_read(s: &mut Ours, api: Api) -> Got {
    each!(s, s => match api {
        Api::Futures => got(s.read(&mut [0u8; 64]).await),
        #[cfg(feature = "tokio-io")]
        Api::Tokio => got(tokio::io::AsyncReadExt::read(s, &mut [0u8; 64]).await),
        Api::Owned => got(s.read_owned(vec![0u8; 64]).await.0),
    })
}

/// Writes `bytes`: the traits' `write_all` then `flush` (the error of a write-behind send
/// comes with either), or one `write_all_owned`.
async fn our_write(s: &mut Ours, api: Api, bytes: Vec<u8>) -> Got {
    each!(s, s => match api {
        Api::Futures => got_unit(async {
            s.write_all(&bytes).await?;
            s.flush().await
        }.await),
        #[cfg(feature = "tokio-io")]
        Api::Tokio => got_unit(async {
            tokio::io::AsyncWriteExt::write_all(s, &bytes).await?;
            tokio::io::AsyncWriteExt::flush(s).await
        }.await),
        Api::Owned => got_unit(s.write_all_owned(bytes).await.0),
    })
}

/// Shuts `how` down: the write direction through the traits' close (futures) or shutdown
/// (tokio), else `shutdown_socket`.
async fn our_shut(s: &mut Ours, api: Api, how: How) -> Got {
    each!(s, s => got_unit(match (api, how) {
        (Api::Futures, How::Write) => futures::io::AsyncWriteExt::close(s).await,
        #[cfg(feature = "tokio-io")]
        (Api::Tokio, How::Write) => tokio::io::AsyncWriteExt::shutdown(s).await,
        _ => s.shutdown_socket(how).await,
    }))
}

/// Runs `row` on our socket made as `origin` says, through `api`.
async fn run_ours(row: &Row, api: Api, origin: Origin) -> Vec<Got> {
    let (mut ours, peer) = our_pair(row.family, origin).await;
    let mut peer = Some(peer);
    let mut out = Vec::new();
    for &step in row.steps {
        let r = match step {
            Step::Read => our_read(&mut ours, api).await,
            Step::Write => our_write(&mut ours, api, DATA.to_vec()).await,
            Step::Shut(how) => our_shut(&mut ours, api, how).await,
            Step::WriteWhilePeerGoes => {
                let p = peer.take().expect("the peer is still there");
                let write = our_write(&mut ours, api, vec![0x5a; BIG]);
                futures::join!(write, go_when_reached(row.family, p)).0
            }
            peer_only => {
                peer_step(peer_only, &mut peer, ours.fd());
                continue;
            }
        };
        out.push(r);
    }
    out
}

/// Runs every row, std first (its last outcome must be the row's `want`), then ours made
/// both ways through every API; fails listing every row unlike std.
pub fn check(rows: &[Row]) {
    let rt = Builder::new().build().unwrap();
    let mut unlike = Vec::new();
    for row in rows {
        let theirs = run_std(row);
        assert_eq!(
            theirs.last(),
            Some(&row.want),
            "std's own outcome, {:?} {}: {theirs:?}",
            row.family,
            row.name
        );
        for origin in [Origin::Accepted, Origin::Connected] {
            for &api in APIS {
                let ours = rt.block_on(async {
                    timeout(LIMIT, run_ours(row, api, origin))
                        .await
                        .expect("a row waited too long")
                });
                let line = format!(
                    "{:?} {} ({origin:?}, {api:?}): std {theirs:?}, ours {ours:?}",
                    row.family, row.name
                );
                eprintln!("{line}");
                if ours != theirs {
                    unlike.push(line);
                }
            }
        }
    }
    assert!(unlike.is_empty(), "unlike std:\n{}", unlike.join("\n"));
}

/// A row of `family`: `steps`, whose last outcome on std sockets is `want`.
pub const fn row(family: Family, name: &'static str, steps: &'static [Step], want: Got) -> Row {
    Row {
        family,
        name,
        steps,
        want,
    }
}
