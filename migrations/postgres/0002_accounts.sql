-- Organizations and memberships (the organizations area builds on these), office
-- applications, and likes (read by the viewer's likes list).
CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    domain     TEXT NOT NULL UNIQUE,
    name       TEXT,
    data       JSONB NOT NULL DEFAULT '{}',
    is_public  BOOLEAN NOT NULL DEFAULT FALSE,
    -- Bumped on every write of `data`, for optimistic read-modify-write merges.
    version    BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE organization_members (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX organization_members_user ON organization_members (user_id);

CREATE TABLE office_applications (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    status     TEXT NOT NULL,
    data       JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE likes (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    entity_id  TEXT NOT NULL,
    data       JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (user_id, entity_id)
);
CREATE INDEX likes_entity ON likes (entity_id);

CREATE TABLE waitlist_entries (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email           TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'accepted')),
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (organization_id, email)
);
CREATE INDEX waitlist_entries_newest ON waitlist_entries (organization_id, created_at);

-- Team-preview partner domains (public-access area).
CREATE TABLE public_access_domains (
    domain     TEXT PRIMARY KEY,
    added_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at TIMESTAMPTZ NOT NULL
);
