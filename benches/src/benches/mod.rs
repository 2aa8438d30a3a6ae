//! One module per `bench` subcommand.

pub mod accept;
pub mod cross;
pub mod echo;
pub mod echo_cores;
pub mod features;
mod fio;
pub mod http_cores;
pub mod idle;
pub mod idle_conns;
pub mod link;
pub mod nop;
pub mod pingpong;
pub mod poll;
pub mod read;
pub mod spawn;
pub mod sync;
