//! Analytics: site access levels (viewer 10, admin 100, owner-only member changes that
//! platform admins do not bypass, 404 for strangers), soft delete, tracking with
//! normalized labels and derived visitors, the event list's cursor, and stats.

use serde_json::{json, Value};

use crate::common::{email, Resp, Server};

async fn site(s: &Server, key: &str, name: &str) -> String {
    let r = s
        .post(
            "/api/analytics/sites/create",
            Some(key),
            json!({"name": name}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["is_owner"], json!(true));
    r.body["data"]["id"].as_str().unwrap().to_owned()
}

fn user_id(r: &Resp) -> String {
    r.body["user"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn site_access_follows_the_levels() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("an-owner")).await;
    let viewer_email = email("an-viewer");
    let viewer = s.verified_user(&viewer_email).await;
    let admin_email = email("an-admin");
    let admin_member = s.verified_user(&admin_email).await;
    let stranger = s.verified_user(&email("an-stranger")).await;
    let platform = s.admin(&email("an-platform")).await;
    let (unverified, _) = s.signup(&email("an-unverified")).await;
    let viewer_id = user_id(&s.get("/api/users/viewer", Some(&viewer)).await);
    let admin_id = user_id(&s.get("/api/users/viewer", Some(&admin_member)).await);

    s.post(
        "/api/analytics/sites/create",
        Some(&unverified),
        json!({"name": "x"}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/analytics/sites/create",
        Some(&owner),
        json!({"name": "  "}),
    )
    .await
    .assert_error(400);
    let id = site(&s, &owner, "Docs").await;

    let add = |email: &str, level: i64| json!({"site_id": id, "email": email, "level": level});
    s.post(
        "/api/analytics/sites/members/add",
        Some(&owner),
        add(&viewer_email, 50),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/analytics/sites/members/add",
        Some(&owner),
        add("nobody@example.com", 10),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/analytics/sites/members/add",
        Some(&owner),
        add(&viewer_email, 10),
    )
    .await
    .assert_ok();
    s.post(
        "/api/analytics/sites/members/add",
        Some(&owner),
        add(&viewer_email, 10),
    )
    .await
    .assert_error(409);
    s.post(
        "/api/analytics/sites/members/add",
        Some(&owner),
        add(&admin_email, 100),
    )
    .await
    .assert_ok();
    // Owner-only: an admin member and a platform admin are refused; a stranger sees nothing.
    for key in [&admin_member, &platform] {
        s.post(
            "/api/analytics/sites/members/add",
            Some(key),
            add(&email("x"), 10),
        )
        .await
        .assert_error(403);
        s.post("/api/analytics/sites/delete", Some(key), json!({"id": id}))
            .await
            .assert_error(403);
    }
    s.post(
        "/api/analytics/sites/delete",
        Some(&stranger),
        json!({"id": id}),
    )
    .await
    .assert_error(404);

    // Reading: viewer and up; members list and rename: admin and up.
    let get = format!("/api/analytics/sites/{id}");
    let members = format!("/api/analytics/sites/members?site_id={id}");
    let r = s.get(&get, Some(&viewer)).await;
    r.assert_ok();
    assert_eq!(
        (
            r.body["data"]["access_level"].clone(),
            r.body["data"]["is_owner"].clone()
        ),
        (json!(10), json!(false))
    );
    s.get(&get, Some(&stranger)).await.assert_error(404);
    s.get(&get, Some(&platform)).await.assert_ok();
    s.get(&members, Some(&viewer)).await.assert_error(403);
    s.get(&members, Some(&stranger)).await.assert_error(404);
    let r = s.get(&members, Some(&admin_member)).await;
    r.assert_ok();
    let levels: Vec<(Value, Value)> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["email"].clone(), m["level"].clone()))
        .collect();
    assert_eq!(
        levels,
        vec![
            (json!(viewer_email), json!(10)),
            (json!(admin_email), json!(100))
        ]
    );
    s.post(
        "/api/analytics/sites/update",
        Some(&viewer),
        json!({"id": id, "name": "V"}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/analytics/sites/update",
            Some(&admin_member),
            json!({"id": id, "name": "Renamed"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["name"], json!("Renamed"));

    // The lists: owned and shared, with the caller's standing.
    let r = s.get("/api/analytics/sites", Some(&viewer)).await;
    assert_eq!(r.body["data"][0]["id"], json!(id));
    assert_eq!(r.body["data"][0]["access_level"], json!(10));
    assert_eq!(
        s.get("/api/analytics/sites", Some(&stranger)).await.body["count"],
        json!(0)
    );

    // Member changes by the owner; a removed member loses access.
    let change = |uid: &str, level: Value| json!({"site_id": id, "user_id": uid, "level": level});
    s.post(
        "/api/analytics/sites/members/update",
        Some(&owner),
        change(&viewer_id, json!(100)),
    )
    .await
    .assert_ok();
    s.get(&members, Some(&viewer)).await.assert_ok();
    s.post(
        "/api/analytics/sites/members/update",
        Some(&owner),
        change("nope", json!(10)),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/analytics/sites/members/remove",
        Some(&owner),
        change(&admin_id, Value::Null),
    )
    .await
    .assert_ok();
    s.get(&get, Some(&admin_member)).await.assert_error(404);

    // Soft delete: gone from reads, lists and tracking.
    s.post(
        "/api/analytics/sites/delete",
        Some(&owner),
        json!({"id": id}),
    )
    .await
    .assert_ok();
    s.get(&get, Some(&owner)).await.assert_error(404);
    assert_eq!(
        s.get("/api/analytics/sites", Some(&owner)).await.body["count"],
        json!(0)
    );
    s.post(
        "/api/analytics/track",
        None,
        json!({"site_id": id, "label": "/"}),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn tracked_hits_are_listed_and_counted() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("an-track")).await;
    let stranger = s.verified_user(&email("an-track-stranger")).await;
    let id = site(&s, &owner, "Shop").await;
    let other = site(&s, &owner, "Other").await;
    let alice = uuid::Uuid::new_v4().to_string();
    let bob = uuid::Uuid::new_v4().to_string();
    let hits = [
        (&alice, "/pricing?ref=ad#plans", json!({"plan": "pro"})),
        (&alice, "/pricing", Value::Null),
        (&bob, "/blog/one", json!({"big": "x".repeat(5000)})),
        (&bob, "signup", json!({"step": 2})),
    ];
    for (client, label, data) in &hits {
        let r = s
            .post(
                "/api/analytics/track",
                None,
                json!({"site_id": id, "label": label, "client_id": client, "data": data}),
            )
            .await;
        r.assert_ok();
        assert!(r.body.get("event_id").is_none());
    }
    let r = s
        .post(
            "/api/analytics/track",
            None,
            json!({"site_id": id, "label": "/blog/two", "attachment": true}),
        )
        .await;
    r.assert_ok();
    assert!(r.body["attachment_token"]
        .as_str()
        .unwrap()
        .starts_with("at_"));
    let with_attachment = r.body["event_id"].as_str().unwrap().to_owned();
    s.post(
        "/api/analytics/track",
        None,
        json!({"site_id": other, "label": "/pricing", "client_id": alice}),
    )
    .await
    .assert_ok();
    for bad in [
        json!({"site_id": id, "client_id": "not-a-uuid"}),
        json!({"site_id": id, "label": "/".repeat(2001)}),
    ] {
        s.post("/api/analytics/track", None, bad)
            .await
            .assert_error(400);
    }
    s.post("/api/analytics/track", None, json!({"site_id": "nope"}))
        .await
        .assert_error(404);
    // The client id is never stored.
    assert_eq!(
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM analytics_events WHERE visitor_id = '{alice}' OR CAST(data AS TEXT) LIKE '%{alice}%'"
        ))
        .await,
        0
    );

    // The list: newest first, two pages of 3 and 2, labels normalized, big data replaced.
    let list = |extra: Value| {
        let mut b = json!({"site_id": id});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    s.post("/api/analytics/events", Some(&stranger), list(json!({})))
        .await
        .assert_error(404);
    let r = s
        .post(
            "/api/analytics/events",
            Some(&owner),
            list(json!({"limit": 3})),
        )
        .await;
    r.assert_ok();
    let first: Vec<Value> = r.body["data"].as_array().unwrap().clone();
    assert_eq!(first.len(), 3);
    assert_eq!(first[0]["event_id"], json!(with_attachment));
    assert_eq!(first[1]["label"], json!("signup"));
    assert_eq!(
        first[2]["data"],
        json!({"error": "DATA_SIZE_LIMIT_EXCEEDED"})
    );
    let cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/analytics/events",
            Some(&owner),
            list(json!({"limit": 3, "cursor": cursor})),
        )
        .await;
    let second: Vec<Value> = r.body["data"].as_array().unwrap().clone();
    assert_eq!(second.len(), 2);
    assert_eq!(r.body["next_cursor"], Value::Null);
    assert_eq!(second[0]["label"], json!("/pricing"));
    assert_eq!(second[1]["label"], json!("/pricing"));
    assert_eq!(second[1]["data"], json!({"plan": "pro"}));
    assert_eq!(second[0]["visitor_id"], second[1]["visitor_id"]);
    assert_ne!(second[0]["visitor_id"], first[1]["visitor_id"]);
    let r = s
        .post(
            "/api/analytics/events",
            Some(&owner),
            list(json!({"label": "/pricing?x=1"})),
        )
        .await;
    assert_eq!(r.body["count"], json!(2));
    s.post(
        "/api/analytics/events",
        Some(&owner),
        list(json!({"cursor": "zzz"})),
    )
    .await
    .assert_error(400);
    // Any range is answered: one that ends before it starts holds nothing; a range of
    // thousands of years draws daily buckets from a year before the site was made to
    // tomorrow at most.
    let r = s
        .post(
            "/api/analytics/events",
            Some(&owner),
            list(json!({"from": "2026-02-01", "to": "2026-01-01"})),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["count"], json!(0));
    let r = s
        .post(
            "/api/analytics/stats",
            Some(&owner),
            list(json!({"from": "2000-01-01", "to": "9999-12-31"})),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["granularity"], json!("day"));
    assert_eq!(r.body["totals"]["hits"], json!(5));
    let buckets = r.body["buckets"].as_array().unwrap().len();
    assert!((367..=369).contains(&buckets), "{buckets} buckets");

    // Stats: hourly over the last day, wildcard labels, ranked labels.
    let r = s
        .post(
            "/api/analytics/stats",
            Some(&owner),
            list(
                json!({"from": (chrono::Utc::now() - chrono::Duration::hours(2)).to_rfc3339(),
                "include_labels": true}),
            ),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["granularity"], json!("hour"));
    assert_eq!(r.body["totals"]["hits"], json!(5));
    assert_eq!(r.body["totals"]["visitors"], json!(3));
    let bucket_hits: i64 = r.body["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["hits"].as_i64().unwrap())
        .sum();
    assert_eq!(bucket_hits, 5);
    assert_eq!(
        r.body["labels"][0],
        json!({"label": "/pricing", "hits": 2, "visitors": 1})
    );
    let r = s
        .post(
            "/api/analytics/stats",
            Some(&owner),
            list(json!({"labels": ["/blog/*", "sign*"]})),
        )
        .await;
    assert_eq!(r.body["granularity"], json!("day"));
    assert_eq!(r.body["totals"], json!({"hits": 3, "visitors": 2}));
    assert_eq!(r.body["buckets"].as_array().unwrap().len(), 31);
    let many: Vec<String> = (0..21).map(|i| format!("/p{i}")).collect();
    s.post(
        "/api/analytics/stats",
        Some(&owner),
        list(json!({"labels": many})),
    )
    .await
    .assert_error(400);
}

/// Totals and ranked labels of `stats` over the site with `extra` fields; the buckets
/// add up to the totals.
async fn stats(s: &Server, key: &str, site: &str, extra: &Value) -> Value {
    let mut b = json!({"site_id": site, "include_labels": true});
    b.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let r = s.post("/api/analytics/stats", Some(key), b).await;
    r.assert_ok();
    let sum: i64 = r.body["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["hits"].as_i64().unwrap())
        .sum();
    assert_eq!(json!(sum), r.body["totals"]["hits"]);
    json!({"totals": r.body["totals"], "labels": r.body["labels"]})
}

/// Stats read whole hours and days from rollups kept by the ingest writer and only the
/// edges of a range from the events: the same hits answer alike whichever path reads
/// them, a visitor seen in two writes counts once, and rollups rebuilt by the CLI or at
/// start-up (when missing) give the same answer.
#[tokio::test]
async fn stats_agree_between_rollups_and_raw_events() {
    use chrono::DurationRound;
    let mut s = Server::start().await;
    let owner = s.verified_user(&email("an-rollup")).await;
    let id = site(&s, &owner, "Rolled").await;
    let now = chrono::Utc::now();
    let hour = now.duration_trunc(chrono::Duration::hours(1)).unwrap();
    let set_rolled = |t: Option<chrono::DateTime<chrono::Utc>>| {
        let v = t.map_or("NULL".into(), |t| format!("'{}'", t.to_rfc3339()));
        format!("UPDATE analytics_rollup_state SET rolled_until = {v}")
    };
    // Hours up to `rolled_until` are read from the rollups: with it past this hour, the
    // writer merges these hits into the rollups itself (a write that waited past a roll).
    s.sql(&set_rolled(Some(hour + chrono::Duration::hours(2))))
        .await;
    let clients: Vec<String> = (0..3).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let track = |label: &'static str, client: usize| {
        let body = json!({"site_id": id, "label": label, "client_id": clients[client]});
        let s = &s;
        async move { s.post("/api/analytics/track", None, body).await.assert_ok() }
    };
    for (label, client) in [("/a", 0), ("/a", 1), ("/b", 1), ("go", 2)] {
        track(label, client).await;
    }
    s.post("/api/analytics/track", None, json!({"site_id": id}))
        .await
        .assert_ok();
    let day = |d: i64| {
        (now + chrono::Duration::days(d))
            .format("%Y-%m-%d")
            .to_string()
    };
    let at = |h: i64| (now + chrono::Duration::hours(h)).to_rfc3339();
    let windows = [
        json!({}),
        json!({"from": day(-3), "to": day(1)}),
        json!({"from": at(-3), "to": at(1)}),
    ];
    let expect = |hits: i64, a_hits: i64| {
        json!({"totals": {"hits": hits, "visitors": 4}, "labels": [
            {"label": "/a", "hits": a_hits, "visitors": 2},
            {"label": "/b", "hits": 1, "visitors": 1},
            {"label": "go", "hits": 1, "visitors": 1},
        ]})
    };
    check(
        &s,
        &owner,
        &id,
        &windows,
        expect(5, 2),
        "merged by the writer",
    )
    .await;
    // The same visitors again, in later writes: hits grow, visitors do not.
    track("/a", 0).await;
    track("/a", 1).await;
    check(
        &s,
        &owner,
        &id,
        &windows,
        expect(7, 4),
        "merged by the writer",
    )
    .await;
    let rolled_hits = "SELECT CAST(COALESCE(SUM(hits), 0) AS BIGINT) FROM analytics_hourly";
    assert_eq!(s.sql_count(rolled_hits).await, 7);
    // Patterns select labels alike on both paths.
    for w in &windows {
        let mut b = w.clone();
        b["labels"] = json!(["/*"]);
        let r = stats(&s, &owner, &id, &b).await;
        assert_eq!(r["totals"], json!({"hits": 5, "visitors": 2}), "window {w}");
    }

    // Past `rolled_until` the events are read, rollups or not.
    s.sql("DELETE FROM analytics_hourly").await;
    s.sql("DELETE FROM analytics_daily").await;
    s.sql(&set_rolled(Some(hour))).await;
    check(
        &s,
        &owner,
        &id,
        &windows,
        expect(7, 4),
        "read from the events",
    )
    .await;

    // Events moved into rolled-up hours behind the server's back (as by an import) are
    // missing until the operator command rolls them up again.
    let earlier = (now - chrono::Duration::minutes(70)).to_rfc3339();
    s.sql(&format!(
        "UPDATE analytics_events SET created_at = '{earlier}'"
    ))
    .await;
    assert_ne!(stats(&s, &owner, &id, &windows[1]).await, expect(7, 4));
    let out = s.cli(&["analytics", "rebuild-rollups"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("from 7 events"));
    assert_eq!(s.sql_count(rolled_hits).await, 7);
    check(
        &s,
        &owner,
        &id,
        &windows,
        expect(7, 4),
        "rolled up by the command",
    )
    .await;

    // With no rollups at all, the worker rolls everything up when it starts.
    s.sql("DELETE FROM analytics_hourly").await;
    s.sql("DELETE FROM analytics_daily").await;
    s.sql(&set_rolled(None)).await;
    s.restart();
    let mut waited = 0;
    while s.sql_count(rolled_hits).await < 7 {
        assert!(waited < 100, "the worker did not roll up the events");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        waited += 1;
    }
    check(
        &s,
        &owner,
        &id,
        &windows,
        expect(7, 4),
        "rolled up by the worker",
    )
    .await;
}

/// Every window's stats answer `expected`.
async fn check(s: &Server, key: &str, id: &str, windows: &[Value], expected: Value, why: &str) {
    for w in windows {
        assert_eq!(stats(s, key, id, w).await, expected, "{why}, window {w}");
    }
}

/// The hosted script in headless Chromium, on a page of another origin (served by the
/// test): the first view, two `pushState`s, a `replaceState` of the same path (no new
/// view), a back navigation (`popstate`) and two `track` calls arrive as events; the
/// browser keeps no cookie and no storage.
#[tokio::test]
async fn the_hosted_script_tracks_navigation_without_cookies_or_storage() {
    let s = Server::start().await;
    let r = s
        .raw(reqwest::Method::GET, "/analytics/v1.js")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let header = |n: &str| r.headers()[n].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "text/javascript; charset=utf-8");
    assert_eq!(header("cache-control"), "public, max-age=3600");
    assert!(r.text().await.unwrap().contains("window.analyticsPage"));
    // Cross-origin: the track route answers a preflight; other routes do not.
    let preflight = |path: &str| {
        s.raw(reqwest::Method::OPTIONS, path)
            .header("origin", "http://site.example")
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
    };
    let r = preflight("/api/analytics/track").send().await.unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "http://site.example"
    );
    let r = preflight("/api/credits/send").send().await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    // Nor does any other answer vary by origin.
    let r = s
        .raw(reqwest::Method::GET, "/api/status")
        .header("origin", "http://site.example")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    assert!(r.headers().get("vary").is_none(), "{:?}", r.headers());

    let Some(browser) = crate::browser::Browser::start().await else {
        return;
    };
    let owner = s.verified_user(&email("an-browser")).await;
    let id = site(&s, &owner, "Browser").await;
    let client = uuid::Uuid::new_v4();
    let html = format!(
        "<!doctype html><html><head><title>t</title></head><body><p id=ok>page</p>\
         <script src=\"{}/analytics/v1.js\" data-site-id=\"{id}\" data-client-id=\"{client}\"></script>\
         </body></html>",
        s.base
    );
    let page = axum::Router::new().fallback(move || {
        let html = html.clone();
        async move { axum::response::Html(html) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, page).await });

    browser.goto(&format!("{origin}/start")).await;
    let ready = browser
        .exec("return typeof window.viewsPage === 'object' && window.viewsPage === window.analyticsPage;")
        .await;
    assert_eq!(ready, json!(true));
    browser
        .exec(
            "history.pushState({}, '', '/docs?tab=1#top');
             history.replaceState({}, '', '/docs?tab=2');
             history.pushState({}, '', '/pricing');
             window.viewsPage.track('signup', {plan: 'pro'});
             window.analyticsPage.track('alias');
             history.back();",
        )
        .await;
    // The events arrive (the back navigation's popstate fires after the calls).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let events = loop {
        let r = s
            .post(
                "/api/analytics/events",
                Some(&owner),
                json!({"site_id": id}),
            )
            .await;
        if r.body["count"].as_i64() >= Some(6) || std::time::Instant::now() > deadline {
            break r.body["data"].as_array().unwrap().clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let mut labels: Vec<&str> = events
        .iter()
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    labels.sort();
    assert_eq!(
        labels,
        ["/docs", "/docs", "/pricing", "/start", "alias", "signup"]
    );
    let signup = events.iter().find(|e| e["label"] == "signup").unwrap();
    assert_eq!(signup["data"], json!({"plan": "pro"}));
    // One client id, one visitor.
    assert!(events
        .iter()
        .all(|e| e["visitor_id"] == events[0]["visitor_id"]));
    let kept = browser
        .exec("return [document.cookie, localStorage.length, sessionStorage.length];")
        .await;
    assert_eq!(kept, json!(["", 0, 0]));
    let cookies = browser.cmd(reqwest::Method::GET, "/cookie", None).await;
    assert_eq!(cookies, json!([]));
    // Network failures are ignored: a rejected request and a throwing fetch leave no
    // error on the page.
    browser
        .exec(
            "window.__errors = [];
             window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejection'); });
             window.addEventListener('error', function (e) { window.__errors.push('error'); });
             window.fetch = function () { return Promise.reject(new TypeError('Failed to fetch')); };
             window.viewsPage.track('offline');
             window.fetch = function () { throw new TypeError('blocked'); };
             window.viewsPage.track('blocked');",
        )
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(browser.exec("return window.__errors;").await, json!([]));
    browser.quit().await;
}

/// Attachments: the token from `track` gets one private upload URL (wrong token 401,
/// expired token 401, a second create 409); viewers get a 302 to a short-lived download,
/// strangers 404; the expiry job deletes attachments of events older than 30 days.
#[tokio::test]
async fn attachments_are_one_per_event_private_and_expire() {
    use crate::common::Options;
    let s = Server::start_with(Options::default().env("PLINTH_MONTHLY_INTERVAL_SECS", "1")).await;
    let owner = s.verified_user(&email("an-att")).await;
    let stranger = s.verified_user(&email("an-att-stranger")).await;
    let id = site(&s, &owner, "Crashes").await;
    let tracked = |attachment: bool| {
        let s = &s;
        let id = id.clone();
        async move {
            let r = s
                .post(
                    "/api/analytics/track",
                    None,
                    json!({"site_id": id, "label": "crash", "attachment": attachment}),
                )
                .await;
            r.assert_ok();
            r.body
        }
    };
    let t = tracked(true).await;
    let (event, token) = (
        t["event_id"].as_str().unwrap().to_owned(),
        t["attachment_token"].as_str().unwrap().to_owned(),
    );
    let create = |token: &str| json!({"attachment_token": token, "file": "crash log.txt", "type": "text/plain"});
    let path = format!("/api/analytics/events/{event}/attachment/create");
    s.post(&path, None, create("at_wrong"))
        .await
        .assert_error(401);
    s.post(
        &path,
        None,
        json!({"attachment_token": token, "file": "x.html", "type": "text/html"}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/analytics/events/nope/attachment/create",
        None,
        create(&token),
    )
    .await
    .assert_error(404);
    let r = s.post(&path, None, create(&token)).await;
    r.assert_ok();
    assert_eq!(r.body["expires_in"], json!(900));
    let url = r.body["url"].as_str().unwrap().to_owned();
    s.post(&path, None, create(&token)).await.assert_error(409);
    let put = reqwest::Client::new()
        .put(&url)
        .header("content-type", "text/plain")
        .body("stack trace")
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.status());

    // Another event's token has run out.
    let t2 = tracked(true).await;
    let (event2, token2) = (
        t2["event_id"].as_str().unwrap().to_owned(),
        t2["attachment_token"].as_str().unwrap().to_owned(),
    );
    s.sql(&format!(
        "UPDATE analytics_events SET attachment_token_expires_at = '2000-01-01T00:00:00Z' WHERE id = '{event2}'"
    ))
    .await;
    s.post(
        &format!("/api/analytics/events/{event2}/attachment/create"),
        None,
        create(&token2),
    )
    .await
    .assert_error(401);

    // The list says which events have one; the owner downloads it, a stranger cannot.
    let r = s
        .post(
            "/api/analytics/events",
            Some(&owner),
            json!({"site_id": id}),
        )
        .await;
    let has: Vec<(Value, Value)> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event_id"].clone(), e["attachment"].clone()))
        .collect();
    assert_eq!(
        has,
        vec![(json!(event2), json!(false)), (json!(event), json!(true))]
    );
    let download = format!("/api/analytics/events/{event}/attachment");
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects
        .post(format!("{}{download}", s.base))
        .header("x-api-key", &owner)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    assert_eq!(r.headers()["referrer-policy"], "no-referrer");
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let body = reqwest::get(&location).await.unwrap().text().await.unwrap();
    assert_eq!(body, "stack trace");
    s.post(&download, Some(&stranger), json!({}))
        .await
        .assert_error(404);
    s.post(
        &format!("/api/analytics/events/{event2}/attachment"),
        Some(&owner),
        json!({}),
    )
    .await
    .assert_error(404);

    // Older than 30 days: the expiry job deletes the object and the event forgets it.
    s.sql(&format!(
        "UPDATE analytics_events SET created_at = '2000-01-01T00:00:00Z' WHERE id = '{event}'"
    ))
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while s
        .sql_count("SELECT COUNT(*) FROM analytics_events WHERE attachment_key IS NOT NULL")
        .await
        > 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "attachment not expired"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(reqwest::get(&location).await.unwrap().status(), 404);
}

/// The dashboard in headless Chromium against seeded data: the sign-in form keeps the key
/// in session storage only, then the totals, the chart (one bar per day), top pages, top
/// custom events and recent events are drawn from the API. `PLINTH_BLESS=1` saves the
/// screenshot as docs/analytics-dashboard.png.
#[tokio::test]
async fn the_dashboard_draws_the_stats_of_a_site() {
    let s = Server::start().await;
    let r = s
        .raw(reqwest::Method::GET, "/analytics/dashboard")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("connect-src 'self'"));
    let Some(browser) = crate::browser::Browser::start().await else {
        return;
    };
    let owner = s.verified_user(&email("an-dash")).await;
    let id = site(&s, &owner, "example.com").await;
    // 60 hits from 12 visitors over the last 6 days.
    let labels = [
        "/",
        "/pricing",
        "/docs",
        "/",
        "/blog/launch",
        "signup",
        "/",
        "download",
    ];
    let clients: Vec<String> = (0..12).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for i in 0..60 {
        s.post(
            "/api/analytics/track",
            None,
            json!({"site_id": id, "label": labels[i % labels.len()],
                "client_id": clients[(i * 7) % clients.len()],
                "data": if labels[i % labels.len()] == "signup" { json!({"plan": "pro"}) } else { Value::Null }}),
        )
        .await
        .assert_ok();
    }
    let r = s
        .post(
            "/api/analytics/events",
            Some(&owner),
            json!({"site_id": id, "limit": 100}),
        )
        .await;
    for (i, e) in r.body["data"].as_array().unwrap().iter().enumerate() {
        let at = chrono::Utc::now() - chrono::Duration::hours(((i * i * 5) % 144) as i64);
        s.sql(&format!(
            "UPDATE analytics_events SET created_at = '{}' WHERE id = '{}'",
            at.to_rfc3339(),
            e["event_id"].as_str().unwrap()
        ))
        .await;
    }
    // Events changed behind the server's back, as after an import: roll them up again.
    let out = s.cli(&["analytics", "rebuild-rollups"]);
    assert!(out.status.success(), "{out:?}");

    browser.window(1280, 1100).await;
    browser
        .goto(&format!("{}/analytics/dashboard", s.base))
        .await;
    browser.fill("#key", &owner).await;
    browser.click("#signin-button").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while browser
        .exec("return document.body.getAttribute('data-loaded');")
        .await
        != json!("true")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "dashboard never loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let drawn = browser
        .exec(
            "return {
               hits: document.getElementById('total-hits').textContent,
               visitors: document.getElementById('total-visitors').textContent,
               bars: document.querySelectorAll('#chart rect').length,
               pages: document.getElementById('pages').textContent,
               custom: document.getElementById('custom').textContent,
               recent: document.querySelectorAll('#recent tbody tr').length,
               stored: [sessionStorage.length, localStorage.length, document.cookie]
             };",
        )
        .await;
    assert_eq!(drawn["hits"], json!("60"));
    assert_eq!(drawn["visitors"], json!("12"));
    assert_eq!(
        drawn["bars"],
        json!(31),
        "one bar per day of the 30-day range"
    );
    let pages = drawn["pages"].as_str().unwrap();
    assert!(
        pages.contains("/pricing") && !pages.contains("signup"),
        "{pages}"
    );
    let custom = drawn["custom"].as_str().unwrap();
    assert!(custom.contains("signup") && custom.contains("download") && !custom.contains("/docs"));
    assert_eq!(drawn["recent"], json!(20));
    assert_eq!(drawn["stored"], json!([1, 0, ""]));

    let png = browser.screenshot().await;
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    if std::env::var_os("PLINTH_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/analytics-dashboard.png");
        std::fs::write(path, &png).unwrap();
    }
    browser.quit().await;
}
