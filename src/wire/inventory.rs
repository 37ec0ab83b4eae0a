//! `/api/inventory*` answers.
