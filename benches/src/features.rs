//! `bench features`: what each kernel feature the runtime uses buys, one at a time.
//!
//! The echo benchmark's two loads (64 x 128 B, 16 x 16 KiB; see `echo.rs`) against this
//! runtime's echo server built with every feature (the default), and then with one switched
//! off through its `Builder` switch: direct descriptors, the multishot receive into the
//! provided-buffer ring (off: the previous default, a 16 KiB buffer per connection and one
//! recv per read), recv bundles, incremental buffer consumption, the registered ring fd,
//! `NO_SQARRAY`, min-timeout waits.
//! The raw ring's row (plain recv/send per connection, unchanged) anchors the figures.
//! Rows alternate, run by run, under one load generator; the figure that matters is the
//! server's CPU per round trip, and the details table's `CPU vs all on` says what turning
//! the feature off costs (< 1: the feature pays).

use std::io;

use crate::echo::{each_config, measure, runtime_server_with, Spec};
use crate::server::{Cpus, Server};
use crate::Opts;

/// A runtime built with one feature switched off, by name.
type Variant = (&'static str, fn(runtime::Builder) -> runtime::Builder);

/// The variants, after the default.
const VARIANTS: [Variant; 7] = [
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
        let mut names = vec!["all on".to_string()];
        let mut servers = vec![Server::spawn("features-all", cpus.server, move |l, c| {
            runtime_server_with(l, c, msg, false, runtime::Builder::new())
        })?];
        for (name, off) in VARIANTS {
            names.push(name.to_string());
            servers.push(Server::spawn("features-off", cpus.server, move |l, c| {
                runtime_server_with(l, c, msg, false, off(runtime::Builder::new()))
            })?);
        }
        names.push("raw ring".to_string());
        servers.push(Server::spawn("features-raw", cpus.server, move |l, c| {
            crate::raw_echo::serve(l, c, msg)
        })?);
        let raw = servers.len() - 1;
        let spec = Spec {
            name: "features",
            rows: names
                .into_iter()
                .zip(&servers)
                .map(|(name, srv)| (name, srv as &dyn crate::echo::EchoServer))
                .collect(),
            baseline: (0, "all on"),
            cpu_vs: vec![(0, "all on"), (raw, "raw")],
            rate_vs: None,
            busy: "server busy",
            client_cpu: cpus.client,
            notes: vec![format!(
                "{}; client: tokio current-thread, one task per connection; RLIMIT_NOFILE \
                 {nofile}; each row: this runtime's echo server (read_chunk, write_chunk) with \
                 the named Builder switch off",
                cpus.describe()
            )],
            details: "server CPU per round trip (getrusage RUSAGE_THREAD); CPU vs all on: the \
                      default's us/rt over this row's (< 1: turning the feature off costs \
                      CPU, so it pays)",
            after: &[],
        };
        let measured = measure(&spec, cfg, plan);
        drop(spec);
        for srv in servers {
            srv.stop()?;
        }
        measured
    })
}
