//! Child processes, waited for through the ring (tokio's `tokio::process` API).
//!
//! [`Command`] is std's builder (the same methods) plus [`kill_on_drop`]; spawning is std's
//! `spawn` (a `posix_spawn` or `vfork` + `exec` under glibc: the core blocks no longer than
//! that), then a pidfd is opened for the child. [`Child::wait`] is one
//! `IORING_OP_WAITID` (Linux 6.7) on the pidfd, which waits and reaps; older kernels poll the
//! pidfd through the ring, then reap with a non-blocking `waitid`. There is no SIGCHLD
//! handler and no reaper thread.
//!
//! No zombie is left behind:
//! - a `Child` dropped before it was waited for is reaped by a task spawned on the current
//!   core (after a SIGKILL with [`kill_on_drop`]); outside a runtime, or if that task is
//!   dropped with its runtime, by a short-lived std thread that waits for it;
//! - the pidfd names the child for as long as it is not reaped, so a kill or wait can never
//!   reach another process that reused its pid.
//!
//! The child's stdin, stdout and stderr (with [`Stdio::piped`]) are pipes whose reads and
//! writes are ring ops, with the futures-io traits ([`ChildStdin`], [`ChildStdout`],
//! [`ChildStderr`]).
//!
//! ```
//! use runtime::process::Command;
//!
//! let rt = runtime::Runtime::new().unwrap();
//! let out = rt.block_on(async { Command::new("echo").arg("hello").output().await }).unwrap();
//! assert!(out.status.success());
//! assert_eq!(out.stdout, b"hello\n");
//! ```
//!
//! [`kill_on_drop`]: Command::kill_on_drop

mod pipe;
mod wait;

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Output};

pub use pipe::{ChildStderr, ChildStdin, ChildStdout, PipeReader, PipeWriter};
pub use std::process::Stdio;
#[doc(hidden)]
pub use wait::force_poll_fallback;

use crate::fd::SharedFd;

/// A process builder: std's [`std::process::Command`] with tokio's additions.
///
/// # Examples
///
/// Run to completion and collect the output:
///
/// ```
/// use runtime::process::Command;
///
/// let rt = runtime::Runtime::new()?;
/// let out = rt.block_on(Command::new("echo").arg("hello").output())?;
/// assert!(out.status.success());
/// assert_eq!(out.stdout, b"hello\n");
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Talk to a child through its pipes, then wait for it:
///
/// ```
/// use futures::{AsyncReadExt, AsyncWriteExt};
/// use runtime::process::{Command, Stdio};
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let mut child = Command::new("tr")
///         .arg("a-z")
///         .arg("A-Z")
///         .stdin(Stdio::piped())
///         .stdout(Stdio::piped())
///         .kill_on_drop(true)
///         .spawn()?;
///     let mut stdin = child.stdin.take().unwrap();
///     stdin.write_all(b"shout").await?;
///     stdin.close().await?; // the child sees the end of its input
///     drop(stdin);
///     let mut shouted = String::new();
///     child.stdout.take().unwrap().read_to_string(&mut shouted).await?;
///     assert_eq!(shouted, "SHOUT");
///     assert!(child.wait().await?.success());
///     Ok::<(), std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Command {
    std: std::process::Command,
    kill_on_drop: bool,
}

impl Command {
    /// A command for `program` (looked up in `PATH` unless it names a path).
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            std: std::process::Command::new(program),
            kill_on_drop: false,
        }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.std.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.std.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, val: impl AsRef<OsStr>) -> &mut Command {
        self.std.env(key, val);
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.std.envs(vars);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.std.env_remove(key);
        self
    }

    /// Starts from an empty environment.
    pub fn env_clear(&mut self) -> &mut Command {
        self.std.env_clear();
        self
    }

    /// Sets the working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.std.current_dir(dir);
        self
    }

    /// Sets the child's stdin (inherited by default for `spawn` and `status`).
    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stdin(cfg);
        self
    }

    /// Sets the child's stdout (inherited by default for `spawn` and `status`, piped for
    /// `output`).
    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stdout(cfg);
        self
    }

    /// Sets the child's stderr (as `stdout`).
    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.std.stderr(cfg);
        self
    }

    /// Whether dropping the [`Child`] before it exits kills it (SIGKILL). Either way the
    /// child is reaped (see the module docs).
    pub fn kill_on_drop(&mut self, on: bool) -> &mut Command {
        self.kill_on_drop = on;
        self
    }

    /// The std builder underneath (for what this one does not forward: `uid`, `gid`,
    /// `process_group`, `pre_exec`, ...).
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        &mut self.std
    }

    /// Starts the child.
    ///
    /// # Errors
    /// As std's `spawn` (`NotFound` for a missing program, with the program named), or if
    /// the pidfd cannot be opened (a kernel before 5.3): the child is then killed and
    /// reaped before the error returns.
    pub fn spawn(&mut self) -> io::Result<Child> {
        let mut child = self.std.spawn().map_err(|e| {
            crate::error::context(
                e,
                format!("spawning {:?}", self.std.get_program().to_string_lossy()),
            )
        })?;
        let pidfd = match wait::pidfd_open(child.id()) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(crate::error::context(e, "pidfd_open for the new child"));
            }
        };
        Ok(Child {
            pid: child.id(),
            stdin: child.stdin.take().map(|p| PipeWriter::new(p.into())),
            stdout: child.stdout.take().map(|p| PipeReader::new(p.into())),
            stderr: child.stderr.take().map(|p| PipeReader::new(p.into())),
            pidfd: Some(SharedFd::new(pidfd)),
            status: None,
            kill_on_drop: self.kill_on_drop,
        })
    }

    /// Runs the child to its end with stdout and stderr collected (both are set to piped,
    /// as tokio's `output` does; stdin is as set, inherited by default).
    ///
    /// # Errors
    /// As [`spawn`](Command::spawn), and reading the pipes or waiting.
    pub async fn output(&mut self) -> io::Result<Output> {
        self.std.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.spawn()?.wait_with_output().await
    }

    /// Runs the child to its end (stdio inherited unless set) and gives its exit status.
    ///
    /// # Errors
    /// As [`spawn`](Command::spawn) and [`Child::wait`].
    pub async fn status(&mut self) -> io::Result<ExitStatus> {
        self.spawn()?.wait().await
    }
}

/// A running (or exited, not yet waited) child process, from [`Command::spawn`].
#[derive(Debug)]
pub struct Child {
    pid: u32,
    /// The child's stdin, if piped. Take it (`child.stdin.take()`) to write and to close.
    pub stdin: Option<ChildStdin>,
    /// The child's stdout, if piped.
    pub stdout: Option<ChildStdout>,
    /// The child's stderr, if piped.
    pub stderr: Option<ChildStderr>,
    /// `None` once the child is reaped.
    pidfd: Option<SharedFd>,
    status: Option<ExitStatus>,
    kill_on_drop: bool,
}

impl Child {
    /// The child's process id while it is not reaped; `None` after `wait` returned.
    pub fn id(&self) -> Option<u32> {
        self.status.is_none().then_some(self.pid)
    }

    /// Waits for the child to exit (one WAITID op), reaps it, and gives its status. Stdin
    /// is closed first, so a child that reads it to the end can finish. Cancel-safe: a
    /// dropped `wait` leaves the child to a later `wait` (or to the drop's reaping).
    ///
    /// # Errors
    /// From the kernel; not for the child's own failure, which is in the status.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(status) = self.status {
            return Ok(status);
        }
        let pidfd = self
            .pidfd
            .clone()
            .expect("a child not yet reaped has its pidfd");
        let status = wait::reap(&pidfd).await?;
        self.status = Some(status);
        self.pidfd = None;
        Ok(status)
    }

    /// The status if the child has exited (reaping it), `None` if it still runs; never
    /// waits.
    ///
    /// # Errors
    /// From `waitid(2)`.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let pidfd = self
            .pidfd
            .as_ref()
            .expect("a child not yet reaped has its pidfd");
        let status = wait::try_reap(pidfd)?;
        if status.is_some() {
            self.status = status;
            self.pidfd = None;
        }
        Ok(status)
    }

    /// Sends SIGKILL (through the pidfd); does not wait. A child that already exited is
    /// not an error.
    ///
    /// # Errors
    /// From `pidfd_send_signal(2)`.
    pub fn start_kill(&mut self) -> io::Result<()> {
        match &self.pidfd {
            None => Ok(()),
            Some(pidfd) => match wait::pidfd_kill(pidfd, libc::SIGKILL) {
                // ESRCH: it exited and waits to be reaped.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
                res => res,
            },
        }
    }

    /// Kills the child (SIGKILL) and waits for it.
    ///
    /// # Errors
    /// As [`start_kill`](Child::start_kill) and [`wait`](Child::wait).
    pub async fn kill(&mut self) -> io::Result<()> {
        self.start_kill()?;
        self.wait().await.map(drop)
    }

    /// Waits for the child with its piped stdout and stderr collected.
    ///
    /// # Errors
    /// As [`wait`](Child::wait), and reading the pipes.
    pub async fn wait_with_output(mut self) -> io::Result<Output> {
        // Both pipes at once: a child that fills one while we wait on the other would block.
        let read = |p: Option<PipeReader>| async move {
            match p {
                Some(mut p) => p.read_to_vec().await,
                None => Ok(Vec::new()),
            }
        };
        let (stdout, stderr) =
            futures::future::join(read(self.stdout.take()), read(self.stderr.take())).await;
        let status = self.wait().await?;
        Ok(Output {
            status,
            stdout: stdout?,
            stderr: stderr?,
        })
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let Some(pidfd) = self.pidfd.take() else {
            return;
        };
        if self.kill_on_drop {
            let _ = wait::pidfd_kill(&pidfd, libc::SIGKILL);
        }
        if let Ok(Some(_)) = wait::try_reap(&pidfd) {
            return;
        }
        // Still running: reap it when it exits, through the ring if a runtime runs here.
        if crate::context::current_core_id().is_some() {
            // The guard is made here, not in the task: a task dropped before its first
            // poll (its runtime shutting down) still hands the child to a thread.
            let mut guard = ReapOnDrop(Some(pidfd));
            drop(crate::spawn_local(async move {
                if let Some(fd) = &guard.0 {
                    if wait::reap(fd).await.is_ok() {
                        guard.disarm();
                    }
                }
            }));
        } else {
            reap_on_thread(pidfd);
        }
    }
}

/// A child still to reap: if the task that waits for it is dropped (its runtime goes
/// away), a std thread takes over.
struct ReapOnDrop(Option<SharedFd>);

impl ReapOnDrop {
    /// The child was reaped: nothing left to do on drop.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for ReapOnDrop {
    fn drop(&mut self) {
        if let Some(pidfd) = self.0.take() {
            reap_on_thread(pidfd);
        }
    }
}

/// Reaps the child behind `pidfd` from a detached std thread (blocking `waitid`).
fn reap_on_thread(pidfd: SharedFd) {
    let Ok(fd) = pidfd.into_owned() else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("runtime-reaper".into())
        .spawn(move || drop(wait::reap_blocking(&fd)));
}
