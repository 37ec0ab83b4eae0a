-- Issue 46: the set-based credit batch (BATCH_POSTGRES in src/db/credits.rs) without
-- the per-row foreign-key check of credit_transactions.account_id. Every ledger row is
-- written in the statement or transaction whose UPDATE of that account returned its id,
-- so the account exists and stays locked until the row commits; the check cost 8-14 %
-- of the batch (docs/benchmarks.md). What the key also did, remove an account's ledger
-- when the account goes (with its user), the trigger below does.
ALTER TABLE credit_transactions DROP CONSTRAINT credit_transactions_account_id_fkey;

CREATE FUNCTION credit_accounts_remove_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM credit_transactions WHERE account_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER credit_accounts_remove_ledger AFTER DELETE ON credit_accounts
    FOR EACH ROW EXECUTE FUNCTION credit_accounts_remove_ledger();

-- Raised by the set-based batch when an account of it was missing or short: the whole
-- statement is undone and the code applies the batch change by change.
CREATE FUNCTION credit_batch_refused() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'credit batch refused: an account is missing or short'
        USING ERRCODE = 'PB001';
END $$;
