//! Which fetched bodies go to the HTML parser, and for the others, why not.
//!
//! One decision for everyone who parses stored or fetched pages (the crawl, `index`, `extract`),
//! so a page the crawl left unparsed is never indexed by a rebuild, and the other way round. It
//! looks at the response's Content-Type, at any content coding still on the body, and, only
//! when the server named no type, at the body's first bytes; pure, like the rest of the parse.
//!
//! The sniff is deliberately narrow. RFC 9110 8.3 lets a recipient examine the content when
//! Content-Type is missing, and browsers render such a page when it starts like HTML: the
//! signatures are WHATWG MIME Sniffing's "HTML" patterns (section 7.1, rules for identifying an
//! unknown MIME type), tried after leading whitespace, case-insensitively, each followed by a
//! space or `>`. A type the server did name is obeyed, `application/octet-stream` included (a
//! browser downloads such a body rather than render it); only WHATWG's "unknown" types
//! (`unknown/unknown`, `application/unknown`, `*/*`) and a value that is no MIME type at all
//! count as naming none.

use super::is_html;

/// What becomes of a 2xx body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Parse it as HTML.
    Html,
    /// Stored, not parsed, for this reason (the URL's row shows it).
    Ignored(String),
}

/// WHATWG MIME Sniffing, 7.1: the patterns that make an untyped resource `text/html`.
const HTML_SIGNATURES: [&[u8]; 17] = [
    b"<!DOCTYPE HTML",
    b"<HTML",
    b"<HEAD",
    b"<SCRIPT",
    b"<IFRAME",
    b"<H1",
    b"<DIV",
    b"<FONT",
    b"<TABLE",
    b"<A",
    b"<STYLE",
    b"<TITLE",
    b"<B",
    b"<BODY",
    b"<BR",
    b"<P",
    b"<!--",
];

/// The verdict on `body`, of type `content_type`, still carrying the content coding
/// `unsupported_coding` (one the fetch could not decode, `crate::fetch::unsupported_coding`):
/// such bytes are no HTML whatever the type says.
pub fn verdict(
    content_type: Option<&str>,
    unsupported_coding: Option<&str>,
    body: &[u8],
) -> Verdict {
    let named = content_type.and_then(named_type);
    if let Some(named) = named
        && !is_html(Some(named))
    {
        return Verdict::Ignored(format!("not HTML: {named}"));
    }
    if let Some(coding) = unsupported_coding {
        return Verdict::Ignored(format!("content-encoding {coding} is not supported"));
    }
    if named.is_some() || starts_like_html(body) {
        return Verdict::Html;
    }
    Verdict::Ignored(
        match content_type.map(str::trim).filter(|ct| !ct.is_empty()) {
            Some(unknown) => format!("not HTML: {unknown}, and the body does not start like HTML"),
            None => "not HTML: no Content-Type, and the body does not start like HTML".to_owned(),
        },
    )
}

/// The type a Content-Type value names, if any. Repeated headers come joined with `, `
/// (`text/plain, text/html`): as WHATWG Fetch's "extract a MIME type" does, the last value that
/// names a type wins.
fn named_type(content_type: &str) -> Option<&str> {
    content_type
        .split(',')
        .map(str::trim)
        .rev()
        .find(|ct| names_a_type(ct))
}

/// Whether a Content-Type value names a type to obey: a `type/subtype` essence that is not one
/// of WHATWG's unknown types.
fn names_a_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    let unknown = ["unknown/unknown", "application/unknown", "*/*"]
        .iter()
        .any(|u| essence.eq_ignore_ascii_case(u));
    !kind.trim().is_empty() && !subtype.trim().is_empty() && !unknown
}

/// WHATWG's HTML signatures, after leading whitespace, followed by a space or `>`.
fn starts_like_html(body: &[u8]) -> bool {
    let start = body
        .iter()
        .position(|b| !matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' '))
        .unwrap_or(body.len());
    let rest = &body[start..];
    HTML_SIGNATURES.iter().any(|signature| {
        rest.get(..signature.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(signature))
            && matches!(rest.get(signature.len()), Some(b' ' | b'>'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &[u8] = b"<!doctype html><html><body><a href=\"/x\">x</a></body></html>";

    fn ignored(reason: &str) -> Verdict {
        Verdict::Ignored(reason.to_owned())
    }

    /// Two Content-Type headers arrive joined: the last one that names a type decides, as in a
    /// browser (`names_a_type` used to take `text/plain, text/html` for one odd type).
    #[test]
    fn of_repeated_content_types_the_last_that_names_one_decides() {
        assert_eq!(
            verdict(Some("text/plain, text/html"), None, b"x"),
            Verdict::Html
        );
        assert_eq!(
            verdict(Some("text/html, image/png"), None, PAGE),
            ignored("not HTML: image/png")
        );
        assert_eq!(
            verdict(Some("text/html; charset=utf-8, */*"), None, b"x"),
            Verdict::Html
        );
        assert_eq!(
            verdict(Some("nonsense, */*"), None, b"plain"),
            ignored("not HTML: nonsense, */*, and the body does not start like HTML")
        );
    }

    #[test]
    fn a_named_html_type_is_parsed_whatever_the_body() {
        for ct in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "application/xhtml+xml",
        ] {
            assert_eq!(verdict(Some(ct), None, b"\x89PNG"), Verdict::Html, "{ct}");
        }
    }

    #[test]
    fn a_named_other_type_is_obeyed_and_named_in_the_reason() {
        assert_eq!(
            verdict(Some("image/png"), None, b"\x89PNG\r\n"),
            ignored("not HTML: image/png")
        );
        assert_eq!(
            verdict(Some("application/octet-stream"), None, PAGE),
            ignored("not HTML: application/octet-stream")
        );
        assert_eq!(
            verdict(Some("text/plain; charset=utf-8"), None, PAGE),
            ignored("not HTML: text/plain; charset=utf-8")
        );
    }

    #[test]
    fn html_in_a_coding_the_fetch_did_not_decode_is_ignored_with_the_coding_named() {
        assert_eq!(
            verdict(Some("text/html"), Some("zstd"), PAGE),
            ignored("content-encoding zstd is not supported")
        );
        assert_eq!(
            verdict(None, Some("zstd"), PAGE),
            ignored("content-encoding zstd is not supported")
        );
        assert_eq!(
            verdict(Some("image/png"), Some("zstd"), b""),
            ignored("not HTML: image/png")
        );
    }

    #[test]
    fn without_a_type_every_whatwg_signature_is_sniffed_after_whitespace_in_any_case() {
        for signature in HTML_SIGNATURES {
            for end in [b" ", b">"] {
                let body = [b" \t\r\n\x0C".as_slice(), signature, end, b"rest"].concat();
                assert_eq!(verdict(None, None, &body), Verdict::Html, "{body:?}");
                let lower = body.to_ascii_lowercase();
                assert_eq!(verdict(None, None, &lower), Verdict::Html, "{lower:?}");
            }
        }
        for ct in [
            "",
            "  ",
            "unknown/unknown",
            "Application/Unknown",
            "*/*",
            "html",
            "text/",
        ] {
            assert_eq!(verdict(Some(ct), None, PAGE), Verdict::Html, "{ct:?}");
        }
    }

    #[test]
    fn without_a_type_anything_else_is_ignored_and_says_so() {
        let no_type = ignored("not HTML: no Content-Type, and the body does not start like HTML");
        for body in [
            b"".as_slice(),
            b"<",
            b"<html",
            b"<htmlx>",
            b"<p\t>",
            b"<!doctype  html>",
            b"<!DOCTYPE>",
            b"<?xml version=\"1.0\"?><html>",
            b"\xEF\xBB\xBF<html>",
            b"hello <html>",
            b"\x89PNG\r\n\x1a\n",
            b"<span>x</span>",
        ] {
            assert_eq!(verdict(None, None, body), no_type, "{body:?}");
            assert_eq!(verdict(Some(" "), None, body), no_type, "{body:?}");
        }
        assert_eq!(
            verdict(Some("*/*"), None, b"binary"),
            ignored("not HTML: */*, and the body does not start like HTML")
        );
    }
}
