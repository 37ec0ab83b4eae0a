//! The payment provider behind subscriptions, agent sign-up and one-time payments.
//! `Simulated` is the zero set-up default: no network, deterministic, accepting Stripe's
//! test payment-method ids (`pm_card_visa` succeeds, `pm_card_chargeDeclined` is
//! declined). Its hosted checkout is a small page served by plinth (`/checkout/{id}`)
//! that completes the payment and delivers a signed event to `/api/webhooks/stripe`,
//! exactly as Stripe would.

use std::collections::HashMap;
use std::sync::LazyLock;

use futures::future::BoxFuture;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub product_id: String,
    pub name: String,
    pub level: i64,
    pub tier: String,
    pub price_cents: i64,
    pub currency: String,
    pub interval: String,
    pub monthly_credits: i64,
}

#[derive(Deserialize)]
struct PlansFile {
    plans: Vec<Plan>,
}

/// The plans of `fixtures/plans.json`, by product id.
pub static PLANS: LazyLock<Vec<Plan>> = LazyLock::new(|| {
    serde_json::from_str::<PlansFile>(include_str!("../../fixtures/plans.json"))
        .expect("valid plans.json")
        .plans
});

pub fn plan(product_id: &str) -> Option<&'static Plan> {
    PLANS.iter().find(|p| p.product_id == product_id)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Card {
    pub id: String,
    pub brand: String,
    pub last4: String,
    pub exp_month: u32,
    pub exp_year: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The card was declined: 402 to the client.
    #[error("the payment was declined: {0}")]
    Declined(String),
    /// The request names something the provider does not know: 400.
    #[error("{0}")]
    Invalid(String),
    /// The provider could not be reached or failed: 503, try again.
    #[error("payment provider unavailable: {0}")]
    Unavailable(String),
    /// No payment provider is configured in this deployment: 503, an operator must act.
    #[error("no payment provider is configured")]
    NotConfigured,
}

/// Stripe's object ids are a short prefix, `_` and `[A-Za-z0-9_]`; anything else never
/// reaches a provider URL (finding M8: `../` or `?` in a payment-method id would pick
/// another Stripe endpoint, signed with the platform's secret key).
pub fn valid_payment_method_id(pm: &str) -> Result<(), ProviderError> {
    let ok = pm.len() <= 255
        && pm.strip_prefix("pm_").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Invalid(
            "`paymentMethodId` must be a payment-method id such as pm_card_visa".into(),
        ))
    }
}

pub type ProviderResult<'a, T> = BoxFuture<'a, Result<T, ProviderError>>;

/// What plinth needs from a payment provider.
pub trait PaymentProvider: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether plinth serves this provider's hosted checkout and card pages itself.
    fn hosted_by_plinth(&self) -> bool;
    fn create_customer<'a>(&'a self, email: &'a str) -> ProviderResult<'a, String>;
    /// Checks the method (declines here) and makes it the customer's default.
    fn attach_payment_method<'a>(
        &'a self,
        customer: &'a str,
        pm: &'a str,
    ) -> ProviderResult<'a, Card>;
    fn create_subscription<'a>(
        &'a self,
        customer: &'a str,
        plan: &'a Plan,
        pm: &'a str,
    ) -> ProviderResult<'a, String>;
    fn cancel_subscription<'a>(&'a self, subscription: &'a str) -> ProviderResult<'a, ()>;
    /// A one-time charge; the payment id.
    fn charge<'a>(
        &'a self,
        customer: &'a str,
        pm: &'a str,
        amount_cents: i64,
    ) -> ProviderResult<'a, String>;
    fn delete_customer<'a>(&'a self, customer: &'a str) -> ProviderResult<'a, ()>;
    /// Step one of an order's payment (USD): the payment is created, with `pm` when the
    /// buyer gave one, and not confirmed; the caller persists its id before confirming, so
    /// a payment that succeeds is always found again. Without `pm` the buyer completes it
    /// (Stripe.js with the client secret, or plinth's page for `Simulated`). The order id
    /// travels in the payment's metadata to the webhook.
    fn payment_intent<'a>(
        &'a self,
        amount_cents: i64,
        order_id: &'a str,
        pm: Option<&'a str>,
    ) -> ProviderResult<'a, Intent>;
    /// Step two: confirms a payment created with a payment method (a decline is
    /// `Declined`).
    fn confirm_intent<'a>(&'a self, intent: &'a Intent) -> ProviderResult<'a, Intent>;
    /// Refunds a payment in full.
    fn refund<'a>(&'a self, payment_id: &'a str) -> ProviderResult<'a, ()>;
    /// A provider-hosted subscription checkout: `(session id, url)`. Only for providers
    /// whose pages plinth does not serve.
    fn checkout_session<'a>(
        &'a self,
        req: CheckoutRequest<'a>,
    ) -> ProviderResult<'a, (String, String)>;
    /// A provider-hosted page where the customer manages the card on file.
    fn billing_portal<'a>(
        &'a self,
        customer: &'a str,
        return_url: &'a str,
    ) -> ProviderResult<'a, String>;
}

/// A payment of an order at the provider.
#[derive(Debug, Clone)]
pub struct Intent {
    pub id: String,
    /// Whether the money moved (a confirmed payment that succeeded).
    pub paid: bool,
    /// For the buyer to complete an unconfirmed payment with the provider's script.
    pub client_secret: Option<String>,
    /// The payment method it was created with, if any (to confirm).
    pub payment_method: Option<String>,
}

pub struct CheckoutRequest<'a> {
    pub user_id: &'a str,
    pub email: &'a str,
    pub customer: Option<&'a str>,
    pub plan: &'a Plan,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

pub struct Simulated;

/// The test payment methods the simulated provider knows (the OpenAPI document lists
/// them when it is the provider): those that pay, and those it declines, each sorted.
pub fn simulated_payment_methods() -> (Vec<&'static str>, Vec<&'static str>) {
    let mut ids: Vec<(&'static str, bool)> = TEST_CARDS.iter().map(|(k, v)| (*k, v.2)).collect();
    ids.sort_unstable();
    let pick = |pays: bool| ids.iter().filter(|c| c.1 == pays).map(|c| c.0).collect();
    (pick(true), pick(false))
}

/// Stripe's test payment methods that the simulated provider knows.
static TEST_CARDS: LazyLock<HashMap<&'static str, (&'static str, &'static str, bool)>> =
    LazyLock::new(|| {
        HashMap::from([
            ("pm_card_visa", ("visa", "4242", true)),
            ("pm_card_mastercard", ("mastercard", "4444", true)),
            ("pm_card_amex", ("amex", "8431", true)),
            ("pm_card_chargeDeclined", ("visa", "0002", false)),
            ("pm_card_visa_chargeDeclined", ("visa", "0341", false)),
            (
                "pm_card_chargeDeclinedInsufficientFunds",
                ("visa", "9995", false),
            ),
        ])
    });

/// The provider of a deployment that configured a real store but no payment provider:
/// every call answers 503 (finding H2: simulated payments never run next to a real one).
pub struct Unconfigured;

impl PaymentProvider for Unconfigured {
    fn name(&self) -> &'static str {
        "unconfigured"
    }
    fn hosted_by_plinth(&self) -> bool {
        false
    }
    fn create_customer<'a>(&'a self, _: &'a str) -> ProviderResult<'a, String> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn attach_payment_method<'a>(&'a self, _: &'a str, _: &'a str) -> ProviderResult<'a, Card> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn create_subscription<'a>(
        &'a self,
        _: &'a str,
        _: &'a Plan,
        _: &'a str,
    ) -> ProviderResult<'a, String> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn cancel_subscription<'a>(&'a self, _: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn charge<'a>(&'a self, _: &'a str, _: &'a str, _: i64) -> ProviderResult<'a, String> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn delete_customer<'a>(&'a self, _: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn payment_intent<'a>(
        &'a self,
        _: i64,
        _: &'a str,
        _: Option<&'a str>,
    ) -> ProviderResult<'a, Intent> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn confirm_intent<'a>(&'a self, _: &'a Intent) -> ProviderResult<'a, Intent> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn refund<'a>(&'a self, _: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn checkout_session<'a>(
        &'a self,
        _: CheckoutRequest<'a>,
    ) -> ProviderResult<'a, (String, String)> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
    fn billing_portal<'a>(&'a self, _: &'a str, _: &'a str) -> ProviderResult<'a, String> {
        Box::pin(async { Err(ProviderError::NotConfigured) })
    }
}

fn sim_id(prefix: &str) -> String {
    format!("{prefix}_sim_{}", uuid::Uuid::new_v4().simple())
}

impl Simulated {
    fn card(pm: &str) -> Result<Card, ProviderError> {
        let (brand, last4, ok) = TEST_CARDS.get(pm).copied().ok_or_else(|| {
            ProviderError::Invalid(format!(
                "unknown payment method `{pm}` (the simulated provider accepts Stripe's test ids such as pm_card_visa)"
            ))
        })?;
        if !ok {
            return Err(ProviderError::Declined("your card was declined".into()));
        }
        Ok(Card {
            id: pm.to_owned(),
            brand: brand.to_owned(),
            last4: last4.to_owned(),
            exp_month: 12,
            exp_year: 2034,
        })
    }
}

impl PaymentProvider for Simulated {
    fn name(&self) -> &'static str {
        "simulated"
    }
    fn hosted_by_plinth(&self) -> bool {
        true
    }
    fn create_customer<'a>(&'a self, _email: &'a str) -> ProviderResult<'a, String> {
        Box::pin(async { Ok(sim_id("cus")) })
    }
    fn attach_payment_method<'a>(
        &'a self,
        _customer: &'a str,
        pm: &'a str,
    ) -> ProviderResult<'a, Card> {
        Box::pin(async move { Self::card(pm) })
    }
    fn create_subscription<'a>(
        &'a self,
        _customer: &'a str,
        _plan: &'a Plan,
        pm: &'a str,
    ) -> ProviderResult<'a, String> {
        Box::pin(async move {
            Self::card(pm)?;
            Ok(sim_id("sub"))
        })
    }
    fn cancel_subscription<'a>(&'a self, _subscription: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn charge<'a>(
        &'a self,
        _customer: &'a str,
        pm: &'a str,
        amount_cents: i64,
    ) -> ProviderResult<'a, String> {
        Box::pin(async move {
            if amount_cents <= 0 {
                return Err(ProviderError::Invalid("the amount must be positive".into()));
            }
            Self::card(pm)?;
            Ok(sim_id("pi"))
        })
    }
    fn delete_customer<'a>(&'a self, _customer: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn payment_intent<'a>(
        &'a self,
        amount_cents: i64,
        _order_id: &'a str,
        pm: Option<&'a str>,
    ) -> ProviderResult<'a, Intent> {
        Box::pin(async move {
            if amount_cents <= 0 {
                return Err(ProviderError::Invalid("the amount must be positive".into()));
            }
            if let Some(pm) = pm {
                // An unknown method is refused at once; a decline comes at confirmation.
                if !TEST_CARDS.contains_key(pm) {
                    Self::card(pm)?;
                }
            }
            Ok(Intent {
                id: sim_id("pi"),
                paid: false,
                client_secret: None,
                payment_method: pm.map(str::to_owned),
            })
        })
    }
    fn confirm_intent<'a>(&'a self, intent: &'a Intent) -> ProviderResult<'a, Intent> {
        Box::pin(async move {
            let pm = intent.payment_method.as_deref().ok_or_else(|| {
                ProviderError::Invalid("the payment has no payment method to confirm".into())
            })?;
            Self::card(pm)?;
            Ok(Intent {
                paid: true,
                ..intent.clone()
            })
        })
    }
    fn refund<'a>(&'a self, _payment_id: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn checkout_session<'a>(
        &'a self,
        _req: CheckoutRequest<'a>,
    ) -> ProviderResult<'a, (String, String)> {
        Box::pin(async {
            Err(ProviderError::Invalid(
                "the simulated provider's checkout is served by plinth".into(),
            ))
        })
    }
    fn billing_portal<'a>(
        &'a self,
        _customer: &'a str,
        _return_url: &'a str,
    ) -> ProviderResult<'a, String> {
        Box::pin(async {
            Err(ProviderError::Invalid(
                "the simulated provider's card page is served by plinth".into(),
            ))
        })
    }
}

/// Stripe over its HTTP API (`PLINTH_STRIPE_API_BASE`, `PLINTH_STRIPE_SECRET_KEY`).
/// Plans' `product_id`s are the Stripe plan/price ids.
pub struct Stripe {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Stripe {
    pub fn new(base: &str, key: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()
                .unwrap_or_default(),
        }
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        form: &[(&str, &str)],
    ) -> Result<serde_json::Value, ProviderError> {
        let res = self
            .http
            .request(method, format!("{}{path}", self.base))
            .basic_auth(&self.key, Some(""))
            .form(form)
            .send()
            .await
            .map_err(|e| ProviderError::Unavailable(format!("stripe: {e}")))?;
        let status = res.status();
        let body: serde_json::Value = res
            .json()
            .await
            .map_err(|e| ProviderError::Unavailable(format!("stripe: unreadable answer: {e}")))?;
        if status.is_success() {
            return Ok(body);
        }
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or("request failed")
            .to_owned();
        let declined =
            body["error"]["type"] == "card_error" || body["error"]["code"] == "card_declined";
        Err(match (status.as_u16(), declined) {
            (402, _) | (_, true) => ProviderError::Declined(message),
            (400..=499, _) => ProviderError::Invalid(format!("stripe: {message}")),
            _ => ProviderError::Unavailable(format!("stripe {status}: {message}")),
        })
    }

    fn intent(v: &serde_json::Value) -> Result<Intent, ProviderError> {
        Ok(Intent {
            id: Self::id(v)?,
            paid: v["status"].as_str() == Some("succeeded"),
            client_secret: v["client_secret"].as_str().map(str::to_owned),
            payment_method: v["payment_method"].as_str().map(str::to_owned),
        })
    }

    fn id(v: &serde_json::Value) -> Result<String, ProviderError> {
        v["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ProviderError::Unavailable("stripe: answer without id".into()))
    }
}

impl PaymentProvider for Stripe {
    fn name(&self) -> &'static str {
        "stripe"
    }
    fn hosted_by_plinth(&self) -> bool {
        false
    }
    fn create_customer<'a>(&'a self, email: &'a str) -> ProviderResult<'a, String> {
        Box::pin(async move {
            let v = self
                .call(reqwest::Method::POST, "/v1/customers", &[("email", email)])
                .await?;
            Self::id(&v)
        })
    }
    fn attach_payment_method<'a>(
        &'a self,
        customer: &'a str,
        pm: &'a str,
    ) -> ProviderResult<'a, Card> {
        Box::pin(async move {
            valid_payment_method_id(pm)?;
            let v = self
                .call(
                    reqwest::Method::POST,
                    &format!("/v1/payment_methods/{pm}/attach"),
                    &[("customer", customer)],
                )
                .await?;
            self.call(
                reqwest::Method::POST,
                &format!("/v1/customers/{customer}"),
                &[("invoice_settings[default_payment_method]", &Self::id(&v)?)],
            )
            .await?;
            let c = &v["card"];
            Ok(Card {
                id: Self::id(&v)?,
                brand: c["brand"].as_str().unwrap_or("card").to_owned(),
                last4: c["last4"].as_str().unwrap_or("").to_owned(),
                exp_month: c["exp_month"].as_u64().unwrap_or(0) as u32,
                exp_year: c["exp_year"].as_u64().unwrap_or(0) as u32,
            })
        })
    }
    fn create_subscription<'a>(
        &'a self,
        customer: &'a str,
        plan: &'a Plan,
        _pm: &'a str,
    ) -> ProviderResult<'a, String> {
        Box::pin(async move {
            let v = self
                .call(
                    reqwest::Method::POST,
                    "/v1/subscriptions",
                    &[("customer", customer), ("items[0][plan]", &plan.product_id)],
                )
                .await?;
            let id = Self::id(&v)?;
            if !matches!(v["status"].as_str(), Some("active" | "trialing")) {
                // The first payment failed: leave nothing behind.
                let _ = self
                    .call(
                        reqwest::Method::DELETE,
                        &format!("/v1/subscriptions/{id}"),
                        &[],
                    )
                    .await;
                return Err(ProviderError::Declined(
                    "the first payment of the subscription failed".into(),
                ));
            }
            Ok(id)
        })
    }
    fn cancel_subscription<'a>(&'a self, subscription: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async move {
            self.call(
                reqwest::Method::DELETE,
                &format!("/v1/subscriptions/{subscription}"),
                &[],
            )
            .await?;
            Ok(())
        })
    }
    fn charge<'a>(
        &'a self,
        customer: &'a str,
        pm: &'a str,
        amount_cents: i64,
    ) -> ProviderResult<'a, String> {
        Box::pin(async move {
            let amount = amount_cents.to_string();
            let v = self
                .call(
                    reqwest::Method::POST,
                    "/v1/payment_intents",
                    &[
                        ("amount", amount.as_str()),
                        ("currency", "usd"),
                        ("customer", customer),
                        ("payment_method", pm),
                        ("confirm", "true"),
                        ("off_session", "true"),
                    ],
                )
                .await?;
            if v["status"].as_str() != Some("succeeded") {
                return Err(ProviderError::Declined(
                    "the payment did not succeed".into(),
                ));
            }
            Self::id(&v)
        })
    }
    fn payment_intent<'a>(
        &'a self,
        amount_cents: i64,
        order_id: &'a str,
        pm: Option<&'a str>,
    ) -> ProviderResult<'a, Intent> {
        Box::pin(async move {
            let amount = amount_cents.to_string();
            let mut form = vec![
                ("amount", amount.as_str()),
                ("currency", "usd"),
                ("metadata[order_id]", order_id),
            ];
            if let Some(pm) = pm {
                valid_payment_method_id(pm)?;
                form.push(("payment_method", pm));
            }
            let v = self
                .call(reqwest::Method::POST, "/v1/payment_intents", &form)
                .await?;
            Self::intent(&v)
        })
    }
    fn confirm_intent<'a>(&'a self, intent: &'a Intent) -> ProviderResult<'a, Intent> {
        Box::pin(async move {
            // The id goes into the URL: only Stripe's own shape (finding M8).
            let ok = intent.id.strip_prefix("pi_").is_some_and(|rest| {
                !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            });
            if !ok {
                return Err(ProviderError::Invalid("not a payment intent id".into()));
            }
            let v = self
                .call(
                    reqwest::Method::POST,
                    &format!("/v1/payment_intents/{}/confirm", intent.id),
                    &[],
                )
                .await?;
            Self::intent(&v)
        })
    }
    fn refund<'a>(&'a self, payment_id: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async move {
            self.call(
                reqwest::Method::POST,
                "/v1/refunds",
                &[("payment_intent", payment_id)],
            )
            .await?;
            Ok(())
        })
    }
    fn delete_customer<'a>(&'a self, customer: &'a str) -> ProviderResult<'a, ()> {
        Box::pin(async move {
            self.call(
                reqwest::Method::DELETE,
                &format!("/v1/customers/{customer}"),
                &[],
            )
            .await?;
            Ok(())
        })
    }
    fn checkout_session<'a>(
        &'a self,
        req: CheckoutRequest<'a>,
    ) -> ProviderResult<'a, (String, String)> {
        Box::pin(async move {
            let mut form: Vec<(&str, &str)> = vec![
                ("mode", "subscription"),
                ("line_items[0][price]", &req.plan.product_id),
                ("line_items[0][quantity]", "1"),
                ("success_url", req.success_url),
                ("cancel_url", req.cancel_url),
                ("client_reference_id", req.user_id),
                ("metadata[product_id]", &req.plan.product_id),
                ("metadata[user_id]", req.user_id),
            ];
            match req.customer {
                Some(c) => form.push(("customer", c)),
                None => form.push(("customer_email", req.email)),
            }
            let v = self
                .call(reqwest::Method::POST, "/v1/checkout/sessions", &form)
                .await?;
            let url = v["url"].as_str().ok_or_else(|| {
                ProviderError::Unavailable("stripe: checkout session without url".into())
            })?;
            Ok((Self::id(&v)?, url.to_owned()))
        })
    }
    fn billing_portal<'a>(
        &'a self,
        customer: &'a str,
        return_url: &'a str,
    ) -> ProviderResult<'a, String> {
        Box::pin(async move {
            let v = self
                .call(
                    reqwest::Method::POST,
                    "/v1/billing_portal/sessions",
                    &[("customer", customer), ("return_url", return_url)],
                )
                .await?;
            v["url"].as_str().map(str::to_owned).ok_or_else(|| {
                ProviderError::Unavailable("stripe: portal session without url".into())
            })
        })
    }
}

/// `Stripe-Signature` header value for `body` at unix time `t`.
pub fn sign_event(secret: &str, t: i64, body: &[u8]) -> String {
    sign_event_with(&[secret], t, body)
}

/// A header with one `v1` per secret (as Stripe signs while a rolled secret overlaps):
/// a receiver that knows any one of them verifies it.
pub fn sign_event_with(secrets: &[&str], t: i64, body: &[u8]) -> String {
    let mut header = format!("t={t}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&hmac_hex(secret, t, body));
    }
    header
}

fn hmac_hex(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// How far a signature's timestamp may be from now.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// Largest webhook body read (it comes without an API key, so the anonymous limit would
/// otherwise apply; Stripe's events are a few KiB, large invoices tens).
pub const WEBHOOK_BODY_LIMIT: usize = 256 * 1024;

/// Verifies `Stripe-Signature: t=...,v1=...[,v1=...]` over `"{t}.{body}"` with a
/// constant-time comparison and a 5-minute tolerance.
pub fn verify_signature(
    secret: &str,
    header: &str,
    body: &[u8],
    now: i64,
) -> Result<(), &'static str> {
    let mut t = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => candidates.push(v.to_owned()),
            _ => {}
        }
    }
    let t = t.ok_or("signature has no timestamp")?;
    if (now - t).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err("signature timestamp is outside the tolerance");
    }
    let expected = hmac_hex(secret, t, body);
    if candidates
        .iter()
        .any(|c| crate::crypto::ct_eq(c.as_bytes(), expected.as_bytes()))
    {
        Ok(())
    } else {
        Err("no valid v1 signature")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip_and_reject_forgeries() {
        let body = br#"{"id":"evt_1"}"#;
        let h = sign_event("whsec", 1000, body);
        assert!(verify_signature("whsec", &h, body, 1100).is_ok());
        assert!(verify_signature("other", &h, body, 1100).is_err());
        assert!(verify_signature("whsec", &h, b"{}", 1100).is_err());
        assert!(verify_signature("whsec", &h, body, 1000 + 301).is_err());
        assert!(verify_signature("whsec", "v1=abc", body, 1000).is_err());
        // Several v1 values: one valid is enough (secret rotation).
        let two = format!("t=1000,v1=deadbeef,{}", &h[7..]);
        assert!(verify_signature("whsec", &two, body, 1000).is_ok());
    }

    #[test]
    fn simulated_cards() {
        assert!(Simulated::card("pm_card_visa").is_ok());
        assert!(matches!(
            Simulated::card("pm_card_chargeDeclined"),
            Err(ProviderError::Declined(_))
        ));
        assert!(matches!(
            Simulated::card("pm_nope"),
            Err(ProviderError::Invalid(_))
        ));
        assert!(plan("prod_paying_monthly").is_some_and(|p| p.level == 20));
    }
}
