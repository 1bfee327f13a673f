//! The Redis clients `link` connects with: one server's (direct, or the
//! master Sentinel names) and a cluster's, each with `redis.ca_file`.

use std::time::Duration;

use super::DueError;
use crate::config::RedisSettings;

/// What `Link::connect` makes a `Conn` of: made and dropped at each connection,
/// so its size does not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Client {
    One(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// A client for the cluster whose seed nodes `redis.cluster` lists, with
/// `ca_file` as for one server. It never sends a command again by itself:
/// after a timeout or a dropped connection a script may have run already,
/// and a claim run twice by the client leaves the first run's leases to
/// expire unseen (a lease lasts a minute; they carry the same tag as the
/// second run's, so `lease::LostClaims` cannot tell them apart). A failure
/// reaches hookd, as with one server, and the client learns the new slot
/// map (after `MOVED`, a lost node) for the next command; after failures
/// that go on, `link` renews it.
pub(super) fn cluster_client(
    settings: &RedisSettings,
) -> Result<redis::cluster::ClusterClient, DueError> {
    cluster_client_with(settings, &[])
}

/// `cluster_client`, with `known` nodes (host, port) ahead of the seeds:
/// the nodes a live connection saw last, so that a renewal finds the
/// cluster when every seed is gone or hangs. Each is reached as the first
/// seed is (its scheme, user and password: a cluster's nodes share them).
pub(super) fn cluster_client_with(
    settings: &RedisSettings,
    known: &[(String, u16)],
) -> Result<redis::cluster::ClusterClient, DueError> {
    use redis::{ConnectionAddr, IntoConnectionInfo};
    let timeout = Duration::from_millis(settings.timeout_ms);
    let seeds = (settings.cluster.iter())
        .map(|node| node.expose().into_connection_info())
        .collect::<Result<Vec<_>, _>>()?;
    let like = |(host, port): &(String, u16)| {
        let first = seeds.first()?;
        let mut addr = first.addr().clone();
        match &mut addr {
            ConnectionAddr::Tcp(h, p)
            | ConnectionAddr::TcpTls {
                host: h, port: p, ..
            } => (*h, *p) = (host.clone(), *port),
            // A socket path names one machine's node, not a cluster's.
            _ => return None,
        }
        Some(first.clone().set_addr(addr))
    };
    let nodes: Vec<redis::ConnectionInfo> =
        known.iter().filter_map(like).chain(seeds.clone()).collect();
    // hookd bounds each call itself (a claim gets 4 × timeout_ms): the
    // client must not cut a claim short before that, or a claim Redis runs
    // anyway fails here (what it leased then waits for the next claim,
    // `lease::LostClaims`).
    let mut builder = redis::cluster::ClusterClient::builder(nodes)
        .connection_timeout(timeout)
        .response_timeout(timeout * 4)
        .retries(0);
    if !settings.ca_file.is_empty() {
        builder = builder.certs(private_ca(settings)?);
    }
    Ok(builder.build()?)
}

/// `redis.ca_file` as the only roots a `rediss://` server is verified
/// against.
fn private_ca(settings: &RedisSettings) -> Result<redis::TlsCertificates, DueError> {
    let pem = crate::config::read_ca_file(&settings.ca_file).map_err(|reason| {
        DueError::from(redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "redis.ca_file",
            reason,
        )))
    })?;
    Ok(redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    })
}

/// A client for one Redis server at `url`. `rediss://` verifies against the
/// bundled public roots, or only against `redis.ca_file` when it is set (a
/// private CA replaces the public roots: only it may vouch).
pub(super) fn client(url: &str, settings: &RedisSettings) -> Result<redis::Client, DueError> {
    if settings.ca_file.is_empty() {
        return Ok(redis::Client::open(url)?);
    }
    Ok(redis::Client::build_with_tls(url, private_ca(settings)?)?)
}

/// The nodes `CLUSTER SLOTS` names, each once: every range is `[start, end,
/// [host, port, id, …], replicas…]`. A node without an address of its own
/// (an empty host: the one that answered) is left out.
pub(super) fn nodes_in_slots(ranges: &[redis::Value]) -> Vec<(String, u16)> {
    let mut nodes = Vec::new();
    for range in ranges {
        let redis::Value::Array(fields) = range else {
            continue;
        };
        for node in fields.iter().skip(2) {
            let redis::Value::Array(node) = node else {
                continue;
            };
            let host = match node.first() {
                Some(redis::Value::BulkString(host)) => String::from_utf8_lossy(host).into_owned(),
                Some(redis::Value::SimpleString(host)) => host.clone(),
                _ => continue,
            };
            let Some(redis::Value::Int(port)) = node.get(1) else {
                continue;
            };
            let (Ok(port), false) = (u16::try_from(*port), host.is_empty() || host == "?") else {
                continue;
            };
            if !nodes.contains(&(host.clone(), port)) {
                nodes.push((host, port));
            }
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, port: i64) -> redis::Value {
        redis::Value::Array(vec![
            redis::Value::BulkString(host.into()),
            redis::Value::Int(port),
            redis::Value::BulkString(b"id".to_vec()),
        ])
    }

    #[test]
    fn the_nodes_of_a_slot_map_are_each_masters_and_replicas_once() {
        let ranges = [
            redis::Value::Array(vec![
                redis::Value::Int(0),
                redis::Value::Int(5460),
                node("10.0.0.1", 7000),
                node("10.0.0.4", 7003),
            ]),
            redis::Value::Array(vec![
                redis::Value::Int(5461),
                redis::Value::Int(10922),
                node("10.0.0.2", 7001),
            ]),
            redis::Value::Array(vec![
                redis::Value::Int(10923),
                redis::Value::Int(16383),
                node("10.0.0.1", 7000),
                node("", 7005),
                node("?", 7006),
            ]),
            redis::Value::Int(3),
        ];
        assert_eq!(
            nodes_in_slots(&ranges),
            [
                ("10.0.0.1".to_string(), 7000),
                ("10.0.0.4".to_string(), 7003),
                ("10.0.0.2".to_string(), 7001),
            ]
        );
    }
}
