//! `SharedFd`: a file descriptor shared by its owner (a socket, a file) and the ops it has in
//! flight; a regular fd, or a direct descriptor (an index in a ring's fixed-file table).
//!
//! # Invariant
//! An op that names an fd in its SQE holds a [`SharedFd`] clone in its data. The op data
//! lives until the kernel's final CQE (in the op future, or in the driver's ignored slot once
//! the future is dropped), so the fd is closed only after the kernel is done with it, and its
//! number (or table index) cannot be reused for another file while the SQE still waits to be
//! submitted. `Rc` suffices: an fd's owner and its ops stay on one core.
//!
//! # Two kinds
//! - A **regular fd** ([`SharedFd::new`]), closed with `close(2)` when the last clone goes.
//! - A **direct descriptor** ([`SharedFd::from_fixed`]): an index in the fixed-file table of
//!   the ring of the core that made it (a socket accepted with `IORING_FILE_INDEX_ALLOC`).
//!   Ops name the index (`IOSQE_FIXED_FILE`), which spares the kernel the fd-table look-up
//!   and the file's reference count (`fget`/`fput`) per op, and the process holds no fd for
//!   it. What needs a regular fd ([`AsFd`], [`raw`](SharedFd::raw), [`into_owned`](
//!   SharedFd::into_owned), socket options the ring cannot set) gets one installed on demand
//!   (`IORING_OP_FIXED_FD_INSTALL`, Linux 6.8, run synchronously: one `io_uring_enter(2)`),
//!   kept until the last clone goes; ops keep naming the index. When the last clone is
//!   dropped on its core, the driver pushes an `IORING_OP_CLOSE` of the index and submits
//!   it at once (fire and forget: one `io_uring_enter(2)`, as a regular fd's `close(2)`, so
//!   the file is closed when the drop returns, even if the task then blocks); the installed
//!   fd, if any, is closed as usual. Dropped on its core's thread outside the loop (after
//!   `block_on` returned), the core is entered for the close; dropped after its core ended,
//!   the table went with the ring and there is nothing to close.
//!
//! Ops build their SQE for either kind with [`fd_sqe!`](crate::ext::fd_sqe), from
//! [`SharedFd::target`].
//!
//! Public as part of the extension API: [`runtime::ext::SharedFd`](crate::ext::SharedFd)
//! and [`runtime::ext::FdTarget`](crate::ext::FdTarget).

use std::cell::OnceCell;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;

use crate::context::{self, CoreId};
use crate::error::context as err_context;

/// What an SQE names a file by: a regular fd, or an index in the ring's fixed-file table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdTarget {
    /// A regular fd (`types::Fd`).
    Fd(RawFd),
    /// A direct descriptor: an index in the current core's fixed-file table
    /// (`types::Fixed`, `IOSQE_FIXED_FILE`).
    Fixed(u32),
}

/// Builds an SQE naming a [`SharedFd`]'s file by the right kind: evaluates `$build` with
/// `$t` bound to an `io_uring::types::Fd` for a regular fd, or to an
/// `io_uring::types::Fixed` for a direct descriptor (see [`SharedFd::target`]). The
/// builder must take either (`impl UseFixed`), as io_uring's fd-taking opcodes do. Part of
/// the extension API ([`runtime::ext`](crate::ext)).
///
/// ```
/// use runtime::ext::io_uring::opcode;
/// use runtime::ext::SharedFd;
///
/// let (r, _w) = std::io::pipe().unwrap();
/// let fd = SharedFd::new(r.into());
/// let mut buf = [0u8; 8];
/// let sqe = runtime::ext::fd_sqe!(&fd, |t| opcode::Read::new(t, buf.as_mut_ptr(), 8).build());
/// # drop(sqe);
/// ```
// Documented at `runtime::ext::fd_sqe`; `runtime::fd_sqe` is where `macro_export` puts it.
#[doc(hidden)]
#[macro_export]
macro_rules! fd_sqe {
    ($fd:expr, |$t:ident| $build:expr) => {
        match $crate::ext::SharedFd::target($fd) {
            $crate::ext::FdTarget::Fd(fd) => {
                let $t = $crate::ext::io_uring::types::Fd(fd);
                $build
            }
            $crate::ext::FdTarget::Fixed(index) => {
                let $t = $crate::ext::io_uring::types::Fixed(index);
                $build
            }
        }
    };
}

/// A reference-counted fd, regular or direct (see the module documentation), closed (once)
/// when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct SharedFd(Rc<Inner>);

#[derive(Debug)]
enum Inner {
    Real(RealFd),
    Fixed(Fixed),
}

/// A regular fd, closed when dropped. The current core's driver hears of it first
/// ([`Driver::release_fd`](crate::driver::Driver)): the readiness backend keeps what it
/// knows of an fd number (registered with epoll, non-blocking) until then, and the number
/// may name another file after the close.
#[derive(Debug)]
struct RealFd(Option<OwnedFd>);

impl RealFd {
    fn get(&self) -> BorrowedFd<'_> {
        match &self.0 {
            Some(fd) => fd.as_fd(),
            // Only `into_inner`, which consumes `self`, takes the fd.
            // SAFETY: -1 is never an open fd; any call given it fails with `EBADF`.
            None => unsafe { BorrowedFd::borrow_raw(-1) },
        }
    }

    /// The fd, released from the driver's knowledge: its owner takes it out of the
    /// runtime.
    fn into_inner(mut self) -> Option<OwnedFd> {
        let fd = self.0.take()?;
        release(fd.as_raw_fd());
        Some(fd)
    }
}

impl Drop for RealFd {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            release(fd.as_raw_fd());
        }
    }
}

/// Tells this thread's core's driver that `fd` leaves it (see [`RealFd`]): the current
/// core, or the thread's home core entered for it (a drop after `block_on` returned). A
/// driver in use (never expected: op data is dropped outside its borrow) or no runtime on
/// this thread: nothing to tell.
fn release(fd: RawFd) {
    if crate::driver::try_with_driver(|d| d.release_fd(fd)).is_none() {
        let _home = crate::driver::EnterHome::new();
        let _ = crate::driver::try_with_driver(|d| d.release_fd(fd));
    }
}

/// A direct descriptor and the regular fd installed for it, if any.
#[derive(Debug)]
struct Fixed {
    index: u32,
    /// The core whose ring's table holds the index; `None` if it was made outside a runtime
    /// (no ring can be reached: every op on it fails with `EBADF`).
    core: Option<CoreId>,
    installed: OnceCell<OwnedFd>,
}

impl Fixed {
    /// Whether this thread runs the core whose table holds the index.
    #[inline]
    fn on_core(&self) -> bool {
        self.core.is_some() && context::current_core_id() == self.core
    }

    /// The installed regular fd, installing it first if there is none.
    fn installed(&self) -> io::Result<&OwnedFd> {
        if let Some(fd) = self.installed.get() {
            return Ok(fd);
        }
        let fd = self.install()?;
        Ok(self.installed.get_or_init(|| fd))
    }

    /// A new regular fd for the index (`IORING_OP_FIXED_FD_INSTALL`, synchronously).
    fn install(&self) -> io::Result<OwnedFd> {
        let what = || format!("installing a real fd for direct descriptor {}", self.index);
        // On the core's thread outside its loop (after `block_on` returned), the core is
        // entered for the install.
        let _home = (!context::entered()).then(crate::driver::EnterHome::new);
        if !self.on_core() {
            return Err(io::Error::other(format!(
                "{}: not on the core whose ring holds it (its runtime is gone, or this is \
                 another runtime)",
                what()
            )));
        }
        if !crate::driver::current_features().is_some_and(|f| f.fixed_fd_install) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{}: the kernel lacks IORING_OP_FIXED_FD_INSTALL (Linux 6.8)",
                    what()
                ),
            ));
        }
        with_driver_freeing(|d| d.install_fixed(self.index))
            .unwrap_or_else(|| Err(driver_busy()))
            .map_err(|e| err_context(e, what()))
    }
}

impl Drop for Fixed {
    fn drop(&mut self) {
        // The installed fd, if any, closes with its field. Every op that named the index
        // held a clone until its final CQE, so none does now: the index can be closed.
        let Some(core) = self.core else {
            return;
        };
        // On its core, one context read: the check and the metrics' count together.
        let here = |c: &crate::driver::RingContext| {
            let here = c.id == core;
            if here {
                c.fixed_in_use.set(c.fixed_in_use.get().saturating_sub(1));
            }
            here
        };
        let (on_core, _home) = match crate::driver::with_current(here) {
            Some(on_core) => (on_core, None),
            // No core entered: on the core's own thread outside its loop (after `block_on`
            // returned), the core is entered for the close.
            None => {
                let home = crate::driver::EnterHome::new();
                (
                    crate::driver::with_current(here).unwrap_or(false),
                    Some(home),
                )
            }
        };
        if on_core {
            // `None` (the driver is borrowed: never, as op data is dropped outside its
            // borrow) leaves the slot taken until the ring closes, never freed early.
            let _ = crate::driver::try_with_driver(|d| d.close_fixed_now(self.index));
        }
        // Elsewhere the core has ended and its table went with its ring: nothing to close.
    }
}

/// Runs `f` with the current core's driver if it can be borrowed, then drops the data of
/// ops that finished meanwhile outside the borrow (a synchronous op reaps other CQEs).
fn with_driver_freeing<R>(f: impl FnOnce(&mut crate::driver::Driver) -> R) -> Option<R> {
    let (r, dead) = crate::driver::try_with_driver(|d| {
        let r = f(d);
        (r, d.take_dead())
    })?;
    drop(dead);
    Some(r)
}

fn driver_busy() -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        "the core's ring is in use (called from inside the driver)",
    )
}

impl SharedFd {
    /// Takes ownership of the regular fd `fd`. Whatever this thread's core knew of an
    /// earlier file under the same number (closed without telling it) is forgotten: the
    /// readiness backend registers the new file afresh on first use.
    pub fn new(fd: OwnedFd) -> SharedFd {
        release(fd.as_raw_fd());
        SharedFd(Rc::new(Inner::Real(RealFd(Some(fd)))))
    }

    /// Takes ownership of direct descriptor `index` of the current core's ring (see the
    /// module documentation). Outside a runtime the result names no ring: every op on it
    /// fails with `EBADF` and it cannot give a regular fd.
    ///
    /// # Safety
    /// `index` is an occupied slot of the fixed-file table of the ring of the core this is
    /// called on (the result of an accept or open into the table on this core), and
    /// nothing else owns it: the last clone's drop closes it.
    pub unsafe fn from_fixed(index: u32) -> SharedFd {
        // One context read: this core, and the metrics' count of slots held.
        let core = crate::driver::with_current(|c| {
            c.fixed_in_use.set(c.fixed_in_use.get() + 1);
            c.id
        });
        SharedFd(Rc::new(Inner::Fixed(Fixed {
            index,
            core,
            installed: OnceCell::new(),
        })))
    }

    /// What an SQE names this file by (see [`fd_sqe!`](crate::ext::fd_sqe)): the regular fd,
    /// or the direct descriptor's index. A direct descriptor used on any core but its own
    /// (its runtime shut down, and this is another) gives `FdTarget::Fd(-1)`, so the op fails
    /// with `EBADF` rather than reach another ring's file.
    #[inline]
    pub fn target(&self) -> FdTarget {
        match &*self.0 {
            Inner::Real(fd) => FdTarget::Fd(fd.get().as_raw_fd()),
            Inner::Fixed(f) if f.on_core() => FdTarget::Fixed(f.index),
            Inner::Fixed(_) => FdTarget::Fd(-1),
        }
    }

    /// The direct descriptor's index; `None` for a regular fd.
    pub fn fixed_index(&self) -> Option<u32> {
        match &*self.0 {
            Inner::Real(_) => None,
            Inner::Fixed(f) => Some(f.index),
        }
    }

    /// Whether a regular fd is there without installing one: always for a regular fd, and
    /// for a direct descriptor once one was installed.
    pub fn has_raw(&self) -> bool {
        match &*self.0 {
            Inner::Real(_) => true,
            Inner::Fixed(f) => f.installed.get().is_some(),
        }
    }

    /// A regular fd for the file: the fd itself, or for a direct descriptor the fd installed
    /// for it (installed on the first call: one synchronous ring op, kept until the last
    /// clone goes). Errors say what was asked and why it failed (not on the descriptor's
    /// core, the kernel lacks `FIXED_FD_INSTALL`, the process is out of fds).
    pub fn try_as_fd(&self) -> io::Result<BorrowedFd<'_>> {
        match &*self.0 {
            Inner::Real(fd) => Ok(fd.get()),
            Inner::Fixed(f) => f.installed().map(AsFd::as_fd),
        }
    }

    /// The raw regular fd (see [`try_as_fd`](SharedFd::try_as_fd), which installs one for a
    /// direct descriptor); `-1` if that fails, which any call given it answers with
    /// `EBADF`. Ops name the file by [`target`](SharedFd::target) instead.
    pub fn raw(&self) -> RawFd {
        self.try_as_fd().map_or(-1, |fd| fd.as_raw_fd())
    }

    /// Whether `self` and `other` are clones of one fd.
    pub fn same(&self, other: &SharedFd) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// The regular fd itself when this is the last clone; otherwise `self` back (an op
    /// dropped in flight still holds a clone until its CQE arrives). For a direct
    /// descriptor the fd is the installed one (installed now if need be; `self` back if
    /// that fails), and the index is closed: the fd alone holds the file then.
    pub fn try_unwrap(self) -> Result<OwnedFd, SharedFd> {
        match Rc::try_unwrap(self.0) {
            Ok(Inner::Real(fd)) => fd
                .into_inner()
                .ok_or_else(|| SharedFd(Rc::new(Inner::Real(RealFd(None))))),
            Ok(Inner::Fixed(mut f)) => match f.installed.take().map_or_else(|| f.install(), Ok) {
                Ok(fd) => Ok(fd),
                Err(_) => Err(SharedFd(Rc::new(Inner::Fixed(f)))),
            },
            Err(rc) => Err(SharedFd(rc)),
        }
    }

    /// The regular fd itself when this is the last clone; otherwise a duplicate
    /// (`F_DUPFD_CLOEXEC`) of it. For a direct descriptor, as
    /// [`try_unwrap`](SharedFd::try_unwrap) says: the installed fd (installed now if need
    /// be), the index closed when this was the last clone; an install that fails is an
    /// error saying so (and, this being the last clone, the file is closed).
    pub fn into_owned(self) -> io::Result<OwnedFd> {
        match Rc::try_unwrap(self.0) {
            Ok(Inner::Real(fd)) => fd
                .into_inner()
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF)),
            Ok(Inner::Fixed(mut f)) => f.installed.take().map_or_else(|| f.install(), Ok),
            Err(rc) => SharedFd(rc).try_as_fd()?.try_clone_to_owned(),
        }
    }

    /// Sets socket option `level`/`name` (`setsockopt(2)`) to `value`, the option's bytes
    /// (a `c_int`'s native bytes for most).
    ///
    /// On a direct descriptor without an installed fd this goes through the ring
    /// (`IORING_OP_URING_CMD`, `SOCKET_URING_OP_SETSOCKOPT`, Linux 6.7, one synchronous
    /// `io_uring_enter(2)`), installing no fd; a kernel without socket commands
    /// (`EOPNOTSUPP`) gets an fd installed and a plain `setsockopt(2)`.
    pub fn set_option(&self, level: i32, name: i32, value: &[u8]) -> io::Result<()> {
        if let Inner::Fixed(f) = &*self.0 {
            if f.installed.get().is_none() && f.on_core() {
                match with_driver_freeing(|d| d.setsockopt_fixed(f.index, level, name, value)) {
                    Some(Ok(())) => return Ok(()),
                    Some(Err(e)) if e.raw_os_error() != Some(libc::EOPNOTSUPP) => return Err(e),
                    _ => {}
                }
            }
        }
        let fd = self.try_as_fd()?;
        let len = libc::socklen_t::try_from(value.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "socket option value too long")
        })?;
        // SAFETY: `value` is valid for `len` bytes for the call; the fd is open (borrowed).
        let r =
            unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.as_ptr().cast(), len) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl AsFd for SharedFd {
    /// The regular fd; for a direct descriptor, the one installed for it (see
    /// [`SharedFd::try_as_fd`]).
    ///
    /// # Panics
    /// If a direct descriptor's fd cannot be installed (out of fds, not on its core, a
    /// kernel before 6.8): use [`SharedFd::try_as_fd`] for that error instead.
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self.try_as_fd() {
            Ok(fd) => fd,
            Err(e) => panic!("SharedFd::as_fd: {e}"),
        }
    }
}

impl AsRawFd for SharedFd {
    /// See [`SharedFd::raw`]: `-1` if a direct descriptor's fd cannot be installed.
    fn as_raw_fd(&self) -> RawFd {
        self.raw()
    }
}
