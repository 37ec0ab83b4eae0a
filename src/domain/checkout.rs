//! Checkout: turning a basket (`items`, or a cart) into a paid order — the rules the
//! marketplace checkouts and the purchases of downloads and licenses share.
//!
//! Tokens: the price is taken from the buyer's balance through the credit-account actors
//! first (a short balance is a 402 and leaves stock untouched), then the units are taken
//! with the order in one transaction; if they are gone meanwhile, the tokens are given
//! back. USD: the units are held with a `pending` order first, then the provider is
//! asked for the payment in two steps (create, persist its id, confirm with a payment
//! method; a decline releases the hold), else the answer says where to pay and the
//! provider's signed webhook confirms it; holds nobody paid for end after
//! `PLINTH_RESERVATION_SECS`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::adapters::payments::ProviderError;
use crate::caller::Caller;
use crate::db::marketplace::{self as carts, Owner, SkuItem};
use crate::db::orders::{self as store, Buyer, LineRow, NewOrder, NotPlaced, OrderRow};
use crate::domain::buyers::Purchaser;
use crate::domain::downloads::SourceError;
use crate::domain::ledger::LedgerError;
use crate::domain::ledger::{apply, entry};
use crate::domain::orders::discount_of;
use crate::domain::orders::OrderError;
use crate::domain::Invalid;
use crate::state::AppState;
use crate::states::{DiscountKind, LedgerKind, OrderStatus, PaymentType};

/// Largest quantity of one line.
pub const MAX_QUANTITY: i64 = 1_000;

/// Most units one buyer may hold in unpaid orders, in all and of one item, and how long
/// an unpaid hold lasts until a payment is tried with the checkout (`payment_method_id`;
/// then `PLINTH_RESERVATION_SECS`). Security round 2, M6: one account's unpaid checkouts
/// once held a seller's whole stock for 30 minutes, renewably.
pub const MAX_UNPAID_UNITS: i64 = 20;
pub const MAX_UNPAID_UNITS_PER_ITEM: i64 = 5;
pub const UNPAID_HOLD_SECS: u64 = 600;

/// Why a checkout or purchase did not place its order.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No item a caller may buy has the sku (a 404).
    #[error("no item with sku `{0}`")]
    NoSuchSku(String),
    /// An item of the basket was deleted meanwhile (a 404).
    #[error("item not found")]
    ItemGone,
    /// The buyer's unpaid holds of one item would pass [`MAX_UNPAID_UNITS_PER_ITEM`] (a 409).
    #[error(
        "at most {MAX_UNPAID_UNITS_PER_ITEM} units of `{0}` may be held in unpaid orders at \
         once: pay for the pending ones, or send `payment_method_id` to pay now"
    )]
    HoldsOfItem(String),
    /// The buyer's unpaid holds would pass [`MAX_UNPAID_UNITS`] (a 409).
    #[error(
        "at most {MAX_UNPAID_UNITS} units may be held in unpaid orders at once: pay for the \
         pending ones, or send `payment_method_id` to pay now"
    )]
    Holds,
    /// A 409 naming the line.
    #[error("not enough of `{sku}` in stock ({available} available)")]
    OutOfStock { sku: String, available: i64 },
    /// The code reached `max_uses` before this order (a 409).
    #[error("the discount code `{0}` has been used up")]
    DiscountUsedUp(String),
    /// The code ran out or expired while the order was written (a 409).
    #[error("the discount code has been used up or expired")]
    DiscountGone,
    /// A 400 that also says the minimum.
    #[error("the discount code `{code}` needs an order of at least {min_order_cents} cents")]
    BelowMinimum { code: String, min_order_cents: i64 },
    /// The provider did not complete a payment tried with the checkout (a 402).
    #[error("the payment was not completed (the card may need authentication)")]
    NotPaid,
    /// An item's `download_asset` is not one the purchase can copy.
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Payment(#[from] ProviderError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// Ours, never the client's.
    #[error("{0}")]
    Internal(String),
}

impl From<OrderError> for CheckoutError {
    fn from(e: OrderError) -> Self {
        match e {
            OrderError::Ledger(e) => e.into(),
            OrderError::Payment(e) => e.into(),
            OrderError::Db(e) => e.into(),
            e @ OrderError::NoPaymentId => Self::Internal(e.to_string()),
        }
    }
}

type Result<T, E = CheckoutError> = std::result::Result<T, E>;

/// 409 when this basket would take the buyer's unpaid holds past the caps.
async fn check_holds(app: &AppState, buyer: &Buyer, lines: &[LineRow]) -> Result<()> {
    let held = store::unpaid_units(&app.db, buyer).await?;
    for l in lines {
        let before = held
            .iter()
            .find(|(id, _)| *id == l.item_id)
            .map_or(0, |h| h.1);
        if before + l.quantity > MAX_UNPAID_UNITS_PER_ITEM {
            return Err(CheckoutError::HoldsOfItem(l.sku.clone()));
        }
    }
    let total: i64 =
        held.iter().map(|(_, n)| n).sum::<i64>() + lines.iter().map(|l| l.quantity).sum::<i64>();
    if total > MAX_UNPAID_UNITS {
        return Err(CheckoutError::Holds);
    }
    Ok(())
}

/// Runs work that moves money to its end in its own task, whatever happens to the
/// request (a client hanging up drops the handler's future, not this task). A task
/// that panicked is the error `E` makes of the join failure.
pub async fn run_to_end<T, E>(
    work: impl std::future::Future<Output = Result<T, E>> + Send + 'static,
) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static + From<tokio::task::JoinError>,
{
    tokio::spawn(work).await?
}

pub fn quantity(q: i64) -> Result<i64, Invalid> {
    if !(1..=MAX_QUANTITY).contains(&q) {
        return Err(Invalid(format!("`quantity` must be 1 to {MAX_QUANTITY}")));
    }
    Ok(q)
}

/// The live item a sku names for this caller: private items only for members; a sku
/// several organizations use needs `domain`.
pub async fn item_for(
    app: &AppState,
    caller: Option<&Caller>,
    sku: &str,
    domain: Option<&str>,
) -> Result<SkuItem> {
    let mut found = Vec::new();
    let domain = domain.map(|d| d.trim().to_lowercase());
    for item in carts::items_by_sku(&app.db, sku.trim(), domain.as_deref()).await? {
        let member = match caller {
            Some(c) if item.private => {
                crate::domain::orgs::in_org(app, c, &item.organization_id).await?
            }
            _ => false,
        };
        if !item.private || member {
            found.push(item);
        }
    }
    match found.len() {
        0 => Err(CheckoutError::NoSuchSku(sku.trim().to_owned())),
        1 => Ok(found.remove(0)),
        _ => Err(Invalid::new("several organizations sell this sku: send `domain` too").into()),
    }
}

/// Most lines one checkout may have.
const MAX_LINES: usize = 100;

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct ItemLine {
    pub sku: String,
    /// 1 to 1,000.
    #[schemars(range(min = 1, max = 1000))]
    pub quantity: i64,
}

#[derive(Deserialize, Serialize, schemars::JsonSchema, Clone)]
pub struct Address {
    name: Option<String>,
    street: Option<String>,
    city: Option<String>,
    state: Option<String>,
    zip: Option<String>,
    country: Option<String>,
}

/// The provider-paid path, or tokens.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Pay {
    Tokens,
    Usd,
}

pub fn pay(raw: Option<&str>) -> Result<Pay, Invalid> {
    match raw.map(|p| p.trim().to_lowercase()).as_deref() {
        None | Some("usd" | "provider" | "stripe" | "card") => Ok(Pay::Usd),
        Some("tokens") => Ok(Pay::Tokens),
        Some(_) => Err(Invalid::new(
            "`payment_type` must be `tokens` or `usd` (the default: the payment provider)",
        )),
    }
}

/// What a checkout asks for, checked and priced.
pub struct Basket {
    pub org_id: String,
    pub domain: String,
    pub lines: Vec<LineRow>,
    /// Whether the lines came from the cart (removed from it on success).
    pub from_cart: bool,
}

/// The lines of a checkout: `items`, or the cart; one organization; skus merged.
pub async fn basket(
    app: &AppState,
    caller: Option<&Caller>,
    cart: Owner<'_>,
    items: Option<&[ItemLine]>,
    domain: Option<&str>,
) -> Result<Basket> {
    let mut found: Vec<(SkuItem, i64)> = Vec::new();
    let from_cart = items.is_none();
    match items {
        Some([]) => return Err(Invalid::new("`items` must not be empty").into()),
        Some(items) => {
            if items.len() > MAX_LINES {
                return Err(Invalid(format!("at most {MAX_LINES} lines per checkout")).into());
            }
            for line in items {
                let q = quantity(line.quantity)?;
                let item = item_for(app, caller, &line.sku, domain).await?;
                found.push((item, q));
            }
        }
        None => {
            let lines = carts::cart(&app.db, cart).await?;
            if lines.is_empty() {
                return Err(Invalid::new("the cart is empty: add items or send `items`").into());
            }
            // As for `items` (security round 2, L6: each line costs a query).
            if lines.len() > MAX_LINES {
                return Err(Invalid(format!(
                    "at most {MAX_LINES} lines per checkout: the cart holds {}",
                    lines.len()
                ))
                .into());
            }
            for l in lines {
                let item = item_for(app, caller, &l.sku, Some(&l.domain)).await?;
                found.push((item, l.quantity));
            }
        }
    }
    let (org_id, domain) = (
        found[0].0.organization_id.clone(),
        found[0].0.domain.clone(),
    );
    if found.iter().any(|(i, _)| i.organization_id != org_id) {
        return Err(Invalid::new(
            "one organization per checkout: check out each organization's items separately",
        )
        .into());
    }
    // Sold out already: refused before any tokens move or units are held.
    if let Some((item, _)) = found.iter().find(|(i, _)| !i.in_stock) {
        return Err(out_of_stock(&item.sku, 0));
    }
    let mut lines: Vec<LineRow> = Vec::with_capacity(found.len());
    for (item, q) in found {
        match lines.iter_mut().find(|l| l.item_id == item.id) {
            Some(l) => l.quantity = quantity(l.quantity + q)?,
            None => lines.push(LineRow {
                item_id: item.id,
                sku: item.sku,
                quantity: q,
                price_cents: item.price_cents,
                price_tokens: item.price_tokens,
            }),
        }
    }
    Ok(Basket {
        org_id,
        domain,
        lines,
        from_cart,
    })
}

fn sum(mut values: impl Iterator<Item = Option<i64>>) -> Result<i64, Invalid> {
    values
        .try_fold(0i64, |acc, v| acc.checked_add(v?))
        .ok_or_else(|| Invalid::new("the order total is too large"))
}

/// The discount a code gives this basket (`(id, code, type, value)`), after its rules:
/// it exists, has not expired, and the order reaches `min_order_cents`. `max_uses` is
/// checked again when the order is written, so it is exact under concurrency.
async fn discount(
    app: &AppState,
    org_id: &str,
    code: Option<&str>,
    subtotal_cents: i64,
    pay: Pay,
) -> Result<Option<(String, String, DiscountKind, f64)>> {
    let Some(code) = code.map(|c| c.trim().to_uppercase()) else {
        return Ok(None);
    };
    // The spec's table of null, omitted and empty: `""` fails validation (`null` and an
    // omitted code mean no discount).
    if code.is_empty() {
        return Err(Invalid::new(
            "`discount_code` must not be empty: leave it out (or null) for no discount",
        )
        .into());
    }
    let d = carts::discount_by_code(&app.db, org_id, &code)
        .await?
        .ok_or_else(|| Invalid(format!("unknown discount code `{code}`")))?;
    if d.expires_at.is_some_and(|e| e <= chrono::Utc::now()) {
        return Err(Invalid(format!("the discount code `{code}` has expired")).into());
    }
    if d.max_uses.is_some_and(|m| d.uses >= m) {
        return Err(CheckoutError::DiscountUsedUp(code));
    }
    if let Some(min) = d.min_order_cents.filter(|m| subtotal_cents < *m) {
        return Err(CheckoutError::BelowMinimum {
            code,
            min_order_cents: min,
        });
    }
    if pay == Pay::Tokens && d.r#type == DiscountKind::Fixed {
        return Err(Invalid(format!(
            "the discount code `{code}` takes a fixed amount of cents off: it applies to USD checkouts"
        ))
        .into());
    }
    Ok(Some((d.id, d.code, d.r#type, d.value)))
}

/// A JSON object of at most 16 KiB, or nothing.
pub fn object(field: &str, v: Option<Value>) -> Result<Value, Invalid> {
    match v {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Object(m)) => {
            let v = Value::Object(m);
            if v.to_string().len() > 16 * 1024 {
                return Err(Invalid(format!("`{field}` must be at most 16 KiB")));
            }
            Ok(v)
        }
        Some(_) => Err(Invalid(format!("`{field}` must be an object"))),
    }
}

pub fn address(a: Option<Address>) -> Result<Option<Value>> {
    let Some(a) = a else { return Ok(None) };
    let fields = [&a.name, &a.street, &a.city, &a.state, &a.zip, &a.country];
    if fields
        .iter()
        .any(|f| f.as_ref().is_some_and(|s| s.len() > 200))
    {
        return Err(
            Invalid::new("`shipping_address` fields must be at most 200 characters").into(),
        );
    }
    Ok(Some(
        serde_json::to_value(a).map_err(|e| CheckoutError::Internal(e.to_string()))?,
    ))
}

/// Everything a checkout needs besides the basket.
pub struct Request {
    pub buyer_email: Option<String>,
    pub customer_info: Value,
    pub shipping_address: Option<Value>,
    pub discount_code: Option<String>,
    pub payment_method_id: Option<String>,
}

/// A placed order: as written, its lines, the balance after a token payment and where
/// to pay a pending one.
pub struct Placed {
    pub row: OrderRow,
    pub lines: Vec<LineRow>,
    pub balance: Option<i64>,
    pub payment: Option<PendingPayment>,
}

/// A provider payment still to be made for a pending order.
#[derive(Clone, Debug)]
pub struct PendingPayment {
    pub provider: String,
    pub id: String,
    /// For the provider's client library (Stripe.js) to confirm the payment.
    pub client_secret: Option<String>,
    /// A page where the buyer pays, when plinth hosts it (simulated payments).
    pub url: Option<String>,
}

/// Places and pays for the order of a basket.
pub async fn place(
    app: &AppState,
    buyer: Buyer,
    basket: Basket,
    pay: Pay,
    req: Request,
) -> Result<Placed> {
    let subtotal_cents = sum(basket
        .lines
        .iter()
        .map(|l| l.price_cents.checked_mul(l.quantity)))?;
    let subtotal_tokens = match pay {
        Pay::Usd => None,
        Pay::Tokens => {
            if let Some(l) = basket.lines.iter().find(|l| l.price_tokens.is_none()) {
                return Err(Invalid(format!("`{}` has no token price: pay in USD", l.sku)).into());
            }
            Some(sum(basket.lines.iter().map(|l| {
                l.price_tokens.and_then(|t| t.checked_mul(l.quantity))
            }))?)
        }
    };
    let discount = discount(
        app,
        &basket.org_id,
        req.discount_code.as_deref(),
        subtotal_cents,
        pay,
    )
    .await?;
    let off = |amount: i64| {
        discount
            .as_ref()
            .map_or(0, |(_, _, kind, value)| discount_of(*kind, *value, amount))
    };
    let discount_cents = off(subtotal_cents);
    let discount_tokens = subtotal_tokens.map(off);
    let total_cents = subtotal_cents - discount_cents;
    let total_tokens = subtotal_tokens.zip(discount_tokens).map(|(s, d)| s - d);
    let order_id = uuid::Uuid::new_v4().to_string();
    let paid_now = match pay {
        Pay::Tokens => true,
        Pay::Usd => total_cents == 0,
    };
    // A payment tried now either settles the order before this answer or needs the
    // buyer's action (3-D Secure): only then is the full hold worth giving.
    let payment_tried = req.payment_method_id.is_some();
    if !paid_now && !payment_tried {
        check_holds(app, &buyer, &basket.lines).await?;
    }
    let hold_secs = if payment_tried {
        app.opts.payments.reservation_secs
    } else {
        app.opts.payments.reservation_secs.min(UNPAID_HOLD_SECS)
    };
    let order = NewOrder {
        id: order_id.clone(),
        org_id: basket.org_id.clone(),
        buyer: buyer.clone(),
        payment_type: if pay == Pay::Tokens {
            PaymentType::Tokens
        } else {
            PaymentType::Usd
        },
        status: if paid_now {
            OrderStatus::Paid
        } else {
            OrderStatus::Pending
        },
        subtotal_cents,
        discount_cents,
        total_cents,
        subtotal_tokens,
        discount_tokens,
        total_tokens,
        discount: discount.as_ref().map(|d| (d.0.clone(), d.1.clone())),
        provider: (pay == Pay::Usd && !paid_now).then(|| app.payments.name()),
        customer_info: req.customer_info,
        shipping_address: req.shipping_address,
        email: req.buyer_email,
        reserved_until: (!paid_now)
            .then(|| chrono::Utc::now() + chrono::TimeDelta::seconds(hold_secs as i64)),
        at: crate::db::now(),
    };
    // The answer is built from what was written: no read after the write.
    let mut row = order.row(&basket.domain);
    let lines = basket.lines.clone();
    let (mut balance, mut payment) = (None, None);
    if let (Pay::Tokens, Buyer::User(user_id), Some(total)) = (pay, &buyer, total_tokens) {
        if total > 0 {
            let applied = apply(
                app,
                vec![entry(
                    user_id,
                    -total,
                    LedgerKind::Purchase,
                    Some(format!("order:{order_id}")),
                    json!({"order_id": order_id, "domain": basket.domain}),
                )],
            )
            .await?;
            balance = applied
                .as_ref()
                .and_then(|a| crate::domain::ledger::balance_after(a, user_id));
        }
        let placed = app.orders.place(order, lines).await;
        if !matches!(placed, Ok(Ok(()))) && total > 0 {
            refund_unplaced(app, user_id, &order_id, total).await;
            balance = None;
        }
        not_placed(placed?)?;
    } else {
        not_placed(app.orders.place(order, lines).await?)?;
    }
    if pay == Pay::Usd && !paid_now {
        // Two steps: create, persist the payment's id, then confirm (a payment that
        // succeeds is always attached to its order, whatever happens after).
        let mut intent = match app
            .payments
            .payment_intent(total_cents, &order_id, req.payment_method_id.as_deref())
            .await
        {
            Ok(i) => i,
            Err(e) => {
                store::discard(&app.db, &order_id).await?;
                return Err(e.into());
            }
        };
        store::set_payment(&app.db, &order_id, &intent.id).await?;
        if req.payment_method_id.is_some() && !intent.paid {
            intent = match app.payments.confirm_intent(&intent).await {
                Ok(i) => i,
                Err(e) => {
                    store::discard(&app.db, &order_id).await?;
                    return Err(e.into());
                }
            };
            if !intent.paid {
                store::discard(&app.db, &order_id).await?;
                return Err(CheckoutError::NotPaid);
            }
        }
        row.payment_id = Some(intent.id.clone());
        if intent.paid {
            store::mark_paid(&app.db, &order_id, &intent.id).await?;
            row.status = OrderStatus::Paid;
            row.reserved_until = None;
        } else {
            let url = app
                .payments
                .hosted_by_plinth()
                .then(|| format!("{}/pay/{order_id}", app.public_url));
            payment = Some(PendingPayment {
                provider: app.payments.name().to_owned(),
                id: intent.id,
                client_secret: intent.client_secret,
                url,
            });
        }
    }
    if basket.from_cart {
        let owner = match &buyer {
            Buyer::User(id) => Owner::User(id),
            Buyer::Guest(id) => Owner::Guest(id),
        };
        for l in &basket.lines {
            carts::remove(&app.db, owner, &l.item_id).await?;
        }
    }
    Ok(Placed {
        row,
        lines: basket.lines,
        balance,
        payment,
    })
}

/// Gives back the tokens of an order that was not written (logged if that fails: the
/// caller already has an error to answer).
async fn refund_unplaced(app: &AppState, user_id: &str, order_id: &str, total: i64) {
    if let Err(e) =
        crate::domain::orders::refund_tokens(app, user_id, order_id, total, "not placed").await
    {
        tracing::error!(order = order_id, user = user_id, tokens = total, error = %e,
            "tokens of an order that was not placed could not be given back");
    }
}

fn out_of_stock(sku: &str, available: i64) -> CheckoutError {
    CheckoutError::OutOfStock {
        sku: sku.to_owned(),
        available,
    }
}

fn not_placed(r: Result<(), NotPlaced>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(NotPlaced::OutOfStock { sku, available }) => Err(out_of_stock(&sku, available)),
        Err(NotPlaced::DiscountUsedUp) => Err(CheckoutError::DiscountGone),
    }
}

/// Most units (license keys, download links) one purchase mints.
pub const MAX_PURCHASE_UNITS: i64 = 100;

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
/// Paid at once: a payment method, or tokens.
#[schemars(extend("anyOf" = [{"required": ["payment_method_id"], "properties": {"payment_method_id": {"type": "string"}}}, {"required": ["payment_type"], "properties": {"payment_type": {"enum": ["tokens"]}}}]))]
pub struct PurchaseBody {
    /// What to buy: one key or link per unit.
    #[schemars(length(min = 1))]
    pub items: Vec<ItemLine>,
    /// `tokens` (with an API key) or `usd` (the default).
    #[schemars(extend("enum" = ["tokens", "usd", "provider", "stripe", "card"]))]
    pub payment_type: Option<String>,
    /// USD: the payment method (`pm_...`), charged at once.
    #[schemars(regex(pattern = r"^pm_[A-Za-z0-9_]+$"), length(max = 255))]
    pub payment_method_id: Option<String>,
    /// The selling organization, when a sku is sold by several.
    pub domain: Option<String>,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    pub discount_code: Option<String>,
    /// A guest's email for receipts.
    pub email: Option<String>,
    pub customer_info: Option<Value>,
}

/// A purchase's checkout (licenses, download links): the basket of `items`, paid at
/// once — tokens with an API key, or USD by `payment_method_id` (a purchase never leaves
/// a pending order). `sellable` refuses items that are not what the purchase mints.
pub async fn purchase(
    app: &AppState,
    who: &Purchaser,
    body: &PurchaseBody,
    sellable: impl Fn(&crate::db::inventory::ItemRow) -> Result<()>,
) -> Result<Placed> {
    let pay = pay(body.payment_type.as_deref())?;
    if pay == Pay::Usd && body.payment_method_id.is_none() {
        return Err(Invalid::new(
            "a purchase is paid at once: send `payment_method_id` (or `payment_type: tokens`)",
        )
        .into());
    }
    if let Some(pm) = &body.payment_method_id {
        crate::adapters::payments::valid_payment_method_id(pm)?;
    }
    let (caller, owner, buyer, domain, email) = match who {
        Purchaser::User(c) => (
            Some(c.as_ref()),
            Owner::User(&c.id),
            Buyer::User(c.id.clone()),
            body.domain.clone(),
            Some(c.user.email.clone()),
        ),
        Purchaser::Guest(g) => {
            if pay == Pay::Tokens {
                return Err(
                    Invalid::new("a guest session pays in USD: send `payment_method_id`").into(),
                );
            }
            let email = body
                .email
                .as_deref()
                .map(crate::domain::accounts::parse_email)
                .transpose()?;
            (
                None,
                Owner::Guest(&g.id),
                Buyer::Guest(g.id.clone()),
                Some(g.domain.clone()),
                email,
            )
        }
    };
    let basket = basket(app, caller, owner, Some(&body.items), domain.as_deref()).await?;
    // Each unit mints a key or clones a stored file into a link, all in this answer.
    let units: i64 = basket.lines.iter().map(|l| l.quantity).sum();
    if units > MAX_PURCHASE_UNITS {
        return Err(Invalid(format!(
            "a purchase mints at most {MAX_PURCHASE_UNITS} keys or links: this one asks for \
             {units} (split it into several purchases)"
        ))
        .into());
    }
    for line in &basket.lines {
        let item = crate::db::inventory::get(&app.db, &line.item_id)
            .await?
            .ok_or(CheckoutError::ItemGone)?;
        sellable(&item)?;
    }
    let req = Request {
        buyer_email: email,
        customer_info: object("customer_info", body.customer_info.clone())?,
        shipping_address: None,
        discount_code: body.discount_code.clone(),
        payment_method_id: body.payment_method_id.clone(),
    };
    place(app, buyer, basket, pay, req).await
}
