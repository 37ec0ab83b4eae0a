-- Issue 36: `/readyz` writes one row per process, so that readiness fails while writes
-- fail (a full disk, a read-only database), not only while reads do.
CREATE TABLE readiness_probe (
    process TEXT PRIMARY KEY,
    at TIMESTAMP NOT NULL
);
