//! The echo server from README.md, compiled with the tests so the README stays true.
//! Run: `cargo run -p corering-net --example readme_echo`, then `nc 127.0.0.1 7000`.

use corering_net::TcpListener;
use futures::StreamExt;

#[runtime::main]
async fn main() -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:7000")?;
    // One multishot IORING_OP_ACCEPT: connections arrive as a stream.
    let mut incoming = listener.incoming();
    while let Some(stream) = incoming.next().await {
        let stream = stream?;
        runtime::spawn_local(async move {
            let mut buf = vec![0u8; 4096].into_boxed_slice();
            loop {
                let (res, b) = stream.read_owned(buf).await;
                let n = match res {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let (res, b) = stream
                    .write_all_owned(runtime::buf::IoBuf::slice(b, ..n))
                    .await;
                buf = b.into_inner();
                if res.is_err() {
                    return;
                }
            }
        });
    }
    Ok(())
}
