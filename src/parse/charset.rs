//! Which encoding a body is in, chosen as a browser does: a byte order mark, then the
//! Content-Type header's `charset`, then the HTML standard's `<meta>` prescan of the first
//! 1,024 bytes, then the first `<meta>` charset the tree builder would meet anywhere in the
//! page ([`late_meta`]), else UTF-8.
//!
//! It owns the sniffing and the whole-body decode; it must never fail (every byte sequence
//! has an encoding) and never make a page decided early pay for the late scan: only a page
//! that neither its BOM, its header nor its first 1,024 bytes decided is read again.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};
use memchr::{memchr, memmem};
use regex::bytes::Regex;
use std::sync::LazyLock;

/// How many bytes the `<meta>` charset prescan looks at, as in the HTML standard.
const PRESCAN_LIMIT: usize = 1024;

/// The encoding of `body` and the length of its byte order mark (0 without one): see
/// [`decode`].
pub(super) fn sniff(body: &[u8], content_type: Option<&str>) -> (&'static Encoding, usize) {
    if let Some((encoding, bom_len)) = Encoding::for_bom(body) {
        return (encoding, bom_len);
    }
    let encoding = content_type
        .and_then(charset_from_content_type)
        .or_else(|| prescan(&body[..body.len().min(PRESCAN_LIMIT)]))
        .or_else(|| late_meta(body))
        .unwrap_or(UTF_8);
    (encoding, 0)
}

/// Decodes `body` to text, choosing the encoding as a browser does: a byte order mark, then
/// the Content-Type header's `charset`, then a `<meta>` prescan of the first 1024 bytes, then
/// a `<meta>` met later by the tree builder (see [`late_meta`]), else UTF-8. Malformed
/// sequences become U+FFFD; this never fails.
///
/// One deliberate difference from browsers: a label that maps to the WHATWG "replacement"
/// encoding (e.g. `iso-2022-kr`) is treated as unknown, because decoding with it yields a
/// single U+FFFD and the crawl would learn nothing from the page.
pub fn decode(body: &[u8], content_type: Option<&str>) -> (String, &'static Encoding) {
    let (encoding, bom_len) = sniff(body, content_type);
    (decode_with(encoding, &body[bom_len..]), encoding)
}

pub(super) fn decode_with(encoding: &'static Encoding, bytes: &[u8]) -> String {
    let (text, _had_errors) = encoding.decode_without_bom_handling(bytes);
    text.into_owned()
}

/// Looks a label up, treating unknown labels and the replacement encoding as absent.
fn encoding_for_label(label: &[u8]) -> Option<&'static Encoding> {
    Encoding::for_label(label).filter(|e| *e != encoding_rs::REPLACEMENT)
}

fn charset_from_content_type(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        encoding_for_label(value.as_bytes())
    })
}

/// The HTML standard's "prescan a byte stream to determine its encoding", over `bytes`
/// (already cut to the prescan limit).
fn prescan(bytes: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        if rest.starts_with(b"<!--") {
            // "<!-->" closes itself: the search for "-->" may reuse the opening dashes.
            pos += 2 + find(&rest[2..], b"-->")? + 3;
            continue;
        }
        if starts_with_ignore_case(rest, b"<meta")
            && rest.get(5).is_some_and(|&b| is_space(b) || b == b'/')
        {
            pos += 5;
            if let Some(encoding) = meta_charset(bytes, &mut pos)? {
                return Some(encoding);
            }
            continue;
        }
        let letter_at = |i: usize| rest.get(i).is_some_and(u8::is_ascii_alphabetic);
        if rest.first() == Some(&b'<')
            && (letter_at(1) || (rest.get(1) == Some(&b'/') && letter_at(2)))
        {
            pos += rest
                .iter()
                .position(|&b| is_space(b) || b == b'>')
                .unwrap_or(rest.len());
            while get_attribute(bytes, &mut pos)?.is_some() {}
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            pos += find(rest, b">")? + 1;
            continue;
        }
        pos += 1;
    }
    None
}

/// Reads a `<meta>` tag's attributes. The outer `Option` is `None` when the input ends
/// inside the tag (the prescan gives up); the inner one says whether the tag named an
/// encoding.
#[allow(clippy::option_option)]
fn meta_charset(bytes: &[u8], pos: &mut usize) -> Option<Option<&'static Encoding>> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut got_pragma = false;
    let mut need_pragma: Option<bool> = None;
    // `Some(None)` is the standard's "failure": a charset was named but is unknown.
    let mut charset: Option<Option<&'static Encoding>> = None;
    while let Some((name, value)) = get_attribute(bytes, pos)? {
        if seen.contains(&name) {
            continue;
        }
        match name.as_slice() {
            b"http-equiv" => got_pragma |= value == b"content-type",
            b"content" if charset.is_none() => {
                if let Some(label) = charset_from_meta_content(&value) {
                    charset = Some(encoding_for_label(label));
                    need_pragma = Some(true);
                }
            }
            b"charset" if charset.is_none() => {
                charset = Some(encoding_for_label(&value));
                need_pragma = Some(false);
            }
            _ => {}
        }
        seen.push(name);
    }
    let found = match need_pragma {
        None => None,
        Some(true) if !got_pragma => None,
        Some(_) => charset.flatten(),
    };
    Some(found.map(as_meta_names))
}

/// What a `<meta>` naming `encoding` means, in the prescan and in the tree builder alike: a
/// UTF-16 label means UTF-8 (the bytes being read are not UTF-16, or a BOM would have said
/// so), and x-user-defined means windows-1252.
fn as_meta_names(encoding: &'static Encoding) -> &'static Encoding {
    if encoding == UTF_16BE || encoding == UTF_16LE {
        UTF_8
    } else if encoding == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        encoding
    }
}

/// The HTML standard's "get an attribute" for the prescan: names and unquoted values are
/// lowercased, as the standard asks. Outer `None`: the input ended.
#[allow(clippy::option_option)]
fn get_attribute(bytes: &[u8], pos: &mut usize) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let at = |p: usize| bytes.get(p).copied();
    while at(*pos).is_some_and(|b| is_space(b) || b == b'/') {
        *pos += 1;
    }
    if at(*pos)? == b'>' {
        return Some(None);
    }
    let mut name = Vec::new();
    let mut value = Vec::new();
    loop {
        let b = at(*pos)?;
        if b == b'=' && !name.is_empty() {
            *pos += 1;
            break;
        }
        if is_space(b) {
            while at(*pos).is_some_and(is_space) {
                *pos += 1;
            }
            if at(*pos)? != b'=' {
                return Some(Some((name, value)));
            }
            *pos += 1;
            break;
        }
        if b == b'/' || b == b'>' {
            return Some(Some((name, value)));
        }
        name.push(b.to_ascii_lowercase());
        *pos += 1;
    }
    while at(*pos).is_some_and(is_space) {
        *pos += 1;
    }
    let first = at(*pos)?;
    if first == b'"' || first == b'\'' {
        *pos += 1;
        loop {
            let b = at(*pos)?;
            *pos += 1;
            if b == first {
                return Some(Some((name, value)));
            }
            value.push(b.to_ascii_lowercase());
        }
    }
    if first == b'>' {
        return Some(Some((name, value)));
    }
    loop {
        let b = at(*pos)?;
        if is_space(b) || b == b'>' {
            return Some(Some((name, value)));
        }
        value.push(b.to_ascii_lowercase());
        *pos += 1;
    }
}

/// The HTML standard's "extract a character encoding from a meta element" on a `content`
/// value such as `text/html; charset=windows-1252`; returns the label.
fn charset_from_meta_content(content: &[u8]) -> Option<&[u8]> {
    let mut pos = 0;
    loop {
        pos += find_ignore_case(&content[pos..], b"charset")? + b"charset".len();
        while content.get(pos).copied().is_some_and(is_space) {
            pos += 1;
        }
        if content.get(pos) != Some(&b'=') {
            continue;
        }
        pos += 1;
        while content.get(pos).copied().is_some_and(is_space) {
            pos += 1;
        }
        let rest = &content[pos..];
        return match rest.first() {
            Some(&quote @ (b'"' | b'\'')) => {
                let end = rest[1..].iter().position(|&b| b == quote)?;
                Some(&rest[1..=end])
            }
            Some(_) => {
                let end = rest
                    .iter()
                    .position(|&b| is_space(b) || b == b';')
                    .unwrap_or(rest.len());
                Some(&rest[..end])
            }
            None => None,
        };
    }
}

/// Elements whose content the tree builder has the tokenizer read as text (RAWTEXT, RCDATA,
/// script data): a `<meta>` inside one is not a tag. `noscript` is among them because the
/// tree parser (html5ever) and browsers parse with scripting on.
const TEXT_ONLY: [&[u8]; 9] = [
    b"script",
    b"style",
    b"textarea",
    b"title",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"noscript",
];

/// The encoding named by the first `<meta>` the tree builder would act on, anywhere in
/// `body`: the HTML standard's "in head" rules for `meta` while the confidence is still
/// "tentative", where a browser "changes the encoding" and parses the page again in it.
///
/// A `<meta>` counts where a browser's tree builder processes it: in the head, in the body
/// and after it (the "in body" rules hand `meta` to the "in head" ones), in a `<template>`;
/// not in a comment, not inside an element read as text ([`TEXT_ONLY`]; after `<plaintext>`
/// nothing is a tag), not in another tag's attribute value, not cut off by the end of the
/// body. The first one naming a known encoding wins, even if it names UTF-8 (the confidence
/// becomes "certain"); one naming an unknown or "replacement" label is passed over, as the
/// standard says. A `charset` attribute is read first, then `http-equiv=Content-Type` with a
/// `content` charset; labels map as in the prescan ([`as_meta_names`]).
///
/// Linear in the body, and mostly not run: every `<meta>` that names an encoding holds the
/// word `charset`, so a body without it in any case ([`mentions_charset`]) is not read
/// further. Otherwise one pass: `memchr` jumps from `<` to `<`, over comments to their `>`
/// and over text-only content to its `</`; only tags are read byte by byte (their quoted
/// values by `memchr` too). It simplifies the tokenizer where pages rarely go, and may differ
/// from a browser there: character references in a `<meta>`'s values are not decoded,
/// `<script>`'s "escaped" states (`<!--` ... `<script>` inside a script) are not followed,
/// `<svg>`/`<math>` content (where `<style>` and `<title>` hold markup) is read as HTML, and
/// a `<meta>` inside `<select>` or `<frameset>`, which the tree builder drops, counts.
fn late_meta(body: &[u8]) -> Option<&'static Encoding> {
    if !mentions_charset(body) {
        return None;
    }
    let mut pos = 0;
    while let Some(lt) = memchr(b'<', &body[pos..]) {
        pos += lt + 1;
        let rest = &body[pos..];
        match *rest.first()? {
            b'!' if rest.starts_with(b"!--") => pos = comment_end(body, pos + 3)?,
            // A doctype, a bogus comment (`<!x`, `<?x`, `</ x`), `<![CDATA[` outside foreign
            // content: all end at the first `>`.
            b'!' | b'?' => pos += memchr(b'>', rest)? + 1,
            b'/' => match *rest.get(1)? {
                b'>' => pos += 2,
                b if b.is_ascii_alphabetic() => {
                    pos = tag_end(body, pos + 1 + tag_name(&rest[1..]).len(), |_, _| {})?;
                }
                _ => pos += memchr(b'>', rest)? + 1,
            },
            b if b.is_ascii_alphabetic() => {
                let name = tag_name(rest);
                pos += name.len();
                if name.eq_ignore_ascii_case(b"meta") {
                    let mut meta = Meta::default();
                    pos = tag_end(body, pos, |name, value| meta.attribute(name, value))?;
                    if let Some(encoding) = meta.encoding() {
                        return Some(encoding);
                    }
                    continue;
                }
                pos = tag_end(body, pos, |_, _| {})?;
                if name.eq_ignore_ascii_case(b"plaintext") {
                    return None;
                }
                if let Some(text_only) = TEXT_ONLY.iter().find(|t| t.eq_ignore_ascii_case(name)) {
                    pos = end_tag_of(body, pos, text_only)?;
                }
            }
            // A `<` that starts no tag is text.
            _ => {}
        }
    }
    None
}

/// Whether `body` holds `charset` in any case of its letters: `regex` searches for a
/// literal's case variants with its prefilter (about 1.3 instructions a byte, measured).
fn mentions_charset(body: &[u8]) -> bool {
    static CHARSET: LazyLock<Regex> =
        LazyLock::new(|| Regex::new("(?i-u)charset").expect("a literal pattern compiles"));
    CHARSET.is_match(body)
}

/// A tag's name at the start of `rest` (just past `<` or `</`), as the tokenizer ends it.
fn tag_name(rest: &[u8]) -> &[u8] {
    let len = rest
        .iter()
        .position(|&b| is_space(b) || b == b'/' || b == b'>')
        .unwrap_or(rest.len());
    &rest[..len]
}

/// Reads a tag's attributes from `pos` (just past its name) as the HTML tokenizer does,
/// giving each name and value to `each`, and returns where the tag ends (past its `>`);
/// `None` if the body ends first, where the tokenizer drops the tag.
fn tag_end<'a>(
    body: &'a [u8],
    mut pos: usize,
    mut each: impl FnMut(&'a [u8], &'a [u8]),
) -> Option<usize> {
    let at = |p: usize| body.get(p).copied();
    loop {
        // Before an attribute's name; a `/` not before `>` only separates attributes.
        while at(pos).is_some_and(|b| is_space(b) || b == b'/') {
            pos += 1;
        }
        if at(pos)? == b'>' {
            return Some(pos + 1);
        }
        // A name may start with `=`.
        let start = pos;
        pos += 1;
        while at(pos).is_some_and(|b| !(is_space(b) || matches!(b, b'/' | b'>' | b'='))) {
            pos += 1;
        }
        let name = &body[start..pos];
        while at(pos).is_some_and(is_space) {
            pos += 1;
        }
        if at(pos)? != b'=' {
            each(name, b"");
            continue;
        }
        pos += 1;
        while at(pos).is_some_and(is_space) {
            pos += 1;
        }
        let value = match at(pos)? {
            quote @ (b'"' | b'\'') => {
                let len = memchr(quote, &body[pos + 1..])?;
                let value = &body[pos + 1..pos + 1 + len];
                pos += len + 2;
                value
            }
            b'>' => b"",
            _ => {
                let start = pos;
                while at(pos).is_some_and(|b| !is_space(b) && b != b'>') {
                    pos += 1;
                }
                &body[start..pos]
            }
        };
        each(name, value);
    }
}

/// Where a comment whose text starts at `start` (past `<!--`) ends, past its `-->` or
/// `--!>`, or the `>` of `<!-->` and `<!--->`; `None` if the body ends first.
fn comment_end(body: &[u8], start: usize) -> Option<usize> {
    let text = &body[start..];
    if text.starts_with(b">") {
        return Some(start + 1);
    }
    if text.starts_with(b"->") {
        return Some(start + 2);
    }
    let mut from = start;
    loop {
        let gt = from + memchr(b'>', &body[from..])?;
        let before = &body[start..gt];
        if before.ends_with(b"--") || before.ends_with(b"--!") {
            return Some(gt + 1);
        }
        from = gt + 1;
    }
}

/// Where the end tag closing a text-only element (`name`, lowercase) starts, searching from
/// `pos`; `None` if it never comes (the rest of the body is its text).
fn end_tag_of(body: &[u8], mut pos: usize, name: &[u8]) -> Option<usize> {
    let finder = memmem::Finder::new(b"</");
    loop {
        let lt = pos + finder.find(&body[pos..])?;
        let after = lt + 2 + name.len();
        if body
            .get(lt + 2..after)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
            && body
                .get(after)
                .is_some_and(|&b| is_space(b) || b == b'/' || b == b'>')
        {
            return Some(lt);
        }
        pos = lt + 2;
    }
}

/// The attributes of one `<meta>` that decide its encoding, the first of each name as the
/// tokenizer keeps them.
#[derive(Default)]
struct Meta<'a> {
    charset: Option<&'a [u8]>,
    http_equiv: Option<&'a [u8]>,
    content: Option<&'a [u8]>,
}

impl<'a> Meta<'a> {
    fn attribute(&mut self, name: &[u8], value: &'a [u8]) {
        let slot = if name.eq_ignore_ascii_case(b"charset") {
            &mut self.charset
        } else if name.eq_ignore_ascii_case(b"http-equiv") {
            &mut self.http_equiv
        } else if name.eq_ignore_ascii_case(b"content") {
            &mut self.content
        } else {
            return;
        };
        slot.get_or_insert(value);
    }

    /// The "in head" rules: a `charset` naming a known encoding, else `http-equiv` and
    /// `content`.
    fn encoding(&self) -> Option<&'static Encoding> {
        let from_charset = self.charset.and_then(encoding_for_label);
        let from_pragma = || {
            self.http_equiv
                .filter(|h| h.eq_ignore_ascii_case(b"content-type"))
                .and(self.content)
                .and_then(charset_from_meta_content)
                .and_then(encoding_for_label)
        };
        from_charset.or_else(from_pragma).map(as_meta_names)
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

fn starts_with_ignore_case(haystack: &[u8], prefix: &[u8]) -> bool {
    haystack
        .get(..prefix.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use url::Url;

    use super::*;
    use crate::parse::{ParsedPage, parse_html};

    /// More than the prescan reads, in a comment: what the pages here put before their
    /// `<meta>` so that only the late scan can see it.
    fn long_comment() -> String {
        format!("<!-- {} -->", "a licence header ".repeat(70))
    }

    fn page(body: &[u8], content_type: Option<&str>) -> ParsedPage {
        let url = Url::parse("http://example.com/dir/page.html").expect("test URL parses");
        parse_html(body, content_type, &url)
    }

    fn late(tail: &[u8]) -> Vec<u8> {
        let mut body = long_comment().into_bytes();
        assert!(body.len() > PRESCAN_LIMIT);
        body.extend_from_slice(tail);
        body
    }

    fn encoding_of(body: &[u8]) -> &'static str {
        decode(body, Some("text/html")).1.name()
    }

    #[test]
    fn a_meta_past_the_first_1024_bytes_decides_the_text_and_the_links_queries() {
        let body = late(
            b"<html><head><meta charset=windows-1252><title>caf\xE9</title></head>\
              <body><p>caf\xE9 cr\xE8me</p><a href=\"q.html?w=caf\xE9\">q</a></body>",
        );
        let page = page(&body, Some("text/html"));
        assert_eq!(page.encoding, "windows-1252");
        assert_eq!(page.title.as_deref(), Some("café"));
        assert_eq!(page.text, "café crème\nq");
        let links: Vec<&str> = page.links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(links, ["http://example.com/dir/q.html?w=caf%E9"]);
        // The tree parse (`--extract`) decodes it alike.
        let (text, encoding) = decode(&body, None);
        assert_eq!(encoding, WINDOWS_1252);
        assert!(text.contains("<p>café crème</p>"), "{text}");
    }

    #[test]
    fn a_late_http_equiv_and_a_meta_in_the_body_decide_too() {
        let pragma = late(
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\">\
              <p>\xE9t\xE9</p>",
        );
        assert_eq!(page(&pragma, None).text, "été");
        // Any case, in names, labels and the word `charset` in `content`.
        for tag in [
            &b"<META CHARSET=WINDOWS-1252>"[..],
            b"<Meta HTTP-EQUIV=content-type Content='text/html;ChArSeT=latin1'>",
        ] {
            let body = late(&[tag, b"<p>\xE9</p>"].concat());
            assert_eq!(encoding_of(&body), "windows-1252", "{tag:?}");
        }
        // After scripts and styles, in the body, after `</html>`: the "in body" rules hand a
        // `<meta>` to the "in head" ones, so a browser changes the encoding there too.
        for tail in [
            &b"<script>var a = 1;</script><style>p {}</style><meta charset=windows-1252>"[..],
            b"<body><p>x</p><meta charset=windows-1252>",
            b"</body></html><meta charset=windows-1252>",
            b"<template><meta charset=windows-1252></template>",
        ] {
            let tail = [tail, b"<p>\xE9</p>"].concat();
            assert_eq!(encoding_of(&late(&tail)), "windows-1252", "{tail:?}");
        }
    }

    #[test]
    fn a_meta_the_prescan_cannot_finish_in_its_1024_bytes_is_met_later() {
        let mut body = format!("<p>{}</p>", "x".repeat(PRESCAN_LIMIT - 20)).into_bytes();
        body.extend_from_slice(b"<meta name=viewport content=x charset=windows-1252><p>\xE9</p>");
        assert!(body.windows(7).position(|w| w == b"charset").unwrap_or(0) > PRESCAN_LIMIT);
        assert_eq!(encoding_of(&body), "windows-1252");
    }

    /// Each decoy names windows-1252 where the tree builder sees no tag; the `<meta>` after
    /// it names ISO-8859-5, so a scan that took the decoy says windows-1252.
    #[test]
    fn a_late_meta_in_a_comment_script_text_or_attribute_value_is_not_a_tag() {
        for decoy in [
            &b"<!-- <meta charset=windows-1252> -->"[..],
            b"<!-- -- > <meta charset=windows-1252> --!>",
            b"<script>document.write('<meta charset=windows-1252>')</script>",
            b"<SCRIPT type=x>'</scrip' + '<meta charset=windows-1252>'</SCRIPT >",
            b"<style>/* <meta charset=windows-1252> */</style>",
            b"<textarea><meta charset=windows-1252></textarea>",
            b"<title><meta charset=windows-1252></title>",
            b"<noscript><meta charset=windows-1252></noscript>",
            b"<div title='<meta charset=windows-1252>'>x</div>",
            b"<div data-x = \"a > <meta charset=windows-1252>\">x</div>",
            b"<img alt=\"\"src='<meta charset=windows-1252>'>",
            b"</div title='<meta charset=windows-1252>'>",
            b"<!DOCTYPE html><?php '<meta charset=windows-1252>' ?>",
        ] {
            let body = late(&[decoy, b"<meta charset=iso-8859-5><p>\xE9</p>"].concat());
            assert_eq!(
                encoding_of(&body),
                "ISO-8859-5",
                "{}",
                String::from_utf8_lossy(decoy)
            );
        }
    }

    #[test]
    fn after_plaintext_nothing_is_a_tag() {
        let body = late(b"<plaintext><meta charset=windows-1252><p>\xE9</p>");
        assert_eq!(encoding_of(&body), "UTF-8");
    }

    #[test]
    fn of_two_late_metas_the_first_wins() {
        let body = late(b"<meta charset=windows-1252><meta charset=iso-8859-5><p>\xE9</p>");
        assert_eq!(encoding_of(&body), "windows-1252");
        // A first one naming UTF-8 makes it certain: the second changes nothing.
        let body = late(b"<meta charset=utf-8><meta charset=windows-1252><p>\xC3\xA9</p>");
        assert_eq!(page(&body, None).text, "é");
    }

    #[test]
    fn a_late_meta_with_an_unknown_label_is_passed_over() {
        for unknown in [
            &b"<meta charset=no-such-label>"[..],
            b"<meta charset=iso-2022-kr>",
        ] {
            let body = late(&[unknown, b"<meta charset=windows-1252><p>\xE9</p>"].concat());
            assert_eq!(page(&body, None).text, "é", "{unknown:?}");
        }
        // Alone, it leaves the page UTF-8; a UTF-16 label means UTF-8 as in the prescan.
        assert_eq!(encoding_of(&late(b"<meta charset=bogus><p>x</p>")), "UTF-8");
        let body = late(b"<meta charset=utf-16le><meta charset=windows-1252><p>x</p>");
        assert_eq!(encoding_of(&body), "UTF-8");
    }

    #[test]
    fn a_header_charset_still_wins_over_a_late_meta() {
        let body = late(b"<meta charset=windows-1252><p>\xC3\xA9</p>");
        let page_ = page(&body, Some("text/html; charset=utf-8"));
        assert_eq!((page_.encoding, page_.text.as_str()), ("UTF-8", "é"));
        // So does a BOM; a header naming no known encoding leaves it to the late meta.
        let with_bom = [&b"\xEF\xBB\xBF"[..], &body].concat();
        assert_eq!(encoding_of(&with_bom), "UTF-8");
        let body = late(b"<meta charset=windows-1252><p>\xE9</p>");
        assert_eq!(page(&body, Some("text/html; charset=nope")).text, "é");
    }

    /// Eight megabytes of markup (tags with quoted values, comments, scripts) before the
    /// `<meta>`: one pass finds it.
    #[test]
    fn a_late_meta_at_the_end_of_an_8_mb_page_is_found() {
        let mut body = String::from("<!DOCTYPE html><html><head>");
        let mut line = 0;
        while body.len() < 8 << 20 {
            line += 1;
            writeln!(
                body,
                "<a href=\"#{line}\" id=\"{line}\">{line}</a><span class=kw>fn</span> \
                 <!-- < -- > --><script>if (a < b) x = '</p>';</script>"
            )
            .expect("write to a String");
        }
        let mut body = body.into_bytes();
        body.extend_from_slice(b"<meta charset=windows-1252><p>\xE9</p>");
        assert_eq!(encoding_of(&body), "windows-1252");
    }

    #[test]
    fn a_meta_cut_off_by_the_end_of_the_body_is_not_a_tag() {
        for tail in [
            &b"<meta charset=windows-1252"[..],
            b"<meta charset=\"windows-1252\"",
            b"<meta charset=\"windows-1252",
            b"<meta ",
            b"<meta",
            b"<",
            b"<!-- <meta charset=windows-1252>",
            b"<script><meta charset=windows-1252>",
        ] {
            let body = late(&[&b"<p>\xE9</p>"[..], tail].concat());
            assert_eq!(encoding_of(&body), "UTF-8", "{tail:?}");
        }
    }
}
