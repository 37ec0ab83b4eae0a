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

use std::sync::Arc;

use serde_json::json;

use crate::adapters::payments::{PaymentProvider, ProviderError};
use crate::caller::Caller;
use crate::db::marketplace::{self as carts, Owner, SkuItem};
use crate::db::orders::{self as store, Buyer, LineRow, NewOrder, OrderRow, Placer};
use crate::db::Db;
use crate::domain::downloads::SourceError;
use crate::domain::ledger::{entry, Ledger, LedgerError};
use crate::domain::orders::discount_of;
use crate::domain::orders::OrderError;
use crate::domain::orgs::Orgs;
use crate::domain::Invalid;
use crate::states::{DiscountKind, LedgerKind, OrderStatus, PaymentType};

mod basket;
pub use basket::*;
use basket::{not_placed, out_of_stock, sum, Priced, MAX_LINES};

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

/// The checkout's rules with what they need: the database, the ledger (token
/// payments), the payment provider, the order writer, the organizations' members
/// (private items), how long a tried payment holds its units (`PLINTH_RESERVATION_SECS`)
/// and the public URL (plinth-hosted payment pages). The order-state rules of
/// `domain::orders` are methods of it too.
#[derive(Clone)]
pub struct Checkout {
    pub db: Db,
    pub ledger: Ledger,
    pub orgs: Orgs,
    pub payments: Arc<dyn PaymentProvider>,
    /// Shared: one group-commit writer for the whole process.
    pub orders: Arc<Placer>,
    /// How long unpaid units stay held (`PLINTH_RESERVATION_SECS`).
    pub reservation_secs: u64,
    pub public_url: String,
}

impl Checkout {
    /// Stops the order writer (at shutdown, once requests have drained).
    pub fn stop(&self) {
        self.orders.stop();
    }

    /// 409 when this basket would take the buyer's unpaid holds past the caps.
    async fn check_holds(&self, buyer: &Buyer, lines: &[LineRow]) -> Result<()> {
        let held = store::unpaid_units(&self.db, buyer).await?;
        for l in lines {
            let before = held
                .iter()
                .find(|(id, _)| *id == l.item_id)
                .map_or(0, |h| h.1);
            if before + l.quantity > MAX_UNPAID_UNITS_PER_ITEM {
                return Err(CheckoutError::HoldsOfItem(l.sku.clone()));
            }
        }
        let total: i64 = held.iter().map(|(_, n)| n).sum::<i64>()
            + lines.iter().map(|l| l.quantity).sum::<i64>();
        if total > MAX_UNPAID_UNITS {
            return Err(CheckoutError::Holds);
        }
        Ok(())
    }

    /// The live item a sku names for this caller: private items only for members; a sku
    /// several organizations use needs `domain`.
    pub async fn item_for(
        &self,
        caller: Option<&Caller>,
        sku: &str,
        domain: Option<&str>,
    ) -> Result<SkuItem> {
        let mut found = Vec::new();
        let domain = domain.map(|d| d.trim().to_lowercase());
        for item in carts::items_by_sku(&self.db, sku.trim(), domain.as_deref()).await? {
            let member = match caller {
                Some(c) if item.private => self.orgs.in_org(c, &item.organization_id).await?,
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

    /// The lines of a checkout: `items`, or the cart; one organization; skus merged.
    pub async fn basket(
        &self,
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
                    let item = self.item_for(caller, &line.sku, domain).await?;
                    found.push((item, q));
                }
            }
            None => {
                let lines = carts::cart(&self.db, cart).await?;
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
                    let item = self.item_for(caller, &l.sku, Some(&l.domain)).await?;
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

    /// The discount a code gives this basket (`(id, code, type, value)`), after its rules:
    /// it exists, has not expired, and the order reaches `min_order_cents`. `max_uses` is
    /// checked again when the order is written, so it is exact under concurrency.
    async fn discount(
        &self,
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
        let d = carts::discount_by_code(&self.db, org_id, &code)
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

    /// Places and pays for the order of a basket.
    pub async fn place(
        &self,
        buyer: Buyer,
        basket: Basket,
        pay: Pay,
        req: Request,
    ) -> Result<Placed> {
        let priced = self
            .price(&basket, pay, req.discount_code.as_deref())
            .await?;
        let order_id = uuid::Uuid::new_v4().to_string();
        let paid_now = match pay {
            Pay::Tokens => true,
            Pay::Usd => priced.total_cents == 0,
        };
        // A payment tried now either settles the order before this answer or needs the
        // buyer's action (3-D Secure): only then is the full hold worth giving.
        let payment_tried = req.payment_method_id.is_some();
        if !paid_now && !payment_tried {
            self.check_holds(&buyer, &basket.lines).await?;
        }
        let hold_secs = if payment_tried {
            self.reservation_secs
        } else {
            self.reservation_secs.min(UNPAID_HOLD_SECS)
        };
        let payment_method_id = req.payment_method_id.clone();
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
            subtotal_cents: priced.subtotal_cents,
            discount_cents: priced.discount_cents,
            total_cents: priced.total_cents,
            subtotal_tokens: priced.subtotal_tokens,
            discount_tokens: priced.discount_tokens,
            total_tokens: priced.total_tokens,
            discount: priced.discount,
            provider: (pay == Pay::Usd && !paid_now).then(|| self.payments.name()),
            customer_info: req.customer_info,
            shipping_address: req.shipping_address,
            email: req.buyer_email,
            reserved_until: (!paid_now)
                .then(|| chrono::Utc::now() + chrono::TimeDelta::seconds(hold_secs as i64)),
            at: crate::db::now(),
        };
        // The answer is built from what was written: no read after the write.
        let mut row = order.row(&basket.domain);
        let balance = self.write(order, pay, &basket).await?;
        let mut payment = None;
        if pay == Pay::Usd && !paid_now {
            payment = self
                .pay_with_provider(&mut row, payment_method_id.as_deref())
                .await?;
        }
        if basket.from_cart {
            let owner = match &buyer {
                Buyer::User(id) => Owner::User(id),
                Buyer::Guest(id) => Owner::Guest(id),
            };
            for l in &basket.lines {
                carts::remove(&self.db, owner, &l.item_id).await?;
            }
        }
        Ok(Placed {
            row,
            lines: basket.lines,
            balance,
            payment,
        })
    }

    /// The basket's totals in cents and (paid in tokens) tokens, with the discount a
    /// code gives.
    async fn price(&self, basket: &Basket, pay: Pay, code: Option<&str>) -> Result<Priced> {
        let subtotal_cents = sum(basket
            .lines
            .iter()
            .map(|l| l.price_cents.checked_mul(l.quantity)))?;
        let subtotal_tokens = match pay {
            Pay::Usd => None,
            Pay::Tokens => {
                if let Some(l) = basket.lines.iter().find(|l| l.price_tokens.is_none()) {
                    return Err(
                        Invalid(format!("`{}` has no token price: pay in USD", l.sku)).into(),
                    );
                }
                Some(sum(basket.lines.iter().map(|l| {
                    l.price_tokens.and_then(|t| t.checked_mul(l.quantity))
                }))?)
            }
        };
        let discount = self
            .discount(&basket.org_id, code, subtotal_cents, pay)
            .await?;
        let off = |amount: i64| {
            discount
                .as_ref()
                .map_or(0, |(_, _, kind, value)| discount_of(*kind, *value, amount))
        };
        let discount_cents = off(subtotal_cents);
        let discount_tokens = subtotal_tokens.map(off);
        Ok(Priced {
            subtotal_cents,
            discount_cents,
            total_cents: subtotal_cents - discount_cents,
            subtotal_tokens,
            discount_tokens,
            total_tokens: subtotal_tokens.zip(discount_tokens).map(|(s, d)| s - d),
            discount: discount.map(|d| (d.0, d.1)),
        })
    }

    /// Writes the order with its units; paid in tokens, takes them first (given back
    /// when the order cannot be written). The balance after a token payment.
    async fn write(&self, order: NewOrder, pay: Pay, basket: &Basket) -> Result<Option<i64>> {
        let lines = basket.lines.clone();
        let (Pay::Tokens, Buyer::User(user_id), Some(total)) =
            (pay, order.buyer.clone(), order.total_tokens)
        else {
            not_placed(self.orders.place(order, lines).await?)?;
            return Ok(None);
        };
        let order_id = order.id.clone();
        let mut balance = None;
        if total > 0 {
            let applied = self
                .ledger
                .apply(vec![entry(
                    &user_id,
                    -total,
                    LedgerKind::Purchase,
                    Some(format!("order:{order_id}")),
                    json!({"order_id": order_id, "domain": basket.domain}),
                )])
                .await?;
            balance = applied
                .as_ref()
                .and_then(|a| crate::domain::ledger::balance_after(a, &user_id));
        }
        let placed = self.orders.place(order, lines).await;
        if !matches!(placed, Ok(Ok(()))) && total > 0 {
            self.refund_unplaced(&user_id, &order_id, total).await;
            balance = None;
        }
        not_placed(placed?)?;
        Ok(balance)
    }

    /// Asks the provider for a written order's payment, in two steps: create, persist
    /// the payment's id, then confirm with `payment_method_id` (a payment that succeeds
    /// is always attached to its order, whatever happens after). A refusal discards the
    /// order; `row` follows what was written. Where to pay, when the buyer still must.
    async fn pay_with_provider(
        &self,
        row: &mut OrderRow,
        payment_method_id: Option<&str>,
    ) -> Result<Option<PendingPayment>> {
        let order_id = row.id.clone();
        let mut intent = match self
            .payments
            .payment_intent(row.total_cents, &order_id, payment_method_id)
            .await
        {
            Ok(i) => i,
            Err(e) => {
                store::discard(&self.db, &order_id).await?;
                return Err(e.into());
            }
        };
        store::set_payment(&self.db, &order_id, &intent.id).await?;
        if payment_method_id.is_some() && !intent.paid {
            intent = match self.payments.confirm_intent(&intent).await {
                Ok(i) => i,
                Err(e) => {
                    store::discard(&self.db, &order_id).await?;
                    return Err(e.into());
                }
            };
            if !intent.paid {
                store::discard(&self.db, &order_id).await?;
                return Err(CheckoutError::NotPaid);
            }
        }
        row.payment_id = Some(intent.id.clone());
        if intent.paid {
            store::mark_paid(&self.db, &order_id, &intent.id).await?;
            row.status = OrderStatus::Paid;
            row.reserved_until = None;
            return Ok(None);
        }
        let url = self
            .payments
            .hosted_by_plinth()
            .then(|| format!("{}/pay/{order_id}", self.public_url));
        Ok(Some(PendingPayment {
            provider: self.payments.name().to_owned(),
            id: intent.id,
            client_secret: intent.client_secret,
            url,
        }))
    }

    /// Gives back the tokens of an order that was not written (logged if that fails: the
    /// caller already has an error to answer).
    async fn refund_unplaced(&self, user_id: &str, order_id: &str, total: i64) {
        if let Err(e) = self
            .refund_tokens(user_id, order_id, total, "not placed")
            .await
        {
            tracing::error!(order = order_id, user = user_id, tokens = total, error = %e,
                "tokens of an order that was not placed could not be given back");
        }
    }

    /// A purchase's checkout (licenses, download links): the basket of `items`, paid at
    /// once — tokens with an API key, or USD by `payment_method_id` (a purchase never leaves
    /// a pending order). `sellable` refuses items that are not what the purchase mints.
    pub async fn purchase(
        &self,
        who: Shopper<'_>,
        body: Purchase<'_>,
        sellable: impl Fn(&crate::db::inventory::ItemRow) -> Result<()>,
    ) -> Result<Placed> {
        let pay = pay(body.payment_type)?;
        if pay == Pay::Usd && body.payment_method_id.is_none() {
            return Err(Invalid::new(
                "a purchase is paid at once: send `payment_method_id` (or `payment_type: tokens`)",
            )
            .into());
        }
        if let Some(pm) = body.payment_method_id {
            crate::adapters::payments::valid_payment_method_id(pm)?;
        }
        let (caller, owner, buyer, domain, email) = match who {
            Shopper::User(c) => (
                Some(c),
                Owner::User(&c.id),
                Buyer::User(c.id.clone()),
                body.domain.map(str::to_owned),
                Some(c.user.email.clone()),
            ),
            Shopper::Guest { id, domain } => {
                if pay == Pay::Tokens {
                    return Err(Invalid::new(
                        "a guest session pays in USD: send `payment_method_id`",
                    )
                    .into());
                }
                let email = body
                    .email
                    .map(crate::domain::accounts::parse_email)
                    .transpose()?;
                (
                    None,
                    Owner::Guest(id),
                    Buyer::Guest(id.to_owned()),
                    Some(domain.to_owned()),
                    email,
                )
            }
        };
        let basket = self
            .basket(caller, owner, Some(body.items), domain.as_deref())
            .await?;
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
            let item = crate::db::inventory::get(&self.db, &line.item_id)
                .await?
                .ok_or(CheckoutError::ItemGone)?;
            sellable(&item)?;
        }
        let req = Request {
            buyer_email: email,
            customer_info: object("customer_info", body.customer_info)?,
            shipping_address: None,
            discount_code: body.discount_code.map(str::to_owned),
            payment_method_id: body.payment_method_id.map(str::to_owned),
        };
        self.place(buyer, basket, pay, req).await
    }
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

/// The order-state rules that move money (`domain::orders` holds the table).
impl Checkout {
    /// The provider confirms that `payment_id` paid `amount_cents` for an order: a pending
    /// order is paid (its held units sold). A payment that arrives after the hold ended
    /// (the order expired or was canceled, its units back in stock) is refunded at the
    /// provider and the order marked `refunded`. `false` when the payment is not for an
    /// order of ours: not for its total, in another currency, or another payment than the
    /// one the checkout attached to it (security round 2, L5).
    pub async fn confirm_payment(
        &self,
        order_id: &str,
        payment_id: &str,
        amount_cents: i64,
        currency: Option<&str>,
    ) -> Result<bool, OrderError> {
        let Some(order) = store::get(&self.db, order_id).await? else {
            return Ok(false);
        };
        let other_payment = order.payment_id.as_deref().is_some_and(|p| p != payment_id);
        let other_currency = currency.is_some_and(|c| !c.eq_ignore_ascii_case("usd"));
        if order.payment_type != PaymentType::Usd
            || amount_cents != order.total_cents
            || other_payment
            || other_currency
        {
            tracing::warn!(
                order = order_id,
                payment = payment_id,
                amount_cents,
                currency,
                total = order.total_cents,
                "a payment that does not match its order was ignored"
            );
            return Ok(false);
        }
        if store::mark_paid(&self.db, order_id, payment_id).await? {
            return Ok(true);
        }
        let status = store::get(&self.db, order_id).await?.map(|o| o.status);
        if let Some(status @ (OrderStatus::Canceled | OrderStatus::Expired)) = status {
            self.payments.refund(payment_id).await?;
            store::set_payment(&self.db, order_id, payment_id).await?;
            store::set_status(&self.db, order_id, status, OrderStatus::Refunded).await?;
            tracing::warn!(
                order = order_id,
                "a payment arrived after the order's hold ended; refunded"
            );
        }
        Ok(true)
    }

    /// Gives an order's tokens back to its buyer, once per order (the ledger key
    /// `order-refund:<id>`), saying why in the ledger row.
    pub async fn refund_tokens(
        &self,
        user_id: &str,
        order_id: &str,
        total: i64,
        reason: &str,
    ) -> Result<(), OrderError> {
        self.ledger
            .apply(vec![crate::domain::ledger::entry(
                user_id,
                total,
                crate::states::LedgerKind::Refund,
                Some(format!("order-refund:{order_id}")),
                json!({"order_id": order_id, "reason": reason}),
            )])
            .await?;
        Ok(())
    }

    /// Undoes a paid purchase whose goods could not be made: its money back and the order
    /// `refunded`.
    pub async fn undo_purchase(&self, o: &OrderRow, reason: &str) -> Result<(), OrderError> {
        self.refund(o, reason).await?;
        crate::db::orders::release(
            &self.db,
            &o.id,
            crate::states::OrderStatus::Paid,
            crate::states::OrderStatus::Refunded,
            "system",
        )
        .await?;
        Ok(())
    }

    /// Gives a paid order's money back: tokens through the credit actors (once per order),
    /// a provider payment at the provider.
    pub async fn refund(&self, o: &OrderRow, reason: &str) -> Result<(), OrderError> {
        match (o.payment_type.as_str(), &o.user_id, o.total_tokens) {
            ("tokens", Some(user), Some(total)) if total > 0 => {
                self.refund_tokens(user, &o.id, total, reason).await?;
            }
            ("usd", _, _) if o.total_cents > 0 => {
                let payment = o.payment_id.as_deref().ok_or(OrderError::NoPaymentId)?;
                self.payments.refund(payment).await?;
            }
            _ => {}
        }
        Ok(())
    }
}
