//! Redis's `maxmemory-policy` on each master, for the warning that it may
//! evict hookd's due index (`/readyz`'s warnings, `hookd config check`).

/// `maxmemory_policy` in the answer to `INFO memory`.
fn policy_in(info: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.strip_prefix("maxmemory_policy:"))
        .map(|policy| policy.trim().to_string())
}

/// One master's `maxmemory-policy`; `node` is its address on a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePolicy {
    pub node: Option<String>,
    pub policy: String,
}

/// The policies in the answer to `INFO memory` sent as one command: one
/// server's text, or a cluster's map of each master's address to its text.
pub(crate) fn policies_in(answer: &redis::Value) -> Vec<NodePolicy> {
    let text = |value: &redis::Value| redis::from_redis_value_ref::<String>(value).ok();
    match answer {
        redis::Value::Map(nodes) => nodes
            .iter()
            .filter_map(|(node, info)| {
                Some(NodePolicy {
                    node: text(node),
                    policy: policy_in(&text(info)?)?,
                })
            })
            .collect(),
        single => text(single)
            .and_then(|info| policy_in(&info))
            .map(|policy| NodePolicy { node: None, policy })
            .into_iter()
            .collect(),
    }
}

/// The warnings for the masters whose policy may evict the index, naming
/// the master on a cluster.
pub(crate) fn policy_warnings(policies: &[NodePolicy]) -> Vec<String> {
    policies
        .iter()
        .filter_map(|policy| {
            let warning = policy_warning(&policy.policy)?;
            Some(match &policy.node {
                Some(node) => format!("{warning} (master {node})"),
                None => warning,
            })
        })
        .collect()
}

/// The warning for a `maxmemory-policy` that may evict the index.
fn policy_warning(policy: &str) -> Option<String> {
    (policy != "noeviction").then(|| {
        format!(
            "Redis maxmemory-policy is {policy}: it may evict hookd's due index; set it to noeviction"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn info(policy: &str) -> Value {
        let text = format!("# Memory\r\nused_memory:1\r\nmaxmemory_policy:{policy}\r\n");
        Value::BulkString(text.into_bytes())
    }

    #[test]
    fn one_servers_policy_is_read_from_its_text() {
        let policies = policies_in(&info("allkeys-lru"));
        assert_eq!(
            policies,
            [NodePolicy {
                node: None,
                policy: "allkeys-lru".into()
            }]
        );
        assert_eq!(
            policy_warnings(&policies),
            ["Redis maxmemory-policy is allkeys-lru: it may evict hookd's due index; set it to noeviction"]
        );
        assert!(policy_warnings(&policies_in(&info("noeviction"))).is_empty());
    }

    #[test]
    fn every_master_of_a_cluster_is_read_and_each_evicting_one_named() {
        let node = |addr: &str| Value::BulkString(addr.as_bytes().to_vec());
        let answer = Value::Map(vec![
            (node("127.0.0.1:7000"), info("noeviction")),
            (node("127.0.0.1:7001"), info("volatile-lru")),
            (node("127.0.0.1:7002"), info("noeviction")),
        ]);
        let warnings = policy_warnings(&policies_in(&answer));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("volatile-lru")
                && warnings[0].ends_with("(master 127.0.0.1:7001)"),
            "{warnings:?}"
        );
    }
}
