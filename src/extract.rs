//! Structured extraction: `--extract NAME=CSS` (or `NAME=CSS@attr`) fields pulled out of HTML
//! pages with CSS selectors, one JSON line per page that matched anything.
//!
//! The crawl's own parse is a stream (links, title, text); a user's selectors need a document
//! tree, which is what `scraper` is good at. So this module builds a tree, but only for pages up
//! to a size cap (`--extract-max-bytes`): a larger page gets a line saying it was skipped, never
//! a tree of hundreds of megabytes. It owns the field specs, their validation (a bad selector is
//! an error before anything is fetched) and the line format. It is pure: bytes in, values out;
//! it never does I/O, reads a clock, or decides which pages are extracted.

use std::collections::BTreeMap;

use scraper::Selector;
use serde::{Deserialize, Serialize};

/// The default `--extract-max-bytes`: pages above it are skipped, not parsed into a tree.
pub const DEFAULT_MAX_BYTES: usize = 2 << 20;

/// Most attributes one element may carry in a page that is parsed into a tree. html5ever
/// checks each attribute against the element's earlier ones, so one tag of 423,000
/// attributes in a 2 MB page took it about 50 s (audit 24); a page past it is skipped, with a
/// line saying so. Real pages stay far below.
pub const MAX_ATTRIBUTES: usize = 10_000;

/// Most bytes of values one page's line carries. An element's text holds its descendants'
/// text, so nested matches repeat it: 400 nested `<div>`s of a 2 MB page made a 400 MB line
/// and an 821 MB process (audit 24). The first value that would pass it, and everything
/// after it, is left out, and the line says so (`"cut"`).
pub const MAX_VALUE_BYTES: usize = 8 << 20;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractError {
    #[error("--extract {spec:?}: expected NAME=CSS or NAME=CSS@attribute")]
    NoName { spec: String },
    #[error(
        "--extract {spec:?}: the name {name:?} must be ASCII letters, digits, '_' or '-' (it is a JSON key)"
    )]
    BadName { spec: String, name: String },
    #[error("--extract {spec:?}: the name {name:?} is given twice")]
    DuplicateName { spec: String, name: String },
    #[error("--extract {spec:?}: the selector is empty")]
    EmptySelector { spec: String },
    #[error("--extract {spec:?}: not a CSS selector: {reason}")]
    BadSelector { spec: String, reason: String },
    #[error("--extract {spec:?}: {attr:?} after @ is no attribute name")]
    BadAttribute { spec: String, attr: String },
}

/// One `NAME=CSS[@attr]`.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    selector: Selector,
    /// The CSS as given, for messages.
    pub css: String,
    /// Take this attribute's value; without it, the element's text.
    pub attr: Option<String>,
}

/// What one page gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extraction {
    /// At least one field matched: each field's values, in document order (fields that
    /// matched nothing are absent).
    Matched(BTreeMap<String, Vec<String>>),
    /// As [`Extraction::Matched`] (the fields may be none), but not the whole page's: its
    /// tree stopped at [`crate::parse::MAX_DEPTH`] nested elements, or its values where they
    /// would pass [`MAX_VALUE_BYTES`]. The line says why (`"cut"`), even with no field.
    Cut {
        fields: BTreeMap<String, Vec<String>>,
        why: String,
    },
    /// No field matched anything: no line is written.
    Nothing,
    /// The page is over the size cap; its line says so.
    TooLarge { bytes: usize },
    /// An element of the page carries more than [`MAX_ATTRIBUTES`]; its line says so.
    TooManyAttributes { attributes: usize },
}

/// One line of `--extract-out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractLine {
    pub url: String,
    /// The page's place in the commit order.
    pub seq: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Why the fields are not the whole page's: its tree stopped at the nesting limit, or
    /// values were left out past [`MAX_VALUE_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

impl ExtractLine {
    /// The line for a page, or `None` when nothing matched.
    pub fn new(url: &str, seq: u64, extraction: Extraction) -> Option<ExtractLine> {
        let (fields, skipped, cut) = match extraction {
            Extraction::Matched(fields) => (fields, None, None),
            Extraction::Cut { fields, why } => (fields, None, Some(why)),
            Extraction::Nothing => return None,
            Extraction::TooLarge { .. } => (BTreeMap::new(), Some("too large".to_string()), None),
            Extraction::TooManyAttributes { .. } => (
                BTreeMap::new(),
                Some(format!("an element has over {MAX_ATTRIBUTES} attributes")),
                None,
            ),
        };
        Some(ExtractLine {
            url: url.to_string(),
            seq,
            fields,
            skipped,
            cut,
        })
    }
}

/// The fields of a crawl, checked once at start.
#[derive(Debug, Clone)]
pub struct Extractor {
    fields: Vec<Field>,
    max_bytes: usize,
}

impl Extractor {
    /// Parses every `NAME=CSS[@attr]`; the first bad one is the error.
    pub fn new(specs: &[String], max_bytes: usize) -> Result<Extractor, ExtractError> {
        let mut fields: Vec<Field> = Vec::with_capacity(specs.len());
        for spec in specs {
            let field = parse_spec(spec)?;
            if fields.iter().any(|f| f.name == field.name) {
                return Err(ExtractError::DuplicateName {
                    spec: spec.clone(),
                    name: field.name,
                });
            }
            fields.push(field);
        }
        Ok(Extractor { fields, max_bytes })
    }

    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Runs every field over one HTML body (decoded as `parse` decodes it).
    pub fn run(&self, body: &[u8], content_type: Option<&str>) -> Extraction {
        if body.len() > self.max_bytes {
            return Extraction::TooLarge { bytes: body.len() };
        }
        let (text, _) = crate::parse::decode(body, content_type);
        let attributes = most_attributes(&text);
        if attributes > MAX_ATTRIBUTES {
            return Extraction::TooManyAttributes { attributes };
        }
        // The tree stops at its nesting limit (html5ever's tree builder is quadratic in the
        // depth of unclosed elements), keeping what came before.
        let (document, coverage) = crate::parse::dom::parse_document(&text);
        let mut why: Vec<String> = Vec::new();
        if let crate::parse::Coverage::CutAtDepth { parsed_bytes } = coverage {
            // The crawl's own parse goes on past that depth (it flattens, as Chromium does):
            // html5ever's tree cannot, so the line says where the fields stop.
            why.push(format!(
                "the tree stops at {} nested elements, {parsed_bytes} bytes in",
                crate::parse::MAX_DEPTH
            ));
        }
        let mut out = BTreeMap::new();
        let mut left = MAX_VALUE_BYTES;
        let mut cut = false;
        'fields: for field in &self.fields {
            // HTML attribute names are lowercase in the tree (SVG keeps `viewBox`).
            let lower = field.attr.as_deref().map(str::to_ascii_lowercase);
            let mut values = Vec::new();
            for element in document.select(&field.selector) {
                let value = match (&field.attr, &lower) {
                    (Some(attr), Some(lower)) => {
                        let element = element.value();
                        match element.attr(attr).or_else(|| element.attr(lower)) {
                            None => continue,
                            Some(value) if value.len() > left => None,
                            Some(value) => Some(value.to_string()),
                        }
                    }
                    _ => match collapse_within(element.text(), left) {
                        Some(text) if text.is_empty() => continue,
                        text => text,
                    },
                };
                let Some(value) = value else {
                    cut = true;
                    break;
                };
                left -= value.len();
                values.push(value);
            }
            if !values.is_empty() {
                out.insert(field.name.clone(), values);
            }
            if cut {
                break 'fields;
            }
        }
        if cut {
            why.push(format!(
                "values past {} MiB left out",
                MAX_VALUE_BYTES >> 20
            ));
        }
        match (out.is_empty(), why.is_empty()) {
            (true, true) => Extraction::Nothing,
            (false, true) => Extraction::Matched(out),
            (_, false) => Extraction::Cut {
                fields: out,
                why: why.join("; "),
            },
        }
    }
}

/// The element's text nodes joined, whitespace runs collapsed to one space, trimmed; `None`
/// as soon as it would be longer than `limit` bytes.
fn collapse_within<'a>(parts: impl Iterator<Item = &'a str>, limit: usize) -> Option<String> {
    let mut out = String::new();
    for word in parts.flat_map(str::split_whitespace) {
        let sep = usize::from(!out.is_empty());
        if out.len() + sep + word.len() > limit {
            return None;
        }
        if sep == 1 {
            out.push(' ');
        }
        out.push_str(word);
    }
    Some(out)
}

/// The most attributes any one element of `text` carries, read by one streaming pass
/// (`lol_html`, linear in the page whatever its tags hold). A page the pass cannot finish
/// (a token over its memory limit) counts what it read.
fn most_attributes(text: &str) -> usize {
    use lol_html::{HtmlRewriter, MemorySettings, Settings, element};
    let most = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let seen = std::rc::Rc::clone(&most);
    let settings = Settings {
        element_content_handlers: vec![element!("*", move |el| {
            seen.set(seen.get().max(el.attributes().len()));
            Ok(())
        })],
        memory_settings: MemorySettings {
            max_allowed_memory_usage: crate::parse::MAX_PARSE_MEMORY,
            ..MemorySettings::default()
        },
        ..Settings::new()
    };
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    if rewriter.write(text.as_bytes()).is_ok() {
        let _ = rewriter.end();
    }
    most.get()
}

fn parse_spec(spec: &str) -> Result<Field, ExtractError> {
    let Some((name, rest)) = spec.split_once('=') else {
        return Err(ExtractError::NoName {
            spec: spec.to_string(),
        });
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(ExtractError::NoName {
            spec: spec.to_string(),
        });
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ExtractError::BadName {
            spec: spec.to_string(),
            name: name.to_string(),
        });
    }
    let (css, attr) = split_attr(rest).map_err(|attr| ExtractError::BadAttribute {
        spec: spec.to_string(),
        attr: attr.to_string(),
    })?;
    let css = css.trim();
    if css.is_empty() {
        return Err(ExtractError::EmptySelector {
            spec: spec.to_string(),
        });
    }
    let selector = Selector::parse(css).map_err(|e| ExtractError::BadSelector {
        spec: spec.to_string(),
        reason: selector_mistake(&e),
    })?;
    Ok(Field {
        name: name.to_string(),
        selector,
        css: css.to_string(),
        attr: attr.map(str::to_string),
    })
}

/// What is wrong with a selector, in words. scraper says most mistakes itself, but asks to be
/// told of the rest ("Please report this to the developer", then a debug dump): they are
/// ordinary mistakes (`[[[`), named here by their kind, e.g. "no qualified name in attribute
/// selector".
fn selector_mistake(e: &scraper::error::SelectorErrorKind) -> String {
    match e {
        scraper::error::SelectorErrorKind::UnexpectedSelectorParseError(kind) => {
            let debug = format!("{kind:?}");
            let name = debug.split(['(', ' ', '{']).next().unwrap_or_default();
            let mut words = String::new();
            for c in name.chars() {
                if c.is_uppercase() && !words.is_empty() {
                    words.push(' ');
                }
                words.extend(c.to_lowercase());
            }
            words
        }
        other => other.to_string(),
    }
}

/// Splits `CSS@attr` at its last `@` outside brackets, quotes and escapes (`a[href^="x@y"]`
/// and `.\@container` keep theirs). A selector has no other `@`, so one followed by no
/// attribute name (`h1@`) is a mistake: `Err` with what follows it.
fn split_attr(rest: &str) -> Result<(&str, Option<&str>), &str> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut at = None;
    for (i, c) in rest.char_indices() {
        if std::mem::take(&mut escaped) {
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => depth = depth.saturating_sub(1),
            (None, '@') if depth == 0 => at = Some(i),
            _ => {}
        }
    }
    let Some(i) = at else {
        return Ok((rest, None));
    };
    let attr = rest[i + 1..].trim();
    let is_name = !attr.is_empty()
        && attr
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'));
    if is_name {
        Ok((&rest[..i], Some(attr)))
    } else {
        Err(attr)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    fn extractor(specs: &[&str]) -> Extractor {
        let specs: Vec<String> = specs.iter().map(ToString::to_string).collect();
        Extractor::new(&specs, DEFAULT_MAX_BYTES).expect("valid specs")
    }

    fn matched(e: &Extractor, html: &str) -> BTreeMap<String, Vec<String>> {
        match e.run(html.as_bytes(), Some("text/html")) {
            Extraction::Matched(m) => m,
            other => panic!("expected matches, got {other:?}"),
        }
    }

    const PAGE: &str = r#"<html><head><title>T</title></head><body>
        <h1 class="title">  Down the
            Rabbit-Hole </h1>
        <ul><li><a href="/a.html">A</a></li><li><a href="b.html" rel=nofollow>B <b>bold</b></a></li></ul>
        <p class="price" data-sku="x1">3 <span>pounds</span></p>
        <a href="mailto:alice@example.org">mail</a>
        </body></html>"#;

    #[test]
    fn text_and_attributes_come_out_in_document_order() {
        let e = extractor(&[
            "heading=h1.title",
            "links=ul a@href",
            "names=ul a",
            "sku=.price@data-sku",
        ]);
        let m = matched(&e, PAGE);
        assert_eq!(m["heading"], ["Down the Rabbit-Hole"]);
        assert_eq!(m["links"], ["/a.html", "b.html"]);
        assert_eq!(m["names"], ["A", "B bold"]);
        assert_eq!(m["sku"], ["x1"]);
    }

    /// The crawl's parse and `--extract` decode a page alike, even when its `<meta charset>`
    /// comes after its first 1,024 bytes.
    #[test]
    fn a_late_meta_charset_decides_what_the_fields_say() {
        let mut body = format!("<!-- {} -->", "x".repeat(1100)).into_bytes();
        body.extend_from_slice(
            b"<meta charset=windows-1252><h1>caf\xE9</h1><a href='q?w=caf\xE9'>x</a>",
        );
        let e = extractor(&["h=h1", "q=a@href"]);
        let m = match e.run(&body, Some("text/html")) {
            Extraction::Matched(m) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(m["h"], ["café"]);
        assert_eq!(m["q"], ["q?w=café"]);
    }

    #[test]
    fn an_at_sign_inside_brackets_or_quotes_is_part_of_the_selector() {
        let e = extractor(&[r#"mail=a[href="mailto:alice@example.org"]@href"#]);
        assert_eq!(matched(&e, PAGE)["mail"], ["mailto:alice@example.org"]);
        let e = extractor(&[r#"mail=a[href="mailto:alice@example.org"]"#]);
        assert_eq!(matched(&e, PAGE)["mail"], ["mail"]);
        // An escaped @ is part of a class name (`class="@wide"`), not the attribute's mark.
        let e = extractor(&[r"wide=.\@wide"]);
        assert_eq!(
            matched(&e, r#"<p class="@wide" data-x="1">w</p>"#)["wide"],
            ["w"]
        );
        let e = extractor(&[r"wide=.\@wide@data-x"]);
        assert_eq!(
            matched(&e, r#"<p class="@wide" data-x="1">w</p>"#)["wide"],
            ["1"]
        );
    }

    #[test]
    fn fields_that_match_nothing_are_left_out_and_a_page_without_matches_has_no_line() {
        let e = extractor(&["heading=h1", "none=table.nothing"]);
        let m = matched(&e, PAGE);
        assert!(!m.contains_key("none"));
        let e = extractor(&["none=table.nothing", "missing=a@data-nothing"]);
        assert_eq!(e.run(PAGE.as_bytes(), None), Extraction::Nothing);
        assert_eq!(ExtractLine::new("http://x/", 3, Extraction::Nothing), None);
    }

    #[test]
    fn a_page_over_the_cap_is_skipped_with_a_line_saying_so() {
        let specs = vec!["h=h1".to_string()];
        let e = Extractor::new(&specs, 100).expect("spec");
        let big = format!("<h1>x</h1>{}", " ".repeat(200));
        let got = e.run(big.as_bytes(), None);
        assert_eq!(got, Extraction::TooLarge { bytes: big.len() });
        let line = ExtractLine::new("http://x/big", 7, got).expect("a line");
        let json = serde_json::to_string(&line).expect("json");
        assert_eq!(
            json,
            r#"{"url":"http://x/big","seq":7,"skipped":"too large"}"#
        );
    }

    #[test]
    fn the_line_format_is_url_seq_fields() {
        let e = extractor(&["h=h1"]);
        let line = ExtractLine::new("http://x/p", 2, e.run(b"<h1>Hi</h1>", None)).expect("line");
        let json = serde_json::to_string(&line).expect("json");
        assert_eq!(
            json,
            r#"{"url":"http://x/p","seq":2,"fields":{"h":["Hi"]}}"#
        );
    }

    #[test]
    fn bad_specs_are_named() {
        let err = |s: &[&str]| {
            let specs: Vec<String> = s.iter().map(ToString::to_string).collect();
            Extractor::new(&specs, 10).expect_err("refused")
        };
        assert!(matches!(err(&["h1"]), ExtractError::NoName { .. }));
        assert!(matches!(err(&["=h1"]), ExtractError::NoName { .. }));
        assert!(matches!(err(&["a b=h1"]), ExtractError::BadName { .. }));
        assert!(matches!(err(&["h="]), ExtractError::EmptySelector { .. }));
        assert!(matches!(
            err(&["h=  @href"]),
            ExtractError::EmptySelector { .. }
        ));
        assert!(matches!(
            err(&["h=h1", "h=h2"]),
            ExtractError::DuplicateName { .. }
        ));
        let bad = err(&["h=div[[["]);
        assert!(matches!(bad, ExtractError::BadSelector { .. }));
        assert!(bad.to_string().contains("div[[["), "{bad}");
        // scraper's "Please report this to the developer" is said as what it is.
        assert_eq!(
            err(&["bad=[[["]).to_string(),
            "--extract \"bad=[[[\": not a CSS selector: no qualified name in attribute selector"
        );
        for spec in ["x=h1@", "x=h1@ ", "x=h1@$$"] {
            let bad = err(&[spec]);
            assert!(matches!(bad, ExtractError::BadAttribute { .. }), "{spec}");
            assert!(
                bad.to_string().contains("after @ is no attribute name"),
                "{bad}"
            );
        }
        assert!(matches!(
            err(&["h=::nonsense-pseudo"]),
            ExtractError::BadSelector { .. }
        ));
    }

    /// Audit 24: one tag of 423,000 attributes took html5ever about 50 s, past the fetch's
    /// patience: the page was fetched three times and lost. It is skipped now, quickly.
    #[test]
    fn a_page_with_an_element_of_too_many_attributes_is_skipped_with_a_line_saying_so() {
        let e = extractor(&["h=h1"]);
        let attrs = |n: usize| -> String {
            let names = (0..n).fold(String::new(), |mut names, i| {
                let _ = write!(names, " a{i}");
                names
            });
            format!("<h1{names}>title</h1>")
        };
        assert_eq!(matched(&e, &attrs(MAX_ATTRIBUTES))["h"], ["title"]);
        let hostile = attrs(200_000);
        let got = e.run(hostile.as_bytes(), None);
        assert_eq!(
            got,
            Extraction::TooManyAttributes {
                attributes: 200_000
            }
        );
        let line = ExtractLine::new("http://x/a", 3, got).expect("a line");
        assert_eq!(
            serde_json::to_string(&line).expect("json"),
            r#"{"url":"http://x/a","seq":3,"skipped":"an element has over 10000 attributes"}"#
        );
    }

    /// Audit 24: 400 nested `<div>`s, each with 5,000 bytes of text, made a 400 MB line for
    /// `x=div` (each div's value holds all the text below it).
    #[test]
    fn values_stop_at_the_cap_and_the_line_says_they_were_cut() {
        let e = extractor(&["x=div", "t=title"]);
        let depth = 400;
        let text = "w".repeat(4_999) + " ";
        let page = format!(
            "<title>t</title>{}{}",
            format!("<div>{text}").repeat(depth),
            "</div>".repeat(depth)
        );
        let got = e.run(page.as_bytes(), None);
        let Extraction::Cut { fields, .. } = &got else {
            panic!("expected a cut, got {} bytes of values", page.len());
        };
        let values = &fields["x"];
        let total: usize = values.iter().map(String::len).sum();
        assert!(total <= MAX_VALUE_BYTES, "{total}");
        // The first div holds everything: 400 x 5,000 bytes; the next ones a little less
        // each, until the cap.
        assert_eq!(values[0].len(), depth * 5_000 - 1);
        assert!(values.len() < depth);
        assert!(
            !fields.contains_key("t"),
            "fields after the cut are left out"
        );
        let line = ExtractLine::new("http://x/d", 1, got).expect("a line");
        let json = serde_json::to_string(&line).expect("json");
        assert!(
            json.ends_with(r#","cut":"values past 8 MiB left out"}"#),
            "{}",
            &json[json.len() - 60..]
        );
        // Attribute values count against the same cap.
        let e = Extractor::new(&["v=a@title".to_string()], 64 << 20).expect("valid");
        let big = "y".repeat(MAX_VALUE_BYTES / 3 + 1);
        let page = format!("<a title={big}>1</a><a title={big}>2</a><a title={big}>3</a>");
        let Extraction::Cut { fields, .. } = e.run(page.as_bytes(), None) else {
            panic!("expected a cut");
        };
        assert_eq!(fields["v"].len(), 2);
    }

    #[test]
    fn an_attribute_name_matches_in_any_case() {
        let e = extractor(&["l=a@HREF", "v=svg@viewBox"]);
        let m = matched(&e, r#"<a HREF="x.html">x</a><svg viewBox="0 0 1 1"></svg>"#);
        assert_eq!(m["l"], ["x.html"]);
        assert_eq!(m["v"], ["0 0 1 1"]);
    }

    #[test]
    fn hostile_pages_end_with_a_value_not_a_panic() {
        let e = extractor(&["d=div", "a=a@href"]);
        // Deep nesting: linear, the shallow elements are still found, and the line says
        // where the tree stopped (audit 24: it said nothing, and a page that matched nothing
        // before the cut had no line at all).
        let deep = format!("<a href=x>x</a>{}<h1>late</h1>", "<div>".repeat(100_000));
        let got = e.run(deep.as_bytes(), None);
        let Extraction::Cut { fields, why } = &got else {
            panic!("{got:?}");
        };
        assert_eq!(fields["a"], ["x"]);
        assert!(
            why.starts_with("the tree stops at 512 nested elements, "),
            "{why}"
        );
        let e_h1 = extractor(&["h=h1"]);
        let line = ExtractLine::new("http://x/deep", 4, e_h1.run(deep.as_bytes(), None));
        let json = serde_json::to_string(&line.expect("a line")).expect("json");
        assert!(
            json.starts_with(r#"{"url":"http://x/deep","seq":4,"cut":"the tree stops at 512"#),
            "{json}"
        );
        // Not HTML at all, invalid UTF-8, an unknown charset.
        assert_eq!(
            e.run(&[0xff, 0xfe, 0x00, 0x01, 0x80], None),
            Extraction::Nothing
        );
        let bad = b"<meta charset=no-such-thing><a href=\xff\xfe>x</a>";
        let m = match e.run(bad, Some("text/html; charset=utf-8")) {
            Extraction::Matched(m) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(m["a"], ["\u{fffd}\u{fffd}"]);
        // One megabyte attribute.
        let huge = format!("<a href=\"{}\">x</a>", "y".repeat(1 << 20));
        assert_eq!(matched(&e, &huge)["a"][0].len(), 1 << 20);
    }
}
