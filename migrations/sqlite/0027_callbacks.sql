-- Issue 34: completion callbacks. An export may name a `callback_url`: when it ends,
-- plinth POSTs a signed event there (the `callbacks` queue). Each account signs with its
-- own secret (`whsec_...`, AES-256-CTR under the master key), made on first use and
-- replaced by a rotation.
ALTER TABLE slide_jobs ADD COLUMN callback_url TEXT;

CREATE TABLE callback_secrets (
    user_id    TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
