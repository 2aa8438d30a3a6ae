//! `bench accept`: N clients connect, write 128 B, read it back and close, 64 in progress at once.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use sysutil::{raise_nofile, PinGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{tokio_current, Contestant, Measure, Plan, Summary};
use crate::harness::report::{header, render_grid, Metric};
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
    let contenders = (servers.iter().zip(&reports)).map(|((name, srv), rep)| {
        let client = &client;
        Contestant::new(*name, move |n| {
            let (m, r) = one_run(client, srv.addr, &srv.ctl, n)?;
            rep.borrow_mut().push(r);
            Ok(m)
        })
    });
    let title = format!(
        "accept: {{n}} clients per run (connect, write {MSG} B, read it back, close), {CONCURRENCY} in progress at \
         once"
    );
    let mut table = Contest::new(title, Metric::Rate("conns/s"), "vs tokio")
        .against(2)
        .rows(contenders)
        .note(format!(
            "{}; client: tokio current-thread, SO_LINGER 0; RLIMIT_NOFILE {nofile}",
            cpus.describe()
        ))
        .note("enters/op: the server's io_uring_enter calls per connection (runtime::core_metrics)")
        .run(plan)?;
    drop(pin);
    for (_, srv) in servers {
        srv.stop()?;
    }

    let series = &mut table.series;
    let gain = (series[1].rates().median / series[0].rates().median - 1.0) * 100.0;
    let mut cpu_rows = vec![header(&[
        "",
        "server us/conn median",
        "min",
        "max",
        "server busy",
    ])];
    for (rep, s) in reports.iter().zip(series.iter_mut()) {
        // Drop each contestant's warm-up report; the rest line up with the measured runs.
        let rep = &rep.borrow()[1..];
        let per = |r: &Report| r.cpu.as_secs_f64() * 1e6 / r.count.max(1) as f64;
        let busy = |r: &Report| r.cpu.as_secs_f64() / r.elapsed.as_secs_f64().max(1e-9);
        let sum = Summary::of(&rep.iter().map(per).collect::<Vec<_>>());
        let busy = Summary::of(&rep.iter().map(busy).collect::<Vec<_>>()).median;
        let mut row = vec![s.name.clone()];
        row.extend([sum.median, sum.min, sum.max].map(|v| format!("{v:.2}")));
        row.push(format!("{:.0}%", busy * 100.0));
        cpu_rows.push(row);
        // The server CPU per connection the second table prints, also in `--json` rows.
        s.extra
            .push(("server_cpu_us_per_op".to_string(), sum.median));
    }
    table.print([
        format!("multishot vs singleshot: {gain:+.2}% connections/s"),
        "target: multishot >= singleshot (+1.65% in the RFC), >= 1.2x tokio".to_string(),
    ]);
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
