//! Which encoding a body is in, chosen as a browser does: a byte order mark, then the
//! Content-Type header's `charset`, then the HTML standard's `<meta>` prescan, else UTF-8.
//!
//! It owns the sniffing and the whole-body decode; it must never fail or look past the
//! prescan limit for a `<meta>`: every byte sequence has an encoding.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

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
        .unwrap_or(UTF_8);
    (encoding, 0)
}

/// Decodes `body` to text, choosing the encoding as a browser does: a byte order mark, then
/// the Content-Type header's `charset`, then a `<meta>` prescan of the first 1024 bytes,
/// else UTF-8. Malformed sequences become U+FFFD; this never fails.
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
    Some(found.map(|encoding| {
        if encoding == UTF_16BE || encoding == UTF_16LE {
            UTF_8
        } else if encoding == X_USER_DEFINED {
            WINDOWS_1252
        } else {
            encoding
        }
    }))
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
