//! The HTTP listener: hyper with the limits `axum::serve` does not set (security review
//! N-H1). A cap on connections in total and per client address, a header read timeout
//! that also ends idle keep-alive connections, and small read buffers: no client holds a
//! connection slot forever, or more than a few tens of KiB of memory before it is known.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use ipnet::IpNet;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

use crate::config::Limits;

/// hyper's read buffer per connection: request heads must fit in it, and a body is
/// handed on in pieces of at most this size. hyper's own default is ~400 KiB.
const READ_BUFFER: usize = 32 * 1024;
/// HTTP/2: streams one connection may have open at once, and the largest header list.
const H2_STREAMS: u32 = 64;

/// Serves `app` on `listener` until `stop` turns true, then lets open requests finish
/// (the caller bounds how long).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &Limits,
    trusted: &[IpNet],
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let builder = builder(limits);
    let graceful = GracefulShutdown::new();
    let total = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let clients = Clients::new(limits.max_connections_per_client, trusted);
    loop {
        // At the cap, new connections wait in the kernel's backlog rather than in memory.
        let permit = tokio::select! {
            p = total.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stopped(&mut stop) => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped(&mut stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: the next accept may succeed.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = clients.enter(peer.ip()) else {
            tokio::spawn(refuse(stream, limits.max_connections_per_client));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            let app = app.clone();
            async move { app.oneshot(req.map(axum::body::Body::new)).await }
        });
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop((permit, slot));
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

fn builder(limits: &Limits) -> Builder<TokioExecutor> {
    let mut b = Builder::new(TokioExecutor::new());
    let header = Duration::from_secs(limits.header_timeout.max(1));
    b.http1()
        .timer(TokioTimer::new())
        // Runs from the moment a request head is awaited: a half-sent head and an idle
        // keep-alive connection are both closed when it ends.
        .header_read_timeout(header)
        .max_buf_size(READ_BUFFER);
    b.http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(H2_STREAMS)
        .max_header_list_size(READ_BUFFER as u32)
        .max_send_buf_size(READ_BUFFER)
        .initial_stream_window_size(READ_BUFFER as u32 * 2)
        .initial_connection_window_size(READ_BUFFER as u32 * 4)
        .keep_alive_interval(header)
        .keep_alive_timeout(header);
    b
}

/// Answers a connection over its address's cap with a 429 and closes it: a client sees
/// why, instead of a reset.
async fn refuse(mut stream: TcpStream, cap: usize) {
    let body = format!(
        r#"{{"error":true,"message":"too many open connections from your address (at most {cap}); close some and retry","max_connections_per_client":{cap}}}"#
    );
    let head = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// Open connections per client address, against a cap. IPv6 clients are counted per /64
/// (one subscriber's whole prefix); peers in `PLINTH_TRUSTED_PROXIES` are not counted,
/// since a load balancer carries many clients.
#[derive(Clone)]
struct Clients {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
    cap: usize,
    trusted: Arc<[IpNet]>,
}

/// A connection counted against its address; uncounted when dropped.
struct Slot {
    clients: Option<Clients>,
    who: IpAddr,
}

impl Clients {
    fn new(cap: usize, trusted: &[IpNet]) -> Clients {
        Clients {
            open: Arc::default(),
            cap: cap.max(1),
            trusted: trusted.into(),
        }
    }

    fn enter(&self, peer: IpAddr) -> Option<Slot> {
        let peer = crate::http::client_ip::canonical(peer);
        if self.trusted.iter().any(|n| n.contains(&peer)) {
            return Some(Slot {
                clients: None,
                who: peer,
            });
        }
        let who = crate::http::client_ip::prefix(peer);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(who).or_default();
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Slot {
            clients: Some(self.clone()),
            who,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(clients) = &self.clients else { return };
        let mut open = clients.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_counted_per_64_and_ipv4_per_address() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(
            crate::http::client_ip::prefix(a),
            crate::http::client_ip::prefix(b)
        );
        assert_ne!(
            crate::http::client_ip::prefix(a),
            crate::http::client_ip::prefix(c)
        );
        let mapped: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
        assert_eq!(
            crate::http::client_ip::prefix(mapped),
            "10.0.0.7".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn a_client_over_its_cap_is_refused_until_one_of_its_connections_closes() {
        let proxy: IpNet = "10.9.0.0/16".parse().unwrap();
        let clients = Clients::new(2, &[proxy]);
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::2".parse().unwrap();
        let first = clients.enter(a).unwrap();
        let _second = clients.enter(b).unwrap();
        assert!(clients.enter(a).is_none(), "a third from the same /64");
        assert!(clients.enter("192.0.2.1".parse().unwrap()).is_some());
        drop(first);
        assert!(clients.enter(a).is_some());
        // A trusted load balancer is never capped.
        let lb: IpAddr = "10.9.1.1".parse().unwrap();
        let held: Vec<_> = (0..10).map(|_| clients.enter(lb).unwrap()).collect();
        assert_eq!(held.len(), 10);
    }
}
