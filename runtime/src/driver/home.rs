//! Values released where their core is not entered (see `context`'s "Values that leave
//! their core"): [`EnterHome`] enters the thread's home core for the release and gives its
//! ring one turn afterwards.

use std::task::Waker;

use crate::context::{self, Enter};

/// Enters this thread's home core when no core is entered (a value dropped after
/// `block_on` returned, while a panic unwinds out of it, or on a core's thread between its
/// `block_on`s), so that what is released while it lives is released as on the core; does
/// nothing where a core is entered or none lives on this thread.
///
/// When it leaves a core it entered, it gives the ring one turn without waiting: it submits
/// what the release queued (an op's cancel, a direct descriptor's close) and reaps what is
/// there, so the release takes effect now rather than at the core's next `block_on`. The
/// wakes of that reap go to the core's run queue, as any wake on its thread does.
pub(crate) struct EnterHome {
    entered: Option<Enter>,
}

impl EnterHome {
    /// Enters the home core if no core is entered (see the type's documentation).
    #[cold]
    pub(crate) fn new() -> EnterHome {
        EnterHome {
            entered: context::enter_home(),
        }
    }
}

impl Drop for EnterHome {
    fn drop(&mut self) {
        if self.entered.is_none() {
            return;
        }
        // Still entered: what the reap frees is released on the core (outside the driver's
        // borrow, safety rule 2 of `op`). A driver borrowed here (never: no loop runs on
        // this thread while it is not entered) skips the turn; the next one does it.
        let dead = crate::driver::try_with_driver(|d| {
            d.park(false, None);
            d.reap(Waker::wake);
            d.take_dead()
        });
        drop(dead);
    }
}
