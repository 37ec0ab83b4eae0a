-- Payment-provider state plinth keeps: the customer of each account and its saved
-- payment method, subscriptions, checkout sessions, one-time payments, processed
-- webhook events, and credited store transactions.
CREATE TABLE customers (
    user_id           TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    provider          TEXT NOT NULL,
    customer_id       TEXT NOT NULL UNIQUE,
    payment_method_id TEXT,
    payment_method    TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);

CREATE TABLE subscriptions (
    id                       TEXT PRIMARY KEY,
    user_id                  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider                 TEXT NOT NULL,
    provider_subscription_id TEXT NOT NULL UNIQUE,
    product_id               TEXT NOT NULL,
    level                    INTEGER NOT NULL,
    status                   TEXT NOT NULL,
    created_at               TEXT NOT NULL,
    updated_at               TEXT NOT NULL
);
CREATE INDEX subscriptions_user ON subscriptions (user_id);

CREATE TABLE checkout_sessions (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    product_id   TEXT NOT NULL,
    mode         TEXT NOT NULL,
    status       TEXT NOT NULL,
    success_url  TEXT NOT NULL,
    cancel_url   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX checkout_sessions_user ON checkout_sessions (user_id);

CREATE TABLE payments (
    id                  TEXT PRIMARY KEY,
    user_id             TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider_payment_id TEXT NOT NULL UNIQUE,
    amount_cents        INTEGER NOT NULL,
    status              TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL
);
CREATE INDEX payments_user ON payments (user_id);

CREATE TABLE webhook_events (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    received_at TEXT NOT NULL
);

CREATE TABLE store_transactions (
    transaction_id TEXT PRIMARY KEY,
    store          TEXT NOT NULL,
    user_id        TEXT REFERENCES users (id) ON DELETE SET NULL,
    product_id     TEXT NOT NULL,
    tokens         INTEGER NOT NULL,
    created_at     TEXT NOT NULL
);
