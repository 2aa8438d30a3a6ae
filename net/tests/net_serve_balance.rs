//! `serve` at `cores(2)` under 1,000 short connections (from one client thread, then from
//! four): every connection is served exactly once, and the kernel's `SO_REUSEPORT` hash gives
//! both cores a share. The split is printed (`--nocapture`): it is the figure behind
//! ARCHITECTURE.md's "connection balance" (about 1.05x the mean on the busiest core here).

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const CONNS: usize = 1_000;

#[test]
fn reuseport_spreads_short_connections_over_both_cores() {
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let per_core: Arc<[AtomicUsize; 2]> = Arc::new(Default::default());
        let counts = per_core.clone();
        let server = corering_net::serve("127.0.0.1:0", move |s: corering_net::TcpStream| {
            let counts = counts.clone();
            async move {
                counts[runtime::current_core().unwrap()].fetch_add(1, Ordering::SeqCst);
                let (r, buf) = s.read_owned(vec![0u8; 16].into_boxed_slice()).await;
                if let Ok(n) = r {
                    let _ = s.write_all_owned(runtime::buf::IoBuf::slice(buf, ..n)).await;
                }
            }
        })
        .unwrap();
        let addr = server.local_addr();
        for threads in [1usize, 4] {
            for c in per_core.iter() {
                c.store(0, Ordering::SeqCst);
            }
            runtime::spawn_blocking(move || {
                let clients: Vec<_> = (0..threads)
                    .map(|_| {
                        std::thread::spawn(move || {
                            for i in 0..CONNS / threads {
                                let mut c = std::net::TcpStream::connect(addr).unwrap();
                                let msg = (i as u32).to_le_bytes();
                                c.write_all(&msg).unwrap();
                                let mut back = [0u8; 4];
                                c.read_exact(&mut back).unwrap();
                                assert_eq!(back, msg, "a reply for another connection");
                            }
                        })
                    })
                    .collect();
                for c in clients {
                    c.join().unwrap();
                }
            })
            .await
            .unwrap();
            let split = [0, 1].map(|i| per_core[i].load(Ordering::SeqCst));
            let busiest = *split.iter().max().unwrap() as f64 / (CONNS as f64 / 2.0);
            eprintln!("{threads} client thread(s): connections per core {split:?}, busiest {busiest:.2}x the mean");
            assert_eq!(split[0] + split[1], CONNS, "every connection handled once");
            assert!(split[0] > 0 && split[1] > 0, "one core got every connection: {split:?}");
        }
        server.shutdown(std::time::Duration::from_secs(1)).await.unwrap();
    });
}
