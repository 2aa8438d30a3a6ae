//! Core-local synchronization: [`mpsc`], [`oneshot`] and [`Notify`] for the tasks of one
//! core, `!Send`, with no atomics (state in `Rc`, `Cell` and `RefCell`).
//!
//! Thread-per-core code keeps most conversations on one core; these types cost no atomic
//! read-modify-write and no lock, and their names and signatures are tokio's, so a port
//! between [`runtime::sync`](crate::sync) and `runtime::sync::local` is a rename. Moving a
//! value to another core is a compile error, not a data race.
//!
//! Shared rules of the three:
//! - a waker is stored only while its future is pending, replaced only when the new one
//!   would not wake the same task (`Waker::will_wake`), and dropped with the future when
//!   that future is cancelled;
//! - a notification or a channel slot handed to a future that is dropped before it uses
//!   it goes to the next waiter: no wake-up is lost;
//! - wakers are woken, and values dropped, after the internal `RefCell` borrow has ended,
//!   so a value's `Drop` or a waker may use the same channel again. Dropping a waker is
//!   assumed not to run such code (true of this runtime: the last reference to a task
//!   frees only an empty cell).
//!
//! None of them is a cross-core primitive: a waker from another core still works (it is a
//! normal waker), but the values themselves cannot leave the core.
//!
//! ```compile_fail
//! fn send<T: Send>(_: T) {}
//! send(runtime::sync::local::Notify::new());
//! ```

pub mod mpsc;
mod notify;
pub mod oneshot;
mod wait_list;

pub use notify::{Notified, Notify};
