//! Who may talk to the control rooms: the token rules for a listening address, the one bearer
//! check of the HTTP API and the `AUTH` line of the command port, both over one constant-time
//! compare.
//!
//! It owns the rules and the comparison. It must never log, echo or time-leak a token, and
//! never let an address off loopback listen without one.

use std::net::SocketAddr;

use hyper::header::{self, HeaderMap, HeaderValue};

use super::{ControlError, ControlOptions};

/// The token the options ask for, checked: any token must be sendable in a header, and an
/// address off loopback must have one.
pub(super) fn checked_token(opts: &ControlOptions) -> Result<Option<String>, ControlError> {
    token_for(opts.addr, opts.token.as_ref())
}

/// As [`checked_token`], for any listener.
pub(super) fn token_for(
    addr: SocketAddr,
    token: Option<&String>,
) -> Result<Option<String>, ControlError> {
    match token {
        Some(t) if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) => {
            Err(ControlError::BadToken)
        }
        Some(t) => Ok(Some(t.clone())),
        // `to_canonical`: an IPv4-mapped ::ffff:127.0.0.1 is loopback too.
        None if addr.ip().to_canonical().is_loopback() => Ok(None),
        None => Err(ControlError::NeedsToken(addr)),
    }
}

/// Whether the request carries `Authorization: Bearer TOKEN` with the right token.
pub(super) fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes)
    else {
        return false;
    };
    // RFC 6750: the scheme name is case-insensitive; the credentials follow one or more spaces.
    let Some(space) = given.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (scheme, rest) = given.split_at(space);
    let credentials = rest.trim_ascii();
    scheme.eq_ignore_ascii_case(b"bearer") & same_secret(credentials, token.as_bytes())
}

/// Compares in time that depends on the lengths only, never on where the first difference
/// is: a timing side channel must not let a client guess the token byte by byte.
pub(super) fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, &e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(!e);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    #[test]
    fn loopback_needs_no_token_but_anything_else_does() {
        let check = |addr: &str, token: Option<&str>| {
            checked_token(&ControlOptions {
                addr: addr.parse().expect("addr"),
                token: token.map(str::to_string),
            })
        };
        assert!(matches!(check("127.0.0.1:0", None), Ok(None)));
        assert!(matches!(check("127.9.9.9:0", None), Ok(None)));
        assert!(matches!(check("[::1]:0", None), Ok(None)));
        assert!(matches!(check("[::ffff:127.0.0.1]:0", None), Ok(None)));
        for addr in [
            "0.0.0.0:7000",
            "192.0.2.1:80",
            "[::]:0",
            "[::ffff:10.0.0.1]:1",
        ] {
            assert!(
                matches!(check(addr, None), Err(ControlError::NeedsToken(a)) if a.to_string() == addr),
                "{addr}"
            );
            assert!(matches!(check(addr, Some("s3cret")), Ok(Some(t)) if t == "s3cret"));
        }
        assert!(matches!(check("127.0.0.1:0", Some("tok")), Ok(Some(_))));
    }

    #[test]
    fn empty_or_unsendable_tokens_are_refused() {
        for bad in ["", "two words", "tab\there", "new\nline", "caf\u{e9}"] {
            let opts = ControlOptions {
                addr: loopback(),
                token: Some(bad.to_string()),
            };
            assert!(
                matches!(checked_token(&opts), Err(ControlError::BadToken)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bearer_token_must_match_exactly() {
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("header value"),
            );
            bearer_matches(&h, "s3cret")
        };
        assert!(with("Bearer s3cret"));
        assert!(with("bearer s3cret"));
        assert!(with("BEARER   s3cret "));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3crett",
            "Bearer S3CRET",
            "Bearer ",
            "Bearer",
            "Basic s3cret",
            "s3cret",
            "Bearers3cret",
            "Token s3cret",
        ] {
            assert!(!with(wrong), "{wrong:?}");
        }
        assert!(!bearer_matches(&HeaderMap::new(), "s3cret"));
    }

    #[test]
    fn secrets_compare_equal_only_when_identical() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(same_secret(b"", b""));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"abcd", b"abc"));
        assert!(!same_secret(b"", b"abc"));
        // A byte that is the complement of the expected one must not pass for a missing byte.
        assert!(!same_secret(&[!b'a'], b"a"));
    }
}
