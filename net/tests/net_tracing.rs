//! The `tracing` feature: what the crate notices but does not return is a `tracing` event
//! (target `corering_net`), never a line on stderr. Here the accept loop's back-off: with
//! every fd below the process' limit taken, `incoming()` yields `EMFILE` and backs off, and
//! says so in a warn event.
//!
//! Lowering `RLIMIT_NOFILE` affects the whole process, so this binary has one test.
//! Run with `cargo test -p corering-net --features tracing --test net_tracing`.
#![cfg(feature = "tracing")]

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use corering_net::TcpListener;
use futures::StreamExt;
use runtime::Builder;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

mod common;
use common::fds::Exhausted;

/// Every event: (target, level, fields).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, String, String)>>>);

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
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut f = Fields(String::new());
        event.record(&mut f);
        let m = event.metadata();
        self.0
            .lock()
            .unwrap()
            .push((m.target().to_string(), m.level().to_string(), f.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn the_accept_back_off_is_a_warn_event() {
    let recorder = Recorder::default();
    let seen = recorder.0.clone();
    tracing::subscriber::with_default(recorder, || {
        // Regular fds (a direct descriptor takes no fd, so the table would not run out).
        let rt = Builder::new().direct_descriptors(false).build().unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let mut incoming = listener.incoming();
            let exhausted = Exhausted::new();
            let first = incoming.next().await.expect("the stream goes on");
            let err = first.expect_err("no fd is left for the connection");
            assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
            // With fds back, the back-off ends and the waiting connection is accepted.
            drop(exhausted);
            incoming
                .next()
                .await
                .expect("the stream goes on")
                .expect("accepted once fds are back");
        });
    });
    let events = seen.lock().unwrap();
    assert!(
        events.iter().any(|(t, l, f)| t == "corering_net"
            && l == "WARN"
            && f.contains("accept failed")
            && f.contains("backing off")),
        "no back-off event: {events:?}"
    );
}
