//! The client's address, for anonymous rate windows. Behind a load balancer the TCP peer
//! is the balancer, so every anonymous client would share one window; the forwarding
//! headers name the client, but anyone can send them. They are believed only from peers
//! in `PLINTH_TRUSTED_PROXIES`, and read from the right: the first address that is not
//! itself a trusted proxy is the client (what the nearest trusted proxy saw).

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The client address of a request from `peer`.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(&canonical(*ip)));
    if !is_trusted(&peer) {
        return canonical(peer);
    }
    // Nearest hop last: X-Forwarded-For's own order, or Forwarded's `for=` in order.
    let mut hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(parse_addr)
        .collect();
    if hops.is_empty() {
        hops = headers
            .get_all("forwarded")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split([',', ';']))
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                k.trim().eq_ignore_ascii_case("for").then_some(v)
            })
            .filter_map(parse_addr)
            .collect();
    }
    let mut client = peer;
    for hop in hops.into_iter().rev() {
        client = hop;
        if !is_trusted(&hop) {
            break;
        }
    }
    canonical(client)
}

/// An address as a forwarding header writes it: `1.2.3.4`, `1.2.3.4:5678`, `::1`,
/// `"[2001:db8::1]:443"`. Anything else (`unknown`, obfuscated names) is skipped.
fn parse_addr(raw: &str) -> Option<IpAddr> {
    let s = raw.trim().trim_matches('"');
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = s.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// IPv4 clients of a dual-stack socket arrive as `::ffff:a.b.c.d`: one window either way.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The unit one client is counted by (rate windows, connection caps): an IPv4 address,
/// or an IPv6 address's /64, which one subscriber usually holds whole.
pub fn prefix(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_net;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn headers_from_an_untrusted_peer_are_ignored() {
        let trusted = [parse_net("10.0.0.0/8").unwrap()];
        let h = headers(&[("x-forwarded-for", "9.9.9.9")]);
        assert_eq!(
            client_ip(ip("203.0.113.7"), &h, &trusted),
            ip("203.0.113.7")
        );
        assert_eq!(client_ip(ip("10.0.0.2"), &h, &[]), ip("10.0.0.2"));
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let trusted = [
            parse_net("10.0.0.0/8").unwrap(),
            parse_net("192.0.2.1").unwrap(),
        ];
        // The client forged the first entry; the trusted proxies appended the rest.
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 198.51.100.4, 192.0.2.1")]);
        assert_eq!(client_ip(ip("10.0.0.2"), &h, &trusted), ip("198.51.100.4"));
        // Several headers are one list.
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "198.51.100.9"),
        ]);
        assert_eq!(client_ip(ip("10.0.0.2"), &h, &trusted), ip("198.51.100.9"));
        // No header: the peer itself.
        assert_eq!(
            client_ip(ip("10.0.0.2"), &HeaderMap::new(), &trusted),
            ip("10.0.0.2")
        );
    }

    #[test]
    fn forwarded_is_read_when_there_is_no_x_forwarded_for() {
        let trusted = [parse_net("127.0.0.1").unwrap()];
        let h = headers(&[(
            "forwarded",
            r#"for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711""#,
        )]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, &trusted),
            ip("2001:db8:cafe::17")
        );
        let h = headers(&[("forwarded", "for=198.51.100.17:8080")]);
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, &trusted),
            ip("198.51.100.17")
        );
    }

    #[test]
    fn mapped_ipv4_is_one_client() {
        assert_eq!(
            client_ip(ip("::ffff:10.1.2.3"), &HeaderMap::new(), &[]),
            ip("10.1.2.3")
        );
        assert!(parse_net("not an ip").is_err());
    }
}
