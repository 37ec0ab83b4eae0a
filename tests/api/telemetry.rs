//! Telemetry: registered products only, batches of at most 25 checked whole, 202 once
//! written, deduplication on `event_id` per product, attribution by key, the `beacon`
//! rate category, and the three admin aggregates over what was sent.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

async fn telemetry_server() -> Server {
    Server::start_with(Options::default().env("PLINTH_TELEMETRY_PRODUCTS", "desk, other")).await
}

fn event(id: &str, name: &str, at: &str, data: Value) -> Value {
    json!({"event_id": id, "event_name": name, "occurred_at": at, "data": data})
}

#[tokio::test]
async fn events_are_deduplicated_attributed_and_aggregated() {
    let s = telemetry_server().await;
    let admin = s.admin(&email("tele-admin")).await;
    let user = s.verified_user(&email("tele-user")).await;
    let day1 = "2026-11-01T09:00:00Z";
    let day2 = "2026-11-02T23:59:59+00:00";
    let first = json!({"product_id": "desk", "client_id": "c1", "events": [
        event("e1", "app_opened", day1, json!({"app_version": "1.0"})),
        event("e2", "feature_used", day1,
            json!({"app_version": "1.0", "feature": "export", "gpu": true, "screens": 2})),
        event("e3", "app_opened", day2, json!({"app_version": "1.1"})),
    ]});
    let r = s.post("/api/telemetry/events", None, first.clone()).await;
    assert_eq!(r.status, 202, "{}", r.body);
    r.assert_usage();
    assert_eq!(
        (r.body["accepted"].clone(), r.body["duplicates"].clone()),
        (json!(3), json!(0))
    );
    // The beacon category: five times the read category's anonymous limit (600 vs 120).
    let read = s.get("/api/status", None).await;
    let limit = |r: &crate::common::Resp| -> u64 {
        r.header("x-ratelimit-limit").unwrap().parse().unwrap()
    };
    assert_eq!(limit(&r), 5 * limit(&read));

    // The same batch again adds nothing.
    let r = s.post("/api/telemetry/events", None, first).await;
    assert_eq!(r.status, 202);
    assert_eq!(
        (r.body["accepted"].clone(), r.body["duplicates"].clone()),
        (json!(0), json!(3))
    );
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM telemetry_events").await,
        3
    );

    // A key attributes the events to its account; a repeated id inside one batch counts once.
    let second = json!({"product_id": "desk", "client_id": "c2", "events": [
        event("e4", "subscription_checkout_started", day2, json!({"app_version": "1.1"})),
        event("e5", "subscription_checkout_completed", day2, json!({"app_version": "1.1", "gpu": false})),
        event("e5", "subscription_checkout_completed", day2, json!({})),
    ]});
    let r = s.post("/api/telemetry/events", Some(&user), second).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(
        (r.body["accepted"].clone(), r.body["duplicates"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM telemetry_events WHERE user_id IS NOT NULL")
            .await,
        2
    );
    // Deduplication is per product: e1 of another product is a new event.
    let r = s
        .post(
            "/api/telemetry/events",
            None,
            json!({"product_id": "other", "client_id": "c1",
                "events": [event("e1", "app_opened", day1, json!({}))]}),
        )
        .await;
    assert_eq!(r.body["accepted"], json!(1), "{}", r.body);

    // Daily: every day of the range, zeros included; versions by distinct clients.
    let range = json!({"product_id": "desk", "from": "2026-11-01", "to": "2026-11-03"});
    s.post("/api/telemetry/metrics/daily", Some(&user), range.clone())
        .await
        .assert_error(403);
    let r = s
        .post("/api/telemetry/metrics/daily", Some(&admin), range.clone())
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["days"],
        json!([
            {"date": "2026-11-01", "active_clients": 1, "events": 2},
            {"date": "2026-11-02", "active_clients": 2, "events": 3},
            {"date": "2026-11-03", "active_clients": 0, "events": 0},
        ])
    );
    assert_eq!(r.body["version_key"], json!("app_version"));
    // Any range is answered: one that ends before it starts holds no day, and a range
    // of eight thousand years lists the days from a year before the first event to
    // tomorrow, not eight thousand years of zeros.
    let mut inverted = range.clone();
    inverted["from"] = json!("2026-11-03");
    inverted["to"] = json!("2026-11-01");
    let r = s
        .post("/api/telemetry/metrics/daily", Some(&admin), inverted)
        .await;
    r.assert_ok();
    assert_eq!(r.body["days"], json!([]));
    let mut huge = range.clone();
    huge["from"] = json!("2000-01-01");
    huge["to"] = json!("9999-12-31");
    let r = s
        .post("/api/telemetry/metrics/daily", Some(&admin), huge)
        .await;
    r.assert_ok();
    let days = r.body["days"].as_array().unwrap();
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    assert_eq!(days.first().unwrap()["date"], json!("2025-10-31"));
    assert_eq!(days.last().unwrap()["date"], json!(tomorrow));
    assert!(days
        .iter()
        .any(|d| d == &json!({"date": "2026-11-02", "active_clients": 2, "events": 3})));
    // A product this server does not register is a reference to nothing: 404.
    let mut unknown = range.clone();
    unknown["product_id"] = json!("nope");
    s.post("/api/telemetry/metrics/daily", Some(&admin), unknown)
        .await
        .assert_error(404);
    assert_eq!(
        r.body["versions"],
        json!([
            {"version": "1.1", "clients": 2, "events": 3},
            {"version": "1.0", "clients": 1, "events": 2},
        ])
    );

    // Query: by day and event name; by a property with filters; unique clients.
    let query = |extra: Value| {
        let mut q = range.clone();
        q.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        q
    };
    let rows = |r: &crate::common::Resp| r.body["rows"].clone();
    let r = s
        .post(
            "/api/telemetry/metrics/query",
            Some(&admin),
            query(json!({"bucket": "day", "dimension": "event_name"})),
        )
        .await;
    r.assert_ok();
    assert_eq!(
        rows(&r),
        json!([
            {"bucket": "2026-11-01", "dimension": "app_opened", "value": 1},
            {"bucket": "2026-11-01", "dimension": "feature_used", "value": 1},
            {"bucket": "2026-11-02", "dimension": "app_opened", "value": 1},
            {"bucket": "2026-11-02", "dimension": "subscription_checkout_completed", "value": 1},
            {"bucket": "2026-11-02", "dimension": "subscription_checkout_started", "value": 1},
        ])
    );
    let r = s
        .post(
            "/api/telemetry/metrics/query",
            Some(&admin),
            query(json!({"dimension": {"property": "feature"},
                "filters": {"gpu": true, "screens": 2}})),
        )
        .await;
    assert_eq!(
        rows(&r),
        json!([{"dimension": "export", "value": 1}]),
        "{}",
        r.body
    );
    let r = s
        .post(
            "/api/telemetry/metrics/query",
            Some(&admin),
            query(json!({"dimension": {"property": "gpu"}, "metric": "unique_clients"})),
        )
        .await;
    assert_eq!(
        rows(&r),
        json!([
            {"dimension": null, "value": 2},
            {"dimension": "false", "value": 1},
            {"dimension": "true", "value": 1},
        ]),
        "{}",
        r.body
    );
    let r = s
        .post(
            "/api/telemetry/metrics/query",
            Some(&admin),
            query(json!({"event_name": "app_opened", "metric": "unique_clients", "limit": 1})),
        )
        .await;
    assert_eq!(rows(&r), json!([{"value": 1}]), "{}", r.body);

    // The checkout funnel and the subscriptions by status.
    let r = s
        .post("/api/telemetry/subscriptions/summary", Some(&admin), range)
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["checkout"],
        json!({"started": 1, "completed": 1, "conversion_rate": 1.0})
    );
    assert_eq!(r.body["subscriptions"]["total"], json!(0));
}

#[tokio::test]
async fn batches_and_queries_are_checked_whole() {
    let s = telemetry_server().await;
    let admin = s.admin(&email("tele-admin2")).await;
    let ok = |id: &str| event(id, "app_opened", "2026-11-01T00:00:00Z", json!({}));
    let batch =
        |events: Vec<Value>| json!({"product_id": "desk", "client_id": "c", "events": events});
    let far_future = (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339();
    // A product this server does not register: a reference to nothing (404).
    let r = s
        .post(
            "/api/telemetry/events",
            None,
            json!({"product_id": "nope", "client_id": "c", "events": [ok("a")]}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    let refused = [
        json!({"product_id": "desk", "client_id": "", "events": [ok("a")]}),
        batch(vec![]),
        batch((0..26).map(|i| ok(&format!("m{i}"))).collect()),
        batch(vec![
            ok("a"),
            event("b", "made_up", "2026-11-01T00:00:00Z", json!({})),
        ]),
        batch(vec![
            ok("a"),
            event("b", "app_opened", "yesterday", json!({})),
        ]),
        batch(vec![
            ok("a"),
            event("b", "app_opened", &far_future, json!({})),
        ]),
        batch(vec![
            ok("a"),
            event("b", "app_opened", "2026-11-01T00:00:00Z", json!([1])),
        ]),
        batch(vec![
            ok("a"),
            event(
                "b",
                "app_opened",
                "2026-11-01T00:00:00Z",
                json!({"x": "y".repeat(9000)}),
            ),
        ]),
        batch(vec![ok(""), ok("a")]),
    ];
    for body in refused {
        let r = s.post("/api/telemetry/events", None, body.clone()).await;
        r.assert_error(400);
        assert!(!r.body["message"].as_str().unwrap().is_empty());
    }
    // Nothing of a refused batch was written (the first event was valid each time).
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM telemetry_events").await,
        0
    );
    let r = s
        .post(
            "/api/telemetry/events",
            None,
            batch((0..25).map(|i| ok(&format!("n{i}"))).collect()),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.body["accepted"].clone()),
        (202, json!(25))
    );

    let base = json!({"product_id": "desk", "from": "2026-11-01", "to": "2026-11-02"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    // Ranges that end before they start, or run for years, are answered (empty, or what
    // the data holds); an unregistered product is a 404.
    for (body, status) in [
        (with("to", json!("2026-10-31")), 200),
        (with("to", json!("2028-01-01")), 200),
        (with("product_id", json!("nope")), 404),
    ] {
        let r = s
            .post("/api/telemetry/metrics/query", Some(&admin), body.clone())
            .await;
        assert_eq!(r.status, status, "{body} -> {}", r.body);
    }
    for body in [
        with("from", json!("2026-11-3")),
        with("bucket", json!("week")),
        with("metric", json!("sum")),
        with("dimension", json!("client_id")),
        with("dimension", json!({"property": "a.b"})),
        with("filters", json!({"a": {"b": 1}})),
        with("filters", json!({"it's": 1})),
        with("limit", json!(0)),
    ] {
        let r = s
            .post("/api/telemetry/metrics/query", Some(&admin), body.clone())
            .await;
        assert_eq!(r.status, 400, "{body} -> {}", r.body);
    }
    s.post(
        "/api/telemetry/metrics/daily",
        Some(&admin),
        with("from", json!("2026-13-01")),
    )
    .await
    .assert_error(400);
    s.post("/api/telemetry/metrics/daily", None, base.clone())
        .await
        .assert_error(401);
}
