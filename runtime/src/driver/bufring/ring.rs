//! Provided buffer rings (`IORING_REGISTER_PBUF_RING`, Linux 5.19): a ring of equal-sized
//! buffers the kernel picks from when a receive completes, so a multishot receive needs no
//! buffer of its own per read.
//!
//! The io-uring crate registers the ring but does not manage it; [`BufRing`] does, as one
//! small safe type: it maps the ring's page-aligned memory, fills it with every buffer,
//! registers it under a fresh buffer-group id, and advances the tail when a buffer comes
//! back. A buffer the kernel filled is handed out as a [`RingBuf`], which returns it to the
//! ring when dropped.
//!
//! An *incremental* ring ([`BufRing::incremental`], `IOU_PBUF_RING_INC`, Linux 6.12) lets
//! the kernel consume a buffer in pieces: each receive takes only the bytes it needs from
//! the buffer at the ring's head, and the next receive (of any op on the ring) goes on
//! where it stopped. Small messages then pack into one buffer instead of taking one each.
//! The CQE names the buffer and the byte count but not the offset: it follows from the
//! order the kernel posted the CQEs in, so the offsets are assigned as the driver reaps
//! them (a [`MultiOp`](crate::ext::MultiOp) registered with
//! [`with_buf_ring`](crate::ext::MultiOp::with_buf_ring)), and each buffer goes back to
//! the ring once the kernel has filled it to its end and every chunk of it was dropped.
//!
//! # Invariant
//! The ring memory and the buffers are freed only when the last `Rc` to them goes: every
//! op that may pick from the group keeps a clone (in its data, and so in the driver's ignored
//! slot after a drop) until its final CQE, and every `RingBuf` keeps one. The group is
//! unregistered first, while the core is alive.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::task::{Context, Poll, Waker};

use io_uring::types::BufRingEntry;

use super::RingBuf;
use crate::context::{self, CoreId};
use crate::error::context;

/// A registered ring of provided buffers on the current core.
///
/// ```
/// let rt = runtime::Runtime::new().unwrap();
/// rt.block_on(async {
///     let ring = runtime::buf::BufRing::new(64, 4096).unwrap();
///     assert_eq!(ring.buf_len(), 4096);
///     // Pass `ring.bgid()` in an SQE with IOSQE_BUFFER_SELECT and keep a clone of `ring`
///     // in the op's data; `ring.take(&cqe)` gives the buffer the kernel filled.
/// });
/// ```
#[derive(Clone)]
pub struct BufRing {
    pub(super) inner: Rc<Inner>,
}

pub(super) struct Inner {
    pub(super) core: CoreId,
    pub(super) bgid: u16,
    pub(super) entries: u16,
    pub(super) buf_len: u32,
    /// The mmap'd ring: `entries` `io_uring_buf`s; the tail is the first entry's `resv`.
    pub(super) ring: NonNull<BufRingEntry>,
    pub(super) ring_bytes: usize,
    /// `entries * buf_len` bytes the kernel writes into; freed in `Drop`.
    pub(super) bufs: NonNull<u8>,
    pub(super) tail: Cell<u16>,
    /// Whether the group is registered with the core's ring (unregistered in `Drop`).
    pub(super) registered: Cell<bool>,
    /// Buffers out of the ring, not yet returned: handed out (plain ring), or filled to
    /// their end by the kernel (incremental ring).
    pub(super) out: Cell<u32>,
    /// Buffers returned to the ring so far: a reader that found the ring empty waits for
    /// this count to move past the value it saw ([`BufRingExt::poll_returned_since`]).
    pub(super) returned: Cell<u64>,
    /// Tasks waiting for a buffer to come back, all woken by the next return.
    pub(super) waiters: RefCell<Vec<Waker>>,
    /// Receives that found the ring empty (`ENOBUFS`), as readers reported them.
    pub(super) starved: Cell<u64>,
    /// The ring position (tail value) each buffer was last pushed at: a bundle CQE names
    /// its first buffer only, and the rest follow it in ring order.
    pub(super) slot_of: Box<[Cell<u16>]>,
    /// An incremental ring's per-buffer state; `None` for a plain ring.
    pub(super) inc: Option<Box<[IncBuf]>>,
}

/// One buffer of an incremental ring.
#[derive(Default)]
pub(super) struct IncBuf {
    /// Bytes the kernel has filled, in CQE order: the next CQE naming the buffer starts
    /// here. At `buf_len` the kernel has moved past the buffer.
    pub(super) filled: Cell<u32>,
    /// CQEs whose offsets were assigned and chunks not yet dropped: the buffer goes back
    /// to the ring when this is 0 and it is filled.
    pub(super) refs: Cell<u32>,
}

/// `IOU_PBUF_RING_INC`: the kernel consumes the ring's buffers incrementally (Linux 6.12).
const IOU_PBUF_RING_INC: u16 = 2;

impl BufRing {
    /// Maps, fills and registers a ring of `entries` buffers of `buf_len` bytes each.
    ///
    /// `entries` must be a power of two up to 32768, `buf_len` non-zero. Must be called inside
    /// a runtime; the ring belongs to the current core.
    pub fn new(entries: u16, buf_len: u32) -> io::Result<BufRing> {
        BufRing::build(entries, buf_len, false)
    }

    /// Like [`new`](BufRing::new), but the kernel consumes the buffers incrementally
    /// (`IOU_PBUF_RING_INC`, Linux 6.12; see the module documentation): a receive takes
    /// only the bytes it needs from the head buffer, so large buffers serve many small
    /// messages.
    ///
    /// The offset of a CQE's bytes in its buffer follows from the order the kernel posted
    /// the CQEs in. Ops that pick from this ring must be multishot ops registered with
    /// [`MultiOp::with_buf_ring`](crate::ext::MultiOp::with_buf_ring), whose offsets the
    /// driver assigns as it reaps (see [`Cqe::buf_offset`](crate::ext::Cqe::buf_offset)); a
    /// CQE without one is placed
    /// when [`take`](BufRing::take) sees it, which is right only when CQEs are taken in the
    /// order they were posted. Fails with the kernel's error on a kernel without it.
    pub fn incremental(entries: u16, buf_len: u32) -> io::Result<BufRing> {
        BufRing::build(entries, buf_len, true)
    }

    pub(super) fn build(entries: u16, buf_len: u32, incremental: bool) -> io::Result<BufRing> {
        if !entries.is_power_of_two() || entries > 32768 || buf_len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "buffer ring needs a power-of-two entry count up to 32768 and a non-zero \
                     buffer length, got {entries} x {buf_len}"
                ),
            ));
        }
        let core = context::current_core_id()
            .ok_or_else(|| io::Error::other("BufRing::new called outside of a runtime"))?;
        let (ring, ring_bytes) = map_ring(entries)?;
        let total = entries as usize * buf_len as usize;
        let bufs = Box::<[u8]>::into_raw(vec![0u8; total].into_boxed_slice());
        let bufs = NonNull::new(bufs.cast::<u8>()).expect("Box is never null");
        let inner = Inner {
            core,
            bgid: next_bgid(),
            entries,
            buf_len,
            ring,
            ring_bytes,
            bufs,
            tail: Cell::new(0),
            registered: Cell::new(false),
            out: Cell::new(0),
            returned: Cell::new(0),
            waiters: RefCell::new(Vec::new()),
            starved: Cell::new(0),
            slot_of: (0..entries).map(|_| Cell::new(0)).collect(),
            inc: incremental.then(|| (0..entries).map(|_| IncBuf::default()).collect()),
        };
        for bid in 0..entries {
            inner.push(bid);
        }
        inner.publish();
        let flags = if incremental { IOU_PBUF_RING_INC } else { 0 };
        let res = crate::driver::with_driver(|d| {
            // SAFETY: the ring memory is mapped, page-aligned and stays valid until the group is
            // unregistered (in `Inner::drop`, before the unmap).
            unsafe { d.register_buf_ring(ring.as_ptr() as u64, entries, inner.bgid, flags) }
        });
        if let Err(e) = res {
            let what = if incremental {
                "registering an incremental buffer ring (IOU_PBUF_RING_INC needs Linux 6.12)"
            } else {
                "registering a buffer ring (needs Linux 5.19)"
            };
            return Err(context(e, what));
        }
        inner.registered.set(true);
        Ok(BufRing {
            inner: Rc::new(inner),
        })
    }

    /// The buffer-group id to put in an SQE (`buf_group`, with `IOSQE_BUFFER_SELECT`).
    pub fn bgid(&self) -> u16 {
        self.inner.bgid
    }

    /// The length of each buffer.
    pub fn buf_len(&self) -> u32 {
        self.inner.buf_len
    }

    /// Whether the kernel consumes this ring's buffers incrementally
    /// ([`incremental`](BufRing::incremental)).
    pub fn is_incremental(&self) -> bool {
        self.inner.inc.is_some()
    }

    /// Buffers out of the ring and not yet returned: handed out as [`RingBuf`]s (on an
    /// incremental ring: filled to their end by the kernel, some chunk of them still held).
    pub fn outstanding(&self) -> u32 {
        self.inner.out.get()
    }

    /// The number of buffers in the ring.
    pub fn entries(&self) -> u16 {
        self.inner.entries
    }

    /// How many buffers the kernel can still pick: the ring's free entries, read from the
    /// kernel (`IORING_REGISTER_PBUF_STATUS`, Linux 6.8; one system call). `None` where the
    /// kernel cannot say. For a reader whose receive ended with `ENOBUFS`: buffers may have
    /// come back between the kernel's empty ring and the reader seeing the CQE.
    pub fn available(&self) -> Option<u16> {
        if context::current_core_id() != Some(self.inner.core) {
            return None;
        }
        let head = crate::driver::with_driver(|d| d.buf_ring_head(self.inner.bgid)).ok()?;
        Some(self.inner.tail.get().wrapping_sub(head))
    }

    /// How many receives found the ring empty (`ENOBUFS`) and were starved of buffers, as
    /// their readers recorded them ([`BufRingExt::note_starved`]): a ring that starves often
    /// is too small for its load, or its buffers are held too long.
    pub fn times_starved(&self) -> u64 {
        self.inner.starved.get()
    }

    /// Whether `self` and `other` are clones of one ring.
    pub(crate) fn same(&self, other: &BufRing) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    /// The buffer `bid` with `len` filled bytes, as the kernel reported it (on an
    /// incremental ring: the next `len` bytes the kernel put in it, at most to its end).
    ///
    /// # Panics
    /// If `bid` is out of range.
    pub fn buf(&self, bid: u16, len: usize) -> RingBuf {
        assert!(bid < self.inner.entries, "buffer id {bid} out of range");
        let buf_len = self.inner.buf_len as usize;
        let start = match &self.inner.inc {
            Some(inc) => (inc[usize::from(bid)].filled.get() as usize).min(buf_len),
            None => 0,
        };
        let len = len.min(buf_len - start);
        self.inner.take_ref(bid, start, len);
        RingBuf::new(self.inner.clone(), bid, start, start + len)
    }
}

impl Inner {
    /// A chunk of buffer `bid` was dropped: the buffer goes back to the ring unless the
    /// kernel may still fill it or other chunks of it are held.
    pub(super) fn release(&self, bid: u16) {
        if let Some(inc) = &self.inc {
            let b = &inc[usize::from(bid)];
            b.refs.set(b.refs.get().saturating_sub(1));
            if b.refs.get() != 0 || b.filled.get() < self.buf_len {
                return;
            }
            b.filled.set(0);
        }
        self.push(bid);
        self.publish();
        self.out.set(self.out.get() - 1);
        self.returned.set(self.returned.get() + 1);
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for w in waiters {
            w.wake();
        }
    }

    /// Registers `cx`'s waker for the next buffer return (once per task).
    fn wait(&self, cx: &mut Context<'_>) {
        let mut waiters = self.waiters.borrow_mut();
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
    }

    pub(super) fn buf_ptr(&self, bid: u16) -> *mut u8 {
        self.bufs
            .as_ptr()
            .wrapping_add(bid as usize * self.buf_len as usize)
    }

    /// The buffer id in the ring entry at position `slot` (a tail value).
    /// Whether the kernel consumes this ring's buffers incrementally.
    pub(super) fn is_incremental(&self) -> bool {
        self.inc.is_some()
    }

    pub(super) fn bid_at(&self, slot: u16) -> u16 {
        let idx = (slot & (self.entries - 1)) as usize;
        // SAFETY: `idx < entries`, inside the mapping. The entry holds the id we wrote when
        // pushing it (the kernel does not write ids; with incremental consumption it writes
        // only the head entry's address and length).
        unsafe { (*self.ring.as_ptr().add(idx)).bid() }
    }

    /// Writes buffer `bid` into the ring at the (unpublished) tail.
    fn push(&self, bid: u16) {
        let tail = self.tail.get();
        self.slot_of[usize::from(bid)].set(tail);
        let idx = (tail & (self.entries - 1)) as usize;
        // SAFETY: `idx < entries`, inside the mapping; the kernel only reads entries before the
        // published tail, and this one is past it.
        let entry = unsafe { &mut *self.ring.as_ptr().add(idx) };
        entry.set_addr(self.buf_ptr(bid) as u64);
        entry.set_len(self.buf_len);
        entry.set_bid(bid);
        self.tail.set(tail.wrapping_add(1));
    }

    /// Makes every pushed entry visible to the kernel.
    fn publish(&self) {
        // SAFETY: the tail field lives in the first entry, inside the mapping.
        let tail = unsafe { BufRingEntry::tail(self.ring.as_ptr()) } as *const AtomicU16;
        // SAFETY: the kernel reads the tail with acquire semantics; a release store publishes
        // the entries written before it.
        unsafe { (*tail).store(self.tail.get(), Ordering::Release) };
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Off the loop on its core's thread, the core is entered for the unregister; once
        // the core has ended, its ring (and the registration) is gone.
        let _home =
            (self.registered.get() && !context::entered()).then(crate::driver::EnterHome::new);
        if self.registered.get() && context::current_core_id() == Some(self.core) {
            let bgid = self.bgid;
            if let Err(e) = crate::driver::with_driver(|d| d.unregister_buf_ring(bgid)) {
                // The kernel may still pick from the ring: its memory is kept (leaked), never
                // freed under it.
                crate::trace::rt_warn!(
                    "unregistering buffer ring {bgid} failed ({e}); its memory is kept"
                );
                return;
            }
        }
        // SAFETY: the mapping came from mmap with this size; nothing uses it any more (module
        // invariant: no op that picks from the group is in flight, the group is unregistered
        // or its ring is gone).
        unsafe { libc::munmap(self.ring.as_ptr().cast(), self.ring_bytes) };
        let total = self.entries as usize * self.buf_len as usize;
        // SAFETY: `bufs` came from `Box::into_raw` of a boxed slice of `total` bytes.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.bufs.as_ptr(),
                total,
            ))
        });
    }
}

fn next_bgid() -> u16 {
    // Group ids are per ring; one process-wide counter keeps them distinct on every core.
    static NEXT: AtomicU16 = AtomicU16::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl BufRingExt for BufRing {
    fn note_starved(&self) {
        self.inner.starved.set(self.inner.starved.get() + 1);
    }

    fn returned(&self) -> u64 {
        self.inner.returned.get()
    }

    fn poll_returned_since(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()> {
        if self.inner.returned.get() != seen {
            return Poll::Ready(());
        }
        self.inner.wait(cx);
        Poll::Pending
    }
}

impl fmt::Debug for BufRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufRing")
            .field("bgid", &self.inner.bgid)
            .field("entries", &self.inner.entries)
            .field("buf_len", &self.inner.buf_len)
            .field("outstanding", &self.inner.out.get())
            .finish()
    }
}

/// Maps the ring of `entries` buffer descriptors (at least a page, page-aligned as the
/// kernel requires); returns it and its length in bytes.
fn map_ring(entries: u16) -> io::Result<(NonNull<BufRingEntry>, usize)> {
    let ring_bytes = (entries as usize * std::mem::size_of::<BufRingEntry>()).max(4096);
    // SAFETY: an anonymous private mapping; the result is checked below.
    let ring = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ring_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if ring == libc::MAP_FAILED {
        return Err(context(
            io::Error::last_os_error(),
            "mmap of the buffer ring",
        ));
    }
    let ring = NonNull::new(ring.cast::<BufRingEntry>()).expect("mmap returned null");
    Ok((ring, ring_bytes))
}

mod sealed {
    /// Keeps [`BufRingExt`](super::BufRingExt) implemented by the runtime's types only.
    pub trait Sealed {}
}

/// What a reader of a provided-buffer ring ([`BufRing`](BufRing)) reports to
/// it and waits on: a receive that found the ring empty (`ENOBUFS`) records it, and waits
/// for a buffer to come back before it re-arms.
///
/// Implemented by [`BufRing`](BufRing) only.
pub trait BufRingExt: sealed::Sealed {
    /// Records that a receive found the ring empty (its CQE said `ENOBUFS`), so that
    /// [`BufRing::times_starved`](crate::buf::BufRing::times_starved) can tell a ring too
    /// small for its load.
    fn note_starved(&self);

    /// How many buffers have come back to the ring so far. A reader whose receive ended
    /// with `ENOBUFS` (the ring was empty) keeps this value and re-arms once
    /// [`poll_returned_since`](BufRingExt::poll_returned_since) says a buffer came back
    /// since.
    fn returned(&self) -> u64;

    /// `Ready` once a buffer has come back to the ring since
    /// [`returned`](BufRingExt::returned) read `seen`; otherwise registers the waker, woken
    /// by the next return. For re-arming a receive that ended with `ENOBUFS`: read
    /// `returned` when the kernel reports the empty ring (or check
    /// [`BufRing::available`](crate::buf::BufRing::available)), then wait for the count to
    /// move. Counting returns, not buffers in our hands, stays right when many connections
    /// share the ring and CQEs nobody has taken yet hold buffers.
    fn poll_returned_since(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()>;
}

impl sealed::Sealed for BufRing {}
