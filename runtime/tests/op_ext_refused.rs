//! A custom op built through `runtime::ext` whose opcode the readiness (epoll) backend does
//! not carry out: on that backend it fails with an `Unsupported` error naming the opcode
//! (its CQE said `EINVAL`, as a kernel without the op answers), a chain behind it is
//! cancelled, and the same op on io_uring gets the kernel's own answer.

use std::io;
use std::os::fd::AsRawFd;

use runtime::ext::io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Link, Op};
use runtime::{Backend, Builder, Runtime};

mod common;

/// The op's data: nothing the kernel touches (a `MSG_RING` with data points at no memory).
struct MsgRing;

impl Completable for MsgRing {
    type Output = io::Result<u32>;

    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// `IORING_OP_MSG_RING` (opcode 40) to `fd`, which is no ring: io_uring answers `EBADFD`;
/// the readiness backend does not carry the opcode out at all.
fn msg_ring(fd: i32) -> Op<MsgRing> {
    let sqe = opcode::MsgRingData::new(types::Fd(fd), 0, 0, None).build();
    // SAFETY: a MSG_RING with data points at no memory.
    unsafe { Op::new(MsgRing, sqe) }
}

/// A runtime on the epoll backend (epoll is always there: a failure to start it fails).
fn epoll_runtime() -> Runtime {
    Builder::new()
        .backend(Backend::Epoll)
        .build()
        .expect("the epoll backend starts wherever the tests run")
}

/// Checks `e` is the readiness backend's refusal of `MSG_RING`.
fn assert_refused(e: &io::Error) {
    assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
    assert_eq!(e.raw_os_error(), None, "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("opcode 40 (MSG_RING) is not carried out by the readiness (epoll) backend"),
        "{msg}"
    );
}

#[test]
fn an_opcode_epoll_does_not_carry_out_names_itself() {
    let rt = epoll_runtime();
    let (r, _w) = common::pipe();
    let e = rt.block_on(msg_ring(r.as_raw_fd())).unwrap_err();
    assert_refused(&e);
    // The runtime goes on: an op it does carry out still runs.
    rt.block_on(runtime::ext::raw::nop()).unwrap();
}

#[test]
fn a_chain_behind_a_refused_op_is_cancelled() {
    let rt = epoll_runtime();
    let (r, _w) = common::pipe();
    let results = rt
        .block_on(Link::new([
            msg_ring(r.as_raw_fd()),
            msg_ring(r.as_raw_fd()),
        ]))
        .unwrap();
    assert_refused(results[0].as_ref().unwrap_err());
    let second = results[1].as_ref().unwrap_err();
    assert_eq!(second.raw_os_error(), Some(libc::ECANCELED), "{second}");
}

/// On whichever backend the tests run (`RUNTIME_BACKEND`): the refusal on epoll, the
/// kernel's own errno on io_uring.
#[test]
fn the_error_is_the_backends_own() {
    let rt = Runtime::new().unwrap();
    let (r, _w) = common::pipe();
    let e = rt.block_on(msg_ring(r.as_raw_fd())).unwrap_err();
    if rt.features().backend == Backend::Epoll {
        assert_refused(&e);
    } else {
        // Not a ring (`EBADFD`), or a kernel profile's release refusing the SQE (`EINVAL`).
        assert!(e.raw_os_error().is_some(), "{e}");
        assert_ne!(e.kind(), io::ErrorKind::Unsupported, "{e}");
    }
}
