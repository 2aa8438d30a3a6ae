//! Helpers shared by the integration tests: TLS configurations, fd and fixed-table counts.

#![allow(dead_code)]

pub mod fds;
#[cfg(feature = "tls")]
pub mod tls;
