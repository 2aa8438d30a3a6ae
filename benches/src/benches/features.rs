//! `bench features`: what each kernel feature the runtime uses buys, one at a time.

use std::io;

use super::echo::{each_config, measure, Spec};
use crate::harness::cli::Opts;
use crate::harness::server::{Cpus, Server};
use crate::servers::{self, ENTRIES};

/// A runtime built with one feature switched off, by name.
type Variant = (&'static str, fn(runtime::Builder) -> runtime::Builder);

/// The rows: the default, then each variant.
const VARIANTS: [Variant; 8] = [
    ("all on", |b| b),
    ("- direct descriptors", |b| b.direct_descriptors(false)),
    ("- multishot recv (own buffer)", |b| b.recv_multishot(false)),
    ("- recv bundles", |b| b.recv_bundle(false)),
    ("- incremental buffers", |b| b.recv_incremental(false)),
    ("- registered ring fd", |b| b.registered_ring_fd(false)),
    ("- NO_SQARRAY", |b| b.no_sqarray(false)),
    ("- min-timeout waits", |b| b.min_timeout(false)),
];

/// Runs the benchmark and prints the echo tables per configuration.
pub fn run(opts: &Opts) -> io::Result<()> {
    let cpus = Cpus::pick();
    each_config(opts, |cfg, plan, nofile| {
        let msg = cfg.msg;
        let mut servers = Vec::new();
        for (i, (name, off)) in VARIANTS.into_iter().enumerate() {
            let thread = if i == 0 {
                "features-all"
            } else {
                "features-off"
            };
            let builder = move || off(runtime::Builder::new()).entries(ENTRIES);
            let srv = Server::spawn(thread, cpus.server, move |l, c| {
                servers::runtime_echo(l, c, builder(), servers::Conn::Chunks)
            })?;
            servers.push((name.to_string(), srv));
        }
        let raw = Server::spawn("features-raw", cpus.server, move |l, c| {
            servers::raw::echo(l, c, msg)
        })?;
        servers.push(("raw ring".to_string(), raw));
        let spec = Spec {
            name: "features",
            baseline: (0, "vs all on"),
            cpu_vs: vec![(0, "all on"), (servers.len() - 1, "raw")],
            rate_vs: None,
            busy: "server busy",
            client_cpu: cpus.client,
            notes: vec![format!(
                "{}; client: tokio current-thread, one task per connection; RLIMIT_NOFILE {nofile}; each row: this \
                 runtime's echo server (read_chunk, write_chunk) with the named Builder switch off",
                cpus.describe()
            )],
            details: "server CPU per round trip (getrusage RUSAGE_THREAD); CPU vs all on: the default's us/rt over \
                      this row's (< 1: turning the feature off costs CPU, so it pays)",
            after: &[],
        };
        measure(&spec, servers, Server::stop, cfg, plan)
    })
}
