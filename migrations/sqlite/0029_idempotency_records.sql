-- Issue 34: one idempotency mechanism for deck changes and checkouts
-- (domain::idempotency, src/api/idempotent.rs): the table named for its first user gets
-- the name of what it holds, and an index on the key, by which the usage layer finds a
-- recorded answer to replay before a request is counted in a rate window.
ALTER TABLE slide_idempotency RENAME TO idempotency_records;
CREATE INDEX idempotency_records_key ON idempotency_records (key);
