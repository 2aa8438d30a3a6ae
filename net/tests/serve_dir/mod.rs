//! Helpers of `net_serve_dir`: the directory tree it serves (`tree`), the requests of the
//! differential test and what a response is compared by (`table`), and tower-http's
//! `ServeDir` on tokio, the reference (`reference`).

#![allow(dead_code)]

pub mod reference;
pub mod table;
pub mod tree;
