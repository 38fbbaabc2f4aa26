//! Turns a fetched HTML body into what the crawl needs from it: outgoing links, `mailto:`
//! addresses, the title, the visible text and the page's robots directives.
//!
//! It reads bytes the way a browser does (BOM, then the header's charset, then a `<meta>`
//! prescan, then a `<meta>` met later in the page, else UTF-8: [`charset`]) and parses them as
//! a stream ([`stream`], `lol_html`): one pass over the bytes, no tree, so a parse holds the largest token and the open elements, not
//! the page. Broken markup still yields the links a person would see; [`dom`] keeps the tree
//! parser it replaced (html5ever) as the reference the stream is tested against.
//!
//! It runs on a thread of its own pool ([`pool`]) and must never do I/O, look at a clock or fail: every byte
//! sequence, however hostile, produces a `ParsedPage` (a parse cut short says so in
//! [`Coverage`]). It decides nothing about scope or robots.txt; the engine does.
//!
//! The page's robots directives are those a `<meta name>` (and an `X-Robots-Tag` user agent)
//! gives for `robots` (every agent) or for the crawl's product token, and for no other name;
//! the caller passes the token ([`Options::agent`], `crawltop` by default), since the parse
//! reads no configuration.

mod charset;
#[cfg(test)]
mod compare;
pub mod dom;
mod entities;
pub mod pool;
mod stray;
mod stream;
mod verdict;

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::canonical::canonicalize;
use crate::config::PRODUCT_TOKEN;

pub use charset::decode;
pub use verdict::{Verdict, verdict};

/// Everything extracted from one HTML page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedPage {
    /// The first `<title>`'s text, whitespace collapsed; `None` when absent or blank.
    pub title: Option<String>,
    /// Canonical http(s) links in document order, deduplicated, without the page itself.
    pub links: Vec<Link>,
    /// Addresses from `mailto:` links, percent-decoded, deduplicated, in document order.
    pub mailto: Vec<String>,
    /// Visible text, one line per block, no empty lines, joined with `\n`; empty when the
    /// parse was asked to skip it ([`Text::Skip`]).
    pub text: String,
    pub meta_robots: MetaRobots,
    /// Name of the encoding the body was decoded with, e.g. `UTF-8`, `windows-1252`.
    pub encoding: &'static str,
    /// The URL relative links were resolved against: `<base href>` if usable, else the page.
    pub base: Url,
    /// Whether the whole body was parsed; see [`MAX_DEPTH`] and [`MAX_PARSE_MEMORY`].
    pub coverage: Coverage,
}

impl ParsedPage {
    /// Obeys directives the response gave outside the page (its `X-Robots-Tag` headers, see
    /// [`MetaRobots::from_headers`]) as the page's own meta tag's: `noindex` keeps it out of
    /// the index, `nofollow` makes every link nofollow.
    pub fn obey(&mut self, header: MetaRobots) {
        self.meta_robots.noindex |= header.noindex;
        self.meta_robots.nofollow |= header.nofollow;
        if header.nofollow {
            for link in &mut self.links {
                link.nofollow = true;
            }
        }
    }
}

/// How much of the body the parse covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    Whole,
    /// Only the tree parse ([`dom`], `--extract`'s) stops here: elements nested deeper than
    /// [`MAX_DEPTH`]; parsing stopped after `parsed_bytes` bytes and what came before was kept.
    /// The crawl's parse ([`stream`]) goes on past that depth, flattening.
    CutAtDepth {
        parsed_bytes: usize,
    },
    /// End tags under more than [`MAX_DEPTH`] open elements searched them more than
    /// [`MAX_END_TAG_SEARCH`] allows; parsing stopped after `parsed_bytes` bytes and what came
    /// before was kept.
    CutAtEndTags {
        parsed_bytes: usize,
    },
    /// One token (a tag never closed, an attribute of megabytes) or the parser's stack of open
    /// elements outgrew [`MAX_PARSE_MEMORY`]; parsing stopped after `parsed_bytes` bytes and
    /// what came before was kept.
    CutAtMemory {
        parsed_bytes: usize,
    },
}

impl Coverage {
    /// Why the page was not parsed whole, in words for the URL's record; `None` when it was.
    pub fn reason(&self) -> Option<String> {
        match self {
            Coverage::Whole => None,
            Coverage::CutAtDepth { parsed_bytes } => Some(format!(
                "parsed {parsed_bytes} bytes: elements nested deeper than {MAX_DEPTH}"
            )),
            Coverage::CutAtEndTags { parsed_bytes } => Some(format!(
                "parsed {parsed_bytes} bytes: too many end tags under more than {MAX_DEPTH} \
                 open elements"
            )),
            Coverage::CutAtMemory { parsed_bytes } => Some(format!(
                "parsed {parsed_bytes} bytes: a token or the open elements outgrew {} MiB",
                MAX_PARSE_MEMORY >> 20
            )),
        }
    }
}

/// Element nesting past which the crawl's parse ([`stream`]) flattens and the tree parse
/// ([`dom`]) stops.
///
/// Chromium flattens its tree at 512 too (elements deeper are attached to the current node's
/// parent, nothing is dropped), and real pages stay far below. The stream's mirror of the open
/// elements holds at most this many and only counts the deeper ones, so it loses nothing past
/// the cap. The tree parse stops because html5ever's "has an element in scope" walks the stack
/// of open elements (a page of N unclosed `<div>`s costs O(N²)).
pub const MAX_DEPTH: usize = 512;

/// How long the end tags of a page may search the elements it leaves open, past the first
/// [`MAX_DEPTH`] each: about 2 s of it, in units of about 0.5 ns (one open element searched by
/// an end tag that closes something; a stray end tag counts 4 an element).
///
/// `lol_html` matches each end tag by searching its stack of open elements, which only its
/// memory limit bounds (about 65,000 elements), so a page of tens of thousands of elements
/// left open (nested `<div>`s, or unclosed `<p>`s, which the mirror closes and `lol_html` does
/// not) then megabytes of end tags would cost minutes: the stream stops there
/// ([`Coverage::CutAtEndTags`]). Under [`MAX_DEPTH`] open elements nothing is counted, as
/// before, and a page of 65,000 unclosed `<p>`s, each with a closed link, stays under it.
pub const MAX_END_TAG_SEARCH: u64 = 1 << 32;

/// The memory one parse may hold for itself, apart from what it collects: the largest token
/// (a start tag with its attributes, a comment) plus the stack of open elements.
///
/// Large enough for a `data:` image of a few MiB in an attribute; a token beyond it cuts the
/// parse ([`Coverage::CutAtMemory`]) instead of growing with the hostile page.
pub const MAX_PARSE_MEMORY: usize = 8 << 20;

/// The most bytes of a title kept: a title is cut there, at a character boundary (never inside
/// a UTF-8 sequence), and a space left at the cut is dropped.
///
/// Real titles are a line (browsers show about 60 characters of one); a hostile page's title of
/// megabytes would otherwise be held whole by the parse, the reorder window, the index and the
/// searches that show it. The streaming parse stops collecting past the cap, so what it holds
/// for a title is bounded too, not only what it returns.
pub const MAX_TITLE_BYTES: usize = 1024;

/// `title` (already collapsed) cut to [`MAX_TITLE_BYTES`]: both parsers end a title with this.
fn cap_title(mut title: String) -> String {
    if title.len() > MAX_TITLE_BYTES {
        let mut end = MAX_TITLE_BYTES;
        while !title.is_char_boundary(end) {
            end -= 1;
        }
        title.truncate(end);
        // Collapsed text has single spaces only, so one may now end it.
        if title.ends_with(' ') {
            title.pop();
        }
    }
    title
}

/// Directives from `<meta name="robots">` and a `<meta>` named for the crawl's product token
/// ([`Options::agent`]), and from the response's `X-Robots-Tag` headers
/// ([`MetaRobots::from_headers`], merged in by [`ParsedPage::obey`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaRobots {
    pub noindex: bool,
    pub nofollow: bool,
}

/// One outgoing link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Resolved and canonicalized; always http or https.
    pub url: Url,
    /// The element of the link's first occurrence.
    pub kind: LinkKind,
    /// True if every occurrence says `rel=nofollow`, or the page's meta robots says nofollow.
    pub nofollow: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    A,
    Area,
    Frame,
    Iframe,
    LinkNext,
    LinkPrev,
    /// `<meta http-equiv="refresh" content="N; url=...">`: a browser goes there after N s.
    Refresh,
}
/// True for `text/html` and `application/xhtml+xml`, ignoring parameters and case.
///
/// A missing Content-Type is not HTML here: whether to sniff such a body is [`verdict`]'s call.
pub fn is_html(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        let essence = ct.split(';').next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("text/html")
            || essence.eq_ignore_ascii_case("application/xhtml+xml")
    })
}

/// Whether a parse collects the page's visible text ([`ParsedPage::text`]).
///
/// Only the index reads it: a crawl without a crawl folder asks for [`Text::Skip`], and the
/// parse then leaves every text node but the title's undecoded. Links, the title, meta robots,
/// the base and the coverage are the same either way (`skipping_the_text_changes_nothing_else`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    Extract,
    Skip,
}

/// What a parse is asked for besides the page: whether to collect its text, and which name,
/// besides `robots`, a `<meta name>` addresses the crawl by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a> {
    pub text: Text,
    /// The product token of the crawl's User-Agent ([`crate::config::product_token`]:
    /// `auditbot` for `auditbot/1.0 (+mailto:...)`), the name robots.txt groups are matched
    /// against too. A site owner addresses the name the crawler sends, as `googlebot` meta tags
    /// address Google's: `<meta name="auditbot">` binds a crawl sent as `auditbot/1.0`, and
    /// `<meta name="crawltop">` does not. Compared ASCII case-insensitively; an empty token
    /// names no one (only `robots` is obeyed then).
    pub agent: &'a str,
}

impl Default for Options<'_> {
    /// The text, for the default User-Agent's product token ([`PRODUCT_TOKEN`]).
    fn default() -> Self {
        Options {
            text: Text::Extract,
            agent: PRODUCT_TOKEN,
        }
    }
}

/// Whether a `<meta name>` or an `X-Robots-Tag` user agent's `name` (trimmed) is `agent`, the
/// crawl's product token ([`Options::agent`]).
fn names_agent(name: &str, agent: &str) -> bool {
    !agent.is_empty() && name.eq_ignore_ascii_case(agent)
}

/// Decodes and parses `body`, fetched from `page_url`, into a [`ParsedPage`], in one pass over
/// the bytes, for a crawl under the default User-Agent ([`Options::default`]).
pub fn parse_html(body: &[u8], content_type: Option<&str>, page_url: &Url) -> ParsedPage {
    parse_html_with(body, content_type, page_url, Options::default())
}

/// [`parse_html`] as `options` ask: the page's text only if their `text` asks for it (else
/// `text` is empty), the robots `<meta>` of their `agent`.
pub fn parse_html_with(
    body: &[u8],
    content_type: Option<&str>,
    page_url: &Url,
    options: Options<'_>,
) -> ParsedPage {
    let (encoding, bom_len) = charset::sniff(body, content_type);
    let (collected, coverage) = stream::parse(&body[bom_len..], encoding, options);
    finish(collected, &body[bom_len..], encoding, page_url, coverage)
}

/// Resolves, filters and deduplicates what a parser collected; `body` is what its
/// [`Href::Source`] ranges point into.
fn finish(
    walk: Collected,
    body: &[u8],
    encoding: &'static encoding_rs::Encoding,
    page_url: &Url,
    coverage: Coverage,
) -> ParsedPage {
    let mut page = page_url.clone();
    canonicalize(&mut page);
    // A query is written in the page's encoding, as browsers write it (`?w=caf%E9` in a
    // Latin-1 page); paths are UTF-8 whatever the page's (the URL standard's "output
    // encoding": UTF-16 pages write UTF-8 too).
    let output = encoding.output_encoding();
    let encode_query: &dyn Fn(&str) -> std::borrow::Cow<'_, [u8]> =
        &|s| std::borrow::Cow::Owned(query_bytes(output, s));
    let query_encoding = (output != encoding_rs::UTF_8).then_some(encode_query);
    let base = walk
        .base_href
        .as_deref()
        .and_then(|href| {
            Url::options()
                .base_url(Some(page_url))
                .encoding_override(query_encoding)
                .parse(href.trim_matches(is_html_space))
                .ok()
        })
        .filter(is_http)
        .unwrap_or_else(|| page_url.clone());

    let mut links: Vec<Link> = Vec::with_capacity(walk.links.len());
    let mut link_index = LinkIndex::with_capacity(walk.links.len());
    let mut mailto: Vec<String> = Vec::new();
    let mut mailto_seen: HashSet<String> = HashSet::new();
    for raw in walk.links {
        let href = match &raw.href {
            Href::Owned(href) => href.as_str(),
            Href::Source(at) => {
                let Some(href) = body
                    .get(at.clone())
                    .and_then(|b| std::str::from_utf8(b).ok())
                else {
                    debug_assert!(false, "a link's range is UTF-8 in the body");
                    continue;
                };
                href
            }
        };
        let href = without_fragment(href.trim_matches(is_html_space));
        let resolved = match query_encoding {
            None => resolve(&base, href),
            Some(_) => Url::options()
                .base_url(Some(&base))
                .encoding_override(query_encoding)
                .parse(href),
        };
        let Ok(mut url) = resolved else {
            continue;
        };
        match url.scheme() {
            "http" | "https" => {}
            "mailto" => {
                for address in mailto_addresses(&url) {
                    if mailto_seen.insert(address.clone()) {
                        mailto.push(address);
                    }
                }
                continue;
            }
            // javascript:, data:, tel:, vbscript:, about:, blob: and every other scheme name
            // something the crawl cannot fetch.
            _ => continue,
        }
        canonicalize(&mut url);
        if url == page {
            continue;
        }
        let nofollow = raw.nofollow || walk.meta_robots.nofollow;
        if let Some(i) = link_index.find(&links, &url) {
            // Followable if any occurrence is: one plain link is an endorsement.
            links[i].nofollow &= nofollow;
            continue;
        }
        link_index.insert(&url, links.len());
        links.push(Link {
            url,
            kind: raw.kind,
            nofollow,
        });
    }

    ParsedPage {
        title: walk.title,
        links,
        mailto,
        text: walk.text,
        meta_robots: walk.meta_robots,
        encoding: encoding.name(),
        base,
        coverage,
    }
}

/// A URL's query in `encoding`, as the URL standard's "percent-encode after encoding" writes
/// it: a character the encoding lacks becomes `%26%23` NNNN `%3B` (`&#NNNN;`, encoded).
fn query_bytes(encoding: &'static encoding_rs::Encoding, query: &str) -> Vec<u8> {
    let mut encoder = encoding.new_encoder();
    let mut out = Vec::with_capacity(query.len() + 8);
    let mut rest = query;
    loop {
        let (result, read) =
            encoder.encode_from_utf8_to_vec_without_replacement(rest, &mut out, true);
        rest = &rest[read..];
        match result {
            encoding_rs::EncoderResult::InputEmpty => return out,
            encoding_rs::EncoderResult::OutputFull => out.reserve(rest.len() + 8),
            encoding_rs::EncoderResult::Unmappable(c) => {
                out.extend_from_slice(format!("%26%23{}%3B", u32::from(c)).as_bytes());
            }
        }
    }
}

/// Resolves `href` against `base`, exactly as `base.join(href)` does.
///
/// A link to the page's own origin spelled as the base spells it (docs sites write their
/// sidebars so) resolves as its path does: the host is not parsed again, nor put through IDNA.
/// `fast_path_resolves_as_join_does` compares the two on generated links.
fn resolve(base: &Url, href: &str) -> Result<Url, url::ParseError> {
    if is_http(base)
        && let Some(rest) = href.strip_prefix(&base[..url::Position::BeforePath])
        && let Some(path) = rest.strip_prefix('/')
        && !path.starts_with(['/', '\\'])
        // The parser drops tabs and newlines anywhere first: `/\t/x` is `//x`, another host.
        && !href.contains(['\t', '\n', '\r'])
    {
        return base.join(rest);
    }
    base.join(href)
}

/// `href` without its fragment, which [`canonicalize`] drops anyway: the URL parser need not
/// read (and percent-encode) it. Docs pages link `page.html#method.name` by the hundred.
///
/// Kept whole when the cut would leave a space or a C0 control at the end: the parser strips
/// those from the ends of its input but encodes them inside it (`x #a` is `x%20`).
fn without_fragment(href: &str) -> &str {
    match href.split_once('#') {
        Some((before, _)) if before.as_bytes().last().is_none_or(|b| *b > b' ') => before,
        _ => href,
    }
}

/// The links of a page so far, by the fingerprint of their canonical URL: no copy of the URL
/// and no `SipHash` of it per link, on pages of hundreds of links.
struct LinkIndex(HashMap<u64, usize, BuildHasherDefault<Identity>>);

impl LinkIndex {
    fn with_capacity(n: usize) -> Self {
        Self(HashMap::with_capacity_and_hasher(
            n,
            BuildHasherDefault::default(),
        ))
    }

    /// Where `url` is in `links`, if it is there.
    fn find(&self, links: &[Link], url: &Url) -> Option<usize> {
        let i = *self.0.get(&fingerprint(url))?;
        if links[i].url == *url {
            Some(i)
        } else {
            // Two URLs with one fingerprint: the map keeps the first, so look for the other.
            links.iter().position(|l| l.url == *url)
        }
    }

    fn insert(&mut self, url: &Url, at: usize) {
        self.0.entry(fingerprint(url)).or_insert(at);
    }
}

fn fingerprint(url: &Url) -> u64 {
    xxhash_rust::xxh3::xxh3_64(url.as_str().as_bytes())
}

/// A hasher for keys that are hashes already (xxh3 fingerprints): it passes them through.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys reach this hasher; fold anything else in rather than lose it.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// The HTML standard strips ASCII whitespace around URL attributes.
fn is_html_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// The addresses of a `mailto:` URL: the part before `?`, split on commas, percent-decoded.
fn mailto_addresses(url: &Url) -> impl Iterator<Item = String> + '_ {
    url.path().split(',').filter_map(|part| {
        let address = percent_encoding::percent_decode_str(part).decode_utf8_lossy();
        let address = address.trim();
        (!address.is_empty()).then(|| address.to_owned())
    })
}

/// A link as written, before resolution.
struct RawLink {
    href: Href,
    kind: LinkKind,
    nofollow: bool,
}

/// A link's attribute value, decoded: a copy, or where it lies in the page when its bytes are
/// the value itself (valid UTF-8, no character reference, no CR or NUL), which [`finish`]
/// reads in place: no `String` per link on pages of hundreds.
enum Href {
    Owned(String),
    /// The bytes of the page (after its byte order mark) that are the value.
    Source(std::ops::Range<usize>),
}

/// What one pass over a page collects before its links are resolved; both parsers fill it.
#[derive(Default)]
struct Collected {
    base_href: Option<String>,
    title: Option<String>,
    meta_robots: MetaRobots,
    links: Vec<RawLink>,
    text: String,
}

impl Collected {
    /// Reads a link, the `<base>` or a robots `<meta>` from an element named `name` (lower
    /// case), given its attribute values (decoded, the first of each name); `href` gives the
    /// link's own attribute. A robots `<meta>` is one named `robots` or `agent`, the crawl's
    /// product token ([`Options::agent`]).
    fn element(
        &mut self,
        agent: &str,
        name: &str,
        attr: impl Fn(&str) -> Option<String>,
        href: impl Fn(&str) -> Option<Href>,
    ) {
        let rel = || attr("rel").unwrap_or_default();
        let (attr_name, kind) = match name {
            "a" => ("href", LinkKind::A),
            "area" => ("href", LinkKind::Area),
            "frame" => ("src", LinkKind::Frame),
            "iframe" => ("src", LinkKind::Iframe),
            "link" if has_token(&rel(), "next") => ("href", LinkKind::LinkNext),
            "link" if has_token(&rel(), "prev") => ("href", LinkKind::LinkPrev),
            "base" => {
                if self.base_href.is_none() {
                    self.base_href = attr("href");
                }
                return;
            }
            "meta" => {
                let name = attr("name").unwrap_or_default();
                let name = name.trim();
                if name.eq_ignore_ascii_case("robots") || names_agent(name, agent) {
                    self.meta_robots.add(&attr("content").unwrap_or_default());
                }
                let refresh =
                    attr("http-equiv").is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"));
                if let Some(url) = attr("content")
                    .filter(|_| refresh)
                    .and_then(|c| refresh_url(&c))
                {
                    self.links.push(RawLink {
                        href: Href::Owned(url),
                        kind: LinkKind::Refresh,
                        nofollow: false,
                    });
                }
                return;
            }
            _ => return,
        };
        if let Some(href) = href(attr_name) {
            self.links.push(RawLink {
                href,
                kind,
                nofollow: has_token(&rel(), "nofollow"),
            });
        }
    }
}

/// The URL of a `<meta http-equiv="refresh">`'s `content` (`5; url=/next.html`, `0;URL='x'`,
/// `0, /x`), as the HTML standard's shared declarative refresh steps read it; `None` when it
/// names no URL (a refresh of the page itself) or does not start with a time.
fn refresh_url(content: &str) -> Option<String> {
    let ws = |c: char| matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ');
    let rest = content.trim_start_matches(ws);
    let after_time = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if after_time.len() == rest.len() {
        return None;
    }
    let rest = after_time;
    if !rest.starts_with(|c: char| ws(c) || c == ';' || c == ',') {
        return None;
    }
    let rest = rest.trim_start_matches(ws);
    let rest = rest
        .strip_prefix([';', ','])
        .unwrap_or(rest)
        .trim_start_matches(ws);
    // `url =` is optional; without its `=`, the URL starts at the `u`.
    let rest = rest
        .get(..3)
        .filter(|u| u.eq_ignore_ascii_case("url"))
        .and_then(|_| rest[3..].trim_start_matches(ws).strip_prefix('='))
        .map_or(rest, |r| r.trim_start_matches(ws));
    let url = match rest.chars().next() {
        Some(quote @ ('"' | '\'')) => rest[1..].split(quote).next().unwrap_or_default(),
        _ => rest,
    };
    let url = url.trim_end_matches(ws);
    (!url.is_empty()).then(|| url.to_string())
}

/// Elements whose content is never shown as text. The title is kept apart; an iframe's
/// content is fallback markup that browsers parse as raw text. `head` is not here: its
/// text is hidden too, but its `base`, `meta` and `link` elements are read.
fn is_hidden(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "template" | "title" | "iframe"
    )
}

/// Elements that start a new line of text.
fn is_block(name: &str) -> bool {
    is_heading(name)
        || matches!(
            name,
            "address"
                | "article"
                | "aside"
                | "blockquote"
                | "body"
                | "br"
                | "caption"
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
                | "form"
                | "frameset"
                | "header"
                | "hgroup"
                | "hr"
                | "html"
                | "legend"
                | "li"
                | "listing"
                | "main"
                | "menu"
                | "nav"
                | "ol"
                | "option"
                | "p"
                | "plaintext"
                | "pre"
                | "section"
                | "summary"
                | "table"
                | "tbody"
                | "tfoot"
                | "thead"
                | "tr"
                | "ul"
                | "xmp"
        )
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// Elements whose text keeps its line breaks.
fn is_preformatted(name: &str) -> bool {
    matches!(name, "pre" | "listing" | "plaintext" | "xmp")
}

/// The `X-Robots-Tag` directives that take a value after a colon: a piece starting with one of
/// these names is a directive, not a user agent's name.
const VALUED_DIRECTIVES: [&str; 4] = [
    "unavailable_after",
    "max-snippet",
    "max-image-preview",
    "max-video-preview",
];

impl MetaRobots {
    fn add(&mut self, content: &str) {
        for directive in content.split(',') {
            self.add_directive(directive);
        }
    }

    fn add_directive(&mut self, directive: &str) {
        let directive = directive.trim();
        if directive.eq_ignore_ascii_case("noindex") {
            self.noindex = true;
        } else if directive.eq_ignore_ascii_case("nofollow") {
            self.nofollow = true;
        } else if directive.eq_ignore_ascii_case("none") {
            self.noindex = true;
            self.nofollow = true;
        }
    }

    /// The directives of a response's `X-Robots-Tag` headers (every one it has), as search
    /// engines read them: a comma-separated list, in which a user agent's name and a colon
    /// (`otherbot: noindex, nofollow`) make the directives after it, up to the next name, that
    /// agent's only. Those for every agent and for `agent`, the crawl's product token
    /// ([`Options::agent`], compared ASCII case-insensitively), count, as the meta tag's names
    /// do. Unknown directives, and ones with a value (`unavailable_after: ...`), are passed over.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        agent: &str,
    ) -> MetaRobots {
        let mut robots = MetaRobots::default();
        for (name, value) in headers {
            if !name.trim().eq_ignore_ascii_case("x-robots-tag") {
                continue;
            }
            let mut ours = true;
            for piece in value.split(',') {
                let directive = match piece.split_once(':') {
                    Some((named, rest)) if is_agent_name(named) => {
                        ours = names_agent(named.trim(), agent);
                        rest
                    }
                    _ => piece,
                };
                if ours {
                    robots.add_directive(directive);
                }
            }
        }
        robots
    }
}

/// Whether the text before a colon in an `X-Robots-Tag` piece names a user agent: one token, and
/// not a directive that takes a value (nor a date's hour, as in `unavailable_after`'s value).
fn is_agent_name(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty()
        && !text.contains(|c: char| c.is_whitespace())
        && !VALUED_DIRECTIVES
            .iter()
            .any(|d| text.eq_ignore_ascii_case(d))
}

/// `rel` is a set of space-separated tokens, compared ASCII case-insensitively.
fn has_token(list: &str, token: &str) -> bool {
    list.split(is_html_space)
        .any(|t| t.eq_ignore_ascii_case(token))
}

/// Collapses runs of whitespace (and control characters) to one space and trims.
fn collapse(s: &str) -> String {
    let mut builder = TextBuilder::default();
    builder.push(s, false);
    builder.finish()
}

/// Builds the page text line by line in one string, in time linear in the text.
///
/// Whitespace here is Unicode whitespace (so `&nbsp;` separates words, as it does for a
/// reader) plus control characters, which must never reach a terminal that shows the text.
#[derive(Default)]
struct TextBuilder {
    out: String,
    line_has_text: bool,
    pending_space: bool,
}

impl TextBuilder {
    fn push(&mut self, s: &str, preformatted: bool) {
        // A hot path (every text node of every page). Prose is mostly words joined by one
        // space, which is already what the text holds: such a run of words is copied in one
        // piece. ASCII bytes are classified without decoding a char.
        let bytes = s.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            let len = separator_len(s, i, b);
            if len > 0 {
                if preformatted && b == b'\n' {
                    self.break_line();
                } else {
                    self.pending_space = self.line_has_text;
                }
                i += len;
                continue;
            }
            let start = i;
            let end = loop {
                i = word_end(s, i);
                // One ASCII space, then another word: the run goes on.
                match bytes.get(i..i + 2) {
                    Some(&[b' ', next]) if separator_len(s, i + 1, next) == 0 => i += 1,
                    _ => break i,
                }
            };
            self.word(&s[start..end]);
        }
    }

    /// [`TextBuilder::push`] while the text holds at most `cap` bytes: past that, nothing more
    /// is taken (not even scanned), so the text stays under `cap` plus a piece of `cap` bytes
    /// whatever comes. What it holds is always the start of what `push` alone would make.
    fn push_capped(&mut self, mut s: &str, cap: usize) {
        while !s.is_empty() && self.out.len() <= cap {
            // The text grows by at most a byte per byte pushed: pieces this long take it past
            // `cap` as soon as they can, and never by much.
            let mut end = (cap + 1 - self.out.len()).min(s.len());
            while !s.is_char_boundary(end) {
                end += 1;
            }
            self.push(&s[..end], false);
            s = &s[end..];
        }
    }

    fn word(&mut self, word: &str) {
        if self.pending_space {
            self.out.push(' ');
            self.pending_space = false;
        }
        self.out.push_str(word);
        self.line_has_text = true;
    }

    /// Called when an element opens and when it closes.
    fn boundary(&mut self, name: &str) {
        if is_block(name) {
            self.break_line();
        } else if matches!(name, "td" | "th") {
            self.pending_space = self.line_has_text;
        }
    }

    fn break_line(&mut self) {
        if self.line_has_text {
            self.out.push('\n');
            self.line_has_text = false;
        }
        self.pending_space = false;
    }

    fn finish(mut self) -> String {
        if self.out.ends_with('\n') {
            self.out.pop();
        }
        self.out
    }
}

/// Whether an ASCII byte separates words in the text: whitespace and controls, 0x00-0x20 and DEL.
fn ascii_separator(b: u8) -> bool {
    b <= b' ' || b == 0x7F
}

/// Whether a character separates words in the text: Unicode whitespace or a control character.
fn separator(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// The length of the separator that starts at byte `i` of `s`, whose first byte is `b`; 0 when
/// a word character starts there. `i` is a char boundary.
fn separator_len(s: &str, i: usize, b: u8) -> usize {
    if b.is_ascii() {
        usize::from(ascii_separator(b))
    } else {
        match s[i..].chars().next() {
            Some(c) if separator(c) => c.len_utf8(),
            _ => 0,
        }
    }
}

/// Where the word that starts at byte `i` of `s` ends: the next separator, or the end.
fn word_end(s: &str, mut i: usize) -> usize {
    let bytes = s.as_bytes();
    while let Some(&b) = bytes.get(i) {
        if b.is_ascii() {
            if ascii_separator(b) {
                break;
            }
            i += 1;
        } else {
            match s[i..].chars().next() {
                Some(c) if !separator(c) => i += c.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use encoding_rs::{UTF_8, UTF_16LE, WINDOWS_1252};

    use super::dom::PARSE_CHUNK;
    use super::*;
    use crate::canonical::canonical;

    const PAGE: &str = "http://example.com/dir/sub/page.html";

    fn page_url() -> Url {
        Url::parse(PAGE).expect("test URL parses")
    }

    fn parse(html: &str) -> ParsedPage {
        parse_html(html.as_bytes(), Some("text/html"), &page_url())
    }

    fn link_urls(page: &ParsedPage) -> Vec<&str> {
        page.links.iter().map(|l| l.url.as_str()).collect()
    }

    fn only_link(html: &str) -> String {
        let page = parse(html);
        assert_eq!(
            page.links.len(),
            1,
            "links of {html}: {:?}",
            link_urls(&page)
        );
        page.links[0].url.to_string()
    }

    // --- link forms ---

    #[test]
    fn relative_file_resolves_in_same_directory() {
        assert_eq!(
            only_link(r#"<a href="other.html">x</a>"#),
            "http://example.com/dir/sub/other.html"
        );
    }

    #[test]
    fn parent_directory_link_resolves() {
        assert_eq!(
            only_link(r#"<a href="../dir2/page.html">x</a>"#),
            "http://example.com/dir/dir2/page.html"
        );
    }

    #[test]
    fn root_relative_link_resolves() {
        assert_eq!(
            only_link(r#"<a href="/top/page.html">x</a>"#),
            "http://example.com/top/page.html"
        );
    }

    #[test]
    fn dot_slash_link_resolves() {
        assert_eq!(
            only_link(r#"<a href="./x">x</a>"#),
            "http://example.com/dir/sub/x"
        );
    }

    #[test]
    fn protocol_relative_link_takes_page_scheme() {
        assert_eq!(
            only_link(r#"<a href="//other.org/path">x</a>"#),
            "http://other.org/path"
        );
    }

    #[test]
    fn absolute_link_is_kept_and_canonicalized() {
        assert_eq!(
            only_link(r#"<a href="HTTPS://Other.ORG:443/a/%7Eb">x</a>"#),
            "https://other.org/a/~b"
        );
    }

    #[test]
    fn fragment_is_dropped_from_links() {
        assert_eq!(
            only_link(r#"<a href="other.html#section">x</a>"#),
            "http://example.com/dir/sub/other.html"
        );
    }

    #[test]
    fn query_is_kept() {
        assert_eq!(
            only_link(r#"<a href="other.html?b=2&amp;a=1">x</a>"#),
            "http://example.com/dir/sub/other.html?b=2&a=1"
        );
    }

    #[test]
    fn query_only_link_resolves_against_page_path() {
        assert_eq!(
            only_link(r#"<a href="?page=2">x</a>"#),
            "http://example.com/dir/sub/page.html?page=2"
        );
    }

    #[test]
    fn href_whitespace_is_trimmed() {
        assert_eq!(
            only_link("<a href=\" \n\tother.html \r\n\">x</a>"),
            "http://example.com/dir/sub/other.html"
        );
    }

    #[test]
    fn self_links_are_dropped() {
        let page = parse(
            r##"<a href="">a</a><a href="#top">b</a><a href="page.html#x">c</a>
                <a href="http://EXAMPLE.com/dir/sub/page.html">d</a><a href="x.html">e</a>"##,
        );
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x.html"]);
    }

    #[test]
    fn page_url_with_fragment_still_matches_its_self_links() {
        let url = Url::parse("http://example.com/p#frag").expect("test URL parses");
        let page = parse_html(br##"<a href="#other">x</a>"##, None, &url);
        assert!(page.links.is_empty(), "{:?}", link_urls(&page));
    }

    #[test]
    fn every_link_element_kind_is_found() {
        let page = parse(
            r#"<html><head><link rel="next" href="n.html"><link rel="prev" href="p.html">
               <link rel="stylesheet" href="s.css"><link rel="canonical" href="c.html"></head>
               <body><a href="a.html">a</a><map><area href="area.html"></map>
               <iframe src="if.html"></iframe></body></html>"#,
        );
        let kinds: Vec<(&str, LinkKind)> =
            page.links.iter().map(|l| (l.url.path(), l.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("/dir/sub/n.html", LinkKind::LinkNext),
                ("/dir/sub/p.html", LinkKind::LinkPrev),
                ("/dir/sub/a.html", LinkKind::A),
                ("/dir/sub/area.html", LinkKind::Area),
                ("/dir/sub/if.html", LinkKind::Iframe),
            ]
        );
    }

    #[test]
    fn a_meta_refresh_is_a_link_to_its_url_as_browsers_read_it() {
        for (content, want) in [
            ("0; url=/n/refresh.html", Some("/n/refresh.html")),
            ("5;URL='q.html'", Some("q.html")),
            ("3, url = \"x y.html\" ", Some("x y.html")),
            ("0.5 ; /direct.html", Some("/direct.html")),
            ("1 urlish.html", Some("urlish.html")),
            ("  10", None),
            ("0;", None),
            ("soon; url=x.html", None),
            ("0x; url=x.html", None),
        ] {
            assert_eq!(refresh_url(content).as_deref(), want, "{content:?}");
        }
        let page = parse(
            r#"<head><meta http-equiv="Refresh" content="0; url=moved.html">
               <meta http-equiv="content-type" content="0; url=not-a-refresh.html"></head>"#,
        );
        let kinds: Vec<(&str, LinkKind)> =
            page.links.iter().map(|l| (l.url.path(), l.kind)).collect();
        assert_eq!(kinds, [("/dir/sub/moved.html", LinkKind::Refresh)]);
    }

    #[test]
    fn frameset_frames_are_links() {
        let page = parse(
            r#"<html><frameset cols="50%,50%"><frame src="left.html"><frame src="right.html">
               </frameset></html>"#,
        );
        assert_eq!(
            link_urls(&page),
            [
                "http://example.com/dir/sub/left.html",
                "http://example.com/dir/sub/right.html"
            ]
        );
        assert!(page.links.iter().all(|l| l.kind == LinkKind::Frame));
    }

    #[test]
    fn link_rel_tokens_are_case_insensitive_and_space_separated() {
        let page = parse(r#"<link rel="  Prefetch   NEXT " href="n.html">"#);
        assert_eq!(page.links[0].kind, LinkKind::LinkNext);
    }

    #[test]
    fn anchors_without_href_are_not_links() {
        let page = parse(r#"<a name="x">x</a><a>y</a><iframe></iframe>"#);
        assert!(page.links.is_empty());
    }

    #[test]
    fn links_inside_template_are_inert() {
        let page = parse(r#"<template><a href="t.html">t</a></template><a href="r.html">r</a>"#);
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/r.html"]);
    }

    // --- base ---

    #[test]
    fn absolute_base_href_is_used() {
        let page = parse(
            r#"<head><base href="http://cdn.example.org/root/"></head><a href="x.html">x</a>"#,
        );
        assert_eq!(page.base.as_str(), "http://cdn.example.org/root/");
        assert_eq!(link_urls(&page), ["http://cdn.example.org/root/x.html"]);
    }

    #[test]
    fn relative_base_href_resolves_against_page() {
        let page = parse(r#"<base href="../other/"><a href="x.html">x</a>"#);
        assert_eq!(page.base.as_str(), "http://example.com/dir/other/");
        assert_eq!(link_urls(&page), ["http://example.com/dir/other/x.html"]);
    }

    #[test]
    fn first_base_with_href_wins() {
        let page = parse(
            r#"<base target="_blank"><base href="/one/"><base href="/two/"><a href="x">x</a>"#,
        );
        assert_eq!(link_urls(&page), ["http://example.com/one/x"]);
    }

    #[test]
    fn base_later_in_document_still_applies_to_earlier_links() {
        let page = parse(r#"<a href="x">x</a><base href="/late/">"#);
        assert_eq!(link_urls(&page), ["http://example.com/late/x"]);
    }

    #[test]
    fn invalid_base_is_ignored() {
        let page = parse(r#"<base href="http://[bad/"><a href="x.html">x</a>"#);
        assert_eq!(page.base.as_str(), PAGE);
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x.html"]);
    }

    #[test]
    fn non_http_base_is_ignored() {
        let page = parse(r#"<base href="javascript:void(0)"><a href="x.html">x</a>"#);
        assert_eq!(page.base.as_str(), PAGE);
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x.html"]);
    }

    #[test]
    fn empty_href_with_base_points_at_base_not_page() {
        let page = parse(r#"<base href="/b/"><a href="">x</a>"#);
        assert_eq!(link_urls(&page), ["http://example.com/b/"]);
    }

    // --- schemes ---

    #[test]
    fn unfetchable_schemes_are_skipped() {
        let page = parse(
            r#"<a href="javascript:go()">1</a><a href="JavaScript:go()">2</a>
               <a href="data:text/html,hi">3</a><a href="tel:+123">4</a>
               <a href="vbscript:x">5</a><a href="about:blank">6</a>
               <a href="blob:http://example.com/uuid">7</a><a href="ftp://example.com/f">8</a>
               <a href="file:///etc/passwd">9</a><a href="news:comp.lang">10</a>"#,
        );
        assert!(page.links.is_empty(), "{:?}", link_urls(&page));
        assert!(page.mailto.is_empty());
    }

    #[test]
    fn unparsable_hrefs_are_skipped() {
        let page = parse(r#"<a href="http://[::1">x</a><a href="http://">y</a><a href="ok">z</a>"#);
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/ok"]);
    }

    #[test]
    fn mailto_addresses_are_collected_decoded_deduped_in_order() {
        let page = parse(
            r#"<a href="mailto:bob@example.com?subject=hi">b</a>
               <a href="MAILTO:alice%40example.com">a</a>
               <a href="mailto:bob@example.com">again</a>
               <a href="mailto:carol@example.com,%20dave@example.com">cd</a>
               <a href="mailto:?to=nobody@example.com">empty</a>"#,
        );
        assert_eq!(
            page.mailto,
            [
                "bob@example.com",
                "alice@example.com",
                "carol@example.com",
                "dave@example.com"
            ]
        );
        assert!(page.links.is_empty());
    }

    // --- nofollow ---

    #[test]
    fn rel_nofollow_marks_link() {
        let page = parse(r#"<a href="a" rel="nofollow">a</a><a href="b">b</a>"#);
        assert!(page.links[0].nofollow);
        assert!(!page.links[1].nofollow);
    }

    #[test]
    fn rel_nofollow_among_other_tokens_in_any_case() {
        let page = parse(
            r#"<a href="a" rel="noopener NoFollow external">a</a>
               <a href="b" rel="noopener	nofollow">b</a><area href="c" rel="NOFOLLOW">"#,
        );
        assert!(page.links.iter().all(|l| l.nofollow));
    }

    #[test]
    fn rel_token_must_match_whole() {
        let page = parse(r#"<a href="a" rel="nofollowme">a</a><a href="b" rel="no-follow">b</a>"#);
        assert!(page.links.iter().all(|l| !l.nofollow));
    }

    #[test]
    fn duplicate_links_keep_first_occurrence_and_are_followable_if_any_is() {
        let page = parse(
            r#"<a href="b">b1</a><a href="a" rel="nofollow">a1</a><iframe src="b"></iframe>
               <a href="a#x">a2</a><a href="c" rel="nofollow">c1</a><a href="c" rel="nofollow">c2</a>"#,
        );
        let got: Vec<(&str, LinkKind, bool)> = page
            .links
            .iter()
            .map(|l| (l.url.path(), l.kind, l.nofollow))
            .collect();
        assert_eq!(
            got,
            [
                ("/dir/sub/b", LinkKind::A, false),
                ("/dir/sub/a", LinkKind::A, false),
                ("/dir/sub/c", LinkKind::A, true),
            ]
        );
    }

    #[test]
    fn fast_path_resolves_as_join_does() {
        let bases = [
            "http://example.com/dir/sub/page.html",
            "http://example.com:8080/x/",
            "https://u:p@example.com/a?b#c",
            "http://127.0.0.1:19400/book/ch1.html",
            "http://[::1]:9/x/y",
            "http://xn--caf-dma.example/p",
        ];
        let starts = [
            "",
            "http://example.com",
            "HTTP://example.com",
            "http://EXAMPLE.com",
            "http://example.com:80",
            "http://example.com:8080",
            "https://example.com",
            "http://example.com.",
            "http://u@example.com",
            "https://u:p@example.com",
            "//example.com",
            "http://127.0.0.1:19400",
            "http://[::1]:9",
            "http://[0:0::1]:9",
            "http://127.0.0.1:019400",
            "http://xn--caf-dma.example",
            "http://café.example",
            "http:example.com",
            "http://example.com\t",
            "mailto:a@b",
        ];
        let parts = [
            "/", "//", "/\\", "\\", "", ".", "..", "a", "%2e", "%2E%2e", "b c", "\t", "\n", "?",
            "?q=1&r", "#f", "é", "%41", "%7e", ":", "@", "x.html", "/..", "/./", " #", "\u{1}#x",
            "\u{a0}#", "#%zz", "##",
        ];
        // A small deterministic generator: every start with sequences of up to four parts.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % n as u64).expect("small")
        };
        // The base's own origin, then what could make the rest mean another host or path.
        let tricky = [
            "/\t/x",
            "/\n\\x",
            "/\r/x",
            "//x",
            "/\\x",
            "/..",
            "/../..",
            "/%2e%2e/x",
            "/./%2E/y",
            "/a?b#c",
            "/a b",
            "/é",
            "/x\t",
            "/\\",
            "/?",
            "/#",
            "/:x@y",
            "/ \t",
        ];
        // The fast path gives what `join` gives; without the fragment, once canonicalized,
        // too (or both fail).
        let check = |base: &Url, href: &str| {
            let joined = base.join(href);
            assert_eq!(
                resolve(base, href).map(String::from),
                joined.clone().map(String::from),
                "{href:?} against {base}"
            );
            assert_eq!(
                resolve(base, without_fragment(href)).map(|u| String::from(canonical(&u))),
                joined.map(|u| String::from(canonical(&u))),
                "{href:?} without its fragment, against {base}"
            );
        };
        let mut checked = 0;
        for base in bases {
            let base = Url::parse(base).expect("test base parses");
            for rest in tricky {
                check(
                    &base,
                    &format!("{}{rest}", &base[..url::Position::BeforePath]),
                );
            }
            for start in starts {
                for _ in 0..200 {
                    let mut href = String::from(start);
                    for _ in 0..=next(4) {
                        href.push_str(parts[next(parts.len())]);
                    }
                    check(&base, &href);
                    checked += 1;
                }
            }
        }
        assert!(checked > 20_000);
    }

    #[test]
    fn link_index_finds_a_link_whose_fingerprint_another_link_holds() {
        let link = |u: &str| Link {
            url: Url::parse(u).expect("test URL parses"),
            kind: LinkKind::A,
            nofollow: false,
        };
        let links = [link("http://example.com/a"), link("http://example.com/b")];
        let mut index = LinkIndex::with_capacity(2);
        index.insert(&links[0].url, 0);
        // A collision: b's fingerprint taken by the first link.
        index.0.insert(fingerprint(&links[1].url), 0);
        assert_eq!(index.find(&links, &links[0].url), Some(0));
        assert_eq!(index.find(&links, &links[1].url), Some(1));
        let other = Url::parse("http://example.com/c").expect("test URL parses");
        assert_eq!(index.find(&links, &other), None);
    }

    // --- meta robots ---

    fn robots(meta: &str) -> MetaRobots {
        parse(&format!("<head>{meta}</head><a href=\"x\">x</a>")).meta_robots
    }

    #[test]
    fn no_meta_robots_means_index_follow() {
        assert_eq!(robots(""), MetaRobots::default());
    }

    #[test]
    fn meta_robots_noindex() {
        let r = robots(r#"<meta name="robots" content="noindex">"#);
        assert!(r.noindex && !r.nofollow);
    }

    #[test]
    fn meta_robots_list_is_case_insensitive_with_spaces() {
        let r = robots(r#"<meta name="ROBOTS" content=" NoFollow , index ">"#);
        assert!(!r.noindex && r.nofollow);
    }

    #[test]
    fn meta_robots_none_means_both() {
        let r = robots(r#"<meta name="robots" content="NONE">"#);
        assert!(r.noindex && r.nofollow);
    }

    #[test]
    fn meta_crawltop_counts_as_robots() {
        let r = robots(r#"<meta name="CrawlTop" content="noindex,nofollow">"#);
        assert!(r.noindex && r.nofollow);
    }

    #[test]
    fn meta_for_other_agents_is_ignored() {
        let r = robots(
            r#"<meta name="googlebot" content="none"><meta name="description" content="noindex">"#,
        );
        assert_eq!(r, MetaRobots::default());
    }

    /// The meta robots of `meta` for a crawl whose product token is `agent`.
    fn robots_for(meta: &str, agent: &str) -> MetaRobots {
        let html = format!("<head>{meta}</head><a href=\"x\">x</a>");
        let options = Options {
            text: Text::Extract,
            agent,
        };
        parse_html_with(html.as_bytes(), Some("text/html"), &page_url(), options).meta_robots
    }

    /// Under `--user-agent "auditbot/1.0 (...)"` the page addresses the crawl as `auditbot`,
    /// the name robots.txt groups are matched against, in any case, as Google reads
    /// `googlebot` meta tags.
    #[test]
    fn meta_named_for_the_crawls_product_token_is_obeyed_in_any_case() {
        for name in ["auditbot", "AuditBot", " AUDITBOT "] {
            let r = robots_for(
                &format!(r#"<meta name="{name}" content="noindex">"#),
                "auditbot",
            );
            assert!(r.noindex && !r.nofollow, "{name}");
        }
        let r = robots_for(r#"<meta name="auditbot" content="NoFollow">"#, "AuditBot");
        assert!(!r.noindex && r.nofollow);
        let r = robots_for(r#"<meta name="robots" content="none">"#, "auditbot");
        assert!(r.noindex && r.nofollow, "robots binds every crawl");
    }

    /// `crawltop` is only the default User-Agent's name: a crawl sent as another obeys no
    /// `<meta name="crawltop">`, nor another bot's.
    #[test]
    fn meta_crawltop_and_other_names_are_ignored_under_another_product_token() {
        let r = robots_for(
            r#"<meta name="crawltop" content="none"><meta name="googlebot" content="none">
               <meta name="auditbot2" content="none"><meta name="audit" content="none">"#,
            "auditbot",
        );
        assert_eq!(r, MetaRobots::default());
        // An empty token names no one: a nameless meta is nobody's.
        let r = robots_for(r#"<meta name="" content="none"><meta content="none">"#, "");
        assert_eq!(r, MetaRobots::default());
    }

    /// The stream and the tree parse read the token's meta alike.
    #[test]
    fn both_parsers_obey_the_product_tokens_meta() {
        let html = r#"<meta name="AUDITBOT" content="nofollow"><meta name="crawltop"
            content="noindex"><a href="/a">a</a>"#;
        let options = Options {
            text: Text::Extract,
            agent: "auditbot",
        };
        let new = parse_html_with(html.as_bytes(), Some("text/html"), &page_url(), options);
        let old = dom::parse_html_for(html.as_bytes(), Some("text/html"), &page_url(), "auditbot");
        let want = MetaRobots {
            noindex: false,
            nofollow: true,
        };
        assert_eq!(new.meta_robots, want);
        assert_eq!(old.meta_robots, want);
        assert_eq!(new.links, old.links);
        assert!(new.links.iter().all(|l| l.nofollow));
    }

    fn header_robots(headers: &[(&str, &str)]) -> MetaRobots {
        MetaRobots::from_headers(headers.iter().copied(), PRODUCT_TOKEN)
    }

    const NOINDEX: MetaRobots = MetaRobots {
        noindex: true,
        nofollow: false,
    };
    const NOFOLLOW: MetaRobots = MetaRobots {
        noindex: false,
        nofollow: true,
    };
    const BOTH: MetaRobots = MetaRobots {
        noindex: true,
        nofollow: true,
    };

    /// `X-Robots-Tag` directives named for a user agent count when it is the crawl's product
    /// token (any case), and not for `crawltop` under another token; unnamed ones always count.
    #[test]
    fn x_robots_tag_names_the_crawls_product_token() {
        let for_auditbot =
            |value: &str| MetaRobots::from_headers([("X-Robots-Tag", value)], "auditbot");
        let (noindex, nofollow) = (NOINDEX, NOFOLLOW);
        assert_eq!(for_auditbot("auditbot: nofollow"), nofollow);
        assert_eq!(for_auditbot("AuditBot: noindex"), noindex);
        assert_eq!(for_auditbot("noindex"), noindex);
        assert_eq!(for_auditbot("crawltop: none"), MetaRobots::default());
        assert_eq!(
            for_auditbot("otherbot: noindex, auditbot: nofollow"),
            nofollow
        );
        assert_eq!(
            for_auditbot("auditbot: nofollow, crawltop: noindex"),
            nofollow
        );
        assert_eq!(for_auditbot("auditbot2: none"), MetaRobots::default());
    }

    /// `X-Robots-Tag` as search engines read it: every header of that name, any case, a list
    /// of directives, a user agent's name scoping the directives after it.
    #[test]
    fn x_robots_tag_headers_are_read_as_search_engines_read_them() {
        let both = BOTH;
        let (noindex, nofollow) = (NOINDEX, NOFOLLOW);
        for (headers, want) in [
            (vec![("X-Robots-Tag", "noindex")], noindex),
            (vec![("x-robots-tag", " NoIndex , NOFOLLOW ")], both),
            (vec![("X-Robots-Tag", "none")], both),
            (
                vec![("X-Robots-Tag", "noindex"), ("X-Robots-Tag", "nofollow")],
                both,
            ),
            (vec![("X-Robots-Tag", "crawltop: nofollow")], nofollow),
            (vec![("X-Robots-Tag", "CrawlTop: none")], both),
            (
                vec![("X-Robots-Tag", "otherbot: noindex, nofollow")],
                MetaRobots::default(),
            ),
            // A name scopes what follows it, up to the next name.
            (
                vec![("X-Robots-Tag", "otherbot: noindex, crawltop: nofollow")],
                nofollow,
            ),
            (
                vec![("X-Robots-Tag", "crawltop: nofollow, otherbot: noindex")],
                nofollow,
            ),
            (
                vec![
                    ("X-Robots-Tag", "otherbot: none"),
                    ("X-Robots-Tag", "noindex"),
                ],
                noindex,
            ),
            // Directives with a value are no agent's name, nor is a date's hour.
            (
                vec![(
                    "X-Robots-Tag",
                    "unavailable_after: 25 Jun 2010 15:00:00 PST, noindex",
                )],
                noindex,
            ),
            (
                vec![(
                    "X-Robots-Tag",
                    "unavailable_after: Friday, 25-Jun-10 15:00:00 GMT, nofollow",
                )],
                nofollow,
            ),
            (vec![("X-Robots-Tag", "max-snippet: 20, noindex")], noindex),
            (
                vec![("X-Robots-Tag", "all"), ("X-Robots-Tag", "noarchive")],
                MetaRobots::default(),
            ),
            (
                vec![("X-Robots-Tags", "noindex"), ("Robots", "none")],
                MetaRobots::default(),
            ),
            (vec![("X-Robots-Tag", "")], MetaRobots::default()),
        ] {
            assert_eq!(header_robots(&headers), want, "{headers:?}");
        }
    }

    /// A header's `nofollow` makes every link of the page nofollow, its `noindex` keeps the
    /// page out of the index, as the meta tag's do; the page's own tag still counts.
    #[test]
    fn a_page_obeys_its_x_robots_tag() {
        let html = r#"<meta name="robots" content="noindex"><a href="/a">a</a><a href="/b">b</a>"#;
        let mut page = parse(html);
        assert!(page.links.iter().all(|l| !l.nofollow));
        page.obey(header_robots(&[("X-Robots-Tag", "nofollow")]));
        assert!(page.meta_robots.noindex && page.meta_robots.nofollow);
        assert_eq!(page.links.len(), 2);
        assert!(page.links.iter().all(|l| l.nofollow));
    }

    #[test]
    fn meta_directives_from_several_tags_add_up() {
        let r = robots(
            r#"<meta name="robots" content="noindex"><meta name="crawltop" content="nofollow">"#,
        );
        assert!(r.noindex && r.nofollow);
    }

    #[test]
    fn meta_nofollow_keeps_links_but_marks_them() {
        let page =
            parse(r#"<meta name="robots" content="nofollow"><a href="a">a</a><a href="b">b</a>"#);
        assert_eq!(page.links.len(), 2);
        assert!(page.links.iter().all(|l| l.nofollow));
    }

    // --- malformed HTML ---

    #[test]
    fn unclosed_tags_still_yield_links_and_text() {
        let page = parse("<div><p>one<p>two<ul><li><a href=a.html>first<li><a href=b.html>second");
        assert_eq!(link_urls(&page).len(), 2);
        assert_eq!(page.text, "one\ntwo\nfirst\nsecond");
    }

    #[test]
    fn stray_end_tags_are_ignored() {
        let page = parse("</div></p><p>text</div> more</span> <a href='x'>x</a></a></a>");
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x"]);
        assert_eq!(page.text, "text more x");
    }

    #[test]
    fn unquoted_attributes_are_read() {
        assert_eq!(
            only_link("<a class=nav href=/a/b.html?x=1 rel=nofollow>x</a>"),
            "http://example.com/a/b.html?x=1"
        );
    }

    #[test]
    fn tag_never_closed_at_end_of_input_is_dropped_like_a_browser() {
        // The tokenizer hits end of file inside the tag: the HTML standard drops the tag.
        let page = parse(r"<p>before</p><a href=x.html");
        assert!(page.links.is_empty());
        assert_eq!(page.text, "before");
    }

    #[test]
    fn unclosed_anchor_wraps_the_rest_of_the_text() {
        let page = parse(r"<a href=x.html>click <b>here<p>after");
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x.html"]);
        assert_eq!(page.text, "click here\nafter");
    }

    #[test]
    fn anchor_missing_closing_bracket_swallows_next_tag_as_attributes() {
        // `<a href=x.html <p>y</p>`: "<p" becomes an attribute name, so the anchor is kept.
        let page = parse(r"<a href=x.html <p>y</p>");
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x.html"]);
    }

    #[test]
    fn nested_anchors_are_split_as_a_browser_does() {
        let page = parse(r#"<a href="1">one <a href="2">two</a></a>"#);
        assert_eq!(
            link_urls(&page),
            [
                "http://example.com/dir/sub/1",
                "http://example.com/dir/sub/2"
            ]
        );
    }

    // --- text ---

    #[test]
    fn text_excludes_head_script_style_noscript_template_and_title() {
        let page = parse(
            r#"<html><head><title>T</title><style>p{}</style><script>var a;</script>
               <meta name="x" content="y"></head><body><script>alert(1)</script>
               <noscript>enable js</noscript><template><p>tmpl</p></template>
               <p>visible</p><style>.x{}</style></body></html>"#,
        );
        assert_eq!(page.text, "visible");
        assert_eq!(page.title.as_deref(), Some("T"));
    }

    #[test]
    fn blocks_start_new_lines_and_inline_elements_do_not() {
        let page = parse(
            "<h1>Head</h1><p>Some <b>bold</b> and <i>it</i>alic.</p><div>d1<div>d2</div>d3</div>\
             <section>s</section><article>a</article><header>h</header><footer>f</footer>\
             <blockquote>q</blockquote>",
        );
        assert_eq!(
            page.text,
            "Head\nSome bold and italic.\nd1\nd2\nd3\ns\na\nh\nf\nq"
        );
    }

    #[test]
    fn br_breaks_a_line() {
        assert_eq!(parse("one<br>two<br/><br>three").text, "one\ntwo\nthree");
    }

    #[test]
    fn whitespace_is_collapsed_within_a_line() {
        let page = parse("<p>  a \n\t b&nbsp;&nbsp;c   </p>\n\n<p>\n</p><p>d</p>");
        assert_eq!(page.text, "a b c\nd");
    }

    #[test]
    fn table_cells_join_with_a_space_and_rows_are_lines() {
        let page = parse(
            "<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>31</td></tr>\
             <tr><td><b>Bo</b></td><td></td><td>x</td></tr></table>",
        );
        assert_eq!(page.text, "Name Age\nAnn 31\nBo x");
    }

    #[test]
    fn pre_keeps_its_lines_and_collapses_spaces_within() {
        let page = parse("<p>intro</p><pre>line  one\n  line two\n\n\nline three</pre>after");
        assert_eq!(page.text, "intro\nline one\nline two\nline three\nafter");
    }

    #[test]
    fn list_items_are_lines() {
        assert_eq!(parse("<ul><li>a</li><li>b<li>c</ul>").text, "a\nb\nc");
    }

    #[test]
    fn control_characters_never_reach_the_text() {
        let page = parse("<p>a\u{1b}[31mb\u{7}c</p>");
        assert_eq!(page.text, "a [31mb c");
    }

    #[test]
    fn entities_are_decoded_in_text_and_title() {
        let page = parse("<title>A &amp; B</title><p>&lt;tag&gt; &eacute;</p>");
        assert_eq!(page.title.as_deref(), Some("A & B"));
        assert_eq!(page.text, "<tag> é");
    }

    #[test]
    fn title_whitespace_is_collapsed_and_blank_title_is_none() {
        assert_eq!(
            parse("<title>\n  My \t Page \n</title>").title.as_deref(),
            Some("My Page")
        );
        assert_eq!(parse("<title>   </title>").title, None);
        assert_eq!(parse("<p>no title</p>").title, None);
    }

    #[test]
    fn svg_title_is_not_the_page_title() {
        let page = parse("<body><svg><title>icon</title></svg><p>x</p>");
        assert_eq!(page.title, None);
        let page = parse("<body><svg><title>icon</title></svg><title>Real</title>");
        assert_eq!(page.title.as_deref(), Some("Real"));
    }

    #[test]
    fn first_title_wins() {
        let page = parse("<title>One</title><body><title>Two</title>");
        assert_eq!(page.title.as_deref(), Some("One"));
    }

    #[test]
    fn text_is_stable_across_runs() {
        let html = "<div>a<p>b</p>c<table><tr><td>1<td>2</table></div>";
        assert_eq!(parse(html).text, parse(html).text);
        assert_eq!(parse(html).text, "a\nb\nc\n1 2");
    }

    // --- encodings ---

    #[test]
    fn meta_charset_windows_1252_decodes_e9_as_e_acute() {
        let body = b"<html><head><meta charset=\"windows-1252\"></head><p>caf\xE9</p>";
        let page = parse_html(body, Some("text/html"), &page_url());
        assert_eq!(page.text, "café");
        assert_eq!(page.encoding, "windows-1252");
    }

    #[test]
    fn meta_http_equiv_iso_8859_1_decodes_e9() {
        let body = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\">\
                     <title>r\xE9sum\xE9</title><p>\xE9t\xE9</p>";
        let page = parse_html(body, None, &page_url());
        assert_eq!(page.title.as_deref(), Some("résumé"));
        assert_eq!(page.text, "été");
        // WHATWG maps the ISO-8859-1 label to windows-1252.
        assert_eq!(page.encoding, "windows-1252");
    }

    /// Audit 24: `?w=caf\xE9` in a Latin-1 page was asked as `?w=caf%C3%A9`; browsers (and
    /// the URL standard) write a query in the page's encoding, a path in UTF-8.
    #[test]
    fn a_query_is_written_in_the_pages_encoding_and_a_path_in_utf8() {
        let body = b"<meta charset=windows-1252><base href=\"b/?x=\xE9\">\
                     <a href=\"q.html?w=caf\xE9\">q</a><a href=\"caf\xE9.html\">p</a>\
                     <a href=\"r.html?w=\xE2\x82\">r</a>";
        let page = parse_html(body, Some("text/html"), &page_url());
        assert_eq!(page.base.as_str(), "http://example.com/dir/sub/b/?x=%E9");
        assert_eq!(
            link_urls(&page),
            [
                "http://example.com/dir/sub/b/q.html?w=caf%E9",
                "http://example.com/dir/sub/b/caf%C3%A9.html",
                // windows-1252 has \x82 (a low quotation mark) and \xE2 (a-circumflex).
                "http://example.com/dir/sub/b/r.html?w=%E2%82",
            ]
        );
        // A character the encoding lacks is written as the standard says: &#NNNN; encoded.
        let body = "<meta charset=windows-1252><a href=\"s.html?w=&#20013;\">s</a>";
        let page = parse_html(body.as_bytes(), Some("text/html"), &page_url());
        assert_eq!(
            link_urls(&page),
            ["http://example.com/dir/sub/s.html?w=%26%2320013%3B"]
        );
        // UTF-8 and UTF-16 pages write UTF-8.
        let body = "<a href=\"q.html?w=caf\u{e9}\">q</a>";
        let page = parse_html(
            body.as_bytes(),
            Some("text/html; charset=utf-8"),
            &page_url(),
        );
        assert_eq!(
            link_urls(&page),
            ["http://example.com/dir/sub/q.html?w=caf%C3%A9"]
        );
    }

    #[test]
    fn meta_content_charset_without_http_equiv_is_ignored() {
        let body = b"<meta content=\"text/html; charset=windows-1252\"><p>\xC3\xA9</p>";
        let (text, encoding) = decode(body, None);
        assert_eq!(encoding, UTF_8);
        assert!(text.ends_with("<p>é</p>"));
    }

    /// As in a browser, whose tree builder meets the `<meta>` and parses the page again in
    /// its encoding (the cases are in `charset`'s tests).
    #[test]
    fn meta_beyond_first_1024_bytes_is_seen() {
        let mut body = format!("<!-- {} -->", "x".repeat(1024)).into_bytes();
        body.extend_from_slice(b"<meta charset=windows-1252><p>\xE9</p>");
        let (text, encoding) = decode(&body, None);
        assert_eq!(encoding, WINDOWS_1252);
        assert!(text.ends_with("<p>é</p>"), "{text}");
    }

    #[test]
    fn meta_inside_comment_is_not_seen() {
        let (_, encoding) = decode(b"<!-- <meta charset=windows-1252> --><p>x</p>", None);
        assert_eq!(encoding, UTF_8);
    }

    #[test]
    fn meta_in_attribute_value_of_other_tag_is_not_seen() {
        let (_, encoding) = decode(b"<div title='<meta charset=windows-1252>'>x</div>", None);
        assert_eq!(encoding, UTF_8);
    }

    #[test]
    fn meta_utf16_label_means_utf8() {
        let (_, encoding) = decode(b"<meta charset=utf-16le><p>x</p>", None);
        assert_eq!(encoding, UTF_8);
    }

    #[test]
    fn header_charset_overrides_meta() {
        let body = b"<meta charset=\"windows-1252\"><p>\xC3\xA9</p>";
        let page = parse_html(body, Some("text/html; charset=UTF-8"), &page_url());
        assert_eq!(page.text, "é");
        assert_eq!(page.encoding, "UTF-8");
    }

    #[test]
    fn header_charset_quoted_and_cased() {
        let (text, encoding) = decode(b"\xE9", Some("Text/HTML; Charset=\"ISO-8859-1\""));
        assert_eq!(encoding, WINDOWS_1252);
        assert_eq!(text, "é");
    }

    #[test]
    fn unknown_header_charset_falls_back_to_meta() {
        let body = b"<meta charset=windows-1252><p>\xE9</p>";
        let page = parse_html(body, Some("text/html; charset=bogus-42"), &page_url());
        assert_eq!(page.text, "é");
    }

    #[test]
    fn unknown_labels_everywhere_fall_back_to_utf8() {
        let (_, encoding) = decode(
            b"<meta charset=nonsense><p>x</p>",
            Some("text/html; charset=x"),
        );
        assert_eq!(encoding, UTF_8);
    }

    #[test]
    fn replacement_encoding_label_is_treated_as_unknown() {
        let (text, encoding) = decode(b"<p>hello</p>", Some("text/html; charset=iso-2022-kr"));
        assert_eq!(encoding, UTF_8);
        assert_eq!(text, "<p>hello</p>");
    }

    #[test]
    fn utf8_bom_overrides_header_and_meta() {
        let body = b"\xEF\xBB\xBF<meta charset=windows-1252><p>\xC3\xA9</p>";
        let page = parse_html(body, Some("text/html; charset=windows-1252"), &page_url());
        assert_eq!(page.text, "é");
        assert_eq!(page.encoding, "UTF-8");
    }

    #[test]
    fn utf16_bom_is_honoured_and_stripped() {
        let mut body = vec![0xFF, 0xFE];
        for unit in "<p>é</p>".encode_utf16() {
            body.extend_from_slice(&unit.to_le_bytes());
        }
        let (text, encoding) = decode(&body, Some("text/html; charset=windows-1252"));
        assert_eq!(encoding, UTF_16LE);
        assert_eq!(text, "<p>é</p>");
    }

    #[test]
    fn garbage_bytes_decode_with_replacement_characters() {
        let body = b"<p>ok \xFF\xFE\xC0\x80 \xE2\x82</p><a href=\"x\xFF.html\">x</a>";
        let page = parse_html(body, Some("text/html"), &page_url());
        assert!(page.text.starts_with("ok \u{FFFD}"), "{}", page.text);
        assert_eq!(
            link_urls(&page),
            ["http://example.com/dir/sub/x%EF%BF%BD.html"]
        );
    }

    #[test]
    fn empty_body_gives_empty_page() {
        let page = parse_html(b"", None, &page_url());
        assert_eq!(page.title, None);
        assert!(page.links.is_empty() && page.mailto.is_empty());
        assert_eq!(page.text, "");
        assert_eq!(page.encoding, "UTF-8");
        assert_eq!(page.base, page_url());
        assert_eq!(page.coverage, Coverage::Whole);
    }

    #[test]
    fn prescan_survives_truncated_tags() {
        for body in [
            &b"<meta charset="[..],
            b"<meta",
            b"<!--",
            b"<a href='",
            b"</",
            b"<meta x='",
        ] {
            assert_eq!(decode(body, None).1, UTF_8, "{body:?}");
        }
    }

    // --- size ---

    #[test]
    fn two_megabyte_page_parses() {
        let mut html = String::from("<html><body>");
        let mut i = 0;
        while html.len() < 2 * 1024 * 1024 {
            writeln!(
                html,
                "<p>paragraph {i} with some words <a href=\"/p{i}\">l</a></p>"
            )
            .expect("writing to a String cannot fail");
            i += 1;
        }
        let page = parse(&html);
        assert_eq!(page.coverage, Coverage::Whole);
        assert_eq!(page.links.len(), i);
        assert_eq!(page.text.lines().count(), i);
    }

    #[test]
    fn ten_thousand_links_are_all_found_in_order() {
        let mut html = String::new();
        for i in 0..10_000 {
            write!(html, "<a href=\"/l/{i}\">{i}</a> ").expect("writing to a String cannot fail");
        }
        let page = parse(&html);
        assert_eq!(page.links.len(), 10_000);
        assert_eq!(page.links[9_999].url.path(), "/l/9999");
        assert!(
            page.links
                .iter()
                .enumerate()
                .all(|(i, l)| l.url.path() == format!("/l/{i}"))
        );
    }

    #[test]
    fn nesting_below_the_limit_is_parsed_whole() {
        let depth = MAX_DEPTH - 10;
        let html = format!("{}<a href=\"deep\">deep</a>", "<div>".repeat(depth));
        let page = parse(&html);
        assert_eq!(page.coverage, Coverage::Whole);
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/deep"]);
        assert_eq!(page.text, "deep");
    }

    /// Past the cap the stream flattens (`stream::State::start`): nothing after it is lost.
    #[test]
    fn links_and_words_past_the_depth_cap_are_all_kept() {
        let links = "<p>first <a href=\"a1\">one</a> words</p><p>second <a href=\"a2\">two</a></p>";
        for closed in [true, false] {
            let html = format!(
                "<title>t</title>{}{links}{}after <a href=\"a3\">three</a> end",
                "<div>".repeat(600),
                if closed {
                    "</div>".repeat(600)
                } else {
                    String::new()
                }
            );
            let page = parse(&html);
            assert_eq!(page.coverage, Coverage::Whole, "closed {closed}");
            assert_eq!(page.coverage.reason(), None);
            assert_eq!(
                link_urls(&page),
                [
                    "http://example.com/dir/sub/a1",
                    "http://example.com/dir/sub/a2",
                    "http://example.com/dir/sub/a3"
                ],
                "closed {closed}"
            );
            assert_eq!(
                page.text, "first one words\nsecond two\nafter three end",
                "closed {closed}"
            );
            assert_eq!(page.title.as_deref(), Some("t"));
            assert_eq!(page, unbounded(&html), "closed {closed}");
        }
    }

    /// The tree parse without its depth limit, which the stream must equal past the cap.
    fn unbounded(html: &str) -> ParsedPage {
        dom::parse_html_unbounded(html.as_bytes(), Some("text/html"), &page_url())
    }

    #[test]
    fn hidden_elements_past_the_depth_cap_stay_hidden_until_their_end_tag() {
        for tag in ["script", "style", "noscript", "template", "iframe", "title"] {
            for depth in [MAX_DEPTH, MAX_DEPTH + 88] {
                let html = format!(
                    "<title>t</title>{}<{tag}><a href=\"hidden\">secret words</a><p>more \
                     <div>secret</{tag}><p>shown <a href=\"after\">after</a></p>",
                    "<div>".repeat(depth)
                );
                let page = parse(&html);
                let what = format!("<{tag}> at {depth}");
                assert_eq!(page.coverage, Coverage::Whole, "{what}");
                assert_eq!(
                    link_urls(&page),
                    ["http://example.com/dir/sub/after"],
                    "{what}"
                );
                assert_eq!(page.text, "shown after", "{what}");
                assert_eq!(page.title.as_deref(), Some("t"), "{what}");
                assert_eq!(page, unbounded(&html), "{what}");
            }
        }
    }

    #[test]
    fn a_title_past_the_depth_cap_is_the_page_title_and_an_svg_one_is_not() {
        let html = format!(
            "{}<svg><title>icon</title></svg><title>Deep &amp; late</title><p>body text",
            "<div>".repeat(600)
        );
        let page = parse(&html);
        assert_eq!(page.title.as_deref(), Some("Deep & late"));
        assert_eq!(page.text, "body text");
        assert_eq!(page, unbounded(&html));
        // A title left open ends the page: its text is the title's, not the page's.
        let page = parse(&format!("{}<title>open to the end", "<div>".repeat(600)));
        assert_eq!(page.title.as_deref(), Some("open to the end"));
        assert_eq!(page.text, "");
    }

    #[test]
    fn end_tags_past_the_depth_cap_close_what_they_opened() {
        let html = format!(
            "{}<p>one</p>two<pre>a\n  b</pre>three <b>four</b> five<p>six<p>seven</p>eight\
             <template><a href=\"t\">t</a></template><a href=\"x\">nine</a>",
            "<div>".repeat(600)
        );
        let page = parse(&html);
        assert_eq!(page.coverage, Coverage::Whole);
        assert_eq!(
            page.text,
            "one\ntwo\na\nb\nthree four five\nsix\nseven\neightnine"
        );
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/x"]);
        assert_eq!(page, unbounded(&html));
    }

    /// Hostile nesting: only `lol_html`'s memory limit cuts it (its stack of open elements,
    /// about 128 bytes each, outgrows 8 MiB past about 65,000), what came before is kept, and
    /// the stream's own mirror stays at [`MAX_DEPTH`].
    #[test]
    fn runaway_nesting_is_cut_at_the_memory_limit_and_keeps_what_came_before() {
        let html = format!(
            "<title>t</title><p>before <a href=\"early\">e</a></p>{}<a href=\"late\">l</a>",
            "<div>".repeat(100_000)
        );
        let started = std::time::Instant::now();
        let page = parse(&html);
        let Coverage::CutAtMemory { parsed_bytes } = page.coverage else {
            panic!("expected a cut, got {:?}", page.coverage);
        };
        assert!(
            parsed_bytes > 5 * 50_000 && parsed_bytes < html.len(),
            "cut at {parsed_bytes}"
        );
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
        assert_eq!(link_urls(&page), ["http://example.com/dir/sub/early"]);
        assert_eq!(page.title.as_deref(), Some("t"));
        assert_eq!(page.text, "before e");
    }

    #[test]
    fn unclosed_links_are_a_list_not_a_nesting() {
        let n = MAX_DEPTH + 100;
        let html = (0..n).fold(String::new(), |mut html, i| {
            let _ = writeln!(html, "<a href=\"p{i}\">link {i}");
            html
        });
        let page = parse(&html);
        assert_eq!(page.coverage, Coverage::Whole);
        let links = link_urls(&page);
        assert_eq!(links.len(), n);
        assert_eq!(
            links[n - 1],
            format!("http://example.com/dir/sub/p{}", n - 1)
        );
        assert!(
            page.text.ends_with(&format!("link {}", n - 1)),
            "{}",
            page.text.len()
        );
        for tag in ["button", "nobr"] {
            let html = format!("{}<a href=\"last\">end</a>", format!("<{tag}>x ").repeat(n));
            let page = parse(&html);
            assert_eq!(page.coverage, Coverage::Whole, "{tag}");
            assert_eq!(
                link_urls(&page),
                ["http://example.com/dir/sub/last"],
                "{tag}"
            );
        }
    }

    /// Tens of thousands of elements left open (nested, or unclosed `<p>`s, which only
    /// `lol_html` keeps open), then a megabyte of end tags, each of which searches them all:
    /// cut at [`MAX_END_TAG_SEARCH`], in seconds, not minutes.
    #[test]
    fn end_tags_under_tens_of_thousands_of_open_elements_are_cut_in_time() {
        for open in ["<div>", "<p>x"] {
            let html = format!(
                "<a href=\"early\">e</a>{}{}<a href=\"late\">l</a>",
                open.repeat(20_000),
                "</a>".repeat(300_000)
            );
            let started = std::time::Instant::now();
            let page = parse(&html);
            let Coverage::CutAtEndTags { parsed_bytes } = page.coverage else {
                panic!("{open}: expected a cut, got {:?}", page.coverage);
            };
            assert!(
                parsed_bytes < html.len() / 2,
                "{open}: cut at {parsed_bytes}"
            );
            let reason = page.coverage.reason().unwrap_or_default();
            assert!(reason.contains("too many end tags"), "{reason}");
            assert_eq!(link_urls(&page), ["http://example.com/dir/sub/early"]);
            assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
        }
        // Under 512 open elements nothing is counted: searched whole, as before.
        let html = format!(
            "{}{}<a href=\"late\">l</a>",
            "<div>".repeat(MAX_DEPTH),
            "</a>".repeat(300_000)
        );
        assert_eq!(parse(&html).coverage, Coverage::Whole);
    }

    #[test]
    fn many_unclosed_inline_elements_are_parsed() {
        let html = format!("{}text", "<span>".repeat(400));
        let page = parse(&html);
        assert_eq!(page.coverage, Coverage::Whole);
        assert_eq!(page.text, "text");
    }

    #[test]
    fn chunk_boundaries_inside_multibyte_characters_are_safe() {
        let html = format!("<p>{}</p>", "é€😀".repeat(3 * PARSE_CHUNK));
        let page = parse(&html);
        assert_eq!(page.text.chars().count(), 9 * PARSE_CHUNK);
    }

    // --- title cap ---

    #[test]
    fn a_long_title_is_cut_at_the_cap_and_never_inside_a_character() {
        // ASCII: exactly at the cap, then a space left at the cut is dropped.
        let ascii = "abc ".repeat(MAX_TITLE_BYTES);
        let title = parse(&format!("<title>{ascii}</title>"))
            .title
            .expect("title");
        assert_eq!(title.len(), MAX_TITLE_BYTES - 1, "{title:?}");
        assert_eq!(title, ascii[..MAX_TITLE_BYTES - 1]);
        let exact = "x".repeat(MAX_TITLE_BYTES);
        let title = parse(&format!("<title>{exact}y</title>"))
            .title
            .expect("title");
        assert_eq!(title, exact);
        // Multibyte: "tïtle " is 7 bytes, so the 1024th byte is inside the 147th word's "ï"
        // (bytes 1023 and 1024): the cut falls before it.
        let word = "tïtle ";
        let long = word.repeat(3 * MAX_TITLE_BYTES);
        let title = parse(&format!("<title>{long}</title>"))
            .title
            .expect("title");
        assert_eq!(title.len(), MAX_TITLE_BYTES - 1);
        assert_eq!(title, format!("{}t", word.repeat(MAX_TITLE_BYTES / 7)));
        // A 4-byte character across the cap: cut before it, nothing of it kept.
        let emoji = format!("{}🦀🦀", "a".repeat(MAX_TITLE_BYTES - 2));
        let title = parse(&format!("<title>{emoji}</title>"))
            .title
            .expect("title");
        assert_eq!(title, "a".repeat(MAX_TITLE_BYTES - 2));
        // A title at the cap, or under it, is whole.
        let whole = format!("{}é", "a".repeat(MAX_TITLE_BYTES - 2));
        let title = parse(&format!("<title>{whole}</title>"))
            .title
            .expect("title");
        assert_eq!(title, whole);
    }

    /// The builder's first `push`, a char at a time: what the run-copying one must equal.
    fn push_a_char_at_a_time(builder: &mut TextBuilder, s: &str, preformatted: bool) {
        let mut word_start = None;
        for (at, c) in s.char_indices() {
            if c.is_whitespace() || c.is_control() {
                if let Some(start) = word_start.take() {
                    builder.word(&s[start..at]);
                }
                if preformatted && c == '\n' {
                    builder.break_line();
                } else {
                    builder.pending_space = builder.line_has_text;
                }
            } else if word_start.is_none() {
                word_start = Some(at);
            }
        }
        if let Some(start) = word_start {
            builder.word(&s[start..]);
        }
    }

    #[test]
    fn text_pushed_in_runs_equals_text_pushed_a_char_at_a_time() {
        let pieces = [
            "a", "bc", "wörd", " ", "  ", "\n", "\r\n", "\t", "\u{a0}", "\u{85}", "\u{3000}",
            "\u{7f}", "\u{1}", "\u{200b}", "x y", "é", "日本", " \n ", "-", "",
        ];
        // A fixed xorshift: the same ten thousand texts on every run.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..10_000 {
            let (mut runs, mut chars) = (TextBuilder::default(), TextBuilder::default());
            // Several pushes into one builder: a space or line pending crosses them.
            for _ in 0..=(next() % 4) {
                let text: String = (0..next() % 12)
                    .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                    .collect();
                let preformatted = next() % 3 == 0;
                runs.push(&text, preformatted);
                push_a_char_at_a_time(&mut chars, &text, preformatted);
                assert_eq!(runs.out, chars.out, "{text:?} preformatted {preformatted}");
            }
            let (runs, chars) = (runs.finish(), chars.finish());
            assert_eq!(runs, chars);
        }
    }

    #[test]
    fn the_title_builder_stops_taking_text_past_the_cap() {
        // Whitespace collapses: what the builder holds is always the start of what it would
        // make of everything, and it never grows far past the cap, whatever is pushed.
        let mut capped = TextBuilder::default();
        let mut whole = TextBuilder::default();
        let piece = "  ünïcödé\t wörds \n\n";
        for _ in 0..10_000 {
            capped.push_capped(piece, MAX_TITLE_BYTES);
            whole.push(piece, false);
            assert!(
                capped.out.len() <= MAX_TITLE_BYTES + 8,
                "{}",
                capped.out.len()
            );
        }
        let (capped, whole) = (capped.finish(), whole.finish());
        assert!(whole.starts_with(&capped), "a prefix");
        assert_eq!(cap_title(capped), cap_title(whole));
    }

    // --- is_html ---

    #[test]
    fn is_html_accepts_html_and_xhtml_with_parameters_and_case() {
        assert!(is_html(Some("text/html")));
        assert!(is_html(Some("TEXT/HTML; charset=utf-8")));
        assert!(is_html(Some(" application/xhtml+xml ;q=1")));
    }

    #[test]
    fn is_html_rejects_everything_else() {
        assert!(!is_html(None));
        assert!(!is_html(Some("")));
        assert!(!is_html(Some("text/plain")));
        assert!(!is_html(Some("text/htmlx")));
        assert!(!is_html(Some("application/json; x=text/html")));
    }
}
