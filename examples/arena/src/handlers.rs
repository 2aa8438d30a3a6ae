//! The handlers without a database: baseline, pipelined, json and upload.

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;

use crate::app::AppState;
use crate::db::Db;
use crate::UPLOAD_LIMIT;

/// The query of `/baseline11` and `/baseline2`: two integers, 0 when missing.
#[derive(Debug, Deserialize)]
pub struct Sum {
    a: Option<i64>,
    b: Option<i64>,
}

impl Sum {
    fn value(&self) -> i64 {
        self.a.unwrap_or(0).wrapping_add(self.b.unwrap_or(0))
    }
}

/// A `text/plain` response.
pub fn text(body: impl Into<Body>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain")], body.into()).into_response()
}

/// `GET /baseline11` and `GET /baseline2`: `a + b`.
pub async fn sum(Query(q): Query<Sum>) -> Response {
    text(q.value().to_string())
}

/// `POST /baseline11`: `a + b` plus the body's integer (ignored when the body is not one).
pub async fn sum_body(Query(q): Query<Sum>, body: axum::body::Bytes) -> Response {
    let extra = std::str::from_utf8(&body)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(0);
    text(q.value().wrapping_add(extra).to_string())
}

/// `GET /pipeline`: `ok`.
pub async fn pipeline() -> Response {
    text("ok")
}

/// The query of `/json/{count}`: the multiplier, 1 when missing.
#[derive(Debug, Deserialize)]
pub struct Multiplier {
    m: Option<i64>,
}

/// `GET /json/{count}?m=`: the dataset's first `count` items priced with `m`, serialized
/// now.
pub async fn json<D: Db>(
    State(state): State<AppState<D>>,
    Path(count): Path<usize>,
    Query(q): Query<Multiplier>,
) -> Response {
    let body = state.dataset.priced_json(count, q.m.unwrap_or(1));
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `POST /upload`: the number of body bytes, counted as they arrive (nothing is kept). A
/// body over [`UPLOAD_LIMIT`] gets `413`: at once when its `Content-Length` says so,
/// otherwise when the count passes the limit.
pub async fn upload(headers: HeaderMap, req: Request) -> Response {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > UPLOAD_LIMIT as u64) {
        return too_large();
    }
    let mut frames = req.into_body().into_data_stream();
    let mut total = 0usize;
    while let Some(chunk) = frames.next().await {
        match chunk {
            Ok(bytes) => {
                total += bytes.len();
                if total > UPLOAD_LIMIT {
                    return too_large();
                }
            }
            Err(e) => return (StatusCode::BAD_REQUEST, format!("bad body: {e}\n")).into_response(),
        }
    }
    text(total.to_string())
}

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("upload limit is {UPLOAD_LIMIT} bytes\n"),
    )
        .into_response()
}
