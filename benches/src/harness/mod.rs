//! The harness every benchmark runs in: the command line (`cli`), the plan, CPU pinning and measuring loop
//! (`measure`), the progress bar (`progress`), result tables (`report`) and what `--json`, `--compare` and
//! `--markdown` make of them (`output`), the server threads of the socket benchmarks (`server`), the raw ring
//! (`raw`), and child processes (`child`). The method is in `benches/README.md`.

pub mod child;
pub mod cli;
pub mod measure;
pub mod output;
pub mod progress;
pub mod raw;
pub mod report;
pub mod server;
