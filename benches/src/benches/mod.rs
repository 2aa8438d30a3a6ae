//! One module per `bench` subcommand. Each `run` sets up its contestants, measures them with the harness
//! (`crate::harness`) and prints its tables; the servers of the socket benchmarks are in `crate::servers`. Why each
//! benchmark measures what it does, and how to read its figures, is in `benches/README.md` and in each module's
//! documentation.

pub mod accept;
pub mod echo;
pub mod echo_cores;
pub mod features;
mod fio;
pub mod idle;
pub mod idle_conns;
pub mod link;
pub mod nop;
pub mod pingpong;
pub mod poll;
pub mod read;
pub mod spawn;
pub mod sync;
