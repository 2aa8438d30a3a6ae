//! A directory tree to serve, made afresh in the temp directory and removed on drop: web
//! files of every common type, precompressed siblings, random files of random sizes (up to
//! a few MiB, around the whole-file limit), nested directories with and without
//! `index.html`, names that need percent-encoding, an empty file, symlinks inside the root
//! and symlinks that leave it. Every regular file has the same modification time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The modification time of every file: 2020-09-13 12:26:40.123456789 UTC.
pub fn mtime() -> SystemTime {
    UNIX_EPOCH + Duration::new(1_600_000_000, 123_456_789)
}

/// `Last-Modified` of every file.
pub const LAST_MODIFIED: &str = "Sun, 13 Sep 2020 12:26:40 GMT";

/// A seeded generator (splitmix64): the same tree for the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

/// The tree: `base/root` is served, `base/outside.txt` is beside it.
pub struct Tree {
    pub base: PathBuf,
    pub root: PathBuf,
    /// Every regular file beneath the root (path relative to it) and its bytes.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

impl Tree {
    /// A tree under a fresh directory named by `name` and the process.
    pub fn new(name: &str, seed: u64) -> Tree {
        let base =
            std::env::temp_dir().join(format!("net-serve-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        let mut tree = Tree {
            base,
            root,
            files: BTreeMap::new(),
        };
        let mut rng = Rng::new(seed);
        std::fs::write(tree.base.join("outside.txt"), b"outside the root\n").unwrap();
        tree.file(
            "index.html",
            b"<!doctype html><title>root</title>\n".to_vec(),
        );
        for (name, len) in [
            ("hello.txt", 300),
            ("hello.txt.gz", 120),
            ("hello.txt.br", 100),
            ("style.css", 2_000),
            ("style.css.gz", 700),
            ("app.js", 5_000),
            ("app.js.br", 1_500),
            ("app.js.zst", 1_400),
            ("module.mjs", 90),
            ("data.json", 400),
            ("image.svg", 800),
            ("font.woff2", 3_000),
            ("font.woff", 3_100),
            ("pic.webp", 4_000),
            ("pic.png", 4_100),
            ("photo.jpg", 4_200),
            ("photo.jpeg", 4_300),
            ("anim.gif", 500),
            ("favicon.ico", 300),
            ("mod.wasm", 6_000),
            ("feed.xml", 200),
            ("doc.pdf", 900),
            ("clip.mp4", 2_000),
            ("pic.avif", 700),
            ("app.js.map", 800),
            ("readme.md", 100),
            ("table.csv", 100),
            ("archive.tar.gz", 1_000),
            ("noext", 50),
            ("weird.unknownext", 60),
            ("page.htm", 70),
            ("only-gz.txt.gz", 80),
            ("%41.txt", 10),
            ("mid.bin", 1 << 20),
            ("mid1.bin", (1 << 20) + 1),
            ("big.bin", 3 << 20),
        ] {
            let bytes = rng.bytes(len);
            tree.file(name, bytes);
        }
        tree.file("empty.txt", Vec::new());
        tree.file("sub/index.html", b"<p>sub</p>\n".to_vec());
        tree.file("sub/index.html.gz", rng.bytes(33));
        tree.file("sub/deep/file.txt", rng.bytes(1234));
        tree.file("sub/a b.txt", b"spaced\n".to_vec());
        tree.file("sub/\u{e9}t\u{e9}.txt", b"accents\n".to_vec());
        tree.file("nodex/file.txt", rng.bytes(77));
        for i in 0..24 {
            let len = match i % 4 {
                0 => rng.below(4096),
                1 => rng.below(1 << 20),
                2 => (1 << 20) + rng.below(1 << 20),
                _ => rng.below(5 << 20),
            } as usize;
            tree.file(&format!("rand/{i:02}.bin"), rng.bytes(len));
        }
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, tree.root.join(name)).unwrap();
        };
        link("sub/deep/file.txt", "link.txt");
        link("sub", "linkdir");
        link("../outside.txt", "escape.txt");
        link("..", "up");
        link(
            tree.base.join("outside.txt").to_str().unwrap(),
            "abs-escape.txt",
        );
        link(
            tree.root.join("hello.txt").to_str().unwrap(),
            "abs-inside.txt",
        );
        link("/proc/self/root/etc/hostname", "magic.txt");
        tree
    }

    /// Writes `rel` (making its directories) with the common modification time.
    pub fn file(&mut self, rel: &str, bytes: Vec<u8>) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        set_mtime(&path);
        self.files.insert(rel.to_owned(), bytes);
    }

    /// The bytes of `rel`.
    pub fn bytes(&self, rel: &str) -> &[u8] {
        &self.files[rel]
    }
}

fn set_mtime(path: &Path) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(mtime()).unwrap();
}
