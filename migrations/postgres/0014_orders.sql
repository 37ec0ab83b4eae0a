-- Orders of the marketplace (a user's or a guest session's) and their lines. Units an
-- order holds name it (`reserved` while a provider payment is pending, `sold` once paid).
CREATE TABLE orders (
    id               TEXT PRIMARY KEY,
    organization_id  TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id          TEXT REFERENCES users (id) ON DELETE SET NULL,
    -- Guest sessions are pruned when they end; their orders stay.
    guest_session_id TEXT,
    payment_type     TEXT NOT NULL,
    status           TEXT NOT NULL,
    subtotal_cents   BIGINT NOT NULL,
    discount_cents   BIGINT NOT NULL DEFAULT 0,
    total_cents      BIGINT NOT NULL,
    subtotal_tokens  BIGINT,
    discount_tokens  BIGINT,
    total_tokens     BIGINT,
    discount_id      TEXT,
    discount_code    TEXT,
    provider         TEXT,
    payment_id       TEXT,
    customer_info    JSONB NOT NULL DEFAULT '{}',
    shipping_address JSONB,
    email            TEXT,
    reserved_until   TIMESTAMPTZ,
    receipts_sent    BIGINT NOT NULL DEFAULT 0,
    receipt_sent_at  TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX orders_user ON orders (user_id, created_at);
CREATE INDEX orders_org ON orders (organization_id, created_at);
CREATE INDEX orders_pending ON orders (reserved_until) WHERE status = 'pending';
CREATE INDEX orders_payment ON orders (payment_id);

CREATE TABLE order_lines (
    order_id     TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    item_id      TEXT NOT NULL,
    sku          TEXT NOT NULL,
    quantity     BIGINT NOT NULL,
    price_cents  BIGINT NOT NULL,
    price_tokens BIGINT,
    PRIMARY KEY (order_id, item_id)
);

ALTER TABLE inventory_units ADD COLUMN order_id TEXT;
CREATE INDEX inventory_units_order ON inventory_units (order_id);
-- Checkout and claims take the oldest available units of an item: this index finds them
-- without sorting every available unit (a hot item has thousands).
CREATE INDEX inventory_units_available ON inventory_units (item_id, created_at, id)
    WHERE status = 'available' AND deleted_at IS NULL;
