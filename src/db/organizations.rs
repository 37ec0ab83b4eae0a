//! Organizations and memberships.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, BeginWrite, Db};
use crate::states::OrgRole;
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrgRow {
    pub id: String,
    pub domain: String,
    pub name: Option<String>,
    pub data: Json<Value>,
    pub is_public: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub version: i64,
}

macro_rules! org_columns {
    () => {
        "id, domain, name, data, is_public, created_at, updated_at, version"
    };
    (o) => {
        "o.id, o.domain, o.name, o.data, o.is_public, o.created_at, o.updated_at, o.version"
    };
}

impl OrgRow {
    pub fn waitlist_enabled(&self) -> bool {
        self.data.0.get("waitlist_support") == Some(&Value::Bool(true))
    }
}

pub async fn by_domain(db: &Db, domain: &str) -> sqlx::Result<Option<OrgRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        org_columns!(),
        " FROM organizations WHERE domain = $1"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(domain.trim().to_lowercase()).fetch_optional(p).await)
}

pub async fn by_id(db: &Db, id: &str) -> sqlx::Result<Option<OrgRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        org_columns!(),
        " FROM organizations WHERE id = $1"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// Every organization (`all`), or the public ones plus those `user_id` belongs to.
pub async fn list(db: &Db, user_id: &str, all: bool) -> sqlx::Result<Vec<OrgRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        org_columns!(o),
        " FROM organizations o WHERE $2 OR o.is_public OR EXISTS \
         (SELECT 1 FROM organization_members m WHERE m.organization_id = o.id AND m.user_id = $1) \
         ORDER BY o.domain"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).bind(all).fetch_all(p).await)
}

/// Creates the organization with its creator as admin, in one transaction. A taken
/// domain surfaces as a unique violation (409).
pub async fn create(
    db: &Db,
    domain: &str,
    name: Option<&str>,
    data: &Value,
    creator: &str,
) -> sqlx::Result<OrgRow> {
    const INSERT: &str = concat!(
        "INSERT INTO organizations (id, domain, name, data, is_public, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, FALSE, $5, $5) RETURNING ",
        org_columns!()
    );
    let id = uuid::Uuid::new_v4().to_string();
    let now = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let org: OrgRow = sqlx::query_as(INSERT)
            .bind(&id).bind(domain).bind(name).bind(Json(data)).bind(now)
            .fetch_one(&mut *tx).await?;
        sqlx::query("INSERT INTO organization_members (organization_id, user_id, role, created_at, self_joined) VALUES ($1, $2, 'admin', $3, TRUE)")
            .bind(&id).bind(creator).bind(now)
            .execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(org)
    })
}

/// Replaces `data` (and optionally `name`) if nobody wrote since `version`; `None` on a
/// lost race.
pub async fn write_data(
    db: &Db,
    id: &str,
    version: i64,
    data: &Value,
    name: Option<&str>,
) -> sqlx::Result<Option<OrgRow>> {
    const SQL: &str = concat!(
        "UPDATE organizations SET data = $3, name = COALESCE($4, name), version = version + 1, \
         updated_at = $5 WHERE id = $1 AND version = $2 RETURNING ",
        org_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(version).bind(Json(data)).bind(name).bind(now())
        .fetch_optional(p).await)
}

pub async fn toggle_public(db: &Db, id: &str) -> sqlx::Result<Option<OrgRow>> {
    const SQL: &str = concat!(
        "UPDATE organizations SET is_public = NOT is_public, updated_at = $2 WHERE id = $1 RETURNING ",
        org_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(now()).fetch_optional(p).await)
}

/// Deletes the organization; memberships and waitlist entries go with it.
pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query("DELETE FROM organizations WHERE id = $1")
        .bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

pub async fn role_of(db: &Db, org_id: &str, user_id: &str) -> sqlx::Result<Option<OrgRole>> {
    let row: Option<(OrgRole,)> = with_db!(db, p => sqlx::query_as(
        "SELECT role FROM organization_members WHERE organization_id = $1 AND user_id = $2"
    ).bind(org_id).bind(user_id).fetch_optional(p).await)?;
    Ok(row.map(|r| r.0))
}

#[derive(Debug, sqlx::FromRow)]
pub struct Membership {
    #[sqlx(flatten)]
    pub org: OrgRow,
    pub role: OrgRole,
}

/// The organizations a user belongs to, with the user's role in each.
pub async fn memberships(db: &Db, user_id: &str) -> sqlx::Result<Vec<Membership>> {
    const SQL: &str = concat!(
        "SELECT ",
        org_columns!(o),
        ", m.role FROM organization_members m JOIN organizations o ON o.id = m.organization_id \
         WHERE m.user_id = $1 ORDER BY o.domain"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).fetch_all(p).await)
}

#[derive(Debug, sqlx::FromRow)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub username: Option<String>,
    pub role: OrgRole,
    pub joined_at: DateTime<Utc>,
}

pub async fn members(db: &Db, org_id: &str) -> sqlx::Result<Vec<Member>> {
    const SQL: &str =
        "SELECT u.id AS user_id, u.email, u.username, m.role, m.created_at AS joined_at \
        FROM organization_members m JOIN users u ON u.id = m.user_id \
        WHERE m.organization_id = $1 ORDER BY m.created_at, u.id";
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).fetch_all(p).await)
}

/// Adds a member; `false` when already one (nothing changes). `self_joined`: the user
/// joined by their own act, not an admin's (decides the email templates they get).
pub async fn add_member(
    db: &Db,
    org_id: &str,
    user_id: &str,
    role: OrgRole,
    self_joined: bool,
) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query(
        "INSERT INTO organization_members (organization_id, user_id, role, created_at, self_joined) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (organization_id, user_id) DO NOTHING"
    ).bind(org_id).bind(user_id).bind(role).bind(now()).bind(self_joined).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

/// Whether the user is a member who joined by their own act (`None`: not a member).
pub async fn self_joined(db: &Db, org_id: &str, user_id: &str) -> sqlx::Result<Option<bool>> {
    with_db!(db, p => sqlx::query_scalar(
        "SELECT self_joined FROM organization_members WHERE organization_id = $1 AND user_id = $2"
    ).bind(org_id).bind(user_id).fetch_optional(p).await)
}

/// Outcome of a change that must not leave an organization without an admin.
#[derive(Debug, PartialEq, Eq)]
pub enum MemberChange {
    Done,
    NotMember,
    LastAdmin,
}

/// Removes a member (`new_role: None`) or changes their role, refusing to remove or
/// demote the last admin. The organization row is locked (PostgreSQL) or the database is
/// (SQLite's single writer), so two admins cannot both step down at once.
pub async fn change_member(
    db: &Db,
    org_id: &str,
    user_id: &str,
    new_role: Option<OrgRole>,
) -> sqlx::Result<MemberChange> {
    let is_pg = matches!(db, Db::Postgres(_));
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if is_pg {
            sqlx::query("SELECT id FROM organizations WHERE id = $1 FOR UPDATE")
                .bind(org_id).execute(&mut *tx).await?;
        } else {
            // Take SQLite's write lock now, before reading the admin count.
            sqlx::query("UPDATE organizations SET updated_at = updated_at WHERE id = $1")
                .bind(org_id).execute(&mut *tx).await?;
        }
        let role: Option<(OrgRole,)> = sqlx::query_as(
            "SELECT role FROM organization_members WHERE organization_id = $1 AND user_id = $2",
        ).bind(org_id).bind(user_id).fetch_optional(&mut *tx).await?;
        let Some((role,)) = role else {
            return Ok(MemberChange::NotMember);
        };
        if role == OrgRole::Admin && new_role != Some(OrgRole::Admin) {
            let (admins,): (i64,) = sqlx::query_as(
                "SELECT COUNT(*) FROM organization_members WHERE organization_id = $1 AND role = 'admin'",
            ).bind(org_id).fetch_one(&mut *tx).await?;
            if admins <= 1 {
                return Ok(MemberChange::LastAdmin);
            }
        }
        match new_role {
            Some(r) => sqlx::query("UPDATE organization_members SET role = $3 WHERE organization_id = $1 AND user_id = $2")
                .bind(org_id).bind(user_id).bind(r).execute(&mut *tx).await?,
            None => sqlx::query("DELETE FROM organization_members WHERE organization_id = $1 AND user_id = $2")
                .bind(org_id).bind(user_id).execute(&mut *tx).await?,
        };
        tx.commit().await?;
        Ok(MemberChange::Done)
    })
}
