-- Download links: each has its own storage clone (`clones/<uuid>.<ext>`) of a source
-- object under `catalog/`, a token kept as its sha256, an expiry and a download counter.
-- The expiry work deletes the clones of revoked, expired and used-up links.
CREATE TABLE download_links (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    item_id         TEXT,
    order_id        TEXT,
    issuer_id       TEXT,
    user_id         TEXT,
    token_hash      TEXT NOT NULL UNIQUE,
    source_key      TEXT NOT NULL,
    clone_key       TEXT NOT NULL,
    file_name       TEXT NOT NULL,
    mime_type       TEXT NOT NULL,
    max_downloads   BIGINT NOT NULL,
    download_count  BIGINT NOT NULL DEFAULT 0,
    status          TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    exhausted_at    TEXT,
    last_download_at TEXT,
    clone_deleted_at TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX download_links_org ON download_links (organization_id, created_at);
CREATE INDEX download_links_cleanup ON download_links (expires_at) WHERE clone_deleted_at IS NULL;
