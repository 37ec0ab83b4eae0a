-- Guest checkout sessions (24 hours, bound to one organization; the token is kept as
-- its sha256) and their carts.
CREATE TABLE guest_sessions (
    id              TEXT PRIMARY KEY,
    token_hash      TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    expires_at      TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);

CREATE TABLE guest_cart_lines (
    session_id TEXT NOT NULL REFERENCES guest_sessions (id) ON DELETE CASCADE,
    item_id    TEXT NOT NULL REFERENCES inventory_items (id) ON DELETE CASCADE,
    quantity   BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (session_id, item_id)
);
