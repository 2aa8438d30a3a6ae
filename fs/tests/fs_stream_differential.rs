//! Differential test of `File`'s stream against `std::fs::File`: the same random steps
//! (seeks from every origin and past the end; reads and writes of up to 300 KB through
//! futures' traits, and tokio's with `tokio-io`; `set_len` down and up; flush; `sync_data`;
//! `metadata().len()`; the positional owned-buffer reads and writes) go to a runtime file
//! and to a std file, and every read, every position, every length and the final contents
//! must match byte for byte.
//!
//! Each seed runs on its own thread and runtime. `STRESS_SEED=<n>` (decimal or `0x` hex)
//! runs that seed alone; a failure prints its seed, step and last steps.

mod common;

use std::collections::VecDeque;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

use common::TempDir;
use corering_fs::{File, OpenOptions};
use futures::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Steps per seed.
const STEPS: usize = 2_500;
/// The largest read or write.
const MAX_IO: usize = 300_000;
/// The seeds run when `STRESS_SEED` is not set.
const SEEDS: [u64; 4] = [1, 0x5eed, 0xdead_beef, 20_240_611];

/// xorshift64*: small, fast in a debug build, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An I/O size: often tiny, often around the 64 KiB buffers, up to `MAX_IO`.
    fn size(&mut self) -> usize {
        match self.below(4) {
            0 => self.below(16) as usize,
            1 => self.below(4096) as usize + 1,
            2 => 65_536 - 64 + self.below(128) as usize,
            _ => self.below(MAX_IO as u64) as usize + 1,
        }
    }
}

/// Prints the seed and the last steps if the thread panics while it is alive.
struct Trail {
    seed: u64,
    step: usize,
    last: VecDeque<String>,
}

impl Trail {
    fn note(&mut self, step: usize, what: String) {
        self.step = step;
        if self.last.len() == 12 {
            self.last.pop_front();
        }
        self.last.push_back(what);
    }
}

impl Drop for Trail {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "fs_stream_differential FAILED: seed {:#x} (rerun with STRESS_SEED={:#x}), \
                 step {}; last steps, oldest first:",
                self.seed, self.seed, self.step
            );
            for s in &self.last {
                eprintln!("  {s}");
            }
        }
    }
}

/// The runtime file, the std file, and what drives them.
struct Pair {
    ours: File,
    theirs: std::fs::File,
    rng: Rng,
    /// Random bytes that writes take slices of (cheaper than fresh bytes per write).
    pool: Vec<u8>,
}

impl Pair {
    fn data(&mut self, len: usize) -> Vec<u8> {
        let at = self.rng.below((self.pool.len() - MAX_IO) as u64) as usize;
        self.pool[at..at + len].to_vec()
    }

    fn std_pos(&mut self) -> u64 {
        self.theirs.stream_position().unwrap()
    }

    fn std_len(&self) -> u64 {
        self.theirs.metadata().unwrap().len()
    }

    /// The std file's bytes at its cursor, up to `n`, moving its cursor past them.
    fn std_read(&mut self, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        let mut got = 0;
        while got < n {
            match self.theirs.read(&mut out[got..]).unwrap() {
                0 => break,
                k => got += k,
            }
        }
        out.truncate(got);
        out
    }

    /// Checks one stream read of `got` bytes asked for `n`: not more than asked, at least
    /// one unless at the end, the std file's next bytes.
    fn check_read(&mut self, what: &str, n: usize, got: &[u8]) {
        assert!(got.len() <= n, "{what}: {} bytes for {n} asked", got.len());
        let expect = self.std_read(got.len());
        assert_eq!(
            expect.len(),
            got.len(),
            "{what}: read past the std file's end"
        );
        assert!(expect == got, "{what}: bytes differ from the std file's");
        if got.is_empty() && n > 0 {
            assert_eq!(self.std_read(1), b"", "{what}: 0 bytes before the end");
        }
    }

    async fn step(&mut self, trail: &mut Trail, i: usize) {
        let roll = self.rng.below(100);
        let n = self.rng.size();
        let len = self.std_len();
        match roll {
            // Seeks, from every origin, to anywhere up to 300 KB past the end; below 0
            // is InvalidInput on both, and neither cursor moves.
            0..=14 => {
                let reach = (len + MAX_IO as u64) as i64;
                let target = match self.rng.below(3) {
                    0 => SeekFrom::Start(self.rng.below(reach as u64 + 1)),
                    1 => SeekFrom::Current(self.rng.below(2 * reach as u64) as i64 - reach),
                    _ => SeekFrom::End(self.rng.below(len + 2 * MAX_IO as u64) as i64 - len as i64),
                };
                trail.note(i, format!("seek {target:?}"));
                let theirs = self.theirs.seek(target).map_err(|e| e.kind());
                let ours = if cfg!(feature = "tokio-io") && self.rng.below(2) == 0 {
                    tokio_seek(&mut self.ours, target).await
                } else {
                    self.ours.seek(target).await
                };
                assert_eq!(ours.map_err(|e| e.kind()), theirs, "seek {target:?}");
            }
            // One read: as many bytes as it gives, at least one before the end.
            15..=29 => {
                let tokio = cfg!(feature = "tokio-io") && self.rng.below(2) == 0;
                trail.note(i, format!("read {n} (tokio: {tokio})"));
                let mut buf = vec![0u8; n];
                let got = if tokio {
                    tokio_read(&mut self.ours, &mut buf).await
                } else {
                    self.ours.read(&mut buf).await.unwrap()
                };
                self.check_read("read", n, &buf[..got]);
            }
            // Reads until `n` bytes or the end.
            30..=37 => {
                trail.note(i, format!("read_full {n}"));
                let mut buf = Vec::with_capacity(n);
                (&mut self.ours)
                    .take(n as u64)
                    .read_to_end(&mut buf)
                    .await
                    .unwrap();
                let expect = self.std_read(n);
                assert!(
                    buf == expect,
                    "read_full {n}: {} vs {}",
                    buf.len(),
                    expect.len()
                );
            }
            // The buffered read: what fill_buf lends is the file's, then consume a part.
            38..=42 => {
                let buf = self.ours.fill_buf().await.unwrap().to_vec();
                let take = self.rng.below(buf.len() as u64 + 1) as usize;
                trail.note(i, format!("fill_buf ({} bytes), consume {take}", buf.len()));
                let at = self.std_pos();
                let mut expect = vec![0u8; buf.len()];
                self.theirs.read_exact_at(&mut expect, at).unwrap();
                assert!(buf == expect, "fill_buf at {at}");
                assert!(
                    !buf.is_empty() || at >= len,
                    "fill_buf empty at {at} of {len}"
                );
                self.ours.consume_unpin(take);
                self.theirs.seek(SeekFrom::Current(take as i64)).unwrap();
            }
            // write_all, through futures or tokio.
            43..=54 => {
                let data = self.data(n);
                let tokio = cfg!(feature = "tokio-io") && self.rng.below(2) == 0;
                trail.note(i, format!("write_all {n} (tokio: {tokio})"));
                if tokio {
                    tokio_write_all(&mut self.ours, &data).await;
                } else {
                    self.ours.write_all(&data).await.unwrap();
                }
                self.theirs.write_all(&data).unwrap();
            }
            // One write: as many bytes as it takes.
            55..=59 => {
                let data = self.data(n);
                trail.note(i, format!("write {n}"));
                let took = self.ours.write(&data).await.unwrap();
                assert!(took <= n && (took > 0 || n == 0), "write {n} took {took}");
                self.theirs.write_all(&data[..took]).unwrap();
            }
            // set_len, shorter or longer (past the cursor or not).
            60..=67 => {
                let to = self.rng.below(len + len / 2 + 100_000);
                trail.note(i, format!("set_len {to} (from {len})"));
                self.ours.set_len(to).await.unwrap();
                self.theirs.set_len(to).unwrap();
            }
            68..=71 => {
                trail.note(i, "flush".into());
                self.ours.flush().await.unwrap();
                self.theirs.flush().unwrap();
            }
            72..=73 => {
                trail.note(i, "sync_data".into());
                self.ours.sync_data().await.unwrap();
                self.theirs.sync_data().unwrap();
            }
            74..=79 => {
                trail.note(i, "metadata".into());
                assert_eq!(
                    self.ours.metadata().await.unwrap().len(),
                    len,
                    "metadata len"
                );
            }
            // Positional owned-buffer reads: read_at, read_exact_at, readv_at.
            80..=87 => {
                let at = self.rng.below(len + 1000);
                trail.note(i, format!("read_at {n} at {at} (of {len})"));
                let mut expect = vec![0u8; n];
                let k = self.theirs.read_at(&mut expect, at).unwrap();
                expect.truncate(k);
                match self.rng.below(3) {
                    0 => {
                        let (res, buf) = self.ours.read_at(Vec::with_capacity(n), at).await;
                        assert_eq!(res.unwrap(), buf.len());
                        assert!(expect.starts_with(&buf), "read_at {n} at {at}");
                        assert!(!buf.is_empty() || k == 0 || n == 0, "read_at: 0 before end");
                    }
                    1 => {
                        let (res, buf) = self.ours.read_exact_at(vec![0u8; n], at).await;
                        match res {
                            Ok(()) => assert!(buf == expect, "read_exact_at {n} at {at}"),
                            Err(e) => {
                                assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
                                assert!(k < n, "read_exact_at: early EOF");
                            }
                        }
                    }
                    _ => {
                        let split = n / 3;
                        let bufs = vec![Vec::with_capacity(split), Vec::with_capacity(n - split)];
                        let (res, bufs) = self.ours.readv_at(bufs, at).await;
                        let got = bufs.concat();
                        assert_eq!(res.unwrap(), got.len());
                        assert!(expect.starts_with(&got), "readv_at {n} at {at}");
                    }
                }
            }
            // Positional owned-buffer writes: write_all_at, writev_at.
            _ => {
                let data = self.data(n);
                let at = self.rng.below(len + 100_000);
                trail.note(i, format!("write_all_at {n} at {at} (of {len})"));
                if self.rng.below(2) == 0 {
                    let (res, _) = self.ours.write_all_at(data.clone(), at).await;
                    res.unwrap();
                    self.theirs.write_all_at(&data, at).unwrap();
                } else {
                    let (a, b) = data.split_at(n / 2);
                    let (res, _) = self.ours.writev_at(vec![a.to_vec(), b.to_vec()], at).await;
                    let k = res.unwrap();
                    self.theirs.write_all_at(&data[..k], at).unwrap();
                }
            }
        }
        // The cursors agree after every step.
        let theirs = self.std_pos();
        assert_eq!(self.ours.cursor(), theirs, "cursor after the step");
    }
}

#[cfg(feature = "tokio-io")]
async fn tokio_seek(f: &mut File, target: SeekFrom) -> io::Result<u64> {
    tokio::io::AsyncSeekExt::seek(f, target).await
}

#[cfg(feature = "tokio-io")]
async fn tokio_read(f: &mut File, buf: &mut [u8]) -> usize {
    tokio::io::AsyncReadExt::read(f, buf).await.unwrap()
}

#[cfg(feature = "tokio-io")]
async fn tokio_write_all(f: &mut File, data: &[u8]) {
    tokio::io::AsyncWriteExt::write_all(f, data).await.unwrap()
}

#[cfg(not(feature = "tokio-io"))]
async fn tokio_seek(_: &mut File, _: SeekFrom) -> io::Result<u64> {
    unreachable!("tokio-io is off")
}

#[cfg(not(feature = "tokio-io"))]
async fn tokio_read(_: &mut File, _: &mut [u8]) -> usize {
    unreachable!("tokio-io is off")
}

#[cfg(not(feature = "tokio-io"))]
async fn tokio_write_all(_: &mut File, _: &[u8]) {
    unreachable!("tokio-io is off")
}

/// Runs `STEPS` random steps of `seed` and compares the two files at the end.
fn run_seed(seed: u64) {
    let mut trail = Trail {
        seed,
        step: 0,
        last: VecDeque::new(),
    };
    let dir = TempDir::new(&format!("differential-{seed:x}"));
    let (ours_path, std_path) = (dir.join("ours"), dir.join("std"));
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ours = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .open(&ours_path)
            .await
            .unwrap();
        let theirs = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&std_path)
            .unwrap();
        let mut rng = Rng::new(seed);
        let pool = (0..(2 * MAX_IO / 8))
            .flat_map(|_| rng.next().to_le_bytes())
            .collect();
        let mut pair = Pair {
            ours,
            theirs,
            rng,
            pool,
        };
        for i in 0..STEPS {
            pair.step(&mut trail, i).await;
        }
        trail.note(STEPS, "close".into());
        pair.ours.close().await.unwrap();
    });
    let (ours, theirs) = (
        std::fs::read(&ours_path).unwrap(),
        std::fs::read(&std_path).unwrap(),
    );
    assert_eq!(ours.len(), theirs.len(), "final lengths");
    let first = ours.iter().zip(&theirs).position(|(a, b)| a != b);
    assert_eq!(first, None, "final contents differ first at this offset");
    drop(trail);
}

#[test]
fn stream_matches_std_file() {
    let seeds: Vec<u64> = match std::env::var("STRESS_SEED") {
        Ok(s) => {
            let s = s.trim();
            let seed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            vec![seed.unwrap_or_else(|e| panic!("STRESS_SEED={s:?}: {e}"))]
        }
        Err(_) => SEEDS.to_vec(),
    };
    let threads: Vec<_> = seeds
        .into_iter()
        .map(|seed| (seed, std::thread::spawn(move || run_seed(seed))))
        .collect();
    let failed: Vec<String> = threads
        .into_iter()
        .filter_map(|(seed, t)| t.join().is_err().then(|| format!("{seed:#x}")))
        .collect();
    assert!(
        failed.is_empty(),
        "seeds failed: {failed:?} (see STRESS_SEED)"
    );
}
