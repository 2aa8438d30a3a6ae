//! `runtime::ext::raw::splice`: file to pipe to file with offsets, short input, and bad input.

mod common;

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;

use common::pipe;
use runtime::ext::{raw, SharedFd};

/// A `SharedFd` on a duplicate of `f`'s fd (the same open file, so the same position).
fn shared(f: &impl AsFd) -> SharedFd {
    SharedFd::new(f.as_fd().try_clone_to_owned().unwrap())
}

fn temp_file(name: &str, contents: &[u8]) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("op_splice_{}_{name}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    f.write_all(contents).unwrap();
    f
}

#[test]
fn file_to_pipe_to_file_at_offsets() {
    let rt = runtime::Runtime::new().unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let src = temp_file("src", &data);
    let mut dst = temp_file("dst", &[]);
    let (r, w) = pipe();
    let (src_fd, dst_fd) = (shared(&src), shared(&dst));
    let (r, w) = (SharedFd::new(r), SharedFd::new(w));
    rt.block_on(async {
        // 50,000 bytes from offset 1,000 of src to offset 10 of dst, through the pipe.
        let mut moved = 0;
        while moved < 50_000 {
            let into = raw::splice(
                &src_fd,
                Some(1_000 + moved as u64),
                &w,
                None,
                (50_000 - moved) as u32,
                0,
            )
            .await
            .unwrap();
            assert!(into > 0);
            let mut out = 0;
            while out < into {
                out += raw::splice(
                    &r,
                    None,
                    &dst_fd,
                    Some(10 + (moved + out) as u64),
                    (into - out) as u32,
                    0,
                )
                .await
                .unwrap();
            }
            moved += into;
        }
    });
    // Offsets were given, so neither file position moved (src's is where its write left it).
    assert_eq!(dst.stream_position().unwrap(), 0);
    let mut src = src;
    assert_eq!(src.stream_position().unwrap(), data.len() as u64);
    let mut got = Vec::new();
    dst.seek(SeekFrom::Start(0)).unwrap();
    dst.read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), 10 + 50_000);
    assert!(
        got[..10].iter().all(|&b| b == 0),
        "the hole before offset 10"
    );
    assert_eq!(&got[10..], &data[1_000..51_000]);
}

#[test]
fn splice_past_the_end_of_the_input_moves_nothing() {
    let rt = runtime::Runtime::new().unwrap();
    let src = temp_file("short", b"abc");
    let (_r, w) = pipe();
    let (src, w) = (shared(&src), SharedFd::new(w));
    let n = rt
        .block_on(raw::splice(&src, Some(3), &w, None, 100, 0))
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let rt = runtime::Runtime::new().unwrap();
    let a = temp_file("a", b"abc");
    let b = temp_file("b", b"");
    let (r, w) = pipe();
    let (a, b, w) = (shared(&a), shared(&b), SharedFd::new(w));
    rt.block_on(async {
        // Neither end a pipe.
        let e = raw::splice(&a, Some(0), &b, Some(0), 3, 0)
            .await
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
        // An input not open for reading (the pipe's write end).
        let e = raw::splice(&w, None, &b, Some(0), 3, 0).await.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
        // An offset on the pipe end.
        let e = raw::splice(&a, Some(0), &w, Some(0), 3, 0)
            .await
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESPIPE), "{e}");
        // An offset past i64::MAX.
        let e = raw::splice(&a, Some(u64::MAX), &w, None, 3, 0)
            .await
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
    });
    drop(r);
}
