//! `Runtime::metrics`: the counters move the way the work did, the gauges come back to rest,
//! readers on other threads see consistent values while runtimes start and stop and after
//! they are dropped, and the Prometheus text parses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runtime::Builder;

#[test]
fn counters_follow_the_work_and_gauges_come_back_to_rest() {
    let started = Instant::now();
    let rt = Builder::new().cores(2).build().unwrap();
    let metrics = rt.metrics();
    let before = metrics.total();
    rt.block_on(async {
        let tasks: Vec<_> = (0..100)
            .map(|_| runtime::spawn(async { runtime::ext::raw::nop().await.unwrap() }))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        runtime::spawn_on(1, async {
            for _ in 0..10 {
                runtime::ext::raw::nop().await.unwrap();
            }
        })
        .await
        .unwrap();
        runtime::spawn_blocking(|| 7).await.unwrap();
        // Until both cores have slept in the kernel and core 1 published its counts (it
        // publishes as it falls idle: on a loaded machine its thread may run late), at most
        // 5 s.
        let m = runtime::Handle::current().metrics();
        let deadline = Instant::now() + Duration::from_secs(5);
        runtime::sleep(Duration::from_millis(20)).await;
        while Instant::now() < deadline
            && (m.worker_park_count(1) == 0 || m.total().cqes_reaped - before.cqes_reaped < 110)
        {
            runtime::sleep(Duration::from_millis(5)).await;
        }
    });
    let after = metrics.total();
    assert_eq!(metrics.num_workers(), 2);
    assert!(
        after.spawned_tasks - before.spawned_tasks >= 102,
        "{after:?}"
    );
    assert!(after.polls - before.polls >= 102);
    assert!(after.cqes_reaped - before.cqes_reaped >= 110);
    assert!(after.sqes_submitted - before.sqes_submitted >= 110);
    assert!(after.enters > before.enters);
    assert!(metrics.worker_park_count(0) > 0 && metrics.worker_park_count(1) > 0);
    assert!(
        metrics.worker_poll_count(1) >= 1,
        "the spawn_on task ran on core 1"
    );
    assert!(metrics.blocking_jobs_count() >= 1);
    assert!(metrics.num_blocking_threads() >= 1);
    // At rest: nothing in flight, queued or alive (core 1's loop future is no task).
    assert_eq!(after.ops_in_flight, 0, "{after:?}");
    assert_eq!(metrics.num_alive_tasks(), 0);
    assert_eq!(metrics.global_queue_depth(), 0);
    assert_eq!(metrics.worker_local_queue_depth(0), 0);
    assert_eq!(after.cq_overflows, 0);
    for core in 0..2 {
        let busy = metrics.worker_total_busy_duration(core);
        assert!(busy <= started.elapsed(), "core {core} busy {busy:?}");
    }
    // A core the runtime does not have.
    assert_eq!(metrics.core(2), None);
    assert_eq!(metrics.worker_park_count(7), 0);
}

#[test]
fn readers_on_other_threads_while_runtimes_start_and_stop_and_after() {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<runtime::RuntimeMetrics>();
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            let mut reads = 0u64;
            while !stop.load(Ordering::Acquire) {
                while let Ok(m) = rx.try_recv() {
                    held.push(m);
                }
                for m in &held {
                    let total = m.total();
                    let sum: u64 = (0..m.num_workers())
                        .map(|i| m.core(i).map_or(0, |c| c.polls))
                        .sum();
                    // Cores publish between the two reads: the later sum is not smaller.
                    assert!(sum >= total.polls || m.num_workers() == 0);
                    let _ = m.prometheus();
                    reads += 1;
                }
            }
            (held, reads)
        })
    };
    for round in 0..20 {
        let rt = Builder::new().cores(1 + round % 2).build().unwrap();
        tx.send(rt.metrics()).unwrap();
        rt.block_on(async {
            for _ in 0..50 {
                runtime::spawn(async { runtime::yield_now().await })
                    .await
                    .unwrap();
            }
        });
        drop(rt);
    }
    stop.store(true, Ordering::Release);
    let (held, reads) = reader.join().unwrap();
    assert!(reads > 0);
    // Dropped runtimes keep their last values.
    for m in held {
        let core0 = m.core(0).expect("core 0's last values");
        assert!(core0.polls >= 50, "{core0:?}");
        assert_eq!(core0.ops_in_flight, 0);
        assert_eq!(m.core(m.num_workers()), None);
    }
}

#[test]
fn the_prometheus_text_parses_and_labels_every_core() {
    let rt = Builder::new().cores(2).build().unwrap();
    rt.block_on(async { runtime::ext::raw::nop().await.unwrap() });
    let text = rt.metrics().prometheus();
    let mut series = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(name.starts_with("runtime_"), "{line}");
            assert!(kind == "counter" || kind == "gauge", "{line}");
            assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
            continue;
        }
        let (name, value) = line.rsplit_once(' ').expect("name value");
        value
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        assert!(name.starts_with("runtime_"), "{line}");
        if let Some((_, label)) = name.split_once('{') {
            assert!(label == "core=\"0\"}" || label == "core=\"1\"}", "{line}");
        }
        series += 1;
    }
    assert!(series > 40, "{text}");
    assert!(text.contains("runtime_cqes_reaped_total{core=\"0\"}"));
    assert!(text.contains("runtime_ops_in_flight{core=\"1\"} 0"));
}

#[test]
fn histograms_count_every_poll_by_its_time_when_on_and_nothing_when_off() {
    let spin = |d: Duration| {
        let start = Instant::now();
        while start.elapsed() < d {
            std::hint::spin_loop();
        }
    };
    let rt = Builder::new().metrics_histograms(true).build().unwrap();
    let metrics = rt.metrics();
    assert!(metrics.poll_time_histogram_enabled());
    assert_eq!(metrics.poll_time_histogram_num_buckets(), 10);
    assert_eq!(
        metrics.poll_time_histogram_bucket_range(2),
        Duration::from_micros(200)..Duration::from_micros(300)
    );
    assert_eq!(
        metrics.poll_time_histogram_bucket_range(9).end,
        Duration::MAX
    );
    rt.block_on(async move {
        runtime::spawn_local(async move {
            for _ in 0..5 {
                spin(Duration::from_micros(1_500));
                runtime::yield_now().await;
            }
        })
        .await
        .unwrap();
        for _ in 0..20 {
            runtime::spawn_local(async {}).await.unwrap();
        }
    });
    let counts: Vec<u64> = (0..10)
        .map(|b| metrics.poll_time_histogram_bucket_count(0, b))
        .collect();
    assert!(
        counts[9] >= 5,
        "five polls of 1.5 ms land in the open bucket: {counts:?}"
    );
    assert!(counts[0] >= 20, "{counts:?}");
    assert_eq!(counts.iter().sum::<u64>(), metrics.worker_poll_count(0));
    let delays: u64 = (0..10)
        .map(|b| metrics.schedule_delay_histogram_bucket_count(0, b))
        .sum();
    assert_eq!(
        delays,
        metrics.worker_poll_count(0),
        "every poll was queued first"
    );
    let text = metrics.prometheus();
    assert!(
        text.contains("# TYPE runtime_poll_time_seconds histogram"),
        "{text}"
    );
    assert!(text.contains("runtime_poll_time_seconds_bucket{core=\"0\",le=\"+Inf\"}"));
    drop(rt);

    let off = Builder::new().build().unwrap();
    off.block_on(async { runtime::spawn_local(async {}).await.unwrap() });
    let m = off.metrics();
    assert!(!m.poll_time_histogram_enabled());
    assert_eq!(
        (0..10)
            .map(|b| m.poll_time_histogram_bucket_count(0, b))
            .sum::<u64>(),
        0
    );
    assert!(!m.prometheus().contains("histogram"));
}

#[test]
fn switching_the_histograms_on_a_running_runtime_is_an_error_that_says_how() {
    let rt = Builder::new().cores(2).build().unwrap();
    let err = rt.handle().set_metrics_histograms(true).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        err.to_string()
            .contains("Builder::metrics_histograms(true)"),
        "{err}"
    );
    rt.handle().set_metrics_histograms(false).unwrap();
    drop(rt);
    let on = Builder::new().metrics_histograms(true).build().unwrap();
    assert!(on.handle().set_metrics_histograms(true).is_ok());
    assert!(on.handle().set_metrics_histograms(false).is_err());
}
