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

/// `Server::shutdown(grace)`: the listeners close at once (new connects are refused), a
/// handler that finishes within the grace period finishes with every byte, and one that
/// would never end is dropped at the deadline, closing its socket.
#[test]
fn shutdown_waits_for_handlers_up_to_the_grace_period() {
    use std::time::{Duration, Instant};
    let rt = Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let server = corering_net::serve(
            "127.0.0.1:0",
            |stream: corering_net::TcpStream| async move {
                // Echo 8-byte requests until end of stream; a request of all 0xff hangs forever.
                loop {
                    let (res, buf) = stream.read_exact_owned(vec![0u8; 8]).await;
                    if res.is_err() {
                        return;
                    }
                    if buf == [0xff; 8] {
                        std::future::pending::<()>().await;
                    }
                    let (res, _) = stream.write_all_owned(buf).await;
                    if res.is_err() {
                        return;
                    }
                }
            },
        )
        .unwrap();
        let addr = server.local_addr();
        let clients = std::thread::spawn(move || {
            // A polite client mid-conversation and a stuck one, both connected before the
            // shutdown starts.
            let mut polite = std::net::TcpStream::connect(addr).unwrap();
            let mut stuck = std::net::TcpStream::connect(addr).unwrap();
            polite.write_all(&1u64.to_le_bytes()).unwrap();
            let mut back = [0u8; 8];
            polite.read_exact(&mut back).unwrap();
            stuck.write_all(&[0xff; 8]).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            (polite, stuck)
        });
        let (mut polite, mut stuck) = runtime::spawn_blocking(move || clients.join().unwrap())
            .await
            .unwrap();
        let started = Instant::now();
        let shutdown = runtime::spawn_local(server.shutdown(Duration::from_millis(600)));
        let check = runtime::spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(100));
            // The listeners are gone.
            let refused = std::net::TcpStream::connect(addr);
            assert!(refused.is_err(), "a connect after shutdown was accepted");
            // The polite client still gets answers within the grace period, then leaves.
            for i in 2..10u64 {
                polite.write_all(&i.to_le_bytes()).unwrap();
                let mut back = [0u8; 8];
                polite.read_exact(&mut back).unwrap();
                assert_eq!(u64::from_le_bytes(back), i);
            }
            drop(polite);
            // The stuck handler is dropped at the deadline: its socket closes.
            stuck
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut rest = Vec::new();
            let n = stuck.read_to_end(&mut rest).unwrap_or(0);
            assert_eq!(n, 0);
        });
        shutdown.await.unwrap().unwrap();
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(550),
            "shutdown did not wait: {took:?}"
        );
        check.await.unwrap();
    });
}
