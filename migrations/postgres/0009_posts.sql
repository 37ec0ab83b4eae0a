-- Posts: owner, optional organization, unique slug and src, JSON data (title, body,
-- public/private/teamPost flags, editorContent), and the thread a reply belongs to.
-- Reception (visits per day, referrers, backlinks) for posts that track it.
CREATE TABLE posts (
    id              TEXT PRIMARY KEY,
    type            TEXT NOT NULL,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id TEXT REFERENCES organizations (id) ON DELETE SET NULL,
    thread_id       TEXT REFERENCES posts (id) ON DELETE CASCADE,
    slug            TEXT,
    src             TEXT,
    data            JSONB NOT NULL DEFAULT '{}',
    -- Copies of data.public === true && data.private !== true, data.private === true and
    -- data.teamPost === true, kept on every write so both databases filter alike.
    published       BOOLEAN NOT NULL DEFAULT FALSE,
    private         BOOLEAN NOT NULL DEFAULT FALSE,
    team_post       BOOLEAN NOT NULL DEFAULT FALSE,
    version         BIGINT NOT NULL DEFAULT 0,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
-- Few indexes, partial where most rows have no value: every index is written on every
-- insert (bench/content.sh).
CREATE UNIQUE INDEX posts_slug ON posts (slug) WHERE slug IS NOT NULL;
CREATE UNIQUE INDEX posts_src ON posts (src) WHERE src IS NOT NULL;
CREATE INDEX posts_type ON posts (type, created_at);
CREATE INDEX posts_user ON posts (user_id, created_at);
CREATE INDEX posts_org ON posts (organization_id, created_at) WHERE organization_id IS NOT NULL;
CREATE INDEX posts_thread ON posts (thread_id, created_at) WHERE thread_id IS NOT NULL;

CREATE TABLE post_visits (
    post_id TEXT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    day     TEXT NOT NULL,
    visits  BIGINT NOT NULL,
    PRIMARY KEY (post_id, day)
);

CREATE TABLE post_referrers (
    post_id TEXT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    domain  TEXT NOT NULL,
    visits  BIGINT NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (post_id, domain)
);

CREATE TABLE post_backlinks (
    post_id TEXT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    url     TEXT NOT NULL,
    domain  TEXT NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (post_id, url)
);
