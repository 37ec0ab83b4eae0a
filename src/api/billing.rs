//! Money in: subscriptions (`/api/users/subscriptions*`), the payment rows of the Users
//! area (`/api/users/authenticate-agent`, `/api/users/viewer/generate-add-payment-method-url`,
//! `/api/users/viewer/get-current-payment-method`,
//! `/api/users/viewer/pay-provider-amount-cents`) and the provider's webhook
//! (`/api/webhooks/stripe`). Tier changes and allotments happen when the provider's signed
//! event arrives, never on the client's word.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::adapters::payments::{plan, verify_signature, PLANS};
use crate::db::{payments as store, users as users_db};
use crate::http::auth::Viewer;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::{Answer, PrivateAnswer};
use crate::state::AppState;
use crate::states::{CheckoutMode, CheckoutStatus, PaymentStatus, SubscriptionStatus};
use crate::wire::billing::{
    AgentAccount, AgentSubscription, Charged, CheckoutSession, CurrentPaymentMethod, Invoice,
    PaymentMethodUrl, Plan, Subscription, SubscriptionCheck, Unsubscribed, WebhookReceived,
};
use crate::wire::{Data, True};

/// `GET /api/users/subscriptions` (Public): the plans and the tiers they grant.
pub async fn plans() -> ApiResult<Answer<Data<Vec<Plan>>>> {
    Ok(Answer(Data {
        data: PLANS.iter().map(Plan::from).collect(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SubscribeBody {
    #[serde(rename = "productId")]
    product_id: String,
    #[serde(rename = "successUrl")]
    #[schemars(regex(pattern = r"^https?://"))]
    success_url: String,
    #[serde(rename = "cancelUrl")]
    #[schemars(regex(pattern = r"^https?://"))]
    cancel_url: String,
}

fn check_url(name: &str, url: &str) -> Result<(), ApiError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{name}` must be an http(s) URL"
        )))
    }
}

/// `POST /api/users/subscriptions/subscribe`: a subscription-mode checkout session; the
/// client sends the person to `url`.
pub async fn subscribe(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<SubscribeBody>,
) -> ApiResult<Answer<CheckoutSession>> {
    let plan = plan(&body.product_id)
        .ok_or_else(|| ApiError::bad_request(format!("unknown productId `{}`", body.product_id)))?;
    check_url("successUrl", &body.success_url)?;
    check_url("cancelUrl", &body.cancel_url)?;
    if !app.payments.hosted_by_plinth() {
        // The provider hosts the page; its signed event completes the subscription.
        let customer = store::customer(&app.db, &caller.id)
            .await?
            .map(|c| c.customer_id);
        let (id, url) = app
            .payments
            .checkout_session(crate::adapters::payments::CheckoutRequest {
                user_id: &caller.id,
                email: &caller.user.email,
                customer: customer.as_deref(),
                plan,
                success_url: &body.success_url,
                cancel_url: &body.cancel_url,
            })
            .await?;
        return Ok(Answer(CheckoutSession {
            session_id: id.clone(),
            id,
            url,
            provider: app.payments.name().to_owned(),
        }));
    }
    let id = store::create_checkout(
        &app.db,
        &caller.id,
        &plan.product_id,
        CheckoutMode::Subscription,
        &body.success_url,
        &body.cancel_url,
    )
    .await?;
    let url = format!("{}/checkout/{id}", app.public_url);
    Ok(Answer(CheckoutSession {
        session_id: id.clone(),
        id,
        url,
        provider: app.payments.name().to_owned(),
    }))
}

/// `POST /api/users/subscriptions/check`.
pub async fn check(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<SubscriptionCheck>> {
    let subs = store::subscriptions(&app.db, &caller.id).await?;
    let current = subs.into_iter().find(|s| s.status.grants_level());
    Ok(Answer(SubscriptionCheck {
        active: current.is_some(),
        data: current.map(Subscription::from),
    }))
}

/// `POST /api/users/subscriptions/get-by-user-id`: your own (any, for an admin).
pub async fn get_by_user_id(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Data<Vec<Subscription>>>> {
    if body.id != caller.id && !caller.is_admin() {
        return Err(ApiError::forbidden(
            "you can only read your own subscriptions",
        ));
    }
    let subs = store::subscriptions(&app.db, &body.id).await?;
    Ok(Answer(Data {
        data: subs.into_iter().map(Subscription::from).collect(),
    }))
}

/// `POST /api/users/subscriptions/get-current-invoices`: the payments on record.
pub async fn invoices(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<Data<Vec<Invoice>>>> {
    let payments = store::payments(&app.db, &caller.id).await?;
    Ok(Answer(Data {
        data: payments.into_iter().map(Invoice::from).collect(),
    }))
}

/// The tier an account falls back to without a subscription.
fn free_level(user: &users_db::UserRow) -> i64 {
    if user.verified {
        10
    } else {
        0
    }
}

/// Applies the tier of the account's active subscriptions (the highest), or the free
/// tier. Platform admins keep their level.
async fn settle_level(app: &AppState, user_id: &str) -> ApiResult<i64> {
    let user = users_db::by_id(&app.db, user_id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    if user.level >= 100 {
        return Ok(user.level);
    }
    let subs = store::subscriptions(&app.db, user_id).await?;
    let level = subs
        .iter()
        .filter(|s| s.status.grants_level())
        .map(|s| s.level)
        .max()
        .unwrap_or_else(|| free_level(&user));
    if level != user.level {
        let changed = users_db::set_level(&app.db, user_id, level).await?;
        app.caches.announce(changed).await;
    }
    Ok(level)
}

/// `POST /api/users/subscriptions/unsubscribe`: cancels at the provider; the webhook
/// would say the same, but the tier drops now.
pub async fn unsubscribe(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<Unsubscribed>> {
    let subs = store::subscriptions(&app.db, &caller.id).await?;
    let current: Vec<_> = subs
        .into_iter()
        .filter(|s| s.status.grants_level())
        .collect();
    if current.is_empty() {
        return Err(ApiError::conflict("there is no active subscription"));
    }
    for s in &current {
        app.payments
            .cancel_subscription(&s.provider_subscription_id)
            .await?;
        store::set_subscription_status(
            &app.db,
            &s.provider_subscription_id,
            SubscriptionStatus::Canceled,
        )
        .await?;
    }
    let level = settle_level(&app, &caller.id).await?;
    Ok(Answer(Unsubscribed {
        success: True,
        canceled: current.len(),
        level,
    }))
}

/// Records an active subscription, raises the tier and pays this month's allotment.
pub async fn activate(
    app: &AppState,
    user_id: &str,
    provider_subscription_id: &str,
    product_id: &str,
) -> ApiResult<()> {
    let plan = plan(product_id)
        .ok_or_else(|| ApiError::bad_request(format!("unknown product `{product_id}`")))?;
    store::upsert_subscription(
        &app.db,
        user_id,
        app.payments.name(),
        provider_subscription_id,
        product_id,
        plan.level,
        SubscriptionStatus::Active,
    )
    .await?;
    settle_level(app, user_id).await?;
    if let Some(user) = users_db::by_id(&app.db, user_id).await? {
        app.domain.ledger.distribute_monthly(&user).await?;
    }
    Ok(())
}

/// `POST /api/webhooks/stripe`: the provider's signed events. Unsigned, forged or stale
/// events are 400 and change nothing; an event id is processed once (replays are
/// acknowledged with `duplicate: true`).
pub async fn stripe(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Answer<WebhookReceived>> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::bad_request("missing Stripe-Signature header"))?;
    verify_signature(
        &app.webhook_secret,
        signature,
        &body,
        chrono::Utc::now().timestamp(),
    )
    // The signature is the sender's credential: one that does not verify is a 401.
    .map_err(|why| ApiError::unauthorized(format!("invalid signature: {why}")))?;
    let event: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("malformed event: {e}")))?;
    let id = event["id"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request("event has no id"))?;
    let kind = event["type"].as_str().unwrap_or_default();
    if !store::record_event(&app.db, id, kind).await? {
        return Ok(Answer(WebhookReceived {
            received: True,
            duplicate: Some(True),
            handled: None,
            kind: None,
        }));
    }
    let object = &event["data"]["object"];
    let handled = match handle_event(&app, kind, object).await {
        Ok(h) => h,
        Err(e) => {
            // Let the provider deliver it again.
            store::forget_event(&app.db, id).await?;
            return Err(e);
        }
    };
    Ok(Answer(WebhookReceived {
        received: True,
        duplicate: None,
        handled: Some(handled),
        kind: Some(kind.to_owned()),
    }))
}

async fn handle_event(app: &AppState, kind: &str, object: &Value) -> ApiResult<bool> {
    let s = |k: &str| object[k].as_str().map(str::to_owned);
    match kind {
        "checkout.session.completed" => {
            let session = match s("id") {
                Some(id) => store::checkout(&app.db, &id).await?,
                None => None,
            };
            let user_id = session
                .as_ref()
                .map(|c| c.user_id.clone())
                .or_else(|| s("client_reference_id"))
                .ok_or_else(|| ApiError::bad_request("checkout session names no account"))?;
            let product = session
                .as_ref()
                .map(|c| c.product_id.clone())
                .or_else(|| object["metadata"]["product_id"].as_str().map(str::to_owned))
                .ok_or_else(|| ApiError::bad_request("checkout session names no product"))?;
            if let Some(c) = &session {
                store::close_checkout(&app.db, &c.id, CheckoutStatus::Complete).await?;
            }
            if let Some(customer) = s("customer") {
                store::save_customer(
                    &app.db,
                    &user_id,
                    app.payments.name(),
                    &customer,
                    object.get("payment_method_details"),
                )
                .await?;
            }
            let sub = s("subscription")
                .ok_or_else(|| ApiError::bad_request("checkout session has no subscription"))?;
            activate(app, &user_id, &sub, &product).await?;
            if let (Some(amount), Some(payment)) =
                (object["amount_total"].as_i64(), s("payment_intent"))
            {
                store::record_payment(
                    &app.db,
                    &user_id,
                    &payment,
                    amount,
                    PaymentStatus::Succeeded,
                )
                .await?;
            }
            Ok(true)
        }
        "customer.subscription.updated" | "customer.subscription.deleted" => {
            let Some(id) = s("id") else { return Ok(false) };
            let status = if kind.ends_with("deleted") {
                SubscriptionStatus::Canceled
            } else {
                match s("status") {
                    None => SubscriptionStatus::Active,
                    // A status this version does not know changes nothing, and the
                    // event is acknowledged so the provider does not resend it for days.
                    Some(text) => match SubscriptionStatus::parse(&text) {
                        Some(status) => status,
                        None => {
                            tracing::warn!(%id, status = %text, "unknown subscription status");
                            return Ok(false);
                        }
                    },
                }
            };
            match store::set_subscription_status(&app.db, &id, status).await? {
                Some(sub) => {
                    settle_level(app, &sub.user_id).await?;
                    Ok(true)
                }
                None => Ok(false),
            }
        }
        "invoice.paid" => {
            let Some(sub) = s("subscription") else {
                return Ok(false);
            };
            let Some(sub) = store::subscription_by_provider_id(&app.db, &sub).await? else {
                return Ok(false);
            };
            if let (Some(id), Some(amount)) = (s("id"), object["amount_paid"].as_i64()) {
                store::record_payment(&app.db, &sub.user_id, &id, amount, PaymentStatus::Succeeded)
                    .await?;
            }
            if let Some(user) = users_db::by_id(&app.db, &sub.user_id).await? {
                app.domain.ledger.distribute_monthly(&user).await?;
            }
            Ok(true)
        }
        "payment_intent.succeeded" => {
            if let (Some(id), Some(order)) = (s("id"), object["metadata"]["order_id"].as_str()) {
                let amount = object["amount"].as_i64().unwrap_or(-1);
                let currency = object["currency"].as_str();
                return Ok(app
                    .domain
                    .checkout
                    .confirm_payment(order, &id, amount, currency)
                    .await?);
            }
            let (Some(id), Some(user)) = (s("id"), object["metadata"]["user_id"].as_str()) else {
                return Ok(false);
            };
            let amount = object["amount"].as_i64().unwrap_or(0);
            store::record_payment(&app.db, user, &id, amount, PaymentStatus::Succeeded).await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AgentBody {
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9_.-]{3,32}\s*$"))]
    username: String,
    #[schemars(length(min = 1))]
    password: String,
    #[serde(rename = "paymentMethodId")]
    #[schemars(regex(pattern = r"^pm_[A-Za-z0-9_]+$"), length(max = 255))]
    payment_method_id: String,
    #[serde(rename = "productId")]
    product_id: String,
}

/// `POST /api/users/authenticate-agent`: a paid account in one call. The card is checked
/// and the subscription made before the account exists, so a declined card or an unknown
/// product leaves nothing behind. The account's email is `<username>@agents.invalid`.
pub async fn authenticate_agent(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<AgentBody>,
) -> ApiResult<Answer<AgentAccount>> {
    let username = crate::domain::accounts::parse_username(&body.username)?;
    if body.password.is_empty() {
        return Err(ApiError::bad_request("`password` must not be empty"));
    }
    let plan = plan(&body.product_id)
        .ok_or_else(|| ApiError::bad_request(format!("unknown productId `{}`", body.product_id)))?;
    crate::adapters::payments::valid_payment_method_id(&body.payment_method_id)?;
    if users_db::by_username(&app.db, &username).await?.is_some() {
        return Err(ApiError::conflict("that username is already taken"));
    }
    let email = format!("{username}@agents.invalid");
    let customer = app.payments.create_customer(&email).await?;
    let card = match app
        .payments
        .attach_payment_method(&customer, &body.payment_method_id)
        .await
    {
        Ok(c) => c,
        Err(e) => {
            let _ = app.payments.delete_customer(&customer).await;
            return Err(e.into());
        }
    };
    let subscription = match app
        .payments
        .create_subscription(&customer, plan, &card.id)
        .await
    {
        Ok(s) => s,
        Err(e) => {
            let _ = app.payments.delete_customer(&customer).await;
            return Err(e.into());
        }
    };
    let created = app
        .domain
        .accounts
        .create_account(&email, Some(&body.password), None, true)
        .await;
    let (user, key) = match created {
        Ok(v) => v,
        Err(e) => {
            let _ = app.payments.cancel_subscription(&subscription).await;
            let _ = app.payments.delete_customer(&customer).await;
            return Err(e.into());
        }
    };
    let named = users_db::set_username(&app.db, &user.id, &username).await?;
    app.caches.announce(named).await;
    store::save_customer(
        &app.db,
        &user.id,
        app.payments.name(),
        &customer,
        Some(&json!(card)),
    )
    .await?;
    activate(&app, &user.id, &subscription, &plan.product_id).await?;
    let user = users_db::by_id(&app.db, &user.id)
        .await?
        .ok_or_else(|| ApiError::internal("agent account vanished"))?;
    Ok(Answer(AgentAccount {
        api_key: key,
        user: crate::wire::users::User::of(&user, Some(&app.domain.accounts.user_key(&user)?)),
        subscription: AgentSubscription {
            id: subscription,
            product_id: plan.product_id.clone(),
            level: plan.level,
        },
    }))
}

/// `POST /api/users/viewer/generate-add-payment-method-url`: where the person adds or
/// replaces the saved card (the simulated provider's page is served by plinth).
pub async fn generate_add_payment_method_url(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<PaymentMethodUrl>> {
    let customer = match store::customer(&app.db, &caller.id).await? {
        Some(c) => c.customer_id,
        None => {
            let id = app.payments.create_customer(&caller.user.email).await?;
            store::save_customer(&app.db, &caller.id, app.payments.name(), &id, None).await?;
            id
        }
    };
    if !app.payments.hosted_by_plinth() {
        let url = app
            .payments
            .billing_portal(&customer, &app.public_url)
            .await?;
        return Ok(Answer(PaymentMethodUrl { url }));
    }
    Ok(Answer(PaymentMethodUrl {
        url: format!("{}/billing/{customer}", app.public_url),
    }))
}

/// `GET /api/users/viewer/get-current-payment-method`: the saved card, or `data: null`.
pub async fn get_current_payment_method(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<PrivateAnswer<CurrentPaymentMethod>> {
    let card = store::customer(&app.db, &caller.id)
        .await?
        .and_then(|c| c.payment_method.map(|m| m.0));
    Ok(PrivateAnswer(CurrentPaymentMethod { data: card }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AmountBody {
    #[schemars(range(min = 1))]
    amount_cents: i64,
}

/// `POST /api/users/viewer/pay-provider-amount-cents`: a one-time charge of the saved card.
pub async fn pay_provider_amount_cents(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<AmountBody>,
) -> ApiResult<Answer<Charged>> {
    if body.amount_cents <= 0 {
        return Err(ApiError::bad_request(
            "`amount_cents` must be a positive integer",
        ));
    }
    let customer = store::customer(&app.db, &caller.id)
        .await?
        .filter(|c| c.payment_method_id.is_some())
        .ok_or_else(|| ApiError::conflict("no payment method on file; add one first"))?;
    let pm = customer.payment_method_id.clone().unwrap_or_default();
    let payment_id = app
        .payments
        .charge(&customer.customer_id, &pm, body.amount_cents)
        .await?;
    let payment = store::record_payment(
        &app.db,
        &caller.id,
        &payment_id,
        body.amount_cents,
        PaymentStatus::Succeeded,
    )
    .await?;
    Ok(Answer(Charged {
        success: True,
        data: payment.into(),
    }))
}
