//! This host's own interface networks, for `subnet reserve --exclude-local`:
//! the subnets taken at the system level, which a reservation must skip.

use std::net::IpAddr;

use nix::ifaddrs::getifaddrs;
use nix::sys::socket::SockaddrStorage;

/// Every network of an address of this host's interfaces, as CIDR text with
/// the host bits cleared (`192.168.1.7/24` → `192.168.1.0/24`), each once.
pub fn local_networks() -> Result<Vec<String>, String> {
    let addrs = getifaddrs().map_err(|e| format!("cannot list this host's interfaces: {e}"))?;
    let mut out = Vec::new();
    for a in addrs {
        let (Some(address), Some(netmask)) = (a.address, a.netmask) else {
            continue;
        };
        let (Some(ip), Some(mask)) = (ip_of(&address), ip_of(&netmask)) else {
            continue;
        };
        if let Some(net) = network(ip, mask)
            && !out.contains(&net)
        {
            out.push(net);
        }
    }
    Ok(out)
}

fn ip_of(s: &SockaddrStorage) -> Option<IpAddr> {
    if let Some(v4) = s.as_sockaddr_in() {
        return Some(IpAddr::V4(v4.ip()));
    }
    s.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
}

/// The network of `ip` under `mask`, as CIDR text; None when the two are of
/// different families.
fn network(ip: IpAddr, mask: IpAddr) -> Option<String> {
    match (ip, mask) {
        (IpAddr::V4(ip), IpAddr::V4(mask)) => {
            let m = u32::from(mask);
            let net = std::net::Ipv4Addr::from(u32::from(ip) & m);
            Some(format!("{net}/{}", m.leading_ones()))
        }
        (IpAddr::V6(ip), IpAddr::V6(mask)) => {
            let m = u128::from(mask);
            let net = std::net::Ipv6Addr::from(u128::from(ip) & m);
            Some(format!("{net}/{}", m.leading_ones()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_bits_are_cleared() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            network(ip("192.168.1.7"), ip("255.255.255.0")).as_deref(),
            Some("192.168.1.0/24")
        );
        assert_eq!(
            network(ip("fd00::1:2"), ip("ffff:ffff:ffff:ffff::")).as_deref(),
            Some("fd00::/64")
        );
        assert_eq!(network(ip("10.0.0.1"), ip("ffff::")), None);
    }

    #[test]
    fn this_host_has_its_loopback_network() {
        assert!(
            local_networks()
                .unwrap()
                .contains(&"127.0.0.0/8".to_string())
        );
    }
}
