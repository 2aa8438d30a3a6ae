//! A progress bar on stderr while the harness measures: which benchmark, contestant and run.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long the process runs before a bar appears.
pub const DELAY: Duration = Duration::from_secs(2);

/// Whether a bar may be shown (stderr is a terminal and `--quiet` is off), since when the process runs.
static STATE: Mutex<(bool, Option<Instant>, String)> = Mutex::new((false, None, String::new()));

fn state() -> std::sync::MutexGuard<'static, (bool, Option<Instant>, String)> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Turns the bar on, unless `quiet` or stderr is not a terminal; starts the [`DELAY`] clock.
pub fn init(quiet: bool) {
    let mut s = state();
    (s.0, s.1) = (
        !quiet && std::io::stderr().is_terminal(),
        Some(Instant::now()),
    );
}

/// Names the benchmark about to run: the `index`th (from 0) of `total`.
pub fn bench(index: usize, total: usize, name: &str) {
    state().2 = if total > 1 {
        format!("[{}/{total}] {name}", index + 1)
    } else {
        name.to_string()
    };
}

/// The scope of one measuring loop; the bar (if any) is cleared when it is dropped.
pub struct Measuring {
    /// `None` when the bar is disabled.
    bar: Option<ProgressBar>,
    /// When the bar may first be drawn.
    show_at: Instant,
}

impl Measuring {
    /// Starts a loop of `runs` runs in all (warm-ups included).
    pub fn new(runs: u64) -> Measuring {
        let (enabled, start, prefix) = state().clone();
        let bar = enabled.then(|| {
            let template = "{prefix} [{bar:20}] {pos}/{len} runs {elapsed:>3} {wide_msg}";
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            let bar = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::hidden());
            bar.set_prefix(prefix);
            bar.with_style(style.progress_chars("=> "))
        });
        Measuring {
            bar,
            show_at: start.unwrap_or_else(Instant::now) + DELAY,
        }
    }

    /// Reports that run number `done` (from 0) is about to start: `what` of `contestant`.
    pub fn run(&self, done: u64, contestant: &str, what: &str) {
        let Some(bar) = &self.bar else {
            return;
        };
        // The message first: a frame drawn between the two calls then shows the runs done so far and the run
        // starting, which is true. A hidden bar draws nothing until it gets a target, and then draws the updated
        // state at once.
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
