-- Issue 45: a rotated callback secret stays valid for an overlap window (as Stripe's
-- rolled webhook secrets do): until `previous_expires_at`, events carry a signature
-- with the previous secret beside the new one.
ALTER TABLE callback_secrets ADD COLUMN previous_secret TEXT;
ALTER TABLE callback_secrets ADD COLUMN previous_expires_at TIMESTAMPTZ;
