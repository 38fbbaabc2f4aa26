//! The hot path: one pass of `lol_html` over a page's bytes, collecting links, the title and
//! the text as the tags and text go by. No tree: a parse holds the token being read and
//! `lol_html`'s stack of open elements (together bounded by [`MAX_PARSE_MEMORY`]), its own
//! mirror of that stack (at most [`MAX_DEPTH`] elements, see below) and what it collects (the
//! title stops growing at [`MAX_TITLE_BYTES`]).
//!
//! `lol_html` tokenizes as a browser does (raw text in `<script>`, RCDATA in `<title>`, foreign
//! content) but builds no tree, so this module keeps a small mirror of the stack of open
//! elements with the HTML standard's commonest implied end tags (`<p>`, `<li>`, table cells,
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
use lol_html::html_content::{Attribute, Element, TextChunk, TextType};
use lol_html::{
    AsciiCompatibleEncoding, HtmlRewriter, MemorySettings, Settings, doc_text, doctype, element,
    end_tag, text,
};

use super::charset::decode_with;
use super::entities::{self, Mode, Nul};
use super::stray;
use super::{
    Collected, Coverage, Href, MAX_DEPTH, MAX_END_TAG_SEARCH, MAX_PARSE_MEMORY, MAX_TITLE_BYTES,
    Options, Text, TextBuilder, is_block, is_heading, is_hidden, is_preformatted,
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

/// An element on the mirror of the stack of open elements.
#[derive(Clone, Copy)]
struct Open {
    serial: u32,
    /// The tag name if it is one this module treats apart, else "".
    name: &'static str,
    html: bool,
    /// Counts in `in_head`: its text is not shown.
    in_head: bool,
}

/// Everything the handlers share.
// The `seen_*` flags are the tree builder's own: which of the unique elements exist.
#[allow(clippy::struct_excessive_bools)]
#[derive(Default)]
struct State {
    out: Collected,
    text: TextBuilder,
    /// The first HTML `<title>`'s text while it is open, and its serial.
    title: Option<(u32, TextBuilder)>,
    title_seen: bool,
    /// The mirror: never more than [`MAX_DEPTH`] elements.
    open: Vec<Open>,
    /// Elements opened while the mirror was full and not closed yet: the mirror's top is not
    /// the current node while there are any. See [`State::start`].
    flat: usize,
    /// Of those, the foreign ones (`<svg>`, `<math>` and what they hold).
    flat_foreign: usize,
    /// An element was flattened: the mirror and `lol_html` may part from there on.
    went_flat: bool,
    next_serial: u32,
    in_head: usize,
    in_pre: usize,
    /// `<p>`s on the mirror: with none, a start tag that closes a `<p>` need not look for one.
    open_p: usize,
    in_template: usize,
    /// Inside an element whose content is never text (script, style, title ...).
    in_hidden: usize,
    seen_html: bool,
    seen_head: bool,
    seen_body: bool,
    /// What `lol_html`'s end tags cost so far.
    search: Search,
    /// Raw text held back because a chunk ended inside a character reference.
    pending: String,
    pending_mode: Option<(Mode, Target)>,
    /// The page's text is not wanted ([`Text::Skip`]): only the title's text is kept.
    skip_text: bool,
    /// End tags seen since the last token, in the order `lol_html` gave them.
    ended: Vec<Ended>,
    /// Where the last token `lol_html` reported ends in the source (with the text only): what
    /// lies between it and the next is what reached no handler, stray end tags among it.
    read: usize,
}

/// Where a run of text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Title,
    Text { preformatted: bool },
}

impl State {
    /// Closes the elements whose own end tags came since the last token, before anything
    /// else reads the mirror: the next start tag, text, or the end, which starts at `next` in
    /// the source. The end tags `lol_html` matched with no open element (a stray `</p>`,
    /// `</br>`) reached no handler: they are read from the source between the tokens that did
    /// ([`State::strays`]), in their place among the others.
    fn settle(&mut self, input: Input<'_>, next: usize) {
        if !self.ended.is_empty() {
            let mut ended = std::mem::take(&mut self.ended);
            let mut rest = &ended[..];
            while let Some(first) = rest.first() {
                // The handlers one end tag called, innermost element first.
                let at = first.at.clone();
                let len = rest.iter().take_while(|e| e.at.start == at.start).count();
                self.strays(input, at.start);
                self.end_tag(input, &rest[..len]);
                self.read_to(at.end);
                rest = &rest[len..];
            }
            // Kept for its capacity: no allocation per end tag.
            ended.clear();
            self.ended = ended;
        }
        self.strays(input, next);
    }

    /// The source is read up to `end`: a token `lol_html` reported ends there.
    fn read_to(&mut self, end: usize) {
        self.read = self.read.max(end);
    }

    /// Applies the stray end tags between what was read and `next` (see [`super::stray`]).
    /// Only the text's line breaks depend on them: without the text, nothing is read.
    fn strays(&mut self, input: Input<'_>, next: usize) {
        if next <= self.read || self.skip_text {
            return;
        }
        let from = self.read;
        self.read = next;
        if let Some(gap) = input.body.get(from..next) {
            for name in stray::end_tags(gap) {
                let mut buf = [0; NAME_BUF];
                if let Some(name) = stray::lowercase(name, &mut buf) {
                    self.end_named(intern(name));
                }
            }
        }
    }

    /// One end tag and the elements `lol_html` closed with it (`group`).
    fn end_tag(&mut self, input: Input<'_>, group: &[Ended]) {
        // Of `<p>`, the headings and the blocks that close in scope, html5ever closes the one
        // its rule names (the nearest `<p>` in button scope, the nearest heading of any rank,
        // the nearest `<div>` in scope), whichever `lol_html` closed.
        let mut by_name = false;
        for e in group {
            match e.place {
                Place::Mirror {
                    depth,
                    serial,
                    known,
                } => {
                    if by_name {
                        continue;
                    }
                    let own = input.end_tag_is(e.at.clone(), &e.name);
                    if own && (known == "p" || known == "li" || closes_in_scope(known)) {
                        by_name = true;
                        self.end_named(known);
                    } else if is_heading(known) && (own || input.end_tag_is_heading(e.at.clone())) {
                        by_name = true;
                        self.end_named("h1");
                    } else if own {
                        self.end(depth, serial, known);
                    }
                }
                Place::Merged => {}
                Place::Flat(o) => {
                    // A flattened `<p>` (heading) closed by `</p>` (a heading's end tag) was
                    // the one its rule closes: the mirror's stay open.
                    if !by_name && (o.name == "p" || is_heading(o.name)) {
                        by_name = if o.name == "p" {
                            input.end_tag_is(e.at.clone(), "p")
                        } else {
                            input.end_tag_is_heading(e.at.clone())
                        };
                    }
                    self.flush();
                    self.flat -= 1;
                    if !o.html {
                        self.flat_foreign -= 1;
                    }
                    self.close(o);
                }
            }
        }
    }

    /// A start tag. Returns where the element went (it can have content), for its end tag.
    ///
    /// Past [`MAX_DEPTH`] open elements the mirror is full and the element is flattened, as
    /// Chromium's tree builder attaches elements past its 512 to the current node's parent:
    /// it is counted, not pushed, and stays open until `lol_html` closes it (its own end tag,
    /// or another that closes an element it is inside). Its links and text are collected and
    /// its hidden content stays hidden, as on the mirror. While flattened elements are open
    /// the mirror's top is not the current node, so the implied end tags, which read the
    /// mirror from its top, wait until they are closed: past the cap `<p>one<p>two` keeps both
    /// open (the line breaks come out the same), and a page of unclosed elements there grows
    /// only `lol_html`'s own stack, which its memory limit bounds.
    fn start(
        &mut self,
        name: &str,
        lol_html_says_html: bool,
        can_have_content: bool,
        agent: &str,
        attr: impl Fn(&str) -> Option<String>,
        href: impl Fn(&str) -> Option<Href>,
    ) -> Option<Place> {
        self.flush();
        let known = intern(name);
        // In foreign content html5ever decides: a few HTML tags break out of it, the rest are
        // foreign (`lol_html` gives an SVG <title> the HTML namespace of its content, and a <p>
        // in <svg> the SVG one). Past the cap, where no break-out pops anything, `lol_html`
        // decides, unless an element below is foreign.
        let html = match self.open.last() {
            _ if self.flat > 0 => lol_html_says_html && self.flat_foreign == 0,
            Some(top) if !top.html && !is_integration_point(top.name) => {
                breaks_out_of_foreign(name)
            }
            _ => lol_html_says_html,
        };
        if html {
            // A second <html>, <head> or <body> adds nothing to the tree: html5ever merges its
            // attributes or ignores it.
            let again = match known {
                "html" => std::mem::replace(&mut self.seen_html, true),
                "head" => std::mem::replace(&mut self.seen_head, true) || self.seen_body,
                "body" | "frameset" => std::mem::replace(&mut self.seen_body, true),
                _ => false,
            };
            if again {
                return can_have_content.then_some(Place::Merged);
            }
            if !is_head_content(known) && known != "html" {
                self.seen_body = true;
            }
            if self.flat == 0 {
                self.implied_ends(known);
            }
        }
        if self.in_template == 0 && self.in_hidden == 0 {
            if known == "title" {
                // Only the first HTML title counts, as in a browser, even if it is blank;
                // an SVG icon's <title> is not the page's.
                if html && !self.title_seen && can_have_content {
                    self.title_seen = true;
                    self.title = Some((self.next_serial, TextBuilder::default()));
                }
            } else {
                self.out.element(agent, name, attr, href);
            }
        }
        if self.in_hidden == 0 {
            self.boundary(known);
        }
        if !can_have_content {
            return None;
        }
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let depth = self.open.len();
        // Before the body, html5ever puts <noframes> in the head, whose text is not shown.
        let in_head = known == "head" || (known == "noframes" && !self.seen_body);
        let open = Open {
            serial,
            name: known,
            html,
            in_head,
        };
        if in_head {
            self.in_head += 1;
        }
        match known {
            "template" => self.in_template += 1,
            "p" => self.open_p += 1,
            _ if is_preformatted(known) => self.in_pre += 1,
            _ => {}
        }
        if is_hidden(known) && known != "template" {
            self.in_hidden += 1;
        }
        if depth >= MAX_DEPTH {
            self.flat += 1;
            self.went_flat = true;
            if !html {
                self.flat_foreign += 1;
            }
            return Some(Place::Flat(open));
        }
        self.open.push(open);
        debug_assert!(self.open.len() <= MAX_DEPTH, "the mirror is bounded");
        Some(Place::Mirror {
            depth,
            serial,
            known,
        })
    }

    /// The end tag of the element `known` pushed at `depth` with `serial`.
    fn end(&mut self, depth: usize, serial: u32, known: &str) {
        self.flush();
        if self.open.get(depth).is_some_and(|o| o.serial == serial) {
            // html5ever's "any other end tag": an element that is not special (a <span>, a
            // <b>) is not closed past a special one (a <div>, a <p>) opened inside it.
            if is_special(known) || !self.open[depth + 1..].iter().any(|o| is_special(o.name)) {
                self.pop_to(depth);
            }
        }
    }

    /// An end tag `known` as html5ever's "in body" rules read it by its name alone, for the
    /// end tags `lol_html` matched with no open element (its stack and the mirror part where
    /// the mirror closed an element early, or kept one `lol_html` closed) and for those of
    /// `<p>`, the headings, `<li>` and the blocks that close in scope. The tags whose rule moves nodes (the formatting elements' adoption
    /// agency, `</form>`) are left as `lol_html` leaves them; so are end tags with no rule of
    /// their own here.
    fn end_named(&mut self, known: &str) {
        self.flush();
        // Once past the cap the tree may hold open an element the stream flattened and
        // `lol_html` closed since: an end tag of a block that closes nothing on the mirror
        // still breaks the line (a break too many splits a line, one too few would join two
        // words).
        let went_flat = self.went_flat;
        let keeps_break = |known: &str| went_flat && is_block(known) && known != "body";
        if self.flat > 0 || self.in_hidden > 0 || self.in_head > 0 {
            // The mirror's top is not the current node (past the cap), or the text is hidden.
            if self.in_hidden == 0 && self.in_template == 0 && keeps_break(known) {
                self.boundary(known);
            }
            return;
        }
        if matches!(known, "br" | "p") {
            // Both end foreign content, as their start tags do.
            self.leave_foreign();
            if self.open.last().is_some_and(|o| is_table_part(o.name)) {
                // In a table, not in a cell: html5ever puts the `<br>` (the empty `<p>`)
                // before the table, where the table's own line break already is.
                return;
            }
        }
        let closed = match known {
            "p" => self.close_in_scope(&["p"], &["button"]),
            _ if is_heading(known) => {
                self.close_in_scope(&["h1", "h2", "h3", "h4", "h5", "h6"], &[])
            }
            "li" => self.close_in_scope(&["li"], &["ol", "ul"]),
            _ if closes_in_scope(known) => self.close_in_scope(&[known], &[]),
            // A table's parts close in table scope (a cell inside closes with them).
            _ if is_table_part(known) || matches!(known, "td" | "th" | "caption") => {
                self.close_in_table_scope(known)
            }
            // Closes the nearest template, whatever is open inside it.
            "template" => match self
                .open
                .iter()
                .rposition(|o| o.html && o.name == "template")
            {
                Some(depth) => {
                    self.pop_to(depth);
                    true
                }
                None => false,
            },
            _ => false,
        };
        // `</br>` is "a `br` start tag", and a `</p>` that closed nothing an empty paragraph
        // (in a template's content, which the tree parser's text leaves out).
        if self.in_template == 0
            && (known == "br" || (!closed && (known == "p" || keeps_break(known))))
        {
            self.boundary(known);
        }
    }

    /// The implied end tags the HTML standard's "in body" rules give a start tag `known`, for
    /// the elements that are commonly left open.
    fn implied_ends(&mut self, known: &str) {
        let Some(top) = self.open.last() else { return };
        if top.html && top.name == "head" && !is_head_content(known) {
            self.pop_to(self.open.len() - 1);
        } else {
            self.leave_foreign();
        }
        match known {
            _ if is_heading(known)
                && self
                    .open
                    .last()
                    .is_some_and(|o| o.html && is_heading(o.name)) =>
            {
                self.pop_to(self.open.len() - 1);
            }
            "li" => self.close_list_item(&["li"]),
            "dd" | "dt" => self.close_list_item(&["dd", "dt"]),
            "td" | "th" => {
                self.close_in_scope(&["td", "th"], &["table"]);
            }
            "tr" => {
                self.close_in_scope(&["tr"], &["table"]);
            }
            "tbody" | "thead" | "tfoot" => {
                self.close_in_scope(&["tbody", "thead", "tfoot"], &["table"]);
            }
            "option" | "optgroup" if self.open.last().is_some_and(|o| o.name == "option") => {
                self.pop_to(self.open.len() - 1);
            }
            // A link or a <nobr> inside one of its own kind closes it first, and a button
            // closes an open button: a page of unclosed <a>s is a list of links, not a nesting
            // 600 deep (audit 24).
            "button" => {
                self.close_in_scope(&["button"], &[]);
            }
            "a" | "nobr" => self.close_formatting(known),
            _ => {}
        }
        if closes_p(known) && self.open_p > 0 {
            self.close_in_scope(&["p"], &["button"]);
        }
    }

    /// A `<li>` (`<dd>`, `<dt>`) start tag closes the nearest open one of `names` unless a
    /// special element other than `<address>`, `<div>` and `<p>` comes first (a `<li>` in an
    /// `<h2>` in a `<li>` nests).
    fn close_list_item(&mut self, names: &[&str]) {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if !o.html {
                return;
            }
            if names.contains(&o.name) {
                self.pop_to(depth);
                return;
            }
            if is_special(o.name) && !matches!(o.name, "address" | "div" | "p") {
                return;
            }
        }
    }

    /// Pops the foreign elements (`<svg>`, `<math>` and what they hold) off the top of the
    /// mirror, down to an HTML element or an integration point.
    fn leave_foreign(&mut self) {
        while self
            .open
            .last()
            .is_some_and(|o| !o.html && !is_integration_point(o.name))
        {
            self.pop_to(self.open.len() - 1);
        }
    }

    /// The adoption agency's simple case: pops to the nearest open formatting element `known`
    /// when only elements that are not special (a <span>, a <b>) were opened inside it. With a
    /// block in between (`<a><div><a>`) html5ever moves nodes; the mirror leaves it open.
    fn close_formatting(&mut self, known: &str) {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if o.html && o.name == known {
                self.pop_to(depth);
                return;
            }
            if !o.html || is_special(o.name) {
                return;
            }
        }
    }

    /// Pops to the nearest open element named one of `names`, unless a scope boundary (or one
    /// of `stop`) comes first; whether it found one.
    fn close_in_scope(&mut self, names: &[&str], stop: &[&str]) -> bool {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if !o.html {
                return false;
            }
            if names.contains(&o.name) {
                self.pop_to(depth);
                return true;
            }
            if stop.contains(&o.name) || is_scope_boundary(o.name) {
                return false;
            }
        }
        false
    }

    /// Pops to the nearest open element `known` unless a table or template comes first (the
    /// HTML standard's "table scope").
    fn close_in_table_scope(&mut self, known: &str) -> bool {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if !o.html {
                return false;
            }
            if o.name == known {
                self.pop_to(depth);
                return true;
            }
            if matches!(o.name, "html" | "table" | "template") {
                return false;
            }
        }
        false
    }

    /// Closes the elements from the top of the mirror down to `depth`, each as the tree walk
    /// closes it.
    fn pop_to(&mut self, depth: usize) {
        // Elements on the mirror close only when no flattened one is open: their own end tags
        // close those first (`lol_html` closes everything inside), and the implied end tags
        // wait for them.
        debug_assert!(
            self.flat == 0 || depth >= self.open.len(),
            "flattened ones open"
        );
        while self.open.len() > depth {
            let Some(o) = self.open.pop() else { return };
            self.close(o);
        }
    }

    /// Closes `o`, off the mirror or flattened, as the tree walk closes an element.
    fn close(&mut self, o: Open) {
        if o.in_head {
            self.in_head -= 1;
        }
        match o.name {
            "template" => self.in_template -= 1,
            "p" => self.open_p -= 1,
            name if is_preformatted(name) => self.in_pre -= 1,
            _ => {}
        }
        if is_hidden(o.name) && o.name != "template" {
            self.in_hidden -= 1;
        }
        if self.in_hidden == 0 {
            self.boundary(o.name);
        }
        if self.title.as_ref().is_some_and(|(s, _)| *s == o.serial)
            && let Some((_, title)) = self.title.take()
        {
            let title = super::cap_title(title.finish());
            self.out.title = (!title.is_empty()).then_some(title);
        }
    }

    fn text(&mut self, chunk: &TextChunk<'_>) {
        let raw = chunk.as_str();
        if self.flat == 0
            && let Some(top) = self.open.last()
            && top.html
            && top.name == "head"
            && raw
                .bytes()
                .any(|b| !matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' '))
        {
            // Text in <head> ends it (html5ever moves on to the body).
            self.pop_to(self.open.len() - 1);
            self.seen_body = true;
        }
        let target = if self.title.is_some() && self.in_hidden == 1 {
            Target::Title
        } else if self.in_hidden > 0 || self.in_template > 0 || self.in_head > 0 || self.skip_text {
            self.pending.clear();
            return;
        } else {
            Target::Text {
                preformatted: self.in_pre > 0,
            }
        };
        let mode = match chunk.text_type() {
            TextType::Data => Mode {
                refs: true,
                in_attribute: false,
                nul: Nul::Drop,
            },
            TextType::RCData => Mode {
                refs: true,
                in_attribute: false,
                nul: Nul::Replace,
            },
            _ => Mode {
                refs: false,
                in_attribute: false,
                nul: Nul::Replace,
            },
        };
        if self.pending_mode.is_some_and(|m| m != (mode, target)) {
            self.flush();
        }
        if self.pending.is_empty() {
            // The common case: nothing held back, and the chunk cuts no reference or CR/LF
            // pair, so it is decoded where it lies instead of through `pending`.
            let end = if chunk.last_in_text_node() {
                raw.len()
            } else {
                entities::safe_end(raw)
            };
            if end == raw.len() {
                self.pending_mode = None;
                let decoded = entities::decode(raw, mode);
                deliver(&mut self.title, &mut self.text, &decoded, target);
                return;
            }
        }
        self.pending.push_str(raw);
        self.pending_mode = Some((mode, target));
        let end = if chunk.last_in_text_node() {
            self.pending.len()
        } else {
            entities::safe_end(&self.pending)
        };
        self.emit(end);
    }

    /// A line break or space in the text where an element opens or closes, if the text is
    /// wanted.
    fn boundary(&mut self, name: &str) {
        if !self.skip_text {
            self.text.boundary(name);
        }
    }

    /// Sends everything held back on (at a tag or the end, no reference goes on).
    fn flush(&mut self) {
        self.emit(self.pending.len());
    }

    fn emit(&mut self, end: usize) {
        let Some((mode, target)) = self.pending_mode else {
            return;
        };
        if end == 0 {
            return;
        }
        let decoded = entities::decode(&self.pending[..end], mode);
        deliver(&mut self.title, &mut self.text, &decoded, target);
        drop(decoded);
        self.pending.drain(..end);
        if self.pending.is_empty() {
            self.pending_mode = None;
        }
    }

    fn finish(mut self) -> Collected {
        self.flush();
        // Of the flattened elements left open, only a title still matters at the end.
        if self.flat > 0
            && let Some((serial, _)) = self.title
        {
            self.close(Open {
                serial,
                name: "title",
                html: true,
                in_head: false,
            });
        }
        self.flat = 0;
        self.pop_to(0);
        self.out.text = self.text.finish();
        self.out
    }
}

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

/// Adds decoded text to the title or the page's text.
fn deliver(
    title: &mut Option<(u32, TextBuilder)>,
    text: &mut TextBuilder,
    decoded: &str,
    target: Target,
) {
    match target {
        Target::Title => {
            if let Some((_, title)) = title {
                title.push_capped(decoded, MAX_TITLE_BYTES);
            }
        }
        Target::Text { preformatted } => text.push(decoded, preformatted),
    }
}

/// The names this module treats apart, as `&'static str`; anything else is "".
macro_rules! known_names {
    ($($name:literal)*) => {
        fn intern(name: &str) -> &'static str {
            match name {
                $($name => $name,)*
                _ => "",
            }
        }
    };
}

known_names! {
    "address" "annotation-xml" "applet" "article" "aside" "blockquote" "body" "br" "button"
    "caption" "center" "dd" "desc" "details" "dialog" "dir" "div" "dl" "dt" "fieldset"
    "figcaption" "figure" "footer" "foreignobject" "form" "frameset" "h1" "h2" "h3" "h4" "h5"
    "h6" "head" "header" "hgroup" "hr" "html" "iframe" "legend" "li" "listing" "main" "marquee"
    "menu" "mi" "mn" "mo" "ms" "mtext" "nav" "noscript" "object" "ol" "optgroup" "option" "p"
    "plaintext" "pre" "script" "search" "section" "style" "summary" "table" "tbody" "td"
    "template" "tfoot" "th" "thead" "title" "tr" "ul" "xmp" "base" "link" "meta" "noframes"
    "basefont" "a" "nobr"
}

/// The HTML standard's "special" elements, among the names kept here.
fn is_special(known: &str) -> bool {
    !matches!(
        known,
        "" | "a" | "dialog" | "legend" | "nobr" | "optgroup" | "option"
    )
}

/// Elements that may stay in `<head>`; any other start tag ends it.
fn is_head_content(known: &str) -> bool {
    matches!(
        known,
        "base"
            | "basefont"
            | "link"
            | "meta"
            | "title"
            | "noscript"
            | "noframes"
            | "style"
            | "script"
            | "template"
            | "head"
    )
}

/// Start tags that close an open `<p>` (in button scope).
fn closes_p(known: &str) -> bool {
    is_heading(known)
        || matches!(
            known,
            "address"
                | "article"
                | "aside"
                | "blockquote"
                | "center"
                | "details"
                | "dialog"
                | "dir"
                | "div"
                | "dl"
                | "fieldset"
                | "figcaption"
                | "figure"
                | "footer"
                | "header"
                | "hgroup"
                | "main"
                | "menu"
                | "nav"
                | "ol"
                | "p"
                | "search"
                | "section"
                | "summary"
                | "ul"
                | "pre"
                | "listing"
                | "form"
                | "plaintext"
                | "hr"
                | "xmp"
                | "li"
                | "dd"
                | "dt"
        )
}

/// End tags that close the element of their name if it is in scope, and are ignored if not
/// ("in body"; `</p>`, `</li>` and the headings have rules of their own).
fn closes_in_scope(known: &str) -> bool {
    matches!(
        known,
        "address"
            | "applet"
            | "article"
            | "aside"
            | "blockquote"
            | "button"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "header"
            | "hgroup"
            | "listing"
            | "main"
            | "marquee"
            | "menu"
            | "nav"
            | "object"
            | "ol"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "ul"
    )
}

/// The parts of a table whose text is not in a cell: html5ever moves what is put there.
fn is_table_part(known: &str) -> bool {
    matches!(known, "table" | "tbody" | "thead" | "tfoot" | "tr")
}

/// The HTML standard's "has an element in scope" boundaries.
fn is_scope_boundary(known: &str) -> bool {
    matches!(
        known,
        "applet" | "caption" | "html" | "table" | "td" | "th" | "marquee" | "object" | "template"
    )
}

/// Foreign elements whose content is HTML again.
fn is_integration_point(known: &str) -> bool {
    matches!(
        known,
        "foreignobject" | "desc" | "title" | "annotation-xml" | "mi" | "mo" | "mn" | "ms" | "mtext"
    )
}

/// HTML start tags that end foreign content (`<font>` with attributes too, not kept here).
fn breaks_out_of_foreign(name: &str) -> bool {
    is_heading(name)
        || matches!(
            name,
            "b" | "big"
                | "blockquote"
                | "body"
                | "br"
                | "center"
                | "code"
                | "dd"
                | "div"
                | "dl"
                | "dt"
                | "em"
                | "embed"
                | "head"
                | "hr"
                | "i"
                | "img"
                | "li"
                | "listing"
                | "menu"
                | "meta"
                | "nobr"
                | "ol"
                | "p"
                | "pre"
                | "ruby"
                | "s"
                | "small"
                | "span"
                | "strong"
                | "strike"
                | "sub"
                | "sup"
                | "table"
                | "tt"
                | "u"
                | "ul"
                | "var"
        )
}
