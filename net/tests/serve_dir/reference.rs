//! The reference: tower-http 0.6's `ServeDir` (with `precompressed_br` and
//! `precompressed_gzip`, or none), on a tokio current-thread runtime on a thread of its
//! own, called directly (`oneshot`), no sockets.

use std::path::PathBuf;

use http_body_util::BodyExt;
use tower::ServiceExt;

use super::table::{Seen, Spec};

/// How both services are set up.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub precompressed: bool,
    pub append_index: bool,
}

/// tower-http's answers to `specs`, in order.
pub fn answers(root: PathBuf, setup: Setup, specs: Vec<Spec>) -> Vec<Seen> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut svc = tower_http::services::ServeDir::new(root)
            .append_index_html_on_directories(setup.append_index);
        if setup.precompressed {
            svc = svc.precompressed_br().precompressed_gzip();
        }
        rt.block_on(async move {
            let mut out = Vec::with_capacity(specs.len());
            for spec in &specs {
                let res = svc.clone().oneshot(spec.request::<()>()).await.unwrap();
                let (parts, body) = res.into_parts();
                let body = body.collect().await.unwrap().to_bytes();
                out.push(Seen::of(&http::Response::from_parts(parts, ()), body));
            }
            out
        })
    })
    .join()
    .unwrap()
}
