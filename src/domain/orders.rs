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

/// Why an order may not move where it was asked to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Refused {
    /// Nobody moves an order this way.
    Never,
    /// Only the selling organization's admins do.
    SellerOnly,
}

impl Refused {
    pub fn message(self, from: OrderStatus, to: OrderStatus) -> String {
        match self {
            Refused::Never => format!("an order cannot move from `{from}` to `{to}`"),
            Refused::SellerOnly => format!(
                "only the selling organization's admins move an order from `{from}` to `{to}`"
            ),
        }
    }
}

/// Whether `role` may move an order from `from` to `to`. `pending → paid` and
/// `pending → expired` happen only by the payment provider and the server; nobody moves
/// an order out of `canceled`, `expired`, `refunded` or `delivered`.
pub fn may_move(from: OrderStatus, to: OrderStatus, role: Role) -> Result<(), Refused> {
    use OrderStatus::*;
    use Role::*;
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
    match () {
        _ if allowed.contains(&role) => Ok(()),
        _ if allowed.is_empty() => Err(Refused::Never),
        _ => Err(Refused::SellerOnly),
    }
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
        assert!(may_move(OrderStatus::Pending, OrderStatus::Canceled, Role::Buyer).is_ok());
        assert!(may_move(OrderStatus::Pending, OrderStatus::Canceled, Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Pending, OrderStatus::Paid, Role::Seller).is_err());
        assert!(may_move(OrderStatus::Pending, OrderStatus::Paid, Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Paid, OrderStatus::Fulfilled, Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Paid, OrderStatus::Fulfilled, Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Fulfilled, OrderStatus::Delivered, Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Paid, OrderStatus::Refunded, Role::Seller).is_ok());
        assert!(may_move(OrderStatus::Paid, OrderStatus::Refunded, Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Paid, OrderStatus::Canceled, Role::Buyer).is_err());
        assert!(may_move(OrderStatus::Delivered, OrderStatus::Refunded, Role::Seller).is_err());
        assert!(may_move(OrderStatus::Canceled, OrderStatus::Paid, Role::Seller).is_err());
        assert_eq!(
            may_move(OrderStatus::Paid, OrderStatus::Fulfilled, Role::Buyer),
            Err(Refused::SellerOnly)
        );
        assert_eq!(
            may_move(OrderStatus::Delivered, OrderStatus::Refunded, Role::Seller),
            Err(Refused::Never)
        );
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
