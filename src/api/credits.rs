//! Credits: `/api/credits*`. Balances change only through the credit-account actors
//! (`app.credits`), which serialize changes per account over the ledger in the database.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::extract::{Query, State};
use plinth_actors::credits::{Applied, Change, CreditError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::db::{credits as store, users as users_db};
use crate::domain::accounts::parse_email;
use crate::domain::ledger::{balance_after, entry, LedgerError, MAX_AMOUNT};
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, IdempotencyKey, JsonBody};
use crate::http::idempotency;
use crate::http::reply::{Answer, Recorded};
use crate::http::request::{Limit, NonBlank, Offset};
use crate::route_spec::{Category, ADDITIONS};
use crate::state::AppState;
use crate::states::LedgerKind;
use crate::wire::credits::{
    Account, AccountCheck, AccountCreated, BalanceByEmail, BalanceByUser, BonusDistributed,
    Deducted, History, MonthlyDistributed, Pricing, RoutePrice, Sent, StoreCredited, Tier,
    Transaction, VendorDistributed, Window,
};
use crate::wire::True;

/// Bonuses payable by `distribute-bonus` (`fixtures/bonuses.json`), each once per account.
static BONUSES: LazyLock<HashMap<String, i64>> = LazyLock::new(|| {
    let all: HashMap<String, Value> =
        serde_json::from_str(include_str!("../../fixtures/bonuses.json"))
            .expect("valid bonuses.json");
    all.into_iter()
        .filter_map(|(k, v)| Some((k, v.as_i64()?)))
        .collect()
});

/// Tokens paid per cent of a vendor distribution.
pub const TOKENS_PER_CENT: i64 = 1;

fn check_amount(field: &str, amount: i64) -> ApiResult<i64> {
    if amount <= 0 {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be a positive integer"
        )));
    }
    if amount > MAX_AMOUNT {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be at most {MAX_AMOUNT}"
        )));
    }
    Ok(amount)
}

fn first_transaction(applied: &Applied) -> Option<String> {
    match applied {
        Applied::Done {
            transaction_ids, ..
        } => transaction_ids.first().cloned(),
        _ => None,
    }
}

async fn current_balance(app: &AppState, user_id: &str) -> ApiResult<i64> {
    app.credits
        .balance(user_id)
        .await
        // The shard or the database did not answer in time: nothing changed, ask again.
        .map_err(|e| ApiError::unavailable(crate::db::Outage::NotApplied, e))?
        .ok_or_else(|| ApiError::not_found("no credit account"))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Page {
    #[serde(default)]
    limit: Limit<50, 200>,
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/credits`: the caller's ledger, newest first (`limit` default 50, max 200).
pub async fn history(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(page): Query<Page>,
) -> ApiResult<Answer<History>> {
    let (limit, offset) = (page.limit.get(), page.offset.get());
    let (rows, total) = store::history(&app.db, &caller.id, limit, offset).await?;
    Ok(Answer(History {
        data: rows.into_iter().map(Transaction::from).collect(),
        total,
        limit,
        offset,
    }))
}

/// `GET /api/credits/balance`.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct BalanceAnswer {
    /// Tokens, never negative.
    balance: i64,
    account_id: String,
}

pub async fn balance(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<BalanceAnswer>> {
    let account = store::account(&app.db, &caller.id)
        .await?
        .ok_or_else(|| ApiError::not_found("no credit account"))?;
    let balance = current_balance(&app, &caller.id).await?;
    Ok(Answer(BalanceAnswer {
        balance,
        account_id: account.id,
    }))
}

/// `POST /api/credits/check`: whether the credit account `id` exists and belongs to the
/// caller (any account, for an admin).
pub async fn check(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<AccountCheck>> {
    let account = store::account_by_id(&app.db, &body.id).await?;
    let valid = account
        .as_ref()
        .is_some_and(|a| a.user_id == caller.id || caller.is_admin());
    Ok(Answer(AccountCheck {
        valid,
        account_id: body.id,
        user_id: account.filter(|_| valid).map(|a| a.user_id),
    }))
}

/// `POST /api/credits/create-account-by-user-id` (admin): idempotent.
pub async fn create_account_by_user_id(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<AccountCreated>> {
    users_db::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    let created = store::ensure_account(&app.db, &body.id).await?;
    app.credits.forget(&body.id);
    let account = store::account(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::internal("credit account missing after creation"))?;
    Ok(Answer(AccountCreated {
        success: True,
        created,
        data: Account {
            id: account.id,
            user_id: account.user_id,
            balance: account.balance,
            created_at: account.created_at,
        },
    }))
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct DeductBody {
    #[schemars(range(min = 1, max = MAX_AMOUNT))]
    credit: i64,
}

/// Runs a token-moving route behind the request's `Idempotency-Key` header (none: it just
/// runs): a retry with the same key and body replays the first answer and moves nothing,
/// another body under the key is a 422 (docs/api.md). `work` gets the ledger key to
/// apply its change under (`<route>:<key>`), so that it applies at most once even when
/// the first try's outcome was unknown and the retry runs again.
async fn keyed<T, F, Fut>(
    app: &AppState,
    key: IdempotencyKey,
    route: &'static str,
    caller: &str,
    body: &impl Serialize,
    work: F,
) -> ApiResult<Recorded<T>>
where
    T: Serialize,
    F: FnOnce(Option<String>) -> Fut,
    Fut: std::future::Future<Output = ApiResult<T>>,
{
    let scope = format!("credits:{caller}");
    idempotency::recorded(app, key.0, route, scope, body, true, |key| {
        work(key.map(|k| format!("{route}:{k}")))
    })
    .await
}

/// The caller's balance after a change and its transaction: from the change just
/// applied, or, when its ledger key was applied before (an earlier try whose answer was
/// lost), from that ledger row, which must be of the same amount.
async fn outcome(
    app: &AppState,
    user_id: &str,
    applied: Option<Applied>,
    ledger_key: Option<&str>,
    amount: i64,
) -> ApiResult<(Option<i64>, Option<String>)> {
    if let Some(applied) = applied {
        return Ok((
            balance_after(&applied, user_id),
            first_transaction(&applied),
        ));
    }
    let row = match ledger_key {
        Some(k) => store::by_idem_key(&app.db, user_id, k).await?,
        None => None,
    };
    match row {
        Some((id, a, balance)) if a == amount => Ok((Some(balance), Some(id))),
        Some(_) => Err(idempotency::reused(
            "this Idempotency-Key was already used with a different request",
        )),
        None => Err(ApiError::internal("a change without a key was a repeat")),
    }
}

/// `POST /api/credits/deduct`: 402 when the balance is short. Takes `Idempotency-Key`.
pub async fn deduct(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<DeductBody>,
) -> ApiResult<Recorded<Deducted>> {
    check_amount("credit", body.credit)?;
    let (credit, app, caller) = (body.credit, &app, &caller);
    keyed(
        app,
        key,
        "credits/deduct",
        &caller.id,
        &body,
        |key| async move {
            let change = entry(
                &caller.id,
                -credit,
                LedgerKind::Deduct,
                key.clone(),
                json!({}),
            );
            let applied = app.domain.ledger.apply(vec![change]).await?;
            let (balance, transaction_id) =
                outcome(app, &caller.id, applied, key.as_deref(), -credit).await?;
            Ok(Deducted {
                success: True,
                deducted: credit,
                balance,
                transaction_id,
            })
        },
    )
    .await
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct BonusBody {
    #[serde(rename = "bonusName")]
    #[schemars(schema_with = "bonus_names")]
    bonus_name: String,
}

/// The bonus names of `fixtures/bonuses.json`, as the document lists them.
fn bonus_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut names: Vec<&str> = BONUSES.keys().map(String::as_str).collect();
    names.sort_unstable();
    crate::wire::names_schema(names, false)
}

/// `POST /api/credits/distribute-bonus`: a bonus from `fixtures/bonuses.json`, once per
/// account (`already_distributed: true` on repeat).
pub async fn distribute_bonus(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<BonusBody>,
) -> ApiResult<Recorded<BonusDistributed>> {
    // Once per account by its name already; the key replays the first answer.
    let route = "credits/distribute-bonus";
    keyed(&app, key, route, &caller.id, &body, |_| {
        bonus(&app, &caller, &body)
    })
    .await
}

async fn bonus(app: &AppState, caller: &Caller, body: &BonusBody) -> ApiResult<BonusDistributed> {
    let amount = *BONUSES.get(body.bonus_name.trim()).ok_or_else(|| {
        let mut names: Vec<_> = BONUSES.keys().cloned().collect();
        names.sort();
        ApiError::bad_request(format!(
            "unknown bonus `{}`; known: {}",
            body.bonus_name,
            names.join(", ")
        ))
    })?;
    let name = body.bonus_name.trim();
    let applied = app
        .domain
        .ledger
        .apply(vec![entry(
            &caller.id,
            amount,
            LedgerKind::Bonus,
            Some(format!("bonus:{name}")),
            json!({"bonus": name}),
        )])
        .await?;
    let balance = current_balance(app, &caller.id).await?;
    Ok(BonusDistributed {
        success: True,
        bonus: name.to_owned(),
        amount: if applied.is_some() { amount } else { 0 },
        already_distributed: applied.is_none(),
        balance,
    })
}

/// `POST /api/credits/distribute-to-user-id` (admin): the monthly allotment by tier,
/// once per calendar month.
pub async fn distribute_to_user_id(
    State(app): State<AppState>,
    Viewer(admin): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Recorded<MonthlyDistributed>> {
    // Once per month by the ledger already; the key replays the first answer.
    let route = "credits/distribute-to-user-id";
    keyed(&app, key, route, &admin.id, &body, |_| async {
        let user = users_db::by_id(&app.db, &body.id)
            .await?
            .ok_or_else(|| ApiError::not_found("user not found"))?;
        let (amount, repeat) = app.domain.ledger.distribute_monthly(&user).await?;
        Ok(MonthlyDistributed {
            success: True,
            amount: if repeat { 0 } else { amount },
            already_distributed: repeat,
            month: chrono::Utc::now().format("%Y-%m").to_string(),
            balance: current_balance(&app, &user.id).await?,
        })
    })
    .await
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EmailBody {
    #[schemars(email)]
    email: String,
}

/// `POST /api/credits/get-balance-by-email` (admin).
pub async fn get_balance_by_email(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<EmailBody>,
) -> ApiResult<Answer<BalanceByEmail>> {
    let email = parse_email(&body.email)?;
    let user = users_db::by_email(&app.db, &email)
        .await?
        .ok_or_else(|| ApiError::not_found("no account with that email"))?;
    let balance = current_balance(&app, &user.id).await?;
    Ok(Answer(BalanceByEmail {
        balance,
        user_id: user.id,
        email,
    }))
}

/// `POST /api/credits/get-balance-by-user-id` (admin).
pub async fn get_balance_by_user_id(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<BalanceByUser>> {
    users_db::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    let balance = current_balance(&app, &body.id).await?;
    Ok(Answer(BalanceByUser {
        balance,
        user_id: body.id,
    }))
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(extend("anyOf" = [{"required": ["username"], "properties": {"username": {"type": "string", "pattern": "\\S"}}}, {"required": ["email"], "properties": {"email": {"type": "string"}}}]))]
pub struct SendBody {
    #[schemars(range(min = 1, max = MAX_AMOUNT))]
    amount: i64,
    username: Option<String>,
    #[schemars(email)]
    email: Option<String>,
}

async fn recipient(app: &AppState, body: &SendBody) -> ApiResult<users_db::UserRow> {
    let found = match (&body.username, &body.email) {
        (Some(u), _) if !u.trim().is_empty() => {
            users_db::by_username(&app.db, &u.trim().to_lowercase()).await?
        }
        (_, Some(e)) => users_db::by_email(&app.db, &parse_email(e)?).await?,
        _ => {
            return Err(ApiError::bad_request(
                "name the recipient by `username` or `email`",
            ))
        }
    };
    found.ok_or_else(|| ApiError::not_found("recipient not found"))
}

/// `POST /api/credits/send`: moves `amount` to another account, atomically. Takes
/// `Idempotency-Key`.
pub async fn send(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<SendBody>,
) -> ApiResult<Recorded<Sent>> {
    check_amount("amount", body.amount)?;
    let to = recipient(&app, &body).await?;
    if to.id == caller.id {
        return Err(ApiError::bad_request("you cannot send tokens to yourself"));
    }
    let (amount, app, caller, to) = (body.amount, &app, &caller, &to);
    keyed(
        app,
        key,
        "credits/send",
        &caller.id,
        &body,
        |key| async move {
            let applied = transfer(app, caller, to, amount, &key).await?;
            let (balance, transaction_id) =
                outcome(app, &caller.id, applied, key.as_deref(), -amount).await?;
            Ok(Sent {
                success: True,
                amount,
                recipient_id: to.id.clone(),
                balance,
                transaction_id,
            })
        },
    )
    .await
}

/// Both sides of a transfer; under a ledger key, each side's row carries it (the
/// recipient's with the sender's id, since ledger keys are unique per account). `None`
/// when the key was applied before.
async fn transfer(
    app: &AppState,
    from: &Caller,
    to: &users_db::UserRow,
    amount: i64,
    key: &Option<String>,
) -> ApiResult<Option<Applied>> {
    let group = uuid::Uuid::new_v4().to_string();
    Ok(app
        .domain
        .ledger
        .apply(vec![
            entry(
                &from.id,
                -amount,
                LedgerKind::TransferOut,
                key.clone(),
                json!({"to": to.id, "transfer": group}),
            ),
            entry(
                &to.id,
                amount,
                LedgerKind::TransferIn,
                key.as_ref().map(|k| format!("{k}:from:{}", from.id)),
                json!({"from": from.id, "transfer": group}),
            ),
        ])
        .await?)
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct VendorBody {
    #[schemars(email)]
    email: String,
    #[serde(rename = "vendorId")]
    vendor_id: NonBlank,
    #[schemars(range(min = 1, max = MAX_AMOUNT))]
    amount_cents: i64,
    /// Optional reference of the vendor's payout: the same one is paid once.
    reference: Option<String>,
}

/// `POST /api/credits/vendor-distribution-to-email` (admin): `amount_cents` at
/// `TOKENS_PER_CENT` tokens per cent.
pub async fn vendor_distribution_to_email(
    State(app): State<AppState>,
    Viewer(admin): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<VendorBody>,
) -> ApiResult<Recorded<VendorDistributed>> {
    let route = "credits/vendor-distribution-to-email";
    keyed(&app, key, route, &admin.id, &body, |key| {
        vendor_distribution(&app, &body, key)
    })
    .await
}

/// Paid once per `reference` when there is one, else once per idempotency key.
async fn vendor_distribution(
    app: &AppState,
    body: &VendorBody,
    idempotency_key: Option<String>,
) -> ApiResult<VendorDistributed> {
    check_amount("amount_cents", body.amount_cents)?;
    if body.vendor_id.trim().is_empty() {
        return Err(ApiError::bad_request("`vendorId` must not be empty"));
    }
    let email = parse_email(&body.email)?;
    let user = users_db::by_email(&app.db, &email)
        .await?
        .ok_or_else(|| ApiError::not_found("no account with that email"))?;
    let tokens = body
        .amount_cents
        .checked_mul(TOKENS_PER_CENT)
        .ok_or_else(|| ApiError::bad_request("`amount_cents` is too large"))?;
    let key = body
        .reference
        .as_deref()
        .map(|r| format!("vendor:{}:{}", body.vendor_id.trim(), r.trim()))
        .or(idempotency_key);
    let applied = app.domain.ledger.apply(
        vec![entry(
            &user.id,
            tokens,
            LedgerKind::VendorDistribution,
            key,
            json!({"vendor_id": body.vendor_id, "amount_cents": body.amount_cents, "reference": body.reference}),
        )],
    )
    .await?;
    let balance = current_balance(app, &user.id).await?;
    Ok(VendorDistributed {
        success: True,
        tokens: if applied.is_some() { tokens } else { 0 },
        already_distributed: applied.is_none(),
        user_id: user.id,
        balance,
    })
}

/// Every endpoint with its token cost, rate category and base limit.
pub async fn pricing(State(app): State<AppState>) -> ApiResult<Answer<Pricing>> {
    // The spec's routes (the additions are documented apart).
    let data = app
        .routes
        .listed()
        .filter(|r| r.area != ADDITIONS)
        .map(|r| RoutePrice {
            method: r.method,
            path: r.path,
            cost: app.routes.cost_of(r),
            category: r.category.name(),
            limit: r.category.base_limit(),
            interval_ms: r.category.interval_ms(),
            access: r.access.name(),
            implemented: r.built,
        })
        .collect();
    let categories = Category::ALL
        .iter()
        .map(|c| {
            let window = Window {
                limit: c.base_limit(),
                interval_ms: c.interval_ms(),
            };
            (c.name(), window)
        })
        .collect();
    let tier = |level, name, monthly_credits, rate_multiplier| Tier {
        level,
        name,
        monthly_credits,
        rate_multiplier,
    };
    Ok(Answer(Pricing {
        data,
        categories,
        tiers: vec![
            tier(0, "UNVERIFIED", 0, Some(1)),
            tier(10, "VERIFIED", 0, Some(6)),
            tier(20, "PAYING", 1500, Some(12)),
            tier(30, "GENERAL_CO_WORKING", 45000, Some(120)),
            tier(40, "PARTNER", 45000, Some(1200)),
            tier(100, "ADMIN", 45000, None),
        ],
        rate_limit_multiplier: app.opts.rates.rate_limit_multiplier,
    }))
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct StoreBody {
    #[serde(rename = "transactionId")]
    transaction_id: NonBlank,
}

/// `POST /api/credits/verify-apple-transaction-distritbution`: credits a purchase that the
/// configured store (`app.store_verifier`: simulated, or Apple's App Store Server API)
/// vouches for, once, ever: a repeat by the same account says so, another account gets 409.
pub async fn verify_apple_transaction(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<StoreBody>,
) -> ApiResult<Recorded<StoreCredited>> {
    // Once per store transaction already; the key replays the first answer.
    let route = "credits/verify-apple-transaction";
    keyed(&app, key, route, &caller.id, &body, |_| {
        store_credit(&app, &caller, &body)
    })
    .await
}

async fn store_credit(
    app: &AppState,
    caller: &Caller,
    body: &StoreBody,
) -> ApiResult<StoreCredited> {
    let id = body.transaction_id.trim();
    if id.is_empty() {
        return Err(ApiError::bad_request("`transactionId` must not be empty"));
    }
    let verified = app.store_verifier.verify(id).await?;
    let id = verified.transaction_id.as_str();
    let product = verified.product_id;
    let tokens = crate::adapters::appstore::product_tokens(&product)
        .and_then(|t| t.checked_mul(verified.quantity))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "the product `{product}` of that transaction is not sold for tokens here"
            ))
        })?;
    match crate::db::payments::claim_store_transaction(
        &app.db, "apple", id, &caller.id, &product, tokens,
    )
    .await?
    {
        Ok(()) => {}
        Err(Some(owner)) if owner == caller.id => {
            return Ok(StoreCredited {
                success: True,
                already_distributed: true,
                product_id: None,
                tokens: 0,
                balance: current_balance(app, &caller.id).await?,
            })
        }
        Err(_) => {
            return Err(ApiError::conflict(
                "that transaction was already credited to another account",
            ))
        }
    }
    let credited = app
        .credits
        .apply(Change {
            entries: vec![entry(
                &caller.id,
                tokens,
                LedgerKind::StorePurchase,
                Some(format!("store:apple:{id}")),
                json!({"store": "apple", "transaction_id": id, "product_id": product, "quantity": verified.quantity}),
            )],
        })
        .await;
    match credited {
        Ok(Applied::Done { .. } | Applied::Duplicate) => {}
        Ok(_) | Err(CreditError::NotApplied(_)) => {
            // Certainly not credited: the transaction may be claimed again.
            crate::db::payments::release_store_transaction(&app.db, id).await?;
            return Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "the credit could not be applied; try again",
            ));
        }
        // It may still land: keep the claim, so no other account can take it (M9).
        Err(e @ CreditError::Unknown(_)) => return Err(LedgerError::Unanswered(e).into()),
    }
    Ok(StoreCredited {
        success: True,
        already_distributed: false,
        product_id: Some(product),
        tokens,
        balance: current_balance(app, &caller.id).await?,
    })
}
