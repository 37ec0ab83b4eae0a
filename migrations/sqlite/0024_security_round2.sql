-- One claimed unit per account and item, enforced by the database (security round 2,
-- M4: concurrent claims once gave one account two units). Claims made twice before this
-- index keep their oldest unit; the others go back to stock.
UPDATE inventory_units SET status = 'available', holder_id = NULL
WHERE id IN (
    SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (PARTITION BY item_id, holder_id ORDER BY updated_at, id) AS n
        FROM inventory_units WHERE status = 'claimed'
    ) AS ranked WHERE n > 1
);
CREATE UNIQUE INDEX inventory_units_one_claim ON inventory_units (item_id, holder_id)
    WHERE status = 'claimed';

-- Whether the member joined by their own act (created the organization, joined it
-- through membership/automatic) rather than being added by an admin: only such members
-- get the organization's email templates (security round 2, M1). Unknown for later rows
-- from before, so false.
ALTER TABLE organization_members ADD COLUMN self_joined BOOLEAN NOT NULL DEFAULT FALSE;
-- The organization's first member is the one who created it.
UPDATE organization_members SET self_joined = TRUE
WHERE created_at = (SELECT MIN(m.created_at) FROM organization_members m
                    WHERE m.organization_id = organization_members.organization_id);

-- Whether the account's `source` is its owner's own choice (a sign-up through the
-- organization) rather than an organization admin's (a waitlist accept creates the
-- account): only the former opts the account into the organization's email templates
-- (security round 2, M1 and L7). Rows from before keep what they had.
ALTER TABLE users ADD COLUMN source_by_self BOOLEAN NOT NULL DEFAULT TRUE;
