//! `IORING_OP_OPENAT2` through the op API, on both backends (the epoll backend carries it
//! out as `openat2(2)` on its blocking pool): a path beneath a directory opens, and
//! `RESOLVE_BENEATH` refuses `..` above it and symlinks that lead out with `EXDEV`.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use runtime::ext::io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};
use runtime::{Backend, Builder};

/// An open's data: the path and the `open_how` the kernel reads.
struct Open2 {
    _path: CString,
    _how: Box<types::OpenHow>,
}

impl Completable for Open2 {
    type Output = io::Result<OwnedFd>;

    const RETURNS_FD: bool = true;

    fn complete(self, cqe: Cqe) -> io::Result<OwnedFd> {
        let raw = cqe.result?;
        // SAFETY: a successful open's result is a new fd nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(raw as i32) })
    }
}

fn open2(dir: &OwnedFd, path: &str, resolve: u64) -> Op<Open2> {
    let path = CString::new(path).unwrap();
    let how = Box::new(
        types::OpenHow::new()
            .flags((libc::O_RDONLY | libc::O_CLOEXEC) as u64)
            .resolve(resolve),
    );
    let sqe = opcode::OpenAt2::new(types::Fd(dir.as_raw_fd()), path.as_ptr(), &*how).build();
    // SAFETY: the SQE points into the path's and the `open_how`'s heap blocks, owned by the
    // data; the directory outlives the op (awaited below).
    unsafe {
        Op::new(
            Open2 {
                _path: path,
                _how: how,
            },
            sqe,
        )
    }
}

fn opens_beneath_and_refuses_escapes(rt: &runtime::Runtime, name: &str) {
    let base = std::env::temp_dir().join(format!("op-openat2-{name}-{}", std::process::id()));
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/file"), b"inside").unwrap();
    std::fs::write(base.join("outside"), b"outside").unwrap();
    let _ = std::fs::remove_file(root.join("in"));
    let _ = std::fs::remove_file(root.join("out"));
    std::os::unix::fs::symlink("sub/file", root.join("in")).unwrap();
    std::os::unix::fs::symlink("../outside", root.join("out")).unwrap();
    let dir: OwnedFd = std::fs::File::open(&root).unwrap().into();
    let beneath = libc::RESOLVE_BENEATH;
    rt.block_on(async {
        for ok in ["sub/file", "in", "./sub/../sub/file"] {
            let fd = open2(&dir, ok, beneath).await.unwrap();
            let text = std::fs::read(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
            assert_eq!(text, b"inside", "{ok}");
        }
        for escape in ["../outside", "out", "sub/../../outside"] {
            let e = open2(&dir, escape, beneath).await.unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{escape}: {e}");
        }
        // Without the resolve flag the symlink is followed out, as openat(2) would.
        assert!(open2(&dir, "out", 0).await.is_ok());
        let e = open2(&dir, "missing", beneath).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    });
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn openat2_on_the_default_backend() {
    opens_beneath_and_refuses_escapes(&runtime::Runtime::new().unwrap(), "default");
}

#[test]
fn openat2_on_the_epoll_backend() {
    let rt = Builder::new().backend(Backend::Epoll).build();
    // Where epoll is refused (a CI seccomp pass), rt_backend checks the error.
    if !runtime::ext::testing::require("the epoll backend", rt.is_ok()) {
        return;
    }
    opens_beneath_and_refuses_escapes(&rt.unwrap(), "epoll");
}
