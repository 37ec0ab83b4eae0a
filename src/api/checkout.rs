//! The simulated provider's hosted pages (not part of the JSON API): checkout
//! (`/checkout/{id}`) and the saved-card page (`/billing/{customer}`). Completing a
//! checkout posts a signed `checkout.session.completed` event to this server's own
//! `/api/webhooks/stripe`, exactly as Stripe would, then redirects to `successUrl`.
//! `/pay/{order}` pays a pending marketplace order the same way
//! (`payment_intent.succeeded`).

use crate::http::pages::escape;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use crate::adapters::payments::{plan, sign_event};
use crate::db::payments as store;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/checkout/{id}", get(checkout_page).post(complete))
        .route("/billing/{customer}", get(billing_page).post(save_card))
        .route("/pay/{order_id}", get(pay_page).post(pay))
}

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;max-width:32rem;margin:3rem auto}}button{{padding:.5rem 1rem}}</style>\
         </head><body><h1>{title}</h1>{body}<p><small>Simulated payment provider (plinth)</small></p></body></html>"
    ))
}

const CARD_CHOICES: &str = "<select name=\"payment_method\">\
    <option value=\"pm_card_visa\">Visa ending 4242 (succeeds)</option>\
    <option value=\"pm_card_mastercard\">Mastercard ending 4444 (succeeds)</option>\
    <option value=\"pm_card_chargeDeclined\">Visa ending 0002 (declined)</option></select>";

async fn checkout_page(State(app): State<AppState>, Path(id): Path<String>) -> Response {
    let Ok(Some(session)) = store::checkout(&app.db, &id).await else {
        return (
            StatusCode::NOT_FOUND,
            page("Checkout not found", "<p>This checkout does not exist.</p>"),
        )
            .into_response();
    };
    if session.status != crate::states::CheckoutStatus::Open {
        return page(
            "Checkout complete",
            "<p>This checkout was already completed.</p>",
        )
        .into_response();
    }
    let Some(plan) = plan(&session.product_id) else {
        return (
            StatusCode::NOT_FOUND,
            page("Checkout not found", "<p>Unknown product.</p>"),
        )
            .into_response();
    };
    page(
        &format!("Subscribe to {}", escape(&plan.name)),
        &format!(
            "<p>{} {:.2} per {}</p><form method=\"post\"><p>{CARD_CHOICES}</p>\
             <p><button type=\"submit\">Pay</button> <a href=\"{}\">Cancel</a></p></form>",
            plan.currency.to_uppercase(),
            plan.price_cents as f64 / 100.0,
            plan.interval,
            escape(&session.cancel_url)
        ),
    )
    .into_response()
}

#[derive(Deserialize)]
struct CardForm {
    payment_method: String,
}

async fn complete(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<CardForm>,
) -> Response {
    match complete_checkout(&app, &id, &form.payment_method).await {
        Ok(url) => Redirect::to(&url).into_response(),
        Err((status, message)) => (
            status,
            page(
                "Payment not completed",
                &format!("<p>{}</p>", escape(&message)),
            ),
        )
            .into_response(),
    }
}

/// Completes a checkout with a test card; the success URL on success.
async fn complete_checkout(
    app: &AppState,
    id: &str,
    pm: &str,
) -> Result<String, (StatusCode, String)> {
    let internal = |e: String| (StatusCode::BAD_GATEWAY, e);
    let session = store::checkout(&app.db, id)
        .await
        .map_err(|e| internal(e.to_string()))?
        .ok_or((
            StatusCode::NOT_FOUND,
            "this checkout does not exist".to_owned(),
        ))?;
    if session.status != crate::states::CheckoutStatus::Open {
        return Ok(session.success_url);
    }
    let plan =
        plan(&session.product_id).ok_or((StatusCode::NOT_FOUND, "unknown product".to_owned()))?;
    let customer = match store::customer(&app.db, &session.user_id)
        .await
        .map_err(|e| internal(e.to_string()))?
    {
        Some(c) => c.customer_id,
        None => app
            .payments
            .create_customer("")
            .await
            .map_err(|e| (StatusCode::PAYMENT_REQUIRED, format!("{e:?}")))?,
    };
    let declined = |e: crate::adapters::payments::ProviderError| match e {
        crate::adapters::payments::ProviderError::Declined(m) => (StatusCode::PAYMENT_REQUIRED, m),
        crate::adapters::payments::ProviderError::Invalid(m) => (StatusCode::BAD_REQUEST, m),
        crate::adapters::payments::ProviderError::Unavailable(m) => (StatusCode::BAD_GATEWAY, m),
        crate::adapters::payments::ProviderError::NotConfigured => (
            StatusCode::NOT_FOUND,
            "payments are not offered by this server".to_owned(),
        ),
    };
    let card = app
        .payments
        .attach_payment_method(&customer, pm)
        .await
        .map_err(declined)?;
    let subscription = app
        .payments
        .create_subscription(&customer, plan, &card.id)
        .await
        .map_err(declined)?;
    let event = json!({
        "id": format!("evt_{}", uuid::Uuid::new_v4().simple()),
        "object": "event",
        "type": "checkout.session.completed",
        "created": chrono::Utc::now().timestamp(),
        "data": {"object": {
            "id": session.id,
            "object": "checkout.session",
            "mode": session.mode,
            "customer": customer,
            "subscription": subscription,
            "client_reference_id": session.user_id,
            "metadata": {"product_id": plan.product_id},
            "payment_status": "paid",
            "amount_total": plan.price_cents,
            "payment_intent": format!("pi_sim_{}", uuid::Uuid::new_v4().simple()),
            "payment_method_details": card,
        }},
    });
    deliver(app, &event).await?;
    Ok(session.success_url)
}

/// Posts a signed event to this server's own webhook, as the provider would.
async fn deliver(app: &AppState, event: &serde_json::Value) -> Result<(), (StatusCode, String)> {
    let internal = |e: String| (StatusCode::BAD_GATEWAY, e);
    let body = serde_json::to_vec(event).map_err(|e| internal(e.to_string()))?;
    let signature = sign_event(&app.webhook_secret, chrono::Utc::now().timestamp(), &body);
    let res = reqwest::Client::new()
        .post(format!("{}/api/webhooks/stripe", app.public_url))
        .header("content-type", "application/json")
        .header("stripe-signature", signature)
        .timeout(std::time::Duration::from_secs(30))
        .body(body)
        .send()
        .await
        .map_err(|e| internal(format!("delivering the event: {e}")))?;
    if !res.status().is_success() {
        return Err(internal(format!("the webhook answered {}", res.status())));
    }
    Ok(())
}

/// A pending order the simulated provider is to be paid for: `(payment id, cents)`.
async fn payable(app: &AppState, order_id: &str) -> Result<(String, i64), (StatusCode, String)> {
    let order = crate::db::orders::get(&app.db, order_id)
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?
        .filter(|o| o.provider.as_deref() == Some("simulated"))
        .ok_or((
            StatusCode::NOT_FOUND,
            "this payment does not exist".to_owned(),
        ))?;
    if order.status != crate::states::OrderStatus::Pending {
        return Err((
            StatusCode::CONFLICT,
            format!("this order is {} and cannot be paid", order.status),
        ));
    }
    let payment = order
        .payment_id
        .ok_or((StatusCode::CONFLICT, "this order has no payment".to_owned()))?;
    Ok((payment, order.total_cents))
}

/// The simulated provider's payment page of a pending order (`payment.url` of a USD
/// checkout without a payment method).
async fn pay_page(State(app): State<AppState>, Path(order_id): Path<String>) -> Response {
    match payable(&app, &order_id).await {
        Ok((_, cents)) => page(
            "Pay for your order",
            &format!(
                "<p>USD {:.2}</p><form method=\"post\"><p>{CARD_CHOICES}</p>\
                 <p><button type=\"submit\">Pay</button></p></form>",
                cents as f64 / 100.0
            ),
        )
        .into_response(),
        Err((status, m)) => {
            (status, page("Payment", &format!("<p>{}</p>", escape(&m)))).into_response()
        }
    }
}

/// Pays with a test card: a declined card changes nothing (the buyer may try another);
/// a good one delivers a signed `payment_intent.succeeded` to the webhook, which marks
/// the order paid.
async fn pay(
    State(app): State<AppState>,
    Path(order_id): Path<String>,
    Form(form): Form<CardForm>,
) -> Response {
    let paid = async {
        let (payment, cents) = payable(&app, &order_id).await?;
        app.payments
            .attach_payment_method("", &form.payment_method)
            .await
            .map_err(|e| match e {
                crate::adapters::payments::ProviderError::Declined(m) => {
                    (StatusCode::PAYMENT_REQUIRED, m)
                }
                other => (StatusCode::BAD_REQUEST, format!("{other:?}")),
            })?;
        let event = json!({
            "id": format!("evt_{}", uuid::Uuid::new_v4().simple()),
            "object": "event",
            "type": "payment_intent.succeeded",
            "created": chrono::Utc::now().timestamp(),
            "data": {"object": {
                "id": payment, "object": "payment_intent", "amount": cents,
                "currency": "usd", "status": "succeeded", "metadata": {"order_id": order_id},
            }},
        });
        deliver(&app, &event).await
    }
    .await;
    match paid {
        Ok(()) => page("Payment received", "<p>Your order is paid.</p>").into_response(),
        Err((status, m)) => (
            status,
            page("Payment not completed", &format!("<p>{}</p>", escape(&m))),
        )
            .into_response(),
    }
}

async fn billing_page(State(app): State<AppState>, Path(customer): Path<String>) -> Response {
    if !customer_exists(&app, &customer).await {
        return (
            StatusCode::NOT_FOUND,
            page("Not found", "<p>Unknown customer.</p>"),
        )
            .into_response();
    }
    page(
        "Payment method",
        &format!("<form method=\"post\"><p>{CARD_CHOICES}</p><p><button type=\"submit\">Save card</button></p></form>"),
    )
    .into_response()
}

async fn customer_exists(app: &AppState, customer: &str) -> bool {
    user_of_customer(app, customer).await.is_some()
}

async fn user_of_customer(app: &AppState, customer: &str) -> Option<String> {
    crate::db::payments::user_by_customer(&app.db, customer)
        .await
        .ok()
        .flatten()
}

async fn save_card(
    State(app): State<AppState>,
    Path(customer): Path<String>,
    Form(form): Form<CardForm>,
) -> Response {
    let Some(user) = user_of_customer(&app, &customer).await else {
        return (
            StatusCode::NOT_FOUND,
            page("Not found", "<p>Unknown customer.</p>"),
        )
            .into_response();
    };
    match app
        .payments
        .attach_payment_method(&customer, &form.payment_method)
        .await
    {
        Ok(card) => {
            let saved = store::save_customer(
                &app.db,
                &user,
                app.payments.name(),
                &customer,
                Some(&json!(card)),
            )
            .await;
            match saved {
                Ok(()) => page(
                    "Payment method saved",
                    &format!("<p>{} ending {} is on file.</p>", card.brand, card.last4),
                )
                .into_response(),
                Err(e) => (
                    StatusCode::BAD_GATEWAY,
                    page("Not saved", &escape(&e.to_string())),
                )
                    .into_response(),
            }
        }
        Err(e) => (
            StatusCode::PAYMENT_REQUIRED,
            page("Card not saved", &escape(&format!("{e:?}"))),
        )
            .into_response(),
    }
}
