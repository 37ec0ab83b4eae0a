-- Data objects: uploaded files (records of presigned uploads), localizations and things
-- (with a full-text index: FTS5 here, tsvector/GIN on PostgreSQL).
CREATE TABLE files (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id TEXT REFERENCES organizations (id) ON DELETE SET NULL,
    object_key      TEXT NOT NULL UNIQUE,
    filename        TEXT NOT NULL,
    content_type    TEXT NOT NULL,
    max_bytes       BIGINT NOT NULL,
    provider        TEXT NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX files_user ON files (user_id, created_at);

CREATE TABLE localizations (
    id           TEXT PRIMARY KEY,
    entity_id    TEXT NOT NULL,
    language_tag TEXT NOT NULL,
    name         TEXT NOT NULL,
    value        TEXT NOT NULL,
    user_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (entity_id, language_tag, name)
);

CREATE TABLE things (
    id              TEXT PRIMARY KEY,
    title           TEXT NOT NULL,
    category        TEXT NOT NULL,
    slug            TEXT NOT NULL UNIQUE,
    organization_id TEXT REFERENCES organizations (id) ON DELETE SET NULL,
    user_id         TEXT REFERENCES users (id) ON DELETE SET NULL,
    data            TEXT NOT NULL DEFAULT '{}',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX things_created ON things (created_at, id);

CREATE VIRTUAL TABLE things_fts USING fts5 (
    title, category, content = 'things', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER things_fts_insert AFTER INSERT ON things BEGIN
    INSERT INTO things_fts (rowid, title, category) VALUES (new.rowid, new.title, new.category);
END;
CREATE TRIGGER things_fts_delete AFTER DELETE ON things BEGIN
    INSERT INTO things_fts (things_fts, rowid, title, category) VALUES ('delete', old.rowid, old.title, old.category);
END;
CREATE TRIGGER things_fts_update AFTER UPDATE ON things BEGIN
    INSERT INTO things_fts (things_fts, rowid, title, category) VALUES ('delete', old.rowid, old.title, old.category);
    INSERT INTO things_fts (rowid, title, category) VALUES (new.rowid, new.title, new.category);
END;
