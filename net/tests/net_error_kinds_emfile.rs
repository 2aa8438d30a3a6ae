//! `EMFILE` on accept and connect against std, TCP and Unix: with every fd below the
//! process' limit taken, std's accept and connect fail with the kind of `EMFILE`, and so do
//! ours. A TCP connection accepted into the fixed-file table (direct descriptors) takes no
//! fd, so there our accept succeeds, as documented, and asking it for an fd (`into_std`)
//! fails as std's accept did.
//!
//! Lowering `RLIMIT_NOFILE` affects the whole process, so this binary has one test that does
//! everything in order, and gives the limit back before it returns.

use std::io;
use std::os::unix::net as unet;

use corering_net::{TcpListener, TcpStream, UnixListener, UnixStream};
use runtime::Builder;

mod common;
use common::fds::Exhausted;

fn kind<T>(r: io::Result<T>) -> Option<io::ErrorKind> {
    r.err().map(|e| e.kind())
}

#[test]
fn emfile_on_accept_and_connect_is_std_s() {
    let emfile = Some(io::Error::from_raw_os_error(libc::EMFILE).kind());
    let rt = Builder::new().build().unwrap();
    let direct = rt.features().direct_descriptors && rt.features().fixed_fd_install;
    rt.block_on(async {
        // Listeners, and a client waiting in each backlog, made before the fds run out.
        let std_tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let our_tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp_addr = std_tcp.local_addr().unwrap();
        let _c1 = std::net::TcpStream::connect(tcp_addr).unwrap();
        let _c2 = std::net::TcpStream::connect(our_tcp.local_addr().unwrap()).unwrap();
        let dir = std::env::temp_dir().join(format!("corering-emfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (p1, p2) = (dir.join("std.sock"), dir.join("ours.sock"));
        let std_unix = unet::UnixListener::bind(&p1).unwrap();
        let our_unix = UnixListener::bind(&p2).unwrap();
        let _c3 = unet::UnixStream::connect(&p1).unwrap();
        let _c4 = unet::UnixStream::connect(&p2).unwrap();

        let full = Exhausted::new();
        let std_accept = kind(std_tcp.accept());
        assert_eq!(std_accept, emfile, "std's TCP accept");
        let ours = our_tcp.accept().await;
        if direct {
            // A direct descriptor takes no fd; an fd asked of it is EMFILE, as std's accept.
            let (s, _) = ours.expect("accepted into the fixed-file table, no fd taken");
            assert_eq!(
                kind(s.into_std()),
                std_accept,
                "TCP into_std, fds exhausted"
            );
        } else {
            assert_eq!(kind(ours), std_accept, "TCP accept");
        }
        let std_connect = kind(std::net::TcpStream::connect(tcp_addr));
        assert_eq!(std_connect, emfile, "std's TCP connect");
        assert_eq!(
            kind(TcpStream::connect(tcp_addr).await),
            std_connect,
            "TCP connect"
        );

        let std_accept = kind(std_unix.accept());
        assert_eq!(std_accept, emfile, "std's Unix accept");
        assert_eq!(kind(our_unix.accept().await), std_accept, "Unix accept");
        let std_connect = kind(unet::UnixStream::connect(&p1));
        assert_eq!(std_connect, emfile, "std's Unix connect");
        assert_eq!(
            kind(UnixStream::connect(&p1).await),
            std_connect,
            "Unix connect"
        );
        drop(full);
        std::fs::remove_dir_all(&dir).unwrap();
    });
}
