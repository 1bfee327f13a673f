//! The endpoints an event names instead of fanning out to every
//! subscriber of its owner.

use uuid::Uuid;

use super::MAX_NAMED_ENDPOINTS;
use crate::domain::problem::{shown, ErrorCode, Problem};
use crate::service::lookup::Resolved;
use crate::store::endpoints::EndpointRef;

/// The endpoints an event names (`endpoints`), each an endpoint of the
/// event's `owner`, as ids without repeats; a problem naming the first
/// that is not.
pub(super) fn named_ids(
    names: &[String],
    named: &Resolved,
    owner: Option<&str>,
) -> Result<Vec<Uuid>, Problem> {
    if names.len() > MAX_NAMED_ENDPOINTS {
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            "endpoints",
            format!("an event names at most {MAX_NAMED_ENDPOINTS} endpoints"),
        ));
    }
    // An empty list would fan out to nobody and still answer 201: most
    // likely a producer's bug that would look like delivery.
    if names.is_empty() {
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            "endpoints",
            "names no endpoint: name at least one, or leave `endpoints` out to reach \
             every subscribed endpoint of the owner",
        ));
    }
    let mut ids = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let endpoint = named.get(&EndpointRef::parse(name)).ok_or_else(|| {
            Problem::invalid(
                ErrorCode::UnknownEndpoint,
                format!("endpoints[{i}]"),
                format!("no endpoint has id or uid `{}`", shown(name)),
            )
        })?;
        if endpoint.owner.as_deref() != owner {
            return Err(Problem::invalid(
                ErrorCode::OwnerMismatch,
                format!("endpoints[{i}]"),
                format!(
                    "endpoint `{}` does not belong to the event's owner",
                    shown(name)
                ),
            ));
        }
        ids.push(endpoint.id);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}
