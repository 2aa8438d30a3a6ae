//! A multi-core TCP echo server: one `SO_REUSEPORT` listener per core, each with its own
//! multishot `incoming()` stream; every connection stays on the core that accepted it.
//!
//! `cargo run --release -p examples --bin echo -- --port 7000 --cores 2`, then
//! `nc 127.0.0.1 7000`. Ctrl-C stops it.

use std::io;
use std::net::SocketAddr;

use corering_net::{ListenOptions, TcpListener, TcpStream};
use examples::args::Args;
use futures::StreamExt;

const USAGE: &str = "\
echo: a multi-core TCP echo server on io_uring

usage: echo [--host ADDR] [--port PORT] [--cores N]

  --host ADDR   address to listen on (default 127.0.0.1)
  --port PORT   port to listen on; 0 picks one (default 7000)
  --cores N     cores to serve on, one thread and ring each (default 1)
  -h, --help    this text
";

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE, &["host", "port", "cores"], &[]);
    let host: std::net::IpAddr = args.value("host", [127, 0, 0, 1].into());
    let addr = SocketAddr::new(host, args.value("port", 7000));
    let cores = args.value("cores", 1usize);
    examples::run(cores, serve(addr, cores))
}

async fn serve(addr: SocketAddr, cores: usize) -> io::Result<()> {
    // Bind every core's listener here, so a bad address fails before anything runs.
    // Accepted sockets inherit TCP_NODELAY from the listener: no option call per connection.
    let options = ListenOptions::new().reuse_port(true).nodelay(true);
    let first = TcpListener::bind_with(addr, &options)?;
    let addr = first.local_addr()?;
    let mut listeners = vec![first.into_std()?];
    for _ in 1..cores {
        listeners.push(TcpListener::bind_with(addr, &options)?.into_std()?);
    }
    let mut loops: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(core, l)| runtime::spawn_on_local(core, move || accept_loop(l)))
        .collect();
    println!("echo: listening on {addr} with {cores} core(s); Ctrl-C stops");
    let result = examples::until_ctrl_c(async {
        // The accept loops end only on an error.
        for handle in loops.iter_mut() {
            handle.await.map_err(io::Error::from)??;
        }
        Ok(())
    })
    .await;
    for handle in &loops {
        handle.abort();
    }
    result
}

async fn accept_loop(listener: std::net::TcpListener) -> io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    let mut incoming = listener.incoming();
    while let Some(stream) = incoming.next().await {
        match stream {
            Ok(stream) => drop(runtime::spawn_local(echo(stream))),
            // Out of fds: the stream backs off and goes on.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                eprintln!("echo: accept: {e}");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Echoes each received chunk back as it is: the chunk is a buffer of the core's shared
/// receive ring, so an idle connection holds no buffer and nothing is copied. `write_chunk`
/// only starts the send (the next one waits for it), so the task wakes once per message.
async fn echo(mut stream: TcpStream) {
    loop {
        let chunk = match stream.read_chunk().await {
            Ok(chunk) if !chunk.is_empty() => chunk,
            _ => break,
        };
        if stream.write_chunk(chunk).await.is_err() {
            return;
        }
    }
    // Send what is still in flight before the socket is dropped.
    let _ = futures::AsyncWriteExt::flush(&mut stream).await;
}
