//! The PostgreSQL routes: async-db's price range query and crud's list, cached read, upsert
//! and update, on tokio-postgres. Where the connections come from is the runtime's business
//! ([`Db`]): this runtime's per-core [`Pool`], or `arena-tokio`'s clients.
//!
//! A database error is a `500` with a short text body; a request that finds no database
//! configured gets `503`. Nothing panics.

use std::future::Future;
use std::io;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use corering_net::postgres::{to_io_error, Pool, Pooled};
use serde::{Deserialize, Serialize};
use tokio_postgres::{Client, Row, Statement};

use crate::app::AppState;

/// The columns every item query reads, in [`DbItem::from_row`]'s order.
const COLUMNS: &str =
    "id, name, category, price, quantity, active, tags, rating_score, rating_count";

/// The prepared statements of one connection.
#[derive(Debug, Clone)]
pub struct Statements {
    range: Statement,
    list: Statement,
    one: Statement,
    upsert: Statement,
    update: Statement,
}

impl Statements {
    /// Prepares the statements on `client`.
    ///
    /// # Errors
    /// The server's error for a statement (no `items` table, say).
    pub async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            range: client
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM items WHERE price BETWEEN $1 AND $2 LIMIT $3"
                ))
                .await?,
            list: client
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM items WHERE category = $1 ORDER BY id LIMIT $2 OFFSET $3"
                ))
                .await?,
            one: client
                .prepare(&format!("SELECT {COLUMNS} FROM items WHERE id = $1"))
                .await?,
            upsert: client
                .prepare(
                    "INSERT INTO items (id, name, category, price, quantity, active, tags, \
                     rating_score, rating_count) VALUES ($1, $2, $3, $4, $5, true, '[\"bench\"]', 0, 0) \
                     ON CONFLICT (id) DO UPDATE SET name = $2, price = $4, quantity = $5 \
                     RETURNING id",
                )
                .await?,
            update: client
                .prepare("UPDATE items SET name = $1, price = $2, quantity = $3 WHERE id = $4")
                .await?,
        })
    }
}

/// A connection with its statements, as a [`Db`] hands it out.
pub trait DbConn: Send + Sync + 'static {
    /// The client.
    fn client(&self) -> &Client;
    /// Its prepared statements.
    fn statements(&self) -> &Statements;
}

impl DbConn for Pooled<Statements> {
    fn client(&self) -> &Client {
        Pooled::client(self)
    }

    fn statements(&self) -> &Statements {
        self.state()
    }
}

/// Where the handlers get a connection: this runtime's [`Pool`], or tokio's clients in
/// `arena-tokio`.
pub trait Db: Clone + Send + Sync + 'static {
    /// The connection type.
    type Conn: DbConn;
    /// A connection for one request.
    fn conn(&self) -> impl Future<Output = io::Result<Arc<Self::Conn>>> + Send;
}

impl Db for Pool<Statements> {
    type Conn = Pooled<Statements>;

    fn conn(&self) -> impl Future<Output = io::Result<Arc<Pooled<Statements>>>> + Send {
        self.get()
    }
}

/// A [`Pool`] of `size` connections to `config` with their [`Statements`]: connections are
/// opened as requests need them, and one that fails is reopened by the next request that
/// needs it, so the server starts (and serves everything else) with the database down, and
/// its database routes recover when it comes back.
pub fn pool(config: tokio_postgres::Config, size: usize) -> Pool<Statements> {
    Pool::builder(config)
        .size(size)
        .setup(|client| {
            Box::pin(async move {
                Statements::prepare(client)
                    .await
                    .map_err(|e| to_io_error(e, "preparing the statements"))
            })
        })
        .build()
}

/// An item as the database routes answer it (rating nested, as HttpArena asks).
#[derive(Debug, Clone, Serialize)]
pub struct DbItem {
    id: i32,
    name: String,
    category: String,
    price: i32,
    quantity: i32,
    active: bool,
    tags: serde_json::Value,
    rating: DbRating,
}

/// An item's rating.
#[derive(Debug, Clone, Copy, Serialize)]
struct DbRating {
    score: i32,
    count: i32,
}

impl DbItem {
    fn from_row(row: &Row) -> Result<DbItem, tokio_postgres::Error> {
        Ok(DbItem {
            id: row.try_get(0)?,
            name: row.try_get(1)?,
            category: row.try_get(2)?,
            price: row.try_get(3)?,
            quantity: row.try_get(4)?,
            active: row.try_get(5)?,
            tags: row.try_get(6)?,
            rating: DbRating {
                score: row.try_get(7)?,
                count: row.try_get(8)?,
            },
        })
    }

    fn from_rows(rows: &[Row]) -> Result<Vec<DbItem>, tokio_postgres::Error> {
        rows.iter().map(DbItem::from_row).collect()
    }
}

/// A database failure: `500` with a short text body.
fn db_error(e: impl std::fmt::Display) -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/plain")],
        format!("database error: {e}\n"),
    )
        .into_response()
}

/// No `DATABASE_URL`: `503`.
fn no_database() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "text/plain")],
        "no database configured (DATABASE_URL)\n",
    )
        .into_response()
}

/// A connection of `state`'s database, or the response that says why there is none.
async fn conn<D: Db>(state: &AppState<D>) -> Result<Arc<D::Conn>, Response> {
    match &state.db {
        Some(db) => db.conn().await.map_err(db_error),
        None => Err(no_database()),
    }
}

/// The query of `/async-db`.
#[derive(Debug, Deserialize)]
pub struct Range {
    min: Option<i32>,
    max: Option<i32>,
    limit: Option<i64>,
}

#[derive(Serialize)]
struct Items {
    items: Vec<DbItem>,
    count: usize,
}

/// `GET /async-db?min=&max=&limit=`: items priced from `min` to `max` (defaults 10 and
/// 50), at most `limit` of them (default 50, clamped to 1..=50).
pub async fn async_db<D: Db>(State(state): State<AppState<D>>, Query(q): Query<Range>) -> Response {
    let conn = match conn(&state).await {
        Ok(conn) => conn,
        Err(res) => return res,
    };
    let (min, max) = (q.min.unwrap_or(10), q.max.unwrap_or(50));
    let limit = q.limit.unwrap_or(50).clamp(1, 50);
    let rows = match conn
        .client()
        .query(&conn.statements().range, &[&min, &max, &limit])
        .await
    {
        Ok(rows) => rows,
        Err(e) => return db_error(e),
    };
    match DbItem::from_rows(&rows) {
        Ok(items) => Json(Items {
            count: items.len(),
            items,
        })
        .into_response(),
        Err(e) => db_error(e),
    }
}

/// The query of `GET /crud/items`.
#[derive(Debug, Deserialize)]
pub struct Page {
    category: Option<String>,
    page: Option<i64>,
    limit: Option<i64>,
}

#[derive(Serialize)]
struct PageOut {
    items: Vec<DbItem>,
    total: usize,
    page: i64,
    limit: i64,
}

/// `GET /crud/items?category=&page=&limit=`: one page of a category, by id (category
/// `electronics`, page 1 and limit 10 by default; a limit outside 1..=50 is 10).
pub async fn crud_list<D: Db>(State(state): State<AppState<D>>, Query(q): Query<Page>) -> Response {
    let conn = match conn(&state).await {
        Ok(conn) => conn,
        Err(res) => return res,
    };
    let category = q.category.filter(|c| !c.is_empty());
    let category = category.as_deref().unwrap_or("electronics");
    let page = q.page.unwrap_or(1).max(1);
    let limit = q.limit.filter(|l| (1..=50).contains(l)).unwrap_or(10);
    let offset = (page - 1).saturating_mul(limit);
    let rows = match conn
        .client()
        .query(&conn.statements().list, &[&category, &limit, &offset])
        .await
    {
        Ok(rows) => rows,
        Err(e) => return db_error(e),
    };
    match DbItem::from_rows(&rows) {
        Ok(items) => Json(PageOut {
            total: items.len(),
            items,
            page,
            limit,
        })
        .into_response(),
        Err(e) => db_error(e),
    }
}

/// The cache key of item `id`.
fn cache_key(id: i32) -> String {
    format!("crud:{id}")
}

/// A JSON body with its `X-Cache` header.
fn cached_json(body: impl Into<axum::body::Body>, hit: bool) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::HeaderName::from_static("x-cache"),
                HeaderValue::from_static(if hit { "HIT" } else { "MISS" }),
            ),
        ],
        body.into(),
    )
        .into_response()
}

/// `GET /crud/items/{id}`: the item, cache-aside: from the cache if there (`X-Cache: HIT`),
/// otherwise from the database, then cached for 200 ms (`X-Cache: MISS`); `404` if there is
/// no such item. A cache that fails is skipped (the answer comes from the database).
pub async fn crud_get<D: Db>(State(state): State<AppState<D>>, Path(id): Path<i32>) -> Response {
    let key = cache_key(id);
    if let Ok(Some(body)) = state.cache.get(&key).await {
        return cached_json(body, true);
    }
    let conn = match conn(&state).await {
        Ok(conn) => conn,
        Err(res) => return res,
    };
    let row = match conn
        .client()
        .query_opt(&conn.statements().one, &[&id])
        .await
    {
        Ok(Some(row)) => row,
        Ok(None) => return (StatusCode::NOT_FOUND, "no such item\n").into_response(),
        Err(e) => return db_error(e),
    };
    let item = match DbItem::from_row(&row) {
        Ok(item) => item,
        Err(e) => return db_error(e),
    };
    let body = bytes::Bytes::from(serde_json::to_vec(&item).unwrap_or_default());
    // The response does not wait on a cache that failed.
    let _ = state.cache.set(&key, body.clone()).await;
    cached_json(body, false)
}

/// The body of `POST /crud/items`.
#[derive(Debug, Deserialize)]
pub struct NewItem {
    id: i32,
    name: Option<String>,
    category: Option<String>,
    #[serde(default)]
    price: i32,
    #[serde(default)]
    quantity: i32,
}

#[derive(Serialize)]
struct Written {
    id: i32,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    price: i32,
    quantity: i32,
}

/// `POST /crud/items`: inserts the item (or updates name, price and quantity of the one
/// with its id); `201` with what was written.
pub async fn crud_create<D: Db>(
    State(state): State<AppState<D>>,
    Json(item): Json<NewItem>,
) -> Response {
    let conn = match conn(&state).await {
        Ok(conn) => conn,
        Err(res) => return res,
    };
    let name = item.name.unwrap_or_else(|| "New Product".into());
    let category = item.category.unwrap_or_else(|| "test".into());
    let id: i32 = match conn
        .client()
        .query_one(
            &conn.statements().upsert,
            &[&item.id, &name, &category, &item.price, &item.quantity],
        )
        .await
        .and_then(|row| row.try_get(0))
    {
        Ok(id) => id,
        Err(e) => return db_error(e),
    };
    // An upsert may have changed a cached item.
    let _ = state.cache.remove(&cache_key(id)).await;
    let out = Written {
        id,
        name,
        category: Some(category),
        price: item.price,
        quantity: item.quantity,
    };
    (StatusCode::CREATED, Json(out)).into_response()
}

/// The body of `PUT /crud/items/{id}`.
#[derive(Debug, Deserialize)]
pub struct Change {
    name: Option<String>,
    #[serde(default)]
    price: i32,
    #[serde(default)]
    quantity: i32,
}

/// `PUT /crud/items/{id}`: updates name, price and quantity, drops the cached copy; `200`
/// with what was written, `404` if there is no such item.
pub async fn crud_update<D: Db>(
    State(state): State<AppState<D>>,
    Path(id): Path<i32>,
    Json(change): Json<Change>,
) -> Response {
    let conn = match conn(&state).await {
        Ok(conn) => conn,
        Err(res) => return res,
    };
    let name = change.name.unwrap_or_else(|| "Updated".into());
    let updated = match conn
        .client()
        .execute(
            &conn.statements().update,
            &[&name, &change.price, &change.quantity, &id],
        )
        .await
    {
        Ok(n) => n,
        Err(e) => return db_error(e),
    };
    if updated == 0 {
        return (StatusCode::NOT_FOUND, "no such item\n").into_response();
    }
    if let Err(e) = state.cache.remove(&cache_key(id)).await {
        // A stale copy would outlive the update by up to 200 ms: say so.
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("updated, but the cache could not be invalidated: {e}\n"),
        )
            .into_response();
    }
    Json(Written {
        id,
        name,
        category: None,
        price: change.price,
        quantity: change.quantity,
    })
    .into_response()
}
