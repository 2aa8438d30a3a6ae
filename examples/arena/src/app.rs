//! The router: every profile's route on one axum `Router`, the same on both runtimes but for
//! what each runtime provides ([`AppState`]'s database, cache and WebSocket task, and the
//! static-file service).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tower::Service;
use tower_http::compression::CompressionLayer;

use crate::cache::Cache;
use crate::dataset::Dataset;
use crate::db::{self, Db};
use crate::{grpc, handlers, ws, SERVER};

/// What the handlers share (cloned per request: every field is cheap to clone).
#[derive(Debug)]
pub struct AppState<D> {
    /// The json profiles' items.
    pub dataset: Arc<Dataset>,
    /// PostgreSQL, if `DATABASE_URL` was set.
    pub db: Option<D>,
    /// crud's cache.
    pub cache: Cache,
    /// Starts a WebSocket's task on this runtime.
    pub ws: ws::Spawn,
}

impl<D: Clone> Clone for AppState<D> {
    fn clone(&self) -> Self {
        AppState {
            dataset: self.dataset.clone(),
            db: self.db.clone(),
            cache: self.cache.clone(),
            ws: self.ws,
        }
    }
}

/// The app: every route of the crate's docs on `state`, static files from `files` under
/// `/static/`, the gRPC service, and a `Server` header on every response.
pub fn router<D, F>(state: AppState<D>, files: F) -> Router
where
    D: Db,
    F: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    F::Response: IntoResponse,
    F::Future: Send + 'static,
{
    Router::new()
        .route("/baseline11", get(handlers::sum).post(handlers::sum_body))
        .route("/baseline2", get(handlers::sum))
        .route("/pipeline", get(handlers::pipeline))
        .route(
            "/json/{count}",
            // json-comp: compressed when the request's Accept-Encoding asks (gzip or br).
            get(handlers::json::<D>).layer(CompressionLayer::new()),
        )
        .route("/upload", post(handlers::upload))
        .route("/async-db", get(db::async_db::<D>))
        .route(
            "/crud/items",
            get(db::crud_list::<D>).post(db::crud_create::<D>),
        )
        .route(
            "/crud/items/{id}",
            get(db::crud_get::<D>).put(db::crud_update::<D>),
        )
        .route("/ws", get(ws::upgrade::<D>))
        .nest_service("/static", files)
        // Only the service's own paths: tonic's `Routes` would also answer every unknown
        // path with a gRPC `UNIMPLEMENTED` (HTTP 200) instead of axum's 404.
        .route_service(grpc::PATHS, grpc::server())
        .with_state(state)
        .layer(tower::util::MapResponseLayer::new(|mut res: Response| {
            res.headers_mut()
                .insert(header::SERVER, HeaderValue::from_static(SERVER));
            res
        }))
}
