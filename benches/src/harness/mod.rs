//! The harness every benchmark runs in: the command line (`cli`), the plan, CPU pinning and measuring loop.

pub mod child;
pub mod cli;
pub mod contest;
pub mod measure;
pub mod output;
pub mod progress;
pub mod raw;
pub mod report;
pub mod server;
