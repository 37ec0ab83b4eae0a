-- Slide job leases (issue 17): the run that holds a job and until when. A run claims a
-- pending job, or a running one whose lease lapsed (its worker died or stalled), renews
-- the lease while it works, and ends the job only while it still holds it.
ALTER TABLE slide_jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE slide_jobs ADD COLUMN lease_until TIMESTAMPTZ;
