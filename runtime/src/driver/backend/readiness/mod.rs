//! The readiness backend: where io_uring is refused (a container's seccomp profile,
//! `kernel.io_uring_disabled`, an old kernel) or [`Backend::Epoll`](crate::Backend) is
//! asked for, a core's driver plays the kernel's part of the ring itself.
//!
//! The ops and the driver are the same on both backends: ops build SQEs and the driver
//! pushes them into its SQ, which here is a plain array in memory ([`Sq::local`])
//! instead of the kernel's. Each "enter" hands them to its [`Ring::enter`](super::Ring::enter), which carries
//! each one out with the system call it stands for, and posts its CQE into a queue the
//! driver reaps exactly as it reaps the kernel's CQ:
//!
//! - socket, pipe and eventfd ops (receive, send, read, write, accept, connect, a pidfd
//!   wait) are tried at once without blocking; one that answers `EAGAIN` waits, in
//!   submission order behind the others on its fd and side, until epoll says the fd is
//!   ready (each fd is registered once, edge-triggered, on first use, and set
//!   non-blocking), and is retried then;
//! - multishot accepts, receives and polls keep posting CQEs flagged `IORING_CQE_F_MORE` on
//!   each readiness, as the kernel's do;
//! - provided-buffer rings ([`pbuf`]) are played in user space: a receive or read that
//!   selects a buffer takes the ring's head entry only when bytes arrive, so the default read
//!   path (one multishot receive per connection on the core's shared ring) is the same as on
//!   io_uring, and an idle connection holds no buffer;
//! - file and path ops (and reads and writes of regular files, which epoll refuses) run
//!   on the blocking pool; a read tries `preadv2(RWF_NOWAIT)` on the core first, which
//!   the page cache answers without blocking;
//! - linked SQEs run in order, the rest of a chain cancelled when one fails; a cancel
//!   removes a waiting op and posts its `-ECANCELED`;
//! - io_uring-only ops and flags (direct descriptors, `MSG_RING`, socket commands, bundles,
//!   incremental buffers) answer `EINVAL` (`EBADF` for a direct descriptor), as a kernel
//!   without them does; the [`Features`](crate::Features) that use them are off.
//!
//! # Invariant
//! As on io_uring, an op's CQE is posted only once nothing will touch its memory any more:
//! after its last attempt on the core, or after its blocking-pool job returned. A cancel
//! cannot stop a job already running on the pool (`-EALREADY`); its op's memory stays
//! owned by the driver's slot until the job's CQE, as the kernel's in-flight ops do.

pub(crate) mod class;
mod exec;
pub(crate) mod pbuf;
mod ring;
mod run;
mod table;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::blocking::Job;
use crate::driver::sqe::Sqe;
use table::{Kind, Table};

use crate::driver::sq::Sq;

/// Hands a job to the runtime's blocking pool; gives it back if the pool is closed.
pub(crate) type Offload = Arc<dyn Fn(Job) -> Result<(), Job> + Send + Sync>;

/// epoll `data` of the eventfd that blocking-pool jobs write when they finish.
const POOL_TOKEN: u64 = u64::MAX;

/// The events every fd is registered for: both sides, edge-triggered.
const INTEREST: u32 = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;

/// How many epoll events one wait takes.
const EVENTS: usize = 256;

/// A CQE of the readiness backend: `user_data`, result, flags.
type Cqe = (u64, i32, u32);

/// Results of blocking-pool jobs, for the core to post.
struct Finished {
    results: Mutex<Vec<(Sqe, i32)>>,
    any: AtomicBool,
    /// Written by each finished job; epoll watches it.
    event: OwnedFd,
}

impl Finished {
    fn post(&self, sqe: Sqe, res: i32) {
        self.results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((sqe, res));
        self.any.store(true, Ordering::Release);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to the eventfd this struct owns. A failure
        // (the counter full, never in practice) loses nothing: `any` is set.
        unsafe { libc::write(self.event.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// A file op on its way to the blocking pool, carried out when dropped (see
/// `Readiness::offload`).
struct PoolOp {
    sqe: Sqe,
    finished: Arc<Finished>,
}

impl Drop for PoolOp {
    fn drop(&mut self) {
        // SAFETY: the op's memory is its own until its CQE, which is posted only after this
        // call returns (module invariant).
        let r = unsafe { exec::blocking(&self.sqe) };
        self.finished.post(self.sqe, r);
    }
}

/// One core's readiness backend: its epoll instance, fds, waiting ops and CQ.
pub(crate) struct Readiness {
    epoll: OwnedFd,
    table: Table,
    /// Posted CQEs, reaped by the driver in order.
    cq: VecDeque<Cqe>,
    /// The rest of each linked chain, by the `user_data` of the op that runs now.
    chains: HashMap<u64, VecDeque<Sqe>>,
    /// SQEs to start (a chain's next op, once the one before it completed).
    starts: VecDeque<Sqe>,
    /// `user_data` of the ops running on the blocking pool.
    on_pool: HashSet<u64>,
    finished: Arc<Finished>,
    offload: Option<Offload>,
    events: Vec<libc::epoll_event>,
    /// Provided-buffer rings registered with this backend.
    rings: pbuf::Rings,
    /// Whether `epoll_pwait2` (nanosecond timeouts, Linux 5.11) is there.
    pwait2: bool,
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes two integers; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Readiness {
    /// An epoll instance and the pool's completion eventfd. `offload` runs file ops
    /// (`None`: they run on the core, blocking it).
    pub(crate) fn new(offload: Option<Offload>) -> io::Result<Readiness> {
        // SAFETY: epoll_create1 takes a flag; the result is checked.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("epoll_create1 failed: {e}"),
            ));
        }
        // SAFETY: a new fd nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(ep) };
        let finished = Arc::new(Finished {
            results: Mutex::new(Vec::new()),
            any: AtomicBool::new(false),
            event: eventfd()?,
        });
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: POOL_TOKEN,
        };
        // SAFETY: a live epoll_event; both fds are open.
        if unsafe {
            libc::epoll_ctl(
                epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                finished.event.as_raw_fd(),
                &mut ev,
            )
        } < 0
        {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("epoll_ctl failed: {e}")));
        }
        Ok(Readiness {
            epoll,
            table: Table::default(),
            cq: VecDeque::new(),
            chains: HashMap::new(),
            starts: VecDeque::new(),
            on_pool: HashSet::new(),
            finished,
            offload,
            events: Vec::with_capacity(EVENTS),
            rings: pbuf::Rings::default(),
            pwait2: true,
        })
    }

    /// The owner of `fd` is closing it or giving it up: its number may name another file
    /// next, so the backend forgets it (and takes it out of the epoll set).
    pub(super) fn forget_fd(&mut self, fd: i32) {
        if fd < 0 {
            return;
        }
        if self.table.forget(fd) == Kind::Ready {
            // SAFETY: removes `fd` from our epoll set; no memory. An error (the fd already
            // closed) leaves nothing registered.
            unsafe {
                libc::epoll_ctl(
                    self.epoll.as_raw_fd(),
                    libc::EPOLL_CTL_DEL,
                    fd,
                    std::ptr::null_mut(),
                )
            };
        }
    }

    /// The kernel's part of `io_uring_enter(2)` (see [`Ring::enter`](super::Ring::enter)):
    /// carries out every SQE queued in `sq` (the driver's local SQ), then, with
    /// `getevents`, collects readiness and finished pool jobs, waiting up to `timeout`
    /// (`None`: no limit) for `min_complete` CQEs. Returns how many SQEs were taken.
    fn enter_local(
        &mut self,
        sq: &mut Sq,
        min_complete: u32,
        getevents: bool,
        timeout: Option<Duration>,
    ) -> io::Result<u32> {
        let mut taken = 0;
        // SAFETY: `sq` is the driver's local SQ (this backend's driver has no other), and
        // every SQE in it points only at memory its op owns until its final CQE.
        while let Some(first) = unsafe { sq.take_local() } {
            taken += 1;
            let first = Sqe::of(first);
            if first.links() {
                let mut rest = VecDeque::new();
                let mut last = first;
                while last.links() {
                    // SAFETY: as above.
                    let Some(next) = (unsafe { sq.take_local() }) else {
                        break;
                    };
                    taken += 1;
                    last = Sqe::of(next);
                    rest.push_back(last);
                }
                if !rest.is_empty() {
                    self.chains.insert(first.user_data(), rest);
                }
            }
            self.start(first);
            self.run_starts();
        }
        if !getevents {
            return Ok(taken);
        }
        self.collect_finished();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let wait = min_complete > 0 && self.cq.len() < min_complete as usize;
            let t = if wait {
                deadline.map(|d| d.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            self.wait(t)?;
            self.collect_finished();
            let expired = deadline.is_some_and(|d| Instant::now() >= d);
            if !wait || self.cq.len() >= min_complete as usize || expired {
                return Ok(taken);
            }
        }
    }

    /// One `epoll_wait`, for at most `timeout`; retries every op its events make ready.
    fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.events.clear();
        let n = self.epoll_wait(timeout)?;
        // SAFETY: epoll_wait initialized the first `n` events.
        unsafe { self.events.set_len(n) };
        for i in 0..n {
            let ev = self.events[i];
            let (bits, token) = (ev.events, ev.u64);
            if token == POOL_TOKEN {
                let mut buf = 0u64;
                // SAFETY: reads 8 bytes into a live u64 from the non-blocking eventfd.
                unsafe {
                    libc::read(
                        self.finished.event.as_raw_fd(),
                        (&mut buf as *mut u64).cast(),
                        8,
                    )
                };
                continue;
            }
            self.ready(token as i32, bits);
        }
        self.run_starts();
        Ok(())
    }

    /// `epoll_pwait2` (nanoseconds) where there is one, else `epoll_wait` (milliseconds,
    /// rounded up). `EINTR` is an empty wait.
    fn epoll_wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let ep = self.epoll.as_raw_fd();
        let buf = self.events.as_mut_ptr();
        loop {
            let r = if self.pwait2 {
                let ts = timeout.map(|t| libc::timespec {
                    tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
                    tv_nsec: t.subsec_nanos() as libc::c_long,
                });
                let tsp = ts
                    .as_ref()
                    .map_or(std::ptr::null(), |t| t as *const libc::timespec);
                // SAFETY: `buf` has room for EVENTS events; `tsp` is null or a live
                // timespec; no signal mask.
                unsafe {
                    libc::syscall(
                        libc::SYS_epoll_pwait2,
                        ep,
                        buf,
                        EVENTS as i32,
                        tsp,
                        0usize,
                        0usize,
                    )
                }
            } else {
                let ms = timeout.map_or(-1, |t| {
                    let ms = t.as_nanos().div_ceil(1_000_000);
                    ms.min(i32::MAX as u128) as i32
                });
                // SAFETY: `buf` has room for EVENTS events.
                i64::from(unsafe { libc::epoll_wait(ep, buf, EVENTS as i32, ms) })
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => return Ok(0),
                Some(libc::ENOSYS | libc::EPERM) if self.pwait2 => self.pwait2 = false,
                _ => return Err(e),
            }
        }
    }

    /// Runs `s` on the blocking pool; its CQE is posted when the job returns.
    fn offload(&mut self, s: Sqe) {
        let op = PoolOp {
            sqe: s,
            finished: self.finished.clone(),
        };
        // The op runs when the job drops it: run by a pool thread, or dropped unrun by a
        // pool that is closing (then on the closing thread), so every op gets its CQE.
        let job: Job = Box::new(move || drop(op));
        self.on_pool.insert(s.user_data());
        let refused = match &self.offload {
            Some(spawn) => spawn(job).err(),
            None => Some(job),
        };
        // No pool (closed as the runtime goes): run it here.
        drop(refused);
    }

    /// Posts the results of pool jobs that finished.
    fn collect_finished(&mut self) {
        if !self.finished.any.swap(false, Ordering::Acquire) {
            return;
        }
        let done = std::mem::take(
            &mut *self
                .finished
                .results
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (s, r) in done {
            self.on_pool.remove(&s.user_data());
            self.complete(s, r);
        }
        self.run_starts();
    }

    /// `ASYNC_CANCEL` of the op whose `user_data` is the SQE's `addr`.
    fn cancel(&mut self, s: Sqe) {
        let target = s.cancel_target();
        let r = if let Some(w) = self.table.remove(target) {
            self.complete(w.sqe, -libc::ECANCELED);
            0
        } else if self.on_pool.contains(&target) {
            -libc::EALREADY
        } else if self.cancel_linked(target) {
            0
        } else {
            -libc::ENOENT
        };
        self.complete(s, r);
    }

    /// Cancels `target` if it waits in a chain behind another op, and the ops after it.
    fn cancel_linked(&mut self, target: u64) -> bool {
        for rest in self.chains.values_mut() {
            if let Some(i) = rest.iter().position(|s| s.user_data() == target) {
                let cut: Vec<Sqe> = rest.drain(i..).collect();
                for s in cut {
                    self.cq.push_back((s.user_data(), -libc::ECANCELED, 0));
                }
                return true;
            }
        }
        false
    }

    /// Posts a CQE for `s` unless it asked to skip a successful one.
    fn post(&mut self, s: &Sqe, res: i32, flags: u32) {
        if res >= 0 && s.skip_success() {
            return;
        }
        self.cq.push_back((s.user_data(), res, flags));
    }

    /// `s` finished with `res`: posts its final CQE, and starts its chain's next op (or
    /// cancels the chain's rest if `s` failed).
    fn complete(&mut self, s: Sqe, res: i32) {
        self.complete_with(s, res, 0);
    }

    /// [`complete`](Readiness::complete) with CQE flags (a receive's buffer).
    fn complete_with(&mut self, s: Sqe, res: i32, flags: u32) {
        self.post(&s, res, flags);
        if self.chains.is_empty() {
            return;
        }
        let Some(mut rest) = self.chains.remove(&s.user_data()) else {
            return;
        };
        if res < 0 && !s.hard_link() {
            for r in rest {
                self.cq.push_back((r.user_data(), -libc::ECANCELED, 0));
            }
            return;
        }
        if let Some(next) = rest.pop_front() {
            if !rest.is_empty() {
                self.chains.insert(next.user_data(), rest);
            }
            self.starts.push_back(next);
        }
    }
}
