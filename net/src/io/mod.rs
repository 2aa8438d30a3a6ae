//! Stream I/O shared by every connected stream socket: `TcpStream`, `UnixStream` and their
//! split halves.
//!
//! `owned` is the native interface: each call is one op that owns its buffer and gives it
//! back with the result. `poll` is the `futures::io` adapter state: an internal buffer and
//! at most one op in flight per direction, kept in the socket between polls.

mod owned;
mod poll;

pub(crate) use owned::{read, read_exact, write, write_all};
pub(crate) use poll::{ReadState, WriteState};
