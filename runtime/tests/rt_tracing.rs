//! The `tracing` feature: the backend chosen as an info event, a span per task (id, core,
//! spawn site) entered on each poll, op submissions and completions as trace events.
//! Run with `cargo test -p corering-runtime --features tracing --test rt_tracing`.
#![cfg(feature = "tracing")]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// What the subscriber saw: spans (name, fields), events (target, level, fields), enters.
#[derive(Default)]
struct Seen {
    spans: Mutex<Vec<(String, String)>>,
    events: Mutex<Vec<(String, String, String)>>,
    enters: AtomicUsize,
    next: AtomicU64,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Seen>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut f = Fields(String::new());
        attrs.record(&mut f);
        let name = attrs.metadata().name().to_string();
        self.0.spans.lock().unwrap().push((name, f.0));
        Id::from_u64(self.0.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut f = Fields(String::new());
        event.record(&mut f);
        let m = event.metadata();
        self.0
            .events
            .lock()
            .unwrap()
            .push((m.target().to_string(), m.level().to_string(), f.0));
    }
    fn enter(&self, _: &Id) {
        self.0.enters.fetch_add(1, Ordering::Relaxed);
    }
    fn exit(&self, _: &Id) {}
}

#[test]
fn tasks_ops_and_the_backend_show_up_as_spans_and_events() {
    let recorder = Recorder::default();
    let seen = recorder.0.clone();
    tracing::subscriber::with_default(recorder, || {
        let rt = runtime::Runtime::new().unwrap();
        rt.block_on(async {
            runtime::spawn_local(async {
                runtime::ext::raw::nop().await.unwrap();
                runtime::yield_now().await;
            })
            .await
            .unwrap();
        });
    });
    let events = seen.events.lock().unwrap();
    assert!(
        events.iter().any(|(t, l, f)| t == "runtime"
            && l == "INFO"
            && (f.contains("ring set up") || f.contains("epoll backend"))),
        "no backend event: {events:?}"
    );
    let op = |what: &str| {
        events
            .iter()
            .any(|(t, l, f)| t == "runtime::op" && l == "TRACE" && f.contains(what))
    };
    assert!(op("message=submit") && op("message=complete"), "{events:?}");
    let spans = seen.spans.lock().unwrap();
    let task = spans
        .iter()
        .find(|(name, f)| name == "task" && f.contains("rt_tracing.rs"))
        .unwrap_or_else(|| panic!("no task span: {spans:?}"));
    assert!(task.1.contains("core=0"), "{task:?}");
    assert!(task.1.contains("id="), "{task:?}");
    // Polled at least twice (the nop, the yield): entered as often.
    assert!(seen.enters.load(Ordering::Relaxed) >= 2);
}
