//! The link farm (`gen-site --link-farm`): sites whose pages carry many links, mostly to pages
//! that do not exist, so a crawl learns millions of URLs long before it fetches them.
//!
//! Nothing of a farm is on disk but its robots.txt and its parameters: the server makes each
//! page from its path when asked, and the manifest records the parameters, from which a test
//! computes every answer (which URLs exist, how many a crawl learns, each one's depth). The
//! pages form an N-ary tree in heap order: page `id` links to `id*N+1 ..= id*N+N`, and pages
//! `0..pages` exist; every other linked page answers 404. It owns that arithmetic and the pages'
//! bytes; it never touches sockets or files.

use std::fmt::Write as _;
use std::ops::Range;

use serde::{Deserialize, Serialize};

/// Bounds that keep a typo from asking for more than a crawl could ever learn.
pub const MAX_LINKS_PER_PAGE: u64 = 100_000;
pub const MAX_PAGES: u64 = 100_000_000;
/// At most this many URLs to learn on one farm site.
pub const MAX_KNOWN_URLS: u64 = 10_000_000_000;

/// One farm site's shape: the same for every farm site of a web.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFarm {
    /// Pages that exist (answer 200): ids `0..pages`.
    pub pages: u64,
    /// Links on every existing page.
    pub links_per_page: u64,
}

impl Default for LinkFarm {
    /// 1,250 pages of 1,000 links: 1,250,001 URLs a site, so 8 farm sites make 10 million.
    fn default() -> Self {
        LinkFarm {
            pages: 1_250,
            links_per_page: 1_000,
        }
    }
}

impl LinkFarm {
    /// Why these parameters are refused, if they are.
    pub fn problem(&self) -> Option<String> {
        if !(1..=MAX_PAGES).contains(&self.pages) {
            return Some(format!(
                "link farm: pages must be from 1 to {MAX_PAGES}, not {}",
                self.pages
            ));
        }
        if !(1..=MAX_LINKS_PER_PAGE).contains(&self.links_per_page) {
            return Some(format!(
                "link farm: links per page must be from 1 to {MAX_LINKS_PER_PAGE}, not {}",
                self.links_per_page
            ));
        }
        if self.pages.saturating_mul(self.links_per_page) >= MAX_KNOWN_URLS {
            return Some(format!(
                "link farm: {} pages of {} links make more than {MAX_KNOWN_URLS} URLs a site",
                self.pages, self.links_per_page
            ));
        }
        None
    }

    /// URLs a complete crawl of one farm site learns: the root and every link of every
    /// existing page (`0 ..= pages * links_per_page`). Valid parameters keep this far from
    /// overflowing.
    pub fn known_urls(&self) -> u64 {
        self.pages * self.links_per_page + 1
    }

    /// Whether page `id` answers 200.
    pub fn exists(&self, id: u64) -> bool {
        id < self.pages
    }

    /// The pages an existing page links to, in the order they appear; empty for a missing one.
    pub fn children(&self, id: u64) -> Range<u64> {
        if self.exists(id) {
            let first = id * self.links_per_page + 1;
            first..first + self.links_per_page
        } else {
            0..0
        }
    }

    /// Links from the root (the farm's `/`) to page `id`: its depth in the tree.
    pub fn depth(&self, id: u64) -> u32 {
        let mut depth = 0;
        let mut id = id;
        while id > 0 {
            id = (id - 1) / self.links_per_page;
            depth += 1;
        }
        depth
    }

    /// Whether a crawl learns page `id`'s URL at all.
    pub fn is_known(&self, id: u64) -> bool {
        id < self.known_urls()
    }

    /// The URL path of page `id`: `/` for the root, `/f/ID.html` for the others.
    pub fn path(id: u64) -> String {
        if id == 0 {
            "/".to_string()
        } else {
            format!("/f/{id}.html")
        }
    }

    /// The page id a path names, if it is one of the farm's paths written the one way
    /// [`LinkFarm::path`] writes it (no leading zeros, no sign, no other spelling).
    pub fn id_of(path: &str) -> Option<u64> {
        if path == "/" {
            return Some(0);
        }
        let digits = path.strip_prefix("/f/")?.strip_suffix(".html")?;
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        digits.parse().ok().filter(|&id| id > 0)
    }

    /// The HTML of page `id` of site `site`, or `None` when it does not exist.
    pub fn render(&self, site: &str, id: u64) -> Option<String> {
        if !self.exists(id) {
            return None;
        }
        let n = usize::try_from(self.links_per_page).unwrap_or(usize::MAX);
        let mut out = String::with_capacity(200 + n.saturating_mul(48));
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{site}: page {id}</title>\n</head>\n<body>\n<h1>Page {id}</h1>\n<ul>\n"
        );
        for child in self.children(id) {
            let _ = writeln!(out, "<li><a href=\"/f/{child}.html\">page {child}</a></li>");
        }
        out.push_str("</ul>\n</body>\n</html>\n");
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_counted_right() {
        let f = LinkFarm {
            pages: 3,
            links_per_page: 1_000,
        };
        assert_eq!(f.known_urls(), 3_001);
        assert_eq!(f.children(0), 1..1_001);
        assert_eq!(f.children(2), 2_001..3_001);
        assert!(f.children(3).is_empty());
        assert_eq!((f.depth(0), f.depth(1), f.depth(1_000)), (0, 1, 1));
        assert_eq!((f.depth(1_001), f.depth(3_000)), (2, 2));
        assert!(f.is_known(3_000) && !f.is_known(3_001));
    }

    #[test]
    fn paths_round_trip_and_other_spellings_are_not_pages() {
        for id in [0, 1, 9, 10, 1_234_567] {
            assert_eq!(LinkFarm::id_of(&LinkFarm::path(id)), Some(id));
        }
        for bad in [
            "/f/0.html",
            "/f/01.html",
            "/f/+1.html",
            "/f/.html",
            "/f/1.htm",
            "/f/1",
            "/f/99999999999999999999999.html",
            "/index.html",
            "",
        ] {
            assert_eq!(LinkFarm::id_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_page_links_its_children_and_a_missing_page_is_none() {
        let f = LinkFarm {
            pages: 2,
            links_per_page: 3,
        };
        let page = f.render("farm00", 1).expect("exists");
        for child in 4..=6 {
            assert!(page.contains(&format!("href=\"/f/{child}.html\"")));
        }
        assert_eq!(page.matches("<a ").count(), 3);
        assert_eq!(f.render("farm00", 2), None);
    }

    #[test]
    fn absurd_parameters_are_refused() {
        let ok = LinkFarm::default();
        assert_eq!(ok.problem(), None);
        assert_eq!(ok.known_urls(), 1_250_001);
        for bad in [
            LinkFarm { pages: 0, ..ok },
            LinkFarm {
                links_per_page: 0,
                ..ok
            },
            LinkFarm {
                links_per_page: MAX_LINKS_PER_PAGE + 1,
                ..ok
            },
            LinkFarm {
                pages: MAX_PAGES,
                links_per_page: MAX_LINKS_PER_PAGE,
            },
        ] {
            assert!(bad.problem().is_some(), "{bad:?}");
        }
    }
}
