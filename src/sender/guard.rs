//! The address guard: hookd does not connect to private, loopback,
//! link-local, CGNAT, multicast or otherwise non-public addresses unless they
//! lie in `sender.allow_networks`. It checks the addresses a name resolves
//! to (a reqwest resolver), so DNS cannot smuggle a private address past it,
//! and IP literals in URLs before any connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

#[derive(Debug, Clone)]
pub struct Guard {
    allow: Arc<Vec<IpNet>>,
}

/// Why a name gave no usable address. Found again in reqwest's error chain
/// to classify the attempt's error.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("{0} resolves only to addresses hookd may not connect to")]
    Blocked(String),
    #[error("cannot resolve {host}: {message}")]
    Dns { host: String, message: String },
}

impl Guard {
    pub fn new(allow: Vec<IpNet>) -> Self {
        Self {
            allow: Arc::new(allow),
        }
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.allow.iter().any(|net| net.contains(&ip)) || is_public(ip)
    }
}

impl Resolve for Guard {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let resolved = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| {
                    Box::new(ResolveError::Dns {
                        host: host.clone(),
                        message: e.to_string(),
                    }) as Box<dyn std::error::Error + Send + Sync>
                })?;
            let permitted: Vec<SocketAddr> =
                resolved.filter(|addr| guard.permits(addr.ip())).collect();
            if permitted.is_empty() {
                return Err(Box::new(ResolveError::Blocked(host))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(permitted.into_iter()) as Addrs)
        })
    }
}

/// IPv4-mapped and IPv4-compatible IPv6 addresses are judged as the IPv4
/// address they carry.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0                                   // "this network"
        || (a == 100 && (64..=127).contains(&b))    // CGNAT 100.64.0.0/10
        || (a == 192 && b == 0 && c == 0)           // IETF protocol assignments
        || (a == 198 && (18..=19).contains(&b))     // benchmarking 198.18.0.0/15
        || a >= 240) // reserved 240.0.0.0/4
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    // Addresses that embed an IPv4 address are judged by it: NAT64
    // (64:ff9b::/96), IPv4-compatible (::/96) and 6to4 (2002::/16).
    if segments[0] == 0x64 && segments[1] == 0xff9b && segments[2..6] == [0, 0, 0, 0] {
        return is_public_v4(Ipv4Addr::from(
            ((segments[6] as u32) << 16) | segments[7] as u32,
        ));
    }
    if segments[0..6] == [0, 0, 0, 0, 0, 0] {
        return !ip.is_unspecified()
            && !ip.is_loopback()
            && is_public_v4(Ipv4Addr::from(
                ((segments[6] as u32) << 16) | segments[7] as u32,
            ));
    }
    if segments[0] == 0x2002 {
        return is_public_v4(Ipv4Addr::from(
            ((segments[1] as u32) << 16) | segments[2] as u32,
        ));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00            // unique local fc00::/7
        || (segments[0] & 0xffc0) == 0xfe80            // link-local fe80::/10
        || (segments[0] & 0xffc0) == 0xfec0            // site-local (deprecated)
        || (segments[0] == 0x2001 && segments[1] == 0xdb8) // documentation
        || (segments[0] == 0x2001 && segments[1] == 0)) // Teredo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(text: &str) -> bool {
        !Guard::new(Vec::new()).permits(text.parse().unwrap())
    }

    #[test]
    fn non_public_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
            "2001:db8::1",
        ] {
            assert!(blocked(ip), "{ip} should be blocked");
        }
    }

    #[test]
    fn public_addresses_are_permitted() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(!blocked(ip), "{ip} should be permitted");
        }
    }

    #[test]
    fn allow_networks_exempt_their_addresses_including_mapped_forms() {
        let guard = Guard::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(guard.permits("127.0.0.1".parse().unwrap()));
        assert!(guard.permits("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!guard.permits("::1".parse().unwrap()));
        assert!(!guard.permits("10.0.0.1".parse().unwrap()));
    }
}
