//! Helpers shared by the integration tests: TLS configurations, fd and fixed-table counts, the
//! backend's refusals.

#![allow(dead_code)]

pub mod backend;
pub mod fds;
#[cfg(feature = "tls")]
pub mod tls;
