-- Once-only ledger entries (a bonus per user, the monthly allotment per month, a vendor
-- reference, a store transaction): the key is unique per account.
ALTER TABLE credit_transactions ADD COLUMN idem_key TEXT;
CREATE UNIQUE INDEX credit_transactions_idem ON credit_transactions (account_id, idem_key);
