-- Exports an account has queued or running, counted on every exports/create (the cap on
-- live renders per account, security review N-H3).
CREATE INDEX slide_jobs_live ON slide_jobs (requested_by) WHERE status IN ('pending', 'running');
