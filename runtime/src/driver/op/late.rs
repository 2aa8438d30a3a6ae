//! What the data of an op nobody awaits does with the CQEs that still arrive: a dropped
//! multishot op's (close the fds or direct descriptors it produced, return its buffers)
//! and a detached op's (run its handler).

use super::{close_raw, Cqe, Release};

/// What the data of a dropped multishot op (or a detached one) does with each CQE that
/// still arrives. Runs inside the driver, so it cannot push SQEs: a direct descriptor to
/// close is returned, and the driver closes it through the ring once the reap pass ends.
pub(crate) trait LateCqe: 'static {
    fn late(&self, cqe: Cqe) -> Option<u32>;
}

/// Data whose late CQEs carry nothing to release.
pub(crate) struct Plain<T>(#[allow(dead_code)] pub(crate) T);

impl<T: 'static> LateCqe for Plain<T> {
    fn late(&self, _cqe: Cqe) -> Option<u32> {
        None
    }
}

/// Data whose late successful CQEs are new fds (multishot accept): they are closed.
pub(crate) struct ClosesFd<T>(#[allow(dead_code)] pub(crate) T);

impl<T: 'static> LateCqe for ClosesFd<T> {
    fn late(&self, cqe: Cqe) -> Option<u32> {
        if let Ok(fd) = cqe.result {
            close_raw(fd as i32);
        }
        None
    }
}

/// Data whose late successful CQEs are new direct descriptors (a multishot accept into the
/// fixed-file table): they are handed back for the driver to close through the ring.
pub(crate) struct ClosesFixed<T>(#[allow(dead_code)] pub(crate) T);

impl<T: 'static> LateCqe for ClosesFixed<T> {
    fn late(&self, cqe: Cqe) -> Option<u32> {
        cqe.result.ok()
    }
}

/// A detached op's data and the handler of its CQE ([`Op::detach`]); the data is freed with
/// this value, after the handler ran.
///
/// [`Op::detach`]: crate::ext::Op::detach
pub(crate) struct Detached<T, F> {
    _data: T,
    done: std::cell::Cell<Option<F>>,
}

impl<T, F: FnOnce(Cqe)> Detached<T, F> {
    pub(crate) fn new(data: T, done: F) -> Self {
        Detached {
            _data: data,
            done: std::cell::Cell::new(Some(done)),
        }
    }
}

impl<T: 'static, F: FnOnce(Cqe) + 'static> LateCqe for Detached<T, F> {
    fn late(&self, cqe: Cqe) -> Option<u32> {
        if let Some(done) = self.done.take() {
            done(cqe);
        }
        None
    }
}

pub(crate) struct Releasing<T>(pub(crate) T);

impl<T: Release> LateCqe for Releasing<T> {
    fn late(&self, cqe: Cqe) -> Option<u32> {
        self.0.release(cqe);
        None
    }
}
