//! The route table: every endpoint of the spec, declared once with its method, path,
//! access rule, rate category and (default) token cost. The router, the access checks in
//! the usage layer, `GET /api/credits/pricing`, the OpenAPI document and the test that
//! compares this table with `fixtures/endpoints.tsv` all read it. A row without a handler
//! answers 501 until its area is built (see docs/status.md).

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use axum::routing::{get, MethodFilter, MethodRouter};
use axum::Router;

use crate::api;
use crate::http::keyed::KeyRule;
pub use crate::route_spec::{Access, Category, RouteMeta};
use crate::state::AppState;

pub type Handler = fn(MethodFilter) -> MethodRouter<AppState>;

/// A route of the table: what it is ([`RouteMeta`], read through `Deref`) and its
/// handler.
pub struct RouteSpec {
    pub meta: RouteMeta,
    pub handler: Option<Handler>,
    /// The request side of the OpenAPI operation, read off the handler's argument types
    /// (`crate::http::schema`).
    pub doc: Option<DocFn>,
}

impl std::ops::Deref for RouteSpec {
    type Target = RouteMeta;
    fn deref(&self) -> &RouteMeta {
        &self.meta
    }
}

pub type DocFn = fn(&mut schemars::SchemaGenerator) -> crate::http::schema::Operation;

impl RouteSpec {
    pub fn implemented(&self) -> bool {
        self.handler.is_some()
    }
}

macro_rules! route {
    ($m:ident $path:literal, $access:ident, $cat:ident, $area:literal $(, also $also:ident)? $(, body $limit:expr)? $(, anonymous $anon:expr)? $(=> $h:path)?) => {
        RouteSpec {
            meta: RouteMeta {
                method: stringify!($m),
                path: $path,
                access: Access::$access,
                category: Category::$cat,
                cost: 0,
                area: $area,
                also: route!(@also $($also)?),
                built: route!(@built $($h)?),
                body_limit: route!(@limit $($limit)?),
                anonymous_body: route!(@anon $($anon)?),
            },
            handler: route!(@handler $($h)?),
            doc: route!(@doc $($h)?),
        }
    };
    (@also) => { None };
    (@also $also:ident) => { Some(stringify!($also)) };
    (@limit) => { crate::BODY_LIMIT };
    (@limit $limit:expr) => { $limit };
    (@anon) => { None };
    (@anon $anon:expr) => { Some($anon) };
    (@built) => { false };
    (@built $h:path) => { true };
    (@handler) => { None };
    (@handler $h:path) => { Some(|f: MethodFilter| axum::routing::on(f, $h)) };
    (@doc) => { None };
    (@doc $h:path) => { Some(|g: &mut schemars::SchemaGenerator| crate::http::schema::document($h, g)) };
}

/// Every endpoint of `spec/endpoints.tsv`, in its order. Categories follow the spec's
/// "Applied to" column: GET and POST reads are `read`; create/update/delete are `write`;
/// credit send/deduct/distribute are `financial`; sign-in, password, verification,
/// checkout and purchases are `auth`; attachment and slide image operations `upload`;
/// slide exports `render`; analytics and telemetry ingestion `beacon`; the payment
/// webhook and the team-preview endpoints `unlimited`.
pub static ROUTES: &[RouteSpec] = &[
    // Status and utility
    route!(GET "/api/status", Public, Read, "Status and utility" => api::status::status),
    route!(POST "/api/aes", Public, Read, "Status and utility" => api::status::aes),
    route!(POST "/api/404", Public, Read, "Status and utility" => api::status::not_found),
    // Users
    route!(POST "/api/users/authenticate", Public, Auth, "Users" => api::users::authenticate),
    route!(POST "/api/users/authenticate-agent", Public, Auth, "Users" => api::billing::authenticate_agent),
    route!(POST "/api/users/authenticate-google-client", Public, Auth, "Users" => api::identity::authenticate_google_client),
    route!(POST "/api/users/authenticate-interstitial", Public, Auth, "Users" => api::users::authenticate_interstitial),
    route!(POST "/api/users/authenticate-token", Public, Auth, "Users" => api::identity::authenticate_token),
    route!(GET "/api/users", Admin100, Read, "Users" => api::users::list),
    route!(GET "/api/users/list-by-source", Admin100, Read, "Users", also POST => api::users::list_by_source),
    route!(POST "/api/users/get-by-id", Admin100, Read, "Users" => api::users::get_by_id),
    route!(POST "/api/users/delete", Key, Write, "Users" => api::users::delete),
    route!(POST "/api/users/update", Key, Write, "Users" => api::users::update),
    route!(POST "/api/users/update-viewer-password", Key, Auth, "Users" => api::users::update_viewer_password),
    route!(POST "/api/users/update-viewer-username", Key, Write, "Users" => api::users::update_viewer_username),
    route!(POST "/api/users/regenerate-key", Key, Auth, "Users" => api::users::regenerate_key),
    route!(POST "/api/users/reset-password", Public, Auth, "Users" => api::users::reset_password),
    route!(POST "/api/users/verify", Public, Auth, "Users" => api::users::verify),
    route!(POST "/api/users/verify-check-by-id", Admin100, Read, "Users" => api::users::verify_check_by_id),
    route!(POST "/api/users/verify-resend", Key, Auth, "Users" => api::users::verify_resend),
    route!(POST "/api/users/sync-wallet", Key, Write, "Users" => api::users::sync_wallet),
    route!(POST "/api/users/desync-wallet", Key, Write, "Users" => api::users::desync_wallet),
    route!(POST "/api/users/public/get-by-id", Public, Read, "Users" => api::users::public_get_by_id),
    route!(POST "/api/users/public/get-by-username", Public, Read, "Users" => api::users::public_get_by_username),
    route!(GET "/api/users/viewer", Key, Read, "Users" => api::users::viewer),
    route!(POST "/api/users/viewer/generate-add-payment-method-url", Key, Write, "Users" => api::billing::generate_add_payment_method_url),
    route!(GET "/api/users/viewer/get-current-payment-method", Key, Read, "Users" => api::billing::get_current_payment_method),
    route!(GET "/api/users/viewer/likes", V10, Read, "Users" => api::users::viewer_likes),
    route!(GET "/api/users/viewer/organizations", V10, Read, "Users" => api::users::viewer_organizations),
    route!(POST "/api/users/viewer/pay-provider-amount-cents", Key, Auth, "Users" => api::billing::pay_provider_amount_cents),
    route!(GET "/api/users/office", Admin100, Read, "Users" => api::office::list),
    route!(POST "/api/users/office/apply", V10, Write, "Users" => api::office::apply),
    route!(POST "/api/users/office/status", V10, Read, "Users" => api::office::status),
    route!(POST "/api/users/office/update", Admin100, Write, "Users" => api::office::update),
    route!(POST "/api/users/office/delete", Admin100, Write, "Users" => api::office::delete),
    // Subscriptions
    route!(GET "/api/users/subscriptions", Public, Read, "Subscriptions" => api::billing::plans),
    route!(POST "/api/users/subscriptions/check", Key, Read, "Subscriptions" => api::billing::check),
    route!(POST "/api/users/subscriptions/get-by-user-id", Key, Read, "Subscriptions" => api::billing::get_by_user_id),
    route!(POST "/api/users/subscriptions/get-current-invoices", Key, Read, "Subscriptions" => api::billing::invoices),
    route!(POST "/api/users/subscriptions/subscribe", Key, Auth, "Subscriptions" => api::billing::subscribe),
    route!(POST "/api/users/subscriptions/unsubscribe", Key, Write, "Subscriptions" => api::billing::unsubscribe),
    // Organizations
    route!(GET "/api/organizations", V10, Read, "Organizations" => api::organizations::list),
    route!(POST "/api/organizations/create", V10, Write, "Organizations" => api::organizations::create),
    route!(POST "/api/organizations/delete", OrgAdmin, Write, "Organizations" => api::organizations::delete),
    route!(POST "/api/organizations/get-by-id", V10, Read, "Organizations" => api::organizations::get_by_id),
    route!(POST "/api/organizations/update", OrgAdmin, Write, "Organizations" => api::organizations::update),
    route!(POST "/api/organizations/toggle-public-access", OrgAdmin, Write, "Organizations" => api::organizations::toggle_public_access),
    route!(POST "/api/organizations/waitlist-toggle", OrgAdmin, Write, "Organizations" => api::organizations::waitlist_toggle),
    route!(POST "/api/organizations/membership", V10, Read, "Organizations", also GET => api::organizations::membership),
    route!(POST "/api/organizations/membership/automatic", V10, Write, "Organizations" => api::organizations::membership_automatic),
    route!(POST "/api/organizations/users", OrgMember, Read, "Organizations" => api::organizations::users),
    route!(POST "/api/organizations/users/add", OrgAdmin, Write, "Organizations" => api::organizations::users_add),
    route!(POST "/api/organizations/users/remove", OrgMember, Write, "Organizations" => api::organizations::users_remove),
    route!(POST "/api/organizations/users/promote", OrgAdmin, Write, "Organizations" => api::organizations::users_promote),
    route!(POST "/api/organizations/users/demote", OrgAdmin, Write, "Organizations" => api::organizations::users_demote),
    // Waitlist
    route!(POST "/api/waitlist/add", Public, Write, "Waitlist" => api::waitlist::add),
    route!(GET "/api/waitlist/list-by-domain", Key, Read, "Waitlist" => api::waitlist::list_by_domain),
    route!(POST "/api/waitlist/accept-by-email", Key, Write, "Waitlist" => api::waitlist::accept_by_email),
    route!(POST "/api/waitlist/revoke-by-email", Key, Write, "Waitlist" => api::waitlist::revoke_by_email),
    route!(POST "/api/waitlist/accept-all", OrgAdmin, Write, "Waitlist" => api::waitlist::accept_all),
    route!(POST "/api/waitlist/status", Key, Read, "Waitlist" => api::waitlist::status),
    // Credits
    route!(GET "/api/credits", Key, Read, "Credits" => api::credits::history),
    route!(GET "/api/credits/balance", Key, Read, "Credits" => api::credits::balance),
    route!(GET "/api/credits/pricing", Public, Read, "Credits" => api::credits::pricing),
    route!(POST "/api/credits/check", Key, Read, "Credits" => api::credits::check),
    route!(POST "/api/credits/create-account-by-user-id", Admin100, Write, "Credits" => api::credits::create_account_by_user_id),
    route!(POST "/api/credits/deduct", Key, Financial, "Credits" => api::credits::deduct),
    route!(POST "/api/credits/distribute-bonus", Key, Financial, "Credits" => api::credits::distribute_bonus),
    route!(POST "/api/credits/distribute-to-user-id", Admin100, Financial, "Credits" => api::credits::distribute_to_user_id),
    route!(POST "/api/credits/get-balance-by-email", Admin100, Read, "Credits" => api::credits::get_balance_by_email),
    route!(POST "/api/credits/get-balance-by-user-id", Admin100, Read, "Credits" => api::credits::get_balance_by_user_id),
    route!(POST "/api/credits/send", Key, Financial, "Credits" => api::credits::send),
    route!(POST "/api/credits/vendor-distribution-to-email", Admin100, Financial, "Credits" => api::credits::vendor_distribution_to_email),
    route!(POST "/api/credits/verify-apple-transaction-distritbution", Key, Financial, "Credits" => api::credits::verify_apple_transaction),
    // Telemetry
    route!(POST "/api/telemetry/events", Public, Beacon, "Telemetry" => api::telemetry::events),
    route!(POST "/api/telemetry/metrics/daily", Admin100, Read, "Telemetry" => api::telemetry::daily),
    route!(POST "/api/telemetry/metrics/query", Admin100, Read, "Telemetry" => api::telemetry::query),
    route!(POST "/api/telemetry/subscriptions/summary", Admin100, Read, "Telemetry" => api::telemetry::subscriptions_summary),
    // Webhook
    route!(POST "/api/webhooks/stripe", Public, Unlimited, "Webhook", anonymous crate::adapters::payments::WEBHOOK_BODY_LIMIT => api::billing::stripe),
    // Posts
    route!(POST "/api/posts", Public, Read, "Posts" => api::posts::list),
    route!(GET "/api/posts/{id}", Public, Read, "Posts" => api::posts::get),
    route!(POST "/api/posts/create", V10, Write, "Posts" => api::posts::create),
    route!(POST "/api/posts/update", V10, Write, "Posts" => api::posts::update),
    route!(POST "/api/posts/delete", Key, Write, "Posts" => api::posts::delete),
    route!(POST "/api/posts/admin-stats", Admin100, Read, "Posts" => api::posts::admin_stats),
    route!(POST "/api/posts/all-threads", Public, Read, "Posts" => api::posts::all_threads),
    route!(POST "/api/posts/all-thread-replies", Public, Read, "Posts" => api::posts::all_thread_replies),
    route!(GET "/api/posts/public/{slug}", Public, Read, "Posts" => api::posts::by_slug),
    route!(POST "/api/posts/public/organizations/{id}", Public, Read, "Posts" => api::posts::organization_posts),
    route!(GET "/api/posts/reception/{id}", V10, Read, "Posts" => api::posts::reception),
    route!(POST "/api/public-access/list", V10, Unlimited, "Posts" => api::public_access::list),
    route!(POST "/api/public-access/add-domain", V10, Unlimited, "Posts" => api::public_access::add_domain),
    route!(POST "/api/public-access/remove-domain", V10, Unlimited, "Posts" => api::public_access::remove_domain),
    route!(POST "/api/public-access/status", Key, Unlimited, "Posts" => api::public_access::status),
    // Documents, events, likes
    route!(POST "/api/documents", OrgMember, Read, "Documents, events, likes", also GET => api::documents::list),
    route!(GET "/api/documents/{id}", Public, Read, "Documents, events, likes" => api::documents::get),
    route!(POST "/api/documents/create", OrgMember, Write, "Documents, events, likes" => api::documents::create),
    route!(POST "/api/documents/update", OrgMember, Write, "Documents, events, likes" => api::documents::update),
    route!(POST "/api/documents/delete", OrgMember, Write, "Documents, events, likes" => api::documents::delete),
    route!(GET "/api/events", Public, Read, "Documents, events, likes" => api::events::list),
    route!(GET "/api/events/{id}", V10, Read, "Documents, events, likes" => api::events::get),
    route!(POST "/api/events/create", OrgMember, Write, "Documents, events, likes" => api::events::create),
    route!(POST "/api/events/update", OrgMember, Write, "Documents, events, likes" => api::events::update),
    route!(POST "/api/events/delete", OrgMember, Write, "Documents, events, likes" => api::events::delete),
    route!(POST "/api/events/conflicts", OrgMember, Read, "Documents, events, likes" => api::events::conflicts),
    route!(GET "/api/likes/{id}", Public, Read, "Documents, events, likes" => api::likes::get),
    route!(POST "/api/likes/create", V10, Write, "Documents, events, likes" => api::likes::create),
    route!(POST "/api/likes/update", Key, Write, "Documents, events, likes" => api::likes::update),
    route!(POST "/api/likes/delete", Key, Write, "Documents, events, likes" => api::likes::delete),
    // Data objects and files
    route!(GET "/api/data", V10, Read, "Data objects and files" => api::data::list),
    route!(POST "/api/data/delete", Key, Write, "Data objects and files" => api::data::delete),
    route!(POST "/api/data/generate-presigned-url", OrgMember, Upload, "Data objects and files" => api::data::generate_presigned_url),
    route!(POST "/api/data/generate-presigned-url-gcs", OrgMember, Upload, "Data objects and files" => api::data::generate_presigned_url_gcs),
    route!(POST "/api/data/admin/upload", Admin100, Upload, "Data objects and files" => api::data::admin_upload),
    route!(POST "/api/data/admin/delete", Admin100, Write, "Data objects and files" => api::data::admin_delete),
    route!(GET "/api/data/localizations/{id}", Public, Read, "Data objects and files" => api::data::localization_get),
    route!(POST "/api/data/localizations/create", V10, Write, "Data objects and files" => api::data::localization_create),
    route!(POST "/api/data/localizations/update", Key, Write, "Data objects and files" => api::data::localization_update),
    route!(POST "/api/data/localizations/delete", Key, Write, "Data objects and files" => api::data::localization_delete),
    route!(POST "/api/data/localizations/get-by-entity-id", Public, Read, "Data objects and files" => api::data::localizations_of_entity),
    route!(POST "/api/data/prices/by-label", Public, Read, "Data objects and files" => api::data::price_by_label),
    route!(GET "/api/data/things", Public, Read, "Data objects and files" => api::data::thing_get),
    route!(POST "/api/data/things/create", V10, Write, "Data objects and files" => api::data::thing_create),
    route!(POST "/api/data/things/update", Key, Write, "Data objects and files" => api::data::thing_update),
    route!(POST "/api/data/things/delete", Key, Write, "Data objects and files" => api::data::thing_delete),
    route!(GET "/api/data/things/list", Public, Read, "Data objects and files" => api::data::things_list),
    route!(GET "/api/data/things/list/search", Public, Read, "Data objects and files" => api::data::things_search),
    // Inventory
    route!(GET "/api/inventory", Public, Read, "Inventory" => api::inventory::list),
    route!(GET "/api/inventory/{id}", Public, Read, "Inventory" => api::inventory::get),
    route!(POST "/api/inventory/search", Public, Read, "Inventory" => api::inventory::search),
    route!(POST "/api/inventory/claim", V10, Write, "Inventory" => api::inventory::claim),
    route!(POST "/api/inventory/create", OrgAdmin, Write, "Inventory" => api::inventory::create),
    route!(POST "/api/inventory/update", OrgAdmin, Write, "Inventory" => api::inventory::update),
    route!(POST "/api/inventory/delete", OrgAdmin, Write, "Inventory" => api::inventory::delete),
    route!(POST "/api/inventory/units/add", OrgAdmin, Write, "Inventory" => api::inventory::units_add),
    route!(POST "/api/inventory/units/update", OrgAdmin, Write, "Inventory" => api::inventory::units_update),
    route!(POST "/api/inventory/units/remove", OrgAdmin, Write, "Inventory" => api::inventory::units_remove),
    // Marketplace
    route!(GET "/api/marketplace/cart", V10, Read, "Marketplace" => api::marketplace::cart),
    route!(POST "/api/marketplace/cart/add", V10, Write, "Marketplace" => api::marketplace::cart_add),
    route!(POST "/api/marketplace/cart/update", V10, Write, "Marketplace" => api::marketplace::cart_update),
    route!(POST "/api/marketplace/cart/remove", V10, Write, "Marketplace" => api::marketplace::cart_remove),
    route!(POST "/api/marketplace/cart/clear", V10, Write, "Marketplace" => api::marketplace::cart_clear),
    route!(POST "/api/marketplace/checkout", V10, Auth, "Marketplace" => api::marketplace::checkout),
    route!(GET "/api/marketplace/orders", V10, Read, "Marketplace" => api::marketplace::orders),
    route!(GET "/api/marketplace/orders/{id}", V10, Read, "Marketplace" => api::marketplace::order),
    route!(POST "/api/marketplace/orders/update", V10, Write, "Marketplace" => api::marketplace::order_update),
    route!(POST "/api/marketplace/orders/send-receipt", Custom, Write, "Marketplace" => api::marketplace::send_receipt),
    route!(POST "/api/marketplace/orders/resend-receipt", Key, Write, "Marketplace" => api::marketplace::resend_receipt),
    route!(GET "/api/marketplace/discounts", OrgAdmin, Read, "Marketplace" => api::marketplace::discounts),
    route!(GET "/api/marketplace/discounts/{id}", OrgAdmin, Read, "Marketplace" => api::marketplace::discount),
    route!(POST "/api/marketplace/discounts/create", OrgAdmin, Write, "Marketplace" => api::marketplace::discount_create),
    route!(POST "/api/marketplace/discounts/update", OrgAdmin, Write, "Marketplace" => api::marketplace::discount_update),
    route!(POST "/api/marketplace/discounts/delete", OrgAdmin, Write, "Marketplace" => api::marketplace::discount_delete),
    // Guest checkout
    route!(POST "/api/marketplace/guest/session", Public, Auth, "Guest checkout" => api::marketplace::guest_session),
    route!(GET "/api/marketplace/guest/cart", Custom, Read, "Guest checkout" => api::marketplace::guest_cart),
    route!(POST "/api/marketplace/guest/cart/add", Custom, Write, "Guest checkout" => api::marketplace::guest_cart_add),
    route!(POST "/api/marketplace/guest/cart/remove", Custom, Write, "Guest checkout" => api::marketplace::guest_cart_remove),
    route!(POST "/api/marketplace/guest/cart/update", Custom, Write, "Guest checkout" => api::marketplace::guest_cart_update),
    route!(POST "/api/marketplace/guest/cart/clear", Custom, Write, "Guest checkout" => api::marketplace::guest_cart_clear),
    route!(POST "/api/marketplace/guest/checkout", Custom, Auth, "Guest checkout" => api::marketplace::guest_checkout),
    route!(GET "/api/marketplace/guest/orders/{id}", Public, Read, "Guest checkout" => api::marketplace::guest_order),
    route!(GET "/api/marketplace/guest/orders/{id}/status", Public, Read, "Guest checkout" => api::marketplace::guest_order_status),
    // Downloads
    route!(POST "/api/downloads/purchase", Custom, Auth, "Downloads" => api::downloads::purchase),
    route!(POST "/api/downloads/create", OrgAdmin, Write, "Downloads" => api::downloads::create),
    route!(GET "/api/downloads/{token}", Public, Read, "Downloads" => api::downloads::redeem),
    route!(POST "/api/downloads/revoke", OrgAdmin, Write, "Downloads" => api::downloads::revoke),
    route!(GET "/api/downloads", OrgAdmin, Read, "Downloads" => api::downloads::list),
    route!(GET "/api/downloads/status", Key, Read, "Downloads" => api::downloads::link_status),
    // Licenses
    route!(POST "/api/licenses/purchase", Custom, Auth, "Licenses" => api::licenses::purchase),
    route!(POST "/api/licenses/create", OrgAdmin, Write, "Licenses" => api::licenses::create),
    route!(POST "/api/licenses/validate", Public, Write, "Licenses" => api::licenses::validate),
    route!(POST "/api/licenses/revoke", Key, Write, "Licenses" => api::licenses::revoke),
    route!(POST "/api/licenses/regenerate", Key, Write, "Licenses" => api::licenses::regenerate),
    route!(GET "/api/licenses", Key, Read, "Licenses" => api::licenses::list),
    route!(GET "/api/licenses/{id}", Key, Read, "Licenses" => api::licenses::get),
    // Key-value store
    route!(GET "/api/kv/namespaces", Admin100, Read, "Key-value store" => api::kv::namespaces),
    route!(POST "/api/kv/namespaces/create", Admin100, Write, "Key-value store" => api::kv::namespace_create),
    route!(POST "/api/kv/namespaces/delete", Admin100, Write, "Key-value store" => api::kv::namespace_delete),
    route!(POST "/api/kv/entries/create", Admin100, Write, "Key-value store" => api::kv::entry_create),
    route!(POST "/api/kv/entries/get", Admin100, Read, "Key-value store" => api::kv::entry_get),
    route!(POST "/api/kv/entries/update", Admin100, Write, "Key-value store" => api::kv::entry_update),
    route!(POST "/api/kv/entries/delete", Admin100, Write, "Key-value store" => api::kv::entry_delete),
    // Analytics
    route!(POST "/api/analytics/sites/create", V10, Write, "Analytics" => api::analytics::create),
    route!(POST "/api/analytics/sites/update", Key, Write, "Analytics" => api::analytics::update),
    route!(POST "/api/analytics/sites/delete", Key, Write, "Analytics" => api::analytics::delete),
    route!(GET "/api/analytics/sites", V10, Read, "Analytics" => api::analytics::list),
    route!(GET "/api/analytics/sites/{id}", Key, Read, "Analytics" => api::analytics::get),
    route!(GET "/api/analytics/sites/members", Key, Read, "Analytics" => api::analytics::members),
    route!(POST "/api/analytics/sites/members/add", Key, Write, "Analytics" => api::analytics::member_add),
    route!(POST "/api/analytics/sites/members/update", Key, Write, "Analytics" => api::analytics::member_update),
    route!(POST "/api/analytics/sites/members/remove", Key, Write, "Analytics" => api::analytics::member_remove),
    route!(POST "/api/analytics/track", Public, Beacon, "Analytics" => api::analytics::track),
    route!(POST "/api/analytics/events", Key, Read, "Analytics" => api::analytics::events),
    route!(POST "/api/analytics/events/{id}/attachment/create", Custom, Upload, "Analytics" => api::analytics::attachment_create),
    route!(POST "/api/analytics/events/{id}/attachment", Key, Read, "Analytics" => api::analytics::attachment),
    route!(POST "/api/analytics/stats", Key, Read, "Analytics" => api::analytics::stats),
    // Slide decks
    route!(GET "/api/slides/capabilities", Public, Read, "Slide decks" => api::slides::capabilities),
    route!(POST "/api/slides/create", V10, Write, "Slide decks" => api::slides::create),
    route!(GET "/api/slides", V10, Read, "Slide decks" => api::slides::list),
    route!(GET "/api/slides/{id}", V10, Read, "Slide decks" => api::slides::get),
    route!(POST "/api/slides/update", V10, Write, "Slide decks" => api::slides::update),
    route!(POST "/api/slides/delete", V10, Write, "Slide decks" => api::slides::delete),
    route!(GET "/api/slides/revisions", V10, Read, "Slide decks" => api::slides::revisions),
    route!(GET "/api/slides/revisions/{id}", V10, Read, "Slide decks" => api::slides::revision),
    route!(POST "/api/slides/revisions/restore", V10, Write, "Slide decks" => api::slides::restore),
    route!(POST "/api/slides/assets/create", V10, Upload, "Slide decks" => api::slides::asset_create),
    route!(POST "/api/slides/assets/complete", V10, Upload, "Slide decks" => api::slides::asset_complete),
    route!(GET "/api/slides/assets/{id}", V10, Read, "Slide decks" => api::slides::asset_get),
    route!(POST "/api/slides/assets/delete", V10, Upload, "Slide decks" => api::slides::asset_delete),
    route!(POST "/api/slides/exports/create", V10, Render, "Slide decks" => api::slides::export_create),
    route!(GET "/api/slides/jobs/{id}", V10, Read, "Slide decks" => api::slides::job),
    route!(POST "/api/slides/jobs/cancel", V10, Write, "Slide decks" => api::slides::job_cancel),
    route!(POST "/api/slides/publish", V10, Write, "Slide decks" => api::slides::publish),
    route!(POST "/api/slides/unpublish", V10, Write, "Slide decks" => api::slides::unpublish),
    route!(GET "/api/slides/public/{id}", Public, Read, "Slide decks" => api::slides::public),
    route!(POST "/api/slides/present", Public, Read, "Slide decks" => api::slides::present),
];

/// Routes beyond the spec's list (docs/api.md, "Additions"): the same treatment as
/// `ROUTES` (access checks, rate categories, costs, the OpenAPI document), but left out of
/// the comparison with the spec (`tests/api/route_table.rs`) and of its pricing list.
/// Adding one is adding a row.
pub static EXTRA_ROUTES: &[RouteSpec] = &[
    route!(GET "/api/openapi.json", Public, Read, "Additions" => api::openapi::openapi),
    route!(POST "/api/users/verify/details", Public, Auth, "Additions" => api::users::verify_details),
    route!(POST "/api/users/verify/reject", Public, Auth, "Additions" => api::users::verify_reject),
    route!(GET "/api/admin/jobs/stats", Admin100, Read, "Additions" => api::admin::stats),
    route!(GET "/api/admin/jobs", Admin100, Read, "Additions" => api::admin::list),
    route!(GET "/api/admin/jobs/{id}", Admin100, Read, "Additions" => api::admin::show),
    route!(POST "/api/admin/jobs/retry", Admin100, Write, "Additions" => api::admin::retry),
    route!(POST "/api/admin/jobs/cancel", Admin100, Write, "Additions" => api::admin::cancel),
    route!(POST "/api/admin/jobs/bulk", Admin100, Write, "Additions" => api::admin::bulk),
    route!(POST "/api/admin/queues/pause", Admin100, Write, "Additions" => api::admin::pause),
    route!(POST "/api/admin/queues/resume", Admin100, Write, "Additions" => api::admin::resume),
    route!(GET "/api/admin/workers", Admin100, Read, "Additions" => api::admin::workers),
    route!(GET "/api/admin/errors", Admin100, Read, "Additions" => api::ops::errors),
    route!(GET "/api/slides/jobs/{id}/events", V10, Read, "Additions" => api::slides::job_events),
    route!(POST "/api/slides/jobs/{id}/events/token", V10, Read, "Additions" => api::slides::job_stream_token),
    route!(GET "/api/slides/jobs/{id}/stream", Public, Read, "Additions" => api::slides::job_stream),
    route!(GET "/api/slides/callbacks/secret", V10, Read, "Additions" => api::slides::callback_secret),
    route!(POST "/api/slides/callbacks/secret/rotate", V10, Auth, "Additions" => api::slides::callback_secret_rotate),
    route!(POST "/api/slides/assets/upload", V10, Upload, "Additions", body crate::domain::decks::MAX_ASSET_BYTES as usize => api::slides::asset_upload),
];

/// Every route: the spec's, then the additions.
pub fn all() -> impl Iterator<Item = &'static RouteSpec> {
    ROUTES.iter().chain(EXTRA_ROUTES)
}

/// Every POST route's `Idempotency-Key` rule, by path (one POST per path in the table).
static KEY_RULES: LazyLock<HashMap<&'static str, KeyRule>> = LazyLock::new(|| {
    let mut gen = schemars::SchemaGenerator::default();
    all()
        .filter(|r| r.method == "POST")
        .map(|r| {
            let own = crate::http::idempotency::hash_route(r.path).is_some()
                || r.doc.is_some_and(|d| d(&mut gen).idempotency_key);
            (r.path, crate::http::keyed::rule_of(&r.meta, own))
        })
        .collect()
});

/// What `method path` (a route pattern of the table) does with an `Idempotency-Key`;
/// `None` for other methods than POST.
pub fn key_rule(method: &str, path: &str) -> Option<KeyRule> {
    (method == "POST")
        .then(|| KEY_RULES.get(path).copied())
        .flatten()
}

fn method_filter(m: &str) -> MethodFilter {
    match m {
        "GET" => MethodFilter::GET,
        "POST" => MethodFilter::POST,
        "PUT" => MethodFilter::PUT,
        "PATCH" => MethodFilter::PATCH,
        "DELETE" => MethodFilter::DELETE,
        other => panic!("route table uses unsupported method {other}"),
    }
}

/// Every row of the table (a row without a handler answers 501), the OpenAPI document
/// and the JSON 404 fallback; `crate::app` adds the layers.
pub fn router() -> Router<AppState> {
    let mut by_path: BTreeMap<&str, MethodRouter<AppState>> = BTreeMap::new();
    let mut gen = schemars::SchemaGenerator::default();
    for spec in all() {
        let handler = spec
            .handler
            .unwrap_or(|f| axum::routing::on(f, api::not_implemented));
        let mut mr = handler(method_filter(spec.method));
        if let Some(also) = spec.also {
            mr = mr.merge(handler(method_filter(also)));
        }
        // A handler that reads no body still answers only what the document says it
        // takes: nothing, or a JSON object (issue 33: `[null]` or `\0` passed before).
        let takes_none = spec
            .doc
            .map(|d| d(&mut gen))
            .is_some_and(|op| op.body.is_none() && !op.raw_body && op.binary_body.is_none());
        if takes_none && spec.method != "GET" {
            mr = mr.layer(axum::middleware::from_fn(
                crate::http::extract::object_or_empty,
            ));
        }
        let entry = by_path.remove(spec.path).unwrap_or_default();
        by_path.insert(spec.path, entry.merge(mr));
    }
    let mut router = Router::new();
    for (path, mr) in by_path {
        router = router.route(path, mr);
    }
    router.fallback(api::fallback)
}

/// The probes and the Prometheus scrape (`/livez`, `/readyz`, `/metrics`): outside the
/// JSON API (no envelope, key or rate limit), on the API listener and `--metrics-listen`.
pub fn ops<S: Clone + Send + Sync + 'static>(state: crate::observe::OpsState) -> Router<S> {
    Router::new()
        .route("/livez", get(api::ops::livez))
        .route("/readyz", get(api::ops::readyz))
        .route("/metrics", get(api::ops::metrics))
        .with_state(state)
}

/// Browser assets outside the JSON API: the analytics script and dashboard, the console,
/// and the pages account emails link to.
pub fn assets() -> Router<AppState> {
    Router::new()
        .route("/analytics/v1.js", get(api::analytics::script))
        .route("/analytics/dashboard", get(api::analytics::dashboard))
        .route("/", get(api::pages::index))
        .route("/console", get(api::console::page))
        // The pages account emails link to (`mail::code_link`).
        .route("/verify", get(api::pages::verify))
        .route("/reset-password", get(api::pages::reset_password))
        .route("/sign-in", get(api::pages::sign_in))
}

/// The simulated payment provider's hosted pages (HTML, outside the JSON API). They
/// exist only while payments are simulated (finding M8: with Stripe they would be an
/// unauthenticated way to attach cards).
pub fn hosted_pages(state: &AppState) -> Router<AppState> {
    if state.payments.hosted_by_plinth() {
        api::checkout::router()
    } else {
        Router::new()
    }
}
