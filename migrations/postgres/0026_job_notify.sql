-- Issue 34: a client waiting on a slide job (GET /api/slides/jobs/{id}?wait=N, the job's
-- event stream) is woken by the change itself, whichever process made it: every change
-- of a job's status or progress notifies `plinth_jobs` with the job's id, delivered when
-- the change commits (src/watch.rs listens). SQLite has no notifications between
-- processes: there the writing process wakes its own waiters.
CREATE FUNCTION plinth_slide_job_changed() RETURNS trigger AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status OR NEW.done IS DISTINCT FROM OLD.done
       OR NEW.total IS DISTINCT FROM OLD.total THEN
        PERFORM pg_notify('plinth_jobs', NEW.id);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER slide_jobs_changed AFTER UPDATE ON slide_jobs
    FOR EACH ROW EXECUTE FUNCTION plinth_slide_job_changed();
