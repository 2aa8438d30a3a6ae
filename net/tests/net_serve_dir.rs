//! `corering_net::hyper::ServeDir`: static files through ring ops.
//!
//! - `answers_as_tower_http_does`: ~300 requests (paths, escapes, methods, ranges,
//!   encodings, dates, GET and HEAD) made of ours and of tower-http 0.6's `ServeDir` on tokio;
//!   same status, headers (type, encoding, length, range, dates, location) and bytes; on the
//!   default backend and on epoll.
//! - `differs_where_documented`: symlinks out of the root, `%00` in a `HEAD`, `ETag` and its
//!   conditions, `Vary`.
//! - `whole_files_are_one_frame_larger_ones_are_chunks`: the body's frames, and the fds.
//! - `a_body_dropped_mid_file_leaks_nothing`: bodies and futures dropped with reads and
//!   opens in flight; fds back to their baseline.
//! - `served_over_sockets`: `corering_net::hyper::serve` on two cores, HTTP/1.1 and h2c
//!   clients fetching hundreds of random files and ranges concurrently, every byte checked,
//!   some bodies dropped mid-file; then fds back to their baseline.
//! - `axum_mounts_it`: `Router::nest_service("/static", ServeDir::new(..))`.
//! - `out_of_descriptors_waits_then_503`: `EMFILE` under load waits for a descriptor, then
//!   503.

mod common;
mod serve_dir;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use corering_net::hyper::{serve, Client, ServeDir, ServeDirBody};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use runtime::ext::testing::open_fds;
use tower::ServiceExt;

use common::backend::on_each_backend;

use serve_dir::reference::{self, Setup};
use serve_dir::table::{self, Seen, Spec};
use serve_dir::tree::{Rng, Tree, LAST_MODIFIED};

/// Every test counts the process's fds (or opens them): one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Our answers to `specs`, called directly.
async fn ours(svc: &ServeDir, specs: &[Spec]) -> Vec<Seen> {
    let mut out = Vec::with_capacity(specs.len());
    for spec in specs {
        let res = svc.clone().oneshot(spec.request::<()>()).await.unwrap();
        let (parts, body) = res.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        out.push(Seen::of(&Response::from_parts(parts, ()), body));
    }
    out
}

/// The responses that carry a file's validators: ours adds `ETag` (and `Vary` when
/// precompressed variants are looked for) to exactly these.
fn is_file_response(seen: &Seen) -> bool {
    matches!(seen.status, 200 | 206 | 304) || (seen.status == 416)
}

/// One service set-up, compared request by request.
fn compare(tree: &Tree, setup: Setup, specs: Vec<Spec>, rt: &runtime::Runtime) {
    let expected = reference::answers(tree.root.clone(), setup, specs.clone());
    let mut svc = ServeDir::new(&tree.root).append_index_html_on_directories(setup.append_index);
    if setup.precompressed {
        svc = svc.precompressed_br().precompressed_gzip();
    }
    let seen = rt.block_on(ours(&svc, &specs));
    let mut failures = Vec::new();
    for ((spec, theirs), ours) in specs.iter().zip(&expected).zip(&seen) {
        if let Some(d) = ours.diff(theirs) {
            failures.push(format!(
                "{} {} {:?}: ours vs tower-http: {d}",
                spec.method, spec.uri, spec.headers
            ));
        }
        let file = is_file_response(ours);
        if ours.etag.is_some() != file {
            failures.push(format!(
                "{} {}: ETag {:?} on a {}",
                spec.method, spec.uri, ours.etag, ours.status
            ));
        }
        let vary = (file && setup.precompressed).then(|| "accept-encoding".to_owned());
        if ours.vary != vary {
            failures.push(format!(
                "{} {}: Vary {:?} on a {}",
                spec.method, spec.uri, ours.vary, ours.status
            ));
        }
        // tower-http 0.6 sends neither.
        assert_eq!((&theirs.etag, &theirs.vary), (&None, &None));
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        specs.len(),
        failures.join("\n")
    );
}

/// This process's open fds once they are back to `before`, or after 5 s: a file whose open
/// ran on the blocking pool (the epoll backend's file ops) for a future dropped meanwhile is
/// closed when that job ends, which a loaded machine may delay (seen in CI: one fd over).
fn fds_after(rt: &runtime::Runtime, before: usize) -> usize {
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(5);
        while open_fds() != before && Instant::now() < deadline {
            runtime::time::sleep(Duration::from_millis(5)).await;
        }
        open_fds()
    })
}

#[test]
fn answers_as_tower_http_does() {
    let _serial = serial();
    let tree = Tree::new("differential", 1);
    let specs = table::differential();
    assert!(specs.len() > 300, "{}", specs.len());
    let plain: Vec<Spec> = ["/", "/sub", "/sub/", "/nodex/", "/hello.txt", "/big.bin"]
        .iter()
        .flat_map(|p| {
            [
                Spec::get(*p),
                Spec::head(*p),
                Spec::get(*p).with("accept-encoding", "gzip, br"),
            ]
        })
        .collect();
    on_each_backend(|rt| {
        let before = open_fds();
        let full = Setup {
            precompressed: true,
            append_index: true,
        };
        compare(&tree, full, specs.clone(), rt);
        let bare = Setup {
            precompressed: false,
            append_index: false,
        };
        compare(&tree, bare, plain.clone(), rt);
        assert_eq!(fds_after(rt, before), before);
    });
}

#[test]
fn differs_where_documented() {
    let _serial = serial();
    let tree = Tree::new("differs", 2);
    // Symlinks out of the root: tower-http follows them, ours refuses them.
    let escapes = [
        "/escape.txt",
        "/abs-escape.txt",
        "/abs-inside.txt",
        "/up/outside.txt",
    ];
    let specs: Vec<Spec> = escapes.iter().map(|p| Spec::get(*p)).collect();
    let setup = Setup {
        precompressed: true,
        append_index: true,
    };
    let theirs = reference::answers(tree.root.clone(), setup, specs.clone());
    for (spec, t) in specs.iter().zip(&theirs) {
        assert_eq!(t.status, 200, "tower-http follows {}", spec.uri);
    }
    let head_nul = reference::answers(tree.root.clone(), setup, vec![Spec::head("/%00")]);
    assert_eq!(head_nul[0].status, 500);

    on_each_backend(|rt| {
        let svc = ServeDir::new(&tree.root)
            .precompressed_br()
            .precompressed_gzip();
        rt.block_on(async {
            let mut refused = specs.clone();
            refused.extend([
                Spec::get("/magic.txt"),
                Spec::head("/%00"),
                Spec::head("/escape.txt"),
            ]);
            for (spec, seen) in refused.iter().zip(ours(&svc, &refused).await) {
                assert_eq!(seen.status, 404, "{spec:?}");
                assert_eq!(
                    (seen.etag, seen.vary, seen.body.len()),
                    (None, None, 0),
                    "{spec:?}"
                );
            }
            // Inside the root, a relative symlink is followed.
            let seen = &ours(&svc, &[Spec::get("/link.txt")]).await[0];
            assert_eq!(
                (seen.status, &seen.body[..]),
                (200, tree.bytes("sub/deep/file.txt"))
            );

            let first = &ours(&svc, &[Spec::get("/hello.txt")]).await[0];
            let etag = first.etag.clone().unwrap();
            assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
            assert_eq!(first.vary.as_deref(), Some("accept-encoding"));
            let gz = &ours(
                &svc,
                &[Spec::get("/hello.txt").with("accept-encoding", "gzip")],
            )
            .await[0];
            assert_ne!(
                gz.etag.as_ref(),
                Some(&etag),
                "a variant has a tag of its own"
            );
            let weak = format!("W/{etag}");
            let cases = [
                (Spec::get("/hello.txt").with("if-none-match", &etag), 304),
                (Spec::head("/hello.txt").with("if-none-match", &etag), 304),
                (Spec::get("/hello.txt").with("if-none-match", &weak), 304),
                (
                    Spec::get("/hello.txt").with("if-none-match", format!("\"x\", {etag}")),
                    304,
                ),
                (Spec::get("/hello.txt").with("if-none-match", "*"), 304),
                (
                    Spec::get("/hello.txt").with("if-none-match", "\"other\""),
                    200,
                ),
                // If-None-Match wins over If-Modified-Since.
                (
                    Spec::get("/hello.txt")
                        .with("if-none-match", "\"other\"")
                        .with("if-modified-since", LAST_MODIFIED),
                    200,
                ),
                (Spec::get("/hello.txt").with("if-match", &etag), 200),
                (Spec::get("/hello.txt").with("if-match", &weak), 412),
                (Spec::get("/hello.txt").with("if-match", "\"other\""), 412),
                (Spec::get("/missing.txt").with("if-none-match", "*"), 404),
                (
                    Spec::get("/hello.txt")
                        .with("range", "bytes=0-9")
                        .with("if-range", &etag),
                    206,
                ),
                (
                    Spec::get("/hello.txt")
                        .with("range", "bytes=0-9")
                        .with("if-range", "\"old\""),
                    200,
                ),
                (
                    Spec::get("/hello.txt")
                        .with("range", "bytes=0-9")
                        .with("if-range", LAST_MODIFIED),
                    206,
                ),
                (
                    Spec::get("/hello.txt")
                        .with("range", "bytes=0-9")
                        .with("if-range", "Thu, 01 Jan 2015 00:00:00 GMT"),
                    200,
                ),
            ];
            for (spec, status) in cases {
                let seen = &ours(&svc, std::slice::from_ref(&spec)).await[0];
                assert_eq!(seen.status, status, "{spec:?}");
                match status {
                    304 => {
                        assert_eq!(seen.etag.as_ref(), Some(&etag), "{spec:?}");
                        assert_eq!(seen.vary.as_deref(), Some("accept-encoding"));
                        assert!(seen.body.is_empty() && seen.header("last-modified").is_none());
                    }
                    200 => assert_eq!(&seen.body[..], tree.bytes("hello.txt"), "{spec:?}"),
                    206 => assert_eq!(&seen.body[..], &tree.bytes("hello.txt")[..10]),
                    _ => assert!(seen.etag.is_none(), "{spec:?}"),
                }
            }
        });
    });
}

/// The frames of `res`'s body: their sizes.
async fn frames(res: Response<ServeDirBody>) -> (Vec<usize>, Vec<u8>) {
    let mut body = res.into_body();
    let mut sizes = Vec::new();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let data = frame.unwrap().into_data().unwrap();
        sizes.push(data.len());
        bytes.extend_from_slice(&data);
    }
    (sizes, bytes)
}

#[test]
fn whole_files_are_one_frame_larger_ones_are_chunks() {
    let _serial = serial();
    let tree = Tree::new("frames", 3);
    assert_eq!(corering_net::hyper::WHOLE_FILE_MAX, 1 << 20);
    on_each_backend(|rt| {
        let before = open_fds();
        rt.block_on(async {
            let svc = ServeDir::new(&tree.root);
            let get = |uri: &str| svc.clone().oneshot(Spec::get(uri).request::<()>());
            let (sizes, bytes) = frames(get("/mid.bin").await.unwrap()).await;
            assert_eq!((sizes, &bytes[..]), (vec![1 << 20], tree.bytes("mid.bin")));
            let (sizes, bytes) = frames(get("/mid1.bin").await.unwrap()).await;
            assert_eq!(sizes, [256 << 10, 256 << 10, 256 << 10, 256 << 10, 1]);
            assert_eq!(&bytes[..], tree.bytes("mid1.bin"));
            let (sizes, _) = frames(get("/empty.txt").await.unwrap()).await;
            assert!(sizes.iter().all(|&n| n == 0));

            let svc = ServeDir::new(&tree.root).with_buf_chunk_size(1_000_000);
            let res = svc.oneshot(
                Spec::get("/big.bin")
                    .with("range", "bytes=10-2100009")
                    .request::<()>(),
            );
            let res = res.await.unwrap();
            assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT);
            let (sizes, bytes) = frames(res).await;
            assert_eq!(sizes, [1_000_000, 1_000_000, 100_000]);
            assert_eq!(&bytes[..], &tree.bytes("big.bin")[10..2_100_010]);
        });
        assert_eq!(fds_after(rt, before), before);
    });
}

/// Polls `fut` once (with a no-op waker).
fn poll_once<F: std::future::Future + Unpin>(fut: &mut F) -> std::task::Poll<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::Pin::new(fut).poll(&mut cx)
}

#[test]
fn a_body_dropped_mid_file_leaks_nothing() {
    let _serial = serial();
    let tree = Tree::new("dropped", 4);
    on_each_backend(|rt| {
        let before = open_fds();
        rt.block_on(async {
            let svc = ServeDir::new(&tree.root).precompressed_gzip();
            for i in 0..50u64 {
                let res = svc
                    .clone()
                    .oneshot(Spec::get("/big.bin").request::<()>())
                    .await
                    .unwrap();
                let mut body = res.into_body();
                // Frames read before the drop: none, one, or a few; the next read in flight.
                for _ in 0..i % 3 {
                    body.frame().await.unwrap().unwrap();
                }
                let mut next = Box::pin(body.frame());
                assert!(poll_once(&mut next).is_pending());
                drop(next);
                drop(body);
                // A response future dropped in its open, statx or read.
                let mut fut = svc.clone().oneshot(Spec::get("/mid.bin").request::<()>());
                for _ in 0..i % 4 {
                    let _ = poll_once(&mut fut);
                    runtime::task::yield_now().await;
                }
                drop(fut);
            }
            drop(svc);
            let deadline = Instant::now() + Duration::from_secs(5);
            while open_fds() != before && Instant::now() < deadline {
                runtime::time::sleep(Duration::from_millis(5)).await;
            }
        });
        assert_eq!(open_fds(), before, "fds left open after dropped bodies");
    });
}

/// What a request of the socket test expects: the file and the range asked for.
struct Want {
    rel: String,
    range: Option<(usize, usize)>,
    /// Drop the body after its first frame.
    drop_early: bool,
}

#[test]
fn served_over_sockets() {
    let _serial = serial();
    let tree = Tree::new("sockets", 5);
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    let mut rng = Rng::new(99);
    let names: Vec<String> = tree
        .files
        .keys()
        .filter(|k| k.starts_with("rand/"))
        .cloned()
        .collect();
    let mut wants = Vec::new();
    for i in 0..400 {
        let rel = if i % 10 == 0 {
            "big.bin".to_owned()
        } else {
            names[rng.below(names.len() as u64) as usize].clone()
        };
        let len = tree.bytes(&rel).len();
        let range = (i % 4 == 1 && len > 0).then(|| {
            let a = rng.below(len as u64) as usize;
            let b = a + rng.below((len - a) as u64) as usize;
            (a, b)
        });
        wants.push(Want {
            rel,
            range,
            drop_early: i % 7 == 3 && len > (1 << 20),
        });
    }
    let tree = &tree;
    rt.block_on(async move {
        let before = open_fds();
        let server = serve("127.0.0.1:0", ServeDir::new(&tree.root)).unwrap();
        let addr = server.local_addr();
        let h1 = Client::<Empty<Bytes>>::new();
        let h2 = Client::builder()
            .http2_prior_knowledge(true)
            .build::<Empty<Bytes>>();
        for wave in wants.chunks(50) {
            let fetches = wave.iter().enumerate().map(|(i, want)| {
                let client = if i % 2 == 0 { h1.clone() } else { h2.clone() };
                async move {
                    let mut req = Request::get(format!("http://{addr}/{}", want.rel));
                    if let Some((a, b)) = want.range {
                        req = req.header("range", format!("bytes={a}-{b}"));
                    }
                    let res = client
                        .request(req.body(Empty::new()).unwrap())
                        .await
                        .unwrap();
                    let all = tree.bytes(&want.rel);
                    let expected = match want.range {
                        Some((a, b)) => {
                            assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT);
                            &all[a..=b]
                        }
                        None => {
                            assert_eq!(res.status(), StatusCode::OK);
                            all
                        }
                    };
                    let mut body = res.into_body();
                    if want.drop_early {
                        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
                        assert_eq!(&first[..], &expected[..first.len()]);
                        return;
                    }
                    let got = body.collect().await.unwrap().to_bytes();
                    assert!(
                        got[..] == expected[..],
                        "{}: {:?}: {} bytes, {} expected",
                        want.rel,
                        want.range,
                        got.len(),
                        expected.len()
                    );
                }
            });
            futures::future::join_all(fetches).await;
        }
        server.shutdown(Duration::from_secs(2)).await.unwrap();
        drop((h1, h2));
        let deadline = Instant::now() + Duration::from_secs(5);
        while open_fds() != before && Instant::now() < deadline {
            runtime::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(open_fds(), before, "fds left open after the server");
    });
}

#[test]
fn axum_mounts_it() {
    let _serial = serial();
    fn send_sync<T: Send + Sync + Clone + 'static>(_: &T) {}
    fn send<T: Send + 'static>(_: &T) {}
    let tree = Tree::new("axum", 6);
    let svc = ServeDir::new(&tree.root).precompressed_gzip();
    send_sync(&svc);
    let fut = svc.clone().oneshot(Spec::get("/hello.txt").request::<()>());
    send(&fut);
    drop(fut);
    let app = axum::Router::new().nest_service("/static", svc);
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = serve("127.0.0.1:0", app).unwrap();
        let client = Client::<Empty<Bytes>>::new();
        let uri = format!("http://{}/static/hello.txt", server.local_addr());
        let res = client.get(uri.parse().unwrap()).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["content-type"], "text/plain");
        assert_eq!(res.headers()["last-modified"], LAST_MODIFIED);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], tree.bytes("hello.txt"));
        let uri = format!("http://{}/static/big.bin", server.local_addr());
        let res = client.get(uri.parse().unwrap()).await.unwrap();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert!(body[..] == tree.bytes("big.bin")[..]);
        server.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}

/// Sets the soft `RLIMIT_NOFILE` to `soft` (the hard limit unchanged); the old soft limit.
fn set_nofile(soft: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on a live, initialised rlimit.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        let old = lim.rlim_cur;
        lim.rlim_cur = soft;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        old
    }
}

/// With no descriptor left (thousands of responses in flight each holding one), a request
/// waits for one to come free instead of failing; one that finds none within the wait gets
/// 503 (tower-http answers such an error 500). Both backends.
#[test]
fn out_of_descriptors_waits_then_503() {
    let _serial = serial();
    let tree = Tree::new("nofile", 5);
    on_each_backend(|rt| {
        rt.block_on(async {
            let svc = ServeDir::new(&tree.root);
            let get = |uri: &str| svc.clone().oneshot(Spec::get(uri).request::<()>());
            // The root's descriptor, opened by a first request.
            assert_eq!(get("/empty.txt").await.unwrap().status(), StatusCode::OK);
            // Every descriptor below a limit taken: the next open is EMFILE.
            let old = set_nofile(open_fds() as u64 + 16);
            let mut fill = Vec::new();
            while let Ok(f) = std::fs::File::open("/dev/null") {
                fill.push(f);
            }
            // A request waits, and is served once a descriptor comes free.
            let waiting = runtime::spawn_local({
                let svc = svc.clone();
                async move {
                    let res = svc
                        .oneshot(Spec::get("/mid.bin").request::<()>())
                        .await
                        .unwrap();
                    let status = res.status();
                    (status, res.into_body().collect().await.unwrap().to_bytes())
                }
            });
            runtime::time::sleep(Duration::from_millis(100)).await;
            fill.pop();
            let (status, bytes) = waiting.await.unwrap();
            assert_eq!(status, StatusCode::OK);
            assert_eq!(&bytes[..], tree.bytes("mid.bin"));
            // None comes free: 503 after the wait.
            while let Ok(f) = std::fs::File::open("/dev/null") {
                fill.push(f);
            }
            let started = Instant::now();
            let res = get("/mid.bin").await.unwrap();
            assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert!(
                started.elapsed() >= Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
            drop(fill);
            set_nofile(old);
            assert_eq!(get("/empty.txt").await.unwrap().status(), StatusCode::OK);
        });
    });
}
