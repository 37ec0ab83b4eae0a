-- Slide decks: decks with their retained revisions, image assets, render jobs (the
-- status clients poll; the queue has its own tables), publications and the persisted
-- idempotency keys of deck mutations.
CREATE TABLE slide_decks (
    id                  TEXT PRIMARY KEY,
    owner_id            TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id     TEXT REFERENCES organizations (id) ON DELETE CASCADE,
    title               TEXT,
    version             INTEGER NOT NULL,
    current_revision_id TEXT NOT NULL,
    data                TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    deleted_at          TEXT
);
CREATE INDEX slide_decks_owner ON slide_decks (owner_id);
CREATE INDEX slide_decks_org ON slide_decks (organization_id);

CREATE TABLE slide_revisions (
    id            TEXT PRIMARY KEY,
    deck_id       TEXT NOT NULL REFERENCES slide_decks (id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    content       TEXT NOT NULL,
    source        TEXT NOT NULL,
    restored_from TEXT,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (deck_id, version)
);

CREATE TABLE slide_assets (
    id         TEXT PRIMARY KEY,
    deck_id    TEXT NOT NULL REFERENCES slide_decks (id) ON DELETE CASCADE,
    created_by TEXT NOT NULL,
    file       TEXT NOT NULL,
    type       TEXT NOT NULL,
    size       INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    object_key TEXT NOT NULL,
    status     TEXT NOT NULL,
    reason     TEXT,
    format     TEXT,
    width      INTEGER,
    height     INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX slide_assets_deck ON slide_assets (deck_id);

CREATE TABLE slide_jobs (
    id           TEXT PRIMARY KEY,
    deck_id      TEXT NOT NULL REFERENCES slide_decks (id) ON DELETE CASCADE,
    revision_id  TEXT NOT NULL REFERENCES slide_revisions (id) ON DELETE CASCADE,
    format       TEXT NOT NULL,
    status       TEXT NOT NULL,
    done         INTEGER NOT NULL DEFAULT 0,
    total        INTEGER NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    artifacts    TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    started_at   TEXT,
    finished_at  TEXT,
    updated_at   TEXT NOT NULL
);
CREATE INDEX slide_jobs_deck ON slide_jobs (deck_id);
CREATE INDEX slide_jobs_revision ON slide_jobs (revision_id);

CREATE TABLE slide_publications (
    id          TEXT PRIMARY KEY,
    deck_id     TEXT NOT NULL REFERENCES slide_decks (id) ON DELETE CASCADE,
    revision_id TEXT NOT NULL REFERENCES slide_revisions (id) ON DELETE CASCADE,
    status      TEXT NOT NULL,
    content     TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
-- One active publication per deck.
CREATE UNIQUE INDEX slide_publications_active ON slide_publications (deck_id) WHERE status = 'active';

CREATE TABLE slide_idempotency (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       INTEGER NOT NULL,
    response     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);
