//! A quarantine allocator: catches the kernel writing into memory after it was freed.
//!
//! Neither AddressSanitizer nor valgrind sees a write the kernel makes through io_uring, so a
//! buffer freed while an op still owns it in the kernel goes unnoticed by both. This
//! allocator, installed as the `#[global_allocator]` of one test binary, makes such writes
//! visible: while it is [`enable`]d, every freed block is filled with [`PATTERN`] and held
//! back (not returned to the system allocator) in a bounded FIFO. A block is checked when it
//! is evicted (the quarantine holds at most [`MAX_BYTES`] / [`MAX_BLOCKS`]) and all held
//! blocks are checked by [`check_all`]; any byte of the pattern that changed is a write after
//! free, reported as a [`Corruption`] with the block's size and the tag of the code that
//! allocated it.
//!
//! Tags are small numbers a test sets per thread with [`set_tag`] (or [`tagged`]) around the
//! code that creates and polls an op, so a report names the op that owned the block. Each
//! block carries a 16-byte header (its size and tag) in front of it; [`live`] counts blocks
//! not yet freed per tag, for leak checks.
//!
//! # Invariant
//! The allocator never allocates itself: the quarantine and the reports live in fixed-size
//! statics behind a spin lock, and nothing called under that lock allocates (only
//! `System.dealloc` of evicted blocks).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// The byte every freed block is filled with while quarantined. Test payloads avoid it.
pub const PATTERN: u8 = 0xDB;
/// The most bytes held back at once.
pub const MAX_BYTES: usize = 64 << 20;
/// The most blocks held back at once.
pub const MAX_BLOCKS: usize = 1 << 17;
/// How many distinct tags exist (tags are `0..TAGS`; 0 is "untagged").
pub const TAGS: usize = 32;
/// The most corruptions kept for [`take_corruptions`].
const MAX_REPORTS: usize = 64;
/// Bytes in front of each block: its size and its tag.
const HEADER: usize = 16;

/// The global allocator type: install with
/// `#[global_allocator] static A: tests::quarantine::Quarantine = tests::quarantine::Quarantine;`.
pub struct Quarantine;

/// One write after free found in a quarantined block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// The block's size as the program asked for it.
    pub size: usize,
    /// The tag set when the block was allocated.
    pub tag: u8,
    /// Offset of the first changed byte.
    pub first: usize,
    /// How many bytes of the pattern changed.
    pub changed: usize,
    /// Up to 8 bytes found from `first` on.
    pub found: [u8; 8],
}

/// Counters, for the test's printout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// Blocks freed into the quarantine.
    pub quarantined: u64,
    /// Blocks checked (evicted, or by `check_all`).
    pub checked: u64,
    /// Bytes checked.
    pub checked_bytes: u64,
}

#[derive(Clone, Copy)]
struct Held {
    /// The address the program saw.
    user: usize,
    size: usize,
    align: usize,
    tag: u8,
}

const EMPTY: Held = Held {
    user: 0,
    size: 0,
    align: 0,
    tag: 0,
};

const NO_REPORT: Corruption = Corruption {
    size: 0,
    tag: 0,
    first: 0,
    changed: 0,
    found: [0; 8],
};

struct State {
    ring: [Held; MAX_BLOCKS],
    head: usize,
    len: usize,
    bytes: usize,
    reports: [Corruption; MAX_REPORTS],
    n_reports: usize,
    /// Corruptions found beyond `MAX_REPORTS`.
    lost_reports: usize,
}

struct Locked {
    busy: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only touched by whoever holds `busy` (see `Locked::with`).
unsafe impl Sync for Locked {}

impl Locked {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: `busy` is held, so no other reference to the state exists.
        let r = f(unsafe { &mut *self.state.get() });
        self.busy.store(false, Ordering::Release);
        r
    }
}

static STATE: Locked = Locked {
    busy: AtomicBool::new(false),
    state: UnsafeCell::new(State {
        ring: [EMPTY; MAX_BLOCKS],
        head: 0,
        len: 0,
        bytes: 0,
        reports: [NO_REPORT; MAX_REPORTS],
        n_reports: 0,
        lost_reports: 0,
    }),
};

static ENABLED: AtomicBool = AtomicBool::new(false);
static LIVE: [AtomicI64; TAGS] = [const { AtomicI64::new(0) }; TAGS];
static QUARANTINED: AtomicU64 = AtomicU64::new(0);
static CHECKED: AtomicU64 = AtomicU64::new(0);
static CHECKED_BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static TAG: Cell<u8> = const { Cell::new(0) };
}

/// Where the header goes in front of a block of `align`.
fn offset(align: usize) -> usize {
    align.max(HEADER)
}

/// The layout asked of the system allocator for a block of `size` and `align`.
fn outer(size: usize, align: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(offset(align))?, align.max(HEADER)).ok()
}

fn current_tag() -> u8 {
    TAG.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every block handed out is a live block of the system allocator, `offset(align)`
// bytes in, aligned to `align`, with `size` usable bytes; it goes back to the system
// allocator with the same outer layout it was allocated with.
unsafe impl GlobalAlloc for Quarantine {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(outer) = outer(layout.size(), layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `outer` has a non-zero size (it includes the header).
        let base = unsafe { System.alloc(outer) };
        if base.is_null() {
            return base;
        }
        let tag = current_tag();
        // SAFETY: the block is `offset` + `size` bytes long, so `user` is inside it.
        let user = unsafe { base.add(offset(layout.align())) };
        // SAFETY: the header's 16 bytes lie inside the block, before `user`, aligned to 8
        // (`user` is aligned to at least 16).
        unsafe {
            let header = user.sub(HEADER).cast::<u64>();
            header.write(layout.size() as u64);
            header.add(1).write(u64::from(tag));
        }
        LIVE[tag as usize % TAGS].fetch_add(1, Ordering::Relaxed);
        user
    }

    unsafe fn dealloc(&self, user: *mut u8, layout: Layout) {
        // SAFETY: `user` came from `alloc`, so its header is in front of it.
        let tag = unsafe { user.sub(HEADER).cast::<u64>().add(1).read() } as u8;
        LIVE[tag as usize % TAGS].fetch_sub(1, Ordering::Relaxed);
        if !ENABLED.load(Ordering::Relaxed) {
            // SAFETY: the block was allocated by `alloc` with this layout.
            unsafe { free(user, layout.size(), layout.align()) };
            return;
        }
        // SAFETY: the program gave the block up: its `size` bytes are ours to fill.
        unsafe { std::ptr::write_bytes(user, PATTERN, layout.size()) };
        QUARANTINED.fetch_add(1, Ordering::Relaxed);
        let held = Held {
            user: user as usize,
            size: layout.size(),
            align: layout.align(),
            tag,
        };
        STATE.with(|s| {
            while s.len > 0 && (s.len == MAX_BLOCKS || s.bytes + held.size > MAX_BYTES) {
                evict(s);
            }
            let at = (s.head + s.len) % MAX_BLOCKS;
            s.ring[at] = held;
            s.len += 1;
            s.bytes += held.size;
        });
    }
}

/// Returns a block to the system allocator.
///
/// # Safety
/// `user` is a block from `Quarantine::alloc` of `size` and `align`, not yet freed.
unsafe fn free(user: *mut u8, size: usize, align: usize) {
    let outer = outer(size, align).expect("layout was valid at allocation");
    // SAFETY: the caller's contract: `base` is the system block `user` was carved from.
    unsafe { System.dealloc(user.sub(offset(align)), outer) };
}

/// Checks the oldest held block and frees it.
fn evict(s: &mut State) {
    let held = s.ring[s.head];
    s.head = (s.head + 1) % MAX_BLOCKS;
    s.len -= 1;
    s.bytes -= held.size;
    check(s, &held);
    // SAFETY: a held block came from `alloc` with this size and align and was not freed.
    unsafe { free(held.user as *mut u8, held.size, held.align) };
}

/// Compares a held block with the pattern; records (and repaints) what changed.
fn check(s: &mut State, held: &Held) {
    CHECKED.fetch_add(1, Ordering::Relaxed);
    CHECKED_BYTES.fetch_add(held.size as u64, Ordering::Relaxed);
    // SAFETY: the block is held (not freed) and nothing else references it.
    let bytes = unsafe { std::slice::from_raw_parts_mut(held.user as *mut u8, held.size) };
    let Some(first) = bytes.iter().position(|&b| b != PATTERN) else {
        return;
    };
    let changed = bytes.iter().filter(|&&b| b != PATTERN).count();
    let mut found = [0u8; 8];
    for (i, b) in bytes[first..].iter().take(8).enumerate() {
        found[i] = *b;
    }
    // Repainted so a block is reported once.
    bytes.fill(PATTERN);
    let report = Corruption {
        size: held.size,
        tag: held.tag,
        first,
        changed,
        found,
    };
    if s.n_reports < MAX_REPORTS {
        s.reports[s.n_reports] = report;
        s.n_reports += 1;
    } else {
        s.lost_reports += 1;
    }
}

/// Turns the quarantine on or off (off: frees go straight to the system allocator, as
/// under AddressSanitizer, whose own quarantine then sees every free).
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Whether the quarantine is on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

/// Sets this thread's allocation tag; returns the previous one.
pub fn set_tag(tag: u8) -> u8 {
    assert!((tag as usize) < TAGS, "tag {tag} out of range");
    TAG.with(|t| t.replace(tag))
}

/// Runs `f` with this thread's allocation tag set to `tag`.
pub fn tagged<R>(tag: u8, f: impl FnOnce() -> R) -> R {
    let prev = set_tag(tag);
    let r = f();
    set_tag(prev);
    r
}

/// Blocks allocated under `tag` and not yet freed.
pub fn live(tag: u8) -> i64 {
    LIVE[tag as usize % TAGS].load(Ordering::Relaxed)
}

/// Checks every held block now (keeping them held); corruptions go to the reports.
pub fn check_all() {
    STATE.with(|s| {
        for i in 0..s.len {
            let held = s.ring[(s.head + i) % MAX_BLOCKS];
            check(s, &held);
        }
    });
}

/// Checks and frees every held block.
pub fn flush() {
    STATE.with(|s| {
        while s.len > 0 {
            evict(s);
        }
    });
}

/// The corruptions found so far (and how many did not fit), clearing the list.
pub fn take_corruptions() -> (Vec<Corruption>, usize) {
    let mut out = [NO_REPORT; MAX_REPORTS];
    let (n, lost) = STATE.with(|s| {
        out[..s.n_reports].copy_from_slice(&s.reports[..s.n_reports]);
        let r = (s.n_reports, s.lost_reports);
        s.n_reports = 0;
        s.lost_reports = 0;
        r
    });
    // Allocates only now, with the lock released.
    (out[..n].to_vec(), lost)
}

/// Bytes held in the quarantine now.
pub fn held_bytes() -> usize {
    STATE.with(|s| s.bytes)
}

/// The counters so far.
pub fn counters() -> Counters {
    Counters {
        quarantined: QUARANTINED.load(Ordering::Relaxed),
        checked: CHECKED.load(Ordering::Relaxed),
        checked_bytes: CHECKED_BYTES.load(Ordering::Relaxed),
    }
}
