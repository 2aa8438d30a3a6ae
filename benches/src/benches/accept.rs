//! `bench accept`: N clients connect, write 128 B, read it back and close, 64 in progress at once.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use sysutil::{raise_nofile, PinGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::cli::Opts;
use crate::harness::measure::{alternate, tokio_current, Contestant, Measure, Plan, Summary};
use crate::harness::report::{header, render_grid, Metric, Table};
use crate::harness::server::{Cpus, Ctl, Report};
use crate::servers::{self, ACCEPT_MSG as MSG};

/// Connections the load generator keeps in progress at once.
const CONCURRENCY: usize = 64;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let nofile = raise_nofile()?;
    let cpus = Cpus::pick();
    let plan = Plan::new(opts, 10_000, 1);
    let servers = servers::accept_servers(cpus.server)?;
    let pin = PinGuard::new(cpus.client)?;
    let client = tokio_current()?;

    let reports: Vec<RefCell<Vec<Report>>> = servers.iter().map(|_| RefCell::default()).collect();
    let mut contestants: Vec<Contestant<'_>> = (servers.iter().zip(&reports))
        .map(|((name, srv), rep)| {
            let client = &client;
            Contestant::new(*name, move |n| {
                let (m, r) = one_run(client, srv.addr, &srv.ctl, n)?;
                rep.borrow_mut().push(r);
                Ok(m)
            })
        })
        .collect();
    let (mut series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    drop(pin);
    let names: Vec<&str> = servers.iter().map(|(name, _)| *name).collect();
    for (_, srv) in servers {
        srv.stop()?;
    }

    let gain = (series[1].rates().median / series[0].rates().median - 1.0) * 100.0;
    let mut cpu_rows = vec![header(&[
        "",
        "server us/conn median",
        "min",
        "max",
        "server busy",
    ])];
    for ((name, rep), s) in names.iter().zip(&reports).zip(&mut series) {
        // Drop each contestant's warm-up report; the rest line up with the measured runs.
        let rep = &rep.borrow()[1..];
        let per: Vec<f64> = rep
            .iter()
            .map(|r| r.cpu.as_secs_f64() * 1e6 / r.count.max(1) as f64)
            .collect();
        let busy: Vec<f64> = rep
            .iter()
            .map(|r| r.cpu.as_secs_f64() / r.elapsed.as_secs_f64().max(1e-9))
            .collect();
        let sum = Summary::of(&per);
        cpu_rows.push(vec![
            name.to_string(),
            format!("{:.2}", sum.median),
            format!("{:.2}", sum.min),
            format!("{:.2}", sum.max),
            format!("{:.0}%", Summary::of(&busy).median * 100.0),
        ]);
        // The server CPU per connection the second table prints, also in `--json` rows.
        s.extra
            .push(("server_cpu_us_per_op".to_string(), sum.median));
    }
    let title = format!(
        "accept: {count} clients per run (connect, write {MSG} B, read it back, close), {CONCURRENCY} in progress \
             at once, median of {} runs",
        plan.runs
    );
    let notes = vec![
        format!(
            "{}; client: tokio current-thread, SO_LINGER 0; RLIMIT_NOFILE {nofile}",
            cpus.describe()
        ),
        "enters/op: the server's io_uring_enter calls per connection (runtime::stats)".to_string(),
        format!("multishot vs singleshot: {gain:+.2}% connections/s"),
        "target: multishot >= singleshot (+1.65% in the RFC), >= 1.2x tokio".to_string(),
    ];
    let table = Table::new(title, Metric::Rate("conns/s"), "vs tokio", 2, series, notes);
    print!("{}", table.render());
    println!("  server CPU per connection (getrusage RUSAGE_THREAD in the server thread):");
    print!("{}", render_grid(&cpu_rows, 4));
    Ok(())
}

/// One measured run: `n` clients against the server behind `ctl`, and the server's report.
fn one_run(
    client: &tokio::runtime::Runtime,
    addr: SocketAddr,
    ctl: &Ctl,
    n: u64,
) -> io::Result<(Measure, Report)> {
    ctl.warm();
    ctl.measure(n);
    let start = Instant::now();
    load(client, addr, n)?;
    let elapsed = start.elapsed();
    let report = ctl.report()?;
    if report.count != n {
        let msg = format!(
            "the server finished {} connections, the client {n}",
            report.count
        );
        return Err(io::Error::other(msg));
    }
    let enters = report.stats.map(|s| s.enters);
    Ok((Measure::new(n, elapsed, enters), report))
}

/// The load generator: `n` connect-write-read-close cycles, `CONCURRENCY` at a time.
fn load(client: &tokio::runtime::Runtime, addr: SocketAddr, n: u64) -> io::Result<()> {
    let local = tokio::task::LocalSet::new();
    local.block_on(client, async move {
        let next = Rc::new(Cell::new(0u64));
        let workers: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                let next = next.clone();
                tokio::task::spawn_local(async move {
                    let (msg, mut back) = ([0x5au8; MSG], [0u8; MSG]);
                    while next.get() < n {
                        next.set(next.get() + 1);
                        let mut s = tokio::net::TcpStream::connect(addr).await?;
                        s.set_zero_linger()?;
                        s.write_all(&msg).await?;
                        s.read_exact(&mut back).await?;
                    }
                    Ok::<(), io::Error>(())
                })
            })
            .collect();
        for w in workers {
            w.await.map_err(io::Error::other)??;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every server, the peers' included (one that cannot start says why on stderr).
    #[test]
    fn every_server_reports_every_connection() {
        let client = tokio_current().unwrap();
        for (name, srv) in servers::accept_servers(Cpus::pick().server).unwrap() {
            let (m, r) = one_run(&client, srv.addr, &srv.ctl, 100).expect(name);
            assert_eq!((m.ops, r.count), (100, 100), "{name}");
            srv.stop().expect("stop");
        }
    }
}
