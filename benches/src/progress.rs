//! A progress bar on stderr while the harness measures: which benchmark, which contestant,
//! which run.
//!
//! Shown only when stderr is a terminal, `--quiet` is off, and the process has been running
//! for [`DELAY`] (a `bench nop --quick` finishes before it would appear). The bar exists only
//! inside [`Measuring`], the scope of one `harness::alternate` call, and is cleared when that
//! scope ends, so the tables printed after it land on a clean line even when stdout and stderr
//! are the same terminal.
//!
//! Nothing here runs in the background: the bar is redrawn only between runs, when the
//! harness reports the next one, never while a contestant is being timed, and there is no
//! ticker thread to steal CPU from the benchmark or to wake the `idle` benchmark's process.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long the process runs before a bar appears.
pub const DELAY: Duration = Duration::from_secs(2);

/// What the bar shows and whether it may be shown.
struct State {
    /// Stderr is a terminal and `--quiet` is off.
    enabled: bool,
    /// When [`init`] was called.
    start: Option<Instant>,
    /// `[2/10] poll`: the benchmark being run.
    prefix: String,
}

static STATE: Mutex<State> = Mutex::new(State {
    enabled: false,
    start: None,
    prefix: String::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Turns the bar on, unless `quiet` or stderr is not a terminal; starts the [`DELAY`] clock.
pub fn init(quiet: bool) {
    let mut s = state();
    s.enabled = !quiet && std::io::stderr().is_terminal();
    s.start = Some(Instant::now());
}

/// Names the benchmark about to run: the `index`th (from 0) of `total`.
pub fn bench(index: usize, total: usize, name: &str) {
    state().prefix = if total > 1 {
        format!("[{}/{total}] {name}", index + 1)
    } else {
        name.to_string()
    };
}

/// The scope of one measuring loop; the bar (if any) is cleared when it is dropped, also on
/// an early return with an error.
pub struct Measuring {
    /// `None` when the bar is disabled.
    bar: Option<ProgressBar>,
    /// When the bar may first be drawn.
    show_at: Instant,
}

impl Measuring {
    /// Starts a loop of `runs` runs in all (warm-ups included).
    pub fn new(runs: u64) -> Measuring {
        let s = state();
        let show_at = s.start.unwrap_or_else(Instant::now) + DELAY;
        let bar = s.enabled.then(|| {
            let style = ProgressStyle::with_template(
                "{prefix} [{bar:20}] {pos}/{len} runs {elapsed:>3} {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            let bar = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::hidden())
                .with_style(style);
            bar.set_prefix(s.prefix.clone());
            bar
        });
        Measuring { bar, show_at }
    }

    /// Reports that run number `done` (from 0) is about to start: `what` of `contestant`.
    pub fn run(&self, done: u64, contestant: &str, what: &str) {
        let Some(bar) = &self.bar else {
            return;
        };
        // The message first: a frame drawn between the two calls then shows the runs done
        // so far and the run starting, which is true. A hidden bar draws nothing until it
        // gets a target, and then draws the updated state at once.
        bar.set_message(format!("{contestant}: {what}"));
        bar.set_position(done);
        if bar.is_hidden() && Instant::now() >= self.show_at {
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
        }
    }
}

impl Drop for Measuring {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_bar_is_inert() {
        // Under `cargo test` stderr is usually not a terminal; force the quiet path anyway.
        init(true);
        bench(0, 3, "nop");
        let m = Measuring::new(4);
        assert!(m.bar.is_none());
        m.run(0, "raw ring", "warm-up");
        assert_eq!(state().prefix, "[1/3] nop");
    }
}
