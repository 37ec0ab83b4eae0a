//! `/api/downloads*` answers.
