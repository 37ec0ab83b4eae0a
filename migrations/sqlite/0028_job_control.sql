-- Issue 34: the console's queue and process controls. A queue in `job_queues` with a
-- `paused_at` is paused: no worker of any process starts a job of it (each process reads
-- this every second); jobs already running finish. `job_processes` is every process
-- that runs workers, as it last said (a heartbeat every 5 s): its role, host, pid,
-- version, the prefix of its worker names and its pools; a row goes when its process
-- stops, and rows not refreshed for a day are pruned.
CREATE TABLE job_queues (
    queue     TEXT PRIMARY KEY,
    paused_at TEXT,
    paused_by TEXT
);

CREATE TABLE job_processes (
    name          TEXT PRIMARY KEY,
    role          TEXT NOT NULL,
    host          TEXT NOT NULL,
    pid           BIGINT NOT NULL,
    version       TEXT NOT NULL,
    worker_prefix TEXT NOT NULL,
    pools         TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    last_seen     TEXT NOT NULL
);
