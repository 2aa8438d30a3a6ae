//! The submission queue, written in place.
//!
//! The io-uring crate pushes an SQE by copying a built `Entry` into the ring. On the op hot
//! path that copy reads back, 16 bytes at a time, fields that were stored a moment earlier
//! with narrower stores (a failed store-to-load forward, ~15 cycles each), and costs a stack
//! round trip. So the driver maps the ring's SQ a second time (io_uring_setup(2): the SQ ring
//! at `IORING_OFF_SQ_RING`, the SQE array at `IORING_OFF_SQES`) and writes each SQE straight
//! into its slot; the kernel reads it only at the next `io_uring_enter`.
//!
//! # Invariant
//! Only the core's thread pushes (the driver is `!Send` through the ring it owns), and every
//! push goes through [`Sq::push`], which publishes the new tail at once (a release store;
//! only [`Sq::take_back`] moves it back, over SQEs the kernel has not seen yet):
//! the io-uring crate's own view of the SQ (its length, flags) reads the same tail and head,
//! so the two never disagree. (A `SubmissionQueue` of the crate stores back the tail it read
//! when dropped, so the driver never holds one across a push.)
//!
//! The SQE for ring position `tail` is slot `tail & mask` in both of the SQ's modes: with
//! the SQ array (before Linux 6.6, or without `IORING_SETUP_NO_SQARRAY`) the crate sets the
//! array up once as the identity mapping and nothing here writes it again; with
//! `NO_SQARRAY` there is no array and the kernel reads slot `head & mask` directly. So
//! pushes are the same in both modes.

use std::io;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, Ordering};

use io_uring::{squeue, IoUring};

use super::kernel::Gate;

/// `struct io_sqring_offsets` (include/uapi/linux/io_uring.h).
#[repr(C)]
#[derive(Clone, Copy)]
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

/// `struct io_uring_params` (include/uapi/linux/io_uring.h), which
/// `io_uring::Parameters` wraps transparently.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawParams {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    cq_off: [u32; 10],
}

const _: () = assert!(std::mem::size_of::<RawParams>() == 120);
const _: () = assert!(std::mem::size_of::<io_uring::Parameters>() == 120);
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);

/// `IORING_SQ_CQ_OVERFLOW`: the kernel holds CQEs that did not fit the CQ.
pub(crate) const IORING_SQ_CQ_OVERFLOW: u32 = 1 << 1;
/// `IORING_SQ_TASKRUN`: completion work is pending (`TASKRUN_FLAG`); an enter with
/// `GETEVENTS` runs it.
pub(crate) const IORING_SQ_TASKRUN: u32 = 1 << 2;

/// `mmap(2)` offset of the SQ ring.
const IORING_OFF_SQ_RING: libc::off_t = 0;
/// `mmap(2)` offset of the SQE array.
const IORING_OFF_SQES: libc::off_t = 0x1000_0000;

/// One mapping of part of the ring, unmapped on drop.
struct Mapping {
    addr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    fn new(fd: i32, len: usize, offset: libc::off_t, what: &str) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping of the ring fd; no existing memory is affected.
        let addr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        if addr == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("mapping the io_uring {what} ({len} bytes) failed: {e}"),
            ));
        }
        Ok(Mapping {
            addr: NonNull::new(addr.cast()).expect("mmap returned a null mapping"),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `Mapping::new` with this length, and nothing points
        // into it any more (its `Sq` is being dropped).
        unsafe { libc::munmap(self.addr.as_ptr().cast(), self.len) };
    }
}

/// What an [`Sq`]'s words and entries live in.
enum Backing {
    /// The kernel's SQ ring and SQE array, mapped.
    #[allow(dead_code)] // held for their `Drop` (the unmapping)
    Mapped(Mapping, Mapping),
    /// Plain memory, for the readiness backend, which plays the kernel's part
    /// ([`Sq::take_local`]): the head, tail and flags words, and the entries.
    #[allow(dead_code)] // held for their `Drop`
    Local(Box<[AtomicU32; 3]>, Box<[squeue::Entry]>),
}

/// The SQ ring of one core's ring, mapped for in-place writes; or, on the readiness
/// backend, the same ring in plain memory.
pub(crate) struct Sq {
    head: NonNull<AtomicU32>,
    tail: NonNull<AtomicU32>,
    /// The SQ ring's flags word, which the kernel sets (`IORING_SQ_*`).
    flags: NonNull<AtomicU32>,
    sqes: NonNull<squeue::Entry>,
    mask: u32,
    entries: u32,
    /// Whether this is a local SQ (see [`Sq::take_local`]).
    local: bool,
    /// A kernel profile's gate, applied to every SQE pushed (see [`super::kernel`]).
    gate: Option<Gate>,
    _backing: Backing,
}

impl Sq {
    /// Maps `ring`'s SQ ring and SQE array.
    pub(crate) fn new(ring: &IoUring) -> io::Result<Sq> {
        use std::os::fd::AsRawFd;
        // SAFETY: `Parameters` is `#[repr(transparent)]` over the kernel's `io_uring_params`
        // (its documentation says so; the sizes are checked above), which `RawParams`
        // mirrors field for field.
        let p: RawParams = unsafe { *(ring.params() as *const io_uring::Parameters).cast() };
        if p.sq_entries != ring.params().sq_entries() || p.cq_entries != ring.params().cq_entries()
        {
            return Err(io::Error::other(
                "io_uring parameters are not laid out as the kernel's io_uring_params",
            ));
        }
        let off = p.sq_off;
        let ring_len = off.head.max(off.tail).max(off.ring_mask).max(off.flags) as usize + 4;
        let fd = ring.as_raw_fd();
        let ring_map = Mapping::new(fd, ring_len, IORING_OFF_SQ_RING, "SQ ring")?;
        let sqes_len = p.sq_entries as usize * std::mem::size_of::<squeue::Entry>();
        let sqes_map = Mapping::new(fd, sqes_len, IORING_OFF_SQES, "SQE array")?;
        let at = |offset: u32| {
            // SAFETY: every offset used is below `ring_len`, inside the mapping.
            unsafe { ring_map.addr.add(offset as usize) }
        };
        // SAFETY: the kernel's ring mask, a u32 inside the mapping.
        let mask = unsafe { at(off.ring_mask).cast::<u32>().read() };
        if mask != p.sq_entries - 1 {
            return Err(io::Error::other(format!(
                "io_uring SQ ring mask {mask:#x} does not match its {} entries",
                p.sq_entries
            )));
        }
        Ok(Sq {
            head: at(off.head).cast(),
            tail: at(off.tail).cast(),
            flags: at(off.flags).cast(),
            sqes: sqes_map.addr.cast(),
            mask,
            entries: p.sq_entries,
            local: false,
            gate: None,
            _backing: Backing::Mapped(ring_map, sqes_map),
        })
    }

    /// An SQ of `entries` (a power of two) in plain memory, for the readiness backend:
    /// pushes work as on the kernel's, and [`Sq::take_local`] consumes them.
    pub(crate) fn local(entries: u32) -> Sq {
        let entries = entries.max(1).next_power_of_two();
        let words: Box<[AtomicU32; 3]> =
            Box::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
        let mut sqes: Box<[squeue::Entry]> =
            vec![io_uring::opcode::Nop::new().build(); entries as usize].into_boxed_slice();
        let word = |i: usize| NonNull::from(&words[i]);
        Sq {
            head: word(0),
            tail: word(1),
            flags: word(2),
            // The boxes' heap blocks do not move when the boxes do.
            sqes: NonNull::new(sqes.as_mut_ptr()).unwrap_or(NonNull::dangling()),
            mask: entries - 1,
            entries,
            local: true,
            gate: None,
            _backing: Backing::Local(words, sqes),
        }
    }

    /// Takes the oldest SQE pushed and not yet taken, as the kernel consumes one: the
    /// readiness backend's part. `None` when the SQ is empty (and always for the kernel's
    /// SQ, which only the kernel consumes).
    ///
    /// # Safety
    /// The caller carries the SQE out under the driver's contract for every SQE: memory it
    /// points at is the op's until the op's final CQE.
    pub(crate) unsafe fn take_local(&mut self) -> Option<squeue::Entry> {
        if !self.local || self.len() == 0 {
            return None;
        }
        // SAFETY: the words stay in their box while `self` lives; only this thread moves
        // head and tail of a local SQ. Slot `head & mask` holds an SQE `push` wrote (the SQ
        // is not empty) and no push overwrites it before the head moves past it.
        unsafe {
            let head = self.head.as_ref().load(Ordering::Relaxed);
            let sqe = ptr::read(self.sqes.as_ptr().add((head & self.mask) as usize));
            self.head
                .as_ref()
                .store(head.wrapping_add(1), Ordering::Release);
            Some(sqe)
        }
    }

    /// Makes every SQE pushed from now on pass `gate`: a kernel profile's refusals.
    pub(crate) fn set_gate(&mut self, gate: Gate) {
        self.gate = Some(gate);
    }

    /// Whether the SQ has no free slot.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        // SAFETY: both words stay mapped while `self` lives. The kernel moves the head (at
        // submission: acquire, so the slot it freed may be reused); the tail is ours.
        let (head, tail) = unsafe {
            (
                self.head.as_ref().load(Ordering::Acquire),
                self.tail.as_ref().load(Ordering::Relaxed),
            )
        };
        tail.wrapping_sub(head) >= self.entries
    }

    /// Writes `sqe` into the next slot and publishes it.
    ///
    /// # Safety
    /// The SQ is not full ([`Sq::is_full`]), and `sqe` points only at memory that stays
    /// valid until its final CQE (the driver's contract for every SQE).
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, sqe: squeue::Entry) {
        let sqe = match &self.gate {
            None => sqe,
            Some(gate) => gate.filter(sqe),
        };
        // SAFETY: the tail is ours to move (module invariant); the slot `tail & mask` is
        // inside the SQE mapping and free (not full: the kernel has consumed it), so the
        // kernel does not read it until the tail published below covers it.
        unsafe {
            let tail = self.tail.as_ref().load(Ordering::Relaxed);
            ptr::write(self.sqes.as_ptr().add((tail & self.mask) as usize), sqe);
            self.tail
                .as_ref()
                .store(tail.wrapping_add(1), Ordering::Release);
        }
    }

    /// How many SQEs the SQ holds.
    pub(crate) fn capacity(&self) -> usize {
        self.entries as usize
    }

    /// SQEs pushed that the kernel has not consumed yet.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: both words stay mapped while `self` lives; the kernel moves the head, the
        // tail is ours.
        let (head, tail) = unsafe {
            (
                self.head.as_ref().load(Ordering::Acquire),
                self.tail.as_ref().load(Ordering::Relaxed),
            )
        };
        tail.wrapping_sub(head)
    }

    /// The SQ ring's flags (`IORING_SQ_CQ_OVERFLOW`, `IORING_SQ_TASKRUN`), as the kernel last
    /// set them.
    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        // SAFETY: the flags word stays mapped while `self` lives; only the kernel writes it.
        unsafe { self.flags.as_ref().load(Ordering::Acquire) }
    }

    /// The ring position the next push writes to: a mark for [`Sq::take_back`].
    #[inline]
    pub(crate) fn tail(&self) -> u32 {
        // SAFETY: the tail word stays mapped while `self` lives, and only we move it.
        unsafe { self.tail.as_ref().load(Ordering::Relaxed) }
    }

    /// Takes back every SQE pushed since [`Sq::tail`] returned `mark`, as if none had been
    /// pushed, and returns their `user_data` in push order. The slots they were written to
    /// are no longer covered by the tail, so the kernel never reads them; the next pushes
    /// overwrite them.
    ///
    /// # Safety
    /// No `io_uring_enter(2)` has run on this ring since `mark` was read. The kernel reads
    /// SQEs (and the tail) only inside `io_uring_enter` (the driver never sets up an SQPOLL
    /// thread), so it has seen none of them and moving the tail back hides them from it.
    pub(crate) unsafe fn take_back(&mut self, mark: u32) -> Vec<u64> {
        // SAFETY: both words stay mapped while `self` lives; the tail is ours.
        let (head, tail) = unsafe {
            (
                self.head.as_ref().load(Ordering::Acquire),
                self.tail.as_ref().load(Ordering::Relaxed),
            )
        };
        let n = tail.wrapping_sub(mark);
        assert!(
            n <= tail.wrapping_sub(head),
            "taking back {n} SQEs of which the kernel consumed some (head {head}, tail {tail})"
        );
        let user_data = (0..n)
            .map(|i| {
                let slot = (mark.wrapping_add(i) & self.mask) as usize;
                // SAFETY: `slot` is inside the SQE mapping and holds an SQE `push` wrote
                // since `mark`, which the kernel does not touch (it has not consumed it).
                unsafe { (*self.sqes.as_ptr().add(slot)).get_user_data() }
            })
            .collect();
        // SAFETY: as above; the kernel reads the tail only inside io_uring_enter (the
        // caller's contract), where it then finds the SQ as it was at `mark`.
        unsafe { self.tail.as_ref().store(mark, Ordering::Release) };
        user_data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::testing::require;
    use io_uring::opcode;

    /// SQEs written through the second mapping are the ones the kernel runs, in order, and
    /// the crate's view of the SQ (its length) follows the tail we publish.
    #[test]
    fn in_place_sqes_reach_the_kernel() {
        if let Some(ring) = ring_or_refused(IoUring::new(8)) {
            in_place_sqes_reach_the_kernel_on(ring);
        }
    }

    /// The same without the SQ array (`IORING_SETUP_NO_SQARRAY`, Linux 6.6), where the
    /// kernel has it: SQEs are read in ring order, slot `head & mask`.
    #[test]
    fn in_place_sqes_reach_the_kernel_without_sq_array() {
        match IoUring::builder().setup_no_sqarray().build(8) {
            Ok(ring) => in_place_sqes_reach_the_kernel_on(ring),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                require(&format!("io_uring (refused here: {e})"), false);
            }
            // The kernel's answer without it; the driver then keeps the SQ array (the test
            // above).
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                require("IORING_SETUP_NO_SQARRAY (Linux 6.6)", false);
            }
            Err(e) => panic!("io_uring setup with NO_SQARRAY: {e}"),
        }
    }

    /// The ring, or `None` where io_uring is refused (through `require`, so a failure under
    /// `CORERING_REQUIRE_FEATURES=1`): CI runs these tests under a seccomp filter that
    /// refuses it too, where the kernel's SQ cannot be tested.
    fn ring_or_refused(ring: io::Result<IoUring>) -> Option<IoUring> {
        match ring {
            Ok(ring) => Some(ring),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                require(&format!("io_uring (refused here: {e})"), false);
                None
            }
            Err(e) => panic!("io_uring setup: {e}"),
        }
    }

    fn in_place_sqes_reach_the_kernel_on(mut ring: IoUring) {
        let mut sq = Sq::new(&ring).expect("SQ mapping");
        for round in 0..3u64 {
            let mut pushed = 0;
            while !sq.is_full() {
                let sqe = opcode::Nop::new().build().user_data(round * 100 + pushed);
                // SAFETY: not full; a NOP points at no memory.
                unsafe { sq.push(sqe) };
                pushed += 1;
                assert_eq!(ring.submission().len() as u64, pushed);
                assert_eq!(sq.len() as u64, pushed);
            }
            assert_eq!(pushed, 8, "an 8-entry SQ takes 8 SQEs");
            assert_eq!(ring.submit_and_wait(8).expect("submit"), 8);
            assert!(!sq.is_full(), "the kernel consumed the SQ");
            let got: Vec<u64> = ring.completion().map(|c| c.user_data()).collect();
            let want: Vec<u64> = (0..8).map(|i| round * 100 + i).collect();
            assert_eq!(got, want);
        }
    }

    /// SQEs taken back never reach the kernel, and the SQ's view (the crate's too) is as
    /// before they were pushed.
    #[test]
    fn taken_back_sqes_never_reach_the_kernel() {
        let Some(mut ring) = ring_or_refused(IoUring::new(8)) else {
            return;
        };
        let mut sq = Sq::new(&ring).expect("SQ mapping");
        let nop = |ud: u64| opcode::Nop::new().build().user_data(ud);
        // SAFETY: not full (at most 5 of 8 pushed here); a NOP points at no memory.
        unsafe { sq.push(nop(1)) };
        let mark = sq.tail();
        for ud in [2, 3, 4] {
            // SAFETY: as above.
            unsafe { sq.push(nop(ud).flags(squeue::Flags::IO_LINK)) };
        }
        // SAFETY: nothing entered the kernel since `mark`.
        assert_eq!(unsafe { sq.take_back(mark) }, vec![2, 3, 4]);
        assert_eq!(sq.tail(), mark);
        assert_eq!(ring.submission().len(), 1);
        // SAFETY: as above.
        unsafe { sq.push(nop(5)) };
        assert_eq!(ring.submit_and_wait(2).expect("submit"), 2);
        let got: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        assert_eq!(got, vec![(1, 0), (5, 0)]);
    }
}
