-- Issue 34: every run of a job, as operators read it (the attempt history of
-- `plinth jobs show`, the console and GET /api/admin/jobs/{id}), written by the
-- workers' lifecycle layer when a run ends; pruned with the job retention. `job_id` is
-- apalis's id of the job (`Jobs.id`); `waited_ms` how long the job waited for a worker
-- (due to started: the console's latency chart).
CREATE TABLE job_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      TEXT NOT NULL,
    queue       TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    worker      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    waited_ms   INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    cause       TEXT,
    error       TEXT,
    next_at     TEXT
);
CREATE INDEX job_attempts_job ON job_attempts (job_id);
CREATE INDEX job_attempts_finished ON job_attempts (finished_at);
