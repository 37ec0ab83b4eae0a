-- Issue 42. Each emailed sign-up confirmation belongs to the sign-up attempt that sent
-- it, and confirms that attempt's password and source only: whoever registers an address
-- first never gets it by its owner's click on another attempt's link, and a code alone
-- no longer clears a password its owner chose.
CREATE TABLE signup_attempts (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The sign-up that created the account: confirming it keeps the account's current
    -- password (so password_hash is NULL). A later attempt carries its own password.
    opened_account BOOLEAN NOT NULL,
    password_hash  TEXT,
    source         TEXT,
    -- Shown on the confirmation page ("when and from where").
    client_ip      TEXT,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX signup_attempts_user ON signup_attempts (user_id);
-- NULL for codes that confirm no attempt (reset, sign-in, and verification codes sent
-- before this migration, which keep their old meaning).
ALTER TABLE user_codes ADD COLUMN attempt_id TEXT REFERENCES signup_attempts (id) ON DELETE CASCADE;

-- Security review 2026-11-28, N-M3: failed password sign-ins per target email (its
-- sha256), whatever the client address, with growing delays.
CREATE TABLE sign_in_failures (
    email_hash TEXT PRIMARY KEY,
    failures   BIGINT NOT NULL,
    next_at    TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
