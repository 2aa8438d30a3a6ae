//! End-to-end tests across the workspace's crates live in `tests/tests/`; this library is
//! empty.
