//! A TCP port scanner, written for tokio and ported to this runtime (the diff is in
//! docs/coming-from-tokio.md): it resolves the host (DNS on the blocking pool), connects to
//! every port at once with a deadline each (a `JoinSet`), names the open ports from the
//! system's services database (`getservbyport`, a blocking call: `spawn_blocking`), prints
//! the kernel it runs on (a child process, `uname -sr`), and stops early on Ctrl-C or
//! SIGTERM.
//!
//! `cargo run --release -p examples --bin port-scan -- localhost 22 80 8080`

use std::net::SocketAddr;
use std::time::Duration;

use corering_net::{lookup_host, TcpStream};
use examples::args::Args;
use runtime::process::Command;
use runtime::signal::unix::{signal, SignalKind};
use runtime::task::JoinSet;
use runtime::time::timeout;

const USAGE: &str = "\
port-scan: which TCP ports of a host accept connections

usage: port-scan [--timeout-ms MS] HOST PORT...

  --timeout-ms MS   how long each connect may take (default 500)
  -h, --help        this text

Exits 0 when the scan completes (open or not), 1 on an error, 130 if interrupted.
";

#[runtime::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse(USAGE, &["timeout-ms"], &[]);
    let deadline = Duration::from_millis(args.value("timeout-ms", 500u64));
    let Some((host, ports)) = args.positional().split_first() else {
        args.usage_error("a host and at least one port are needed");
    };
    let ports: Vec<u16> = ports
        .iter()
        .map(|p| {
            p.parse()
                .unwrap_or_else(|e| args.usage_error(format!("port {p}: {e}")))
        })
        .collect();
    if ports.is_empty() {
        args.usage_error("at least one port is needed");
    }

    let uname = Command::new("uname").arg("-sr").output().await?;
    print!("scanning from {}", String::from_utf8_lossy(&uname.stdout));

    let ip = lookup_host((host.as_str(), 0))
        .await?
        .next()
        .map(|a| a.ip())
        .expect("lookup_host gives at least one address");
    println!("{host} is {ip}");

    let mut scans = JoinSet::new();
    for port in ports {
        let addr = SocketAddr::new(ip, port);
        // spawn_local: a socket (and so its connect future) stays on its core.
        scans.spawn_local(async move {
            let open = matches!(timeout(deadline, TcpStream::connect(addr)).await, Ok(Ok(_)));
            (port, open)
        });
    }

    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    loop {
        // The next scan to finish, unless a signal comes first.
        let next = {
            let scan = Box::pin(scans.join_next());
            let stop = Box::pin(async {
                let (int, term) = (Box::pin(interrupt.recv()), Box::pin(terminate.recv()));
                futures::future::select(int, term).await;
            });
            match futures::future::select(scan, stop).await {
                futures::future::Either::Left((next, _)) => next,
                futures::future::Either::Right(_) => {
                    eprintln!("interrupted");
                    std::process::exit(130);
                }
            }
        };
        let Some(res) = next else {
            return Ok(());
        };
        let (port, open) = res.map_err(std::io::Error::from)?;
        if open {
            let name = runtime::spawn_blocking(move || service_name(port)).await?;
            println!("{port}/tcp open {}", name.as_deref().unwrap_or("unknown"));
        } else {
            println!("{port}/tcp closed");
        }
    }
}

/// The service the system's database names for `port` (`getservbyport(3)`: it reads
/// `/etc/services` or asks NSS, so it may block: it runs on the blocking pool).
fn service_name(port: u16) -> Option<String> {
    let proto = c"tcp";
    // SAFETY: getservbyport takes the port in network order and a NUL-terminated protocol
    // name; the result points to static storage, read before any other call on this
    // thread (the pool thread makes no other such call meanwhile).
    let ent = unsafe { libc::getservbyport(i32::from(port.to_be()), proto.as_ptr()) };
    if ent.is_null() {
        return None;
    }
    // SAFETY: a non-null servent has a NUL-terminated `s_name`.
    let name = unsafe { std::ffi::CStr::from_ptr((*ent).s_name) };
    Some(name.to_string_lossy().into_owned())
}
