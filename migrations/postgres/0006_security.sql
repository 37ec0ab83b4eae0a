-- Token-exchange grants are single-use (review finding C3): the sha256 of each redeemed
-- grant is kept until the grant would have expired anyway.
CREATE TABLE used_grants (
    token_hash TEXT PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX used_grants_expires ON used_grants (expires_at);
