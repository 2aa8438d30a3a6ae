//! The multi-core server from README.md, compiled with the tests so the README stays true.
//! Run: `cargo run -p corering-net --example readme_serve`; Ctrl-C stops it.

#[runtime::main(cores = 2)]
async fn main() -> std::io::Result<()> {
    // One SO_REUSEPORT listener and one multishot accept per core; each connection is
    // handled on the core that accepted it.
    let server = corering_net::serve(
        "127.0.0.1:8080",
        |stream: corering_net::TcpStream| async move {
            let (res, buf) = stream.read_owned(vec![0u8; 512].into_boxed_slice()).await;
            if let Ok(n) = res {
                let _ = stream
                    .write_all_owned(runtime::buf::IoBuf::slice(buf, ..n))
                    .await;
            }
        },
    )?;
    println!(
        "serving on {} with {} cores",
        server.local_addr(),
        server.cores()
    );
    runtime::signal::ctrl_c().await?;
    Ok(())
}
