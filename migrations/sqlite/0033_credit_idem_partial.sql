-- Only once-only ledger entries carry a key, and NULL keys never conflict: index the keyed
-- rows alone, so a plain deduct writes no leaf of this index (issue 46). Same uniqueness.
DROP INDEX credit_transactions_idem;
CREATE UNIQUE INDEX credit_transactions_idem ON credit_transactions (account_id, idem_key)
    WHERE idem_key IS NOT NULL;
