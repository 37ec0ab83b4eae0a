//! What each domain area's refusals look like on the wire: the one place a domain error
//! gets its status, its message and the fields a client can act on. Every match is
//! exhaustive, so a new refusal cannot reach a client without a status chosen here.

use axum::http::StatusCode;

use super::ApiError;
use crate::adapters::appstore::StoreError;
use crate::adapters::payments::ProviderError;
use crate::adapters::storage::StorageError;
use crate::domain::accounts::AccountError;
use crate::domain::checkout::{CheckoutError, MAX_UNPAID_UNITS, MAX_UNPAID_UNITS_PER_ITEM};
use crate::domain::downloads::SourceError;
use crate::domain::grants::GrantError;
use crate::domain::idp::IdTokenError;
use crate::domain::ledger::LedgerError;
use crate::domain::orders::OrderError;
use crate::domain::orgs::OrgError;
use crate::domain::records::RecordError;
use crate::domain::uploads::{UploadError, UPLOAD_LIMIT};
use crate::domain::Invalid;
use crate::json_depth::MAX_DEPTH;
use plinth_actors::credits::CreditError;

/// The error's own words with `status`.
fn said(status: StatusCode, e: &impl std::fmt::Display) -> ApiError {
    ApiError::new(status, e.to_string())
}

/// A 503 whose cause is logged by the usage layer, never sent.
fn unavailable(message: &str, cause: impl std::fmt::Display) -> ApiError {
    let mut err = ApiError::service_unavailable(message);
    err.cause = Some(cause.to_string());
    err
}

impl From<Invalid> for ApiError {
    fn from(e: Invalid) -> Self {
        ApiError::bad_request(e.0)
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(e: tokio::task::JoinError) -> Self {
        ApiError::internal(e)
    }
}

impl From<SourceError> for ApiError {
    fn from(e: SourceError) -> Self {
        match e {
            SourceError::Invalid(e) => e.into(),
            SourceError::NotOwn { .. } => said(StatusCode::FORBIDDEN, &e),
        }
    }
}

impl From<IdTokenError> for ApiError {
    fn from(e: IdTokenError) -> Self {
        match e {
            IdTokenError::Invalid(_) => said(StatusCode::UNAUTHORIZED, &e),
            IdTokenError::KeysUnavailable(ref cause) => unavailable(&e.to_string(), cause),
        }
    }
}

impl From<GrantError> for ApiError {
    fn from(e: GrantError) -> Self {
        match e {
            GrantError::Unconfigured => ApiError::not_offered(e.to_string()),
            GrantError::Invalid
            | GrantError::Expired
            | GrantError::TooFarAhead
            | GrantError::Used => said(StatusCode::UNAUTHORIZED, &e),
            GrantError::Db(e) => e.into(),
        }
    }
}

impl From<RecordError> for ApiError {
    fn from(e: RecordError) -> Self {
        match e {
            RecordError::Invalid(e) => e.into(),
            RecordError::TooDeep => said(StatusCode::BAD_REQUEST, &e).with("max_depth", MAX_DEPTH),
            RecordError::TooLarge => said(StatusCode::BAD_REQUEST, &e),
            RecordError::Busy => said(StatusCode::CONFLICT, &e),
        }
    }
}

impl From<UploadError> for ApiError {
    fn from(e: UploadError) -> Self {
        match e {
            UploadError::Invalid(e) => e.into(),
            UploadError::TooLarge => {
                said(StatusCode::BAD_REQUEST, &e).with("max_bytes", UPLOAD_LIMIT)
            }
            UploadError::Storage(e) => e.into(),
        }
    }
}

impl From<OrgError> for ApiError {
    fn from(e: OrgError) -> Self {
        match e {
            OrgError::NotFound => said(StatusCode::NOT_FOUND, &e),
            OrgError::NotMember | OrgError::NotAdmin(_) => said(StatusCode::FORBIDDEN, &e),
            OrgError::Db(e) => e.into(),
        }
    }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Insufficient {
                required,
                balance,
                ref payment_url,
            } => said(StatusCode::PAYMENT_REQUIRED, &e)
                .with("tokens_required", required)
                .with("tokens_balance", balance)
                .with("payment_url", payment_url.clone()),
            LedgerError::NoAccount => said(StatusCode::NOT_FOUND, &e),
            LedgerError::Unanswered(e) => match e {
                CreditError::NotApplied(_) => unavailable(
                    "the credit ledger is busy; nothing was applied, try again",
                    e,
                ),
                CreditError::Unknown(_) => unavailable(
                    "the credit ledger did not answer in time; the change may still apply: \
                     check the balance or history before retrying",
                    e,
                )
                .with("outcome_unknown", true),
            },
        }
    }
}

impl From<OrderError> for ApiError {
    fn from(e: OrderError) -> Self {
        match e {
            OrderError::Ledger(e) => e.into(),
            OrderError::Payment(e) => e.into(),
            OrderError::Db(e) => e.into(),
            OrderError::NoPaymentId => ApiError::internal(e),
        }
    }
}

impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        match e {
            AccountError::Invalid(e) => e.into(),
            AccountError::NotFound => said(StatusCode::NOT_FOUND, &e),
            AccountError::Data(e) => e.into(),
            AccountError::Busy => said(StatusCode::CONFLICT, &e),
            AccountError::Db(e) => e.into(),
            AccountError::Internal(e) => ApiError::internal(e),
            AccountError::Throttled { retry_after_ms } => {
                said(StatusCode::TOO_MANY_REQUESTS, &e).with("retry_after_ms", retry_after_ms)
            }
        }
    }
}

impl From<CheckoutError> for ApiError {
    fn from(e: CheckoutError) -> Self {
        use CheckoutError as E;
        match e {
            E::Invalid(e) => e.into(),
            E::NoSuchSku(_) | E::ItemGone => said(StatusCode::NOT_FOUND, &e),
            E::HoldsOfItem(_) => said(StatusCode::CONFLICT, &e)
                .with("max_unpaid_units_per_item", MAX_UNPAID_UNITS_PER_ITEM),
            E::Holds => said(StatusCode::CONFLICT, &e).with("max_unpaid_units", MAX_UNPAID_UNITS),
            E::OutOfStock { ref sku, available } => said(StatusCode::CONFLICT, &e)
                .with("sku", sku.clone())
                .with("available", available),
            E::DiscountUsedUp(_) | E::DiscountGone => said(StatusCode::CONFLICT, &e),
            E::BelowMinimum {
                min_order_cents, ..
            } => said(StatusCode::BAD_REQUEST, &e).with("min_order_cents", min_order_cents),
            E::NotPaid => said(StatusCode::PAYMENT_REQUIRED, &e),
            E::Source(e) => e.into(),
            E::Ledger(e) => e.into(),
            E::Payment(e) => e.into(),
            E::Db(e) => e.into(),
            E::Internal(e) => ApiError::internal(e),
        }
    }
}

/// Object storage failed: 503, the cause logged.
impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        unavailable("object storage is unavailable", e)
    }
}

impl From<ProviderError> for ApiError {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::Declined(_) => said(StatusCode::PAYMENT_REQUIRED, &e),
            ProviderError::Invalid(m) => ApiError::bad_request(m),
            ProviderError::NotConfigured => ApiError::not_offered(
                "payments are not offered by this server (PLINTH_STRIPE_SECRET_KEY); \
                 simulated payments run only when no real provider is configured",
            ),
            ProviderError::Unavailable(m) => {
                unavailable("the payment provider is unavailable; try again", m)
            }
        }
    }
}

/// The App Store verifier's refusals (`crate::adapters::appstore`).
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            // A transaction the store does not know: a reference to nothing, like an
            // unknown id.
            StoreError::Unknown(m) => ApiError::not_found(m),
            StoreError::Refused(m) => {
                tracing::warn!(reason = %m, "store transaction refused");
                ApiError::bad_request(format!("the store transaction was refused: {m}"))
            }
            StoreError::Credentials(m) => {
                tracing::error!(error = %m, "the App Store refused plinth's credentials");
                ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    "store credentials refused: the store rejected this server's API key; \
                     an operator must check the PLINTH_APPLE_* settings",
                )
            }
            StoreError::NotConfigured => ApiError::not_offered(
                "the App Store is not offered by this server (PLINTH_APPLE_*); the simulated \
                 store runs only when no real provider is configured",
            ),
            StoreError::Unavailable(m) => {
                tracing::error!(error = %m, "store unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the store is unavailable; try again",
                )
            }
        }
    }
}
