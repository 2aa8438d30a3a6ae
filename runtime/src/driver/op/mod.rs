//! Ops: the futures that own what the kernel reads and writes, and the slots that track
//! them in the driver. This is the safety line of the runtime.
//!
//! - `lifecycle`: the slot states and every transition (submit, poll, drop, CQE);
//! - `single`: [`Op`], one SQE and one CQE;
//! - `multi`: [`MultiOp`], one SQE and CQEs until one comes without `F_MORE`;
//! - `link`: [`Link`], ops chained with `IOSQE_IO_LINK` and submitted together;
//! - `orphan`: an op dropped or detached where its core is not entered.
//!
//! Every SQE in flight has a slot in the driver's slab, and its `user_data` is the slot's
//! key.
//!
//! # Safety rules
//! 1. **Memory the kernel may touch is never freed or moved.** What an SQE points at
//!    belongs to the op's data (`T`: a `Vec`'s or `Box`'s heap block, a `'static`), which
//!    lives in the op until its final CQE is consumed, or in the `Ignored`/`IgnoredMulti`
//!    slot after the future is dropped; an fd the kernel produces for a dropped op is
//!    closed by the driver. The data is freed only after the kernel's final CQE for the op
//!    was reaped (at shutdown, an op the kernel never gives back is leaked, never freed).
//! 2. **Op data is dropped outside the driver's borrow.** Dropping data runs user code (a
//!    buffer's `Drop`, an `Rc` count), which may use the runtime and so the driver. The
//!    driver never drops data itself: it moves what it frees to its dead list, which the
//!    loop (`Driver::take_dead`) and the op drops (`driver::with_driver_freeing`) drop
//!    after the driver's `RefCell` borrow ends.

mod late;
mod lifecycle;
mod link;
mod multi;
mod orphan;
mod queue;
mod single;

use std::io;

use io_uring::{cqueue, squeue};

use crate::driver::bufring::Claim;

use super::readiness::class::{refused, refused_error};

pub(crate) use lifecycle::{complete_op, AfterReap, Lifecycle, Produces};
pub use link::Link;
pub use multi::MultiOp;
pub(crate) use orphan::stash;
pub use single::Op;

/// `sqe` with its `optlen` field set (bytes 44..48 of the 64-byte SQE, the union it shares
/// with `file_index` and `splice_fd_in`): a multishot receive's byte limit, a socket
/// command's option length. The io-uring crate's builders lack it.
pub fn sqe_with_optlen(sqe: squeue::Entry, optlen: u32) -> squeue::Entry {
    patch_sqe(sqe, |raw| {
        raw[44..48].copy_from_slice(&optlen.to_ne_bytes())
    })
}

/// `sqe` with `bits` or-ed into its `ioprio` field (bytes 2..4), where send and receive
/// ops take flags the io-uring crate's builders may lack (`IORING_RECVSEND_BUNDLE`).
pub fn sqe_with_ioprio_bits(sqe: squeue::Entry, bits: u16) -> squeue::Entry {
    patch_sqe(sqe, |raw| {
        let ioprio = u16::from_ne_bytes([raw[2], raw[3]]) | bits;
        raw[2..4].copy_from_slice(&ioprio.to_ne_bytes());
    })
}

/// `sqe` with `f` applied to its 64 raw bytes.
fn patch_sqe(sqe: squeue::Entry, f: impl FnOnce(&mut [u8; 64])) -> squeue::Entry {
    const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
    // SAFETY: `Entry` is `repr(C)` around `io_uring_sqe`, 64 bytes of plain integers and
    // unions of them (size checked above): every bit pattern is a valid value, and it has
    // no padding the kernel's ABI does not define.
    let mut raw: [u8; 64] = unsafe { std::mem::transmute(sqe) };
    f(&mut raw);
    // SAFETY: as above: any bytes make a valid `Entry`; the kernel checks the fields.
    unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(raw) }
}

/// One completion: the kernel's result and flags for an op.
#[derive(Debug)]
pub struct Cqe {
    /// The result: a non-negative value, or the error the kernel returned (on the epoll
    /// backend, an op whose opcode that backend does not carry out gets an
    /// [`Unsupported`](io::ErrorKind::Unsupported) error naming the opcode).
    pub result: io::Result<u32>,
    /// The CQE's flags (`IORING_CQE_F_*`).
    pub flags: u32,
    /// The provided buffers the CQE filled, taken out of their ring as the driver reaped it
    /// (an op that named its ring: [`MultiOp::with_buf_ring`]).
    pub(crate) bufs: Claim,
}

impl Cqe {
    /// The one place a raw CQE result becomes a result: negative values are `-errno`,
    /// except the readiness backend's refusal of an opcode (an `Unsupported` error).
    pub(crate) fn from_raw(res: i32, flags: u32) -> Self {
        Cqe::claimed(res, flags, Claim::Unclaimed)
    }

    /// A raw CQE with the buffers claimed for it as it was reaped. Buffers the ring lost
    /// track of make the result an `InvalidData` error: no bytes are handed out that may
    /// be another receive's.
    #[inline]
    pub(crate) fn claimed(res: i32, flags: u32, bufs: Claim) -> Self {
        if res >= 0 && !bufs.is_lost() {
            return Cqe {
                result: Ok(res as u32),
                flags,
                bufs,
            };
        }
        Cqe::failed(res, flags, bufs)
    }

    /// [`Cqe::claimed`] for an error, or buffers the ring lost track of: out of line, so the
    /// success path stays a few instructions in every op's poll.
    #[cold]
    #[inline(never)]
    fn failed(res: i32, flags: u32, bufs: Claim) -> Self {
        let result = if bufs.is_lost() {
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the provided-buffer ring no longer says which buffers a receive of {res} \
                     bytes filled (its CQE was taken after other buffers came back); its \
                     bytes are dropped"
                ),
            ))
        } else if res < 0 {
            match refused(res, flags) {
                // The readiness backend does not carry out the op's opcode (it says so in
                // the flags of the `EINVAL` it posts): an error naming it, and no flags.
                Some(op) => return Cqe::refused(op),
                None => Err(io::Error::from_raw_os_error(-res)),
            }
        } else {
            Ok(res as u32)
        };
        Cqe {
            result,
            flags,
            bufs,
        }
    }

    /// The CQE of an op whose opcode `op` the readiness backend does not carry out: an
    /// `Unsupported` error naming the opcode (see `runtime::ext`, "Custom ops on the epoll
    /// backend").
    #[cold]
    #[inline(never)]
    fn refused(op: u8) -> Self {
        Cqe {
            result: Err(refused_error(op)),
            flags: 0,
            bufs: Claim::Unclaimed,
        }
    }

    /// Where this CQE's bytes start in its provided buffer, when it picked from an
    /// incremental ring ([`BufRing::incremental`](crate::buf::BufRing::incremental)) and
    /// its op registered the ring ([`MultiOp::with_buf_ring`]): the driver assigns it as
    /// it reaps the CQE, in the order the kernel posted them. `None` otherwise.
    pub fn buf_offset(&self) -> Option<u32> {
        match &self.bufs {
            Claim::One(b) => b.inc_offset(),
            Claim::Bufs(v) => v.first().and_then(|b| b.inc_offset()),
            _ => None,
        }
    }

    /// Whether the CQE's provided buffers were lost (its `result` then says so): the
    /// ring's entries no longer said which buffers the kernel filled when it was taken.
    pub fn bufs_lost(&self) -> bool {
        self.bufs.is_lost()
    }

    /// Whether the kernel will post more CQEs for this op (`IORING_CQE_F_MORE`).
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer the kernel picked, if any (`IORING_CQE_F_BUFFER`).
    pub fn buffer_id(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// The data of an op: everything the kernel reads or writes, and how the CQE becomes the
/// op's output.
///
/// Implement it to add an operation (this is how `net` and `fs` build theirs), then create
/// the op with [`Op::new`].
pub trait Completable: 'static {
    /// What awaiting the op gives.
    type Output;

    /// Whether a successful result is a new file descriptor the caller will own (accept,
    /// openat, socket). If the future is dropped before it sees such a result, the driver
    /// closes the fd, so it does not leak.
    const RETURNS_FD: bool = false;

    /// Whether a successful result is a new direct descriptor the caller will own: an index
    /// in the ring's fixed-file table (an accept or open with `IORING_FILE_INDEX_ALLOC`). If
    /// the future is dropped before it sees such a result, the driver closes that index
    /// through the ring (`IORING_OP_CLOSE`), so the table slot does not leak. Takes
    /// precedence over [`RETURNS_FD`](Completable::RETURNS_FD).
    const RETURNS_FIXED: bool = false;

    /// Turns the op's CQE into its output, giving back the data.
    fn complete(self, cqe: Cqe) -> Self::Output;
}

/// Multishot op data that must give back what a CQE carries (a provided buffer, say) when
/// the CQE arrives after the op was dropped, or was queued and never yielded.
///
/// `release` runs inside the driver: it must not use the runtime (no ops, no spawns).
pub trait Release: 'static {
    /// Gives back what `cqe` carries.
    fn release(&self, cqe: Cqe);
}

/// Closes an fd the kernel produced for an op nobody awaits any more.
pub(crate) fn close_raw(fd: i32) {
    // SAFETY: the fd was created by the kernel for a dropped op; nothing else owns it.
    unsafe { libc::close(fd) };
}

/// How an op keeps its SQE until the first poll pushes it.
///
/// A built [`squeue::Entry`] (what [`Op::new`] takes) is stored in the op and copied into the
/// SQ ring at submission. A `Prep` that makes the SQE when asked (a unit struct for a
/// constant SQE, or one holding the few fields it needs) lets the submission write it
/// straight into the ring: the op future is smaller, and the ring slot is filled with the
/// fields themselves instead of a copy read back from the stores that just built it (a
/// failed store-to-load forward stalls the CPU ~15 cycles). [`Op::with_prep`] takes one.
pub trait Prep: 'static {
    /// Makes the op's SQE (its `user_data` is overwritten). Called once, at submission,
    /// inside the driver: it must not use the runtime (no ops, no spawns). If it panics,
    /// nothing is submitted and the panic reaches the op's poller.
    ///
    /// On the epoll backend the SQE is read back and carried out only if its opcode is one
    /// the readiness backend knows (see
    /// [`runtime::ext`, "Custom ops on the epoll backend"](crate::ext#custom-ops-on-the-epoll-backend)).
    fn sqe(&mut self) -> squeue::Entry;
}

impl Prep for squeue::Entry {
    #[inline(always)]
    fn sqe(&mut self) -> squeue::Entry {
        self.clone()
    }
}
