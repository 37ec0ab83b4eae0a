//! Posts end to end: markdown to editor nodes, slugs and src unique, the privacy rule
//! (published, owner, team previewers on granted partner domains, never personal
//! drafts), threads and replies, organization posts, reception, admin stats.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

async fn create(s: &Server, key: &str, body: Value) -> Value {
    let r = s.post("/api/posts/create", Some(key), body).await;
    r.assert_ok();
    r.body["data"].clone()
}

fn unique(tag: &str) -> String {
    format!("{tag}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

#[tokio::test]
async fn markdown_becomes_editor_nodes_and_slugs_publish_posts() {
    let s = Server::start().await;
    let author = s.verified_user(&email("author")).await;
    let other = s.verified_user(&email("other")).await;

    // Created private, with empty editor content.
    let plain = create(
        &s,
        &author,
        json!({"type": "GENERAL", "fields": {"title": "Hi"}}),
    )
    .await;
    assert_eq!(
        plain["data"]["editorContent"],
        json!({"type": "doc", "content": []})
    );
    assert_eq!(plain["published"], false);

    // markdown wins over fields.body and becomes TipTap nodes.
    let md = "# Launch\n\nWe **ship** [today](https://example.com).\n\n- one\n- two\n";
    let post = create(
        &s,
        &author,
        json!({"type": "TEAM_POST", "fields": {"title": "Launch", "body": "ignored"}, "markdown": md}),
    )
    .await;
    let id = post["id"].as_str().unwrap().to_owned();
    assert_eq!(post["data"]["body"], md);
    let doc = &post["data"]["editorContent"];
    assert_eq!(doc["type"], "doc");
    assert_eq!(doc["content"][0]["type"], "heading");
    assert_eq!(doc["content"][0]["attrs"]["level"], 1);
    assert_eq!(doc["content"][1]["content"][1]["marks"][0]["type"], "bold");
    assert_eq!(doc["content"][2]["type"], "bulletList");

    // Private: anonymous and other readers get a 404; the author reads it, not cached.
    s.get(&format!("/api/posts/{id}"), None)
        .await
        .assert_error(404);
    s.get(&format!("/api/posts/{id}"), Some(&other))
        .await
        .assert_error(404);
    let r = s.get(&format!("/api/posts/{id}"), Some(&author)).await;
    r.assert_ok();
    assert_eq!(
        r.header("cache-control").as_deref(),
        Some("private, no-store")
    );

    // Others may not change it (404: they cannot see it).
    s.post(
        "/api/posts/update",
        Some(&other),
        json!({"id": id, "updates": {"data": {"public": true}}}),
    )
    .await
    .assert_error(404);

    // Publish with a slug; the data merge is deep.
    let slug = unique("launch");
    let r = s
        .post(
            "/api/posts/update",
            Some(&author),
            json!({"id": id, "updates": {"slug": slug, "data": {"public": true, "meta": {"a": 1}}}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["published"], true);
    s.post(
        "/api/posts/update",
        Some(&author),
        json!({"id": id, "updates": {"data": {"meta": {"b": 2}}}}),
    )
    .await
    .assert_ok();
    let r = s.get(&format!("/api/posts/public/{slug}"), None).await;
    r.assert_ok();
    assert_eq!(r.body["data"]["data"]["meta"], json!({"a": 1, "b": 2}));
    assert_eq!(r.body["data"]["data"]["title"], "Launch");
    assert!(r.header("cache-control").is_none());
    // `public` must be literally true, and `private: true` wins.
    s.post(
        "/api/posts/update",
        Some(&author),
        json!({"id": id, "updates": {"data": {"private": true}}}),
    )
    .await
    .assert_ok();
    s.get(&format!("/api/posts/public/{slug}"), None)
        .await
        .assert_error(404);

    // A taken slug or src is a 409; markdown in an update replaces the editor content.
    let src = unique("src");
    create(&s, &other, json!({"type": "GENERAL", "src": src})).await;
    let r = s
        .post(
            "/api/posts/create",
            Some(&author),
            json!({"type": "GENERAL", "src": src}),
        )
        .await;
    r.assert_error(409);
    let r = s
        .post(
            "/api/posts/create",
            Some(&other),
            json!({"type": "GENERAL", "slug": slug}),
        )
        .await;
    r.assert_error(409);
    assert!(r.body["message"].as_str().unwrap().contains("slug"));
    let r = s
        .post(
            "/api/posts/update",
            Some(&author),
            json!({"id": id, "updates": {"markdown": "> quoted"}}),
        )
        .await;
    assert_eq!(
        r.body["data"]["data"]["editorContent"]["content"][0]["type"],
        "blockquote"
    );
    assert_eq!(r.body["data"]["data"]["body"], "> quoted");

    // Delete: the author only.
    s.post("/api/posts/delete", Some(&other), json!({"id": id}))
        .await
        .assert_error(404);
    s.post("/api/posts/delete", Some(&author), json!({"id": id}))
        .await
        .assert_ok();
    s.get(&format!("/api/posts/{id}"), Some(&author))
        .await
        .assert_error(404);
}

#[tokio::test]
async fn partner_domains_preview_team_posts_but_never_personal_drafts() {
    let s = Server::start_with(Options::default().env("PLINTH_ADMIN_DOMAINS", "team.test")).await;
    let admin_email = format!("{}@team.test", unique("lead"));
    let lead = s.verified_user(&admin_email).await;
    let author = s.verified_user(&email("writer")).await;
    let partner = s
        .verified_user(&format!("{}@partner.test", unique("p")))
        .await;

    let team = create(
        &s,
        &author,
        json!({"type": "TEAM_POST", "fields": {"title": "Draft", "teamPost": true}}),
    )
    .await;
    let personal = create(
        &s,
        &author,
        json!({"type": "TEAM_POST", "fields": {"title": "Mine"}}),
    )
    .await;
    let (team, personal) = (
        team["id"].as_str().unwrap(),
        personal["id"].as_str().unwrap(),
    );

    // The permanent admin reads both; the partner neither, until its domain is granted.
    for id in [team, personal] {
        s.get(&format!("/api/posts/{id}"), Some(&lead))
            .await
            .assert_ok();
        s.get(&format!("/api/posts/{id}"), Some(&partner))
            .await
            .assert_error(404);
    }
    s.post(
        "/api/public-access/add-domain",
        Some(&lead),
        json!({"domain": "partner.test", "source": "team.test"}),
    )
    .await
    .assert_ok();
    let r = s.get(&format!("/api/posts/{team}"), Some(&partner)).await;
    r.assert_ok();
    assert_eq!(
        r.header("cache-control").as_deref(),
        Some("private, no-store")
    );
    s.get(&format!("/api/posts/{personal}"), Some(&partner))
        .await
        .assert_error(404);
    // The table is read on every request: removing the grant takes effect at once.
    s.post(
        "/api/public-access/remove-domain",
        Some(&lead),
        json!({"domain": "partner.test", "source": "team.test"}),
    )
    .await
    .assert_ok();
    s.get(&format!("/api/posts/{team}"), Some(&partner))
        .await
        .assert_error(404);
    // Marking a post teamPost only merges the flag; it does not publish.
    let r = s
        .post(
            "/api/posts/update",
            Some(&author),
            json!({"id": personal, "updates": {"data": {"teamPost": true}}}),
        )
        .await;
    assert_eq!(r.body["data"]["data"]["title"], "Mine");
    assert_eq!(r.body["data"]["published"], false);
    s.get(&format!("/api/posts/{personal}"), None)
        .await
        .assert_error(404);

    // Lists: published-only types show published posts only (the author's two drafts
    // are left out; a published one is in).
    let live = create(
        &s,
        &author,
        json!({"type": "TEAM_POST", "fields": {"title": "Live", "public": true}}),
    )
    .await;
    let r = s
        .post(
            "/api/posts",
            None,
            json!({"type": "TEAM_POST", "user_id": live["user_id"]}),
        )
        .await;
    r.assert_ok();
    let ids: Vec<&str> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [live["id"].as_str().unwrap()]);
}

#[tokio::test]
async fn threads_replies_organization_posts_reception_and_stats() {
    let s = Server::start().await;
    let alice = s.verified_user(&email("alice")).await;
    let bob = s.verified_user(&email("bob")).await;

    // GENERAL posts are listed even unpublished (the spec), private ones never.
    let kind = unique("KIND").to_uppercase();
    create(&s, &alice, json!({"type": kind, "fields": {"title": "a"}})).await;
    create(
        &s,
        &alice,
        json!({"type": kind, "fields": {"private": true}}),
    )
    .await;
    let r = s.post("/api/posts", None, json!({"type": kind})).await;
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["data"][0]["data"]["title"], "a");

    // A thread, a published reply, a draft reply.
    let thread = create(
        &s,
        &alice,
        json!({"type": "THREAD", "fields": {"title": "Q?", "public": true}}),
    )
    .await;
    let tid = thread["id"].as_str().unwrap();
    create(
        &s,
        &bob,
        json!({"type": "REPLY", "thread_id": tid, "fields": {"body": "A", "public": true}}),
    )
    .await;
    create(
        &s,
        &bob,
        json!({"type": "REPLY", "thread_id": tid, "fields": {"body": "draft"}}),
    )
    .await;
    s.post(
        "/api/posts/create",
        Some(&bob),
        json!({"type": "REPLY", "thread_id": "no-such-thread"}),
    )
    .await
    .assert_error(404);
    let r = s.post("/api/posts/all-threads", None, json!({})).await;
    r.assert_ok();
    let listed = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == tid)
        .unwrap()
        .clone();
    assert_eq!(listed["reply_count"], 1);
    let r = s
        .post("/api/posts/all-thread-replies", None, json!({"id": tid}))
        .await;
    assert_eq!(r.body["total"], 1);
    let r = s
        .post(
            "/api/posts/all-thread-replies",
            Some(&bob),
            json!({"id": tid}),
        )
        .await;
    assert_eq!(r.body["total"], 2, "the author also sees their draft");

    // Organization posts: published ones only.
    let domain = format!("{}.example.org", unique("org"));
    let r = s
        .post(
            "/api/organizations/create",
            Some(&alice),
            json!({"domain": domain}),
        )
        .await;
    let org_id = r.body["data"]["id"].as_str().unwrap().to_owned();
    create(
        &s,
        &alice,
        json!({"type": "GENERAL", "domain": domain, "fields": {"public": true, "title": "news"}}),
    )
    .await;
    create(
        &s,
        &alice,
        json!({"type": "GENERAL", "domain": domain, "fields": {"title": "draft"}}),
    )
    .await;
    s.post(
        "/api/posts/create",
        Some(&bob),
        json!({"type": "GENERAL", "domain": domain}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            &format!("/api/posts/public/organizations/{org_id}"),
            None,
            json!({"organization_id": org_id}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["data"][0]["data"]["title"], "news");

    // Reception: visits per day, referrers from X-Referrer, backlinks.
    let tracked = create(
        &s,
        &alice,
        json!({"type": "GENERAL", "fields": {"public": true, "reception_tracking": true}}),
    )
    .await;
    let pid = tracked["id"].as_str().unwrap();
    for referrer in [
        Some("https://news.example.com/a"),
        Some("https://news.example.com/b"),
        None,
    ] {
        let mut req = s.raw(reqwest::Method::GET, &format!("/api/posts/{pid}"));
        if let Some(r) = referrer {
            req = req.header("x-referrer", r);
        }
        Server::read(req.send().await.unwrap()).await.assert_ok();
    }
    let mut reception = Value::Null;
    for _ in 0..50 {
        let r = s
            .get(&format!("/api/posts/reception/{pid}"), Some(&alice))
            .await;
        r.assert_ok();
        reception = r.body["data"].clone();
        let visits: i64 = reception["visits"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_i64().unwrap())
            .sum();
        if visits == 3 && reception["backlinks"].as_object().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(reception["post_id"], json!(pid));
    let day = reception["visits"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert!(day.ends_with("T00:00:00Z"), "{day}");
    assert_eq!(reception["referrers"]["news.example.com"]["visits"], 2);
    assert_eq!(
        reception["backlinks"]["https://news.example.com/a"]["domain"],
        "news.example.com"
    );
    s.get(&format!("/api/posts/reception/{pid}"), Some(&bob))
        .await
        .assert_error(403);

    // Platform-wide stats for administrators.
    let admin = s.admin(&email("root")).await;
    s.post("/api/posts/admin-stats", Some(&alice), json!({}))
        .await
        .assert_error(403);
    let r = s
        .post(
            "/api/posts/admin-stats",
            Some(&admin),
            json!({"type": "THREAD"}),
        )
        .await;
    r.assert_ok();
    assert!(r.body["data"]["total"].as_i64().unwrap() >= 1);
    let r = s
        .post("/api/posts/admin-stats", Some(&admin), json!({}))
        .await;
    assert!(r.body["by_type"]["REPLY"].as_i64().unwrap() >= 2);
}

/// Creates arriving together are written in one transaction on SQLite (group commit):
/// a taken slug fails alone, and every other create of the batch is kept.
#[tokio::test]
async fn concurrent_creates_keep_slugs_unique_and_lose_nothing() {
    let s = Server::start().await;
    let author = s.verified_user(&email("burst")).await;
    let slug = unique("same");
    let results = futures::future::join_all((0..24).map(|i| {
        let body = if i % 2 == 0 {
            json!({"type": "GENERAL", "slug": slug, "fields": {"n": i}})
        } else {
            json!({"type": "BURST", "fields": {"n": i}})
        };
        s.post("/api/posts/create", Some(&author), body)
    }))
    .await;
    let ok = results.iter().filter(|r| r.status.is_success()).count();
    let conflicts = results.iter().filter(|r| r.status.as_u16() == 409).count();
    assert_eq!(
        (ok, conflicts),
        (13, 11),
        "one slug winner and every plain post"
    );
    let r = s
        .post("/api/posts", None, json!({"type": "BURST", "user_id": results.iter().find(|r| r.status.is_success()).unwrap().body["data"]["user_id"]}))
        .await;
    assert_eq!(r.body["total"], 12);
}
