//! Who is calling: the account behind a valid API key, as resolved once and cached
//! (`crate::db::cache`) for the requests that follow. Apart from `auth.rs`, whose extractors
//! need the state, so that the caches the state holds need not import them.

pub const LEVEL_VERIFIED: i64 = 10;
pub const LEVEL_ADMIN: i64 = 100;

#[derive(Clone, Debug)]
pub struct Caller {
    pub id: String,
    /// The caller's rate-window key (`u:<id>`), made once per cached caller.
    pub rate_key: String,
    pub level: i64,
    /// The whole account row, so the viewer's own profile needs no second query.
    pub user: crate::db::users::UserRow,
    /// `GET /api/users/viewer`'s answer, serialised on first use: the caller is cached
    /// (and dropped on any change to the account), so it is made once, not per request.
    pub viewer_answer: std::sync::OnceLock<bytes::Bytes>,
}

impl Caller {
    /// The caller an account row makes (its rate key made once, here).
    pub fn of(user: crate::db::users::UserRow) -> Caller {
        Caller {
            rate_key: format!("u:{}", user.id),
            id: user.id.clone(),
            level: user.level,
            user,
            viewer_answer: Default::default(),
        }
    }

    pub fn is_admin(&self) -> bool {
        self.level >= LEVEL_ADMIN
    }
}
