-- License keys of an organization's products: kept as sha256 (lookup) and ciphertext
-- under the master key (the owner's detail); activated machines one row each, so the
-- activation limit is a conditional count. Every license hangs off an order (a purchase,
-- or a zero-cost `admin_grant` order for keys an admin issues).
CREATE TABLE licenses (
    id                  TEXT PRIMARY KEY,
    organization_id     TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    item_id             TEXT,
    order_id            TEXT,
    user_id             TEXT REFERENCES users (id) ON DELETE SET NULL,
    issuer_id           TEXT,
    key_hash            TEXT NOT NULL UNIQUE,
    key_cipher          TEXT NOT NULL,
    status              TEXT NOT NULL,
    product_id          TEXT,
    activations_allowed BIGINT,
    activations_current BIGINT NOT NULL DEFAULT 0,
    expires_at          TEXT,
    data                TEXT NOT NULL DEFAULT '{}',
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL
);
CREATE INDEX licenses_user ON licenses (user_id, created_at);
CREATE INDEX licenses_org ON licenses (organization_id, created_at);

CREATE TABLE license_machines (
    license_id TEXT NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    machine_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (license_id, machine_id)
);
