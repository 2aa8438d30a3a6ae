//! `soak`: a bounded mixed load on the runtime that checks memory and fds stay flat.
//!
//! Each round runs, at once: TCP echo connections opened, checked and closed (a server on
//! `TcpListener::incoming`), timers and timeouts, files written and read back through `fs`,
//! wakes from another std thread (a `Send` waker), and futures dropped while their ops are
//! in flight (connect, recv, file read, nop, sleep). After a warm-up, the fd count must be
//! back to its baseline at every round's end and RSS must stay under the warm-up RSS plus
//! 10% plus 4 MiB; the first breach is reported and the exit status is 1.
//!
//! `soak --secs N [--every S] [--warmup W] [--seed X]`; see `--help`.

use std::cell::Cell;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use corering_net::{TcpListener, TcpStream};
use futures::channel::oneshot;
use futures::{FutureExt, StreamExt};
use runtime::buf::IoBuf;
use runtime::time::{sleep, timeout};
use tests::Rng;

const USAGE: &str = "\
usage: soak --secs N [--every S] [--warmup W] [--seed X]

Runs a mixed load on the runtime for N seconds (TCP echo connections, timers, file writes
and reads, wakes from another thread, futures dropped in flight) and prints every S seconds
(default 1) the elapsed time, RSS, open fds and ops/s. After W seconds of warm-up (default
N/5, at least 1) the fd count must return to its baseline after every round and RSS must
stay within warm-up RSS + 10% + 4 MiB; otherwise it says what grew and exits 1.";

/// Connections, sleeps, files, cross-thread wakes and dropped futures per round.
const CONNS: usize = 16;
const SLEEPS: usize = 32;
const FILES: usize = 4;
const WAKES: usize = 20;
const DROPS: usize = 10;
/// How long the fd count may take to settle after a round (cancels still being reaped).
const SETTLE: Duration = Duration::from_millis(200);

struct Args {
    secs: f64,
    every: f64,
    warmup: f64,
    seed: u64,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut secs = None;
    let mut every = 1.0;
    let mut warmup = None;
    let mut seed = tests::seed_from_env(0x50AC);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let secs_of =
            |name: &str, v: String| v.parse::<f64>().map_err(|e| format!("{name} {v:?}: {e}"));
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--secs" => secs = Some(secs_of("--secs", value("--secs")?)?),
            "--every" => every = secs_of("--every", value("--every")?)?,
            "--warmup" => warmup = Some(secs_of("--warmup", value("--warmup")?)?),
            "--seed" => {
                let v = value("--seed")?;
                seed = v.parse().map_err(|e| format!("--seed {v:?}: {e}"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let secs = secs.ok_or("--secs is required")?;
    let warmup = warmup.unwrap_or((secs / 5.0).max(1.0));
    let valid = every > 0.0 && secs > warmup && warmup >= 0.0 && secs.is_finite();
    if !valid {
        return Err(format!(
            "need --every > 0 and --secs > --warmup (got secs {secs}, warmup {warmup}, every {every})"
        ));
    }
    Ok(Some(Args {
        secs,
        every,
        warmup,
        seed,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            // A closed stdout (`soak --help | head -1`) is not an error worth a panic.
            let _ = writeln!(io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("soak: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let dir = std::env::temp_dir().join(format!("soak-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("soak: creating {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let result = runtime::Runtime::new().and_then(|rt| rt.block_on(soak(&args, &dir)));
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(summary) => {
            println!("soak ok: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("soak FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Counts live connections on the server side; decrements when dropped.
struct Active(Rc<Cell<usize>>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

async fn echo(stream: TcpStream, _active: Active) -> io::Result<()> {
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let (res, b) = stream.read_owned(buf).await;
        let n = res?;
        if n == 0 {
            return Ok(());
        }
        let (res, b) = stream.write_all_owned(b.slice(..n)).await;
        res?;
        buf = b.into_inner();
    }
}

async fn serve(listener: TcpListener, active: Rc<Cell<usize>>) {
    let mut incoming = listener.incoming();
    while let Some(res) = incoming.next().await {
        match res {
            Ok(stream) => {
                active.set(active.get() + 1);
                let guard = Active(active.clone());
                // Errors (a peer that went away) end that connection only.
                runtime::spawn_local(async move { drop(echo(stream, guard).await) });
            }
            Err(e) => eprintln!("soak: accept: {e}"),
        }
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// One echo connection: send `len` bytes, half-close, read them all back.
async fn client(addr: std::net::SocketAddr, len: usize, seed: u64) -> io::Result<()> {
    let stream = TcpStream::connect(addr).await?;
    let msg: Vec<u8> = (0..len as u64)
        .map(|i| tests::payload_byte(i + seed))
        .collect();
    let (res, msg) = stream.write_all_owned(msg).await;
    res?;
    stream.shutdown_socket(std::net::Shutdown::Write).await?;
    let mut got = Vec::with_capacity(len);
    loop {
        let (res, buf) = stream.read_owned(Vec::with_capacity(16 << 10)).await;
        if res? == 0 {
            break;
        }
        got.extend_from_slice(&buf);
    }
    if got != msg {
        return Err(invalid(format!(
            "echo of {len} bytes came back as {}",
            got.len()
        )));
    }
    Ok(())
}

async fn file_round_trip(path: PathBuf, len: usize, seed: u64) -> io::Result<()> {
    let data: Vec<u8> = (0..len as u64)
        .map(|i| tests::payload_byte(i.wrapping_add(seed)))
        .collect();
    let file = corering_fs::File::create(&path).await?;
    let (res, data) = file.write_all_at(data, 0).await;
    res?;
    file.close().await?;
    let back = corering_fs::read(&path).await?;
    corering_fs::remove_file(&path).await?;
    if back != data {
        return Err(invalid(format!("{} read back differs", path.display())));
    }
    Ok(())
}

/// Ops started and dropped while in the kernel; each must leave nothing behind.
async fn drops(addr: std::net::SocketAddr, dir: &Path, rng: &mut Rng) -> io::Result<()> {
    let idle = TcpStream::connect(addr).await?;
    let path = dir.join("dropped");
    corering_fs::write(&path, vec![7u8; 4096]).await?;
    let file = corering_fs::File::open(&path).await?;
    for _ in 0..DROPS {
        match rng.below(5) {
            0 => drop(TcpStream::connect(addr).now_or_never()),
            1 => drop(idle.read_owned(vec![0u8; 64]).now_or_never()),
            2 => drop(file.read_at(vec![0u8; 4096], 0).now_or_never()),
            3 => drop(runtime::ext::raw::nop().now_or_never()),
            _ => drop(timeout(Duration::from_micros(200), sleep(Duration::from_secs(3600))).await),
        }
    }
    file.close().await?;
    corering_fs::remove_file(&path).await
}

/// Runs rounds until `args.secs`; checks fds and RSS after the warm-up.
async fn soak(args: &Args, dir: &Path) -> io::Result<String> {
    let mut rng = Rng::new(args.seed);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let active = Rc::new(Cell::new(0));
    let server = runtime::spawn_local(serve(listener, active.clone()));

    // The waking thread: it answers each request from another thread, after a pause long
    // enough for the core to go to sleep in the kernel.
    let (wake_tx, wake_rx) = std::sync::mpsc::channel::<oneshot::Sender<u64>>();
    let waker = std::thread::spawn(move || {
        for (i, tx) in wake_rx.iter().enumerate() {
            std::thread::sleep(Duration::from_micros(50));
            let _ = tx.send(i as u64);
        }
    });

    let start = Instant::now();
    let end = start + Duration::from_secs_f64(args.secs);
    let warm_end = start + Duration::from_secs_f64(args.warmup);
    let every = Duration::from_secs_f64(args.every);
    let mut next_report = start + every;
    let (mut ops, mut ops_at_report, mut rounds) = (0u64, 0u64, 0u64);
    let mut last_report = start;
    // Set at the first round boundary after the warm-up.
    let mut baseline: Option<(usize, u64, u64)> = None; // (fds, warm RSS, RSS bound)
    let mut rss_max = 0;

    let outcome = loop {
        let now = Instant::now();
        if now >= end {
            break Ok(());
        }
        // One round, all kinds at once.
        let seed = rng.next_u64();
        let conns = futures::future::join_all((0..CONNS).map(|i| {
            let len = rng.range(1, 64 << 10) as usize;
            client(addr, len, seed.wrapping_add(i as u64))
        }));
        let sleeps = futures::future::join_all(
            (0..SLEEPS).map(|_| sleep(Duration::from_micros(rng.below(3000)))),
        );
        let files = futures::future::join_all((0..FILES).map(|i| {
            let len = rng.range(1, 256 << 10) as usize;
            file_round_trip(dir.join(format!("f{i}")), len, seed | 1)
        }));
        let wakes = async {
            for _ in 0..WAKES {
                let (tx, rx) = oneshot::channel();
                wake_tx
                    .send(tx)
                    .map_err(|_| invalid("the waking thread died".into()))?;
                rx.await.map_err(|_| invalid("a wake was lost".into()))?;
            }
            Ok::<_, io::Error>(())
        };
        let mut drop_rng = Rng::new(seed);
        let (conns, _, files, wakes, dropped) =
            futures::join!(conns, sleeps, files, wakes, drops(addr, dir, &mut drop_rng));
        if let Some(e) = conns.into_iter().chain(files).find_map(Result::err) {
            break Err(e);
        }
        if let Err(e) = wakes.and(dropped) {
            break Err(e);
        }
        rounds += 1;
        ops += (CONNS + SLEEPS + FILES + WAKES + DROPS) as u64;

        // The round's server connections and cancelled ops finish shortly after it.
        let settle = Instant::now() + SETTLE;
        while (active.get() != 0 || baseline.is_some_and(|b| tests::fd_count() != b.0))
            && Instant::now() < settle
        {
            sleep(Duration::from_millis(1)).await;
        }
        let fds = tests::fd_count();
        let rss = tests::rss_kib();
        rss_max = rss_max.max(rss);
        let now = Instant::now();
        match baseline {
            None if now >= warm_end => {
                let bound = rss + rss / 10 + 4096;
                println!("warm-up done: baseline {fds} fds, RSS {rss} KiB, bound {bound} KiB");
                baseline = Some((fds, rss, bound));
            }
            Some((base_fds, _, _)) if fds != base_fds || active.get() != 0 => {
                break Err(invalid(format!(
                    "fd leak: {fds} fds open after round {rounds}, baseline {base_fds} \
                     ({} server connections still open)",
                    active.get()
                )));
            }
            Some((_, warm, bound)) if rss > bound => {
                break Err(invalid(format!(
                    "RSS grew: {rss} KiB after round {rounds}, warm-up {warm} KiB, bound {bound} KiB"
                )));
            }
            _ => {}
        }
        if now >= next_report {
            let secs = now.duration_since(last_report).as_secs_f64();
            println!(
                "t={:6.1}s rss={rss}KiB fds={fds} ops/s={:.0} rounds={rounds}",
                now.duration_since(start).as_secs_f64(),
                (ops - ops_at_report) as f64 / secs
            );
            ops_at_report = ops;
            last_report = now;
            next_report = now + every;
        }
    };

    server.abort();
    drop(wake_tx);
    waker
        .join()
        .map_err(|_| invalid("the waking thread panicked".into()))?;
    outcome?;
    let (fds, warm, bound) = baseline.expect("the run is longer than its warm-up");
    Ok(format!(
        "{rounds} rounds, {ops} ops in {:.1} s; fds {fds} throughout; RSS warm-up {warm} KiB, \
         max {rss_max} KiB, bound {bound} KiB",
        start.elapsed().as_secs_f64()
    ))
}
