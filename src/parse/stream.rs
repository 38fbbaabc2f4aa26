//! The hot path: one pass of `lol_html` over a page's bytes, collecting links, the title and
//! the text as the tags and text go by. No tree: a parse holds the token being read and
//! `lol_html`'s stack of open elements (together bounded by [`MAX_PARSE_MEMORY`]), its own
//! mirror of that stack (at most [`MAX_DEPTH`] elements, see below) and what it collects (the
//! title stops growing at [`MAX_TITLE_BYTES`]).
//!
//! `lol_html` tokenizes as a browser does (raw text in `<script>`, RCDATA in `<title>`, foreign
//! content) but builds no tree, so this module keeps a small mirror of the stack of open
//! elements ([`mirror`], following the standard's element lists in [`elements`]) with the HTML
//! standard's commonest implied end tags (`<p>`, `<li>`, table cells,
//! `<head>`): enough for the text's line breaks, `<pre>`, `<template>` and hidden elements to
//! come out as the tree parser ([`super::dom`]) makes them. Misnested end tags too: `</br>` is
//! a `<br>`, a `</p>` with no paragraph open an empty one, a heading's end tag closes the open
//! heading of any rank, and an end tag whose element `lol_html` closed early (`</p>` after
//! `<b>…<p>…</b>`) still closes it on the mirror. `lol_html` calls no handler for an end tag
//! that matches none of its open elements, so those are read from the source between the
//! tokens it reports ([`super::stray`]; with the text only: nothing else depends on them).
//! Where a browser would move nodes (text fostered out of a table, the adoption agency's
//! formatting elements) the two may differ: see the tests (`compare.rs`).
//! `lol_html` itself keeps every element never closed (a page of unclosed `<p>`s)
//! on its stack, about 128 bytes each, so past about 65,000 of them the memory limit cuts the
//! page; and as each end tag searches that stack, what the searches past [`MAX_DEPTH`] open
//! elements cost is counted ([`Search`]) and cut at [`MAX_END_TAG_SEARCH`]. It must never
//! fail: a limit cuts the parse and says so in the coverage.
//!
//! Nesting past [`MAX_DEPTH`] loses nothing. Chromium's tree builder keeps parsing there and
//! attaches each deeper element to the current node's parent (the tree is flattened, no node
//! is dropped); the mirror likewise stops growing at [`MAX_DEPTH`] and counts the elements
//! opened past it ([`State::start`]). Their links, title and text are collected, hidden ones
//! (`<script>`, `<template>` ...) still hide their content, and each closes when `lol_html`
//! closes it, so what a page gives past the cap is what the tree parser gives without a cap
//! (the tests compare the two there), but for a few line breaks in misnested markup: there an
//! end tag closes what `lol_html` closes with it, and the implied end tags wait. Once an
//! element is flattened, the end tag of a block (`</p>`, `</h2>`, `</table>` ...) that
//! closes nothing on the mirror still breaks the line, as `</br>` always does: the tree may
//! hold open what `lol_html` closed, and a break too many splits a line where one too few
//! would join two words into one.
//!
//! Per element, what `lol_html` costs is kept small: it stays in its lexer for the whole page
//! (a no-op doctype handler; no switch to its tag scanner and back per tag), nothing is removed
//! from the output nobody reads (a removed element costs boxed mutations for every start tag
//! inside it), and an end tag's handler only records where the tag is: whether it is the
//! element's own is read from the source when the next token comes ([`State::settle`]).

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use encoding_rs::{Encoding, UTF_8};
use lol_html::html_content::{Attribute, Element, TextChunk};
use lol_html::{
    AsciiCompatibleEncoding, HtmlRewriter, MemorySettings, Settings, doc_text, doctype, element,
    end_tag, text,
};

use super::charset::decode_with;
use super::entities;
use super::{
    Collected, Coverage, Href, MAX_DEPTH, MAX_END_TAG_SEARCH, MAX_PARSE_MEMORY, Options, Text,
};

/// Bytes handed to `lol_html` at a time. A token cut by a chunk's end is buffered by `lol_html`
/// (and counted against [`MAX_PARSE_MEMORY`]); the rest is read in place.
const WRITE_CHUNK: usize = 64 * 1024;

/// Bytes handed to `lol_html` at a time while it holds more than [`MAX_DEPTH`] elements open:
/// at most about 1,000 end tags between two checks of [`MAX_END_TAG_SEARCH`], about 0.1 s of
/// searching under 65,000 open elements.
const DEEP_WRITE_CHUNK: usize = 4 * 1024;

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

/// Parses `body` (its byte order mark already skipped), in `encoding`, as `options` ask: the
/// page's text only if their `text` asks for it.
pub(super) fn parse(
    body: &[u8],
    encoding: &'static Encoding,
    options: Options<'_>,
) -> (Collected, Coverage) {
    // `lol_html` reads ASCII-compatible encodings itself; the others (UTF-16, ISO-2022-JP) are
    // decoded whole first, one copy of the body.
    // Only links read from `body` itself may point into it ([`super::Href::Source`]).
    if let Some(ascii) = AsciiCompatibleEncoding::new(encoding) {
        run(body, ascii, options, true)
    } else {
        let decoded = decode_with(encoding, body);
        let utf8 = AsciiCompatibleEncoding::new(UTF_8).expect("UTF-8 is ASCII-compatible");
        run(decoded.as_bytes(), utf8, options, false)
    }
}

fn run(
    body: &[u8],
    encoding: AsciiCompatibleEncoding,
    options: Options<'_>,
    in_place: bool,
) -> (Collected, Coverage) {
    let Options { text, agent } = options;
    let input = Input {
        body,
        encoding: encoding.into(),
        in_place,
    };
    let state = Rc::new(RefCell::new(State {
        skip_text: text == Text::Skip,
        ..State::default()
    }));
    let on_element = {
        let state = Rc::clone(&state);
        move |el: &mut Element<'_, '_>| on_element(&state, input, agent, el)
    };
    let on_text = {
        let state = Rc::clone(&state);
        move |chunk: &mut TextChunk<'_>| {
            let at = chunk.source_location().bytes();
            let mut state = state.borrow_mut();
            state.settle(input, at.start);
            state.text(chunk);
            state.read_to(at.end);
            Ok(())
        }
    };
    // Without the page's text, `lol_html` decodes only the text inside `<title>` elements: the
    // text of every other element is skipped by the tokenizer, never decoded into chunks.
    let (element_content_handlers, document_content_handlers) = match text {
        Text::Extract => (vec![element!("*", on_element)], vec![doc_text!(on_text)]),
        // The no-op doctype handler keeps `lol_html` in its lexer for the whole page. With
        // nothing captured between tags it would drop to its tag scanner after every tag and
        // back to the lexer at the next (every element is matched by `*`): each switch boxes an
        // error and reads the tag's name twice, about four allocations per element.
        Text::Skip => (
            vec![element!("*", on_element), text!("title", on_text)],
            vec![doctype!(|_| Ok(()))],
        ),
    };
    let settings = Settings {
        element_content_handlers,
        document_content_handlers,
        encoding,
        memory_settings: MemorySettings {
            preallocated_parsing_buffer_size: 1024,
            max_allowed_memory_usage: MAX_PARSE_MEMORY,
        },
        // Ambiguous markup is parsed as `lol_html` guesses rather than refused.
        strict: false,
        ..Settings::new()
    };
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    let mut fed = 0;
    let mut outcome = Ok(());
    let mut searched_too_long = false;
    while fed < body.len() {
        // Under many open elements every end tag costs a search of them all: smaller chunks,
        // so that the budget is checked often.
        let deep = state.borrow().search.open > MAX_DEPTH;
        let len = if deep { DEEP_WRITE_CHUNK } else { WRITE_CHUNK };
        let chunk = &body[fed..body.len().min(fed + len)];
        outcome = rewriter.write(chunk);
        if outcome.is_err() {
            break;
        }
        fed += chunk.len();
        if state.borrow_mut().search.account(chunk) > MAX_END_TAG_SEARCH {
            searched_too_long = true;
            break;
        }
    }
    if outcome.is_ok() && !searched_too_long {
        outcome = rewriter.end();
    } else {
        drop(rewriter);
    }
    let mut state = Rc::try_unwrap(state).map_or_else(
        |shared| shared.replace(State::default()),
        RefCell::into_inner,
    );
    // A cut parse read no further than what was written whole.
    state.settle(input, fed);
    let coverage = match outcome {
        Ok(()) if searched_too_long => Coverage::CutAtEndTags { parsed_bytes: fed },
        Ok(()) => Coverage::Whole,
        // `lol_html`'s memory limit. The handlers here never fail, and any other error of
        // `lol_html`'s own keeps what was read before it the same way.
        Err(_) => Coverage::CutAtMemory { parsed_bytes: fed },
    };
    (state.finish(), coverage)
}

/// The bytes `lol_html` reads, for attribute values.
#[derive(Clone, Copy)]
struct Input<'a> {
    body: &'a [u8],
    encoding: &'static Encoding,
    /// `body` is the page the caller gave (not a decoded copy): a link may point into it.
    in_place: bool,
}

impl Input<'_> {
    /// The first value of attribute `name`, decoded as html5ever decodes it. Read from the
    /// source rather than through `lol_html`, whose decoding honours a byte order mark at the
    /// start of a value (an `href` starting with bytes FF FE would be read as UTF-16).
    fn attribute(self, el: &Element<'_, '_>, name: &str) -> Option<String> {
        let attr = el.attributes().iter().find(|a| self.is_named(a, name))?;
        let value = attr
            .value_source_location()
            .and_then(|at| self.body.get(at.bytes()))
            .map_or_else(
                || attr.value(),
                |raw| {
                    let (text, _had_errors) = self.encoding.decode_without_bom_handling(raw);
                    text.into_owned()
                },
            );
        Some(entities::attribute(value))
    }

    /// A link's attribute `name`: [`Input::attribute`]'s value, given as where it lies in the
    /// page when its bytes are that value (no decoding, no character reference, no CR or NUL).
    fn href(self, el: &Element<'_, '_>, name: &str) -> Option<Href> {
        let attr = el.attributes().iter().find(|a| self.is_named(a, name))?;
        if self.in_place
            && let Some(at) = attr.value_source_location().map(|at| at.bytes())
            && let Some(raw) = self.body.get(at.clone())
            && memchr::memchr3(b'&', b'\r', b'\0', raw).is_none()
            && (if self.encoding == UTF_8 {
                std::str::from_utf8(raw).is_ok()
            } else {
                raw.is_ascii()
            })
        {
            return Some(Href::Source(at));
        }
        self.attribute(el, name).map(Href::Owned)
    }
}

/// Longest tag name read from the source into a buffer on the stack.
const NAME_BUF: usize = 32;

impl Input<'_> {
    /// The element's name as `el.tag_name()` gives it (ASCII lowercased), read from its start
    /// tag in the source into `buf` when it is short and plain ASCII; `None` otherwise.
    fn tag_name<'b>(self, el: &Element<'_, '_>, buf: &'b mut [u8; NAME_BUF]) -> Option<&'b str> {
        let raw = self.body.get(el.source_location().bytes())?;
        let raw = raw.strip_prefix(b"<")?;
        let len = raw
            .iter()
            .position(|b| matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'/' | b'>'))
            .unwrap_or(raw.len());
        let raw = &raw[..len];
        if raw.is_empty()
            || raw.len() > NAME_BUF
            || !raw.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        {
            return None;
        }
        let out = &mut buf[..raw.len()];
        out.copy_from_slice(raw);
        out.make_ascii_lowercase();
        std::str::from_utf8(out).ok()
    }

    /// Whether `attr` is named `name` (ASCII lower case), as `attr.name() == name` says, read
    /// from the source without building the lowercased name: in an ASCII-compatible encoding
    /// the bytes of an ASCII name are its characters.
    fn is_named(self, attr: &Attribute<'_>, name: &str) -> bool {
        match attr
            .name_source_location()
            .and_then(|at| self.body.get(at.bytes()))
        {
            Some(raw) => raw.eq_ignore_ascii_case(name.as_bytes()),
            None => attr.name() == name,
        }
    }
}

/// A start tag, for a crawl whose product token is `agent` ([`Options::agent`]).
fn on_element(
    state: &Rc<RefCell<State>>,
    input: Input<'_>,
    agent: &str,
    el: &mut Element<'_, '_>,
) -> lol_html::HandlerResult {
    // Nothing reads the rewritten output, and nothing is removed from it: `lol_html` hands the
    // sink each token's own bytes, where a removed element would cost a boxed set of mutations
    // for it and for every start tag inside it.
    let mut buf = [0; NAME_BUF];
    let source_name = input.tag_name(el, &mut buf);
    let owned;
    let name: &str = if let Some(name) = source_name {
        name
    } else {
        owned = el.tag_name();
        &owned
    };
    let html = el.namespace_uri() == HTML_NS;
    let attr = |name: &str| input.attribute(el, name);
    let href = |name: &str| input.href(el, name);
    let at = el.source_location().bytes();
    let mut shared = state.borrow_mut();
    shared.settle(input, at.start);
    let opened = shared.start(name, html, el.can_have_content(), agent, attr, href);
    shared.read_to(at.end);
    if el.can_have_content() {
        shared.search.pushed();
    }
    drop(shared);
    if let Some(place) = opened {
        let state = Rc::clone(state);
        let mut name = match place {
            Place::Mirror { .. } => {
                common_name(name).map_or_else(|| Cow::Owned(name.to_owned()), Cow::Borrowed)
            }
            // Closed by whichever end tag `lol_html` closes it with: its name is not read.
            Place::Flat(_) | Place::Merged => Cow::Borrowed(""),
        };
        el.on_end_tag(end_tag!(move |end| {
            // `lol_html` also calls this when another end tag closes the element (`</svg>` after
            // a `<p>` that left the SVG); html5ever decides that by its own rules, which the
            // mirror keeps, so only the element's own end tag counts there (a flattened one
            // closes with either: [`State::start`]). Which end tag it is is
            // read from the source when the next token comes ([`State::settle`]): this
            // handler cannot borrow the page, and `end.name()` would be a `String` per element.
            let at = end.source_location().bytes();
            let mut state = state.borrow_mut();
            state.search.popped(at.start);
            state.ended.push(Ended {
                at,
                // Called once (`end_tag!` asks for `FnMut`): the name moves out.
                name: std::mem::take(&mut name),
                place,
            });
            Ok(())
        }))?;
    }
    Ok(())
}

/// Where an element went when it opened.
#[derive(Clone, Copy)]
enum Place {
    /// On the mirror, at `depth`; `known` is its name if this module treats it apart.
    Mirror {
        depth: usize,
        serial: u32,
        known: &'static str,
    },
    /// Past [`MAX_DEPTH`]: counted in [`State::flat`], not on the mirror.
    Flat(Open),
    /// A second `<html>`, `<head>` or `<body>`: on `lol_html`'s stack only.
    Merged,
}

/// What `lol_html`'s end tags cost: it finds an end tag's element by searching its stack of
/// open elements from the top (all of it for a stray end tag), then the end-tag handlers of
/// them all from the bottom, so each end tag costs time in proportion to the elements open.
/// Past [`MAX_DEPTH`] of them that is counted, per chunk written ([`Search::account`]).
#[derive(Default)]
struct Search {
    /// Elements `lol_html` holds open: every start tag that can have content pushes one (even
    /// one the mirror closed by an implied end tag since), each end-tag handler call pops one.
    open: usize,
    /// The most `open` was since the last chunk was counted.
    open_max: usize,
    /// End tags that closed elements since then (one can close several).
    matched: usize,
    /// Where the last of those starts.
    last_end: Option<usize>,
    /// Open elements searched past the first [`MAX_DEPTH`], weighted as in [`Search::account`].
    cost: u64,
}

/// How much slower a stray end tag's search of `lol_html`'s stack is than a matched one's
/// search of its handlers, per element (measured: about 2 ns against 0.5).
const STRAY_WEIGHT: u64 = 4;

impl Search {
    fn pushed(&mut self) {
        self.open += 1;
        self.open_max = self.open_max.max(self.open);
    }

    fn popped(&mut self, end_tag_at: usize) {
        self.open = self.open.saturating_sub(1);
        if self.last_end != Some(end_tag_at) {
            self.last_end = Some(end_tag_at);
            self.matched += 1;
        }
    }

    /// Counts the end tags of `chunk`, just written, at the most elements open while it was
    /// read; returns the cost so far. Nothing is counted (nor read) under [`MAX_DEPTH`] open.
    fn account(&mut self, chunk: &[u8]) -> u64 {
        let past = self.open_max.saturating_sub(MAX_DEPTH) as u64;
        if past > 0 {
            let end_tags = memchr::memmem::find_iter(chunk, b"</").count();
            let stray = end_tags.saturating_sub(self.matched) as u64;
            self.cost = self
                .cost
                .saturating_add((stray * STRAY_WEIGHT + self.matched as u64) * past);
        }
        self.open_max = self.open;
        self.matched = 0;
        self.cost
    }
}

/// An end tag `lol_html` gave an element's handler, not yet compared with the element's name.
struct Ended {
    /// The end tag in the source.
    at: std::ops::Range<usize>,
    /// The element's name, as `Element::tag_name` gives it.
    name: Cow<'static, str>,
    place: Place,
}

impl Input<'_> {
    /// Whether the end tag at `at` is named `name`, as `EndTag::name() == name` says: its name
    /// read from the source, compared without a copy when it is plain ASCII.
    fn end_tag_is(self, at: std::ops::Range<usize>, name: &str) -> bool {
        let Some(raw) = self.body.get(at).and_then(|raw| raw.strip_prefix(b"</")) else {
            return false;
        };
        let len = raw
            .iter()
            .position(|b| matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'/' | b'>'))
            .unwrap_or(raw.len());
        let raw = &raw[..len];
        if raw.is_ascii() {
            raw.eq_ignore_ascii_case(name.as_bytes())
        } else {
            self.encoding.decode(raw).0.to_ascii_lowercase() == name
        }
    }
}

impl Input<'_> {
    /// Whether the end tag at `at` is a heading's, of any rank.
    fn end_tag_is_heading(self, at: std::ops::Range<usize>) -> bool {
        self.body
            .get(at)
            .and_then(|raw| raw.strip_prefix(b"</"))
            .is_some_and(|raw| match raw {
                [h, rank, rest @ ..] => {
                    h.eq_ignore_ascii_case(&b'h')
                        && (b'1'..=b'6').contains(rank)
                        && rest.first().is_none_or(|b| {
                            matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'/' | b'>')
                        })
                }
                _ => false,
            })
    }
}

mod elements;
mod mirror;

use mirror::{Open, State};

/// Names common enough that an end tag's handler should not copy them.
macro_rules! common_names {
    ($($name:literal)*) => {
        fn common_name(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some($name),)*
                _ => None,
            }
        }
    };
}

common_names! {
    "a" "abbr" "b" "body" "button" "code" "dd" "div" "dl" "dt" "em" "footer" "form" "h1" "h2"
    "h3" "h4" "h5" "h6" "head" "header" "html" "i" "label" "li" "main" "nav" "ol" "option" "p"
    "pre" "script" "section" "select" "small" "span" "strong" "style" "sub" "sup" "table"
    "tbody" "td" "textarea" "th" "thead" "title" "tr" "u" "ul"
}
