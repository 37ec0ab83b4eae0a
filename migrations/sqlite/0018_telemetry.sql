-- Telemetry events of registered products: deduplicated on (product, event_id); `day`
-- is the UTC date of `occurred_at`, which every aggregate groups and filters by; the
-- client id is stored as sent (it names an installation, not a person); `user_id` is the
-- account when the batch carried a key.
CREATE TABLE telemetry_events (
    product_id  TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_name  TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    user_id     TEXT REFERENCES users (id) ON DELETE SET NULL,
    day         TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    data        TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (product_id, event_id)
);
CREATE INDEX telemetry_events_day ON telemetry_events (product_id, day, event_name);
CREATE INDEX telemetry_events_user ON telemetry_events (user_id) WHERE user_id IS NOT NULL;
