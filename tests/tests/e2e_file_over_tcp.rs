//! A file written with `fs`, served over `net` by every core of a two-core runtime, read
//! back by clients on both cores, compared byte for byte.

use futures::future::join_all;

#[runtime::test(cores = 2)]
async fn file_served_over_tcp_by_every_core() {
    let dir = std::env::temp_dir().join(format!("e2e-file-over-tcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("payload.bin");
    let payload: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    corering_fs::write(&path, payload.clone()).await.unwrap();

    let served = path.clone();
    let server = corering_net::serve("127.0.0.1:0", move |stream: corering_net::TcpStream| {
        let served = served.clone();
        async move {
            let bytes = corering_fs::read(&served).await.unwrap();
            let (res, _) = stream.write_all_owned(bytes).await;
            res.unwrap();
        }
    })
    .unwrap();
    let addr = server.local_addr();

    // Clients on both cores, each reading the whole file.
    let clients = (0..8).map(|i| {
        runtime::spawn_on_local(i % 2, move || async move {
            let stream = corering_net::TcpStream::connect(addr).await.unwrap();
            let mut got = Vec::new();
            loop {
                let (res, buf) = stream.read_owned(Vec::with_capacity(64 * 1024)).await;
                match res.unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
            got
        })
    });
    for got in join_all(clients).await {
        assert!(got.unwrap() == payload, "a client got different bytes");
    }
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
