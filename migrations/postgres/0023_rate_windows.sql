-- Rate windows shared by every plinth process (PLINTH_RATE_STORE=postgres, the default
-- on PostgreSQL): one row per (caller key, category), counted by the rate-shard actors'
-- batched upserts (src/db/rate.rs). UNLOGGED: no WAL; a crash empties it, and losing a
-- window is acceptable (DESIGN.md). SQLite has no such table: one host, local windows.
CREATE UNLOGGED TABLE rate_windows (
    key         TEXT NOT NULL,
    category    SMALLINT NOT NULL,
    started     TIMESTAMPTZ NOT NULL,
    interval_ms BIGINT NOT NULL,
    count       BIGINT NOT NULL,
    PRIMARY KEY (key, category)
);
