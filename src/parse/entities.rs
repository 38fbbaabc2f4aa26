//! Character references (`&amp;`, `&#233;`, `&eacute` ...) and the input stream's newline and
//! NUL rules, applied to text and attribute values as html5ever's tokenizer applies them:
//! `lol_html` hands both over as written.
//!
//! It owns the HTML standard's "character reference state" over html5ever's own table of
//! named references, so the two parsers decode alike. It must never allocate when a value has
//! nothing to decode, nor look further than the reference it decodes.

use std::borrow::Cow;

use html5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};

/// What U+0000 becomes: html5ever's tree builder drops it from text in the body; everywhere
/// else (attributes, RCDATA, raw text) the tokenizer makes it U+FFFD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nul {
    Drop,
    Replace,
}

/// How one run of input is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mode {
    /// Character references are decoded (data, RCDATA and attribute values).
    pub refs: bool,
    /// The attribute rule: a legacy reference without `;` before `=` or a letter stays as is.
    pub in_attribute: bool,
    pub nul: Nul,
}

impl Mode {
    pub(super) const ATTRIBUTE: Mode = Mode {
        refs: true,
        in_attribute: true,
        nul: Nul::Replace,
    };
}

/// An attribute value as html5ever gives it.
pub(super) fn attribute(raw: String) -> String {
    match decode(&raw, Mode::ATTRIBUTE) {
        Cow::Borrowed(_) => raw,
        Cow::Owned(decoded) => decoded,
    }
}

/// Decodes a complete run of input (a whole attribute value, or text up to a point where no
/// reference or CR/LF pair is cut: see [`safe_end`]).
pub(super) fn decode(raw: &str, mode: Mode) -> Cow<'_, str> {
    let special = |bytes: &[u8]| {
        if mode.refs {
            memchr::memchr3(b'&', b'\r', b'\0', bytes)
        } else {
            memchr::memchr2(b'\r', b'\0', bytes)
        }
    };
    let Some(first) = special(raw.as_bytes()) else {
        return Cow::Borrowed(raw);
    };
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    out.push_str(&raw[..first]);
    let mut i = first;
    while i < raw.len() {
        let Some(next) = special(&bytes[i..]) else {
            out.push_str(&raw[i..]);
            break;
        };
        out.push_str(&raw[i..i + next]);
        i += next;
        match bytes[i] {
            b'\r' => {
                out.push('\n');
                i += if bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
            }
            b'\0' => {
                if mode.nul == Nul::Replace {
                    out.push('\u{FFFD}');
                }
                i += 1;
            }
            _ => i = reference(raw, i, mode.in_attribute, &mut out),
        }
    }
    Cow::Owned(out)
}

/// Where a chunk of a text node that goes on in the next chunk can be cut: before a trailing
/// `&` that may start a reference still being written, or a trailing CR whose LF may follow.
pub(super) fn safe_end(raw: &str) -> usize {
    /// Longer than any named reference; a numeric one cut this late decodes as too big anyway.
    const LONGEST: usize = 64;
    let bytes = raw.as_bytes();
    if bytes.last() == Some(&b'\r') {
        return raw.len() - 1;
    }
    let from = raw.len().saturating_sub(LONGEST);
    match bytes[from..].iter().rposition(|&b| b == b'&') {
        Some(amp)
            if bytes[from + amp + 1..]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'#') =>
        {
            from + amp
        }
        _ => raw.len(),
    }
}

/// Decodes the reference whose `&` is at `amp`, appends what it stands for, and returns
/// where reading goes on. Not a reference: appends the `&` alone.
fn reference(raw: &str, amp: usize, in_attribute: bool, out: &mut String) -> usize {
    let rest = &raw.as_bytes()[amp + 1..];
    match rest.first() {
        Some(b'#') => numeric(raw, amp, out),
        Some(b) if b.is_ascii_alphanumeric() => named(raw, amp, in_attribute, out),
        _ => {
            out.push('&');
            amp + 1
        }
    }
}

fn numeric(raw: &str, amp: usize, out: &mut String) -> usize {
    let bytes = raw.as_bytes();
    let mut i = amp + 2;
    let base = if matches!(bytes.get(i), Some(b'x' | b'X')) {
        i += 1;
        16
    } else {
        10
    };
    let digits_start = i;
    let mut value: u32 = 0;
    let mut too_big = false;
    while let Some(digit) = bytes.get(i).and_then(|&b| char::from(b).to_digit(base)) {
        value = value.wrapping_mul(base);
        too_big |= value > 0x10_FFFF;
        value = value.wrapping_add(digit);
        i += 1;
    }
    if i == digits_start {
        // No digits: `&#` (and an `x`) are text.
        out.push('&');
        return amp + 1;
    }
    if bytes.get(i) == Some(&b';') {
        i += 1;
    }
    let c = match value {
        _ if too_big || value > 0x10_FFFF => '\u{FFFD}',
        0 | 0xD800..=0xDFFF => '\u{FFFD}',
        0x80..=0x9F => C1_REPLACEMENTS[(value - 0x80) as usize]
            .unwrap_or_else(|| char::from_u32(value).unwrap_or('\u{FFFD}')),
        _ => char::from_u32(value).unwrap_or('\u{FFFD}'),
    };
    out.push(c);
    i
}

fn named(raw: &str, amp: usize, in_attribute: bool, out: &mut String) -> usize {
    let name_start = amp + 1;
    let mut best: Option<(usize, (u32, u32))> = None;
    let mut end = name_start;
    // The table holds every prefix of every name, so the longest match is found by growing
    // the name one character at a time until it is no prefix any more.
    for c in raw[name_start..].chars() {
        end += c.len_utf8();
        match NAMED_ENTITIES.get(&raw[name_start..end]) {
            Some(&m) => {
                if m.0 != 0 {
                    best = Some((end, m));
                }
            }
            None => break,
        }
    }
    let Some((matched_end, (c1, c2))) = best else {
        out.push('&');
        return amp + 1;
    };
    let bytes = raw.as_bytes();
    let last = bytes[matched_end - 1];
    let next = bytes.get(matched_end).copied();
    if in_attribute && last != b';' && next.is_some_and(|b| b == b'=' || b.is_ascii_alphanumeric())
    {
        out.push('&');
        return amp + 1;
    }
    for code in [c1, c2] {
        if let Some(c) = char::from_u32(code).filter(|_| code != 0) {
            out.push(c);
        }
    }
    matched_end
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: Mode = Mode {
        refs: true,
        in_attribute: false,
        nul: Nul::Drop,
    };

    #[test]
    fn references_decode_as_html5ever_does() {
        for (raw, text, attribute) in [
            ("a &amp; b", "a & b", "a & b"),
            ("&lt;p&gt;", "<p>", "<p>"),
            ("caf&eacute;", "café", "café"),
            ("caf&eacute", "café", "café"),
            ("&notit;", "¬it;", "&notit;"),
            ("&notin;", "∉", "∉"),
            ("?a=1&copy=2", "?a=1©=2", "?a=1&copy=2"),
            ("?a=1&copyx", "?a=1©x", "?a=1&copyx"),
            ("&#233;&#xE9;&#XE9", "ééé", "ééé"),
            ("&#x80;", "€", "€"),
            (
                "&#0;&#xD800;&#x110000;",
                "\u{FFFD}\u{FFFD}\u{FFFD}",
                "\u{FFFD}\u{FFFD}\u{FFFD}",
            ),
            ("&#; &#x; & &;", "&#; &#x; & &;", "&#; &#x; & &;"),
            ("&bogus; &amp", "&bogus; &", "&bogus; &"),
            ("a\r\nb\rc\0d", "a\nb\ncd", "a\nb\nc\u{FFFD}d"),
            (
                "&NotNestedGreaterGreater;",
                "\u{2AA2}\u{338}",
                "\u{2AA2}\u{338}",
            ),
        ] {
            assert_eq!(decode(raw, TEXT), text, "text {raw:?}");
            assert_eq!(decode(raw, Mode::ATTRIBUTE), attribute, "attribute {raw:?}");
        }
    }

    #[test]
    fn nothing_to_decode_borrows() {
        assert!(matches!(decode("plain text", TEXT), Cow::Borrowed(_)));
    }

    #[test]
    fn safe_end_keeps_an_unfinished_reference_or_cr_for_the_next_chunk() {
        assert_eq!(safe_end("abc &no"), 4);
        assert_eq!(safe_end("abc &#x1"), 4);
        assert_eq!(safe_end("abc &amp; d"), 11);
        assert_eq!(safe_end("abc\r"), 3);
        assert_eq!(safe_end("abc & d"), 7);
    }
}
