//! The ring driver: the only module that pushes to the SQ or reads the CQ.
//!
//! One `Driver` per core, created on the core's thread (SINGLE_ISSUER binds the ring to it).
//! It owns the backend (`backend`: the kernel's io_uring, or the readiness backend playing
//! its part, behind one interface, `backend::Ring`, dispatched in one place), the SQ, the
//! slab of op slots (`op::Lifecycle`) and the armed read on the core's wake eventfd. The
//! loop calls `Driver::park` to submit (and wait when nothing is ready) and `Driver::reap`
//! to move every ready CQE into its slot in one pass. Everything here and in `op` is the
//! same code on both backends.
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

pub(crate) use backend::readiness;
pub use backend::Backend;
use backend::{Kernel, Started};
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

/// A reap pass's view of the driver: where each CQE goes (`Driver::reap`).
struct Dispatch<'a, W> {
    n: &'a mut usize,
    ops: &'a mut Slots<Lifecycle>,
    dead: &'a mut Vec<Box<dyn std::any::Any>>,
    after: &'a mut AfterReap,
    wake: &'a mut W,
    sync_result: &'a mut Option<i32>,
    wake_armed: &'a mut bool,
    msg_rings_received: &'a mut u64,
    failed_msg_rings: &'a mut Vec<usize>,
}

impl<W: FnMut(Waker)> backend::CqeSink for Dispatch<'_, W> {
    /// Each CQE goes to its op's slot (its key, far below the driver's tokens), or is one of
    /// the driver's own.
    #[inline(always)]
    fn cqe(&mut self, ud: u64, res: i32, flags: u32) {
        *self.n += 1;
        if ud < MSG_SRC_FLOOR {
            complete_op(
                self.ops,
                self.dead,
                ud as usize,
                res,
                flags,
                self.wake,
                self.after,
            );
            return;
        }
        match ud {
            CANCEL_TOKEN | FIXED_CLOSE_TOKEN => {}
            SYNC_TOKEN => *self.sync_result = Some(res),
            // Wake-ups: their CQE ended the wait; the loop reads the core's `notified` flag
            // for what to do.
            WAKE_TOKEN => *self.wake_armed = false,
            MSG_WAKE_TOKEN => *self.msg_rings_received += 1,
            // This ring's MSG_RING SQEs (MSG_SRC_FLOOR..=MSG_SRC_BASE): a CQE only when the
            // message failed.
            ud if ud <= MSG_SRC_BASE && res < 0 => {
                self.failed_msg_rings.push((MSG_SRC_BASE - ud) as usize);
            }
            _ => {}
        }
    }
}

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

/// Counters the driver keeps for [`crate::CoreMetrics`].
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
    /// The kernel's ring, or the readiness backend playing its part (`backend`: the seam).
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
    /// Sets up the core's backend as `config` asks (see [`Backend`]) and arms the wake
    /// read. Must be called on the thread that will drive it. `offload` runs the readiness
    /// backend's file ops.
    pub(crate) fn new(
        config: &RingConfig,
        wake_fd: RawFd,
        offload: Option<readiness::Offload>,
    ) -> io::Result<Driver> {
        let Started {
            kernel,
            sq,
            flags,
            features,
            msg_ring_ok,
            skip_success_ok,
        } = backend::start(config, wake_fd, offload)?;
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
        Ok(driver)
    }

    /// Whether this core runs the readiness backend.
    pub(crate) fn is_readiness(&self) -> bool {
        self.kernel.is_readiness()
    }

    /// The owner of regular fd `fd` is closing it or giving it up (see `SharedFd`): the
    /// readiness backend forgets what it knew of the number. Nothing to do on io_uring.
    #[inline]
    pub(crate) fn release_fd(&mut self, fd: RawFd) {
        self.kernel.release_fd(fd);
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
        loop {
            // Hot path: one dispatch on the backend per pass, then (on io_uring) one acquire
            // of the CQ tail, one release of its head. The sink borrows the driver's fields
            // apart from the backend it is handed to.
            let mut sink = Dispatch {
                n: &mut n,
                ops: &mut self.ops,
                dead: &mut self.dead,
                after: &mut self.after,
                wake: &mut wake,
                sync_result: &mut self.sync_result,
                wake_armed: &mut self.wake_armed,
                msg_rings_received: &mut self.counters.msg_rings_received,
                failed_msg_rings: &mut self.failed_msg_rings,
            };
            let overflowed = self.kernel.reap(&mut sink);
            if !overflowed {
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
        self.kernel.ring_fd()
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
        // Then the backend drops (the io_uring one undoes its registered ring fd first).
    }
}
