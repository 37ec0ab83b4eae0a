//! Office (workspace-access) applications: `/api/users/office*`.
//! One application per account; statuses `pending` (on apply), `approved`, `rejected`.

use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::db::office as store;
use crate::http::auth::Viewer;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::states::ApplicationStatus;
use crate::wire::office::{OfficeApplication, OfficeDeleted, OfficeStanding};
use crate::wire::{Data, Saved, True};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ApplyBody {
    /// Free-form answers of the application form.
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    data: Option<Value>,
}

/// `POST /api/users/office/apply` (V10): 409 when the caller already applied.
pub async fn apply(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<ApplyBody>,
) -> ApiResult<Answer<Saved<OfficeApplication>>> {
    let data = body.data.unwrap_or_else(|| json!({}));
    if !data.is_object() {
        return Err(ApiError::bad_request("`data` must be a JSON object"));
    }
    let application = store::create(&app.db, &caller.id, &data)
        .await
        .map_err(|e| match crate::db::unique_violation(&e) {
            Some(_) => ApiError::conflict("you have already applied; see /api/users/office/status"),
            None => e.into(),
        })?;
    Ok(Answer(Saved::new(application.into())))
}

/// `POST /api/users/office/status` (V10): the caller's application, or `data: null`.
pub async fn status(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<OfficeStanding>> {
    let application = store::by_user(&app.db, &caller.id).await?;
    let status = application.as_ref().map(|a| a.status);
    Ok(Answer(OfficeStanding {
        data: application.map(Into::into),
        status,
    }))
}

/// `GET /api/users/office` (admin): every application, newest first.
pub async fn list(State(app): State<AppState>) -> ApiResult<Answer<Data<Vec<OfficeApplication>>>> {
    let rows = store::list(&app.db).await?;
    Ok(Answer(Data {
        data: rows.into_iter().map(Into::into).collect(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    updates: Updates,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Updates {
    #[schemars(with = "Option<ApplicationStatus>")]
    status: Option<String>,
    /// Shallow-merged into the application's `data`.
    data: Option<Value>,
}

/// `POST /api/users/office/update` (admin).
pub async fn update(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Answer<Saved<OfficeApplication>>> {
    let current = store::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("application not found"))?;
    let status = match body.updates.status {
        Some(s) => ApplicationStatus::parse(&s).ok_or_else(|| {
            let all: Vec<_> = ApplicationStatus::ALL.iter().map(|s| s.as_str()).collect();
            ApiError::bad_request(format!("`status` `{s}` is not one of {}", all.join(", ")))
        })?,
        None => current.status,
    };
    let mut data = current.data.0.clone();
    match body.updates.data {
        Some(Value::Object(m)) => {
            if let Some(d) = data.as_object_mut() {
                d.extend(m);
            }
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "`updates.data` must be a JSON object",
            ))
        }
        None => {}
    }
    let application = store::update(&app.db, &body.id, status, &data)
        .await?
        .ok_or_else(|| ApiError::not_found("application not found"))?;
    Ok(Answer(Saved::new(application.into())))
}

/// `POST /api/users/office/delete` (admin).
pub async fn delete(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<OfficeDeleted>> {
    if !store::delete(&app.db, &body.id).await? {
        return Err(ApiError::not_found("application not found"));
    }
    Ok(Answer(OfficeDeleted {
        success: True,
        id: body.id,
    }))
}
