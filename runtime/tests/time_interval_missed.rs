//! `Interval` after a stall of 3.5 periods: the ticks each `MissedTickBehavior` gives.
//!
//! The core is stalled with a blocking `std::thread::sleep` (as a busy task would), so the
//! tick due one period after the start is seen 2.5 periods late.

use std::time::{Duration, Instant};

use runtime::time::{interval_at, MissedTickBehavior};
use runtime::Runtime;

const P: Duration = Duration::from_millis(40);

/// Ticks at `start`, stalls until `start + 3.5 P`, then records the next `n` ticks: their
/// returned instants and when each completed, as offsets from `start`.
fn ticks_after_stall(behavior: MissedTickBehavior, n: usize) -> Vec<(Duration, Duration)> {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let start = Instant::now();
        let mut iv = interval_at(start, P);
        iv.set_missed_tick_behavior(behavior);
        assert_eq!(iv.missed_tick_behavior(), behavior);
        assert_eq!(iv.tick().await, start);
        std::thread::sleep(P * 7 / 2);
        let mut out = Vec::new();
        for _ in 0..n {
            let at = iv.tick().await;
            out.push((at - start, start.elapsed()));
        }
        out
    })
}

#[test]
fn default_is_burst() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let iv = runtime::time::interval(P);
        assert_eq!(iv.missed_tick_behavior(), MissedTickBehavior::Burst);
    });
}

#[test]
fn burst_fires_every_missed_tick_at_once() {
    let t = ticks_after_stall(MissedTickBehavior::Burst, 4);
    let at: Vec<_> = t.iter().map(|x| x.0).collect();
    assert_eq!(at, vec![P, 2 * P, 3 * P, 4 * P]);
    // The three missed ones complete at once, right after the stall; the fourth on time.
    for (_, done) in &t[..3] {
        assert!(*done < 4 * P, "missed tick completed at {done:?}");
    }
    assert!(t[3].1 >= 4 * P);
}

#[test]
fn delay_fires_one_then_a_period_from_the_late_tick() {
    let t = ticks_after_stall(MissedTickBehavior::Delay, 3);
    assert_eq!(t[0].0, P);
    assert!(t[0].1 < 4 * P, "late tick completed at {:?}", t[0].1);
    // Then every period from when the late tick was seen (>= 3.5 P).
    assert!(t[1].0 >= P * 9 / 2, "second tick at {:?}", t[1].0);
    assert!(t[1].0 < P * 11 / 2, "second tick at {:?}", t[1].0);
    assert_eq!(t[2].0, t[1].0 + P);
    assert!(t[1].1 >= t[1].0 && t[2].1 >= t[2].0, "never early");
}

#[test]
fn skip_fires_one_then_keeps_the_schedule() {
    let t = ticks_after_stall(MissedTickBehavior::Skip, 3);
    let at: Vec<_> = t.iter().map(|x| x.0).collect();
    assert_eq!(at, vec![P, 4 * P, 5 * P]);
    assert!(t[0].1 < 4 * P, "late tick completed at {:?}", t[0].1);
    assert!(t[1].1 >= 4 * P && t[2].1 >= 5 * P, "never early");
}
