//! Orders: the buyer's list and detail (a seller's admins see their organization's),
//! status changes by the state table of `domain::orders`, receipts through the email
//! queue, and the public lookup of guest orders (no personal data).

use crate::http::request::{Limit, Offset};
use axum::extract::{Path, Query, State};
use serde::Deserialize;

use crate::db::orders::{self as store, LineRow, Of, OrderRow};
use crate::domain::checkout::run_to_end;
use crate::domain::orders::{completed, may_move, Refused, Role};
use crate::http::auth::{Caller, MaybeCaller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::{Answer, PrivateAnswer};
use crate::state::AppState;
use crate::states::{OrderStatus, PaymentType};
use crate::wire::marketplace::{Order, OrderState, OrderUpdated, PublicOrder, ReceiptSent};
use crate::wire::{Data, Page, True};

fn not_found() -> ApiError {
    ApiError::not_found("order not found")
}

/// The order and the caller's role in it; 404 for anyone else (an order's existence is
/// not revealed).
async fn order_for(app: &AppState, caller: &Caller, id: &str) -> ApiResult<(OrderRow, Role)> {
    let o = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    // A seller buying from their own shop moves the order as its seller.
    if app
        .domain
        .orgs
        .org_admin(caller, &o.organization_id)
        .await?
    {
        return Ok((o, Role::Seller));
    }
    if o.user_id.as_deref() == Some(caller.id.as_str()) {
        return Ok((o, Role::Buyer));
    }
    Err(not_found())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// An organization whose orders to list (its admins only); without it, the caller's
    /// own orders.
    domain: Option<String>,
    /// Only orders with this status.
    status: Option<String>,
    /// 1 to 100 (default 20).
    #[serde(default)]
    limit: Limit<20, 100>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/marketplace/orders` (V10): the caller's orders, newest first; with
/// `domain`, an organization's orders for its admins.
pub async fn orders(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<ListQuery>,
) -> ApiResult<PrivateAnswer<Page<Order>>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let org;
    let of = match q.domain.as_deref() {
        None => Of::User(&caller.id),
        Some(d) => {
            org = app.domain.orgs.administered(&caller, d, "orders").await?;
            Of::Organization(&org.id)
        }
    };
    let (rows, total) = store::list(&app.db, of, q.status.as_deref(), limit, offset).await?;
    let ids: Vec<String> = rows.iter().map(|o| o.id.clone()).collect();
    let lines = store::lines_of(&app.db, &ids).await?;
    let data = rows
        .iter()
        .map(|o| Order::of(o, lines.get(&o.id).map_or(&[][..], Vec::as_slice)))
        .collect();
    Ok(PrivateAnswer(Page::new(data, total, limit, offset)))
}

/// `GET /api/marketplace/orders/{id}` (V10): items, totals and status, for its buyer or
/// the selling organization's admins.
pub async fn order(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<PrivateAnswer<Data<Order>>> {
    let (o, _) = order_for(&app, &caller, &id).await?;
    let lines = store::lines(&app.db, &o.id).await?;
    Ok(PrivateAnswer(Data {
        data: Order::of(&o, &lines),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    /// The next status (docs/api.md has who may move an order where).
    status: String,
}

/// `POST /api/marketplace/orders/update` (V10): moves an order by the state table;
/// canceling a pending order releases its units, refunding a paid one gives the money
/// back (tokens to the balance, a provider payment at the provider) and the units to
/// stock.
pub async fn order_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Answer<OrderUpdated>> {
    run_to_end(async move {
        let (o, role) = order_for(&app, &caller, &body.id).await?;
        let to = body.status.trim().to_lowercase();
        if o.status.as_str() == to {
            let lines = store::lines(&app.db, &o.id).await?;
            return Ok(OrderUpdated {
                success: True,
                changed: false,
                data: Order::of(&o, &lines),
            });
        }
        let Some(to) = OrderStatus::parse(&to) else {
            let all: Vec<&str> = OrderStatus::ALL.iter().map(|s| s.as_str()).collect();
            let message = format!("`status` must be one of {}", all.join(", "));
            return Err(ApiError::conflict(message).with("status", o.status.as_str()));
        };
        may_move(o.status, to, role).map_err(|refused| match refused {
            Refused::SellerOnly => ApiError::forbidden(refused.message(o.status, to)),
            Refused::Never => {
                ApiError::conflict(refused.message(o.status, to)).with("status", o.status.as_str())
            }
        })?;
        let moved = match to {
            OrderStatus::Canceled => {
                store::release(&app.db, &o.id, o.status, to, &caller.id).await?
            }
            OrderStatus::Refunded => {
                app.domain
                    .checkout
                    .refund(&o, "refunded by the seller")
                    .await?;
                store::release(&app.db, &o.id, o.status, to, &caller.id).await?
            }
            _ => store::set_status(&app.db, &o.id, o.status, to).await?,
        };
        if !moved {
            return Err(ApiError::conflict(
                "the order changed meanwhile; read it and retry",
            ));
        }
        let o = store::get(&app.db, &o.id).await?.ok_or_else(not_found)?;
        let lines = store::lines(&app.db, &o.id).await?;
        Ok(OrderUpdated {
            success: True,
            changed: true,
            data: Order::of(&o, &lines),
        })
    })
    .await
    .map(Answer)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ReceiptBody {
    order_id: String,
    /// Without an API key: the email the guest gave at checkout.
    email: Option<String>,
}

/// The receipt email of an order.
fn receipt(app: &AppState, o: &OrderRow, lines: &[LineRow], to: &str) -> plinth_workers::Email {
    let money = |cents: i64| format!("{}.{:02} USD", cents / 100, cents % 100);
    let mut text = format!(
        "Thank you for your order from {}.\n\nOrder {}\nStatus: {}\n\n",
        o.domain, o.id, o.status
    );
    for l in lines {
        let price = match (o.payment_type, l.price_tokens) {
            (PaymentType::Tokens, Some(t)) => format!("{t} tokens"),
            _ => money(l.price_cents),
        };
        text.push_str(&format!("{} x {}  {price} each\n", l.quantity, l.sku));
    }
    let total = if o.payment_type == PaymentType::Tokens {
        format!(
            "{} tokens (discount {})",
            o.total_tokens.unwrap_or(0),
            o.discount_tokens.unwrap_or(0)
        )
    } else {
        format!(
            "{} (discount {})",
            money(o.total_cents),
            money(o.discount_cents)
        )
    };
    text.push_str(&format!("\nTotal: {total}\n"));
    plinth_workers::Email {
        to: to.to_owned(),
        from: app.opts.mail.mail_from.clone(),
        subject: format!("Your receipt for order {}", o.id),
        text,
    }
}

/// Queues the receipt of a completed order to its email.
async fn send(app: &AppState, o: &OrderRow) -> ApiResult<bool> {
    if !completed(o.status) {
        return Err(ApiError::conflict(format!(
            "receipts are for paid orders; this one is `{}`",
            o.status
        )));
    }
    let to = o
        .email
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("the order has no email to send a receipt to"))?;
    let lines = store::lines(&app.db, &o.id).await?;
    if !app.domain.mailer.send(receipt(app, o, &lines, to)).await {
        return Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "the email queue is unavailable; try again",
        ));
    }
    store::receipt_sent(&app.db, &o.id).await?;
    Ok(true)
}

/// `POST /api/marketplace/orders/send-receipt` (API key of the buyer or a seller admin,
/// or without a key the guest's email as given at checkout): emails the receipt of a
/// paid order once; later calls answer `already_sent: true` (resend-receipt sends again).
pub async fn send_receipt(
    State(app): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    JsonBody(body): JsonBody<ReceiptBody>,
) -> ApiResult<Answer<ReceiptSent>> {
    let o = match &caller {
        Some(c) => order_for(&app, c, &body.order_id).await?.0,
        None => {
            let o = store::get(&app.db, &body.order_id)
                .await?
                .ok_or_else(not_found)?;
            let matches = match (&body.email, &o.email) {
                (Some(given), Some(email)) => given.trim().eq_ignore_ascii_case(email),
                _ => false,
            };
            if o.guest_session_id.is_none() || !matches {
                return Err(ApiError::unauthorized(
                    "send an API key, or the email given at checkout in `email`",
                ));
            }
            o
        }
    };
    if o.receipts_sent > 0 {
        return Ok(Answer(ReceiptSent {
            success: True,
            sent: false,
            already_sent: Some(true),
            order_id: o.id,
        }));
    }
    send(&app, &o).await?;
    Ok(Answer(ReceiptSent {
        success: True,
        sent: true,
        already_sent: Some(false),
        order_id: o.id,
    }))
}

/// `POST /api/marketplace/orders/resend-receipt` (Key: the buyer or a seller admin):
/// emails the receipt of a paid order again.
pub async fn resend_receipt(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<ReceiptBody>,
) -> ApiResult<Answer<ReceiptSent>> {
    let (o, _) = order_for(&app, &caller, &body.order_id).await?;
    send(&app, &o).await?;
    Ok(Answer(ReceiptSent {
        success: True,
        sent: true,
        already_sent: None,
        order_id: o.id,
    }))
}

/// A guest order by its id; user orders are not looked up here.
async fn guest_order_row(app: &AppState, id: &str) -> ApiResult<OrderRow> {
    store::get(&app.db, id)
        .await?
        .filter(|o| o.guest_session_id.is_some())
        .ok_or_else(not_found)
}

/// `GET /api/marketplace/guest/orders/{id}` (Public): a guest order by its id, without
/// personal data (no contact, shipping or payment details).
pub async fn guest_order(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Answer<Data<PublicOrder>>> {
    let o = guest_order_row(&app, &id).await?;
    let lines = store::lines(&app.db, &o.id).await?;
    Ok(Answer(Data {
        data: PublicOrder::of(&o, &lines),
    }))
}

/// `GET /api/marketplace/guest/orders/{id}/status` (Public): just the status.
pub async fn guest_order_status(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Answer<OrderState>> {
    let o = guest_order_row(&app, &id).await?;
    Ok(Answer(OrderState {
        id: o.id,
        status: o.status,
        updated_at: o.updated_at,
    }))
}
