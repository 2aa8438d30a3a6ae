//! Context for setup errors ("connect to 127.0.0.1:1: Connection refused"): the runtime's
//! [`context`](runtime::error::context). Data-path errors (read, write, accept) are returned
//! unwrapped.

pub(crate) use runtime::error::context;
