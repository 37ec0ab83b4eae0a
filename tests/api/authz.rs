//! The authorization matrix (issue 10): every route of the table, called by every kind
//! of caller below its access, never answers 2xx and never shows another tenant's data.
//!
//! What a route needs is read from the spec's access column (fixtures/endpoints.tsv),
//! not from our route table, so loosening a route in `src/http/routes.rs` fails here twice:
//! the table check, and the calls made by the callers it would then let in.

use plinth::http::routes::{Access, ROUTES};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{email, Server};

/// The least a caller must be, from the spec's wording. Compound rules ("owner or
/// admin", "Key (owner) or OrgAdmin") count as their weakest part; rows that accept a
/// guest session or a token instead of a key need nothing the matrix can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    Nothing,
    Key,
    Verified,
    OrgMember,
    OrgAdmin,
    Admin,
}

fn need_of(access: &str, previous: Need) -> Need {
    let a = access.trim();
    match a {
        "same" | "same as above" => previous,
        "OrgMember" => Need::OrgMember,
        "OrgAdmin" | "OrgAdmin or Admin100" => Need::OrgAdmin,
        "Admin100" => Need::Admin,
        _ if a.starts_with("Public") || a == "mentioned only" => Need::Nothing,
        _ if a.contains("guest") || a.contains("Guest") || a == "attachment token" => Need::Nothing,
        // "verified user whose email ends in @<domain>, OrgAdmin, or Admin100": an
        // organization admin need not be verified, so the weakest part is a key.
        _ if a.starts_with("verified user whose email") => Need::Key,
        _ if a.starts_with("V10")
            || a.starts_with("Editor")
            || a.starts_with("verified")
            || a.contains("manager") =>
        {
            Need::Verified
        }
        _ if a.starts_with("Key")
            || a.starts_with("listed Public")
            || a.starts_with("Admin100 (+namespace owner)")
            || a.starts_with("OrgAdmin or issuer")
            || a.contains("owner") =>
        {
            Need::Key
        }
        other => panic!("access `{other}` is not classified; extend need_of"),
    }
}

/// (method, path, need) for every spec row, in spec order.
fn spec_needs() -> Vec<(String, String, Need)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/endpoints.tsv"
    ))
    .unwrap();
    let mut previous = Need::Nothing;
    let mut out = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let need = need_of(cols[4], previous);
        previous = need;
        out.push((cols[0].to_owned(), cols[1].to_owned(), need));
    }
    out
}

/// Whether the table's access level enforces at least `need` in the usage layer
/// (`Custom` routes check in the handler; only the calls below can judge them).
fn table_enforces(access: Access, need: Need) -> bool {
    match access {
        Access::Custom => true,
        Access::Public => need == Need::Nothing,
        Access::Key => matches!(need, Need::Nothing | Need::Key),
        // A handler can still narrow V10 to deck roles; the table only promises level 10.
        Access::V10 => matches!(need, Need::Nothing | Need::Key | Need::Verified),
        Access::OrgMember => matches!(need, Need::Nothing | Need::Key | Need::OrgMember),
        Access::OrgAdmin => matches!(
            need,
            Need::Nothing | Need::Key | Need::OrgMember | Need::OrgAdmin
        ),
        Access::Admin100 => true,
    }
}

#[test]
fn the_route_table_is_never_looser_than_the_spec() {
    let mut loose = Vec::new();
    for (method, path, need) in spec_needs() {
        let route = ROUTES
            .iter()
            .find(|r| r.method == method && r.path == path)
            .unwrap_or_else(|| panic!("{method} {path} is not in the table"));
        if !table_enforces(route.access, need) {
            loose.push(format!(
                "{method} {path}: table {:?}, spec {need:?}",
                route.access
            ));
        }
    }
    assert!(
        loose.is_empty(),
        "routes looser than the spec:\n{}",
        loose.join("\n")
    );
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Anonymous,
    InvalidKey,
    Level0,
    Verified,
    OtherOrgMember,
    OtherOrgAdmin,
    /// A plain member of the victim organization (below OrgAdmin).
    VictimOrgMember,
    Admin100,
}

impl Kind {
    /// Whether this caller is below `need` for the victim's organization.
    fn denied(self, need: Need) -> bool {
        use Kind::*;
        match need {
            Need::Nothing => false,
            Need::Key => matches!(self, Anonymous | InvalidKey),
            Need::Verified => matches!(self, Anonymous | InvalidKey | Level0),
            Need::OrgMember => !matches!(self, VictimOrgMember | Admin100),
            Need::OrgAdmin => self != Admin100,
            Need::Admin => self != Admin100,
        }
    }

    /// Whether this caller may legitimately see the victim organization's data.
    fn insider(self) -> bool {
        matches!(self, Kind::VictimOrgMember | Kind::Admin100)
    }
}

/// The victim tenant: an organization whose name, admin and deck carry `marker`.
struct Victim {
    marker: String,
    domain: String,
    admin_id: String,
    deck_id: String,
}

async fn user_id(s: &Server, key: &str) -> String {
    let r = s.get("/api/users/viewer", Some(key)).await;
    r.body["user"]["id"].as_str().unwrap().to_owned()
}

async fn organization(s: &Server, admin: &str, domain: &str, name: &str) {
    s.post(
        "/api/organizations/create",
        Some(admin),
        json!({"domain": domain, "name": name}),
    )
    .await
    .assert_ok();
}

async fn add_member(s: &Server, admin: &str, domain: &str, member_email: &str) {
    s.post(
        "/api/organizations/users/add",
        Some(admin),
        json!({"domain": domain, "email": member_email}),
    )
    .await
    .assert_ok();
}

/// A concrete URL: path parameters become the victim's ids where the area has them, and
/// the query names the victim's organization and deck.
fn url(path: &str, v: &Victim) -> String {
    let id = if path.starts_with("/api/slides") {
        v.deck_id.as_str()
    } else if path.starts_with("/api/users") {
        v.admin_id.as_str()
    } else {
        "nonexistent"
    };
    let concrete: Vec<&str> = path
        .split('/')
        .map(|seg| if seg.starts_with('{') { id } else { seg })
        .collect();
    format!(
        "{}?domain={}&deck_id={}&id={}",
        concrete.join("/"),
        v.domain,
        v.deck_id,
        id
    )
}

#[tokio::test]
async fn no_caller_below_a_routes_access_gets_2xx_or_another_tenants_data() {
    let s = Server::start().await;
    let marker = format!("victim{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);

    // The victim tenant.
    let victim_admin_email = email(&marker);
    let victim_admin = s.verified_user(&victim_admin_email).await;
    // The domain and ids are sent in requests (and may be echoed), and organization
    // names and domains are listed to everybody (`GET /api/organizations`, the spec);
    // the marker is in what the victim keeps private: the organization's `data`, the
    // admin's email and the deck.
    let victim_domain = format!(
        "v{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    organization(&s, &victim_admin, &victim_domain, "Org victim").await;
    s.post(
        "/api/organizations/update",
        Some(&victim_admin),
        json!({"domain": victim_domain, "data": {"secret": marker}}),
    )
    .await
    .assert_ok();
    let victim_member_email = email("vmember");
    let victim_member = s.verified_user(&victim_member_email).await;
    add_member(&s, &victim_admin, &victim_domain, &victim_member_email).await;
    let deck = s
        .post(
            "/api/slides/create",
            Some(&victim_admin),
            json!({"domain": victim_domain, "markdown": format!("# Deck {marker}\n\nsecret {marker}")}),
        )
        .await;
    deck.assert_ok();
    let v = Victim {
        marker: marker.clone(),
        domain: victim_domain.clone(),
        admin_id: user_id(&s, &victim_admin).await,
        deck_id: deck.body["id"].as_str().unwrap().to_owned(),
    };

    // Another tenant, whose members attack.
    let other_admin = s.verified_user(&email("oadmin")).await;
    let other_domain = format!(
        "o{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    organization(&s, &other_admin, &other_domain, "Other").await;
    let other_member_email = email("omember");
    let other_member = s.verified_user(&other_member_email).await;
    add_member(&s, &other_admin, &other_domain, &other_member_email).await;

    let (level0, _) = s.signup(&email("level0")).await;
    let verified = s.verified_user(&email("v10")).await;
    let admin = s.admin(&email("root")).await;
    let mut callers: Vec<(Kind, Option<String>)> = vec![
        (Kind::Anonymous, None),
        (Kind::InvalidKey, Some("pk_not_a_key".to_owned())),
        (Kind::Level0, Some(level0)),
        (Kind::Verified, Some(verified)),
        (Kind::OtherOrgMember, Some(other_member)),
        (Kind::OtherOrgAdmin, Some(other_admin)),
        (Kind::VictimOrgMember, Some(victim_member)),
        (Kind::Admin100, Some(admin)),
    ];

    let body = json!({
        "domain": v.domain,
        "id": v.admin_id,
        "user_id": v.admin_id,
        "deck_id": v.deck_id,
        "email": victim_member_email,
    });
    let mut failures = Vec::new();
    let mut calls = 0;
    for (method, path, need) in spec_needs() {
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        for (kind, key) in callers.iter_mut() {
            let denied = kind.denied(need);
            // Allowed callers are only asked to read: their writes may be legitimate
            // (deleting their own account, say) and would change the fixtures.
            if !denied && (m != Method::GET || *kind == Kind::VictimOrgMember) {
                continue;
            }
            calls += 1;
            let r = s
                .request(
                    m.clone(),
                    &url(&path, &v),
                    key.as_deref(),
                    Some(body.clone()),
                )
                .await;
            if denied && r.status.is_success() {
                failures.push(format!(
                    "{method} {path}: {kind:?} got {} {}",
                    r.status, r.body
                ));
            }
            if !kind.insider() && r.body.to_string().contains(&v.marker) {
                failures.push(format!(
                    "{method} {path}: {kind:?} saw the victim's data: {}",
                    r.body
                ));
            }
            if *kind == Kind::Admin100 && !crate::common::guest_session_route(&path) {
                assert_ne!(r.status.as_u16(), 401, "{method} {path}: {}", r.body);
            }
            // regenerate-key answers a new key for the caller (only if a bug let it in).
            if let Some(k) = r.body.get("key").and_then(Value::as_str) {
                if r.status.is_success() {
                    *key = Some(k.to_owned());
                }
            }
        }
    }
    assert!(calls > 800, "the matrix made only {calls} calls");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
