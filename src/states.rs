//! States, roles, kinds and formats as enums, stored as the text they always were: a
//! typo in a state is a compile error, a transition is an exhaustive `match`, and the
//! OpenAPI document lists the allowed values. Rows in `db/` decode straight into these
//! (an unknown stored value is a decode error naming the type, never a silent miss).

// `text_enum!` lives in the shared vocabulary crate (`plinth-vocab`), with the closed
// sets the workers share; `lib.rs` re-exports it, so `crate::text_enum!` stays its name.
use plinth_vocab::text_enum;

text_enum! {
    /// A license as it reads now: `expired` is never stored, it is an `active` one past
    /// its `expires_at` (`domain::licenses::status`).
    pub enum LicenseStatus {
        Active = "active",
        Expired = "expired",
        Revoked = "revoked",
    }
}

text_enum! {
    /// A download link as stored (`live` or `revoked`); its wire status adds `expired`
    /// and `exhausted` ([`LinkState`]).
    pub enum LinkStatus {
        Live = "live",
        Revoked = "revoked",
    }
}

text_enum! {
    /// A download link as its readers see it.
    pub enum LinkState {
        Live = "live",
        Revoked = "revoked",
        Expired = "expired",
        Exhausted = "exhausted",
    }
}

text_enum! {
    /// An inventory unit.
    pub enum UnitStatus {
        Available = "available",
        Unavailable = "unavailable",
        /// Held by a pending (unpaid) order.
        Reserved = "reserved",
        Claimed = "claimed",
        Sold = "sold",
        Removed = "removed",
    }
}

text_enum! {
    /// A waitlist entry.
    pub enum WaitlistStatus {
        Pending = "pending",
        /// Admitted: the email has a (verified) account.
        Accepted = "accepted",
    }
}

text_enum! {
    /// A member's role in an organization.
    pub enum OrgRole {
        /// Manages the organization, its members and its records.
        Admin = "admin",
        Member = "member",
    }
}

text_enum! {
    /// A discount code's kind.
    pub enum DiscountKind {
        /// `value` is a percent off (0 to 100).
        Percentage = "percentage",
        /// `value` is cents off a USD order.
        Fixed = "fixed",
    }
}

text_enum! {
    /// An order (docs/api.md has the table of moves; `domain::orders::may_move` is it).
    pub enum OrderStatus {
        /// Placed, a provider payment to come; its units are held until `reserved_until`.
        Pending = "pending",
        Paid = "paid",
        Fulfilled = "fulfilled",
        Delivered = "delivered",
        Canceled = "canceled",
        /// The hold ended before a payment came.
        Expired = "expired",
        Refunded = "refunded",
    }
}

text_enum! {
    /// How an order is paid.
    pub enum PaymentType {
        /// From the buyer's token balance, at once.
        Tokens = "tokens",
        /// Through the payment provider, in cents.
        Usd = "usd",
    }
}

// Why a credit account's balance moved: shared with the credit actors.
pub use plinth_vocab::LedgerKind;

// The status of a job as clients and operators see it: shared with the workers' queue
// module, which maps apalis's statuses to it.
pub use plinth_vocab::JobStatus;

text_enum! {
    /// An application for office space.
    pub enum ApplicationStatus {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    }
}

text_enum! {
    /// A subscription's state, in the payment provider's words (Stripe's documented set);
    /// `active` and `trialing` grant the plan's level.
    pub enum SubscriptionStatus {
        Incomplete = "incomplete",
        IncompleteExpired = "incomplete_expired",
        Trialing = "trialing",
        Active = "active",
        PastDue = "past_due",
        Canceled = "canceled",
        Unpaid = "unpaid",
        Paused = "paused",
    }
}

impl SubscriptionStatus {
    /// Whether the subscription grants its plan's level now.
    pub fn grants_level(self) -> bool {
        matches!(
            self,
            SubscriptionStatus::Active | SubscriptionStatus::Trialing
        )
    }
}

text_enum! {
    /// What a plinth-hosted checkout session sells.
    pub enum CheckoutMode {
        Subscription = "subscription",
    }
}

text_enum! {
    /// A plinth-hosted checkout session: `open` until its provider event completes it.
    pub enum CheckoutStatus {
        Open = "open",
        Complete = "complete",
    }
}

text_enum! {
    /// A payment on record: plinth records a payment once the provider says it succeeded.
    pub enum PaymentStatus {
        Succeeded = "succeeded",
    }
}

text_enum! {
    /// Who sees a calendar event: members only, or everybody once it is `approved`.
    pub enum Visibility {
        Public = "public",
        Private = "private",
    }
}

text_enum! {
    /// A deck's publication: one `active` per deck at most; unpublishing or publishing
    /// another revision makes it `revoked`.
    pub enum PublicationStatus {
        Active = "active",
        Revoked = "revoked",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_enums_round_trip_their_text() {
        for s in LinkState::ALL {
            assert_eq!(LinkState::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(LicenseStatus::parse("Active"), None);
        let schema = serde_json::to_value(schemars::schema_for!(UnitStatus)).unwrap();
        assert!(schema.to_string().contains("\"reserved\""), "{schema}");
    }
}

text_enum! {
    /// The spec's supported telemetry event names (`telemetry_events.event_name`).
    pub enum TelemetryEvent {
        AppOpened = "app_opened",
        AppBecameActive = "app_became_active",
        AppUpdated = "app_updated",
        AccountSignedIn = "account_signed_in",
        SubscriptionCheckoutStarted = "subscription_checkout_started",
        SubscriptionCheckoutCompleted = "subscription_checkout_completed",
        FeatureUsed = "feature_used",
        MilestoneReached = "milestone_reached",
        ErrorOccurred = "error_occurred",
    }
}
