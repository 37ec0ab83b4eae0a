-- The key-value store: namespaces owned by the platform admin who made them, and their
-- entries (string values). A namespace with entries cannot be deleted.
CREATE TABLE kv_namespaces (
    name       TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX kv_namespaces_owner ON kv_namespaces (owner_id, name);

CREATE TABLE kv_entries (
    namespace  TEXT NOT NULL REFERENCES kv_namespaces (name) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (namespace, key)
);
