//! The heavy sites of `gen-site --heavy`: what a streaming parser is benchmarked on.
//!
//! Two sites, planned like every other so the manifest walk gives their reachable URLs and
//! depths: `listings`, pages like highlighted source listings (1 to 8 MB by default, a span per
//! token, a line anchor per line, links to other lines and files), and `docs`, pages like API
//! documentation (a sidebar linking every API page, so 300+ links a page by default, and a book
//! whose chapters are reachable only through a long `<link rel=next>` chain). It owns only their
//! shape and bytes; it never decides anything about the other sites, and it draws its random
//! numbers from its own generators so the rest of the web stays byte for byte what it was.

use std::fmt::Write as _;

use super::{
    Book, GenError, LinkPlan, Resource, Rng, RobotsRole, SiteKind, SitePlan, Special, Target,
    WebPlan, escape, href, write_link_next,
};

/// Sizes of the heavy sites. The defaults are the benchmark's; tests shrink them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeavyOptions {
    /// Source listing pages on `listings`.
    pub listings: usize,
    /// The largest listing, in bytes; the smallest is an eighth of it, the others in between
    /// (geometrically).
    pub listing_max_bytes: usize,
    /// API pages on `docs`: every docs page's sidebar links them all.
    pub api_pages: usize,
    /// Book chapters on `docs`, each reachable only through the previous one's `rel=next`.
    pub chapters: usize,
}

impl Default for HeavyOptions {
    fn default() -> Self {
        HeavyOptions {
            listings: 6,
            listing_max_bytes: 8 << 20,
            api_pages: 320,
            chapters: 100,
        }
    }
}

/// Bounds that keep a typo from filling the disk or the manifest.
pub const MAX_LISTINGS: usize = 64;
pub const MAX_LISTING_BYTES: usize = 64 << 20;
pub const MIN_LISTING_BYTES: usize = 16 << 10;
pub const MAX_API_PAGES: usize = 5_000;
pub const MAX_CHAPTERS: usize = 10_000;

impl HeavyOptions {
    pub(super) fn validate(&self) -> Result<(), GenError> {
        let check = |what: &str, n: usize, lo: usize, hi: usize| {
            if (lo..=hi).contains(&n) {
                Ok(())
            } else {
                Err(GenError::Invalid(format!(
                    "heavy sites: {what} must be from {lo} to {hi}, not {n}"
                )))
            }
        };
        check("listing pages", self.listings, 1, MAX_LISTINGS)?;
        check(
            "the largest listing (bytes)",
            self.listing_max_bytes,
            MIN_LISTING_BYTES,
            MAX_LISTING_BYTES,
        )?;
        check("API pages", self.api_pages, 1, MAX_API_PAGES)?;
        check("chapters", self.chapters, 1, MAX_CHAPTERS)
    }

    /// The target size of listing `i`: from an eighth of the largest up to the largest.
    fn listing_bytes(&self, i: usize) -> usize {
        if self.listings == 1 {
            return self.listing_max_bytes;
        }
        let f = i as f64 / (self.listings - 1) as f64;
        (self.listing_max_bytes as f64 / 8f64.powf(1.0 - f)) as usize
    }
}

const LISTING_NAMES: [&str; 12] = [
    "lib", "engine", "frontier", "fetch", "parse", "robots", "store", "index", "snapshot",
    "control", "scope", "backoff",
];

fn listing_path(i: usize) -> String {
    match LISTING_NAMES.get(i) {
        Some(name) => format!("/src/{name}.rs.html"),
        None => format!("/src/module{i}.rs.html"),
    }
}

/// `listings`: an index of files, and one page per file that imports every other file.
pub(super) fn plan_listings_site(me: usize, opts: &HeavyOptions) -> SitePlan {
    let mut site = SitePlan::new(
        "listings".into(),
        SiteKind::Listings,
        RobotsRole::AllowAll,
        None,
    );
    let index = site.add_html("/");
    let files: Vec<String> = (0..opts.listings).map(listing_path).collect();
    for (i, path) in files.iter().enumerate() {
        let r = site.add_html(path);
        site.link(index, me, path);
        site.resources[r].special = Special::Listing {
            bytes: opts.listing_bytes(i),
        };
        // The page's own URL first (its line anchors), then its imports, then the index.
        for target in std::iter::once(path).chain(files.iter().filter(|p| *p != path)) {
            site.link(r, me, target);
        }
        site.link(r, me, "/");
    }
    site
}

/// `docs`: an API index, API pages, and a book chained by `rel=next`; a sidebar on every page.
pub(super) fn plan_docs_site(me: usize, opts: &HeavyOptions, seed: u64) -> SitePlan {
    const MODULES: [&str; 8] = [
        "engine", "frontier", "fetch", "parse", "robots", "store", "index", "control",
    ];
    let mut rng = Rng::new(seed ^ 0xd0c5_d0c5_d0c5_d0c5);
    let mut site = SitePlan::new("docs".into(), SiteKind::Docs, RobotsRole::AllowAll, None);
    let index = site.add_html("/");
    let api: Vec<String> = (0..opts.api_pages)
        .map(|k| {
            let kind = ["struct", "enum", "fn", "trait"][k % 4];
            format!("/api/{}/{kind}.Item{k}.html", MODULES[k % MODULES.len()])
        })
        .collect();
    let chapters: Vec<String> = (0..opts.chapters)
        .map(|k| format!("/book/ch{k:03}.html"))
        .collect();
    let mut pages = vec![index];
    for path in api.iter().chain(&chapters) {
        pages.push(site.add_html(path));
    }
    for r in pages {
        for path in &api {
            site.link(r, me, path);
        }
        site.resources[r].special = Special::Docs { sidebar: api.len() };
        // A few links in the text, to API pages and home.
        for _ in 0..rng.range(2, 6) {
            let path = api[rng.index(api.len())].clone();
            let fragment = rng.chance(0.5).then(|| "method.new".to_string());
            site.resources[r].links.push(LinkPlan {
                target: Target::Url {
                    site: me,
                    path,
                    fragment,
                },
                nofollow: false,
            });
        }
        site.link(r, me, "/");
    }
    // The book: only the index links its first chapter; each chapter names the next.
    site.link(index, me, &chapters[0]);
    for pair in chapters.windows(2) {
        let r = site.by_path[&pair[0]];
        site.resources[r].link_next = Some(pair[1].clone());
    }
    site
}

/// Words fit to be identifiers: the book's, lowercased letters only, a few hundred of them.
fn identifiers(book: &Book<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for w in &book.words {
        let id: String = w
            .chars()
            .filter(char::is_ascii_alphabetic)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if id.len() >= 3 && seen.insert(id.clone()) {
            out.push(id);
            if out.len() == 400 {
                break;
            }
        }
    }
    if out.is_empty() {
        out.push("value".into());
    }
    out
}

const KEYWORDS: [&str; 12] = [
    "fn", "let", "mut", "pub", "struct", "impl", "match", "if", "else", "return", "for", "while",
];
const TYPES: [&str; 8] = [
    "u64", "usize", "String", "Vec", "Option", "Result", "bool", "Url",
];
const PUNCT: [&str; 8] = ["(", ")", "{", "}", ";", ",", "=&gt;", "&amp;"];

/// A highlighted source listing of about `bytes` bytes: `<pre>` of lines, each an anchored
/// span with a line-number link, tokens in classed spans, and links to lines of this and the
/// imported files (the page's planned links: itself first, then the other files, then home).
pub(super) fn render_listing(
    web: &WebPlan,
    me: usize,
    res: &Resource,
    bytes: usize,
    book: &Book,
    rng: &mut Rng,
) -> String {
    let ids = identifiers(book);
    let name = res.path.rsplit('/').next().unwrap_or("file");
    let mut out = String::with_capacity(bytes + 4096);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{name} - source</title>\n<style>.kw{{color:#a626a4}} .ln{{color:#999}}</style>\n\
         </head>\n<body class=\"source\">\n<nav class=\"crumbs\"><a href=\"{}\">listings</a> / \
         {name}</nav>\n<pre class=\"code\"><code>",
        escape(&href(
            web,
            me,
            res,
            &res.links[res.links.len() - 1].target,
            rng
        ))
    );
    // Links to other files: planned hrefs (their forms vary), reused with other line fragments.
    let files: Vec<String> = res.links[1..res.links.len() - 1]
        .iter()
        .map(|l| href(web, me, res, &l.target, rng))
        .collect();
    let mut line = 0usize;
    // Imports first: every other file is linked at least once.
    for (f, h) in files.iter().enumerate() {
        let module = res.links[f + 1]
            .target_path()
            .and_then(|p| p.rsplit('/').next())
            .and_then(|p| p.split('.').next())
            .unwrap_or("module");
        let body = format!(
            "<span class=\"kw\">use</span> <span class=\"kw\">crate</span>::\
             <a class=\"ref\" href=\"{}\">{module}</a><span class=\"punct\">;</span>",
            escape(h.trim())
        );
        emit_line(&mut out, &mut line, &body);
    }
    let mut body = String::with_capacity(512);
    while out.len() < bytes {
        body.clear();
        code_line(&mut body, line, &files, &ids, book, rng);
        emit_line(&mut out, &mut line, &body);
    }
    out.push_str("</code></pre>\n</body>\n</html>\n");
    out
}

/// The tokens of one listing line after `line` lines: indentation, keywords, identifiers,
/// types, punctuation, literals, a comment, and now and then a link to an earlier line of this
/// file or to a line of another (`files`: their hrefs).
fn code_line(
    body: &mut String,
    line: usize,
    files: &[String],
    ids: &[String],
    book: &Book,
    rng: &mut Rng,
) {
    let depth = rng.index(4);
    for _ in 0..depth {
        body.push_str("    ");
    }
    let tokens = rng.range(3, 10);
    for t in 0..tokens {
        if t > 0 {
            body.push(' ');
        }
        match rng.index(20) {
            0..=3 => {
                let _ = write!(
                    body,
                    "<span class=\"kw\">{}</span>",
                    KEYWORDS[rng.index(KEYWORDS.len())]
                );
            }
            4..=9 => {
                let _ = write!(
                    body,
                    "<span class=\"ident\">{}</span>",
                    ids[rng.index(ids.len())]
                );
            }
            10 | 11 => {
                let _ = write!(
                    body,
                    "<span class=\"ty\">{}</span>",
                    TYPES[rng.index(TYPES.len())]
                );
            }
            12..=14 => {
                let _ = write!(
                    body,
                    "<span class=\"punct\">{}</span>",
                    PUNCT[rng.index(PUNCT.len())]
                );
            }
            15 => {
                let _ = write!(body, "<span class=\"num\">{}</span>", rng.index(10_000));
            }
            16 => {
                let _ = write!(
                    body,
                    "<span class=\"str\">&quot;{}&quot;</span>",
                    ids[rng.index(ids.len())]
                );
            }
            17 if line > 1 => {
                // A reference to an earlier line of this file.
                let _ = write!(
                    body,
                    "<a class=\"ref\" href=\"#L{}\">{}</a>",
                    1 + rng.index(line),
                    ids[rng.index(ids.len())]
                );
            }
            18 if !files.is_empty() => {
                let h = files[rng.index(files.len())].trim();
                let _ = write!(
                    body,
                    "<a class=\"ref\" href=\"{}#L{}\">{}</a>",
                    escape(h.split('#').next().unwrap_or(h)),
                    1 + rng.index(2_000),
                    ids[rng.index(ids.len())]
                );
            }
            _ => {
                let n = rng.range(2, 6);
                let _ = write!(
                    body,
                    "<span class=\"comment\">// {}</span>",
                    escape(&book.run(rng, n))
                );
                break;
            }
        }
    }
}

/// One listing line: an anchored span whose line number links to itself.
fn emit_line(out: &mut String, line: &mut usize, body: &str) {
    *line += 1;
    let n = *line;
    let _ = writeln!(
        out,
        "<span class=\"line\" id=\"L{n}\"><a class=\"ln\" href=\"#L{n}\">{n}</a>{body}</span>"
    );
}

/// An API documentation page: a sidebar linking every API page, then text with a few links.
pub(super) fn render_docs(
    web: &WebPlan,
    me: usize,
    res: &Resource,
    sidebar: usize,
    book: &Book,
    rng: &mut Rng,
) -> String {
    let title = if res.path == "/" {
        "API index".to_string()
    } else {
        res.path
            .rsplit('/')
            .next()
            .unwrap_or("page")
            .trim_end_matches(".html")
            .to_string()
    };
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{} - docs</title>\n",
        escape(&title)
    );
    write_link_next(&mut out, web, me, res, rng);
    out.push_str("</head>\n<body class=\"docs\">\n<nav class=\"sidebar\">\n<h2>API</h2>\n<ul>\n");
    for link in &res.links[..sidebar] {
        let h = href(web, me, res, &link.target, rng);
        let label = link
            .target_path()
            .map_or("item", |p| {
                p.trim_start_matches("/api/").trim_end_matches(".html")
            })
            .replace('/', "::");
        let _ = writeln!(
            out,
            "<li><a href=\"{}\">{}</a></li>",
            escape(&h),
            escape(&label)
        );
    }
    let _ = write!(out, "</ul>\n</nav>\n<main>\n<h1>{}</h1>\n", escape(&title));
    for link in &res.links[sidebar..] {
        let h = href(web, me, res, &link.target, rng);
        let n = rng.range(30, 90);
        let words = book.run(rng, 3);
        let _ = writeln!(
            out,
            "<p>{} <a href=\"{}\">{}</a></p>",
            escape(&book.run(rng, n)),
            escape(&h),
            escape(&words)
        );
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

impl LinkPlan {
    /// The path a link to a URL goes to, without its fragment.
    fn target_path(&self) -> Option<&str> {
        match &self.target {
            Target::Url { path, .. } => Some(path),
            Target::Mailto(_) => None,
        }
    }
}
