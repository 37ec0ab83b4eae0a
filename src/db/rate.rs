//! The shared rate windows (PostgreSQL's UNLOGGED `rate_windows`): the store behind the
//! rate-shard actors when several processes serve one database (`PLINTH_RATE_STORE`).

use futures::future::BoxFuture;
use plinth_actors::rate::{Counted, Hits, RateStore};
use sqlx::PgPool;

pub struct PgRateStore(pub PgPool);

/// Adds every window's hits in one statement. The database clock decides when a window
/// ended, so all hosts agree; a window that ended starts again with this batch's hits.
const ADD: &str = "\
    INSERT INTO rate_windows AS w (key, category, started, interval_ms, count) \
    SELECT k, c, now(), i, n FROM unnest($1::text[], $2::smallint[], $3::bigint[], $4::bigint[]) \
        AS t(k, c, i, n) \
    ON CONFLICT (key, category) DO UPDATE SET \
        started = CASE WHEN w.started + w.interval_ms * interval '1 millisecond' <= now() \
            THEN now() ELSE w.started END, \
        count = CASE WHEN w.started + w.interval_ms * interval '1 millisecond' <= now() \
            THEN excluded.count ELSE w.count + excluded.count END, \
        interval_ms = CASE WHEN w.started + w.interval_ms * interval '1 millisecond' <= now() \
            THEN excluded.interval_ms ELSE w.interval_ms END \
    RETURNING key, category, count, \
        GREATEST(0, CEIL(EXTRACT(EPOCH FROM (started + interval_ms * interval '1 millisecond' \
            - now())) * 1000))::bigint";

/// Windows that ended long ago (a sweep of the periodic work).
const SWEEP: &str = "DELETE FROM rate_windows \
    WHERE started + interval_ms * interval '1 millisecond' < now() - interval '1 minute'";

impl RateStore for PgRateStore {
    fn add<'a>(
        &'a self,
        hits: &'a [Hits],
    ) -> BoxFuture<'a, Result<Vec<Counted>, plinth_actors::StoreError>> {
        Box::pin(async move {
            let keys: Vec<&str> = hits.iter().map(|h| h.key.as_str()).collect();
            let cats: Vec<i16> = hits.iter().map(|h| h.category as i16).collect();
            let intervals: Vec<i64> = hits.iter().map(|h| h.interval_ms as i64).collect();
            let ns: Vec<i64> = hits.iter().map(|h| h.n as i64).collect();
            let rows: Vec<(String, i16, i64, i64)> = sqlx::query_as(ADD)
                .bind(&keys)
                .bind(&cats)
                .bind(&intervals)
                .bind(&ns)
                .fetch_all(&self.0)
                .await
                .map_err(plinth_actors::StoreError::new)?;
            // RETURNING comes in no promised order: match rows to items by window.
            let by_window: std::collections::HashMap<(&str, i16), (i64, i64)> = rows
                .iter()
                .map(|(k, c, n, left)| ((k.as_str(), *c), (*n, *left)))
                .collect();
            hits.iter()
                .map(|h| {
                    let (count, left) = by_window
                        .get(&(h.key.as_str(), h.category as i16))
                        .ok_or_else(|| {
                            plinth_actors::StoreError::new("a window missing from the answer")
                        })?;
                    Ok(Counted {
                        count: (*count).max(0) as u64,
                        left_ms: (*left).max(0) as u64,
                    })
                })
                .collect()
        })
    }
}

/// Deletes windows that ended; returns how many.
pub async fn sweep(pool: &PgPool) -> sqlx::Result<u64> {
    Ok(sqlx::query(SWEEP).execute(pool).await?.rows_affected())
}
