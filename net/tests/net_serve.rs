//! `corering_net::serve`: one SO_REUSEPORT listener per core, connections handled where accepted.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use runtime::Builder;

#[test]
fn every_core_serves_and_handles_its_own_connections() {
    let rt = Builder::new().cores(2).build().unwrap();
    let seen = Arc::new(Mutex::new(HashSet::new()));
    rt.block_on(async {
        let s = seen.clone();
        let server = corering_net::serve("127.0.0.1:0", move |stream: corering_net::TcpStream| {
            let s = s.clone();
            async move {
                let core = runtime::current_core().unwrap();
                s.lock().unwrap().insert(core);
                let (res, buf) = stream
                    .read_exact_owned(vec![0u8; 8].into_boxed_slice())
                    .await;
                res.unwrap();
                let mut reply = buf.to_vec();
                reply.push(core as u8);
                let (res, _) = stream.write_all_owned(reply).await;
                res.unwrap();
            }
        })
        .unwrap();
        assert_eq!(server.cores(), 2);
        let addr = server.local_addr();
        // Clients on a plain thread; the kernel spreads them over the two listeners.
        let clients = std::thread::spawn(move || {
            let mut cores = HashSet::new();
            for i in 0..400u64 {
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                c.write_all(&i.to_le_bytes()).unwrap();
                let mut back = [0u8; 9];
                c.read_exact(&mut back).unwrap();
                assert_eq!(&back[..8], &i.to_le_bytes());
                cores.insert(back[8]);
            }
            cores
        });
        while !clients.is_finished() {
            runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let cores = clients.join().unwrap();
        assert!(cores.iter().all(|c| *c < 2));
        drop(server);
    });
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|c| *c < 2), "{seen:?}");
    // SO_REUSEPORT hashes by the 4-tuple: 400 connections from distinct ports reach both.
    assert_eq!(seen.len(), 2, "connections reached cores {seen:?}");
}

#[test]
fn serve_outside_a_runtime_is_an_error() {
    let e = corering_net::serve("127.0.0.1:0", |_s: corering_net::TcpStream| async {}).unwrap_err();
    assert!(e.to_string().contains("outside of a runtime"), "{e}");
}
