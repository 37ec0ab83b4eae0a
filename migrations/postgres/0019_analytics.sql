-- Analytics sites (soft-deleted), their direct members (level 10 viewer or 100 admin;
-- the owner is not a member row), and events. An event stores no client id: `visitor_id`
-- is derived from it with the site's secret salt (docs/api.md "Analytics"). `label` is
-- a normalized page path (starting with /) or a custom event name.
CREATE TABLE analytics_sites (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    salt       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);
CREATE INDEX analytics_sites_owner ON analytics_sites (owner_id);

CREATE TABLE analytics_members (
    site_id    TEXT NOT NULL REFERENCES analytics_sites (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    level      BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (site_id, user_id)
);
CREATE INDEX analytics_members_user ON analytics_members (user_id);

CREATE TABLE analytics_events (
    id         TEXT PRIMARY KEY,
    site_id    TEXT NOT NULL REFERENCES analytics_sites (id) ON DELETE CASCADE,
    label      TEXT,
    visitor_id TEXT NOT NULL,
    data       JSONB,
    created_at TIMESTAMPTZ NOT NULL,
    -- sha256 of the attachment token and when it stops being accepted
    attachment_token_hash TEXT,
    attachment_token_expires_at TIMESTAMPTZ,
    attachment_key TEXT
);
CREATE INDEX analytics_events_site_time ON analytics_events (site_id, created_at, id);
CREATE INDEX analytics_events_site_label ON analytics_events (site_id, label, created_at);
