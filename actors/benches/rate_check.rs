//! Cost of one rate-limit check (an actor round trip), against the cost of a bare
//! tokio oneshot round trip measured in the same run.
//! `cargo bench -p plinth-actors --bench rate_check`

use std::time::Instant;

use plinth_actors::rate::RateLimiter;

const N: u64 = 200_000;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Baseline: a message to a task and its answer, no state.
        let (tx, mut rx) =
            tokio::sync::mpsc::unbounded_channel::<tokio::sync::oneshot::Sender<u64>>();
        tokio::spawn(async move {
            while let Some(reply) = rx.recv().await {
                let _ = reply.send(1);
            }
        });
        let t = Instant::now();
        for _ in 0..N {
            let (otx, orx) = tokio::sync::oneshot::channel();
            tx.send(otx).unwrap();
            orx.await.unwrap();
        }
        let base = t.elapsed().as_nanos() as f64 / N as f64;

        let rl = RateLimiter::start(8).await.unwrap();
        let keys: Vec<String> = (0..1000).map(|i| format!("u:user-{i}")).collect();
        // Warm the windows.
        for k in &keys {
            rl.check(k, 0, u64::MAX, 60_000).await;
        }
        let t = Instant::now();
        for i in 0..N {
            rl.check(&keys[(i % 1000) as usize], 0, u64::MAX, 60_000)
                .await;
        }
        let check = t.elapsed().as_nanos() as f64 / N as f64;

        // Concurrent: 32 tasks checking at once (as under HTTP load).
        let t = Instant::now();
        let mut tasks = Vec::new();
        for w in 0..32u64 {
            let rl = rl.clone();
            let keys = keys.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..N / 32 {
                    rl.check(&keys[((i + w * 31) % 1000) as usize], 0, u64::MAX, 60_000)
                        .await;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let concurrent = t.elapsed().as_nanos() as f64 / N as f64;

        println!("oneshot round trip (baseline): {base:.0} ns/op");
        println!(
            "rate check, sequential:        {check:.0} ns/op ({:.2}x baseline)",
            check / base
        );
        println!(
            "rate check, 32 concurrent:     {concurrent:.0} ns/op amortised ({:.2}x baseline)",
            concurrent / base
        );
        rl.stop();
    });
}
