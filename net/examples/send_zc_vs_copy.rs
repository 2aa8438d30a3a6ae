//! Measures `send_zc` against the copying `write_all` on loopback: 1 MiB and 64 KiB
//! buffers, alternating, each run moving 256 MiB to a reader on the same core. Prints MiB/s
//! per run and the median ratio. Run: `cargo run --release -p corering-net --example send_zc_vs_copy`.

use std::time::Instant;

use corering_net::{TcpListener, TcpStream};

const TOTAL: usize = 256 << 20;

async fn run(size: usize, zc: bool) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (a, b) = futures::join!(TcpStream::connect(addr), listener.accept());
    let (a, b) = (a.unwrap(), b.unwrap().0);
    let reader = runtime::spawn_local(async move {
        let mut buf = vec![0u8; 1 << 20].into_boxed_slice();
        let mut got = 0;
        while got < TOTAL {
            let (res, b2) = b.read_owned(buf).await;
            buf = b2;
            match res.unwrap() {
                0 => break,
                n => got += n,
            }
        }
        got
    });
    let start = Instant::now();
    let mut buf = vec![0xabu8; size];
    let mut sent = 0;
    while sent < TOTAL {
        if zc {
            let (res, b) = a.send_zc(buf).await;
            buf = b;
            sent += res.unwrap();
        } else {
            let (res, b) = a.write_all_owned(buf).await;
            buf = b;
            res.unwrap();
            sent += size;
        }
    }
    drop(a);
    assert!(reader.await.unwrap() >= TOTAL);
    (TOTAL as f64 / (1 << 20) as f64) / start.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for size in [64 << 10, 1 << 20] {
            let (mut copy, mut zc) = (Vec::new(), Vec::new());
            run(size, false).await; // warm-up
            for _ in 0..5 {
                copy.push(run(size, false).await);
                zc.push(run(size, true).await);
            }
            let (c, z) = (median(&mut copy), median(&mut zc));
            println!(
                "{:>5} KiB buffers: write_all {c:8.0} MiB/s, send_zc {z:8.0} MiB/s, send_zc/write_all {:.2}x",
                size >> 10,
                z / c
            );
        }
    });
}
