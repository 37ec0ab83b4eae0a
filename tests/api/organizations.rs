//! Organizations, membership, the waitlist and team-preview public access.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

fn domain(tag: &str) -> String {
    format!(
        "{tag}-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

async fn create_org(s: &Server, key: &str, d: &str) -> Value {
    let r = s
        .post(
            "/api/organizations/create",
            Some(key),
            json!({"domain": d, "name": "Team"}),
        )
        .await;
    r.assert_ok();
    r.body["data"].clone()
}

async fn user_id(s: &Server, key: &str) -> String {
    s.get("/api/users/viewer", Some(key)).await.body["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn create_membership_roles_and_the_last_admin_rule() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("owner")).await;
    let d = domain("acme");
    let org = create_org(&s, &owner, &d.to_uppercase()).await;
    assert_eq!(org["domain"], json!(d));
    assert_eq!(org["role"], json!("admin"));
    let org_id = org["id"].as_str().unwrap().to_owned();
    s.post(
        "/api/organizations/create",
        Some(&owner),
        json!({"domain": d}),
    )
    .await
    .assert_error(409);
    s.post(
        "/api/organizations/create",
        Some(&owner),
        json!({"domain": "not a domain"}),
    )
    .await
    .assert_error(400);

    // Viewer organizations and membership list it with the role.
    let r = s.get("/api/users/viewer/organizations", Some(&owner)).await;
    assert_eq!(r.body["data"][0]["role"], json!("admin"));
    let r = s
        .post("/api/organizations/membership", Some(&owner), json!({}))
        .await;
    assert_eq!(r.body["data"][0]["id"], json!(org_id));
    let r = s.get("/api/organizations/membership", Some(&owner)).await;
    r.assert_ok();

    // Add a member by email; a stranger is refused; members list each other.
    let member_email = email("member");
    let member = s.verified_user(&member_email).await;
    let member_id = user_id(&s, &member).await;
    s.post(
        "/api/organizations/users",
        Some(&member),
        json!({"domain": d}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/organizations/users/add",
            Some(&owner),
            json!({"domain": d, "email": member_email}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["already_member"], json!(false));
    let r = s
        .post(
            "/api/organizations/users/add",
            Some(&owner),
            json!({"domain": d, "email": member_email}),
        )
        .await;
    assert_eq!(r.body["already_member"], json!(true));
    s.post(
        "/api/organizations/users/add",
        Some(&owner),
        json!({"domain": d, "email": email("nobody")}),
    )
    .await
    .assert_error(404);
    let r = s
        .post(
            "/api/organizations/users",
            Some(&member),
            json!({"domain": d}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2);

    // Members cannot administer.
    s.post(
        "/api/organizations/users/add",
        Some(&member),
        json!({"domain": d, "email": member_email}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/organizations/update",
        Some(&member),
        json!({"domain": d, "data": {"x": 1}}),
    )
    .await
    .assert_error(403);
    let owner_id = user_id(&s, &owner).await;
    s.post(
        "/api/organizations/users/remove",
        Some(&member),
        json!({"organizationId": org_id, "userId": owner_id}),
    )
    .await
    .assert_error(403);

    // The last admin cannot leave or be demoted.
    s.post(
        "/api/organizations/users/demote",
        Some(&owner),
        json!({"organizationId": org_id, "userId": owner_id}),
    )
    .await
    .assert_error(409);
    s.post(
        "/api/organizations/users/remove",
        Some(&owner),
        json!({"organizationId": org_id, "userId": owner_id}),
    )
    .await
    .assert_error(409);
    // Promote the member; then the owner may step down.
    s.post(
        "/api/organizations/users/promote",
        Some(&owner),
        json!({"organizationId": org_id, "userId": member_id}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/organizations/users/demote",
        Some(&member),
        json!({"organizationId": org_id, "userId": owner_id}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/organizations/users",
            Some(&owner),
            json!({"domain": d}),
        )
        .await;
    let roles: Vec<_> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["user_id"].clone(), m["role"].clone()))
        .collect();
    assert!(roles.contains(&(json!(owner_id), json!("member"))));
    assert!(roles.contains(&(json!(member_id), json!("admin"))));
    // A member leaves by removing themself.
    s.post(
        "/api/organizations/users/remove",
        Some(&owner),
        json!({"organizationId": org_id, "userId": owner_id}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/organizations/users",
        Some(&owner),
        json!({"domain": d}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/organizations/users/promote",
        Some(&member),
        json!({"organizationId": org_id, "userId": owner_id}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/organizations/users",
        Some(&member),
        json!({"domain": domain("none")}),
    )
    .await
    .assert_error(404);
    s.post("/api/organizations/users", Some(&member), json!({}))
        .await
        .assert_error(400);
}

#[tokio::test]
async fn settings_visibility_templates_and_deletion() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("owner")).await;
    let other = s.verified_user(&email("other")).await;
    let d = domain("vis");
    let org = create_org(&s, &owner, &d).await;
    let id = org["id"].as_str().unwrap().to_owned();

    // Private: invisible to non-members.
    s.post(
        "/api/organizations/get-by-id",
        Some(&other),
        json!({"id": id}),
    )
    .await
    .assert_error(404);
    // Listed (the spec: "lists all organizations"), but its data stays with members.
    let r = s.get("/api/organizations", Some(&other)).await;
    let listed = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == json!(id))
        .unwrap()
        .clone();
    assert_eq!(listed["domain"], json!(d));
    assert_eq!(listed["is_public"], json!(false));
    assert!(listed.get("data").is_none() && listed.get("role").is_none());
    let r = s.get("/api/organizations", Some(&owner)).await;
    let own = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == json!(id))
        .unwrap()
        .clone();
    assert!(own["data"].is_object());
    assert_eq!(own["role"], json!("admin"));
    let r = s
        .post(
            "/api/organizations/toggle-public-access",
            Some(&owner),
            json!({"organizationId": id}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["is_public"], json!(true));
    let r = s
        .post(
            "/api/organizations/get-by-id",
            Some(&other),
            json!({"id": id}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["role"], json!(null));
    let r = s.get("/api/organizations", Some(&other)).await;
    assert!(r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["id"] == json!(id)));

    // Update merges data; typed keys are checked.
    // A template's sender must be an address of the organization's own domain.
    let tpl =
        json!({"from": format!("Vis <hi@{d}>"), "subject": "Join Vis", "text": "Welcome aboard:"});
    let r = s
        .post(
            "/api/organizations/update",
            Some(&owner),
            json!({"domain": d, "data": {"email": tpl, "inventory_private": true}}),
        )
        .await;
    r.assert_ok();
    let r = s
        .post(
            "/api/organizations/update",
            Some(&owner),
            json!({"domain": d, "data": {"theme": "dark"}}),
        )
        .await;
    assert_eq!(r.body["data"]["data"]["email"], tpl);
    assert_eq!(r.body["data"]["data"]["theme"], json!("dark"));
    assert_eq!(r.body["data"]["data"]["inventory_private"], json!(true));
    s.post(
        "/api/organizations/update",
        Some(&owner),
        json!({"domain": d, "data": {"email": "x"}}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/organizations/update",
        Some(&owner),
        json!({"domain": d, "data": {"waitlist_support": "yes"}}),
    )
    .await
    .assert_error(400);

    // The organization's template dresses the mail of accounts that sign up with its
    // domain as source, from the first (spec, Notes 7; issue 42).
    let addr = email("joiner");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": d}),
        )
        .await;
    r.assert_ok();
    let mail = s.wait_for_email(&addr, "/verify?code=").await;
    assert!(mail.contains("Join Vis"), "{mail}");
    s.post(
        "/api/users/verify",
        None,
        json!({"code": crate::common::code_in(&mail)}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/users/authenticate-interstitial",
        None,
        json!({"email": addr, "source": d}),
    )
    .await
    .assert_ok();
    let mail = s.wait_for_email(&addr, "/sign-in?code=").await;
    assert!(mail.contains(&format!("From: Vis <hi@{d}>")) && mail.contains("Welcome aboard:"));
    assert!(mail.contains("Join Vis"));

    // Waitlist toggle: explicit sets, omitted flips.
    let r = s
        .post(
            "/api/organizations/waitlist-toggle",
            Some(&owner),
            json!({"domain": d}),
        )
        .await;
    assert_eq!(r.body["waitlist_support"], json!(true));
    let r = s
        .post(
            "/api/organizations/waitlist-toggle",
            Some(&owner),
            json!({"domain": d}),
        )
        .await;
    assert_eq!(r.body["waitlist_support"], json!(false));
    let r = s
        .post(
            "/api/organizations/waitlist-toggle",
            Some(&owner),
            json!({"domain": d, "waitlist_support": true}),
        )
        .await;
    assert_eq!(r.body["waitlist_support"], json!(true));
    let r = s
        .post(
            "/api/organizations/waitlist-toggle",
            Some(&owner),
            json!({"domain": d, "waitlist_support": true}),
        )
        .await;
    assert_eq!(r.body["waitlist_support"], json!(true));

    // Delete: gone with its data.
    s.post(
        "/api/waitlist/add",
        None,
        json!({"domain": d, "email": email("w")}),
    )
    .await
    .assert_ok();
    s.post("/api/organizations/delete", Some(&other), json!({"id": id}))
        .await
        .assert_error(403);
    s.post("/api/organizations/delete", Some(&owner), json!({"id": id}))
        .await
        .assert_ok();
    s.post(
        "/api/organizations/get-by-id",
        Some(&owner),
        json!({"id": id}),
    )
    .await
    .assert_error(404);
    let r = s.get("/api/users/viewer/organizations", Some(&owner)).await;
    assert_eq!(r.body["data"], json!([]));
    s.post(
        "/api/waitlist/add",
        None,
        json!({"domain": d, "email": email("w")}),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn automatic_membership_by_email_domain() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("owner")).await;
    let d = domain("auto");
    create_org(&s, &owner, &d).await;
    let staff = s.verified_user(&format!("staff@{d}")).await;
    let r = s
        .post(
            "/api/organizations/membership/automatic",
            Some(&staff),
            json!({}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["joined"], json!(true));
    assert_eq!(r.body["data"]["role"], json!("member"));
    let r = s
        .post(
            "/api/organizations/membership/automatic",
            Some(&staff),
            json!({}),
        )
        .await;
    assert_eq!(r.body["joined"], json!(false));
    let outsider = s.verified_user(&email("out")).await;
    s.post(
        "/api/organizations/membership/automatic",
        Some(&outsider),
        json!({}),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn waitlist_follows_the_spec_table() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("owner")).await;
    let d = domain("wl");
    create_org(&s, &owner, &d).await;
    let a = email("a");
    // Order of checks: malformed email, unknown organization, waitlist off.
    s.post(
        "/api/waitlist/add",
        None,
        json!({"domain": d, "email": "bad"}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/waitlist/add",
        None,
        json!({"domain": domain("x"), "email": a}),
    )
    .await
    .assert_error(404);
    s.post("/api/waitlist/add", None, json!({"domain": d, "email": a}))
        .await
        .assert_error(403);
    s.post(
        "/api/organizations/waitlist-toggle",
        Some(&owner),
        json!({"domain": d, "waitlist_support": true}),
    )
    .await
    .assert_ok();
    let r = s
        .post("/api/waitlist/add", None, json!({"domain": d, "email": a}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["success"], json!(true));
    let dup = s
        .post(
            "/api/waitlist/add",
            None,
            json!({"domain": d, "email": a.to_uppercase()}),
        )
        .await;
    dup.assert_ok();
    let b = email("b");
    s.post("/api/waitlist/add", None, json!({"domain": d, "email": b}))
        .await
        .assert_ok();

    // Listing: newest first, limit/offset, access rule.
    let r = s
        .get(
            &format!("/api/waitlist/list-by-domain?domain={d}"),
            Some(&owner),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["limit"], json!(50));
    assert_eq!(r.body["offset"], json!(0));
    let emails: Vec<_> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["email"].clone())
        .collect();
    assert_eq!(emails, vec![json!(b), json!(a)]);
    let r = s
        .get(
            &format!("/api/waitlist/list-by-domain?domain={d}&limit=1&offset=1"),
            Some(&owner),
        )
        .await;
    assert_eq!(r.body["data"][0]["email"], json!(a));
    let r = s
        .get(
            &format!("/api/waitlist/list-by-domain?domain={d}&limit=500"),
            Some(&owner),
        )
        .await;
    assert_eq!(r.body["limit"], json!(200));
    let stranger = s.verified_user(&email("stranger")).await;
    s.get(
        &format!("/api/waitlist/list-by-domain?domain={d}"),
        Some(&stranger),
    )
    .await
    .assert_error(403);
    // A verified account on the organization's email domain may manage it.
    let insider = s.verified_user(&format!("ops@{d}")).await;
    s.get(
        &format!("/api/waitlist/list-by-domain?domain={d}"),
        Some(&insider),
    )
    .await
    .assert_ok();

    // Status before acceptance: the caller's own entry only.
    let a_key = s.signup(&a).await.0;
    let r = s
        .post("/api/waitlist/status", Some(&a_key), json!({"domain": d}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["accepted"], json!(false));
    assert_eq!(r.body["data"]["status"], json!("pending"));
    let r = s
        .post(
            "/api/waitlist/status",
            Some(&a_key),
            json!({"domain": d, "email": b}),
        )
        .await;
    assert_eq!(
        r.body["data"]["email"],
        json!(a),
        "a plain caller cannot look at others"
    );
    let r = s
        .post(
            "/api/waitlist/status",
            Some(&owner),
            json!({"domain": d, "email": b}),
        )
        .await;
    assert_eq!(r.body["data"]["email"], json!(b));
    let r = s
        .post(
            "/api/waitlist/status",
            Some(&stranger),
            json!({"domain": d}),
        )
        .await;
    assert_eq!(r.body["data"], json!(null));
    assert_eq!(r.body["accepted"], json!(false));

    // Accept: creates or reuses a VERIFIED account; repeat says so.
    s.post(
        "/api/waitlist/accept-by-email",
        Some(&stranger),
        json!({"domain": d, "email": a}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/waitlist/accept-by-email",
            Some(&owner),
            json!({"domain": d, "email": a}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], json!("accepted"));
    assert!(r.body["exemptions"].is_array());
    assert!(r.body.get("already_accepted").is_none());
    let r = s
        .post(
            "/api/waitlist/accept-by-email",
            Some(&owner),
            json!({"domain": d, "email": a}),
        )
        .await;
    assert_eq!(r.body["already_accepted"], json!(true));
    // A manager's accept never verifies an existing account (finding C2).
    let v = s.get("/api/users/viewer", Some(&a_key)).await;
    assert_eq!(v.body["user"]["verified"], json!(false));
    assert_eq!(v.body["user"]["level"], json!(0));
    let r = s
        .post("/api/waitlist/status", Some(&a_key), json!({"domain": d}))
        .await;
    assert_eq!(r.body["accepted"], json!(true));
    s.post(
        "/api/waitlist/accept-by-email",
        Some(&owner),
        json!({"domain": d, "email": email("none")}),
    )
    .await
    .assert_error(404);

    // Revoke: back to pending, account kept; repeat says so.
    let r = s
        .post(
            "/api/waitlist/revoke-by-email",
            Some(&owner),
            json!({"domain": d, "email": a}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], json!("pending"));
    let r = s
        .post(
            "/api/waitlist/revoke-by-email",
            Some(&owner),
            json!({"domain": d, "email": a}),
        )
        .await;
    assert_eq!(r.body["already_pending"], json!(true));
    s.get("/api/users/viewer", Some(&a_key)).await.assert_ok();

    // Accept-all: both pending entries; b gets a new VERIFIED account.
    s.post(
        "/api/waitlist/accept-all",
        Some(&insider),
        json!({"domain": d}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/waitlist/accept-all",
            Some(&owner),
            json!({"domain": d}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["accepted"], json!(2));
    assert_eq!(r.body["total"], json!(2));
    let r = s
        .post(
            "/api/waitlist/accept-all",
            Some(&owner),
            json!({"domain": d}),
        )
        .await;
    assert_eq!(r.body["accepted"], json!(0));
    let admin = s.admin(&email("admin")).await;
    let r = s
        .post(
            "/api/users/list-by-source",
            Some(&admin),
            json!({"source": d}),
        )
        .await;
    let created: Vec<_> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["email"] == json!(b))
        .collect();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["verified"], json!(true));
}

#[tokio::test]
async fn team_preview_public_access() {
    let s = Server::start_with(
        Options::default().env("PLINTH_ADMIN_DOMAINS", "hq.example,Team.Example"),
    )
    .await;
    let boss = s
        .verified_user(&email("x").replace("example.com", "hq.example"))
        .await;
    let plain = s.verified_user(&email("plain")).await;
    let unverified = s
        .signup(&email("u").replace("example.com", "hq.example"))
        .await
        .0;

    s.post("/api/public-access/list", Some(&plain), json!({}))
        .await
        .assert_error(403);
    s.post("/api/public-access/list", Some(&unverified), json!({}))
        .await
        .assert_error(403);
    let r = s
        .post("/api/public-access/list", Some(&boss), json!({}))
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["_usage"]["rate_limit"]["interval_ms"],
        json!(0),
        "category unlimited"
    );
    assert_eq!(r.body["_usage"]["tokens"]["cost"], json!(0));
    let doms: Vec<_> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["domain"].clone())
        .collect();
    assert!(doms.contains(&json!("hq.example")) && doms.contains(&json!("team.example")));

    // Writes accept only the caller's own domain as source.
    s.post(
        "/api/public-access/add-domain",
        Some(&boss),
        json!({"domain": "partner.example", "source": "team.example"}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/public-access/add-domain",
            Some(&boss),
            json!({"domain": "Partner.Example", "source": "HQ.example"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["domain"], json!("partner.example"));
    let r = s
        .post("/api/public-access/list", Some(&boss), json!({}))
        .await;
    assert!(r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["domain"] == json!("partner.example")));

    // A partner-domain account is accepted; a subdomain is not.
    let partner = s
        .verified_user(&email("p").replace("example.com", "partner.example"))
        .await;
    let r = s
        .post(
            "/api/public-access/status",
            Some(&partner),
            json!({"email": "x@hq.example"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["accepted"], json!(true));
    assert_eq!(r.body["canPreviewTeamPosts"], json!(true));
    let sub = s
        .verified_user(&email("s").replace("example.com", "sub.partner.example"))
        .await;
    let r = s
        .post("/api/public-access/status", Some(&sub), json!({}))
        .await;
    assert_eq!(r.body["accepted"], json!(false));
    let r = s
        .post(
            "/api/public-access/status",
            Some(&plain),
            json!({"email": "boss@hq.example"}),
        )
        .await;
    assert_eq!(
        r.body["accepted"],
        json!(false),
        "a body email cannot change the subject"
    );

    // Permanent domains cannot be removed; others can, once.
    s.post(
        "/api/public-access/remove-domain",
        Some(&boss),
        json!({"domain": "team.example", "source": "hq.example"}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/public-access/remove-domain",
        Some(&boss),
        json!({"domain": "partner.example", "source": "hq.example"}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/public-access/remove-domain",
        Some(&boss),
        json!({"domain": "partner.example", "source": "hq.example"}),
    )
    .await
    .assert_error(404);
    let r = s
        .post("/api/public-access/status", Some(&partner), json!({}))
        .await;
    assert_eq!(r.body["accepted"], json!(false));
}
