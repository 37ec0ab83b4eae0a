-- Accounts, one-time codes and credit accounts (the ledger grows with the money issue).
CREATE TABLE users (
    id               TEXT PRIMARY KEY,
    email            TEXT NOT NULL UNIQUE,
    username         TEXT UNIQUE,
    key_hash         TEXT NOT NULL UNIQUE,
    key_cipher       TEXT NOT NULL,
    password_hash    TEXT,
    level            INTEGER NOT NULL DEFAULT 0,
    verified         BOOLEAN NOT NULL DEFAULT FALSE,
    data             TEXT NOT NULL DEFAULT '{}',
    wallet_address   TEXT,
    wallet_signature TEXT,
    source           TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    deleted_at       TEXT,
    -- Bumped on every write of `data`, for optimistic read-modify-write merges.
    version          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX users_source ON users (source);

CREATE TABLE user_codes (
    code_hash  TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX user_codes_user ON user_codes (user_id);

CREATE TABLE credit_accounts (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    balance    INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE credit_transactions (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES credit_accounts (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    amount        INTEGER NOT NULL,
    balance_after INTEGER NOT NULL,
    data          TEXT NOT NULL DEFAULT '{}',
    created_at    TEXT NOT NULL
);
CREATE INDEX credit_transactions_account ON credit_transactions (account_id, created_at);
