//! Telemetry: `/api/telemetry/*` (docs/api.md "Telemetry"). Events of registered products
//! (`PLINTH_TELEMETRY_PRODUCTS`) are checked whole, then written by the ingest actor
//! (`plinth_actors::batch`, group commit) before the 202; the metrics are SQL aggregates
//! over `(product_id, day)`.

use crate::http::request::Limit;
use axum::extract::State;
use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::db::telemetry::{self as store, Dimension, EventRow, Range};
use crate::http::auth::MaybeCaller;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::{Accepted, Answer};
use crate::state::AppState;
use crate::states::TelemetryEvent;
use crate::wire::telemetry::{
    Bucketing, Daily, Day, EventsAccepted, Funnel, Metric, QueryAnswer, QueryRow, Subscriptions,
    Summary, Version,
};
use crate::wire::True;

/// The event names as the document lists them (`TelemetryEvent`, the parser's own set).
fn event_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::wire::names_schema(TelemetryEvent::ALL.iter().map(|e| e.as_str()), false)
}

const MAX_EVENTS: usize = 25;
/// Longest `client_id` and `event_id`.
const MAX_ID: usize = 128;
/// Largest `data` of one event, serialised.
const MAX_DATA: usize = 8 * 1024;
/// The `data` key the version breakdown reads.
pub const VERSION_KEY: &str = "app_version";

fn registered<'a>(app: &AppState, product_id: &'a str) -> ApiResult<&'a str> {
    if app
        .opts
        .rates
        .telemetry_products
        .iter()
        .any(|p| p.trim() == product_id)
    {
        return Ok(product_id);
    }
    // An unknown product is a reference to nothing: 404, as an unknown id is.
    Err(ApiError::not_found(
        if app.opts.rates.telemetry_products.is_empty() {
            "no telemetry product is registered on this server (PLINTH_TELEMETRY_PRODUCTS)"
                .to_owned()
        } else {
            format!("`product_id` {product_id:?} is not a registered telemetry product")
        },
    ))
}

fn id<'a>(field: &str, v: &'a str) -> ApiResult<&'a str> {
    if v.is_empty() || v.chars().count() > MAX_ID {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be 1 to {MAX_ID} characters"
        )));
    }
    Ok(v)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EventsBody {
    /// A registered product (`PLINTH_TELEMETRY_PRODUCTS`).
    product_id: String,
    /// The sending installation, 1 to 128 characters.
    #[schemars(length(min = 1, max = 128))]
    client_id: String,
    /// 1 to 25 events; the batch is accepted or refused whole.
    #[schemars(length(min = 1, max = 25))]
    events: Vec<EventIn>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EventIn {
    /// Deduplication key (per product): an event id seen before is skipped.
    #[schemars(length(min = 1, max = 128))]
    event_id: String,
    /// One of the supported names (docs/api.md).
    #[schemars(schema_with = "event_names")]
    event_name: String,
    /// RFC 3339; the time of receipt when absent; at most a day ahead.
    #[schemars(extend("format" = "date-time"))]
    occurred_at: Option<String>,
    /// Product-specific fields (`app_version`, OS, ...), an object of at most 8 KiB.
    #[schemars(with = "Option<Map<String, Value>>")]
    data: Option<Value>,
}

/// `POST /api/telemetry/events` (Public; a key attributes the events to its account;
/// `beacon` rate category): 202 once the events are written.
pub async fn events(
    State(app): State<AppState>,
    caller: MaybeCaller,
    JsonBody(body): JsonBody<EventsBody>,
) -> ApiResult<Accepted<EventsAccepted>> {
    let product = registered(&app, &body.product_id)?;
    let client = id("client_id", &body.client_id)?;
    if body.events.is_empty() || body.events.len() > MAX_EVENTS {
        return Err(ApiError::bad_request(format!(
            "`events` must hold 1 to {MAX_EVENTS} events (got {})",
            body.events.len()
        )));
    }
    let now = Utc::now();
    let user_id = caller.0.as_ref().map(|c| c.id.clone());
    let rows = body
        .events
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let (occurred_at, data) = checked(&e, i, now)?;
            Ok(EventRow {
                product_id: product.to_owned(),
                event_id: e.event_id,
                event_name: e.event_name,
                client_id: client.to_owned(),
                user_id: user_id.clone(),
                occurred_at,
                data,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    let sent = rows.len() as u64;
    let accepted = app
        .telemetry
        .write(client, rows)
        .await
        .map_err(|e| ApiError::unavailable(crate::db::Outage::NotApplied, e))?;
    Ok(Accepted(EventsAccepted {
        success: True,
        accepted,
        duplicates: sent - accepted,
    }))
}

/// Event `i`'s time and data, once its fields pass the rules (400 naming the event).
fn checked(e: &EventIn, i: usize, now: DateTime<Utc>) -> ApiResult<(DateTime<Utc>, Value)> {
    let at = |m: String| ApiError::bad_request(format!("events[{i}]: {m}"));
    id("event_id", &e.event_id).map_err(|x| at(x.message))?;
    if TelemetryEvent::parse(&e.event_name).is_none() {
        let names: Vec<&str> = TelemetryEvent::ALL.iter().map(|e| e.as_str()).collect();
        return Err(at(format!(
            "`event_name` {:?} is not supported (one of {})",
            e.event_name,
            names.join(", ")
        )));
    }
    let occurred_at = match &e.occurred_at {
        None => now,
        Some(s) => DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| at("`occurred_at` must be an RFC 3339 date-time".into()))?,
    };
    if occurred_at > now + chrono::Duration::days(1) || occurred_at.timestamp() < 946_684_800 {
        return Err(at(
            "`occurred_at` must be after 2000-01-01 and at most a day ahead".into(),
        ));
    }
    let data = match &e.data {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(at("`data` must be an object".into())),
    };
    if serde_json::to_vec(&data).map_or(0, |b| b.len()) > MAX_DATA {
        return Err(at(format!("`data` must be at most {MAX_DATA} bytes")));
    }
    Ok((occurred_at, data))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RangeBody {
    /// A registered product.
    product_id: String,
    /// First day, `YYYY-MM-DD` (UTC), inclusive.
    #[schemars(extend("format" = "date"))]
    from: String,
    /// Last day, `YYYY-MM-DD` (UTC), inclusive; before `from`, the range is empty.
    #[schemars(extend("format" = "date"))]
    to: String,
}

/// The checked range and its days. Any range is answered: one that ends before it
/// starts holds no day (empty answers), and a long one costs no more than the data it
/// holds (the daily series is clipped to the days that can hold data, see [`daily`]).
fn range<'a>(
    app: &AppState,
    product_id: &'a str,
    from: &'a str,
    to: &'a str,
) -> ApiResult<(Range<'a>, NaiveDate, NaiveDate)> {
    let product_id = registered(app, product_id)?;
    let day = |field: &str, v: &str| {
        NaiveDate::parse_from_str(v, "%Y-%m-%d")
            .ok()
            .filter(|d| d.format("%Y-%m-%d").to_string() == v)
            .ok_or_else(|| ApiError::bad_request(format!("`{field}` must be a date YYYY-MM-DD")))
    };
    let (first, last) = (day("from", from)?, day("to", to)?);
    Ok((
        Range {
            product_id,
            from,
            to,
        },
        first,
        last,
    ))
}

/// `POST /api/telemetry/metrics/daily` (Admin100): every day of the range with its active
/// clients and events (zeros included), and clients per `data.app_version`. The days
/// run from `from`, but not earlier than a year before the product's first event (or
/// today), to `to`, but not later than tomorrow (an event may be dated a day ahead): the
/// answer grows with the data, never with the range asked for.
pub async fn daily(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<RangeBody>,
) -> ApiResult<Answer<Daily>> {
    let (r, first, last) = range(&app, &b.product_id, &b.from, &b.to)?;
    let today = Utc::now().date_naive();
    let earliest = store::first_day(&app.db, r.product_id)
        .await?
        .and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok())
        .map_or(today, |d| d.min(today));
    let year = chrono::Duration::days(366);
    let (first, last) = (
        first.max(earliest - year),
        last.min(today + chrono::Duration::days(1)),
    );
    let found = store::daily(&app.db, &r).await?;
    let mut found = found.into_iter().peekable();
    let days: Vec<Day> = first
        .iter_days()
        .take_while(|d| *d <= last)
        .map(|d| {
            let date = d.format("%Y-%m-%d").to_string();
            match found.next_if(|f| f.date == date) {
                Some(f) => f.into(),
                None => Day {
                    date,
                    active_clients: 0,
                    events: 0,
                },
            }
        })
        .collect();
    let versions = store::versions(&app.db, &r).await?;
    Ok(Answer(Daily {
        product_id: r.product_id.to_owned(),
        from: r.from.to_owned(),
        to: r.to.to_owned(),
        days,
        version_key: VERSION_KEY.to_owned(),
        versions: versions.into_iter().map(Version::from).collect(),
    }))
}

/// `dimension`: `"event_name"` or `{"property": "<data key>"}`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum DimensionIn {
    Name(#[schemars(extend("enum" = ["event_name"]))] String),
    Property {
        #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"))]
        property: String,
    },
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct QueryBody {
    product_id: String,
    /// First day, `YYYY-MM-DD`, inclusive.
    #[schemars(extend("format" = "date"))]
    from: String,
    /// Last day, `YYYY-MM-DD`, inclusive.
    #[schemars(extend("format" = "date"))]
    to: String,
    /// Only events of this name.
    event_name: Option<String>,
    /// `data` key → value (string, number or boolean); all must match. At most 10.
    #[schemars(extend("maxProperties" = 10, "propertyNames" = {"pattern": "^[A-Za-z0-9_-]{1,64}$"}, "additionalProperties" = {"type": ["string", "number", "boolean"]}))]
    filters: Option<Map<String, Value>>,
    /// `none` (default) or `day`.
    bucket: Option<Bucketing>,
    /// `"event_name"` or `{"property": "<data key>"}`; none by default.
    dimension: Option<DimensionIn>,
    /// `events` (default) or `unique_clients`.
    metric: Option<Metric>,
    /// Rows at most, 1 to 1,000 (default 100).
    #[serde(default)]
    limit: Limit<100, 1000>,
}

/// A `data` key usable in a query: 1 to 64 letters, digits, `_` or `-`.
fn data_key<'a>(field: &str, k: &'a str) -> ApiResult<&'a str> {
    let ok = !k.is_empty()
        && k.len() <= 64
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return Err(ApiError::bad_request(format!(
            "`{field}` must name a data key of 1 to 64 letters, digits, `_` or `-`"
        )));
    }
    Ok(k)
}

/// `POST /api/telemetry/metrics/query` (Admin100): `rows` of `{bucket?, dimension?,
/// value}`, by bucket, then largest value first.
pub async fn query(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<QueryBody>,
) -> ApiResult<Answer<QueryAnswer>> {
    let (r, _, _) = range(&app, &b.product_id, &b.from, &b.to)?;
    let bucket = b.bucket.unwrap_or(Bucketing::None);
    let metric = b.metric.unwrap_or(Metric::Events);
    let by_day = bucket == Bucketing::Day;
    let unique_clients = metric == Metric::UniqueClients;
    let dimension = match &b.dimension {
        None => Dimension::None,
        Some(DimensionIn::Name(n)) if n == "event_name" => Dimension::EventName,
        Some(DimensionIn::Property { property }) => {
            Dimension::Property(data_key("dimension.property", property)?)
        }
        Some(DimensionIn::Name(_)) => {
            return Err(ApiError::bad_request(
                "`dimension` must be \"event_name\" or {\"property\": \"<data key>\"}",
            ))
        }
    };
    let limit = b.limit.get();
    let filters = b.filters.unwrap_or_default();
    if filters.len() > 10 {
        return Err(ApiError::bad_request("`filters` may name at most 10 keys"));
    }
    let mut checked = Vec::with_capacity(filters.len());
    for (k, v) in &filters {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`filters.{k}` must be a string, number or boolean"
                )))
            }
        };
        checked.push((data_key("filters", k)?, text));
    }
    let q = store::Query {
        range: r,
        event_name: b.event_name.as_deref(),
        filters: checked,
        by_day,
        dimension,
        unique_clients,
        limit,
    };
    let dimensioned = !matches!(q.dimension, Dimension::None);
    let rows = store::query(&app.db, &q)
        .await?
        .into_iter()
        .map(|row| QueryRow {
            bucket: by_day.then_some(row.bucket),
            dimension: dimensioned.then_some(row.dimension),
            value: row.value,
        })
        .collect();
    Ok(Answer(QueryAnswer {
        product_id: q.range.product_id.to_owned(),
        from: q.range.from.to_owned(),
        to: q.range.to.to_owned(),
        metric,
        bucket,
        rows,
    }))
}

/// `POST /api/telemetry/subscriptions/summary` (Admin100): the checkout funnel from the
/// product's events in the range, and subscriptions by current status.
pub async fn subscriptions_summary(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<RangeBody>,
) -> ApiResult<Answer<Summary>> {
    let (r, _, _) = range(&app, &b.product_id, &b.from, &b.to)?;
    let (started, completed) = store::checkout_funnel(&app.db, &r).await?;
    let statuses = store::subscription_statuses(&app.db).await?;
    let total: i64 = statuses.iter().map(|(_, n)| n).sum();
    Ok(Answer(Summary {
        product_id: r.product_id.to_owned(),
        from: r.from.to_owned(),
        to: r.to.to_owned(),
        checkout: Funnel {
            started,
            completed,
            conversion_rate: (started > 0).then(|| completed as f64 / started as f64),
        },
        subscriptions: Subscriptions {
            total,
            by_status: statuses.into_iter().collect(),
        },
    }))
}
