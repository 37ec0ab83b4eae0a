-- Carts (one per user; lines name an inventory item) and discount codes of an
-- organization. Checkout (which uses both) comes with the orders.
CREATE TABLE cart_lines (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    item_id    TEXT NOT NULL REFERENCES inventory_items (id) ON DELETE CASCADE,
    quantity   BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, item_id)
);

CREATE TABLE discounts (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    code            TEXT NOT NULL,
    type            TEXT NOT NULL,
    value           DOUBLE PRECISION NOT NULL,
    expires_at      TIMESTAMPTZ,
    max_uses        BIGINT,
    uses            BIGINT NOT NULL DEFAULT 0,
    min_order_cents BIGINT,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (organization_id, code)
);
