-- Documents and calendar events: organization-scoped records with a JSON `data` object,
-- merged on update with an optimistic `version` check.
CREATE TABLE documents (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    type            TEXT NOT NULL,
    data            TEXT NOT NULL DEFAULT '{}',
    created_by      TEXT REFERENCES users (id) ON DELETE SET NULL,
    version         INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX documents_org ON documents (organization_id, type, created_at);

CREATE TABLE calendar_events (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    begins_at       TEXT NOT NULL,
    ends_at         TEXT NOT NULL,
    status          TEXT NOT NULL,
    visibility      TEXT NOT NULL,
    data            TEXT NOT NULL DEFAULT '{}',
    created_by      TEXT REFERENCES users (id) ON DELETE SET NULL,
    version         INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX calendar_events_org ON calendar_events (organization_id, begins_at);
