//! `chat`: a WebSocket broadcast chat on every core (see the library's documentation).
//!
//! `cargo run --release -p chat -- --addr 127.0.0.1:9001 --cores 2`, then connect any
//! WebSocket client to `ws://127.0.0.1:9001/ws`: every text message goes to every client.
//! Ctrl-C or SIGTERM closes every socket with `1001 Going Away` and exits 0.

use std::io;
use std::net::SocketAddr;
use std::process::exit;
use std::time::Duration;

use chat::Chat;

const USAGE: &str = "\
chat: a WebSocket broadcast chat on io_uring, every core

usage: chat [--addr ADDR] [--cores N] [--grace SECS]

  --addr ADDR    address to listen on (default 127.0.0.1:9001; port 0 picks one)
  --cores N      cores to serve on, one thread and ring each (default 1)
  --grace SECS   on Ctrl-C or SIGTERM, how long sockets get to answer the close
                 (1001 Going Away) before they are dropped (default 5)
  -h, --help     this text

WebSocket at ws://ADDR/ws: each text message goes to every connected client.
";

/// The flags.
struct Opts {
    addr: SocketAddr,
    cores: usize,
    grace: Duration,
}

/// Prints `msg` and the usage to stderr and exits 2.
fn usage_error(msg: &str) -> ! {
    eprint!("chat: {msg}\n\n{USAGE}");
    exit(2);
}

fn parse() -> Opts {
    let mut opts = Opts {
        addr: SocketAddr::from(([127, 0, 0, 1], 9001)),
        cores: 1,
        grace: Duration::from_secs(5),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        if name == "-h" || name == "--help" {
            print!("{USAGE}");
            exit(0);
        }
        let value = inline
            .or_else(|| args.next())
            .unwrap_or_else(|| usage_error(&format!("{name} needs a value")));
        match name.as_str() {
            "--addr" => {
                opts.addr = value
                    .parse()
                    .unwrap_or_else(|e| usage_error(&format!("--addr {value}: {e}")))
            }
            "--cores" => {
                opts.cores = match value.parse() {
                    Ok(n) if n > 0 => n,
                    _ => usage_error(&format!("--cores {value}: a count of at least 1")),
                }
            }
            "--grace" => {
                opts.grace = value
                    .parse::<f64>()
                    .ok()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .unwrap_or_else(|| usage_error(&format!("--grace {value}: seconds")))
            }
            _ => usage_error(&format!("unknown flag {name}")),
        }
    }
    opts
}

fn main() -> io::Result<()> {
    let opts = parse();
    let rt = runtime::Builder::new().cores(opts.cores).build()?;
    rt.block_on(async {
        // Listen for the signals before binding: a SIGTERM as soon as the port is open is
        // already a graceful stop.
        let stop = runtime::signal::shutdown()?;
        let chat = Chat::serve(opts.addr)?;
        println!(
            "chat: listening on ws://{}/ws with {} core(s); Ctrl-C or SIGTERM stops",
            chat.local_addr(),
            chat.cores()
        );
        stop.await;
        println!("chat: stopping; closing every socket (1001 Going Away)");
        let all_closed = chat.shutdown(opts.grace).await?;
        if all_closed {
            println!("chat: every socket closed; bye");
        } else {
            println!(
                "chat: some sockets did not answer within {:?}; dropped",
                opts.grace
            );
        }
        Ok(())
    })
}
