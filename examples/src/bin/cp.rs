//! Copies a file with several io_uring ops in flight: the file is cut into blocks, and up to
//! `--depth` blocks are being copied at once.
//!
//! - `--mode splice` (the default): each block goes through a pipe of its own inside the
//!   kernel, `IORING_OP_SPLICE` from the source into the pipe, then from the pipe into the
//!   destination, as `copy_file_range(2)` (what GNU cp uses) does internally: the source's
//!   pages are not copied to user space at all.
//! - `--mode rw`: each block is a `read_at` into an owned buffer then a `write_at` from it at
//!   the same offset (buffers reused as blocks finish).
//!
//! `cargo run --release -p examples --bin cp -- SRC DST`. Ctrl-C stops it (exit status 130;
//! DST is left partly written).

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::pin::pin;
use std::process::ExitCode;

use examples::args::Args;
use futures::future::{select, Either};
use futures::stream::{FuturesUnordered, StreamExt};
use runtime::buf::IoBuf;
use runtime::ext::{raw, SharedFd};

const USAGE: &str = "\
cp: copy a file with several io_uring reads and writes in flight

usage: cp [--mode splice|rw] [--depth N] [--block-size BYTES] SRC DST

  --mode MODE         splice: through a pipe in the kernel (default); rw: read and write
                      through user-space buffers
  --depth N           blocks in flight at once (default 2 with splice, 8 with rw)
  --block-size BYTES  bytes per block (and pipe size); K and M suffixes (default 1M)
  -h, --help          this text
";

#[runtime::main]
async fn main() -> ExitCode {
    let args = Args::parse(USAGE, &["mode", "depth", "block-size"], &[]);
    let [src, dst] = args.positional() else {
        args.usage_error("cp takes SRC and DST");
    };

    let block = match parse_size(&args.value("block-size", "1M".to_string())) {
        Some(n) if n > 0 && n <= 1 << 30 => n,
        _ => args.usage_error("--block-size must be 1 to 1G bytes, e.g. 65536, 256K, 1M"),
    };
    let splice = match args.value("mode", "splice".to_string()).as_str() {
        "splice" => true,
        "rw" => false,
        _ => args.usage_error("--mode is splice or rw"),
    };
    // Spliced blocks are written by the kernel's io-wq workers, which take the destination
    // inode's lock in turn: past two in flight they mostly wait for each other (1 GiB here:
    // 0.37 s at depth 2, 0.4-1.1 s at depth 8). Buffered blocks gain from more.
    let depth = args.value("depth", if splice { 2 } else { 8usize }).max(1);
    let (from, to) = (src.clone(), dst.clone());
    let copy = Box::pin(async move { copy(&from, &to, depth, block, splice).await });
    let ctrl_c = pin!(runtime::signal::ctrl_c());
    match select(copy, ctrl_c).await {
        Either::Left((Ok(_), _)) => ExitCode::SUCCESS,
        Either::Left((Err(e), _)) => {
            eprintln!("cp: {e}");
            ExitCode::FAILURE
        }
        Either::Right((_, copy)) => {
            // Dropping the copy is safe with splices in flight: each keeps a clone of its
            // files (`SharedFd`) until its final CQE.
            drop(copy);
            eprintln!("cp: interrupted; {dst} is incomplete");
            ExitCode::from(130)
        }
    }
}

/// `65536`, `256K`, `1M`, `1G` (powers of 1024).
fn parse_size(s: &str) -> Option<usize> {
    let (digits, shift) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 10),
        b'm' | b'M' => (&s[..s.len() - 1], 20),
        b'g' | b'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift)
}

/// Copies `src` to `dst` (created or truncated); returns the bytes copied.
async fn copy(src: &str, dst: &str, depth: usize, block: usize, splice: bool) -> io::Result<u64> {
    let src_file = corering_fs::File::open(src)
        .await
        .map_err(|e| context(e, "opening", src))?;
    let len = src_file
        .metadata()
        .await
        .map_err(|e| context(e, "reading", src))?
        .len();
    let dst_file = corering_fs::File::create(dst)
        .await
        .map_err(|e| context(e, "creating", dst))?;
    if splice {
        copy_spliced(&src_file, &dst_file, len, depth, block).await?;
    } else {
        copy_buffered(&src_file, &dst_file, len, depth, block).await?;
    }
    dst_file.close().await?;
    Ok(len)
}

/// Up to `depth` blocks in flight, each read into a buffer and written from it.
async fn copy_buffered(
    src: &corering_fs::File,
    dst: &corering_fs::File,
    len: u64,
    depth: usize,
    block: usize,
) -> io::Result<()> {
    let new = || Ok(vec![0u8; block].into_boxed_slice());
    in_blocks(
        len,
        depth,
        new,
        |b| b.len(),
        |buf, pos, n| copy_block(src, dst, buf, pos, n),
    )
    .await
}

/// Up to `depth` blocks in flight, each spliced through a pipe of its own.
async fn copy_spliced(
    src: &corering_fs::File,
    dst: &corering_fs::File,
    len: u64,
    depth: usize,
    block: usize,
) -> io::Result<()> {
    // The splices name both files by `SharedFd`: each holds a duplicate of the file's fd.
    let src = SharedFd::new(src.as_fd().try_clone_to_owned()?);
    let dst = SharedFd::new(dst.as_fd().try_clone_to_owned()?);
    in_blocks(
        len,
        depth,
        || Pipe::new(block),
        |p| p.size,
        |pipe, pos, n| splice_block(&src, &dst, pipe, pos, n),
    )
    .await
}

/// Copies `len` bytes as blocks, up to `depth` in flight: each block borrows a resource (a
/// buffer, a pipe) made by `new` or reused from a finished block, is at most `cap` of it
/// long, and is run by `start(resource, offset, length)`, which gives the resource back.
async fn in_blocks<R, Fut>(
    len: u64,
    depth: usize,
    mut new: impl FnMut() -> io::Result<R>,
    cap: impl Fn(&R) -> usize,
    mut start: impl FnMut(R, u64, usize) -> Fut,
) -> io::Result<()>
where
    Fut: std::future::Future<Output = (io::Result<()>, R)>,
{
    let mut spare: Vec<R> = Vec::new();
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0u64;
    loop {
        while in_flight.len() < depth && next < len {
            let r = match spare.pop() {
                Some(r) => r,
                None => new()?,
            };
            let n = (len - next).min(cap(&r) as u64) as usize;
            in_flight.push(start(r, next, n));
            next += n as u64;
        }
        match in_flight.next().await {
            None => return Ok(()),
            Some((res, r)) => {
                res?;
                spare.push(r);
            }
        }
    }
}

/// A pipe for splicing one block at a time.
struct Pipe {
    read: SharedFd,
    write: SharedFd,
    /// Its capacity: a block never holds more, so a splice into it never waits.
    size: usize,
}

impl Pipe {
    /// A pipe resized to hold `block` bytes where the system allows it.
    fn new(block: usize) -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a writable array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(context(io::Error::last_os_error(), "creating", "a pipe"));
        }
        // SAFETY: both fds are new and owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let want = libc::c_int::try_from(block).unwrap_or(libc::c_int::MAX);
        // SAFETY: fcntl on a pipe we own. Past /proc/sys/fs/pipe-max-size (without
        // CAP_SYS_RESOURCE) it fails and the pipe keeps its size, read back below.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
        // SAFETY: as above.
        let size = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) };
        if size <= 0 {
            return Err(context(io::Error::last_os_error(), "sizing", "a pipe"));
        }
        Ok(Pipe {
            read: SharedFd::new(read),
            write: SharedFd::new(write),
            size: size as usize,
        })
    }
}

/// Moves `n` bytes at `pos` of `src` into `pipe`, then out of it to `pos` of `dst`; `n` is at
/// most the pipe's size, so the first splice never waits for the second.
async fn splice_block(
    src: &SharedFd,
    dst: &SharedFd,
    pipe: Pipe,
    pos: u64,
    n: usize,
) -> (io::Result<()>, Pipe) {
    let res = async {
        let mut moved = 0;
        while moved < n {
            let at = pos + moved as u64;
            let want = (n - moved) as u32;
            let k = raw::splice(src, Some(at), &pipe.write, None, want, 0).await?;
            if k == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the source file shrank while it was copied",
                ));
            }
            let mut out = 0;
            while out < k {
                let at = pos + (moved + out) as u64;
                let m = raw::splice(&pipe.read, None, dst, Some(at), (k - out) as u32, 0).await?;
                if m == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "splice into the destination moved nothing",
                    ));
                }
                out += m;
            }
            moved += k;
        }
        Ok(())
    }
    .await;
    (res, pipe)
}

/// `e` with what was done to which file in its message; the kind is kept.
fn context(e: io::Error, what: &str, path: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {path}: {e}"))
}

/// Reads `n` bytes at `pos` of `src` into `buf` and writes them at `pos` of `dst`.
async fn copy_block(
    src: &corering_fs::File,
    dst: &corering_fs::File,
    buf: Box<[u8]>,
    pos: u64,
    n: usize,
) -> (io::Result<()>, Box<[u8]>) {
    let (res, slice) = src.read_exact_at(buf.slice(..n), pos).await;
    if let Err(e) = res {
        return (Err(e), slice.into_inner());
    }
    let (res, slice) = dst.write_all_at(slice, pos).await;
    (res, slice.into_inner())
}
