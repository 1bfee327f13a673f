use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::*;

const KEY: &[u8] = b"portal-key-0123456789abcdefghijklmnop";

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_764_000_000, 0).unwrap()
}

fn endpoint_claims() -> PortalClaims {
    PortalClaims {
        permissions: Default::default(),
        scope: PortalScope::Endpoint(
            Uuid::parse_str("01a2018b-9ae4-7000-85bb-4e0096803faa").unwrap(),
        ),
        expires_at: now() + Duration::hours(1),
        generation: 0,
    }
}

/// The token's payload and signature, decoded.
fn parts(token: &str) -> (String, Vec<u8>) {
    let rest = token.strip_prefix(PORTAL_TOKEN_PREFIX).unwrap();
    let (payload, signature) = rest.rsplit_once('.').unwrap();
    (
        String::from_utf8(URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap(),
        URL_SAFE_NO_PAD.decode(signature).unwrap(),
    )
}

fn assemble(payload: &str, signature: &[u8]) -> String {
    format!(
        "{PORTAL_TOKEN_PREFIX}{}.{}",
        URL_SAFE_NO_PAD.encode(payload),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

#[test]
fn a_signed_token_verifies_to_its_claims() {
    for claims in [
        endpoint_claims(),
        PortalClaims {
            permissions: Default::default(),
            scope: PortalScope::Owner("merchant-42".into()),
            expires_at: now() + Duration::days(7),
            generation: 0,
        },
    ] {
        let token = sign(KEY, &claims);
        assert!(token.starts_with(PORTAL_TOKEN_PREFIX));
        assert_eq!(verify(KEY, &token, now()), Ok(claims));
    }
}

#[test]
fn a_token_is_refused_once_it_expires() {
    let token = sign(KEY, &endpoint_claims());
    let expiry = endpoint_claims().expires_at;
    assert!(verify(KEY, &token, expiry - Duration::seconds(1)).is_ok());
    assert_eq!(verify(KEY, &token, expiry), Err(TokenError::Expired));
    assert_eq!(
        verify(KEY, &token, expiry + Duration::days(30)),
        Err(TokenError::Expired)
    );
}

#[test]
fn a_token_from_another_key_is_refused() {
    let token = sign(KEY, &endpoint_claims());
    let rotated = b"portal-key-rotated-0123456789abcdefghij";
    assert_eq!(
        verify(rotated, &token, now()),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn changing_any_part_of_the_payload_breaks_the_signature() {
    let token = sign(KEY, &endpoint_claims());
    let (payload, signature) = parts(&token);
    let expiry = endpoint_claims().expires_at.timestamp();
    for forged in [
        // Another endpoint.
        payload.replace("01a2018b", "01a2018c"),
        // Later.
        payload.replace(&expiry.to_string(), &(expiry + 3600).to_string()),
        // An owner instead.
        payload.replacen('e', "o", 1),
    ] {
        assert_ne!(forged, payload);
        assert_eq!(
            verify(KEY, &assemble(&forged, &signature), now()),
            Err(TokenError::BadSignature),
            "{forged}"
        );
    }
}

#[test]
fn flipping_any_byte_of_the_token_is_refused() {
    let token = sign(KEY, &endpoint_claims());
    for at in 0..token.len() {
        let mut bytes = token.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        if tampered == token {
            continue;
        }
        assert!(
            verify(KEY, &tampered, now()).is_err(),
            "byte {at} of {token}"
        );
    }
}

#[test]
fn truncated_and_garbage_tokens_are_refused() {
    let token = sign(KEY, &endpoint_claims());
    for end in 0..token.len() {
        assert!(verify(KEY, &token[..end], now()).is_err(), "{end}");
    }
    for garbage in [
        "",
        "hookd_portal_",
        "hookd_portal_.",
        "hookd_portal_..",
        "hookd_portal_abc",
        "hookd_portal_!!!.???",
        "Bearer hookd_portal_x.y",
        "hkc_0123456789abcdef",
    ] {
        assert!(verify(KEY, garbage, now()).is_err(), "{garbage}");
    }
}

#[test]
fn a_signed_payload_that_does_not_parse_is_malformed() {
    // Signed with the right key (as a forger with the key could), yet not
    // a payload hookd writes: refused all the same.
    for payload in [
        "x.1764003600.01a2018b-9ae4-7000-85bb-4e0096803faa",
        "e.soon.01a2018b-9ae4-7000-85bb-4e0096803faa",
        "e.1764003600.not-a-uuid",
        "o.1764003600.",
        "o.1764003600.has space",
        "e.1764003600",
    ] {
        let encoded = URL_SAFE_NO_PAD.encode(payload);
        let signature = mac(KEY, &encoded).finalize().into_bytes();
        assert_eq!(
            verify(KEY, &assemble(payload, &signature), now()),
            Err(TokenError::Malformed),
            "{payload}"
        );
    }
}

#[test]
fn an_oversize_token_is_refused_before_any_work() {
    let token = format!("{PORTAL_TOKEN_PREFIX}{}", "A".repeat(MAX_TOKEN_BYTES));
    assert_eq!(verify(KEY, &token, now()), Err(TokenError::TooLong));
    // The longest a valid owner can make still fits.
    let longest = sign(
        KEY,
        &PortalClaims {
            permissions: Default::default(),
            scope: PortalScope::Owner("o".repeat(128)),
            expires_at: now() + Duration::days(7),
            generation: 0,
        },
    );
    assert!(longest.len() <= MAX_TOKEN_BYTES, "{}", longest.len());
    assert!(verify(KEY, &longest, now()).is_ok());
}

#[test]
fn an_expiry_beyond_the_longest_lifetime_is_refused() {
    let claims = PortalClaims {
        expires_at: now() + Duration::days(8),
        ..endpoint_claims()
    };
    assert_eq!(
        verify(KEY, &sign(KEY, &claims), now()),
        Err(TokenError::TooFarAhead)
    );
}

#[test]
fn lifetimes_run_from_a_second_to_seven_days() {
    assert!(valid_lifetime(1));
    assert!(valid_lifetime(DEFAULT_LIFETIME_SECONDS));
    assert!(valid_lifetime(604_800));
    for bad in [0, -1, 604_801, i64::MAX] {
        assert!(!valid_lifetime(bad), "{bad}");
    }
}

#[test]
fn an_endpoint_link_carries_the_generation_it_was_issued_in() {
    let claims = PortalClaims {
        generation: 3,
        ..endpoint_claims()
    };
    let token = sign(KEY, &claims);
    assert!(parts(&token).0.ends_with(".3"), "{}", parts(&token).0);
    assert_eq!(verify(KEY, &token, now()), Ok(claims));
    // Generation 0 is written as links were before revocation existed.
    assert!(!parts(&sign(KEY, &endpoint_claims())).0.ends_with(".0"));
}

#[test]
fn an_owner_link_carries_the_generation_it_was_issued_in_after_its_uid() {
    // A uid may hold a `.`: the generation follows a `~`, which none holds.
    let owner = |generation| PortalClaims {
        scope: PortalScope::Owner("merchant.42".into()),
        generation,
        ..endpoint_claims()
    };
    let token = sign(KEY, &owner(3));
    assert!(
        parts(&token).0.ends_with(".merchant.42~3"),
        "{}",
        parts(&token).0
    );
    assert_eq!(verify(KEY, &token, now()), Ok(owner(3)));
    // Generation 0 is written as links were before owners had one.
    let before = sign(KEY, &owner(0));
    assert!(
        parts(&before).0.ends_with(".merchant.42"),
        "{}",
        parts(&before).0
    );
    assert_eq!(verify(KEY, &before, now()), Ok(owner(0)));
}

#[test]
fn a_link_carries_its_permissions_and_the_default_is_written_as_before() {
    let read_only = PortalPermissions {
        retry: false,
        manage: false,
    };
    let manage = PortalPermissions {
        retry: true,
        manage: true,
    };
    for (permissions, kind) in [
        (PortalPermissions::default(), "e."),
        (read_only, "er."),
        (manage, "ertm."),
    ] {
        let claims = PortalClaims {
            permissions,
            ..endpoint_claims()
        };
        let token = sign(KEY, &claims);
        assert!(parts(&token).0.starts_with(kind), "{}", parts(&token).0);
        assert_eq!(verify(KEY, &token, now()), Ok(claims));
    }
    let owner = PortalClaims {
        scope: PortalScope::Owner("merchant-42".into()),
        permissions: manage,
        expires_at: now() + Duration::hours(1),
        generation: 0,
    };
    let token = sign(KEY, &owner);
    assert!(parts(&token).0.starts_with("ortm."));
    assert_eq!(verify(KEY, &token, now()), Ok(owner));
}

#[test]
fn a_kind_with_letters_out_of_order_twice_or_unknown_is_malformed() {
    let expiry = (now() + Duration::hours(1)).timestamp();
    let id = "01a2018b-9ae4-7000-85bb-4e0096803faa";
    // `ert` is the default's second spelling: only the bare kind is it.
    for kind in [
        "ert", "etm", "emr", "ertt", "erx", "em", "x", "\u{e9}", "er\u{e9}",
    ] {
        let payload = URL_SAFE_NO_PAD.encode(format!("{kind}.{expiry}.{id}"));
        let signature = mac(KEY, &payload).finalize().into_bytes();
        let token = format!(
            "{PORTAL_TOKEN_PREFIX}{payload}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        );
        assert_eq!(
            verify(KEY, &token, now()),
            Err(TokenError::Malformed),
            "{kind}"
        );
    }
}

#[test]
fn permissions_are_named_as_the_api_takes_them() {
    assert_eq!(
        PortalPermissions::from_names(&["read", "retry"]),
        Some(PortalPermissions::default())
    );
    let all = PortalPermissions::from_names(&["manage", "read", "retry"]).unwrap();
    assert_eq!(all.names(), ["read", "retry", "manage"]);
    assert_eq!(
        PortalPermissions::from_names(&["read"]).unwrap().names(),
        ["read"]
    );
    for bad in [
        &[][..],
        &["retry"][..],
        &["read", "read"][..],
        &["read", "admin"][..],
        &["READ"][..],
    ] {
        assert_eq!(PortalPermissions::from_names(bad), None, "{bad:?}");
    }
}
