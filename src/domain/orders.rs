//! Order rules: the statuses and who may move an order between them (docs/api.md has
//! the table), what a discount code takes off a total, and what happens when the payment
//! provider confirms an order's payment (its webhook, or the simulated hosted page).

use serde_json::json;

use crate::adapters::payments::ProviderError;
use crate::db::orders::{self as store, OrderRow};
use crate::domain::checkout::Checkout;
use crate::domain::ledger::LedgerError;
use crate::states::{DiscountKind, OrderStatus, PaymentType};

/// Why money could not be moved for an order.
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Payment(#[from] ProviderError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// A paid USD order without the provider's payment id: ours, never the client's.
    #[error("a paid USD order without a payment id")]
    NoPaymentId,
}

/// Statuses of an order that was paid for (a receipt may be sent).
pub fn completed(status: OrderStatus) -> bool {
    use OrderStatus::*;
    match status {
        Paid | Fulfilled | Delivered => true,
        Pending | Canceled | Expired | Refunded => false,
    }
}

/// Who asks for a status change through `orders/update`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// The account that placed the order.
    Buyer,
    /// An admin of the selling organization (or a platform admin).
    Seller,
}

/// Whether `role` may move an order from `from` to `to` (as sent); the status it names,
/// or the reason when not. `pending → paid` and `pending → expired` happen only by the
/// payment provider and the server; nobody moves an order out of `canceled`, `expired`,
/// `refunded` or `delivered`.
pub fn may_move(from: OrderStatus, to: &str, role: Role) -> Result<OrderStatus, String> {
    use OrderStatus::*;
    use Role::*;
    let Some(to) = OrderStatus::parse(to) else {
        let all: Vec<&str> = OrderStatus::ALL.iter().map(|s| s.as_str()).collect();
        return Err(format!("`status` must be one of {}", all.join(", ")));
    };
    let allowed: &[Role] = match (from, to) {
        (Pending, Canceled) => &[Buyer, Seller],
        (Paid, Fulfilled) | (Fulfilled, Delivered) => &[Seller],
        // A refund before fulfilment: tokens go back to the buyer's balance, a provider
        // payment is refunded at the provider, the units return to stock.
        (Paid, Refunded) => &[Seller],
        (Pending, Pending | Paid | Fulfilled | Delivered | Expired | Refunded)
        | (Paid, Pending | Paid | Delivered | Canceled | Expired)
        | (Fulfilled, Pending | Paid | Fulfilled | Canceled | Expired | Refunded)
        | (Delivered | Canceled | Expired | Refunded, _) => &[],
    };
    if allowed.contains(&role) {
        return Ok(to);
    }
    Err(if allowed.is_empty() {
        format!("an order cannot move from `{from}` to `{to}`")
    } else {
        format!("only the selling organization's admins move an order from `{from}` to `{to}`")
    })
}

/// What a discount takes off `amount` (cents, or tokens for a percentage): a percentage
/// rounds half up, a fixed amount never takes more than the total.
pub fn discount_of(kind: DiscountKind, value: f64, amount: i64) -> i64 {
    let off = match kind {
        DiscountKind::Percentage => ((amount as f64) * value / 100.0).round() as i64,
        DiscountKind::Fixed => value as i64,
    };
    off.clamp(0, amount)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_table() {
        assert!(may_move(OrderStatus::Pending, "canceled", Role::Buyer).is_ok());
        assert!(may_move(OrderStatus::Pending, "canceled", Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Pending, "paid", Role::Seller).is_err());
        assert!(may_move(OrderStatus::Pending, "paid", Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Paid, "fulfilled", Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Paid, "fulfilled", Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Fulfilled, "delivered", Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Paid, "refunded", Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Paid, "refunded", Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Paid, "canceled", Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Delivered, "refunded", Role::Seller).is_err());
        assert!(may_move(OrderStatus::Canceled, "paid", Role::Seller).is_err());
        assert!(may_move(OrderStatus::Paid, "shipped", Role::Seller)
            .unwrap_err()
            .contains("one of"));
    }

    #[test]
    fn discounts() {
        assert_eq!(discount_of(DiscountKind::Percentage, 10.0, 1999), 200);
        assert_eq!(discount_of(DiscountKind::Percentage, 100.0, 1999), 1999);
        assert_eq!(discount_of(DiscountKind::Percentage, 12.5, 8), 1);
        assert_eq!(discount_of(DiscountKind::Fixed, 500.0, 1999), 500);
        assert_eq!(discount_of(DiscountKind::Fixed, 5000.0, 1999), 1999);
    }
}
