-- Facts about the deployment that every process checks at start. `master_key_check` is
-- HMAC-SHA256(master key, "plinth-master-key-check") in hex, stored by the first process
-- (never the key): a process started with another key refuses to start.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Periodic work runs once per round across every process (src/periodic.rs): a process
-- runs a task only after claiming its row with one conditional upsert, which succeeds
-- only when the last claim's round has ended (`until_ms`, Unix milliseconds).
CREATE TABLE periodic_leases (
    name     TEXT PRIMARY KEY,
    holder   TEXT NOT NULL,
    until_ms BIGINT NOT NULL
);

-- Which process ran which round (kept a day): what an operator reads to see who does the
-- periodic work, and what the tests count to prove once per round.
CREATE TABLE periodic_runs (
    name     TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    holder   TEXT NOT NULL,
    ran_ms   BIGINT NOT NULL
);
CREATE INDEX periodic_runs_name_ran ON periodic_runs (name, ran_ms);
