//! Child processes of a benchmark (`idle-conns`'s servers and client, `http-cores`'s servers).

use std::io::{self, BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Bound on a child's exit once its stdin is closed, or once its stdout has closed.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A child process whose stdout lines come through a channel.
pub struct ChildProc {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl ChildProc {
    /// Starts `cmd` pinned to `cpu`, stdin and stdout piped, stderr inherited.
    pub fn spawn(what: &str, cmd: &mut Command, cpu: usize) -> io::Result<ChildProc> {
        let set = cpu_set(&[cpu])
            .map_err(|e| io::Error::new(e.kind(), format!("cannot pin {what}: {e}")))?;
        // SAFETY: the closure runs in the child between fork and exec, and makes only two system calls
        // (async-signal-safe, no allocation, no lock) on data copied into it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0
                    || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
        let spawned = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let program = cmd.get_program();
        let mut child = spawned.map_err(|e| {
            io::Error::new(e.kind(), format!("starting the {what} ({program:?}): {e}"))
        })?;
        let (stdin, stdout) = (
            child.stdin.take(),
            child.stdout.take().expect("stdout is piped"),
        );
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("child-out".to_string())
            .spawn(move || {
                BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                    .try_for_each(|line| tx.send(line))
            })?;
        Ok(ChildProc {
            what: what.to_string(),
            child,
            stdin,
            lines,
        })
    }

    /// An error naming this child.
    fn error(&self, kind: io::ErrorKind, msg: impl std::fmt::Display) -> io::Error {
        io::Error::new(kind, format!("the {} {msg}", self.what))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line the child prints, within `limit`.
    pub fn line_within(&mut self, limit: Duration, waiting_for: &str) -> io::Result<String> {
        match self.lines.recv_timeout(limit) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(self.error(
                io::ErrorKind::TimedOut,
                format!("printed no {waiting_for} within {limit:?}"),
            )),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .wait_for(EXIT_TIMEOUT)?
                    .map_or("still running".to_string(), |s| s.to_string());
                let msg = format!(
                    "exited ({status}) before printing {waiting_for} (its stderr is above)"
                );
                Err(self.error(io::ErrorKind::Other, msg))
            }
        }
    }

    /// The address its first line names (`listening ADDR`, or an example's `listening on http://ADDR/`), within
    /// `limit`.
    pub fn listening(&mut self, limit: Duration) -> io::Result<SocketAddr> {
        let line = self.line_within(limit, "its listening line")?;
        let addr = listen_addr(&line);
        addr.ok_or_else(|| {
            io::Error::other(format!("no address in the server's first line: {line:?}"))
        })
    }

    /// The next line, which must be `want`, within `limit`.
    pub fn expect(&mut self, want: &str, limit: Duration) -> io::Result<()> {
        let line = self.line_within(limit, &format!("{want:?}"))?;
        match line.trim() == want {
            true => Ok(()),
            false => Err(self.error(io::ErrorKind::Other, format!("said {line:?}, not {want:?}"))),
        }
    }

    /// Writes `line` to its stdin.
    pub fn say(&mut self, line: &str) -> io::Result<()> {
        let closed = self.error(io::ErrorKind::Other, "has its stdin closed");
        let stdin = self.stdin.as_mut().ok_or(closed)?;
        let said = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
        said.map_err(|e| {
            io::Error::new(e.kind(), format!("telling the {} {line:?}: {e}", self.what))
        })
    }

    /// An error if the child has exited.
    pub fn check_alive(&mut self) -> io::Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(self.error(
                io::ErrorKind::Other,
                format!("exited early ({status}; its stderr is above)"),
            )),
        }
    }

    /// Its exit status, waiting at most `limit`; `None` if it is still running.
    fn wait_for(&mut self, limit: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait()? {
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                status => return Ok(status),
            }
        }
    }

    /// Closes its stdin and waits for it to exit successfully, at most `limit`.
    pub fn close_and_wait(&mut self, limit: Duration) -> io::Result<()> {
        drop(self.stdin.take());
        match self.wait_for(limit)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(self.error(
                io::ErrorKind::Other,
                format!("failed ({status}; its stderr is above)"),
            )),
            None => Err(self.error(
                io::ErrorKind::TimedOut,
                format!("did not exit within {limit:?}"),
            )),
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The CPU set of `cpus`.
pub fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            let msg = format!("CPU {cpu} is past CPU_SETSIZE");
            return Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so the bit is inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// This binary, run again (for the hidden subcommands).
pub fn this_exe() -> io::Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| io::Error::new(e.kind(), format!("finding this executable to re-run: {e}")))
}

/// The first word of `line` that reads as a socket address, `http://` and a trailing `/`, `,` or `)` aside.
fn listen_addr(line: &str) -> Option<SocketAddr> {
    line.split_whitespace().find_map(|w| {
        w.trim_start_matches("http://")
            .trim_end_matches(['/', ',', ')'])
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_listening_addresses() {
        let a: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(listen_addr("listening 127.0.0.1:4000"), Some(a));
        assert_eq!(
            listen_addr("axum: listening on http://127.0.0.1:4000 (HTTP/1.1, h2c) with 1 core(s)"),
            Some(a)
        );
        assert_eq!(
            listen_addr("axum-tokio: listening on http://127.0.0.1:4000/, tokio"),
            Some(a)
        );
        assert_eq!(listen_addr("starting"), None);
    }
}
