//! `bench nop`: 32 IORING_OP_NOP kept in flight, raw ring vs this runtime.

use std::io;

use runtime::ext::raw::nop;

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{in_flight, timed, Measure, Plan, Tally};
use crate::harness::raw::RawRing;
use crate::harness::report::{paired_ratio, Metric};

/// NOPs in flight at once, as in the thread.
const DEPTH: usize = 32;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let plan = Plan::new(opts, 2_000_000, DEPTH as u64);
    let (mut raw, rt) = (
        RawRing::new(256)?,
        runtime::Builder::new().entries(256).build()?,
    );
    let (raw_flags, rt_flags) = (raw.flags(), rt.flags().to_string());
    let (tally_tasks, tally_single) = (Tally::default(), Tally::default());
    let tally_read = Tally::default();
    let nops = vec![io_uring::opcode::Nop::new().build().user_data(0x6e6f70); DEPTH];
    let title = format!("nop: {DEPTH} IORING_OP_NOP in flight, {{n}} nops per run");
    let table = Contest::new(title, Metric::Rate("nops/s"), "vs raw")
        // SAFETY: a NOP references no memory.
        .row("raw ring", |n| unsafe { raw.batches(n, &nops) })
        .row("runtime 32 tasks", |n| tasks(&rt, n, &tally_tasks))
        .row("runtime 1 task x32", |n| single_task(&rt, n, &tally_single))
        .row("runtime 32 tasks, metrics read", |n| {
            let _reader = MetricsReader::start(rt.metrics());
            tasks(&rt, n, &tally_read)
        })
        .note(format!("raw ring flags: {raw_flags}"))
        .note(format!("runtime flags:  {rt_flags}"))
        .run(plan)?;
    let paired = (table.series[1..].iter()).filter_map(|s| {
        Some(format!(
            "{} {:.2}x",
            s.name,
            paired_ratio(s, &table.series[0])?
        ))
    });
    let paired = paired.collect::<Vec<_>>().join(", ");
    table.print([
        tally_tasks.note("runtime 32 tasks"),
        tally_single.note("runtime 1 task x32"),
        format!("vs raw, median of the per-round ratios (drift between rounds cancels): {paired}"),
        format!(
            "metrics read: another thread reads every core's metrics (`total()` and `prometheus()`) every {} ms \
             during the run; target: within 2% of `runtime 32 tasks`",
            READ_EVERY.as_millis()
        ),
        "target: runtime >= 0.75x raw, <= 1/16 enters per nop".into(),
    ]);
    Ok(())
}

/// How often the metrics reader reads (the cost target asks for once a second).
const READ_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// A thread reading a runtime's metrics every `READ_EVERY` until dropped.
struct MetricsReader {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsReader {
    fn start(metrics: runtime::RuntimeMetrics) -> MetricsReader {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::black_box((metrics.total(), metrics.prometheus()));
                std::thread::sleep(READ_EVERY);
            }
        });
        MetricsReader {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for MetricsReader {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `count` NOPs over `DEPTH` tasks, each awaiting one NOP at a time.
fn tasks(rt: &runtime::Runtime, count: u64, tally: &Tally) -> io::Result<Measure> {
    let per_task = count / DEPTH as u64;
    rt.block_on(timed(tally, async move {
        let task = || async move {
            for _ in 0..per_task {
                nop().await?;
            }
            Ok::<(), io::Error>(())
        };
        let handles: Vec<_> = (0..DEPTH).map(|_| runtime::spawn_local(task())).collect();
        for handle in handles {
            handle
                .await
                .map_err(|_| io::Error::other("nop task failed to join"))??;
        }
        Ok(per_task * DEPTH as u64)
    }))
}

/// `count` NOPs from one task that keeps `DEPTH` of them in flight.
fn single_task(rt: &runtime::Runtime, count: u64, tally: &Tally) -> io::Result<Measure> {
    let first = count.min(DEPTH as u64);
    let mut left = count - first;
    rt.block_on(timed(tally, async move {
        in_flight((0..first).map(|_| nop()), |done| {
            done?;
            Ok((left > 0).then(|| {
                left -= 1;
                nop()
            }))
        })
        .await?;
        Ok(count)
    }))
}
