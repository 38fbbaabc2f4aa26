//! The right answer for a generated web, written as `manifest.json` beside the sites.
//!
//! Tests read what a correct crawler must find here instead of hard-coding it. The generator is
//! the only writer; nothing here touches the network.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::farm::LinkFarm;

/// The file name of the manifest inside a generated web's folder.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Everything a test needs to judge a crawl of a generated web.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of this file.
    pub version: u32,
    /// The `--seed` the web was generated from.
    pub seed: u64,
    /// The origin placeholder pattern used in the files (see [`crate::testweb::placeholder`]).
    pub placeholder: String,
    /// Every site, in port order (`site00`, `site01`, ..., then `hostile`, `robots500`, `robotsmoved` and `robotsaway`).
    pub sites: Vec<SiteManifest>,
}

/// What a site is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteKind {
    /// An ordinary static site.
    Normal,
    /// The site whose paths misbehave on purpose (`--hostile`).
    Hostile,
    /// A site whose robots.txt always answers 500 (`--hostile`): nothing on it may be fetched.
    Robots500,
    /// A site whose `/robots.txt` answers 301 to `/policy/robots.txt` (`--hostile`): the rules
    /// found there apply to the site.
    RobotsMoved,
    /// A site whose `/robots.txt` answers 302 to `robotsmoved`'s `/policy/robots.txt`, another
    /// origin (`--hostile`): those rules apply to this site too.
    RobotsAway,
    /// Highlighted source listings of 1 to 8 MB (`--heavy`).
    Listings,
    /// API docs: 300+ links a page and a long `rel=next` chain (`--heavy`).
    Docs,
    /// A link farm (`--link-farm`): pages made on request, described by [`SiteManifest::farm`]
    /// instead of listed.
    LinkFarm,
}

/// Which robots.txt a normal site got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RobotsRole {
    /// `User-agent: *` disallowing `/private/` (but allowing `/private/open.html`) and `/*.cgi$`.
    Standard,
    /// `User-agent: *` with a `Crawl-delay`.
    CrawlDelay,
    /// Only a group for another user agent: crawltop is unrestricted.
    OtherAgent,
    /// No robots.txt at all (404).
    None,
    /// robots.txt answers 500 (the `robots500` site).
    ServerError,
    /// robots.txt redirects to `/policy/robots.txt`, which disallows `/private/` (the
    /// `robotsmoved` site).
    Moved,
    /// robots.txt redirects to `robotsmoved`'s `/policy/robots.txt` (the `robotsaway` site).
    MovedAway,
    /// Allows everything (the hostile site).
    AllowAll,
}

/// One site of the web and the right answers about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteManifest {
    /// Folder name and key for the placeholder, e.g. `site03`.
    pub name: String,
    pub kind: SiteKind,
    pub robots: RobotsRole,
    /// The robots.txt text as written (placeholders unfilled), if the site has one.
    pub robots_txt: Option<String>,
    /// `Crawl-delay` in seconds, for the site that has one.
    pub crawl_delay_s: Option<f64>,
    /// Allowed pages reachable from `site00`'s index by followable links, one entry per URL
    /// (a `?query` variant is its own entry), in path order.
    pub pages: Vec<PageEntry>,
    /// Linked (by a followable link on a reachable page) URLs that robots.txt disallows for
    /// crawltop. A correct crawler never requests them.
    pub disallowed: Vec<String>,
    /// Linked, allowed URLs that do not exist (404).
    pub dead: Vec<String>,
    /// Linked URLs that answer with a redirect.
    pub redirects: Vec<Redirect>,
    /// Pages that exist and are linked only by `rel=nofollow` links or from a page whose
    /// `<meta name=robots>` says nofollow. A polite crawler never requests them.
    pub nofollow_only: Vec<String>,
    /// Reachable pages carrying `<meta name="robots" content="noindex">`.
    pub noindex: Vec<String>,
    /// `mailto:` addresses on reachable pages.
    pub mailto: Vec<String>,
    /// For the hostile site: each misbehaving path and what it does.
    pub behaviours: Vec<Behaviour>,
    /// For a link farm: its shape, from which every answer follows (its `pages`, `dead` and
    /// the rest stay empty: a farm of millions of URLs is not listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm: Option<FarmManifest>,
}

/// What a crawl of one link farm site must find, computed rather than listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FarmManifest {
    /// The farm's parameters; [`LinkFarm`]'s methods answer per page (exists, depth, links).
    pub farm: LinkFarm,
    /// Link distance of the farm's `/` from `site00`'s index; page `id` is
    /// `root_depth + farm.depth(id)` away.
    pub root_depth: u32,
    /// URLs a complete crawl of this site learns ([`LinkFarm::known_urls`]).
    pub known_urls: u64,
    /// Of those, the pages that answer 200 (the rest answer 404).
    pub existing: u64,
}

/// One allowed, reachable URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageEntry {
    /// Path and query as a crawler requests it, e.g. `/guide/p12.html?ref=1`.
    pub path: String,
    /// Link distance from `site00`'s index page (a redirect target keeps its source's depth).
    pub depth: u32,
    /// What the server answers with.
    pub content: ContentKind,
    /// Followable links on the page, as (site name, path and query) pairs; empty for non-HTML.
    pub links: Vec<(String, String)>,
}

/// The kind of body a page has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentKind {
    Html,
    Text,
    Image,
}

/// A URL that answers with a redirect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    pub from: String,
    pub to: String,
    pub status: u16,
}

/// A misbehaving path of the hostile site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behaviour {
    pub path: String,
    pub kind: BehaviourKind,
    /// A sentence saying what the server does there.
    pub description: String,
}

/// The hostile behaviours, one path each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BehaviourKind {
    RedirectLoop,
    RedirectChain,
    EndlessCalendar,
    HugeBody,
    Trickle,
    Stall,
    GzipBomb,
    Malformed,
    NonUtf8,
    TooManyRequests,
    Unavailable,
    RobotsServerError,
    RobotsRedirect,
}

impl Manifest {
    /// Reads `manifest.json` from a generated web's folder.
    pub fn load(dir: &Path) -> std::io::Result<Manifest> {
        let text = std::fs::read_to_string(dir.join(MANIFEST_FILE))?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// The site with this name.
    pub fn site(&self, name: &str) -> Option<&SiteManifest> {
        self.sites.iter().find(|s| s.name == name)
    }

    /// The normal sites (not hostile, robots500, robotsmoved or robotsaway).
    pub fn normal_sites(&self) -> impl Iterator<Item = &SiteManifest> {
        self.sites.iter().filter(|s| s.kind == SiteKind::Normal)
    }
}

impl SiteManifest {
    /// The set of allowed reachable paths, for comparisons.
    pub fn page_paths(&self) -> BTreeSet<&str> {
        self.pages.iter().map(|p| p.path.as_str()).collect()
    }
}
