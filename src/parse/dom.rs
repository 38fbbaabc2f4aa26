//! The reference parser: html5ever builds the whole tree (scraper's `Html`), then one walk
//! collects what [`super::stream`] collects in one pass over the bytes.
//!
//! It is no longer on the crawl's hot path: it stays as the oracle the streaming parser is
//! compared with (the tests on every page of a generated web), as the "old" side of
//! `benches/parse.rs`, and as the depth-capped tree builder of `extract`, which gives it only
//! pages under `--extract-max-bytes`. It stops at [`MAX_DEPTH`] nested elements, where the
//! stream flattens and goes on: a page past the cap is compared with this parse unbounded
//! ([`parse_html_unbounded`], test pages of a few thousand elements at most). It must never be called on a page of unbounded size: its
//! memory grows with the page (about 12 bytes of tree per byte of markup).

use html5ever::driver::{self, ParseOpts, Parser};
use html5ever::tendril::{StrTendril, TendrilSink};
use scraper::{ElementRef, Html, HtmlTreeSink, Node};
use url::Url;

use super::charset::decode;
use super::{
    Collected, Coverage, Href, MAX_DEPTH, ParsedPage, TextBuilder, cap_title, collapse, finish,
    is_hidden, is_preformatted,
};
use crate::config::PRODUCT_TOKEN;

/// Text fed to the parser between two depth checks. Smaller chunks catch a runaway page
/// sooner; the check itself costs O(`MAX_DEPTH`).
pub(super) const PARSE_CHUNK: usize = 4096;

/// [`super::parse_html`] as it was before the streaming parser: decode, build the tree, walk it.
pub fn parse_html(body: &[u8], content_type: Option<&str>, page_url: &Url) -> ParsedPage {
    parse_html_for(body, content_type, page_url, PRODUCT_TOKEN)
}

/// [`parse_html`] for a crawl whose product token is `agent` ([`super::Options::agent`]): the
/// robots `<meta>` it obeys besides `robots`. The tree parse always collects the text.
pub fn parse_html_for(
    body: &[u8],
    content_type: Option<&str>,
    page_url: &Url,
    agent: &str,
) -> ParsedPage {
    let (text, encoding) = decode(body, content_type);
    let (document, coverage) = parse_document(&text);
    finish(
        Walk::run(&document, agent),
        &[],
        encoding,
        page_url,
        coverage,
    )
}

/// [`parse_html`] without the depth limit: what the stream parse ([`super::stream`]) must give
/// past [`MAX_DEPTH`], where it flattens. For tests: html5ever takes time quadratic in the
/// depth of unclosed elements.
#[cfg(test)]
pub(super) fn parse_html_unbounded(
    body: &[u8],
    content_type: Option<&str>,
    page_url: &Url,
) -> ParsedPage {
    let (text, encoding) = decode(body, content_type);
    let document = Html::parse_document(&text);
    finish(
        Walk::run(&document, PRODUCT_TOKEN),
        &[],
        encoding,
        page_url,
        Coverage::Whole,
    )
}

/// `Html::parse_document`, fed in chunks so that a tree growing past [`MAX_DEPTH`] stops the
/// parse. The deepest point is sampled at the most recently created node, which html5ever
/// inserts at the current open element, so it tracks the stack of open elements.
///
/// Unlike the stream parse, which flattens past [`MAX_DEPTH`] as Chromium does, this one
/// stops there: html5ever's tree builder has no such mode (its "has an element in scope"
/// walks the whole stack of open elements, quadratic in their depth).
pub(crate) fn parse_document(text: &str) -> (Html, Coverage) {
    let mut parser = driver::parse_document(
        HtmlTreeSink::new(Html::new_document()),
        ParseOpts::default(),
    );
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + PARSE_CHUNK).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&text[start..end]));
        start = end;
        if start < text.len() && newest_node_depth(&parser) > MAX_DEPTH {
            return (
                parser.finish(),
                Coverage::CutAtDepth {
                    parsed_bytes: start,
                },
            );
        }
    }
    (parser.finish(), Coverage::Whole)
}

fn newest_node_depth(parser: &Parser<HtmlTreeSink>) -> usize {
    let html = parser.tokenizer.sink.sink.0.borrow();
    html.tree
        .nodes()
        .next_back()
        .map_or(0, |node| node.ancestors().take(MAX_DEPTH + 1).count())
}

/// One pass over the tree.
struct Walk<'a> {
    out: Collected,
    title_seen: bool,
    /// The crawl's product token ([`super::Options::agent`]).
    agent: &'a str,
}

impl<'a> Walk<'a> {
    /// One iterative depth-first pass over the whole document, for a crawl whose product token
    /// is `agent`: no recursion, so a page of 100,000 nested elements cannot overflow the stack.
    fn run(document: &Html, agent: &'a str) -> Collected {
        let mut walk = Walk {
            out: Collected::default(),
            title_seen: false,
            agent,
        };
        let mut text = TextBuilder::default();
        // Depth counters rather than flags, because these elements may nest.
        let mut in_head = 0_usize;
        let mut in_pre = 0_usize;
        // Template content is inert in a browser: no links, no base, no meta from it.
        let mut in_template = 0_usize;

        let root = document.tree.root();
        let mut node = root;
        'walk: loop {
            let mut descend = true;
            match node.value() {
                Node::Element(element) => {
                    let name = element.name();
                    if in_template == 0
                        && let Some(element) = ElementRef::wrap(node)
                    {
                        walk.collect(element);
                    }
                    text.boundary(name);
                    match name {
                        "head" => in_head += 1,
                        "template" => in_template += 1,
                        _ if is_preformatted(name) => in_pre += 1,
                        _ => {}
                    }
                    // Templates are entered, so the links of nested ones are also ignored
                    // by the counter; their text is off through `in_template`.
                    descend = !is_hidden(name) || name == "template";
                }
                Node::Text(t) if in_head == 0 && in_template == 0 => text.push(t, in_pre > 0),
                _ => {}
            }

            if descend && let Some(child) = node.first_child() {
                node = child;
                continue;
            }
            // `node` is done: close it and every ancestor whose last child it ends.
            loop {
                if let Node::Element(element) = node.value() {
                    let name = element.name();
                    text.boundary(name);
                    match name {
                        "head" => in_head -= 1,
                        "template" => in_template -= 1,
                        _ if is_preformatted(name) => in_pre -= 1,
                        _ => {}
                    }
                }
                if node == root {
                    break 'walk;
                }
                if let Some(sibling) = node.next_sibling() {
                    node = sibling;
                    break;
                }
                node = node.parent().expect("a node below the root has a parent");
            }
        }
        walk.out.text = text.finish();
        walk.out
    }

    fn collect(&mut self, element_ref: ElementRef<'_>) {
        let element = element_ref.value();
        // Only the first HTML title counts, as in a browser, even if it is blank; an SVG
        // icon's <title> is not the page's.
        if element.name() == "title" {
            if element.name.ns == html5ever::ns!(html) && !self.title_seen {
                self.title_seen = true;
                let title = cap_title(collapse(&element_ref.text().collect::<String>()));
                self.out.title = (!title.is_empty()).then_some(title);
            }
            return;
        }
        self.out.element(
            self.agent,
            element.name(),
            |name| element.attr(name).map(str::to_owned),
            |name| element.attr(name).map(|v| Href::Owned(v.to_owned())),
        );
    }
}
