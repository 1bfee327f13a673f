//! The address guard: hookd does not connect to private, loopback,
//! link-local, CGNAT, multicast or otherwise non-public addresses unless they
//! lie in `sender.allow_networks`. It checks the addresses a name resolves
//! to when the sender's client connects, so DNS cannot smuggle a private
//! address past it, and IP literals in URLs before any connection. Only
//! global unicast is public: IPv6 outside 2000::/3 and the special ranges
//! inside it are refused; addresses that carry an IPv4 address (mapped,
//! translated, NAT64, 6to4, Teredo) are judged by that address. A
//! per-notification URL goes through a narrowed guard, which allows only
//! the entries of `sender.allow_networks` that the endpoint's own URL lies
//! in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use url::Url;

#[derive(Debug, Clone)]
pub struct Guard {
    allow: Arc<Vec<IpNet>>,
}

/// Why a name gave no usable address.
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

    /// Whether any network is allowed beyond the public ones.
    pub fn allows_networks(&self) -> bool {
        !self.allow.is_empty()
    }

    /// The entries of `sender.allow_networks` (by position) that hold `ip`.
    pub fn networks_of(&self, ip: IpAddr) -> Networks {
        let ip = canonical(ip);
        let mut networks = Networks::default();
        for (index, net) in self.allow.iter().enumerate() {
            if net.contains(&ip) {
                networks.0.push(index);
            }
        }
        networks
    }

    /// The entries of `sender.allow_networks` that `url`'s host lies in
    /// now: its literal address's, or those of every address its name
    /// resolves to.
    pub async fn networks_of_url(&self, url: &Url) -> std::io::Result<Networks> {
        let mut networks = Networks::default();
        for ip in addresses(url).await? {
            networks.add(&self.networks_of(ip));
        }
        Ok(networks)
    }

    /// The addresses `host` resolves to that this guard permits, with
    /// `port`: looked up when a connection opens, so a name that changes
    /// its answer (DNS rebinding) is vetted again each time.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
        let resolved =
            tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| ResolveError::Dns {
                    host: host.to_string(),
                    message: e.to_string(),
                })?;
        let permitted: Vec<SocketAddr> = resolved.filter(|addr| self.permits(addr.ip())).collect();
        if permitted.is_empty() {
            return Err(ResolveError::Blocked(host.to_string()));
        }
        Ok(permitted)
    }

    /// A guard that admits public addresses and those of the given entries
    /// only: where a per-notification URL may go, `networks` being the
    /// entries the endpoint's own URL lies in.
    pub fn narrowed(&self, networks: &Networks) -> Guard {
        let allow = networks
            .0
            .iter()
            .filter_map(|&i| self.allow.get(i).copied());
        Guard::new(allow.collect())
    }
}

/// Entries of `sender.allow_networks`, by position, ascending and distinct.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Networks(Vec<usize>);

impl Networks {
    pub fn add(&mut self, other: &Networks) {
        self.0.extend(&other.0);
        self.0.sort_unstable();
        self.0.dedup();
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The addresses `url`'s host stands for now: its literal, or what its
/// name resolves to.
pub async fn addresses(url: &Url) -> std::io::Result<Vec<IpAddr>> {
    let host = match url.host() {
        Some(url::Host::Ipv4(ip)) => return Ok(vec![ip.into()]),
        Some(url::Host::Ipv6(ip)) => return Ok(vec![ip.into()]),
        Some(url::Host::Domain(name)) => name,
        None => return Ok(Vec::new()),
    };
    let port = url.port_or_known_default().unwrap_or(0);
    let resolved = tokio::net::lookup_host((host, port)).await?;
    Ok(resolved.map(|addr| addr.ip()).collect())
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
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    // Only global unicast (2000::/3) is public. Outside it lie loopback,
    // unspecified, discard-only 100::/64, SRv6 5f00::/16, unique local
    // fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast, and
    // NAT64 local-use 64:ff9b:1::/48: a site's own translator, whose prefix
    // length (and so where the IPv4 address sits, RFC 6052) hookd cannot
    // know, so it is refused whole.
    let global_unicast = (s[0] & 0xe000) == 0x2000;
    // IETF protocol assignments 2001::/23 (benchmarking, ORCHID, anycast
    // services; Teredo, 2001::/32, was decoded above).
    let protocol_assignment = s[0] == 0x2001 && s[1] < 0x0200;
    let documentation = (s[0] == 0x2001 && s[1] == 0x0db8) // 2001:db8::/32
        || (s[0] == 0x3fff && s[1] < 0x1000); // 3fff::/20 (RFC 9637)
    global_unicast && !protocol_assignment && !documentation
}

/// The IPv4 address that decides where a packet to `ip` really goes, for
/// the forms that carry one: IPv4-mapped ::ffff:0:0/96, IPv4-translated
/// ::ffff:0:0:0/96, IPv4-compatible ::/96 (which also covers :: and ::1),
/// NAT64 well-known 64:ff9b::/96, 6to4 2002::/16 and Teredo 2001::/32
/// (whose client address is stored inverted).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    let is_mapped = s[0..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff;
    let is_translated = s[0..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0;
    let is_compatible = s[0..6] == [0, 0, 0, 0, 0, 0];
    let is_nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0];
    if is_mapped || is_translated || is_compatible || is_nat64 {
        return Some(v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(v4(s[1], s[2]));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        // Teredo: the server's address, then flags and port, then the
        // client's address inverted. Both must be public.
        let server = v4(s[2], s[3]);
        if !is_public_v4(server) {
            return Some(server);
        }
        return Some(v4(!s[6], !s[7]));
    }
    None
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
            // Issue #18: forms that used to pass.
            "64:ff9b:1::7f00:1",
            "64:ff9b:1:0:808:8:800::",
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "100::1",
            "3fff::1",
            "3fff:fff:ffff::1",
            "5f00::1",
            "fec0::1",
            "ff0e::1",
            "2001:2::1",
            "2001:10::1",
            "2001:1::1",
            "2002:7f00:1::1",
            "2002::1",
            // Teredo: server 65.54.227.120, client 127.0.0.1 (inverted).
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            // Teredo: server 10.0.0.1, client 8.8.8.8.
            "2001:0:a00:1:8000:63bf:f7f7:f7f7",
            "4000::1",
            "::ffff:0:0",
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
            "::ffff:0:808:808",
            "2002:808:808::1",
            "2001:4860:4860::8888",
            "3fff:1000::1",
            "2001:200::1",
            // Teredo: server 65.54.227.120, client 8.8.8.8 (inverted).
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
        ] {
            assert!(!blocked(ip), "{ip} should be permitted");
        }
    }

    #[test]
    fn a_narrowed_guard_admits_only_the_entries_it_keeps() {
        let nets = ["127.0.0.1/32", "127.0.0.2/32", "10.0.0.0/8"];
        let guard = Guard::new(nets.iter().map(|n| n.parse().unwrap()).collect());
        let of = |ip: &str| guard.networks_of(ip.parse().unwrap());
        assert_eq!(of("127.0.0.1"), Networks(vec![0]));
        assert_eq!(of("::ffff:10.1.2.3"), Networks(vec![2]));
        assert!(of("8.8.8.8").is_empty());
        let narrow = guard.narrowed(&of("127.0.0.1"));
        assert!(narrow.permits("127.0.0.1".parse().unwrap()));
        assert!(!narrow.permits("127.0.0.2".parse().unwrap()));
        assert!(!narrow.permits("10.1.2.3".parse().unwrap()));
        assert!(narrow.permits("8.8.8.8".parse().unwrap()));
        let public = guard.narrowed(&Networks::default());
        assert!(!public.permits("127.0.0.1".parse().unwrap()));
        assert!(!public.allows_networks());
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
