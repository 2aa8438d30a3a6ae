//! The ring driver: the only module that pushes to the SQ or reads the CQ.
//!
//! One `Driver` per core, created on the core's thread (SINGLE_ISSUER binds the ring to it).
//! It owns the ring, the slab of op slots (`op::Lifecycle`) and the armed read on the
//! core's wake eventfd. The loop calls `Driver::park` to submit (and wait when nothing is
//! ready) and `Driver::reap` to move every ready CQE into its slot in one pass.
//!
//! # Invariant
//! A slot's data (`Ignored`) is freed only when the op's final CQE is reaped; shutdown
//! cancels every op and reaps until none is in flight. A full SQ is submitted and the push
//! retried; `EBUSY` and CQ overflow are answered by reaping (the kernel's NODROP feature
//! keeps overflowed CQEs until then). Reserved `user_data` values, from `u64::MAX` down,
//! mark the driver's own CQEs.
//!
//! A cancel names its target by slot key, and keys are reused. That is safe because an
//! ignored slot is freed only when its final CQE is reaped, and every reap follows the
//! submission of everything queued before it (SQEs go in order, `SUBMIT_ALL`), so the
//! kernel has run the cancel (inline, at submission) before the key can name another op.

mod backend;
mod buf_rings;
pub(crate) mod bufring;
mod current;
mod enter;
pub(crate) mod features;
mod fixed;
mod home;
pub(crate) mod kernel;
pub(crate) mod op;
pub(crate) mod probe;
pub(crate) mod readiness;
mod setup;
mod shutdown;
mod slots;
mod sq;
pub(crate) mod sqe;

use std::io;
use std::os::fd::RawFd;
use std::task::Waker;
use std::time::Instant;

use io_uring::{opcode, squeue, types};

pub use backend::Backend;
pub(crate) use backend::Kernel;
pub(crate) use current::{
    current_driver, current_features, try_with_driver, with_core_driver, with_current, with_driver,
    RingContext,
};
pub use features::Features;
pub(crate) use features::{bit as feature_bit, RingConfig};
pub(crate) use home::EnterHome;
use op::{complete_op, AfterReap, Lifecycle};
pub use setup::RingFlags;
use slots::Slots;

/// Runs `f` with the current core's driver, then drops the data of ops that finished
/// meanwhile (`Driver::take_dead`), outside the driver's borrow: for op drops, since op
/// data may run user code when dropped, which may use the driver (safety rule 2 of `op`).
///
/// # Panics
/// Outside a runtime.
pub(crate) fn with_driver_freeing<R>(f: impl FnOnce(&mut Driver) -> R) -> R {
    let (r, dead) = with_driver(|d| {
        let r = f(d);
        (r, d.take_dead())
    });
    drop(dead);
    r
}

/// `user_data` of the driver's own `ASYNC_CANCEL` SQEs: their CQEs are dropped.
const CANCEL_TOKEN: u64 = u64::MAX;
/// `io_uring_enter(2)`'s flag to collect completions (and run deferred task work).
const IORING_ENTER_GETEVENTS: u32 = 1;

/// `user_data` of the armed read on the wake eventfd.
const WAKE_TOKEN: u64 = u64::MAX - 1;
/// `user_data` of the CQE another core's MSG_RING posts into this ring: a wake.
const MSG_WAKE_TOKEN: u64 = u64::MAX - 2;
/// `user_data` of the driver's `IORING_OP_CLOSE` of a direct descriptor (see
/// [`Driver::close_fixed`]): its CQE (only on failure, where the kernel skips successful
/// ones) is dropped.
const FIXED_CLOSE_TOKEN: u64 = u64::MAX - 3;
/// `user_data` of the one synchronous op in flight (see [`Driver::run_sync`]).
const SYNC_TOKEN: u64 = u64::MAX - 4;
/// `user_data` of this ring's own MSG_RING SQEs, minus the target core's index (their CQE
/// only comes on failure: `IOSQE_CQE_SKIP_SUCCESS`).
const MSG_SRC_BASE: u64 = u64::MAX - 16;
const MSG_SRC_FLOOR: u64 = MSG_SRC_BASE - 65536;

/// How long a wait for a batch (see `Driver::expect_batch`) holds out for the whole batch
/// before returning with the CQEs that arrived: the most it delays any other completion.
const BATCH_WAIT_US: u32 = 50;

/// One CQE into its slot: an op's (its slot key, far below the driver's tokens: the hot
/// path), or one of the driver's own. A macro so that `Driver::reap` and
/// `Driver::reap_readiness` borrow the driver's fields apart from the CQ they read.
macro_rules! dispatch_cqe {
    ($self:ident, $wake:ident, $n:ident, $ud:expr, $res:expr, $flags:expr) => {{
        let (ud, res, flags): (u64, i32, u32) = ($ud, $res, $flags);
        $n += 1;
        if ud < MSG_SRC_FLOOR {
            complete_op(
                &mut $self.ops,
                &mut $self.dead,
                ud as usize,
                res,
                flags,
                &mut $wake,
                &mut $self.after,
            );
        } else {
            match ud {
                CANCEL_TOKEN | FIXED_CLOSE_TOKEN => {}
                SYNC_TOKEN => $self.sync_result = Some(res),
                // Wake-ups: their CQE ended the wait; the loop reads the core's
                // `notified` flag for what to do.
                WAKE_TOKEN => $self.wake_armed = false,
                MSG_WAKE_TOKEN => $self.counters.msg_rings_received += 1,
                // This ring's MSG_RING SQEs (MSG_SRC_FLOOR..=MSG_SRC_BASE): a CQE
                // only when the message failed.
                ud if ud <= MSG_SRC_BASE && res < 0 => {
                    $self.failed_msg_rings.push((MSG_SRC_BASE - ud) as usize);
                }
                _ => {}
            }
        }
    }};
}

/// Counters the driver keeps for [`crate::Stats`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DriverCounters {
    pub(crate) sqes: u64,
    pub(crate) enters: u64,
    pub(crate) cqes: u64,
    /// Enters that waited (parks), and the time spent in them.
    pub(crate) waits: u64,
    pub(crate) waited_ns: u64,
    /// Times the SQ was full and had to be submitted before a push.
    pub(crate) sq_full: u64,
    /// Times the kernel had overflowed CQEs to flush (`IORING_SQ_CQ_OVERFLOW` seen).
    pub(crate) cq_overflows: u64,
    /// `ASYNC_CANCEL`s queued.
    pub(crate) cancels: u64,
    /// MSG_RING wakes sent to other cores, and received from them.
    pub(crate) msg_rings_sent: u64,
    pub(crate) msg_rings_received: u64,
}

/// One core's ring and op slots.
pub(crate) struct Driver {
    /// The kernel's ring, or the readiness backend playing its part.
    kernel: Kernel,
    /// The ring's SQ, written in place (every push goes through it).
    sq: sq::Sq,
    ops: Slots<Lifecycle>,
    flags: RingFlags,
    wake_fd: RawFd,
    /// The eventfd read's target. Boxed so its address is stable; freed only after the read's
    /// final CQE (see `shutdown`).
    wake_buf: Box<u64>,
    wake_armed: bool,
    /// Set by `shutdown`: the wake read is no longer re-armed.
    shutting_down: bool,
    /// Ops in flight, whether the wake read is armed, and since when that is unchanged.
    shutdown_progress: (usize, bool, Instant),
    /// During shutdown: when detached ops still running are cancelled too.
    linger_until: Option<Instant>,
    /// Shutdown gave up on ops the kernel never gave back (their memory is leaked).
    shutdown_leaked: bool,
    /// Whether the kernel has `IORING_OP_MSG_RING` (5.18).
    msg_ring_ok: bool,
    /// Whether waits take a batch timeout (`IORING_FEAT_MIN_TIMEOUT`, 6.12, and the builder's
    /// `min_timeout` switch).
    min_timeout_ok: bool,
    /// What `io_uring_enter(2)` is given as its fd: the ring's registered index (with
    /// `enter_flags` = `IORING_ENTER_REGISTERED_RING`), or the ring's fd (and 0).
    enter_fd: RawFd,
    enter_flags: u32,
    /// What the ring was granted beyond its setup flags.
    features: Features,
    /// CQEs a parked task waits for before it can progress (see `expect_batch`).
    batch_hint: usize,
    /// Cores whose MSG_RING wake failed: the loop wakes them by eventfd.
    failed_msg_rings: Vec<usize>,
    /// What a reap pass found to do once the CQ is drained: multishot ops whose backlog
    /// filled (cancelled), direct descriptors of dropped ops (closed).
    after: AfterReap,
    /// Whether the kernel skips successful CQEs of SQEs flagged `IOSQE_CQE_SKIP_SUCCESS`
    /// (5.17): the closes of direct descriptors are flagged so.
    skip_success_ok: bool,
    /// The result of the synchronous op in flight, once its CQE is reaped.
    sync_result: Option<i32>,
    /// See `take_dead`.
    dead: Vec<Box<dyn std::any::Any>>,
    pub(crate) counters: DriverCounters,
}

impl Driver {
    /// Sets up an io_uring (best flags and features this kernel grants of those `config`
    /// asks for) and arms the wake read. Must be called on the thread that will drive the
    /// ring. See [`Driver::new`] for the choice of backend.
    fn new_uring(config: &RingConfig, wake_fd: RawFd) -> io::Result<Driver> {
        use std::os::fd::AsRawFd;
        // A kernel profile asks only for the flags its release has.
        let want = config
            .profile
            .map_or(config.flags, |p| p.limit_flags(config.flags));
        let (ring, flags) = setup::build_ring(want)?;
        let mut sq = sq::Sq::new(&ring)?;
        if let Some(profile) = config.profile {
            sq.set_gate(profile.gate(wake_fd));
        }
        let mut probe = io_uring::Probe::new();
        let probed = ring.submitter().register_probe(&mut probe).is_ok();
        let ops = kernel::OpProbe::new(probed.then_some(probe), config.profile);
        setup::check_required_ops(&ops)?;
        let ring_params_skip_success = ring.params().is_feature_skip_cqe_on_success();
        let msg_ring_ok = ring_params_skip_success && ops.supports(opcode::MsgRingData::CODE);
        // Registered last: nothing after it fails, so the registration is always undone by
        // the driver's drop.
        let registered = if config.asks(feature_bit::REGISTERED_RING_FD) {
            enter::register_ring_fd(ring.as_raw_fd()).ok()
        } else {
            None
        };
        let features = probe::probe(&ring, config, flags, &ops, registered.is_some());
        let (enter_fd, enter_flags) = match registered {
            Some(index) => (index as RawFd, enter::IORING_ENTER_REGISTERED_RING),
            None => (ring.as_raw_fd(), 0),
        };
        Ok(Driver::with_kernel(
            Kernel::Uring(ring),
            sq,
            flags,
            features,
            wake_fd,
            msg_ring_ok,
            (enter_fd, enter_flags),
            ring_params_skip_success,
        ))
    }

    /// The driver around `kernel` and its SQ, with the wake read armed.
    #[allow(clippy::too_many_arguments)]
    fn with_kernel(
        kernel: Kernel,
        sq: sq::Sq,
        flags: RingFlags,
        features: Features,
        wake_fd: RawFd,
        msg_ring_ok: bool,
        (enter_fd, enter_flags): (RawFd, u32),
        skip_success_ok: bool,
    ) -> Driver {
        let mut driver = Driver {
            kernel,
            sq,
            ops: Slots::with_capacity(flags.sq_entries as usize),
            flags,
            wake_fd,
            wake_buf: Box::new(0),
            wake_armed: false,
            shutting_down: false,
            msg_ring_ok,
            min_timeout_ok: features.min_timeout,
            enter_fd,
            enter_flags,
            features,
            batch_hint: 0,
            failed_msg_rings: Vec::new(),
            after: AfterReap::default(),
            skip_success_ok,
            sync_result: None,
            dead: Vec::new(),
            shutdown_progress: (0, false, Instant::now()),
            linger_until: None,
            shutdown_leaked: false,
            counters: DriverCounters::default(),
        };
        driver.arm_wake();
        driver
    }

    /// The flags the kernel granted.
    pub(crate) fn flags(&self) -> RingFlags {
        self.flags
    }

    /// The features the ring was granted.
    pub(crate) fn features(&self) -> Features {
        self.features
    }

    /// Pushes one SQE; a full SQ is submitted first. Never drops an SQE.
    #[inline]
    fn push(&mut self, sqe: squeue::Entry) {
        self.counters.sqes += 1;
        if self.sq.is_full() {
            self.make_room();
        }
        // SAFETY: not full (just checked, or room made); every SQE handed to the driver
        // points only into memory its op owns until the final CQE (the contract of
        // `Op::new`), or into the driver's own `wake_buf`, which outlives the read.
        unsafe { self.sq.push(sqe) }
    }

    /// The SQ is full: submits until the kernel has taken at least one SQE.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) {
        self.counters.sq_full += 1;
        while self.sq.is_full() {
            self.submit_now();
        }
    }

    /// Moves every ready CQE into its slot, in one pass, until the CQ and the kernel's
    /// overflow list are empty. Returns how many were reaped.
    pub(crate) fn reap(&mut self, mut wake: impl FnMut(Waker)) -> usize {
        let mut n = 0;
        if let Kernel::Readiness(_) = self.kernel {
            n = self.reap_readiness(&mut wake);
        }
        while let Kernel::Uring(ring) = &mut self.kernel {
            // Hot path: one acquire of the CQ tail, one release of its head.
            for cqe in ring.completion() {
                dispatch_cqe!(self, wake, n, cqe.user_data(), cqe.result(), cqe.flags());
            }
            if !ring.submission().cq_overflow() {
                break;
            }
            // The kernel holds overflowed CQEs: ask it to flush them into the (now empty)
            // CQ.
            self.counters.cq_overflows += 1;
            self.enter_getevents(0);
        }
        // Multishot ops whose backlog filled: cancel them (their readers re-arm).
        while let Some(key) = self.after.throttled.pop() {
            self.cancel(key);
        }
        // Direct descriptors that dropped ops produced: close them.
        while let Some(index) = self.after.fixed_closes.pop() {
            self.close_fixed(index);
        }
        self.counters.cqes += n as u64;
        if !self.wake_armed && !self.shutting_down {
            self.arm_wake();
        }
        n
    }

    /// [`reap`](Driver::reap)'s pass over the readiness backend's CQ, out of line so the
    /// io_uring pass stays as small as it was.
    #[inline(never)]
    fn reap_readiness(&mut self, mut wake: impl FnMut(Waker)) -> usize {
        let mut n = 0;
        while let Kernel::Readiness(rd) = &mut self.kernel {
            let Some((ud, res, flags)) = rd.pop_cqe() else {
                break;
            };
            dispatch_cqe!(self, wake, n, ud, res, flags);
        }
        n
    }

    /// Data of ops the kernel is done with, for the caller to drop once it no longer borrows
    /// the driver: its `Drop` may use the runtime (a buffer ring unregisters itself).
    pub(crate) fn take_dead(&mut self) -> Vec<Box<dyn std::any::Any>> {
        std::mem::take(&mut self.dead)
    }

    /// Ops in flight (slots in use).
    pub(crate) fn ops_in_flight(&self) -> usize {
        self.ops.len()
    }

    /// This ring's fd (the target of other cores' MSG_RING wakes).
    pub(crate) fn ring_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        match &self.kernel {
            Kernel::Uring(ring) => ring.as_raw_fd(),
            Kernel::Readiness(rd) => rd.fd(),
        }
    }

    /// Sends an `IORING_OP_MSG_RING` that posts a wake CQE into the ring `target_fd` (core
    /// `index`); false if the kernel has no MSG_RING.
    pub(crate) fn msg_ring(&mut self, target_fd: i32, index: usize) -> bool {
        if !self.msg_ring_ok || self.shutting_down || index > 65536 {
            return false;
        }
        // IOSQE_CQE_SKIP_SUCCESS (5.17): no CQE here unless it fails. (The MSG_RING opcode's
        // own CQE_SKIP flag is for passing fds; with data the kernel refuses it: EINVAL.)
        let sqe = opcode::MsgRingData::new(types::Fd(target_fd), 0, MSG_WAKE_TOKEN, None)
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(MSG_SRC_BASE - index as u64);
        // Submitted at once, with whatever else waits in the SQ: the woken core should not
        // wait for this one to finish its poll or its run queue (`bench pingpong`'s "wake,
        // then compute": 141 us when the wake left after the poll, 39-44 us at once; the
        // cross-core ping-pong 12.4 -> 5.4 us per round trip, enters per round trip alike).
        self.push(sqe);
        self.submit_now();
        self.counters.msg_rings_sent += 1;
        true
    }

    /// Cores whose MSG_RING wake failed since the last call.
    pub(crate) fn take_failed_msg_rings(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.failed_msg_rings)
    }

    fn arm_wake(&mut self) {
        let ptr: *mut u64 = &mut *self.wake_buf;
        let sqe = opcode::Read::new(types::Fd(self.wake_fd), ptr.cast(), 8)
            .build()
            .user_data(WAKE_TOKEN);
        self.wake_armed = true;
        self.push(sqe);
    }

    /// A task can make no progress before `n` more CQEs arrive (a linked chain): the next
    /// wait asks the kernel for that many, bounded by `BATCH_WAIT_US`. Cleared by each park.
    pub(crate) fn expect_batch(&mut self, n: usize) {
        self.batch_hint = self.batch_hint.max(n);
    }

    /// Makes room for `n` SQEs pushed back to back (a linked chain, which must reach the
    /// kernel in one submission): submits what the SQ holds if they would not fit.
    pub(crate) fn reserve_sq(&mut self, n: usize) -> io::Result<()> {
        let capacity = self.sq.capacity();
        if n > capacity {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a chain of {n} linked ops does not fit the ring's {capacity}-entry SQ"),
            ));
        }
        while capacity - (self.sq.len() as usize) < n {
            self.submit_now();
        }
        Ok(())
    }

    /// Queues an `ASYNC_CANCEL` for the op in slot `key`; its own CQE is dropped.
    pub(crate) fn cancel(&mut self, key: usize) {
        self.counters.cancels += 1;
        let sqe = opcode::AsyncCancel::new(key as u64)
            .build()
            .user_data(CANCEL_TOKEN);
        self.push(sqe);
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.shutting_down {
            self.shutdown_start();
        }
        while !self.shutdown_step() {}
        if self.enter_flags & enter::IORING_ENTER_REGISTERED_RING != 0 {
            // The registration holds the ring open; undo it so closing the fd frees the
            // ring now rather than when this thread exits. On failure (never expected: the
            // index is ours) the ring is freed at thread exit instead.
            let index = self.enter_fd as u32;
            let _ = enter::unregister_ring_fd(self.ring_fd(), index);
            self.enter_fd = self.ring_fd();
            self.enter_flags = 0;
        }
    }
}
