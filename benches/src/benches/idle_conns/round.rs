//! One contender of `bench idle-conns` in one round.

use std::io::{self, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Duration;

use super::{Kind, ServerArgs, CONN_BUF, SETTLE, START_TIMEOUT};
use crate::harness::child::{this_exe, ChildProc, EXIT_TIMEOUT};
use crate::harness::server::{Cpus, Ctl, Server};
use crate::servers;

/// One server measured: the row's name, and the program and arguments of its child process.
pub(super) type Contender = (&'static str, PathBuf, Vec<&'static str>);

/// One contender's figures in one round.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    pub(super) rss_before_kib: u64,
    /// With the first half of the connections open.
    pub(super) rss_half_kib: u64,
    pub(super) rss_after_kib: u64,
    pub(super) hwm_kib: u64,
    pub(super) idle_cpu: Duration,
    /// Times the server's threads were scheduled in over the idle window, where known.
    pub(super) idle_wakeups: Option<u64>,
}

/// `axum` (this runtime, one core) and `axum-tokio` (current-thread), from this binary's directory.
pub(super) fn http_contenders() -> io::Result<Vec<Contender>> {
    let exe = this_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no directory", exe.display())))?;
    let find = |name: &str| {
        let path = dir.join(name);
        if path.is_file() {
            return Ok(path);
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "--http needs the `{name}` example next to this binary, and {} is missing: build both with `cargo \
                 build --release -p examples --features tokio-peer --bin axum-tokio && cargo build --release -p \
                 examples --bin axum` (same CARGO_TARGET_DIR), or run scripts/idle_http.sh",
                path.display()
            ),
        ))
    };
    Ok(vec![
        ("axum", find("axum")?, vec!["--port", "0", "--cores", "1"]),
        (
            "axum-tokio",
            find("axum-tokio")?,
            vec!["--port", "0", "--runtime", "current"],
        ),
    ])
}

/// One contender, one round: server up, RSS, client connects and idles, CPU over the window, RSS.
pub(super) fn measure(
    c: &Contender,
    conns: usize,
    window: Duration,
    cpus: Cpus,
    http: bool,
) -> io::Result<Sample> {
    let what = format!("server {}", c.0);
    let mut server = ChildProc::spawn(&what, Command::new(&c.1).args(&c.2), cpus.server)?;
    let addr = server.listening(START_TIMEOUT)?;
    std::thread::sleep(SETTLE);
    server.check_alive()?;
    let pid = Some(server.pid());
    let rss = |key| sysutil::proc_status_kib(pid, key);
    let rss_before_kib = rss("VmRSS")?;

    let (addr, n) = (addr.to_string(), conns.to_string());
    let args = ["idle-client", "--addr", &addr, "--conns", &n, "--http"];
    let mut cmd = Command::new(this_exe()?);
    let mut client = ChildProc::spawn(
        "client",
        cmd.args(&args[..5 + usize::from(http)]),
        cpus.client,
    )?;
    // Generous: connects and echoes take well under 1 ms each, even on a busy machine.
    let ready = Duration::from_secs(30) + Duration::from_millis(3) * conns as u32;
    client.expect(&format!("half {}", conns / 2), ready)?;
    std::thread::sleep(SETTLE);
    let rss_half_kib = rss("VmRSS")?;
    client.say("go")?;
    client.expect(&format!("idle {conns}"), ready)?;
    std::thread::sleep(SETTLE);
    let cpu0 = proc_cpu(server.pid())?;
    std::thread::sleep(window);
    let cpu1 = proc_cpu(server.pid())?;
    let (rss_after_kib, hwm_kib) = (rss("VmRSS")?, rss("VmHWM")?);
    server.check_alive()?;
    client.check_alive()?;
    client.close_and_wait(EXIT_TIMEOUT)?;
    drop(server);
    Ok(Sample {
        rss_before_kib,
        rss_half_kib,
        rss_after_kib,
        hwm_kib,
        idle_cpu: cpu1.0.saturating_sub(cpu0.0),
        idle_wakeups: cpu1.1.zip(cpu0.1).map(|(a, b)| a.saturating_sub(b)),
    })
}

/// A process's CPU time so far, and how often its threads were scheduled in.
fn proc_cpu(pid: u32) -> io::Result<(Duration, Option<u64>)> {
    let schedstat = || -> io::Result<(Duration, Option<u64>)> {
        let (mut ns, mut switches) = (0u64, 0u64);
        for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            let path = entry?.path().join("schedstat");
            // A thread may end between the listing and the read.
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let f: Vec<u64> = text
                .split_whitespace()
                .map(|w| w.parse().unwrap_or(0))
                .collect();
            if f.len() < 3 {
                return Err(io::Error::other(format!("{}: {text:?}", path.display())));
            }
            ns += f[0];
            switches += f[2];
        }
        Ok((Duration::from_nanos(ns), Some(switches)))
    };
    schedstat().or_else(|_| stat_cpu(pid).map(|t| (t, None)))
}

/// utime + stime of `/proc/PID/stat`.
fn stat_cpu(pid: u32) -> io::Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let ticks = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
    let (Some(u), Some(s)) = (ticks(14), ticks(15)) else {
        return Err(io::Error::other(format!("no utime/stime in {path}")));
    };
    // SAFETY: sysconf takes no pointers.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_nanos((u + s) * 1_000_000_000 / hz))
}

/// `bench idle-server --kind K`: serves on 127.0.0.1.
pub fn server_main(args: ServerArgs) -> ExitCode {
    let kind = args.kind;
    let body = move |l, ctl| {
        // A server that stops serving ends the process, so the parent sees it at once.
        match serve(kind, l, ctl) {
            Ok(()) => eprintln!("bench idle-server: {kind:?} server returned"),
            Err(e) => eprintln!("bench idle-server: {kind:?} server: {e}"),
        }
        std::process::exit(1)
    };
    let listening = Server::spawn("idle-server", Cpus::pick().server, body).and_then(|server| {
        println!("listening {}", server.addr);
        io::stdout().flush().map(|()| server)
    });
    let Ok(_server) =
        listening.map_err(|e| eprintln!("bench idle-server: starting the {kind:?} server: {e}"))
    else {
        return ExitCode::FAILURE;
    };
    // Blocks, using no CPU, until the parent closes the pipe.
    let _ = io::stdin().read_to_end(&mut Vec::new());
    // Not `Server::stop` (nor its drop: `exit` runs none): the connections may still be open; the process ends them.
    std::process::exit(0)
}

/// The echo server of `kind`, as `bench idle-server` runs it.
pub(super) fn serve(kind: Kind, listener: std::net::TcpListener, ctl: Arc<Ctl>) -> io::Result<()> {
    match kind {
        Kind::Runtime => {
            // Accepted sockets inherit TCP_NODELAY: no option call per connection.
            socket2::SockRef::from(&listener).set_tcp_nodelay(true)?;
            servers::runtime_echo(
                listener,
                ctl,
                runtime::Builder::new().cores(1),
                servers::Conn::Untallied,
            )
        }
        Kind::Tokio => servers::tokio_echo(listener, ctl, CONN_BUF, false),
        Kind::Raw => servers::raw::echo(listener, ctl, CONN_BUF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_of_this_process() {
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(proc_cpu(std::process::id()).unwrap().0 > Duration::ZERO);
        assert!(stat_cpu(std::process::id()).unwrap() > Duration::ZERO);
    }
}
