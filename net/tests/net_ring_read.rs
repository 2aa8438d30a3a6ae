//! The default read path: a multishot recv per connection into the core's shared
//! provided-buffer ring (`read_chunk` and the poll traits). Byte-exact echoes of random
//! sizes, an empty ring under 1,000 connections (`ENOBUFS`), a connection nobody reads,
//! an idle connection holding no buffer, and the same tests with the ring switched off.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream};
use futures::io::{AsyncReadExt, AsyncWriteExt};
use futures::StreamExt;
use runtime::buf::core_ring;
use runtime::time::{sleep, timeout};
use runtime::Builder;

mod common;

use common::pattern;

const LIMIT: Duration = Duration::from_secs(60);

/// Echoes every chunk back as it is until end of stream, with the owned `write_all` (which
/// waits for each send) or with `write_chunk` (write-behind, then a close that waits for the
/// last send); returns the bytes echoed.
async fn echo_chunks(mut stream: TcpStream, behind: bool) -> io::Result<u64> {
    let mut total = 0;
    loop {
        let chunk = stream.read_chunk().await?;
        if chunk.is_empty() {
            if behind {
                stream.close().await?;
            }
            return Ok(total);
        }
        total += chunk.len() as u64;
        if behind {
            stream.write_chunk(chunk).await?;
        } else {
            let (res, _) = stream.write_all_owned(chunk).await;
            res?;
        }
    }
}

/// Whether a default runtime reads through the ring (`Features::recv_multishot`): off where
/// `RUNTIME_DISABLE=recv_multishot` switches it off process-wide (as CI runs the net suite
/// once) or the kernel (or kernel profile, `RUNTIME_KERNEL`) lacks it. Asked through
/// `runtime::ext::testing::require` (a failure under `CORERING_REQUIRE_FEATURES=1`);
/// without it the ring's own tests run the same workload on the own-buffer path and check
/// that every byte still arrives and no ring exists (the documented fallback: no core ring
/// at all, reads into the caller's buffers).
fn ring_on() -> bool {
    let rt = Builder::new().build().unwrap();
    let (multishot, ring) = rt.block_on(async {
        (
            runtime::features().unwrap().recv_multishot,
            core_ring().is_some(),
        )
    });
    if !multishot {
        assert!(
            !ring,
            "no multishot receive, yet a core ring: {}",
            rt.features()
        );
    }
    runtime::ext::testing::require("recv_multishot (the read path's ring)", multishot)
}

/// Whether the kernel, or the kernel profile `RUNTIME_KERNEL` makes the runtime behave as,
/// is at least `major.minor`.
fn release_at_least(major: u32, minor: u32) -> bool {
    let parse = |s: &str| {
        let mut it = s
            .trim()
            .split(['.', '-'])
            .map(|x| x.parse::<u32>().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    };
    let running = parse(&std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap());
    let release = match std::env::var("RUNTIME_KERNEL") {
        Ok(profile) => running.min(parse(&profile)),
        Err(_) => running,
    };
    release >= (major, minor)
}

/// The ring's free entries as the kernel reports them (`IORING_REGISTER_PBUF_STATUS`,
/// Linux 6.8); `None` before 6.8, as documented (checked here: the probe lacks
/// `FIXED_FD_INSTALL`, of the same release).
fn kernel_free(ring: &runtime::buf::BufRing) -> Option<u16> {
    let free = ring.available();
    let code = io_uring::opcode::FixedFdInstall::CODE;
    if !runtime::features().unwrap().supports_op(code) {
        assert_eq!(free, None, "before 6.8 the kernel cannot say");
    } else {
        assert!(free.is_some(), "Linux 6.8 reports the ring head");
    }
    free
}

/// The runtimes each test runs on: the default (ring) and the own-buffer fallback.
fn builders() -> Vec<(&'static str, Builder)> {
    vec![
        ("ring", Builder::new()),
        // Messages of up to 64 KiB into 512 B buffers: bundle CQEs of many buffers each.
        ("ring, small buffers", Builder::new().recv_buffers(256, 512)),
        ("ring, no bundles", Builder::new().recv_bundle(false)),
        // Each receive takes a whole buffer (incremental consumption off).
        (
            "ring, whole buffers",
            Builder::new().recv_incremental(false),
        ),
        ("own buffer", Builder::new().recv_multishot(false)),
    ]
}

#[test]
fn chunks_echo_messages_of_random_sizes_byte_exact() {
    for ((name, builder), behind) in builders()
        .into_iter()
        .flat_map(|b| [(b.clone(), false), (b, true)])
    {
        let name = format!(
            "{name}, {}",
            if behind { "write_chunk" } else { "write_all" }
        );
        let rt = builder.build().unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let data = pattern(7, 3 << 20);
            let sent = data.clone();
            // A std client: one thread writes messages of random sizes, the other reads.
            let client = thread::spawn(move || -> io::Result<Vec<u8>> {
                let mut s = std::net::TcpStream::connect(addr)?;
                s.set_read_timeout(Some(Duration::from_secs(30)))?;
                let mut w = s.try_clone()?;
                let writer = thread::spawn(move || -> io::Result<()> {
                    let mut sizes = pattern(3, 4096).into_iter().cycle();
                    let mut at = 0;
                    while at < sent.len() {
                        let size = 1 + usize::from(sizes.next().unwrap()) * 97 % 65_000;
                        let end = (at + size).min(sent.len());
                        w.write_all(&sent[at..end])?;
                        at = end;
                    }
                    w.shutdown(std::net::Shutdown::Write)
                });
                let mut back = Vec::new();
                s.read_to_end(&mut back)?;
                writer.join().unwrap()?;
                Ok(back)
            });
            let (stream, _) = listener.accept().await.unwrap();
            let echoed = timeout(LIMIT, echo_chunks(stream, behind))
                .await
                .unwrap()
                .unwrap();
            let back = client.join().unwrap().expect(&name);
            assert_eq!(echoed, data.len() as u64, "{name}");
            assert!(back == data, "{name}: the echo differs from what was sent");
            if runtime::features().unwrap().recv_multishot {
                assert!(name.starts_with("ring"), "{name}");
                assert_eq!(
                    core_ring().unwrap().outstanding(),
                    0,
                    "every buffer is back"
                );
            } else {
                assert!(core_ring().is_none(), "{name}: the ring is off");
            }
        });
    }
}

/// `CONNS` clients each send their own bytes and read the echo; the server reads each
/// connection with `read_to_end` (the poll traits) and writes it back.
/// Returns the server's ring size at the end and how many receives found it empty
/// (`None`: no ring).
fn many_connections_through(builder: Builder, conns: u64, len: usize) -> Option<(u16, u64)> {
    let rt = builder.build().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || clients(addr, conns, len));
    let empties = rt.block_on(async {
        let listener = TcpListener::from_std(listener).unwrap();
        let mut incoming = listener.incoming();
        let mut tasks = Vec::new();
        for _ in 0..conns {
            let mut stream = incoming.next().await.unwrap().unwrap();
            tasks.push(runtime::spawn_local(async move {
                let mut all = Vec::new();
                stream.read_to_end(&mut all).await?;
                AsyncWriteExt::write_all(&mut stream, &all).await?;
                stream.close().await?;
                Ok::<usize, io::Error>(all.len())
            }));
        }
        for t in tasks {
            let n = timeout(LIMIT, t).await.unwrap().unwrap().unwrap();
            assert_eq!(n, len);
        }
        core_ring().map(|r| (r.entries(), r.times_starved()))
    });
    client.join().unwrap();
    empties
}

/// The client side of [`many_connections_through`], on a runtime of its own thread.
fn clients(addr: SocketAddr, conns: u64, len: usize) {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..conns {
            let mut s = TcpStream::connect(addr).await.unwrap();
            tasks.push(runtime::spawn_local(async move {
                let mine = pattern(i, len);
                AsyncWriteExt::write_all(&mut s, &mine).await.unwrap();
                AsyncWriteExt::close(&mut s).await.unwrap();
                let mut back = Vec::new();
                s.read_to_end(&mut back).await.unwrap();
                assert!(back == mine, "connection {i}: echo differs");
            }));
        }
        for t in tasks {
            timeout(LIMIT, t).await.unwrap().unwrap();
        }
    });
}

#[test]
fn an_empty_ring_under_1000_connections_loses_nothing() {
    if !ring_on() {
        // Every byte of every connection through the own-buffer path, and no ring.
        let run = many_connections_through(Builder::new().recv_buffers(16, 512), 1000, 4096);
        assert_eq!(run, None);
        return;
    }
    // 16 buffers of 512 B for 1,000 connections sending 4 KiB each at once: the ring runs
    // out of buffers over and over (ENOBUFS); every byte must still arrive, in order. Whether
    // a given run empties the ring depends on scheduling (the epoll backend receives one
    // ready socket at a time and its readers hand buffers back quickly), so up to three runs
    // get the chance; every run checks every byte.
    let mut dry = 0;
    for _ in 0..3 {
        let (entries, empties) =
            many_connections_through(Builder::new().recv_buffers(16, 512), 1000, 4096)
                .expect("the ring is on");
        assert_eq!(
            entries, 16,
            "the ring grows no further than Builder::recv_buffers"
        );
        println!("the ring ran dry {empties} times");
        dry = empties;
        if dry > 0 {
            break;
        }
    }
    assert!(
        dry > 0,
        "16 buffers never ran dry under 1,000 connections, in three runs"
    );
}

#[test]
fn large_incremental_buffers_serve_many_connections() {
    // Four 1 MiB buffers for 200 connections of 4 KiB each. Consumed incrementally, the
    // receives pack into the first buffer and the ring never runs dry; taking a whole
    // buffer each, the same ring runs dry over and over.
    let big = || Builder::new().recv_buffers(4, 1 << 20);
    if !ring_on() {
        assert_eq!(many_connections_through(big(), 200, 4096), None);
        return;
    }
    let probe = Builder::new().build().unwrap();
    let incremental = probe.features().recv_incremental;
    drop(probe);
    if !runtime::ext::testing::require("recv_incremental", incremental) {
        // Whole buffers: the same 200 connections, every byte checked, through a ring that
        // stays at its 4 entries.
        let (entries, _) = many_connections_through(big(), 200, 4096).expect("the ring is on");
        assert_eq!(entries, 4);
        return;
    }
    let (entries, empties) = many_connections_through(big(), 200, 4096).expect("the ring is on");
    assert_eq!(entries, 4);
    assert_eq!(empties, 0, "4 MiB of buffers ran dry carrying 800 KiB");
    // Whether the whole-buffer ring runs dry depends on how many receives land before their
    // buffers come back (scheduling): up to three tries for it to show.
    let mut whole = 0;
    for _ in 0..3 {
        (_, whole) = many_connections_through(big().recv_incremental(false), 200, 4096)
            .expect("the ring is on");
        if whole > 0 {
            break;
        }
    }
    println!("whole buffers: the ring ran dry {whole} times");
    assert!(
        whole > 0,
        "4 whole buffers never ran dry under 200 connections"
    );
}

#[test]
fn many_connections_with_the_ring_off() {
    assert_eq!(
        many_connections_through(Builder::new().recv_multishot(false), 300, 4096),
        None
    );
}

#[test]
fn an_unread_connection_holds_a_bounded_number_of_buffers() {
    // Without the ring, the same pause loses no byte either (and no ring exists).
    let ring_on = ring_on();
    let rt = Builder::new().recv_buffers(64, 1024).build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let data = pattern(11, 1 << 20);
        let sent = data.clone();
        let client = thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(&sent).unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
        });
        let (mut stream, _) = listener.accept().await.unwrap();
        // Arm the receive with a first read, then stop reading while the client sends 1 MiB.
        let mut first = [0u8; 1];
        AsyncReadExt::read_exact(&mut stream, &mut first)
            .await
            .unwrap();
        sleep(Duration::from_millis(300)).await;
        let ring = core_ring();
        assert_eq!(ring.is_some(), ring_on);
        if let Some(ring) = &ring {
            // Before 6.8 the kernel cannot say how many buffers it holds.
            if let Some(free) = kernel_free(ring) {
                let held = ring.entries() - free;
                // The chunk being read, plus the backlog of 4 and what was in flight at
                // the cancel. Before 6.17 the kernel takes no byte limit and only the
                // backlog cancel bounds it: the kernel may post up to 32 CQEs before it
                // sees the cancel.
                let bound = if release_at_least(6, 17) {
                    8
                } else {
                    1 + 4 + 32
                };
                assert!(
                    held <= bound,
                    "an unread connection holds {held} of {} buffers",
                    ring.entries()
                );
            }
        }
        let mut rest = Vec::new();
        timeout(LIMIT, stream.read_to_end(&mut rest))
            .await
            .unwrap()
            .unwrap();
        client.join().unwrap();
        assert_eq!(first[0], data[0]);
        assert!(
            rest == data[1..],
            "bytes lost or reordered across the pause"
        );
        if let Some(ring) = ring {
            assert_eq!(ring.outstanding(), 0);
        }
    });
}

#[test]
fn an_idle_connection_holds_no_buffer() {
    // Without the ring: the same reads, and no ring to hold a buffer.
    let ring_on = ring_on();
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"x").unwrap();
            thread::sleep(Duration::from_secs(2));
            s.write_all(b"yz").unwrap();
        });
        let (mut stream, _) = listener.accept().await.unwrap();
        let reader = runtime::spawn_local(async move {
            let mut buf = [0u8; 8];
            let n = AsyncReadExt::read(&mut stream, &mut buf).await.unwrap();
            let m = AsyncReadExt::read(&mut stream, &mut buf[n..])
                .await
                .unwrap();
            buf[..n + m].to_vec()
        });
        sleep(Duration::from_millis(500)).await;
        // The reader got its byte and waits for more: its receive is armed, no buffer held.
        let ring = core_ring();
        assert_eq!(ring.is_some(), ring_on);
        if let Some(ring) = ring {
            assert_eq!(ring.outstanding(), 0, "a buffer is held while idle");
            if let Some(free) = kernel_free(&ring) {
                assert_eq!(free, ring.entries(), "the kernel holds one");
            }
        }
        let got = timeout(LIMIT, reader).await.unwrap().unwrap();
        assert_eq!(got, b"xyz");
        client.join().unwrap();
    });
}

#[test]
fn the_ring_grows_with_the_load() {
    // Without the ring: the same load, every byte, and no ring.
    let ring_on = ring_on();
    // 300 connections whose 32 KiB each wait in the kernel before any is read: armed all at
    // once, they need far more than the ring's first 16 buffers. It runs dry and doubles
    // (up to the configured 1024) until the load fits; every byte still arrives.
    const CONNS: u64 = 300;
    const LEN: usize = 32 * 1024;
    let rt = Builder::new().build().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || clients(addr, CONNS, LEN));
    let entries = rt.block_on(async {
        let listener = TcpListener::from_std(listener).unwrap();
        let mut incoming = listener.incoming();
        let mut streams = Vec::new();
        for _ in 0..CONNS {
            streams.push(incoming.next().await.unwrap().unwrap());
        }
        sleep(Duration::from_millis(300)).await;
        let tasks: Vec<_> = streams
            .into_iter()
            .map(|mut stream| {
                runtime::spawn_local(async move {
                    let mut all = Vec::new();
                    stream.read_to_end(&mut all).await?;
                    AsyncWriteExt::write_all(&mut stream, &all).await?;
                    stream.close().await?;
                    Ok::<usize, io::Error>(all.len())
                })
            })
            .collect();
        for t in tasks {
            assert_eq!(timeout(LIMIT, t).await.unwrap().unwrap().unwrap(), LEN);
        }
        core_ring().map(|r| r.entries())
    });
    client.join().unwrap();
    assert_eq!(entries.is_some(), ring_on);
    if let Some(entries) = entries {
        println!("the ring grew to {entries} buffers");
        assert!(entries > 16, "the ring never grew: {entries} buffers");
    }
}
