//! The one normal form of a URL that the seen set, scope checks and every comparison use.
//!
//! Two spellings of the same resource must map to one key, or the crawl fetches it twice
//! (invariant 3). The rules are deliberately few: every rule here is one that a server cannot
//! tell apart (RFC 3986 section 6.2.2), so applying it never changes which document is fetched.
//! Anything a server may treat differently (query order, `index.html`, path case, trailing
//! slashes) is left alone. This module is pure: it never does I/O.

use std::borrow::Cow;

use url::Url;

/// Rewrites `url` in place into its canonical form.
///
/// - the fragment is removed (it never reaches the server);
/// - scheme and host are lowercased and the default port is dropped (the `url` parser already
///   does this for http and https; the tests pin it);
/// - in path and query, `%XX` escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`) are
///   decoded and the hex digits of every other escape are uppercased (an unreserved escape
///   stays encoded where decoding it would form a new escape with a stray `%` before it);
/// - an empty path becomes `/` (only for URLs that have a host: `mailto:` and friends have no
///   hierarchical path).
///
/// Idempotent: canonicalizing a canonical URL leaves it unchanged.
pub fn canonicalize(url: &mut Url) {
    url.set_fragment(None);

    // A URL with a host and an empty path only occurs for non-special schemes; http(s) always
    // gets "/" from the parser.
    if url.has_host() && url.path().is_empty() {
        url.set_path("/");
    }

    // Decoding can never produce a dot segment: the parser already treats `%2e` and `%2E` as
    // `.` when it removes dot segments, so what is left of them is part of a longer segment.
    // Nor can it produce a character `set_path` would re-encode: only unreserved ones are
    // decoded.
    if let Cow::Owned(path) = normalize_escapes(url.path()) {
        url.set_path(&path);
    }
    if let Some(query) = url.query()
        && let Cow::Owned(query) = normalize_escapes(query)
    {
        url.set_query(Some(&query));
    }
}

/// Returns a canonicalized copy, for callers that hold a borrowed URL.
pub fn canonical(url: &Url) -> Url {
    let mut url = url.clone();
    canonicalize(&mut url);
    url
}

/// Decodes escapes of unreserved characters and uppercases the others; borrows when nothing
/// changes, which is the common case, so canonical URLs cost no allocation.
fn normalize_escapes(input: &str) -> Cow<'_, str> {
    let bytes = input.as_bytes();
    // Most URLs have no escape at all: one vectorized search says so.
    let Some(first) = memchr::memchr(b'%', bytes) else {
        return Cow::Borrowed(input);
    };
    let needs_work = bytes[first..].windows(3).any(|w| {
        w[0] == b'%'
            && match (hex_value(w[1]), hex_value(w[2])) {
                (Some(hi), Some(lo)) => {
                    is_unreserved(hi << 4 | lo)
                        || w[1].is_ascii_lowercase()
                        || w[2].is_ascii_lowercase()
                }
                _ => false,
            }
    });
    if !needs_work {
        return Cow::Borrowed(input);
    }

    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2]))
        {
            let decoded = hi << 4 | lo;
            if is_unreserved(decoded) && !completes_escape(&out, decoded) {
                out.push(char::from(decoded));
            } else {
                out.push('%');
                out.push(char::from(bytes[i + 1].to_ascii_uppercase()));
                out.push(char::from(bytes[i + 2].to_ascii_uppercase()));
            }
            i += 3;
            continue;
        }
        // Copy the run up to the next '%' in one go; the run is valid UTF-8 because '%' is
        // ASCII and cannot split a multi-byte character.
        let end = bytes[i + 1..]
            .iter()
            .position(|&b| b == b'%')
            .map_or(bytes.len(), |p| i + 1 + p);
        out.push_str(&input[i..end]);
        i = end;
    }
    Cow::Owned(out)
}

/// True if appending `decoded` to `out` would form a new `%XX` with a stray `%` before it
/// (`%%41` would become `%A`, then `%A` plus a following hex digit an escape), which the next
/// pass would decode again: such escapes stay encoded, which keeps canonicalization
/// idempotent.
fn completes_escape(out: &str, decoded: u8) -> bool {
    let tail = out.as_bytes();
    decoded.is_ascii_hexdigit()
        && (tail.ends_with(b"%") || matches!(tail, [.., b'%', h] if h.is_ascii_hexdigit()))
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// RFC 3986 section 2.3.
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(input: &str) -> String {
        let mut url = Url::parse(input).expect("test URL parses");
        canonicalize(&mut url);
        url.to_string()
    }

    #[test]
    fn fragment_is_removed() {
        assert_eq!(canon("http://example.com/a#top"), "http://example.com/a");
        assert_eq!(
            canon("http://example.com/a?q=1#"),
            "http://example.com/a?q=1"
        );
    }

    #[test]
    fn scheme_and_host_are_lowercased() {
        assert_eq!(canon("HTTP://Example.COM/Path"), "http://example.com/Path");
    }

    #[test]
    fn default_port_is_removed_and_others_kept() {
        assert_eq!(canon("http://example.com:80/"), "http://example.com/");
        assert_eq!(canon("https://example.com:443/"), "https://example.com/");
        assert_eq!(canon("http://example.com:443/"), "http://example.com:443/");
        assert_eq!(
            canon("https://example.com:8443/"),
            "https://example.com:8443/"
        );
    }

    #[test]
    fn empty_path_becomes_slash() {
        assert_eq!(canon("http://example.com"), "http://example.com/");
        assert_eq!(canon("http://example.com?q"), "http://example.com/?q");
        assert_eq!(canon("foo://example.com"), "foo://example.com/");
    }

    #[test]
    fn url_without_host_keeps_its_path() {
        assert_eq!(canon("mailto:a@example.com"), "mailto:a@example.com");
    }

    #[test]
    fn unreserved_escapes_are_decoded_in_path() {
        assert_eq!(
            canon("http://example.com/%41%62%2D%2e%5F%7e%30"),
            "http://example.com/Ab-._~0"
        );
    }

    #[test]
    fn unreserved_escapes_are_decoded_in_query() {
        assert_eq!(
            canon("http://example.com/?q=%61%7E&r=%2D"),
            "http://example.com/?q=a~&r=-"
        );
    }

    #[test]
    fn reserved_escapes_are_kept_with_uppercase_hex() {
        assert_eq!(
            canon("http://example.com/a%2fb%3f?x=%2f%3d%e9"),
            "http://example.com/a%2Fb%3F?x=%2F%3D%E9"
        );
    }

    #[test]
    fn invalid_escapes_are_left_alone() {
        assert_eq!(
            canon("http://example.com/%zz%4"),
            "http://example.com/%zz%4"
        );
    }

    #[test]
    fn decoding_never_forms_a_new_escape_with_a_stray_percent() {
        assert_eq!(canon("http://example.com/%%41"), "http://example.com/%%41");
        assert_eq!(
            canon("http://example.com/%4%31"),
            "http://example.com/%4%31"
        );
        assert_eq!(canon("http://example.com/%%7e"), "http://example.com/%~");
    }

    #[test]
    fn decoded_dot_segments_were_already_resolved_by_the_parser() {
        assert_eq!(
            canon("http://example.com/a/%2E%2e/b"),
            "http://example.com/b"
        );
        assert_eq!(
            canon("http://example.com/a/%2Ex"),
            "http://example.com/a/.x"
        );
    }

    #[test]
    fn nothing_else_changes() {
        let input = "http://example.com/Dir/index.html?b=2&a=1&a=1";
        assert_eq!(canon(input), input);
        assert_eq!(canon("http://example.com/dir/"), "http://example.com/dir/");
        assert_eq!(canon("http://example.com/?"), "http://example.com/?");
    }

    #[test]
    fn non_ascii_is_left_percent_encoded_by_the_parser() {
        assert_eq!(canon("http://example.com/é"), "http://example.com/%C3%A9");
    }

    #[test]
    fn canonicalize_is_idempotent() {
        let inputs = [
            "HTTP://Example.COM:80/%7euser/%2fa%41?Q=%3d%61#frag",
            "http://example.com/%25%32%35",
            "https://[::1]:443/a%2e%2e/b",
            "foo://Host",
            "http://example.com/a%2Eb%zz%",
        ];
        for input in inputs {
            let once = canon(input);
            assert_eq!(canon(&once), once, "input {input}");
        }
    }

    #[test]
    fn canonicalize_is_idempotent_over_generated_paths_and_queries() {
        let pieces = [
            "%41", "%2f", "%2F", "%7e", "%25", "%", "a", "/", "?", "#", "%e9", "%zz", ".", "%2e",
        ];
        // Every sequence of four pieces, enumerated as the digits of a base-14 number.
        for n in 0..pieces.len().pow(4) {
            let mut input = String::from("http://Example.com/");
            let mut rest = n;
            for _ in 0..4 {
                input.push_str(pieces[rest % pieces.len()]);
                rest /= pieces.len();
            }
            let Ok(mut once) = Url::parse(&input) else {
                continue;
            };
            canonicalize(&mut once);
            let mut twice = once.clone();
            canonicalize(&mut twice);
            assert_eq!(twice, once, "input {input}");
            assert_eq!(once.fragment(), None);
        }
    }

    #[test]
    fn escaped_percent_is_not_decoded_twice() {
        assert_eq!(
            canon("http://example.com/%25%34%31"),
            "http://example.com/%2541"
        );
    }

    #[test]
    fn canonical_copy_matches_in_place_form() {
        let url = Url::parse("http://example.com/%7e#x").expect("test URL parses");
        assert_eq!(canonical(&url).as_str(), "http://example.com/~");
    }
}
