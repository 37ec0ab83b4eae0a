//! Order rules: the statuses and who may move an order between them (docs/api.md has
//! the table), what a discount code takes off a total, and what happens when the payment
//! provider confirms an order's payment (its webhook, or the simulated hosted page).

use crate::adapters::payments::ProviderError;
use crate::domain::ledger::LedgerError;
use crate::states::{DiscountKind, OrderStatus};

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
