//! Direct descriptors for sockets: connections accepted into the ring's fixed-file table
//! (`IORING_FILE_INDEX_ALLOC`), every op naming the index, closed by a ring op, a regular fd
//! installed only when asked for.
//!
//! Each test counts the process's fds and the rings' occupied table slots, which are
//! process-wide, so they take `LOCK` and run one at a time. Without the kernel's direct
//! descriptors (6.8: `FIXED_FD_INSTALL`), switched off, or on the epoll backend, each case
//! runs the same workload and checks the fallback: accepted sockets are regular fds, one
//! fd each, and no table slot is used (`require_direct`: a failure instead under
//! `CORERING_REQUIRE_FEATURES=1`).

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use common::fds::{open_fds, require_direct, table_slots_in_use};
use corering_net::{ListenOptions, TcpListener, TcpStream};
use futures::StreamExt;
use runtime::time::{sleep, timeout};
use runtime::Builder;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lets the ring reap what dropped ops and streams left (cancels, closes).
async fn settle() {
    for _ in 0..5 {
        sleep(Duration::from_millis(5)).await;
        runtime::ext::raw::nop().await.unwrap();
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft limit.
fn raise_nofile() -> libc::rlim_t {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write to.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: `lim` is a valid rlimit; raising the soft limit to the hard one is allowed.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur
}

/// Echoes one chunk of `stream`, then waits for its end of stream.
async fn echo_then_wait_eof(mut stream: TcpStream) -> std::io::Result<()> {
    let chunk = stream.read_chunk().await?;
    let (res, _) = stream.write_all_owned(chunk).await;
    res?;
    loop {
        if stream.read_chunk().await?.is_empty() {
            return Ok(());
        }
    }
}

/// A std client that sends `msg` and expects it back.
fn echo_client(addr: SocketAddr, msg: &[u8]) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(msg).unwrap();
    let mut back = vec![0u8; msg.len()];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, msg);
    s
}

/// 10,000 clients (std sockets, on a thread of this process) connect through `incoming()`,
/// each echoing a few bytes, and stay open together: the process then holds an fd per
/// client and none for the server's side, whose connections are 10,000 occupied table
/// slots. Then all close, and every slot is closed.
#[test]
fn ten_thousand_connections_on_direct_descriptors_hold_no_fd() {
    let _guard = lock();
    let limit = raise_nofile();
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let direct = require_direct();
        // Without direct descriptors each connection holds two fds: the client's and the
        // server's.
        let per_conn = if direct { 1 } else { 2 };
        // 10,000 clients, less if the fd limit cannot hold them (and what the process has
        // open).
        let clients = 10_000.min(limit.saturating_sub(256) as usize / per_conn);
        if direct {
            assert!(
                runtime::features().unwrap().fixed_files as usize >= clients,
                "{}",
                runtime::features().unwrap()
            );
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = listener.incoming();
        let server = runtime::spawn_local(async move {
            let mut conns = Vec::new();
            for _ in 0..clients {
                let stream = incoming.next().await.unwrap().unwrap();
                assert_eq!(stream.is_direct(), direct);
                conns.push(runtime::spawn_local(echo_then_wait_eof(stream)));
            }
            for c in conns {
                c.await.unwrap().unwrap();
            }
        });
        let before = open_fds();
        let slots_before = table_slots_in_use();
        let (opened_tx, opened_rx) = mpsc::channel();
        let (close_tx, close_rx) = mpsc::channel::<()>();
        let client = thread::spawn(move || {
            let mut socks = Vec::with_capacity(clients);
            for i in 0..clients {
                socks.push(echo_client(addr, &(i as u32).to_le_bytes()));
            }
            opened_tx.send(()).unwrap();
            close_rx.recv().unwrap();
            drop(socks);
        });
        let started = Instant::now();
        // Wait (without blocking the core) until every client is open and echoed.
        while opened_rx.try_recv().is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "clients too slow"
            );
            sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(
            open_fds() - before,
            clients * per_conn,
            "one fd per client, and none for the server's connections if direct"
        );
        assert_eq!(
            table_slots_in_use() - slots_before,
            if direct { clients } else { 0 }
        );
        close_tx.send(()).unwrap();
        timeout(Duration::from_secs(60), server)
            .await
            .expect("the server's connections end")
            .unwrap();
        client.join().unwrap();
        settle().await;
        assert_eq!(table_slots_in_use(), slots_before, "every slot closed");
        assert_eq!(open_fds(), before);
        eprintln!("{clients} connections in {:?}", started.elapsed());
    });
}

/// A table of 16 slots and 20 connections: the 4 that find it full are yielded as `ENFILE`
/// (the kernel resets them) and the stream goes on; once slots are free it accepts again.
/// Then many times the table's size in connections come and go through it: dropping a
/// stream frees its slot.
#[test]
fn a_full_table_is_survived_like_emfile() {
    const SLOTS: u32 = 16;
    let _guard = lock();
    let rt = Builder::new().fixed_files(SLOTS).build().unwrap();
    rt.block_on(async {
        // Without direct descriptors to accept into (no table, or a kernel before 6.8 that
        // cannot make a regular fd of one), all 20 connections are accepted as regular fds;
        // the table is there exactly when direct descriptors are.
        let direct = require_direct();
        let (cap, turned_away) = if direct { (SLOTS, 4) } else { (SLOTS + 4, 0) };
        let f = runtime::features().unwrap();
        assert_eq!(f.fixed_files, if f.direct_descriptors { SLOTS } else { 0 });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = listener.incoming();
        // The handshakes complete in the listener's backlog: no accept is needed to connect.
        let clients: Vec<_> = (0..SLOTS + 4)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let mut held = Vec::new();
        let mut enfile = 0;
        while held.len() < cap as usize || enfile < turned_away {
            let item = timeout(Duration::from_secs(5), incoming.next())
                .await
                .expect("incoming yields a connection or an error")
                .unwrap();
            match item {
                Ok(stream) => held.push(stream),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::ENFILE), "{e}");
                    enfile += 1;
                }
            }
        }
        assert_eq!(held.len(), cap as usize);
        assert_eq!(enfile, turned_away);
        assert_eq!(
            table_slots_in_use(),
            if direct { SLOTS as usize } else { 0 }
        );
        // The held ones work; those the full table turned away were reset.
        for (i, s) in held.iter().enumerate() {
            let (res, _) = s.write_all_owned(vec![i as u8]).await;
            res.unwrap();
        }
        let mut served = 0;
        let mut reset = 0;
        for mut c in clients {
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut b = [0u8; 1];
            match c.read(&mut b) {
                Ok(1) => served += 1,
                Ok(_) | Err(_) => reset += 1,
            }
        }
        assert_eq!((served, reset), (cap as usize, turned_away));
        drop(held);
        settle().await;
        assert_eq!(table_slots_in_use(), 0);
        // Slots are free again: connections come and go, 20 times the table's size (and no
        // fd is left behind).
        let fds = open_fds();
        for i in 0..SLOTS * 20 {
            let c = thread::spawn(move || drop(echo_client(addr, &i.to_le_bytes())));
            let stream = timeout(Duration::from_secs(5), incoming.next())
                .await
                .expect("incoming accepts again")
                .unwrap()
                .unwrap();
            assert_eq!(stream.is_direct(), direct);
            echo_then_wait_eof(stream).await.unwrap();
            c.join().unwrap();
        }
        settle().await;
        assert_eq!(table_slots_in_use(), 0);
        assert_eq!(open_fds(), fds);
    });
}

/// `into_std` of a direct stream gives a working regular fd, and frees the table slot.
/// Without direct descriptors the stream's own fd is handed over: no fd more, no slot.
#[test]
fn into_std_of_a_direct_stream_works() {
    let _guard = lock();
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let direct = require_direct();
        // The server side's fds: none for a direct stream, until `into_std` installs one.
        let server_fd = usize::from(!direct);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fds = open_fds();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let stream = listener.incoming().next().await.unwrap().unwrap();
        assert_eq!(stream.is_direct(), direct);
        assert_eq!(
            open_fds(),
            fds + 1 + server_fd,
            "the client's fd, and the server's"
        );
        assert_eq!(table_slots_in_use(), usize::from(direct));
        let (res, _) = stream.write_all_owned(b"ring".to_vec()).await;
        res.unwrap();
        let mut std_stream = stream.into_std().unwrap();
        assert_eq!(open_fds(), fds + 2, "the client and the installed fd");
        settle().await;
        assert_eq!(table_slots_in_use(), 0, "the slot was closed");
        let mut got = [0u8; 4];
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ring");
        std_stream.write_all(b"std!").unwrap();
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"std!");
        client.write_all(b"back").unwrap();
        std_stream.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"back");
        drop(std_stream);
        assert_eq!(
            client.read(&mut got).unwrap(),
            0,
            "closed with the std stream"
        );
        drop(client);
        assert_eq!(open_fds(), fds);
    });
}

/// Socket options: setters go through the ring (no fd installed); `as_raw_fd`, the
/// getters and `socket2::SockRef` install one, once; the listener's `TCP_NODELAY` is
/// inherited.
#[test]
fn options_and_raw_fds_of_direct_streams() {
    let _guard = lock();
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        // Without direct descriptors the stream is a regular fd from the start: the same
        // calls work on it and none opens another fd.
        let direct = require_direct();
        let server_fd = usize::from(!direct);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fds = open_fds();
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (stream, peer) = listener.accept().await.unwrap();
        assert_eq!(stream.is_direct(), direct, "single accepts are direct too");
        assert_eq!(peer, client.local_addr().unwrap());
        stream.set_nodelay(true).unwrap();
        stream.set_keepalive(true).unwrap();
        stream.set_linger(Some(Duration::from_secs(3))).unwrap();
        assert_eq!(open_fds(), fds + 1 + server_fd, "setters install no fd");
        // The getters install one, which `as_raw_fd` and socket2 then share.
        assert!(stream.nodelay().unwrap());
        assert_eq!(open_fds(), fds + 2);
        assert!(stream.keepalive().unwrap());
        let sock = socket2::SockRef::from(&stream);
        assert_eq!(sock.linger().unwrap(), Some(Duration::from_secs(3)));
        sock.set_send_buffer_size(1 << 16).unwrap();
        assert!(sock.send_buffer_size().unwrap() >= 1 << 16);
        let raw = stream.as_raw_fd();
        assert!(raw >= 0);
        assert_eq!(stream.try_as_fd().unwrap().as_raw_fd(), raw);
        assert_eq!(stream.peer_addr().unwrap(), client.local_addr().unwrap());
        assert_eq!(stream.local_addr().unwrap(), addr);
        assert_eq!(open_fds(), fds + 2, "one fd installed, once");
        // Ops still name the index and work.
        let (res, _) = stream.write_all_owned(b"x".to_vec()).await;
        res.unwrap();
        drop(stream);
        drop(client);
        settle().await;
        assert_eq!(open_fds(), fds);
        assert_eq!(table_slots_in_use(), 0);

        // TCP_NODELAY set on a listener is inherited by what it accepts.
        let listener =
            TcpListener::bind_with("127.0.0.1:0", &ListenOptions::new().nodelay(true)).unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let stream = listener.incoming().next().await.unwrap().unwrap();
        assert!(stream.nodelay().unwrap(), "inherited from the listener");
        let plain = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = std::net::TcpStream::connect(plain.local_addr().unwrap()).unwrap();
        let stream = plain.incoming().next().await.unwrap().unwrap();
        assert!(!stream.nodelay().unwrap());
    });
}

/// Ops after a shutdown, on a slot that holds nothing, and on a stream whose runtime is
/// gone are errors, never panics.
#[test]
fn bad_descriptors_give_errors() {
    let _guard = lock();
    let rt = Builder::new().fixed_files(64).build().unwrap();
    let kept = rt.block_on(async {
        // Without direct descriptors: the same errors after a shutdown and from slots that
        // hold nothing (there is no table); a regular fd outlives its runtime, so the last
        // part is for direct streams only.
        let direct = require_direct();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(addr).unwrap();
        let stream = listener.incoming().next().await.unwrap().unwrap();
        stream
            .shutdown_socket(std::net::Shutdown::Both)
            .await
            .unwrap();
        let (res, _) = stream.write_all_owned(b"late".to_vec()).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EPIPE));
        let (res, _) = stream.read_owned(vec![0u8; 8]).await;
        assert_eq!(res.unwrap(), 0);
        drop((stream, client));

        // Slots that hold nothing: one in the table, one past its end.
        for index in [63, 1 << 20] {
            // SAFETY: a test of bad input: the slot holds nothing, so nothing else owns it
            // (closing it on drop is an error the driver ignores).
            let fd = unsafe { runtime::ext::SharedFd::from_fixed(index) };
            let (res, _) = runtime::ext::raw::readv_at(&fd, vec![vec![0u8; 8]], u64::MAX).await;
            let err = res.unwrap_err();
            assert!(
                matches!(err.raw_os_error(), Some(libc::EBADF | libc::EINVAL)),
                "{err}"
            );
            let err = fd.try_as_fd().unwrap_err();
            assert!(
                err.to_string().contains(&format!(
                    "installing a real fd for direct descriptor {index}"
                )),
                "{err}"
            );
            assert_eq!(fd.raw(), -1);
            assert!(fd
                .set_option(libc::SOL_SOCKET, libc::SO_KEEPALIVE, &1i32.to_ne_bytes())
                .is_err());
        }
        settle().await;
        assert_eq!(table_slots_in_use(), 0);

        if !direct {
            return None;
        }
        // A stream kept past its runtime.
        let client = std::net::TcpStream::connect(addr).unwrap();
        let stream = listener.incoming().next().await.unwrap().unwrap();
        Some((stream, client))
    });
    drop(rt);
    let Some((stream, _client)) = kept else {
        return;
    };
    let rt = Builder::new().build().unwrap();
    rt.block_on(async move {
        let (res, _) = stream.write_all_owned(b"gone".to_vec()).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
        let err = stream.peer_addr().unwrap_err();
        assert!(err.to_string().contains("not on the core"), "{err}");
        assert!(stream.set_nodelay(true).is_err());
        assert!(stream.into_std().is_err());
    });
}

/// With `direct_descriptors(false)` (or a kernel without them) connections are regular
/// fds, as before; a dropped `incoming()` closes the slots of connections it accepted but
/// never yielded.
#[test]
fn regular_fds_when_off_and_no_slot_leaks_on_drop() {
    let _guard = lock();
    let rt = Builder::new().direct_descriptors(false).build().unwrap();
    rt.block_on(async {
        assert!(!runtime::features().unwrap().direct_descriptors);
        assert_eq!(runtime::features().unwrap().fixed_files, 0);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fds = open_fds();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let stream = listener.incoming().next().await.unwrap().unwrap();
        assert!(!stream.is_direct());
        assert_eq!(open_fds(), fds + 2, "the client and the server's fd");
        stream.set_nodelay(true).unwrap();
        assert!(stream.nodelay().unwrap());
    });
    drop(rt);

    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        // Without direct descriptors the same drop closes the regular fds it accepted.
        let direct = require_direct();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fds = open_fds();
        let mut clients = Vec::new();
        {
            let mut incoming = listener.incoming();
            clients.push(std::net::TcpStream::connect(addr).unwrap());
            let first = incoming.next().await.unwrap().unwrap();
            assert_eq!(first.is_direct(), direct);
            // Accepted by the armed multishot accept, never yielded.
            for _ in 0..4 {
                clients.push(std::net::TcpStream::connect(addr).unwrap());
            }
            settle().await;
            assert_eq!(table_slots_in_use(), if direct { 5 } else { 0 });
        }
        settle().await;
        assert_eq!(table_slots_in_use(), 0, "the stream's slots were closed");
        assert_eq!(
            open_fds(),
            fds + clients.len(),
            "only the clients' fds are open"
        );
    });
}

/// `Builder::fixed_files` out of range fails the build with a message naming it.
#[test]
fn fixed_files_is_validated() {
    for n in [0, u32::MAX] {
        let err = Builder::new().fixed_files(n).build().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(
            err.to_string()
                .contains(&format!("Builder::fixed_files({n})")),
            "{err}"
        );
    }
}
