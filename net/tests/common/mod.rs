//! Helpers shared by the integration tests that use TLS.

#![allow(dead_code)]

pub mod tls;
