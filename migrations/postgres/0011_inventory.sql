-- Inventory: items of an organization with units; removals are soft and logged in the
-- inventory ledger. Items are searchable by keyword (tsvector/GIN over sku, slug,
-- title, name, description).
CREATE TABLE inventory_items (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sku             TEXT NOT NULL,
    slug            TEXT NOT NULL,
    price_cents     BIGINT NOT NULL,
    price_tokens    BIGINT,
    min_tier        BIGINT,
    private         BOOLEAN NOT NULL DEFAULT FALSE,
    data            JSONB NOT NULL DEFAULT '{}',
    version         BIGINT NOT NULL DEFAULT 0,
    deleted_at      TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    -- Split on anything but letters and digits first, as the search splits its keywords.
    search          tsvector GENERATED ALWAYS AS (to_tsvector('simple', regexp_replace(
        sku || ' ' || slug || ' ' || COALESCE(data->>'title', '') || ' ' ||
        COALESCE(data->>'name', '') || ' ' || COALESCE(data->>'description', ''),
        '[^[:alnum:]]+', ' ', 'g'))) STORED
);
CREATE INDEX inventory_items_search ON inventory_items USING GIN (search);
CREATE UNIQUE INDEX inventory_items_sku ON inventory_items (organization_id, sku) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX inventory_items_slug ON inventory_items (organization_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE inventory_units (
    id         TEXT PRIMARY KEY,
    item_id    TEXT NOT NULL REFERENCES inventory_items (id) ON DELETE CASCADE,
    data       JSONB NOT NULL DEFAULT '{}',
    status     TEXT NOT NULL,
    holder_id  TEXT,
    deleted_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX inventory_units_item ON inventory_units (item_id, status);

CREATE TABLE inventory_ledger (
    id         TEXT PRIMARY KEY,
    item_id    TEXT NOT NULL REFERENCES inventory_items (id) ON DELETE CASCADE,
    unit_id    TEXT,
    action     TEXT NOT NULL,
    actor_id   TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX inventory_ledger_item ON inventory_ledger (item_id, created_at);

