-- Inventory: items of an organization with units; removals are soft and logged in the
-- inventory ledger. Items are searchable by keyword (FTS5 over sku, slug, title,
-- description, name).
CREATE TABLE inventory_items (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sku             TEXT NOT NULL,
    slug            TEXT NOT NULL,
    price_cents     BIGINT NOT NULL,
    price_tokens    BIGINT,
    min_tier        BIGINT,
    private         BOOLEAN NOT NULL DEFAULT FALSE,
    data            TEXT NOT NULL DEFAULT '{}',
    version         INTEGER NOT NULL DEFAULT 0,
    deleted_at      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE UNIQUE INDEX inventory_items_sku ON inventory_items (organization_id, sku) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX inventory_items_slug ON inventory_items (organization_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE inventory_units (
    id         TEXT PRIMARY KEY,
    item_id    TEXT NOT NULL REFERENCES inventory_items (id) ON DELETE CASCADE,
    data       TEXT NOT NULL DEFAULT '{}',
    status     TEXT NOT NULL,
    holder_id  TEXT,
    deleted_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX inventory_units_item ON inventory_units (item_id, status);

CREATE TABLE inventory_ledger (
    id         TEXT PRIMARY KEY,
    item_id    TEXT NOT NULL REFERENCES inventory_items (id) ON DELETE CASCADE,
    unit_id    TEXT,
    action     TEXT NOT NULL,
    actor_id   TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX inventory_ledger_item ON inventory_ledger (item_id, created_at);

-- Contentless: the indexed text is computed from the row; a delete gives the old text back.
CREATE VIRTUAL TABLE inventory_fts USING fts5 (
    text, content = '', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER inventory_fts_insert AFTER INSERT ON inventory_items BEGIN
    INSERT INTO inventory_fts (rowid, text) VALUES (new.rowid,
        new.sku || ' ' || new.slug || ' ' || COALESCE(json_extract(new.data, '$.title'), '') || ' ' ||
        COALESCE(json_extract(new.data, '$.name'), '') || ' ' || COALESCE(json_extract(new.data, '$.description'), ''));
END;
CREATE TRIGGER inventory_fts_delete AFTER DELETE ON inventory_items BEGIN
    INSERT INTO inventory_fts (inventory_fts, rowid, text) VALUES ('delete', old.rowid,
        old.sku || ' ' || old.slug || ' ' || COALESCE(json_extract(old.data, '$.title'), '') || ' ' ||
        COALESCE(json_extract(old.data, '$.name'), '') || ' ' || COALESCE(json_extract(old.data, '$.description'), ''));
END;
CREATE TRIGGER inventory_fts_update AFTER UPDATE ON inventory_items BEGIN
    INSERT INTO inventory_fts (inventory_fts, rowid, text) VALUES ('delete', old.rowid,
        old.sku || ' ' || old.slug || ' ' || COALESCE(json_extract(old.data, '$.title'), '') || ' ' ||
        COALESCE(json_extract(old.data, '$.name'), '') || ' ' || COALESCE(json_extract(old.data, '$.description'), ''));
    INSERT INTO inventory_fts (rowid, text) VALUES (new.rowid,
        new.sku || ' ' || new.slug || ' ' || COALESCE(json_extract(new.data, '$.title'), '') || ' ' ||
        COALESCE(json_extract(new.data, '$.name'), '') || ' ' || COALESCE(json_extract(new.data, '$.description'), ''));
END;
