-- Data objects: uploaded files (records of presigned uploads), localizations and things
-- (with a full-text index: tsvector/GIN here, FTS5 on SQLite).
CREATE TABLE files (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id TEXT REFERENCES organizations (id) ON DELETE SET NULL,
    object_key      TEXT NOT NULL UNIQUE,
    filename        TEXT NOT NULL,
    content_type    TEXT NOT NULL,
    max_bytes       BIGINT NOT NULL,
    provider        TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX files_user ON files (user_id, created_at);

CREATE TABLE localizations (
    id           TEXT PRIMARY KEY,
    entity_id    TEXT NOT NULL,
    language_tag TEXT NOT NULL,
    name         TEXT NOT NULL,
    value        TEXT NOT NULL,
    user_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (entity_id, language_tag, name)
);

CREATE TABLE things (
    id              TEXT PRIMARY KEY,
    title           TEXT NOT NULL,
    category        TEXT NOT NULL,
    slug            TEXT NOT NULL UNIQUE,
    organization_id TEXT REFERENCES organizations (id) ON DELETE SET NULL,
    user_id         TEXT REFERENCES users (id) ON DELETE SET NULL,
    data            JSONB NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    -- Words are split on anything but letters and digits first, as the search splits its
    -- keywords, so that `batch-12e4` indexes `batch` and `12e4` the same way a query for
    -- them parses (PostgreSQL's parser reads hyphenated and number-like words otherwise).
    search          tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', regexp_replace(title, '[^[:alnum:]]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple', regexp_replace(category, '[^[:alnum:]]+', ' ', 'g')), 'B')
    ) STORED
);
CREATE INDEX things_created ON things (created_at, id);
CREATE INDEX things_search ON things USING GIN (search);
