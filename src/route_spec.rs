//! What the server knows of a route apart from its handler: method, path, who may call
//! it, its rate category and token cost. The route table (`routes.rs`) is built from
//! these with the handlers; the state, the usage layer and storage read only this, so
//! nothing below the handlers imports the route table that imports them.

/// Who may call a route, checked by the usage layer before the handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone; an `x-api-key`, when valid, still identifies the caller.
    Public,
    /// A valid API key.
    Key,
    /// A verified account (level 10 or higher).
    V10,
    /// A platform administrator (level 100).
    Admin100,
    /// A valid key here; membership of the named organization is checked by the
    /// `OrgMember` extractor (platform admins pass).
    OrgMember,
    /// As `OrgMember`, for organization admins (`OrgAdmin` extractor).
    OrgAdmin,
    /// A rule that depends on the request (guest sessions, owners, site roles...): the
    /// handler checks it. (Deck roles are `Key` routes: a key is always needed, and the
    /// slide handlers check the role on the deck.)
    Custom,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Public => "Public",
            Access::Key => "Key",
            Access::V10 => "V10",
            Access::Admin100 => "Admin100",
            Access::OrgMember => "OrgMember",
            Access::OrgAdmin => "OrgAdmin",
            Access::Custom => "Custom",
        }
    }
}

/// Rate-limit categories of the spec's "Limits" table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    Read,
    Write,
    Financial,
    Auth,
    Upload,
    Render,
    Beacon,
    Unlimited,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::Read,
        Category::Write,
        Category::Financial,
        Category::Auth,
        Category::Upload,
        Category::Render,
        Category::Beacon,
        Category::Unlimited,
    ];

    /// Requests per window for an UNVERIFIED caller; `None` is unlimited.
    pub fn base_limit(self) -> Option<u64> {
        match self {
            Category::Read => Some(120),
            Category::Write => Some(30),
            Category::Financial => Some(5),
            Category::Auth => Some(5),
            Category::Upload => Some(2),
            Category::Render => Some(1),
            Category::Beacon => Some(600),
            Category::Unlimited => None,
        }
    }

    pub fn interval_ms(self) -> u64 {
        match self {
            Category::Unlimited => 0,
            _ => 60_000,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Category::Read => "read",
            Category::Write => "write",
            Category::Financial => "financial",
            Category::Auth => "auth",
            Category::Upload => "upload",
            Category::Render => "render",
            Category::Beacon => "beacon",
            Category::Unlimited => "unlimited",
        }
    }
}

/// A route without its handler.
#[derive(Debug)]
pub struct RouteMeta {
    pub method: &'static str,
    pub path: &'static str,
    pub access: Access,
    pub category: Category,
    /// Token cost before configuration overrides (`PLINTH_TOKEN_COSTS`). All 0 in the spec.
    pub cost: u64,
    pub area: &'static str,
    /// A second method the same handler answers (spec: "listed as GET; the example sends
    /// a JSON body with POST accepts both").
    pub also: Option<&'static str>,
    /// Whether it has a handler (a route without one answers 501).
    pub built: bool,
    /// The largest request body it reads ([`crate::BODY_LIMIT`] but for uploads).
    pub body_limit: usize,
    /// Its own limit for callers without a valid key, instead of
    /// `PLINTH_ANONYMOUS_BODY_LIMIT` (the Stripe webhook: signed, and sent without a key).
    pub anonymous_body: Option<usize>,
}

/// The `area` of the routes plinth adds to the spec's.
pub const ADDITIONS: &str = "Additions";
