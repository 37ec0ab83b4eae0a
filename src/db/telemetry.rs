//! Telemetry events: the batched insert behind the ingest actor
//! (`plinth_actors::batch`), and the aggregates the metrics endpoints answer from.
//! Every aggregate filters on `(product_id, day)`, the leading columns of the index.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::AssertSqlSafe;

use crate::db::{now, values_sql, BeginWrite, Db};
use crate::with_db;

/// One event as written.
pub struct EventRow {
    pub product_id: String,
    pub event_id: String,
    pub event_name: String,
    pub client_id: String,
    pub user_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    pub data: Value,
}

const COLUMNS: usize = 9;

/// `INSERT ... VALUES (...), (...) ON CONFLICT DO NOTHING` for `rows` rows: a repeated
/// `event_id` (in this batch or any before) is skipped, not an error.
fn insert_sql(rows: usize) -> String {
    format!(
        "INSERT INTO telemetry_events (product_id, event_id, event_name, client_id, user_id, \
         day, occurred_at, received_at, data) VALUES {} \
         ON CONFLICT (product_id, event_id) DO NOTHING",
        values_sql(rows, COLUMNS, None)
    )
}

/// Writes each group with one statement in the transaction `$tx`; the rows each wrote.
macro_rules! insert_groups {
    ($tx:expr, $groups:expr) => {{
        let received = now();
        let mut counts = Vec::with_capacity($groups.len());
        for group in $groups {
            if group.is_empty() {
                counts.push(0);
                continue;
            }
            let sql = insert_sql(group.len());
            let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
            for e in group {
                q = q
                    .bind(&e.product_id)
                    .bind(&e.event_id)
                    .bind(&e.event_name)
                    .bind(&e.client_id)
                    .bind(&e.user_id)
                    .bind(e.occurred_at.format("%Y-%m-%d").to_string())
                    .bind(e.occurred_at)
                    .bind(received)
                    .bind(Json(&e.data));
            }
            counts.push(q.execute(&mut *$tx).await?.rows_affected());
        }
        counts
    }};
}

/// The ingest actor's store: all groups of a flush in one transaction.
pub struct Ingest(pub Db);

impl Ingest {
    async fn write_groups(&self, groups: &[Vec<EventRow>]) -> sqlx::Result<Vec<u64>> {
        with_db!(&self.0, p => {
            let mut tx = p.begin_write().await?;
            let counts = insert_groups!(tx, groups);
            tx.commit().await?;
            Ok(counts)
        })
    }
}

impl plinth_actors::batch::BatchStore<EventRow> for Ingest {
    fn write<'a>(
        &'a self,
        groups: &'a [Vec<EventRow>],
    ) -> BoxFuture<'a, Result<Vec<u64>, plinth_actors::StoreError>> {
        Box::pin(async move {
            self.write_groups(groups)
                .await
                .map_err(plinth_actors::StoreError::new)
        })
    }
}

/// A product's events between two days (inclusive, `YYYY-MM-DD`).
pub struct Range<'a> {
    pub product_id: &'a str,
    pub from: &'a str,
    pub to: &'a str,
}

#[derive(sqlx::FromRow)]
pub struct Day {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Distinct `client_id`s that sent an event that day.
    pub active_clients: i64,
    pub events: i64,
}

/// The first day the product has an event on, if any.
pub async fn first_day(db: &Db, product_id: &str) -> sqlx::Result<Option<String>> {
    const SQL: &str = "SELECT MIN(day) FROM telemetry_events WHERE product_id = $1";
    with_db!(db, p => sqlx::query_scalar(SQL).bind(product_id).fetch_one(p).await)
}

pub async fn daily(db: &Db, r: &Range<'_>) -> sqlx::Result<Vec<Day>> {
    const SQL: &str = "SELECT day AS date, COUNT(DISTINCT client_id) AS active_clients, \
        COUNT(*) AS events FROM telemetry_events \
        WHERE product_id = $1 AND day >= $2 AND day <= $3 GROUP BY day ORDER BY day";
    with_db!(db, p => sqlx::query_as(SQL).bind(r.product_id).bind(r.from).bind(r.to).fetch_all(p).await)
}

#[derive(sqlx::FromRow)]
pub struct Version {
    /// `data.app_version` as sent.
    pub version: String,
    /// Distinct clients that sent an event with this version in the range.
    pub clients: i64,
    pub events: i64,
}

/// Clients per `data.app_version` (events without one are left out), most first.
pub async fn versions(db: &Db, r: &Range<'_>) -> sqlx::Result<Vec<Version>> {
    let version = match db {
        Db::Sqlite(_) => "CAST(data ->> '$.app_version' AS TEXT)",
        Db::Postgres(_) => "data ->> 'app_version'",
    };
    let sql = format!(
        "SELECT version, clients, events FROM (SELECT {version} AS version, \
         COUNT(DISTINCT client_id) AS clients, COUNT(*) AS events FROM telemetry_events \
         WHERE product_id = $1 AND day >= $2 AND day <= $3 GROUP BY 1) v \
         WHERE version IS NOT NULL ORDER BY clients DESC, version LIMIT 100"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(r.product_id).bind(r.from).bind(r.to).fetch_all(p).await)
}

/// A `metrics/query`: what to count, grouped by what, over which events.
pub struct Query<'a> {
    pub range: Range<'a>,
    pub event_name: Option<&'a str>,
    /// `data` key → the value's text (`true`/`false` for booleans, JSON text for numbers).
    pub filters: Vec<(&'a str, String)>,
    pub by_day: bool,
    pub dimension: Dimension<'a>,
    pub unique_clients: bool,
    pub limit: i64,
}

pub enum Dimension<'a> {
    None,
    EventName,
    /// A `data` key (letters, digits, `_`, `-`: checked by the handler).
    Property(&'a str),
}

#[derive(sqlx::FromRow)]
pub struct Row {
    pub bucket: Option<String>,
    pub dimension: Option<String>,
    pub value: i64,
}

/// The text of `data[key]` in SQL, `$n` being the key's parameter: SQLite's JSON path
/// (booleans read as `true`/`false`, as PostgreSQL's `->>` gives them), PostgreSQL's
/// `->>`.
fn property(db: &Db, n: usize) -> String {
    match db {
        Db::Sqlite(_) => format!(
            "(CASE json_type(data, ${n}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' \
             ELSE CAST(json_extract(data, ${n}) AS TEXT) END)"
        ),
        Db::Postgres(_) => format!("(data ->> ${n})"),
    }
}

/// The parameter naming `data[key]` for [`property`].
fn property_param(db: &Db, key: &str) -> String {
    match db {
        Db::Sqlite(_) => format!("$.\"{key}\""),
        Db::Postgres(_) => key.to_owned(),
    }
}

pub async fn query(db: &Db, q: &Query<'_>) -> sqlx::Result<Vec<Row>> {
    // Only fixed fragments go into the text; every value is a parameter.
    let mut params: Vec<String> = vec![
        q.range.product_id.to_owned(),
        q.range.from.to_owned(),
        q.range.to.to_owned(),
    ];
    let mut param = |v: String| {
        params.push(v);
        params.len()
    };
    let bucket = if q.by_day { "day" } else { "NULL" };
    let dimension = match q.dimension {
        Dimension::None => "NULL".to_owned(),
        Dimension::EventName => "event_name".to_owned(),
        Dimension::Property(key) => property(db, param(property_param(db, key))),
    };
    let metric = if q.unique_clients {
        "COUNT(DISTINCT client_id)"
    } else {
        "COUNT(*)"
    };
    let mut filter = String::new();
    if let Some(name) = q.event_name {
        let _ = write!(filter, " AND event_name = ${}", param(name.to_owned()));
    }
    for (key, value) in &q.filters {
        let path = property(db, param(property_param(db, key)));
        let _ = write!(filter, " AND {path} = ${}", param(value.clone()));
    }
    let limit = q.limit; // an integer: safe in the text
    let sql = format!(
        "SELECT {bucket} AS bucket, {dimension} AS dimension, {metric} AS value \
         FROM telemetry_events WHERE product_id = $1 AND day >= $2 AND day <= $3{filter} \
         GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2 LIMIT {limit}"
    );
    with_db!(db, p => {
        let mut query = sqlx::query_as(AssertSqlSafe(sql.as_str()));
        for v in &params {
            query = query.bind(v);
        }
        query.fetch_all(p).await
    })
}

/// `subscription_checkout_started` and `subscription_checkout_completed` events in
/// the range.
pub async fn checkout_funnel(db: &Db, r: &Range<'_>) -> sqlx::Result<(i64, i64)> {
    const SQL: &str = "SELECT \
        COUNT(CASE WHEN event_name = 'subscription_checkout_started' THEN 1 END), \
        COUNT(CASE WHEN event_name = 'subscription_checkout_completed' THEN 1 END) \
        FROM telemetry_events WHERE product_id = $1 AND day >= $2 AND day <= $3 \
        AND event_name IN ('subscription_checkout_started', 'subscription_checkout_completed')";
    with_db!(db, p => sqlx::query_as(SQL).bind(r.product_id).bind(r.from).bind(r.to).fetch_one(p).await)
}

/// Subscriptions by current status (all products and users: the table holds the payment
/// provider's plans, which telemetry products do not name).
pub async fn subscription_statuses(db: &Db) -> sqlx::Result<Vec<(String, i64)>> {
    const SQL: &str = "SELECT status, COUNT(*) FROM subscriptions GROUP BY status ORDER BY status";
    with_db!(db, p => sqlx::query_as(SQL).fetch_all(p).await)
}
