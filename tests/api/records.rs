//! Documents, calendar events and likes, end to end: organization scoping, merges,
//! visibility of events, overlap checks, one like per user and entity.

use serde_json::{json, Value};

use crate::common::{email, Server};

/// An organization with an admin, a second member and an outsider (all verified).
struct Org {
    domain: String,
    admin: String,
    member: String,
    outsider: String,
}

async fn org(s: &Server) -> Org {
    let domain = format!(
        "{}.example.org",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let admin = s.verified_user(&email("admin")).await;
    s.post(
        "/api/organizations/create",
        Some(&admin),
        json!({"domain": domain, "name": "Records"}),
    )
    .await
    .assert_ok();
    let member_email = email("member");
    let member = s.verified_user(&member_email).await;
    s.post(
        "/api/organizations/users/add",
        Some(&admin),
        json!({"domain": domain, "email": member_email}),
    )
    .await
    .assert_ok();
    let outsider = s.verified_user(&email("outsider")).await;
    Org {
        domain,
        admin,
        member,
        outsider,
    }
}

fn ids(v: &Value) -> Vec<&str> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn documents_are_scoped_to_their_organization_and_merge_data() {
    let s = Server::start().await;
    let o = org(&s).await;
    let other = org(&s).await;

    let r = s
        .post(
            "/api/documents/create",
            Some(&o.member),
            json!({"domain": o.domain, "type": "note", "data": {"title": "Plan", "body": "x", "tags": ["a"]}}),
        )
        .await;
    r.assert_ok();
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["data"]["type"], "note");
    assert_eq!(r.body["data"]["domain"], json!(o.domain));
    s.post(
        "/api/documents/create",
        Some(&o.member),
        json!({"domain": o.domain, "type": "memo"}),
    )
    .await
    .assert_ok();
    // Outsiders cannot create or list; a missing type is a 400.
    s.post(
        "/api/documents/create",
        Some(&o.outsider),
        json!({"domain": o.domain, "type": "note"}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/documents/create",
        Some(&o.member),
        json!({"domain": o.domain}),
    )
    .await
    .assert_error(400);

    // The list: POST with a body, GET with a query string, filtered by type.
    let r = s
        .post(
            "/api/documents",
            Some(&o.admin),
            json!({"domain": o.domain}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["total"], 2);
    let r = s
        .post(
            "/api/documents",
            Some(&o.admin),
            json!({"domain": o.domain, "type": "note"}),
        )
        .await;
    assert_eq!(ids(&r.body), [id.as_str()]);
    let r = s
        .get(
            &format!("/api/documents?domain={}&type=note&limit=1", o.domain),
            Some(&o.member),
        )
        .await;
    r.assert_ok();
    assert_eq!(ids(&r.body), [id.as_str()]);
    assert_eq!(r.body["limit"], 1);
    s.post(
        "/api/documents",
        Some(&o.outsider),
        json!({"domain": o.domain}),
    )
    .await
    .assert_error(403);

    // Update merges top-level keys; null removes one.
    let r = s
        .post(
            "/api/documents/update",
            Some(&o.member),
            json!({"id": id, "domain": o.domain, "data": {"body": "y", "tags": null, "extra": 1}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["data"]["data"],
        json!({"title": "Plan", "body": "y", "extra": 1})
    );
    // Through another organization (the caller administers it) the document is not found.
    s.post(
        "/api/documents/update",
        Some(&other.admin),
        json!({"id": id, "domain": other.domain, "data": {"x": 1}}),
    )
    .await
    .assert_error(404);

    // Anyone with the id reads it (Public).
    let r = s.get(&format!("/api/documents/{id}"), None).await;
    r.assert_ok();
    assert_eq!(r.body["data"]["data"]["body"], "y");
    s.get("/api/documents/no-such-id", None)
        .await
        .assert_error(404);

    // Delete: members of its organization only; others get a 404.
    s.post(
        "/api/documents/delete",
        Some(&o.outsider),
        json!({"id": id}),
    )
    .await
    .assert_error(404);
    let r = s
        .post("/api/documents/delete", Some(&o.member), json!({"id": id}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["deleted"], true);
    s.get(&format!("/api/documents/{id}"), None)
        .await
        .assert_error(404);
}

#[tokio::test]
async fn events_check_ranges_keep_five_keys_hide_unapproved_ones_and_find_overlaps() {
    let s = Server::start().await;
    let o = org(&s).await;
    let create = |body: Value| s.post("/api/events/create", Some(&o.member), body);

    // begins_at must come before ends_at, as RFC 3339.
    create(json!({"domain": o.domain, "begins_at": "2026-05-01T10:00:00Z", "ends_at": "2026-05-01T09:00:00Z"}))
        .await
        .assert_error(400);
    create(json!({"domain": o.domain, "begins_at": "soon", "ends_at": "2026-05-01T09:00:00Z"}))
        .await
        .assert_error(400);

    let r = create(json!({"domain": o.domain, "begins_at": "2026-05-01T09:00:00Z", "ends_at": "2026-05-01T10:00:00Z", "data": {"title": "Standup"}})).await;
    r.assert_ok();
    let private_id = r.body["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["data"]["status"], "pending");
    assert_eq!(r.body["data"]["visibility"], "private");
    let r = create(json!({"domain": o.domain, "begins_at": "2026-05-01T12:00:00+02:00", "ends_at": "2026-05-01T12:30:00+02:00", "status": "approved", "visibility": "public"})).await;
    r.assert_ok();
    let public_id = r.body["data"]["id"].as_str().unwrap().to_owned();
    // Offsets are normalized to UTC.
    assert_eq!(
        r.body["data"]["begins_at"].as_str().unwrap()[..19],
        *"2026-05-01T10:00:00"
    );

    // Anonymous callers and outsiders see only approved public events; members see all.
    let path = format!("/api/events?domain={}", o.domain);
    let list = async |key: Option<&str>| s.get(&path, key).await;
    let r = list(None).await;
    r.assert_ok();
    assert_eq!(ids(&r.body), [public_id.as_str()]);
    assert_eq!(
        ids(&list(Some(&o.outsider)).await.body),
        [public_id.as_str()]
    );
    assert_eq!(
        ids(&list(Some(&o.member)).await.body),
        [private_id.as_str(), public_id.as_str()]
    );
    s.get(&format!("/api/events/{private_id}"), Some(&o.outsider))
        .await
        .assert_error(404);
    s.get(&format!("/api/events/{public_id}"), Some(&o.outsider))
        .await
        .assert_ok();
    s.get(&format!("/api/events/{private_id}"), Some(&o.admin))
        .await
        .assert_ok();

    // Update: only begins_at, ends_at, status, visibility and data count; the rest is dropped.
    let r = s
        .post(
            "/api/events/update",
            Some(&o.member),
            json!({"id": private_id, "domain": o.domain, "updates": {
                "status": "approved", "visibility": "public", "data": {"room": "A"},
                "organization_id": "elsewhere", "id": "other", "created_by": "me"
            }}),
        )
        .await;
    r.assert_ok();
    let e = &r.body["data"];
    assert_eq!(e["id"], json!(private_id));
    assert_eq!(e["status"], "approved");
    assert_eq!(e["data"], json!({"title": "Standup", "room": "A"}));
    assert_eq!(e["domain"], json!(o.domain));
    assert_eq!(list(None).await.body["total"], 2);
    // An update that would end before it begins is refused and changes nothing.
    s.post(
        "/api/events/update",
        Some(&o.member),
        json!({"id": private_id, "domain": o.domain, "updates": {"ends_at": "2026-05-01T08:00:00Z"}}),
    )
    .await
    .assert_error(400);

    // Overlaps: [09:30, 10:15) meets both the 09:00–10:00 and the 10:00–10:30 event;
    // [10:30, 11:00) only touches the second.
    let conflicts = |b: &str, e: &str| {
        s.post(
            "/api/events/conflicts",
            Some(&o.member),
            json!({"domain": o.domain, "begins_at": b, "ends_at": e}),
        )
    };
    let r = conflicts("2026-05-01T09:30:00Z", "2026-05-01T10:15:00Z").await;
    r.assert_ok();
    assert_eq!(r.body["conflict"], true);
    assert_eq!(ids(&r.body), [private_id.as_str(), public_id.as_str()]);
    let r = conflicts("2026-05-01T10:30:00Z", "2026-05-01T11:00:00Z").await;
    assert_eq!(r.body["conflict"], false);
    assert_eq!(r.body["count"], 0);
    s.post(
        "/api/events/conflicts",
        Some(&o.outsider),
        json!({"domain": o.domain, "begins_at": "2026-05-01T09:30:00Z", "ends_at": "2026-05-01T10:15:00Z"}),
    )
    .await
    .assert_error(403);

    // Delete needs the event's organization.
    let r = s
        .post(
            "/api/events/delete",
            Some(&o.admin),
            json!({"id": public_id, "domain": o.domain}),
        )
        .await;
    r.assert_ok();
    s.get(&format!("/api/events/{public_id}"), Some(&o.admin))
        .await
        .assert_error(404);
}

#[tokio::test]
async fn one_like_per_user_and_entity_with_count_and_likers() {
    let s = Server::start().await;
    let alice = s.verified_user(&email("alice")).await;
    let bob = s.verified_user(&email("bob")).await;
    s.post(
        "/api/users/update-viewer-username",
        Some(&alice),
        json!({"username": format!("alice{}", &uuid::Uuid::new_v4().simple().to_string()[..6])}),
    )
    .await
    .assert_ok();
    let entity = uuid::Uuid::new_v4().to_string();

    let r = s
        .post(
            "/api/likes/create",
            Some(&alice),
            json!({"entity_id": entity}),
        )
        .await;
    r.assert_ok();
    let like = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/likes/create",
            Some(&alice),
            json!({"entity_id": entity}),
        )
        .await;
    r.assert_error(409);
    assert_eq!(r.body["id"], json!(like));
    s.post(
        "/api/likes/create",
        Some(&bob),
        json!({"entity_id": entity}),
    )
    .await
    .assert_ok();
    s.post("/api/likes/create", Some(&bob), json!({"entity_id": ""}))
        .await
        .assert_error(400);

    let r = s.get(&format!("/api/likes/{entity}"), None).await;
    r.assert_ok();
    assert_eq!(r.body["count"], 2);
    let users = r.body["users"].as_array().unwrap();
    assert_eq!(users.len(), 2);
    assert!(users.iter().all(|u| u.get("email").is_none()));
    assert!(users.iter().any(|u| u["username"]
        .as_str()
        .is_some_and(|n| n.starts_with("alice"))));
    // The viewer's likes list it.
    let r = s.get("/api/users/viewer/likes", Some(&alice)).await;
    assert!(ids(&r.body).contains(&like.as_str()));

    // Only the owner moves or removes a like; for others it does not exist.
    s.post(
        "/api/likes/update",
        Some(&bob),
        json!({"id": like, "entity_id": "elsewhere"}),
    )
    .await
    .assert_error(404);
    s.post("/api/likes/delete", Some(&bob), json!({"id": like}))
        .await
        .assert_error(404);
    let r = s
        .post(
            "/api/likes/update",
            Some(&alice),
            json!({"id": like, "entity_id": "elsewhere"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["entity_id"], "elsewhere");
    assert_eq!(
        s.get(&format!("/api/likes/{entity}"), None).await.body["count"],
        1
    );
    s.post("/api/likes/delete", Some(&alice), json!({"id": like}))
        .await
        .assert_ok();
    assert_eq!(s.get("/api/likes/elsewhere", None).await.body["count"], 0);
}
