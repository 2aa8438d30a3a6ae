//! Files for the io_uring runtime: [`File`], [`OpenOptions`], [`Metadata`], directory and
//! path operations, and [`AlignedBuf`] for `O_DIRECT`.
//!
//! Every operation is an io_uring op built on the `runtime` crate's public op API
//! ([`runtime::ext::Op`]): `OPENAT`, `READ`/`WRITE`, `READV`/`WRITEV`, `FSYNC`,
//! `SYNC_FILE_RANGE`, `FALLOCATE`, `FTRUNCATE`, `STATX`, `CLOSE`, `UNLINKAT`, `MKDIRAT`,
//! `RENAMEAT`, `LINKAT`, `SYMLINKAT`. There is no thread pool and no blocking system call
//! on the I/O path; this crate never touches the ring. I/O is positional with owned buffers:
//! `read_at(buf, pos)` gives back `(io::Result<usize>, buf)`. [`File`] also keeps a cursor
//! for the futures-io traits (`AsyncRead`, `AsyncBufRead`, `AsyncWrite`, `AsyncSeek`; tokio's
//! with the `tokio-io` feature), each read and write still a ring op at the cursor. What
//! io_uring has no op for runs on the runtime's blocking pool, and says so:
//! [`read_dir`] (no getdents), [`canonicalize`], [`read_link`], [`set_permissions`].
//!
//! # Invariants
//! - Every op owns what the kernel reads or writes (buffers, iovec arrays, path C strings,
//!   the `statx` buffer) and a shared reference to the file's fd, so neither memory nor fd
//!   number is freed or reused while the kernel may still use it, even when the op future
//!   is dropped.
//! - An open whose future is dropped closes the fd it produces (`RETURNS_FD`).
//! - A file's fd is closed exactly once: by [`File::close`] through the ring, or when its
//!   last owner (the file or an op still in the kernel) is dropped (a plain `close(2)`).
//!
//! # Errors
//! Path errors name the operation and path and keep their kind (a missing file is
//! `NotFound`); the kernel's error is the `source()`. Data-path errors (read, write, sync)
//! are the kernel's, unwrapped: `raw_os_error()` matches `EBADF` and the like. Bad input
//! (a NUL in a path, unaligned direct I/O, an offset past `i64::MAX`) is `InvalidInput`,
//! found before anything is submitted.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("fs-doc-crate-{}", std::process::id()));
//! let rt = runtime::Runtime::new()?;
//! rt.block_on(async {
//!     corering_fs::create_dir_all(dir.join("a/b")).await?;
//!     let path = dir.join("a/b/greeting");
//!     corering_fs::write(&path, "hello").await?;
//!     assert_eq!(corering_fs::read(&path).await?, b"hello");
//!     assert_eq!(corering_fs::metadata(&path).await?.len(), 5);
//!
//!     let file = corering_fs::OpenOptions::new().read(true).write(true).open(&path).await?;
//!     let (res, _) = file.write_at(b" world".to_vec(), 5).await;
//!     assert_eq!(res?, 6);
//!     let (res, buf) = file.read_exact_at(vec![0u8; 11].into_boxed_slice(), 0).await;
//!     res?;
//!     assert_eq!(&buf[..], b"hello world");
//!     file.close().await?;
//!
//!     assert_eq!(corering_fs::copy(&path, dir.join("copy")).await?, 11);
//!     corering_fs::rename(dir.join("copy"), dir.join("moved")).await?;
//!     corering_fs::remove_file(dir.join("moved")).await?;
//!     let err = corering_fs::File::open(dir.join("missing")).await.unwrap_err();
//!     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
//!     Ok::<(), std::io::Error>(())
//! })?;
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), std::io::Error>(())
//! ```

#[cfg(not(target_os = "linux"))]
compile_error!("fs is built on io_uring and runs on Linux only");

mod aligned;
mod error;
mod fd;
mod file;
mod metadata;
mod open_options;
mod ops;
mod path_ops;
mod read_dir;
mod stream;

pub use aligned::{AlignedBuf, DEFAULT_ALIGN};
pub use file::File;
pub use metadata::{FileType, Metadata};
pub use open_options::OpenOptions;
pub use path_ops::{
    canonicalize, copy, create_dir, create_dir_all, hard_link, metadata, read, read_link,
    read_to_string, remove_dir, remove_dir_all, remove_file, rename, set_permissions, symlink,
    symlink_metadata, try_exists, write,
};
pub use read_dir::{read_dir, DirEntry, ReadDir};
