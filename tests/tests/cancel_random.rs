//! Randomized cancellation safety, with a quarantine allocator watching for kernel writes
//! into freed memory.
//!
//! Eight lanes on one core each run a seeded random sequence of ops (TCP reads and writes,
//! accepts, multishot accepts and receives on a buffer ring, timeouts, sleeps, connects,
//! file reads and opens, pipe reads) while peer tasks and a thread keep data arriving. Each
//! op is polled a random number of times (zero, once, a few, to completion), with yields and
//! short sleeps between, and dropped where that leaves it. Each round ends by dropping the
//! runtime with every lane's op in flight.
//!
//! What must hold: every completed op's bytes are the bytes sent (or the file's), no fd is
//! left open after a round, no op-tagged block is left allocated (buffers are freed, after
//! their final CQE), the runtime drop returns, and no quarantined block was written after it
//! was freed. `SEED=<n>` replays a run; `QUARANTINE=off` frees at once (for AddressSanitizer,
//! whose own quarantine then sees every free: `scripts/asan.sh`).

use std::future::Future;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Mutex;
use std::task::Poll;
use std::time::{Duration, Instant};

use corering_net::{TcpListener, TcpStream};
use futures::{Stream, StreamExt};
use io_uring::{opcode, types};
use runtime::buf::{BufRing, RingBuf};
use runtime::ext::{raw, Completable, Cqe, Op, SharedFd};
use tests::quarantine::{self, Corruption};
use tests::{is_payload, payload, payload_byte, Rng};

#[global_allocator]
static ALLOC: quarantine::Quarantine = quarantine::Quarantine;

/// The tests here share the quarantine's reports: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

// Allocation tags: which op a block belonged to.
const UNTAGGED: u8 = 0;
const READ: u8 = 1;
const WRITE: u8 = 2;
const ACCEPT: u8 = 3;
const INCOMING: u8 = 4;
const RECV_MULTI: u8 = 5;
const TIMEOUT_READ: u8 = 6;
const SLEEP: u8 = 7;
const CONNECT: u8 = 8;
const FILE_READ: u8 = 9;
const FILE_OPEN: u8 = 10;
const PIPE_READ: u8 = 11;
const CANARY: u8 = 12;
const TAG_NAMES: [&str; 13] = [
    "untagged",
    "tcp read",
    "tcp write",
    "accept",
    "multishot accept",
    "multishot recv (buffer ring)",
    "timeout(read)",
    "sleep",
    "connect",
    "file read_at",
    "file open",
    "pipe read",
    "canary",
];
/// Op kinds a lane picks from (tags 1..=11).
const OP_KINDS: u64 = 11;

const LANES: usize = 8;
const ROUNDS: u64 = 8;
const OPS_PER_ROUND: u64 = 700;
const FILE_LEN: u64 = 1 << 20;
/// A run that takes longer than this is hung: the process aborts, printing the seed.
const WATCHDOG: Duration = Duration::from_secs(240);

fn quarantine_wanted() -> bool {
    !matches!(std::env::var("QUARANTINE").as_deref(), Ok("off" | "0"))
}

fn describe(c: &Corruption) -> String {
    format!(
        "kernel write after free: {}-byte block of op \"{}\", {} byte(s) changed from offset {}, \
         found {:02x?}",
        c.size,
        TAG_NAMES.get(c.tag as usize).copied().unwrap_or("?"),
        c.changed,
        c.first,
        &c.found[..c.changed.min(8)]
    )
}

#[derive(Default, Debug)]
struct Counts {
    started: u64,
    never_polled: u64,
    dropped_in_flight: u64,
    completed: u64,
    stream_items: u64,
    bytes_verified: u64,
    by_kind: [u64; 13],
}

type Shared = Rc<std::cell::RefCell<Counts>>;

/// What one round's lanes share.
struct Round {
    conns: Vec<Rc<TcpStream>>,
    /// `None` on the epoll backend, which has no provided-buffer rings: its lanes skip the
    /// multishot receive.
    rings: Vec<Option<BufRing>>,
    /// Accepts and multishot accepts run here; a connector task keeps clients coming.
    listener: TcpListener,
    /// Connects go here; an acceptor task takes and drops what arrives.
    connect_to: std::net::SocketAddr,
    file: corering_fs::File,
    path: std::path::PathBuf,
    pipe: SharedFd,
    counts: Shared,
}

/// How often a lane polls its op before dropping it.
fn polls(rng: &mut Rng) -> u32 {
    match rng.below(10) {
        0 => 0,
        1 | 2 => 1,
        3..=6 => rng.range(2, 12) as u32,
        _ => 400,
    }
}

/// Between polls: mostly a yield (the loop reaps CQEs meanwhile), sometimes a short sleep.
async fn pause(rng: &mut Rng) {
    if rng.one_in(6) {
        runtime::sleep(Duration::from_micros(rng.below(300))).await;
    } else {
        runtime::yield_now().await;
    }
}

/// Polls one poll of `fut` with the task's waker, under the allocation tag `tag`.
async fn poll_tagged<F: Future>(tag: u8, fut: &mut Pin<Box<F>>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(quarantine::tagged(tag, || fut.as_mut().poll(cx)))).await
}

/// Makes an op's future under `tag`, polls it at most `polls` times with pauses between,
/// and drops it if it has not finished. Its output if it did.
async fn drive<F: Future>(
    tag: u8,
    polls: u32,
    rng: &mut Rng,
    counts: &Shared,
    make: impl FnOnce() -> F,
) -> Option<F::Output> {
    let mut fut = quarantine::tagged(tag, || Box::pin(make()));
    counts.borrow_mut().by_kind[tag as usize] += 1;
    if polls == 0 {
        counts.borrow_mut().never_polled += 1;
        quarantine::tagged(tag, || drop(fut));
        return None;
    }
    counts.borrow_mut().started += 1;
    for _ in 0..polls {
        if let Poll::Ready(v) = poll_tagged(tag, &mut fut).await {
            counts.borrow_mut().completed += 1;
            return Some(v);
        }
        pause(rng).await;
    }
    counts.borrow_mut().dropped_in_flight += 1;
    quarantine::tagged(tag, || drop(fut));
    None
}

/// As `drive`, for a stream: each item goes to `each`; the stream is dropped after `polls`
/// polls, wherever it is.
async fn drive_stream<S: Stream + Unpin>(
    tag: u8,
    polls: u32,
    rng: &mut Rng,
    counts: &Shared,
    make: impl FnOnce() -> S,
    mut each: impl FnMut(S::Item),
) {
    let mut stream = quarantine::tagged(tag, || Box::pin(make()));
    counts.borrow_mut().by_kind[tag as usize] += 1;
    if polls == 0 {
        counts.borrow_mut().never_polled += 1;
        quarantine::tagged(tag, || drop(stream));
        return;
    }
    counts.borrow_mut().started += 1;
    for _ in 0..polls {
        let next = std::future::poll_fn(|cx| {
            Poll::Ready(quarantine::tagged(tag, || stream.as_mut().poll_next(cx)))
        })
        .await;
        match next {
            Poll::Ready(Some(item)) => {
                counts.borrow_mut().stream_items += 1;
                each(item);
            }
            Poll::Ready(None) => {
                counts.borrow_mut().completed += 1;
                return;
            }
            Poll::Pending => pause(rng).await,
        }
    }
    counts.borrow_mut().dropped_in_flight += 1;
    quarantine::tagged(tag, || drop(stream));
}

fn verify(counts: &Shared, bytes: &[u8], what: &str) {
    assert!(is_payload(bytes), "{what}: bytes that were never sent");
    counts.borrow_mut().bytes_verified += bytes.len() as u64;
}

async fn lane(i: usize, round: Rc<Round>, mut rng: Rng) {
    let conn = round.conns[i].clone();
    let ring = round.rings[i].clone();
    let counts = round.counts.clone();
    // Ring buffers kept a while, so the ring runs dry (ENOBUFS) and refills.
    let mut held: Vec<RingBuf> = Vec::new();
    loop {
        let n = rng.range(1, 64 * 1024) as usize;
        let p = polls(&mut rng);
        let tag = rng.below(OP_KINDS) as u8 + 1;
        match tag {
            READ => {
                let out = drive(tag, p, &mut rng, &counts, || conn.read_owned(vec![0u8; n])).await;
                if let Some((res, buf)) = out {
                    let got = res.expect("read of a live connection");
                    assert!(got > 0, "EOF on a live connection");
                    verify(&counts, &buf[..got], "tcp read");
                }
            }
            WRITE => {
                let byte = payload_byte(rng.next_u64());
                let out = drive(tag, p, &mut rng, &counts, || {
                    conn.write_owned(vec![byte; n * 4])
                })
                .await;
                if let Some((res, _)) = out {
                    assert!(res.expect("write to a live connection") > 0);
                }
            }
            ACCEPT => {
                let out = drive(tag, p, &mut rng, &counts, || round.listener.accept()).await;
                if let Some(res) = out {
                    drop(res.expect("accept"));
                }
            }
            INCOMING => {
                drive_stream(
                    tag,
                    p,
                    &mut rng,
                    &counts,
                    || round.listener.incoming(),
                    |s| drop(s.expect("multishot accept")),
                )
                .await
            }
            RECV_MULTI => {
                let Some(ring) = ring.clone() else {
                    continue;
                };
                let keep = rng.below(4) as usize;
                drive_stream(
                    tag,
                    p,
                    &mut rng,
                    &counts,
                    || conn.recv_stream(&ring),
                    |b| {
                        let b = b.expect("multishot recv");
                        verify(&counts, &b, "multishot recv");
                        held.push(b);
                        while held.len() > keep {
                            held.remove(0);
                        }
                    },
                )
                .await
            }
            TIMEOUT_READ => {
                let d = Duration::from_micros(rng.below(2000));
                let out = drive(tag, p, &mut rng, &counts, || {
                    runtime::timeout(d, conn.read_owned(vec![0u8; n]))
                })
                .await;
                if let Some(Ok((res, buf))) = out {
                    let got = res.expect("read of a live connection");
                    verify(&counts, &buf[..got], "timeout(read)");
                }
            }
            SLEEP => {
                let d = Duration::from_micros(rng.below(1000));
                drive(tag, p, &mut rng, &counts, || runtime::sleep(d)).await;
            }
            CONNECT => {
                let to = round.connect_to;
                let out = drive(tag, p, &mut rng, &counts, || TcpStream::connect(to)).await;
                if let Some(res) = out {
                    drop(res.expect("connect"));
                }
            }
            FILE_READ => {
                let pos = rng.below(FILE_LEN);
                let out = drive(tag, p, &mut rng, &counts, || {
                    round.file.read_at(vec![0u8; n], pos)
                })
                .await;
                if let Some((res, buf)) = out {
                    let got = res.expect("file read");
                    assert_eq!(
                        got as u64,
                        (n as u64).min(FILE_LEN - pos),
                        "short file read"
                    );
                    assert!(
                        buf[..got] == payload(pos, got)[..],
                        "file read: wrong bytes"
                    );
                    counts.borrow_mut().bytes_verified += got as u64;
                }
            }
            FILE_OPEN => {
                let out = drive(tag, p, &mut rng, &counts, || {
                    corering_fs::File::open(&round.path)
                })
                .await;
                if let Some(res) = out {
                    drop(res.expect("open"));
                }
            }
            PIPE_READ => {
                let out = drive(tag, p, &mut rng, &counts, || {
                    raw::read(&round.pipe, vec![0u8; n], u64::MAX)
                })
                .await;
                if let Some((res, buf)) = out {
                    let got = res.expect("pipe read");
                    verify(&counts, &buf[..got], "pipe read");
                }
            }
            _ => unreachable!("tag {tag}"),
        }
    }
}

/// The peer of a lane's connection: sends payload and drains what the lane writes.
async fn peer(server: Rc<TcpStream>, mut rng: Rng) {
    let reader = {
        let server = server.clone();
        let mut rng = Rng::new(rng.next_u64());
        runtime::spawn_local(async move {
            loop {
                let (res, buf) = server.read_owned(vec![0u8; 64 * 1024]).await;
                match res {
                    Ok(0) | Err(_) => return,
                    Ok(n) => assert!(is_payload(&buf[..n]), "the peer got bytes never sent"),
                }
                if rng.one_in(3) {
                    runtime::sleep(Duration::from_micros(rng.below(1000))).await;
                }
            }
        })
    };
    loop {
        let n = rng.range(1, 16 * 1024) as usize;
        let (res, _) = server
            .write_owned(vec![payload_byte(rng.next_u64()); n])
            .await;
        if res.is_err() {
            break;
        }
        if rng.one_in(4) {
            runtime::sleep(Duration::from_micros(rng.below(500))).await;
        }
    }
    let _ = reader.await;
}

/// Keeps clients connecting to the accept lanes' listener (a few kept open).
async fn connector(to: std::net::SocketAddr, mut rng: Rng) {
    let mut open = std::collections::VecDeque::new();
    loop {
        if let Ok(Ok(s)) = runtime::timeout(Duration::from_millis(50), TcpStream::connect(to)).await
        {
            open.push_back(s);
            if open.len() > 4 {
                open.pop_front();
            }
        }
        runtime::sleep(Duration::from_micros(rng.below(400))).await;
    }
}

/// Accepts and drops what the connect lanes make.
async fn acceptor(listener: TcpListener) {
    let mut incoming = listener.incoming();
    while let Some(s) = incoming.next().await {
        drop(s);
    }
}

fn run_round(seed: u64, round_no: u64, path: &std::path::Path, counts: &Shared) {
    let mut rng = Rng::new(seed ^ round_no.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let (pipe_r, pipe_w) = tests::pipe();
    // A thread keeps the pipe full until the round's end closes its read end (EPIPE).
    let feeder = std::thread::spawn(move || {
        let chunk = payload(0, 512);
        loop {
            // SAFETY: writes from a live buffer to the pipe's write end, owned here.
            let n = unsafe { libc::write(pipe_w.as_raw_fd(), chunk.as_ptr().cast(), chunk.len()) };
            if n < 0 {
                return;
            }
        }
    });
    let rt = runtime::Runtime::new().unwrap();
    let path = path.to_path_buf();
    let counts = counts.clone();
    rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let accept_addr = listener.local_addr().unwrap();
        let for_connects = TcpListener::bind("127.0.0.1:0").unwrap();
        let connect_to = for_connects.local_addr().unwrap();
        let mut conns = Vec::new();
        let mut servers = Vec::new();
        for _ in 0..LANES {
            let client = TcpStream::connect(accept_addr).await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            conns.push(Rc::new(client));
            servers.push(Rc::new(server));
        }
        let rings = (0..LANES)
            .map(|_| {
                quarantine::tagged(RECV_MULTI, || match BufRing::new(4, 2048) {
                    Ok(ring) => Some(ring),
                    Err(e)
                        if runtime::features()
                            .is_some_and(|f| f.backend == runtime::Backend::Epoll) =>
                    {
                        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
                        None
                    }
                    Err(e) => panic!("buffer ring: {e}"),
                })
            })
            .collect();
        let file = corering_fs::File::open(&path).await.unwrap();
        let round = Rc::new(Round {
            conns,
            rings,
            listener,
            connect_to,
            file,
            path,
            pipe: SharedFd::new(pipe_r),
            counts: counts.clone(),
        });
        // None of these ends while the round runs: one that did panicked (its message is
        // above), and fails the test here.
        let mut tasks = Vec::new();
        for s in servers {
            tasks.push(runtime::spawn_local(peer(s, Rng::new(rng.next_u64()))));
        }
        tasks.push(runtime::spawn_local(connector(
            accept_addr,
            Rng::new(rng.next_u64()),
        )));
        tasks.push(runtime::spawn_local(acceptor(for_connects)));
        for i in 0..LANES {
            let lane = lane(i, round.clone(), Rng::new(rng.next_u64()));
            tasks.push(runtime::spawn_local(lane));
        }
        drop(round);
        let target = counts.borrow().started + counts.borrow().never_polled + OPS_PER_ROUND;
        while counts.borrow().started + counts.borrow().never_polled < target {
            runtime::sleep(Duration::from_millis(1)).await;
            for (i, t) in tasks.iter_mut().enumerate() {
                if let Poll::Ready(res) = futures::poll!(t) {
                    panic!("round {round_no}: task {i} ended early: {res:?} (SEED={seed:#x})");
                }
            }
        }
        // Returns with every lane's op in flight: the runtime drop cancels and reaps them.
    });
    drop(rt);
    feeder.join().unwrap();
}

#[test]
fn random_drops_of_every_op_kind_leave_no_write_after_free() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = tests::seed_from_env(0x5EED_CA9C_E11A_7105);
    let on = quarantine_wanted();
    quarantine::enable(on);
    let _ = quarantine::take_corruptions();

    // Hung runs abort, naming the seed.
    let (done, watchdog) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = watchdog.recv_timeout(WATCHDOG) {
            eprintln!("cancel_random: no progress after {WATCHDOG:?}; SEED={seed:#x}");
            std::process::abort();
        }
    });

    let dir = std::env::temp_dir().join(format!("cancel-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.bin");
    std::fs::write(&path, payload(0, FILE_LEN as usize)).unwrap();

    let counts: Shared = Default::default();
    let start = Instant::now();
    let fds_before = tests::fd_count();
    let live_before: Vec<i64> = (1..=OP_KINDS as u8).map(quarantine::live).collect();
    for r in 0..ROUNDS {
        run_round(seed, r, &path, &counts);
        let fds = tests::fd_count();
        assert_eq!(
            fds, fds_before,
            "round {r}: fds left open after the runtime was dropped (SEED={seed:#x})"
        );
        for tag in 1..=OP_KINDS as u8 {
            let live = quarantine::live(tag);
            assert_eq!(
                live,
                live_before[tag as usize - 1],
                "round {r}: blocks of op \"{}\" still allocated after the runtime was dropped \
                 (SEED={seed:#x})",
                TAG_NAMES[tag as usize]
            );
        }
    }
    let elapsed = start.elapsed();
    quarantine::check_all();
    let held = quarantine::held_bytes();
    quarantine::flush();
    let (found, lost) = quarantine::take_corruptions();
    quarantine::enable(false);
    std::fs::remove_dir_all(&dir).unwrap();
    drop(done);

    let c = counts.borrow();
    let q = quarantine::counters();
    eprintln!(
        "cancel_random SEED={seed:#x}: {} rounds in {elapsed:?}; ops started {} (dropped in \
         flight {}, completed {}), never polled {}, stream items {}, bytes verified {}; per \
         kind {:?}",
        ROUNDS,
        c.started,
        c.dropped_in_flight,
        c.completed,
        c.never_polled,
        c.stream_items,
        c.bytes_verified,
        TAG_NAMES[1..=OP_KINDS as usize]
            .iter()
            .zip(&c.by_kind[1..=OP_KINDS as usize])
            .collect::<Vec<_>>()
    );
    if on {
        eprintln!(
            "quarantine: {} blocks freed into it, {} checked ({} MiB), {} MiB held at the end",
            q.quarantined,
            q.checked,
            q.checked_bytes >> 20,
            held >> 20
        );
    } else {
        eprintln!("quarantine off (QUARANTINE=off): frees go straight to the allocator");
    }
    assert!(
        c.started + c.never_polled >= ROUNDS * OPS_PER_ROUND,
        "{c:?}"
    );
    assert!(c.dropped_in_flight > 0 && c.completed > 0, "{c:?}");
    let report: Vec<String> = found.iter().map(describe).collect();
    assert!(
        found.is_empty() && lost == 0,
        "{} write(s) after free (SEED={seed:#x}):\n{}",
        found.len() + lost,
        report.join("\n")
    );
}

/// A read whose data does not own its buffer: the broken op the canary test needs.
struct BorrowsItsBuffer;

impl Completable for BorrowsItsBuffer {
    type Output = std::io::Result<u32>;
    fn complete(self, cqe: Cqe) -> Self::Output {
        cqe.result
    }
}

#[test]
fn quarantine_catches_a_kernel_write_into_a_freed_buffer() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // QUARANTINE=off (scripts/asan.sh, where ASan's own quarantine does this job): the freed
    // block would really be reused, so there is nothing to catch.
    if !runtime::ext::testing::require("the quarantine (QUARANTINE=off)", quarantine_wanted()) {
        return;
    }
    quarantine::enable(true);
    let _ = quarantine::take_corruptions();
    let (r, w) = tests::pipe();
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut buf = quarantine::tagged(CANARY, || vec![0u8; 4096]);
        let sqe = opcode::Read::new(types::Fd(r.as_raw_fd()), buf.as_mut_ptr(), 4096)
            .offset(u64::MAX)
            .build();
        // SAFETY: deliberately broken: the SQE points into `buf`, which the op does not own
        // and which is freed below while the read is in flight. The quarantine holds the
        // freed block (it is never reused), so the kernel's write lands in held memory.
        let op = unsafe { Op::new(BorrowsItsBuffer, sqe) };
        let mut op = Box::pin(op);
        assert!(poll_tagged(CANARY, &mut op).await.is_pending());
        drop(buf);
        // SAFETY: writes from a live slice to the pipe's write end.
        let n = unsafe { libc::write(w.as_raw_fd(), b"canary!!".as_ptr().cast(), 8) };
        assert_eq!(n, 8);
        assert_eq!(op.await.unwrap(), 8);
    });
    drop(rt);
    quarantine::check_all();
    let (found, _) = quarantine::take_corruptions();
    quarantine::enable(false);
    let canary: Vec<&Corruption> = found.iter().filter(|c| c.tag == CANARY).collect();
    for c in &canary {
        eprintln!("found as it should: {}", describe(c));
    }
    assert_eq!(canary.len(), 1, "{found:?}");
    assert_eq!(canary[0].size, 4096);
    assert_eq!((canary[0].first, canary[0].changed), (0, 8));
    assert_eq!(&canary[0].found, b"canary!!");
    assert!(
        found.iter().all(|c| c.tag == CANARY),
        "{:?}",
        found.iter().map(describe).collect::<Vec<_>>()
    );
    let _ = UNTAGGED;
}
