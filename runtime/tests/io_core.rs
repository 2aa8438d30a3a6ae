//! The shared I/O core (`runtime::ext::io`): a write-behind writes again what a short write left,
//! keeps its first error's kind, and delivers bytes it reported written after a drop; a
//! read-ahead lends, consumes and discards its buffer.

use std::cell::{Cell, RefCell};
use std::future::{ready, Future, Ready};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use runtime::buf::{IoBuf, Slice};
use runtime::ext::io::{ReadAhead, ReadOp, WriteBehind, WriteOp, CURRENT_POS};
use runtime::ext::raw::{self, Write};
use runtime::ext::{Op, SharedFd};

/// A sink that takes at most `max` bytes per write, and fails every write from the
/// `fail_at`-th on.
#[derive(Clone)]
struct Short {
    out: Rc<RefCell<Vec<u8>>>,
    max: usize,
    calls: Rc<Cell<usize>>,
    fail_at: usize,
}

impl Short {
    fn new(max: usize, fail_at: usize) -> Short {
        Short {
            out: Rc::default(),
            max,
            calls: Rc::default(),
            fail_at,
        }
    }
}

impl WriteOp for Short {
    type Op = Ready<(io::Result<usize>, Vec<u8>)>;

    fn write(&self, buf: Vec<u8>, from: usize, offset: u64) -> Self::Op {
        assert_eq!(offset, CURRENT_POS);
        self.calls.set(self.calls.get() + 1);
        if self.calls.get() >= self.fail_at {
            return ready((Err(io::Error::from_raw_os_error(libc::EPIPE)), buf));
        }
        let n = (buf.len() - from).min(self.max);
        self.out
            .borrow_mut()
            .extend_from_slice(&buf[from..from + n]);
        ready((Ok(n), buf))
    }
}

fn cx() -> Context<'static> {
    Context::from_waker(std::task::Waker::noop())
}

#[test]
fn short_writes_are_written_again_from_where_they_stopped() {
    let sink = Short::new(7, usize::MAX);
    let mut wb = WriteBehind::new(sink.clone(), 100);
    let data: Vec<u8> = (0..=255).collect();
    let mut at = 0;
    while at < data.len() {
        match wb.poll_write(&mut cx(), &data[at..]) {
            Poll::Ready(Ok(n)) => at += n,
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(wb.poll_drain(&mut cx()), Poll::Ready(Ok(()))));
    assert!(wb.is_idle());
    assert_eq!(*sink.out.borrow(), data);
    // 256 bytes in writes of at most 100, each taken 7 at a time.
    assert_eq!(sink.calls.get(), 15 + 15 + 8);
}

#[test]
fn the_first_error_sticks_with_its_kind() {
    let sink = Short::new(3, 2);
    let mut wb = WriteBehind::new(sink.clone(), 10);
    // The first write takes 3 bytes, the resubmission fails: this call reports the error.
    match wb.poll_write(&mut cx(), b"0123456789") {
        Poll::Ready(Err(e)) => assert_eq!(e.raw_os_error(), Some(libc::EPIPE)),
        other => panic!("{other:?}"),
    }
    assert!(wb.has_failed());
    let calls = sink.calls.get();
    for _ in 0..3 {
        match wb.poll_write(&mut cx(), b"more") {
            Poll::Ready(Err(e)) => assert_eq!(e.kind(), io::ErrorKind::BrokenPipe),
            other => panic!("{other:?}"),
        }
        match wb.poll_drain(&mut cx()) {
            Poll::Ready(Err(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
                assert!(e.to_string().contains("earlier write failed"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(sink.calls.get(), calls, "no write after the error");
}

/// A source that hands out `chunks` one per read, then end of stream; a read marked
/// `None` never completes.
#[derive(Clone)]
struct Chunks(Rc<RefCell<Vec<Option<Vec<u8>>>>>);

/// A read that is ready at once or never.
enum MaybeRead {
    Now(Option<(io::Result<usize>, Vec<u8>)>),
    Never,
}

impl Future for MaybeRead {
    type Output = (io::Result<usize>, Vec<u8>);

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            MaybeRead::Now(out) => Poll::Ready(out.take().expect("polled once")),
            MaybeRead::Never => Poll::Pending,
        }
    }
}

impl ReadOp for Chunks {
    type Op = MaybeRead;

    fn read(&self, mut buf: Vec<u8>, len: usize, _offset: u64) -> MaybeRead {
        assert!(buf.is_empty() && buf.capacity() >= len);
        let mut chunks = self.0.borrow_mut();
        if chunks.is_empty() {
            return MaybeRead::Now(Some((Ok(0), buf)));
        }
        match chunks.remove(0) {
            Some(chunk) => {
                let n = chunk.len().min(len);
                buf.extend_from_slice(&chunk[..n]);
                MaybeRead::Now(Some((Ok(n), buf)))
            }
            None => MaybeRead::Never,
        }
    }
}

#[test]
fn read_ahead_lends_consumes_and_discards() {
    let src = Chunks(Rc::new(RefCell::new(vec![
        Some(b"hello world".to_vec()),
        None,
        Some(b"again".to_vec()),
    ])));
    let mut ra = ReadAhead::new(src, 64);
    match ra.poll_fill_buf(&mut cx()) {
        Poll::Ready(Ok(b)) => assert_eq!(b, b"hello world"),
        other => panic!("{other:?}"),
    }
    ra.consume(6);
    let mut out = [0u8; 3];
    assert!(matches!(
        ra.poll_read(&mut cx(), &mut out),
        Poll::Ready(Ok(3))
    ));
    assert_eq!(&out, b"wor");
    assert_eq!(ra.buffered(), b"ld");
    ra.consume(100);
    assert!(ra.buffered().is_empty());
    // The next read never completes: the read-ahead stays pending, then is discarded.
    assert!(ra.poll_fill_buf(&mut cx()).is_pending());
    assert!(!ra.is_idle());
    ra.discard();
    assert!(ra.is_idle());
    match ra.poll_fill_buf(&mut cx()) {
        Poll::Ready(Ok(b)) => assert_eq!(b, b"again"),
        other => panic!("{other:?}"),
    }
    ra.discard();
    assert!(ra.buffered().is_empty());
    match ra.poll_fill_buf(&mut cx()) {
        Poll::Ready(Ok(b)) => assert!(b.is_empty(), "end of stream"),
        other => panic!("{other:?}"),
    }
}

/// Writes to a real fd through the ring.
#[derive(Clone)]
struct Fd(SharedFd);

/// `ext::raw::write` of `buf[from..]`, giving the whole buffer back.
struct FdWrite(Op<Write<Slice<Vec<u8>>>>);

impl Future for FdWrite {
    type Output = (io::Result<usize>, Vec<u8>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (res, slice) = std::task::ready!(Pin::new(&mut self.get_mut().0).poll(cx));
        Poll::Ready((res, slice.into_inner()))
    }
}

impl WriteOp for Fd {
    type Op = FdWrite;

    fn write(&self, buf: Vec<u8>, from: usize, offset: u64) -> FdWrite {
        let end = buf.len();
        FdWrite(raw::write(&self.0, buf.slice(from..end), offset))
    }
}

#[test]
fn a_dropped_write_behind_delivers_what_it_reported_written() {
    const LEN: usize = 4 << 20;
    let (ours, theirs) = UnixStream::pair().unwrap();
    let reader = std::thread::spawn(move || {
        let mut theirs = theirs;
        let mut got = Vec::new();
        theirs.read_to_end(&mut got).unwrap();
        got
    });
    let data: Vec<u8> = (0..LEN).map(|i| (i * 31 % 251) as u8).collect();
    let rt = runtime::Runtime::new().unwrap();
    let fd = Fd(SharedFd::new(OwnedFd::from(ours)));
    rt.block_on(async {
        let mut wb = WriteBehind::new(fd, 100_003);
        let mut at = 0;
        while at < data.len() {
            at += std::future::poll_fn(|cx| wb.poll_write(cx, &data[at..]))
                .await
                .unwrap();
        }
        assert!(!wb.is_idle(), "a write is in flight at the drop");
        drop(wb);
        // The finishing task runs on this core; give it time to deliver.
        runtime::time::sleep(Duration::from_millis(1)).await;
        for _ in 0..2000 {
            if reader.is_finished() {
                break;
            }
            runtime::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let got = reader.join().unwrap();
    assert_eq!(got.len(), data.len(), "every byte reported written arrived");
    assert!(got == data, "in order");
}
