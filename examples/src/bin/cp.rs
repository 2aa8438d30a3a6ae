//! Copies a file with several reads and writes in flight: the file is cut into blocks, and
//! up to `--depth` blocks are being read or written at once, each a `read_at` then a
//! `write_at` at the same offset (io_uring ops on owned buffers, reused as blocks finish).
//!
//! `cargo run --release -p examples --bin cp -- SRC DST`. Ctrl-C stops it (exit status 130;
//! DST is left partly written).

use std::io;
use std::pin::pin;
use std::process::ExitCode;

use examples::args::Args;
use futures::future::{select, Either};
use futures::stream::{FuturesUnordered, StreamExt};
use runtime::buf::IoBuf;

const USAGE: &str = "\
cp: copy a file with several io_uring reads and writes in flight

usage: cp [--depth N] [--block-size BYTES] SRC DST

  --depth N           blocks in flight at once (default 8)
  --block-size BYTES  bytes per read and write; K and M suffixes (default 1M)
  -h, --help          this text
";

#[runtime::main]
async fn main() -> ExitCode {
    let args = Args::parse(USAGE, &["depth", "block-size"], &[]);
    let [src, dst] = args.positional() else {
        args.usage_error("cp takes SRC and DST");
    };
    let depth = args.value("depth", 8usize).max(1);
    let block = match parse_size(&args.value("block-size", "1M".to_string())) {
        Some(n) if n > 0 && n <= 1 << 30 => n,
        _ => args.usage_error("--block-size must be 1 to 1G bytes, e.g. 65536, 256K, 1M"),
    };
    let copy = pin!(copy(src, dst, depth, block));
    let ctrl_c = pin!(runtime::signal::ctrl_c());
    match select(copy, ctrl_c).await {
        Either::Left((Ok(_), _)) => ExitCode::SUCCESS,
        Either::Left((Err(e), _)) => {
            eprintln!("cp: {e}");
            ExitCode::FAILURE
        }
        Either::Right(_) => {
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
async fn copy(src: &str, dst: &str, depth: usize, block: usize) -> io::Result<u64> {
    let src_file = fs::File::open(src)
        .await
        .map_err(|e| context(e, "opening", src))?;
    let len = src_file
        .metadata()
        .await
        .map_err(|e| context(e, "reading", src))?
        .len();
    let dst_file = fs::File::create(dst)
        .await
        .map_err(|e| context(e, "creating", dst))?;
    let mut spare: Vec<Box<[u8]>> = Vec::new();
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0u64;
    loop {
        while in_flight.len() < depth && next < len {
            let n = (len - next).min(block as u64) as usize;
            let buf = spare
                .pop()
                .unwrap_or_else(|| vec![0u8; block].into_boxed_slice());
            in_flight.push(copy_block(&src_file, &dst_file, buf, next, n));
            next += n as u64;
        }
        match in_flight.next().await {
            None => break,
            Some((res, buf)) => {
                res?;
                spare.push(buf);
            }
        }
    }
    drop(in_flight);
    dst_file.close().await?;
    Ok(len)
}

/// `e` with what was done to which file in its message; the kind is kept.
fn context(e: io::Error, what: &str, path: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {path}: {e}"))
}

/// Reads `n` bytes at `pos` of `src` into `buf` and writes them at `pos` of `dst`.
async fn copy_block(
    src: &fs::File,
    dst: &fs::File,
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
