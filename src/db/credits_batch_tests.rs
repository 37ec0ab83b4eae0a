//! The credit batch paths against a real database (SQLite, and PostgreSQL when
//! `PLINTH_TEST_DATABASE_URL` names one).

use super::*;
use plinth_actors::credits::Entry;
use plinth_vocab::LedgerKind;
use serde_json::json;

/// A fresh migrated database per backend: SQLite in `dir`, and a new PostgreSQL
/// database when the test URL is set (dropped by the caller through the name).
async fn databases(dir: &tempfile::TempDir) -> Vec<(Db, Option<(String, String)>)> {
    let sqlite = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let mut out = vec![(Db::connect(&sqlite, "test").await.unwrap(), None)];
    if let Some(admin) = std::env::var("PLINTH_TEST_DATABASE_URL")
        .ok()
        .filter(|s| !s.is_empty())
    {
        let name = format!("plinth_lib_{}", uuid::Uuid::new_v4().simple());
        let admin_pool = sqlx::PgPool::connect(&admin).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin_pool)
            .await
            .unwrap();
        let base = admin.split('?').next().unwrap();
        let url = format!("{}/{name}", &base[..base.rfind('/').unwrap()]);
        out.push((
            Db::connect(&url, "test").await.unwrap(),
            Some((admin, name)),
        ));
    }
    for (db, _) in &out {
        db.migrate().await.unwrap();
    }
    out
}

async fn drop_database(db: Db, made: Option<(String, String)>) {
    crate::with_db!(&db, p => p.close().await);
    if let Some((admin, name)) = made {
        let admin_pool = sqlx::PgPool::connect(&admin).await.unwrap();
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&admin_pool)
        .await;
    }
}

async fn account(db: &Db, email: &str) -> String {
    let new = crate::db::users::NewUser {
        email,
        key_hash: email,
        key_cipher: "",
        password_hash: None,
        level: 0,
        verified: true,
        data: json!({}),
        source: None,
        source_by_self: true,
    };
    let user = crate::db::users::create(db, new, None).await.unwrap();
    ensure_account(db, &user.id).await.unwrap();
    user.id
}

fn change(entries: &[(&str, i64, Option<&str>)]) -> Change {
    Change {
        entries: entries
            .iter()
            .map(|(user_id, delta, idem_key)| Entry {
                user_id: (*user_id).to_owned(),
                delta: *delta,
                kind: LedgerKind::Deduct,
                idem_key: idem_key.map(str::to_owned),
                data: json!({"n": delta}),
            })
            .collect(),
    }
}

fn done(balances: &[(&str, i64)]) -> Vec<(String, i64)> {
    balances
        .iter()
        .map(|(u, b)| ((*u).to_owned(), *b))
        .collect()
}

/// Every ledger row of the account, oldest first: (amount, balance after).
async fn rows(db: &Db, user_id: &str) -> Vec<(i64, i64)> {
    let (mut rows, _) = history(db, user_id, 100, 0).await.unwrap();
    rows.reverse();
    rows.iter().map(|r| (r.amount, r.balance_after)).collect()
}

#[tokio::test]
async fn a_batch_applies_each_change_as_if_alone_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (db, made) in databases(&dir).await {
        let a = account(&db, "a@batch.example").await;
        let b = account(&db, "b@batch.example").await;
        let (a, b) = (a.as_str(), b.as_str());

        // A whole batch that applies takes the set-based path: balances per entry,
        // in batch order.
        let out = apply_batch(&db, &[change(&[(a, 100, None)]), change(&[(b, 20, None)])])
            .await
            .unwrap();
        assert!(
            matches!(&out[0], Applied::Done { balances, .. } if *balances == done(&[(a, 100)]))
        );
        let out = try_set_based(
            &db,
            &[
                change(&[(a, -10, None)]),
                change(&[(b, -5, None)]),
                change(&[(a, -10, None), (b, 10, None)]),
            ],
        )
        .await
        .unwrap()
        .expect("the set-based path applies a batch where every change fits");
        let balances: Vec<_> = out
            .iter()
            .map(|o| match o {
                Applied::Done {
                    balances,
                    transaction_ids,
                } => {
                    assert_eq!(balances.len(), transaction_ids.len());
                    balances.clone()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            balances,
            vec![
                done(&[(a, 90)]),
                done(&[(b, 15)]),
                done(&[(a, 80), (b, 25)])
            ]
        );
        assert_eq!(rows(&db, a).await, vec![(100, 100), (-10, 90), (-10, 80)]);

        // The sum fits (80 - 90 + 50 = 40) but the first change would overdraw: the
        // set-based path writes nothing, then that change alone fails, and the ones
        // after it see the balance it left.
        let ghost = uuid::Uuid::new_v4().to_string();
        let batch = [
            change(&[(a, -90, None)]),
            change(&[(a, 50, None)]),
            change(&[(a, -60, None), (b, 60, None)]),
            change(&[(&ghost, 1, None)]),
            change(&[(b, -1, None)]),
        ];
        assert!(try_set_based(&db, &batch[..3]).await.unwrap().is_none());
        assert!(try_set_based(&db, &batch[1..]).await.unwrap().is_none());
        assert_eq!(rows(&db, a).await.len(), 3);
        let out = apply_batch(&db, &batch).await.unwrap();
        assert_eq!(
            out[0],
            Applied::Insufficient {
                user_id: a.into(),
                balance: 80
            }
        );
        assert!(
            matches!(&out[1], Applied::Done { balances, .. } if *balances == done(&[(a, 130)]))
        );
        assert!(
            matches!(&out[2], Applied::Done { balances, .. } if *balances == done(&[(a, 70), (b, 85)]))
        );
        assert_eq!(
            out[3],
            Applied::NoAccount {
                user_id: ghost.clone()
            }
        );
        assert!(matches!(&out[4], Applied::Done { balances, .. } if *balances == done(&[(b, 84)])));
        assert_eq!(balance(&db, a).await.unwrap(), Some(70));
        assert_eq!(balance(&db, b).await.unwrap(), Some(84));

        // Once-only entries: a repeat fails alone, also within one batch.
        let out = apply_batch(
            &db,
            &[
                change(&[(a, 1, Some("bonus:x"))]),
                change(&[(a, 1, Some("bonus:x"))]),
                change(&[(b, 1, Some("bonus:x"))]),
            ],
        )
        .await
        .unwrap();
        assert!(matches!(&out[0], Applied::Done { balances, .. } if *balances == done(&[(a, 71)])));
        assert_eq!(out[1], Applied::Duplicate);
        assert!(matches!(&out[2], Applied::Done { balances, .. } if *balances == done(&[(b, 85)])));
        let out = apply_batch(&db, &[change(&[(a, 1, Some("bonus:x"))])])
            .await
            .unwrap();
        assert_eq!(out[0], Applied::Duplicate);

        // A credit that would leave 64 bits fails alone.
        let out = apply_batch(
            &db,
            &[change(&[(a, i64::MAX, None)]), change(&[(a, -1, None)])],
        )
        .await
        .unwrap();
        assert!(
            matches!(out[0], Applied::Insufficient { .. }),
            "{:?}",
            out[0]
        );
        assert!(matches!(&out[1], Applied::Done { balances, .. } if *balances == done(&[(a, 70)])));
        assert_eq!(rows(&db, a).await.last(), Some(&(-1, 70)));
        drop_database(db, made).await;
    }
}

/// A user's deletion takes its credit account and ledger with it on every backend
/// (PostgreSQL by a trigger since migration 0035 dropped the ledger's foreign key), and
/// leaves other accounts' ledgers alone.
#[tokio::test]
async fn deleting_a_user_removes_its_ledger_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (db, made) in databases(&dir).await {
        let a = account(&db, "gone@batch.example").await;
        let b = account(&db, "stays@batch.example").await;
        let (a, b) = (a.as_str(), b.as_str());
        let out = apply_batch(
            &db,
            &[
                change(&[(a, 10, None)]),
                change(&[(b, 5, None), (a, -3, None)]),
            ],
        )
        .await
        .unwrap();
        assert!(
            out.iter().all(|o| matches!(o, Applied::Done { .. })),
            "{out:?}"
        );
        let ledger_of = |user: String| {
            let db = db.clone();
            async move {
                let (n,): (i64,) = crate::with_db!(&db, p => sqlx::query_as(
                    "SELECT COUNT(*) FROM credit_transactions t \
                     JOIN credit_accounts c ON c.id = t.account_id WHERE c.user_id = $1")
                    .bind(&user).fetch_one(p).await.unwrap());
                n
            }
        };
        assert_eq!(ledger_of(a.to_owned()).await, 2);
        let (total_before,): (i64,) = crate::with_db!(&db, p =>
            sqlx::query_as("SELECT COUNT(*) FROM credit_transactions").fetch_one(p).await.unwrap());
        let n = crate::with_db!(&db, p => sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(a).execute(p).await.unwrap().rows_affected());
        assert_eq!(n, 1);
        let (total_after,): (i64,) = crate::with_db!(&db, p =>
            sqlx::query_as("SELECT COUNT(*) FROM credit_transactions").fetch_one(p).await.unwrap());
        assert_eq!(
            total_after,
            total_before - 2,
            "the deleted user's two rows went, no others"
        );
        assert_eq!(ledger_of(b.to_owned()).await, 1);
        assert_eq!(balance(&db, a).await.unwrap(), None);
        drop_database(db, made).await;
    }
}
