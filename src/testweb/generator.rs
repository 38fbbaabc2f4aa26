//! `gen-site`: writes a synthetic web of W sites of P pages, deterministic for a seed.
//!
//! It owns the shape of the project's own web (which pages exist, how they link, which robots.txt
//! each site has) and the right answers about it (the [`Manifest`]). It never serves anything and
//! never touches the network; the server fills in each site's origin at serving time (see
//! [`placeholder`](super::placeholder)).

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::farm::LinkFarm;
use super::manifest::{
    Behaviour, BehaviourKind, ContentKind, FarmManifest, MANIFEST_FILE, Manifest, PageEntry,
    Redirect, RobotsRole, SiteKind, SiteManifest,
};
use super::rng::SplitMix64;
use super::{SITE_CONFIG_FILE, SiteConfig, placeholder};

mod heavy;
pub use heavy::{HeavyOptions, MAX_LISTING_BYTES};

/// The public-domain book pages are written from unless `--text` names another.
pub const DEFAULT_TEXT: &str = include_str!("../../assets/alice.txt");

/// Upper bounds that keep a typo from filling the disk.
pub const MAX_SITES: usize = 1_000;
pub const MAX_PAGES: usize = 100_000;
pub const MAX_TOTAL_PAGES: usize = 1_000_000;
/// The longest `Crawl-delay` a generated robots.txt asks for: a day.
pub const MAX_CRAWL_DELAY_S: f64 = 86_400.0;
/// A text must have at least this many words to make pages of varied content from.
pub const MIN_TEXT_WORDS: usize = 200;

/// Folders pages are spread over (besides the root).
const FOLDERS: [&str; 5] = [
    "articles",
    "articles/archive",
    "guide",
    "guide/advanced",
    "notes",
];

/// A 1x1 transparent PNG: the non-HTML image every site links to.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    pub sites: usize,
    pub pages: usize,
    pub seed: u64,
    /// The text pages are made from; `None` uses [`DEFAULT_TEXT`].
    pub text: Option<String>,
    /// Add the `hostile` and `robots500` sites.
    pub hostile: bool,
    /// The `Crawl-delay` (seconds) of the site that has one.
    pub crawl_delay_s: f64,
    /// Add the heavy sites, `listings` and `docs` (see [`HeavyOptions`]).
    pub heavy: Option<HeavyOptions>,
    /// Add this many link farm sites (`farm00`, ...) of this shape.
    pub link_farm: Option<(usize, LinkFarm)>,
}

/// At most this many link farm sites.
pub const MAX_FARM_SITES: usize = 64;

impl GenOptions {
    /// W sites of P pages, seed 1, the default text, no hostile site, Crawl-delay 1 s.
    pub fn new(sites: usize, pages: usize) -> GenOptions {
        GenOptions {
            sites,
            pages,
            seed: 1,
            text: None,
            hostile: false,
            crawl_delay_s: 1.0,
            heavy: None,
            link_farm: None,
        }
    }

    /// Adds `sites` link farm sites shaped by `farm`.
    #[must_use]
    pub fn link_farm(mut self, sites: usize, farm: LinkFarm) -> Self {
        self.link_farm = Some((sites, farm));
        self
    }

    #[must_use]
    pub fn heavy(mut self, heavy: Option<HeavyOptions>) -> Self {
        self.heavy = heavy;
        self
    }

    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    #[must_use]
    pub fn hostile(mut self, hostile: bool) -> Self {
        self.hostile = hostile;
        self
    }

    #[must_use]
    pub fn crawl_delay_s(mut self, secs: f64) -> Self {
        self.crawl_delay_s = secs;
        self
    }

    #[must_use]
    pub fn text(mut self, text: String) -> Self {
        self.text = Some(text);
        self
    }

    /// Checks the sizes and parameters, as [`generate`] does first: for a caller that wants to
    /// refuse bad values before it does anything else.
    pub fn validate(&self) -> Result<(), GenError> {
        if self.sites == 0 {
            return Err(GenError::Invalid("--sites must be at least 1".into()));
        }
        if self.pages == 0 {
            return Err(GenError::Invalid("--pages must be at least 1".into()));
        }
        if self.sites > MAX_SITES {
            return Err(GenError::Invalid(format!(
                "--sites {} is more than the limit of {MAX_SITES}",
                self.sites
            )));
        }
        if self.pages > MAX_PAGES {
            return Err(GenError::Invalid(format!(
                "--pages {} is more than the limit of {MAX_PAGES}",
                self.pages
            )));
        }
        if self.sites.saturating_mul(self.pages) > MAX_TOTAL_PAGES {
            return Err(GenError::Invalid(format!(
                "{} sites x {} pages is more than the limit of {MAX_TOTAL_PAGES} pages in all",
                self.sites, self.pages
            )));
        }
        if !(self.crawl_delay_s.is_finite()
            && (0.0..=MAX_CRAWL_DELAY_S).contains(&self.crawl_delay_s))
        {
            return Err(GenError::Invalid(format!(
                "--crawl-delay must be a number of seconds from 0 to {MAX_CRAWL_DELAY_S} (a day)"
            )));
        }
        if let Some(heavy) = &self.heavy {
            heavy.validate()?;
        }
        if let Some((sites, farm)) = &self.link_farm {
            if !(1..=MAX_FARM_SITES).contains(sites) {
                return Err(GenError::Invalid(format!(
                    "--link-farm must be from 1 to {MAX_FARM_SITES} sites, not {sites}"
                )));
            }
            if let Some(problem) = farm.problem() {
                return Err(GenError::Invalid(problem));
            }
        }
        Ok(())
    }
}

/// Why a web could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("{0}")]
    Invalid(String),
    #[error(
        "the text has {words} word{}; at least {MIN_TEXT_WORDS} are needed to make pages",
        if *words == 1 { "" } else { "s" }
    )]
    TextTooShort { words: usize },
    #[error(
        "{} is not empty; pass --force to replace a web generated there before",
        .0.display()
    )]
    NotEmpty(PathBuf),
    #[error(
        "{} is not empty and does not hold a generated web (no manifest.json); refusing to write into it even with --force",
        .0.display()
    )]
    ForeignContent(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> GenError + '_ {
    move |source| GenError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Generates a web into `out` and returns its manifest.
///
/// Everything is first written to a staging folder beside `out` (`.NAME.partial-PID`) and moved
/// into place only when complete, so a failure leaves either nothing or a folder whose name says
/// it is partial. `force` replaces a web generated before (a folder holding `manifest.json`); it
/// never deletes a folder that does not look like one.
pub fn generate(out: &Path, opts: &GenOptions, force: bool) -> Result<Manifest, GenError> {
    opts.validate()?;
    let text = opts.text.as_deref().unwrap_or(DEFAULT_TEXT);
    let book = Book::new(text)?;

    let existing = match std::fs::read_dir(out) {
        Ok(entries) => Some(entries.count()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(out)(e)),
    };
    if existing.is_some_and(|n| n > 0) {
        if !force {
            return Err(GenError::NotEmpty(out.to_path_buf()));
        }
        if !out.join(MANIFEST_FILE).is_file() {
            return Err(GenError::ForeignContent(out.to_path_buf()));
        }
    }

    let name = out
        .file_name()
        .map_or_else(|| "web".into(), |n| n.to_string_lossy().into_owned());
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let staging = parent.join(format!(".{name}.partial-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
    }
    std::fs::create_dir(&staging).map_err(io_err(&staging))?;

    let result = write_web(&staging, opts, &book).and_then(|manifest| {
        move_into_place(&staging, out, existing.is_some())?;
        Ok(manifest)
    });
    if result.is_err() {
        // Best effort: the error being returned is the one worth reporting.
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn move_into_place(staging: &Path, out: &Path, out_exists: bool) -> Result<(), GenError> {
    if out_exists {
        // Either empty, or (checked by the caller) a previous web: remove it whole.
        std::fs::remove_dir_all(out).map_err(io_err(out))?;
    }
    std::fs::rename(staging, out).map_err(io_err(out))
}

fn write_web(dir: &Path, opts: &GenOptions, book: &Book) -> Result<Manifest, GenError> {
    let web = plan(opts);
    for (site_idx, site) in web.sites.iter().enumerate() {
        let site_dir = dir.join(&site.name);
        std::fs::create_dir_all(&site_dir).map_err(io_err(&site_dir))?;
        let config = SiteConfig {
            kind: site.kind,
            farm: site.farm,
        };
        let config_json = serde_json::to_vec_pretty(&config).map_err(|e| GenError::Io {
            path: site_dir.join(SITE_CONFIG_FILE),
            source: io::Error::other(e),
        })?;
        write_file(&site_dir, SITE_CONFIG_FILE, &config_json)?;
        if let Some(robots) = &site.robots_txt {
            // The server answers the moved site's `/robots.txt` with a redirect to this file.
            let file = if site.role == RobotsRole::Moved {
                MOVED_ROBOTS_TXT.trim_start_matches('/')
            } else {
                "robots.txt"
            };
            write_file(&site_dir, file, robots.as_bytes())?;
        }
        for (res_idx, res) in site.resources.iter().enumerate() {
            let mut rng = Rng::for_page(opts.seed, site_idx, res_idx);
            let bytes = render(&web, site_idx, res, book, &mut rng);
            write_file(&site_dir, &res.file, &bytes)?;
        }
    }
    let manifest = web.manifest(opts);
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| GenError::Io {
        path: dir.join(MANIFEST_FILE),
        source: io::Error::other(e),
    })?;
    write_file(dir, MANIFEST_FILE, &json)?;
    Ok(manifest)
}

fn write_file(dir: &Path, rel: &str, bytes: &[u8]) -> Result<(), GenError> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    std::fs::write(&path, bytes).map_err(io_err(&path))
}

/// The generator's random numbers: `SplitMix64`, whose output never changes, so the same seed
/// gives the same web forever.
type Rng = SplitMix64;

impl Rng {
    fn for_page(seed: u64, site: usize, page: usize) -> Rng {
        let mut r = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
        let a = r.next_u64();
        Rng::new(a ^ ((site as u64) << 32) ^ (page as u64).wrapping_mul(0xd1b5_4a32_d192_ed03))
    }

    fn range(&mut self, lo: usize, hi_inclusive: usize) -> usize {
        lo + self.index(hi_inclusive - lo + 1)
    }

    fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// The words of the source text, for runs of consecutive words.
struct Book<'a> {
    words: Vec<&'a str>,
}

impl<'a> Book<'a> {
    fn new(text: &'a str) -> Result<Book<'a>, GenError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.len() < MIN_TEXT_WORDS {
            return Err(GenError::TextTooShort { words: words.len() });
        }
        Ok(Book { words })
    }

    fn run(&self, rng: &mut Rng, n: usize) -> String {
        let n = n.min(self.words.len());
        let start = rng.index(self.words.len() - n + 1);
        self.words[start..start + n].join(" ")
    }

    fn title(&self, rng: &mut Rng) -> String {
        let n = rng.range(3, 6);
        let run = self.run(rng, n);
        let cleaned: String = run
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '\'' {
                    c
                } else {
                    ' '
                }
            })
            .collect();
        let mut title = String::new();
        for word in cleaned.split_whitespace() {
            if !title.is_empty() {
                title.push(' ');
            }
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                title.extend(first.to_uppercase());
                title.push_str(chars.as_str());
            }
        }
        if title.is_empty() {
            title.push_str("Untitled");
        }
        title
    }
}

/// A link as planned: where it goes and whether it may be followed.
#[derive(Debug, Clone)]
struct LinkPlan {
    target: Target,
    nofollow: bool,
}

#[derive(Debug, Clone)]
enum Target {
    /// A URL on some site: path with query, and an optional fragment.
    Url {
        site: usize,
        path: String,
        fragment: Option<String>,
    },
    Mailto(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meta {
    None,
    NoFollow,
    NoIndex,
}

/// One file of a site.
#[derive(Debug, Clone)]
struct Resource {
    /// The URL path that serves it (a folder index is `/dir/`).
    path: String,
    /// The file under the site folder.
    file: String,
    content: ContentKind,
    links: Vec<LinkPlan>,
    /// `<link rel=next>` target, a followable link too.
    link_next: Option<String>,
    /// `<meta http-equiv=refresh>` target on this site, a followable link too.
    refresh: Option<String>,
    base: Option<Base>,
    meta: Meta,
    /// Special bodies of the hostile site.
    special: Special,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    None,
    Malformed,
    Latin1,
    /// A highlighted source listing of about this many bytes (the `listings` site).
    Listing {
        bytes: usize,
    },
    /// A docs page whose first `sidebar` links make its sidebar (the `docs` site).
    Docs {
        sidebar: usize,
    },
}

#[derive(Debug, Clone)]
enum Base {
    /// `<base href="/dir/">`
    RootRelative(String),
    /// `<base href="{{origin:site}}/dir/">`
    Absolute(String),
}

impl Base {
    fn dir(&self) -> &str {
        match self {
            Base::RootRelative(d) | Base::Absolute(d) => d,
        }
    }
}

struct SitePlan {
    name: String,
    kind: SiteKind,
    role: RobotsRole,
    robots_txt: Option<String>,
    crawl_delay_s: Option<f64>,
    resources: Vec<Resource>,
    /// path (without query) -> index into `resources`
    by_path: BTreeMap<String, usize>,
    /// folder paths without their slash (`/guide`) that redirect to the folder (`/guide/`)
    folder_redirects: BTreeSet<String>,
    behaviours: Vec<Behaviour>,
    /// A link farm's shape: its pages are made by the server, none planned here.
    farm: Option<LinkFarm>,
}

impl SitePlan {
    fn new(name: String, kind: SiteKind, role: RobotsRole, crawl_delay_s: Option<f64>) -> Self {
        let robots_txt = robots_txt(&name, role, crawl_delay_s);
        SitePlan {
            name,
            kind,
            role,
            robots_txt,
            crawl_delay_s,
            resources: Vec::new(),
            by_path: BTreeMap::new(),
            folder_redirects: BTreeSet::new(),
            behaviours: Vec::new(),
            farm: None,
        }
    }

    fn add(&mut self, path: &str, file: &str, content: ContentKind) -> usize {
        if let Some(&i) = self.by_path.get(path) {
            return i;
        }
        let i = self.resources.len();
        self.resources.push(Resource {
            path: path.to_string(),
            file: file.to_string(),
            content,
            links: Vec::new(),
            link_next: None,
            refresh: None,
            base: None,
            meta: Meta::None,
            special: Special::None,
        });
        self.by_path.insert(path.to_string(), i);
        i
    }

    fn add_html(&mut self, path: &str) -> usize {
        let file = if path.ends_with('/') {
            format!("{}index.html", &path[1..])
        } else {
            path[1..].to_string()
        };
        self.add(path, &file, ContentKind::Html)
    }

    fn link(&mut self, from: usize, site: usize, path: &str) {
        self.resources[from].links.push(LinkPlan {
            target: Target::Url {
                site,
                path: path.to_string(),
                fragment: None,
            },
            nofollow: false,
        });
    }

    /// Whether robots.txt disallows `path_and_query` for crawltop: the generator's own truth,
    /// written to match the robots.txt it wrote.
    fn disallows(&self, path_and_query: &str) -> bool {
        match self.role {
            // Case-sensitive on purpose: robots.txt paths are (RFC 9309, 2.2.2).
            #[allow(clippy::case_sensitive_file_extension_comparisons)]
            RobotsRole::Standard => {
                (path_and_query.starts_with("/private/")
                    && !path_and_query.starts_with("/private/open.html"))
                    || path_and_query.ends_with(".cgi")
            }
            RobotsRole::ServerError => true,
            RobotsRole::Moved | RobotsRole::MovedAway => path_and_query.starts_with("/private/"),
            RobotsRole::CrawlDelay
            | RobotsRole::OtherAgent
            | RobotsRole::None
            | RobotsRole::AllowAll => false,
        }
    }
}

fn robots_txt(name: &str, role: RobotsRole, crawl_delay_s: Option<f64>) -> Option<String> {
    let head = format!("# robots.txt of {name}, written by crawltop gen-site\n");
    match role {
        RobotsRole::Standard => Some(format!(
            "{head}User-agent: *\nDisallow: /private/\nAllow: /private/open.html\nDisallow: /*.cgi$\n\n\
             User-agent: otherbot\nDisallow: /\n"
        )),
        RobotsRole::CrawlDelay => Some(format!(
            "{head}User-agent: *\nCrawl-delay: {}\nDisallow:\n",
            crawl_delay_s.unwrap_or(1.0)
        )),
        RobotsRole::OtherAgent => Some(format!("{head}User-agent: otherbot\nDisallow: /\n")),
        RobotsRole::Moved => Some(format!("{head}User-agent: *\nDisallow: /private/\n")),
        // robots500's file exists too, so that only the server's 500 keeps a crawler out.
        RobotsRole::AllowAll | RobotsRole::ServerError => {
            Some(format!("{head}User-agent: *\nDisallow:\n"))
        }
        // robotsaway's rules are robotsmoved's file.
        RobotsRole::None | RobotsRole::MovedAway => None,
    }
}

struct WebPlan {
    sites: Vec<SitePlan>,
}

fn role_for(index: usize) -> RobotsRole {
    match index {
        1 => RobotsRole::CrawlDelay,
        2 => RobotsRole::OtherAgent,
        3 => RobotsRole::None,
        _ => RobotsRole::Standard,
    }
}

/// `site00`, `site01`, ...: zero-padded to the width of the largest index (two digits at
/// least), so that name order, which gives the ports, is index order (`site099` before
/// `site100`).
fn site_name(index: usize, sites: usize) -> String {
    let width = sites.saturating_sub(1).to_string().len().max(2);
    format!("site{index:0width$}")
}

/// Plans every site: which files exist and how they link. Pure and deterministic.
fn plan(opts: &GenOptions) -> WebPlan {
    let mut rng = Rng::new(opts.seed);
    let mut sites: Vec<SitePlan> = Vec::new();
    let total = opts.sites + if opts.hostile { 4 } else { 0 };
    for i in 0..opts.sites {
        let role = role_for(i);
        let delay = (role == RobotsRole::CrawlDelay).then_some(opts.crawl_delay_s);
        sites.push(plan_normal_site(
            &site_name(i, opts.sites),
            i,
            role,
            delay,
            opts.pages,
            &mut rng,
        ));
    }
    // Cross-site links: every other site's index from site00's index, so all is reachable.
    for i in 1..total {
        sites[0].link(0, i, "/");
    }
    if opts.sites > 1 {
        let counts: Vec<usize> = sites.iter().map(|s| s.resources.len()).collect();
        for i in 0..opts.sites {
            for r in 0..sites[i].resources.len() {
                if sites[i].resources[r].content != ContentKind::Html || !rng.chance(0.12) {
                    continue;
                }
                let mut other = rng.index(opts.sites - 1);
                if other >= i {
                    other += 1;
                }
                // Only pages of the link tree are linked from other sites.
                let tree_pages = counts[other].min(opts.pages);
                let target = sites[other].resources[rng.index(tree_pages)].path.clone();
                sites[i].link(r, other, &target);
            }
        }
    }
    if opts.hostile {
        sites.push(plan_hostile_site());
        sites.push(plan_robots500_site());
        sites.push(plan_robots_moved_site());
        sites.push(plan_robots_away_site());
    }
    if let Some(h) = &opts.heavy {
        // Their own random numbers: the sites above stay as they were, but for these links.
        let me = sites.len();
        sites.push(heavy::plan_listings_site(me, h));
        sites[0].link(0, me, "/");
        let me = sites.len();
        sites.push(heavy::plan_docs_site(me, h, opts.seed));
        sites[0].link(0, me, "/");
    }
    if let Some((count, farm)) = opts.link_farm {
        for j in 0..count {
            let me = sites.len();
            let mut site = SitePlan::new(
                format!("farm{j:02}"),
                SiteKind::LinkFarm,
                RobotsRole::AllowAll,
                None,
            );
            site.farm = Some(farm);
            sites.push(site);
            sites[0].link(0, me, "/");
        }
    }
    WebPlan { sites }
}

#[allow(clippy::too_many_lines)] // one recipe, read top to bottom
fn plan_normal_site(
    name: &str,
    me: usize,
    role: RobotsRole,
    crawl_delay_s: Option<f64>,
    pages: usize,
    rng: &mut Rng,
) -> SitePlan {
    let mut site = SitePlan::new(name.to_string(), SiteKind::Normal, role, crawl_delay_s);
    // The link tree: pages 0..pages, page 0 is the index; page k hangs under page (k-1)/4.
    site.add_html("/");
    let mut folder_has_index = BTreeSet::new();
    for k in 1..pages {
        let folder = rng.index(FOLDERS.len() + 1);
        let path = if folder == FOLDERS.len() {
            format!("/p{k}.html")
        } else if folder_has_index.insert(folder) {
            format!("/{}/", FOLDERS[folder])
        } else {
            format!("/{}/p{k}.html", FOLDERS[folder])
        };
        site.add_html(&path);
    }
    for k in 1..pages {
        let path = site.resources[k].path.clone();
        site.link((k - 1) / 4, me, &path);
    }
    // Extra links inside the site, with fragments and query variants.
    for k in 0..pages {
        for _ in 0..rng.range(2, 5) {
            let t = rng.index(pages);
            if t == k {
                continue;
            }
            let mut path = site.resources[t].path.clone();
            if rng.chance(0.08) {
                let _ = write!(path, "?ref={}", rng.range(1, 2));
            }
            let fragment = rng.chance(0.2).then(|| format!("s{}", rng.range(1, 9)));
            site.resources[k].links.push(LinkPlan {
                target: Target::Url {
                    site: me,
                    path,
                    fragment,
                },
                nofollow: false,
            });
        }
        if k > 0 && k % 7 == 3 {
            let dir = format!("/{}/", FOLDERS[rng.index(FOLDERS.len())]);
            site.resources[k].base = Some(if rng.chance(0.5) {
                Base::RootRelative(dir)
            } else {
                Base::Absolute(dir)
            });
        }
        if k % 5 == 2 && k + 1 < pages {
            site.resources[k].link_next = Some(site.resources[k + 1].path.clone());
        }
    }
    // A folder link without its slash: the server answers 301.
    if let Some(&f) = folder_has_index.iter().next() {
        let bare = format!("/{}", FOLDERS[f]);
        site.folder_redirects.insert(bare.clone());
        site.link(0, me, &bare);
    }
    // Non-HTML files.
    let notes = site.add("/files/notes.txt", "files/notes.txt", ContentKind::Text);
    let logo = site.add("/img/logo.png", "img/logo.png", ContentKind::Image);
    for r in [notes, logo] {
        let path = site.resources[r].path.clone();
        site.link(0, me, &path);
        let other = rng.index(pages);
        site.link(other, me, &path);
    }
    // Dead links.
    for j in 0..2 {
        let from = rng.index(pages);
        site.link(from, me, &format!("/missing-{j}.html"));
    }
    // robots.txt's targets, on the sites whose robots.txt has rules.
    if role == RobotsRole::Standard {
        let open = site.add_html("/private/open.html");
        site.link(open, me, "/");
        site.link(0, me, "/private/open.html");
        for j in 0..2 {
            let secret = site.add_html(&format!("/private/secret-{j}.html"));
            site.link(secret, me, "/");
            let from = rng.index(pages);
            site.link(from, me, &format!("/private/secret-{j}.html"));
        }
        let from = rng.index(pages);
        site.link(from, me, "/cgi/search.cgi");
        // Allowed: `Disallow: /*.cgi$` does not match once a query follows. It does not exist.
        site.link(from, me, "/cgi/search.cgi?q=rabbit");
    }
    // Pages reachable only through nofollow.
    for j in 0..2 {
        let hidden = site.add_html(&format!("/nofollow/n{j}.html"));
        site.link(hidden, me, "/");
        let from = rng.index(pages);
        site.resources[from].links.push(LinkPlan {
            target: Target::Url {
                site: me,
                path: format!("/nofollow/n{j}.html"),
                fragment: None,
            },
            nofollow: true,
        });
    }
    let meta_nofollow = site.add_html("/meta-nofollow.html");
    site.resources[meta_nofollow].meta = Meta::NoFollow;
    site.link(0, me, "/meta-nofollow.html");
    for j in 0..2 {
        let hidden = site.add_html(&format!("/hidden/h{j}.html"));
        site.link(hidden, me, "/");
        site.link(meta_nofollow, me, &format!("/hidden/h{j}.html"));
    }
    let noindex = site.add_html("/noindex.html");
    site.resources[noindex].meta = Meta::NoIndex;
    site.link(0, me, "/noindex.html");
    site.link(noindex, me, "/");
    // mailto links.
    site.resources[0].links.push(LinkPlan {
        target: Target::Mailto(format!("webmaster@{name}.test")),
        nofollow: false,
    });
    for j in 0..2 {
        let from = rng.index(pages);
        site.resources[from].links.push(LinkPlan {
            target: Target::Mailto(format!("author{j}@{name}.test")),
            nofollow: false,
        });
    }
    site
}

const CALENDAR_START: &str = "/calendar/2026-01-01.html";

/// Each misbehaving path of the hostile site, what it is, and what it does.
const HOSTILE_BEHAVIOURS: [(&str, BehaviourKind, &str); 11] = [
    (
        "/loop/a",
        BehaviourKind::RedirectLoop,
        "302 to /loop/b, which 302s back to /loop/a",
    ),
    (
        "/chain/0",
        BehaviourKind::RedirectChain,
        "/chain/N answers 302 to /chain/N+1 up to /chain/20, which is a page: 20 redirects",
    ),
    (
        CALENDAR_START,
        BehaviourKind::EndlessCalendar,
        "/calendar/DATE.html links to the next day's page, forever",
    ),
    (
        "/big.html",
        BehaviourKind::HugeBody,
        "a 50 MB text/html body with Content-Length",
    ),
    (
        "/trickle.html",
        BehaviourKind::Trickle,
        "200 text/html, chunked, a few bytes every second, never ending",
    ),
    (
        "/stall.html",
        BehaviourKind::Stall,
        "waits 30 s before sending anything",
    ),
    (
        "/bomb.html",
        BehaviourKind::GzipBomb,
        "Content-Encoding: gzip, about 1 MB on the wire, 1 GiB of zeros unpacked",
    ),
    (
        "/malformed.html",
        BehaviourKind::Malformed,
        "broken HTML: unclosed and stray tags, unquoted attributes, a tag cut off at the end of the file",
    ),
    (
        "/latin1.html",
        BehaviourKind::NonUtf8,
        "ISO-8859-1 bytes, the charset only in a meta tag; links to /caf%C3%A9.html",
    ),
    (
        "/retry/429.html",
        BehaviourKind::TooManyRequests,
        "429 with Retry-After: 1 (seconds) for its first 2 requests, then 200",
    ),
    (
        "/retry/503.html",
        BehaviourKind::Unavailable,
        "503 with Retry-After as an HTTP date 2 s ahead for its first 2 requests, then 200",
    ),
];

fn plan_hostile_site() -> SitePlan {
    let mut site = SitePlan::new(
        "hostile".into(),
        SiteKind::Hostile,
        RobotsRole::AllowAll,
        None,
    );
    let me = usize::MAX; // patched below: the hostile site links to itself by its own index
    let index = site.add_html("/");
    let malformed = site.add_html("/malformed.html");
    site.resources[malformed].special = Special::Malformed;
    let unquoted = site.add_html("/m/unquoted.html");
    let table = site.add_html("/m/in-table.html");
    // Exists, but the only link to it is a tag cut off by the end of the file: browsers drop it.
    let _eof = site.add_html("/m/eof.html");
    let latin1 = site.add_html("/latin1.html");
    site.resources[latin1].special = Special::Latin1;
    let cafe = site.add("/caf%C3%A9.html", "café.html", ContentKind::Html);
    let r429 = site.add_html("/retry/429.html");
    let r503 = site.add_html("/retry/503.html");
    // An old-style redirect: the only way to the page it names.
    let refresh = site.add_html("/refresh.html");
    site.resources[refresh].refresh = Some("/refreshed.html".into());
    let refreshed = site.add_html("/refreshed.html");
    for r in [unquoted, table, cafe, r429, r503, refreshed] {
        site.link(r, me, "/");
    }
    // What a browser finds in the two special bodies (rendered by hand, below).
    for p in ["/m/unquoted.html", "/m/in-table.html", "/latin1.html", "/"] {
        site.link(malformed, me, p);
    }
    for p in ["/caf%C3%A9.html", "/"] {
        site.link(latin1, me, p);
    }
    for p in [
        "/malformed.html",
        "/latin1.html",
        "/retry/429.html",
        "/retry/503.html",
        "/refresh.html",
        "/loop/a",
        "/chain/0",
        CALENDAR_START,
        "/big.html",
        "/trickle.html",
        "/stall.html",
        "/bomb.html",
    ] {
        site.link(index, me, p);
    }
    site.behaviours = HOSTILE_BEHAVIOURS
        .iter()
        .map(|(path, kind, description)| Behaviour {
            path: (*path).to_string(),
            kind: *kind,
            description: (*description).to_string(),
        })
        .collect();
    site
}

fn plan_robots500_site() -> SitePlan {
    robots_test_site(
        "robots500",
        SiteKind::Robots500,
        RobotsRole::ServerError,
        BehaviourKind::RobotsServerError,
        "robots.txt always answers 500: a polite crawler fetches nothing else here".into(),
    )
}

/// Where the `robotsmoved` site's `/robots.txt` redirects (a 301), and the file it finds there.
pub const MOVED_ROBOTS_TXT: &str = "/policy/robots.txt";

fn plan_robots_moved_site() -> SitePlan {
    let mut site = robots_test_site(
        "robotsmoved",
        SiteKind::RobotsMoved,
        RobotsRole::Moved,
        BehaviourKind::RobotsRedirect,
        format!(
            "robots.txt answers 301 to {MOVED_ROBOTS_TXT}, which disallows /private/: a polite \
             crawler follows it and never asks for /private/secret.html"
        ),
    );
    // It exists and is linked: only the rules behind the redirect keep a crawler out.
    site.add_html("/private/secret.html");
    site.link(0, usize::MAX, "/private/secret.html");
    site
}

fn plan_robots_away_site() -> SitePlan {
    let mut site = robots_test_site(
        "robotsaway",
        SiteKind::RobotsAway,
        RobotsRole::MovedAway,
        BehaviourKind::RobotsRedirect,
        format!(
            "robots.txt answers 302 to robotsmoved's {MOVED_ROBOTS_TXT} (another origin), which \
             disallows /private/: a polite crawler asks there under robotsmoved's politeness and \
             never asks for /private/secret.html here"
        ),
    );
    site.add_html("/private/secret.html");
    site.link(0, usize::MAX, "/private/secret.html");
    site
}

/// A site of three pages (an index and two pages linking each other) whose robots.txt is what
/// it tests.
fn robots_test_site(
    name: &str,
    kind: SiteKind,
    role: RobotsRole,
    behaviour: BehaviourKind,
    description: String,
) -> SitePlan {
    let mut site = SitePlan::new(name.into(), kind, role, None);
    let index = site.add_html("/");
    for j in 0..2 {
        let page = site.add_html(&format!("/p{j}.html"));
        site.link(page, usize::MAX, "/");
        site.link(index, usize::MAX, &format!("/p{j}.html"));
    }
    site.behaviours = vec![Behaviour {
        path: "/robots.txt".into(),
        kind: behaviour,
        description,
    }];
    site
}

/// What the manifest walk found on one site.
#[derive(Default)]
struct Found {
    /// path with query -> (depth, resource index)
    pages: BTreeMap<String, (u32, usize)>,
    disallowed: BTreeSet<String>,
    dead: BTreeSet<String>,
    redirects: BTreeSet<String>,
    mailto: BTreeSet<String>,
    /// A link farm's root depth: the walk stops at a farm, whose answers are computed.
    farm_root: Option<u32>,
}

impl WebPlan {
    /// Resolves the `usize::MAX` "this site" marker used while planning the extra sites.
    fn target_site(from: usize, site: usize) -> usize {
        if site == usize::MAX { from } else { site }
    }

    /// Breadth-first walk from site00's index over followable links: what a polite crawler
    /// finds on each site.
    fn walk(&self) -> Vec<Found> {
        let mut found: Vec<Found> = self.sites.iter().map(|_| Found::default()).collect();
        let mut seen: HashSet<(usize, String)> = HashSet::new();
        let mut queue = VecDeque::new();
        queue.push_back((0usize, "/".to_string(), 0u32));
        seen.insert((0, "/".to_string()));
        while let Some((s, path_q, depth)) = queue.pop_front() {
            let site = &self.sites[s];
            let f = &mut found[s];
            if site.kind == SiteKind::LinkFarm {
                f.farm_root = f.farm_root.or(Some(depth));
                continue;
            }
            if site.disallows(&path_q) {
                f.disallowed.insert(path_q);
                continue;
            }
            // The hostile site's dynamic paths are described by its behaviours, not walked.
            if site.kind == SiteKind::Hostile && site.behaviours.iter().any(|b| b.path == path_q) {
                let is_static = site.by_path.contains_key(&path_q);
                if !is_static {
                    continue;
                }
            }
            let path = path_q.split('?').next().unwrap_or(&path_q);
            if site.folder_redirects.contains(path) {
                f.redirects.insert(path_q.clone());
                let to = format!("{path}/");
                // A redirect is an edge of length 0: the target goes first (a 0-1 BFS), so
                // every depth is the true shortest link distance, whatever the link order.
                if seen.insert((s, to.clone())) {
                    queue.push_front((s, to, depth));
                }
                continue;
            }
            let Some(&r) = site.by_path.get(path) else {
                f.dead.insert(path_q);
                continue;
            };
            f.pages.insert(path_q, (depth, r));
            let res = &site.resources[r];
            if res.content != ContentKind::Html || res.meta == Meta::NoFollow {
                continue;
            }
            for (target_site, target_path) in followable(res, s) {
                if seen.insert((target_site, target_path.clone())) {
                    queue.push_back((target_site, target_path, depth + 1));
                }
            }
            for link in &res.links {
                if let Target::Mailto(addr) = &link.target {
                    found[s].mailto.insert(addr.clone());
                }
            }
        }

        found
    }

    /// The right answers: the walk's findings plus what each site holds beyond them.
    fn manifest(&self, opts: &GenOptions) -> Manifest {
        let sites = self
            .sites
            .iter()
            .zip(self.walk())
            .enumerate()
            .map(|(s, (site, f))| {
                let reached: BTreeSet<&str> = f
                    .pages
                    .keys()
                    .map(|p| p.split('?').next().unwrap_or(p))
                    .collect();
                let nofollow_only = site
                    .resources
                    .iter()
                    .filter(|r| {
                        site.kind == SiteKind::Normal
                            && !reached.contains(r.path.as_str())
                            && !site.disallows(&r.path)
                    })
                    .map(|r| r.path.clone())
                    .collect();
                let noindex = site
                    .resources
                    .iter()
                    .filter(|r| r.meta == Meta::NoIndex && reached.contains(r.path.as_str()))
                    .map(|r| r.path.clone())
                    .collect();
                let pages = f
                    .pages
                    .into_iter()
                    .map(|(path, (depth, r))| {
                        let res = &site.resources[r];
                        let links =
                            if res.content == ContentKind::Html && res.meta != Meta::NoFollow {
                                followable(res, s)
                                    .into_iter()
                                    .map(|(ts, tp)| (self.sites[ts].name.clone(), tp))
                                    .collect()
                            } else {
                                Vec::new()
                            };
                        PageEntry {
                            path,
                            depth,
                            content: res.content,
                            links,
                        }
                    })
                    .collect();
                SiteManifest {
                    name: site.name.clone(),
                    kind: site.kind,
                    robots: site.role,
                    robots_txt: site.robots_txt.clone(),
                    crawl_delay_s: site.crawl_delay_s,
                    pages,
                    disallowed: f.disallowed.into_iter().collect(),
                    dead: f.dead.into_iter().collect(),
                    redirects: f
                        .redirects
                        .into_iter()
                        .map(|from| Redirect {
                            to: format!("{from}/"),
                            from,
                            status: 301,
                        })
                        .collect(),
                    nofollow_only,
                    noindex,
                    mailto: f.mailto.into_iter().collect(),
                    behaviours: site.behaviours.clone(),
                    farm: site.farm.map(|farm| FarmManifest {
                        farm,
                        root_depth: f.farm_root.unwrap_or(0),
                        known_urls: farm.known_urls(),
                        existing: farm.pages,
                    }),
                }
            })
            .collect();
        Manifest {
            version: 1,
            seed: opts.seed,
            placeholder: placeholder("NAME"),
            sites,
        }
    }
}

/// A page's followable links as (site, path with query), fragments dropped, in first-seen order.
fn followable(res: &Resource, me: usize) -> Vec<(usize, String)> {
    let urls = res.links.iter().filter_map(|link| match &link.target {
        Target::Url { site, path, .. } if !link.nofollow => {
            Some((WebPlan::target_site(me, *site), path.as_str()))
        }
        _ => None,
    });
    let next = res.link_next.as_deref().map(|next| (me, next));
    let refresh = res.refresh.as_deref().map(|to| (me, to));
    // A docs page has hundreds of links: a set keeps this linear.
    let mut seen: HashSet<(usize, &str)> = HashSet::new();
    urls.chain(next)
        .chain(refresh)
        .filter(|item| seen.insert(*item))
        .map(|(site, path)| (site, path.to_string()))
        .collect()
}

/// The folder part of a URL path: `/a/b.html` -> `/a/`, `/a/` -> `/a/`.
fn dir_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "/",
    }
}

/// A relative reference from folder `from_dir` to `target` (both absolute paths; target may
/// carry a query), e.g. `/a/b/` to `/a/c/p.html?x` gives `../c/p.html?x`.
fn relative(from_dir: &str, target: &str) -> String {
    let (tpath, query) = match target.find('?') {
        Some(i) => (&target[..i], &target[i..]),
        None => (target, ""),
    };
    let from: Vec<&str> = from_dir.split('/').filter(|s| !s.is_empty()).collect();
    let tdir: Vec<&str> = dir_of(tpath).split('/').filter(|s| !s.is_empty()).collect();
    let file = &tpath[dir_of(tpath).len()..];
    let common = from.iter().zip(&tdir).take_while(|(a, b)| a == b).count();
    let mut rel = String::new();
    for _ in common..from.len() {
        rel.push_str("../");
    }
    for seg in &tdir[common..] {
        rel.push_str(seg);
        rel.push('/');
    }
    rel.push_str(file);
    if rel.is_empty() {
        rel.push_str("./");
    }
    rel.push_str(query);
    rel
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The href for a link, in one of the forms a crawler must resolve.
fn href(web: &WebPlan, me: usize, res: &Resource, target: &Target, rng: &mut Rng) -> String {
    match target {
        Target::Mailto(addr) => {
            if rng.chance(0.5) {
                format!("mailto:{addr}?subject=Hello")
            } else {
                format!("mailto:{addr}")
            }
        }
        Target::Url {
            site,
            path,
            fragment,
        } => {
            let site = WebPlan::target_site(me, *site);
            let base_dir = res
                .base
                .as_ref()
                .map_or_else(|| dir_of(&res.path), Base::dir);
            let mut h = if site == me {
                let same_dir = dir_of(path.split('?').next().unwrap_or(path)) == base_dir;
                match rng.index(4) {
                    0 => relative(base_dir, path),
                    1 => path.clone(),
                    2 => format!("{}{path}", placeholder(&web.sites[site].name)),
                    _ if same_dir => format!("./{}", relative(base_dir, path)),
                    _ => relative(base_dir, path),
                }
            } else {
                format!("{}{path}", placeholder(&web.sites[site].name))
            };
            if let Some(f) = fragment {
                h.push('#');
                h.push_str(f);
            }
            if rng.chance(0.04) {
                // Browsers trim the spaces around an href; a crawler must too.
                h = format!("  {h} ");
            }
            h
        }
    }
}

fn render(web: &WebPlan, me: usize, res: &Resource, book: &Book, rng: &mut Rng) -> Vec<u8> {
    match (res.content, res.special) {
        (ContentKind::Image, _) => PNG_1X1.to_vec(),
        (ContentKind::Text, _) => {
            let mut text = String::new();
            for _ in 0..rng.range(3, 8) {
                let n = rng.range(20, 80);
                text.push_str(&book.run(rng, n));
                text.push_str("\n\n");
            }
            text.into_bytes()
        }
        (ContentKind::Html, Special::Malformed) => render_malformed().into_bytes(),
        (ContentKind::Html, Special::Latin1) => render_latin1(),
        (ContentKind::Html, Special::Listing { bytes }) => {
            heavy::render_listing(web, me, res, bytes, book, rng).into_bytes()
        }
        (ContentKind::Html, Special::Docs { sidebar }) => {
            heavy::render_docs(web, me, res, sidebar, book, rng).into_bytes()
        }
        (ContentKind::Html, Special::None) => render_html(web, me, res, book, rng).into_bytes(),
    }
}

/// The `<link rel="next">` line of a page that has one.
fn write_link_next(out: &mut String, web: &WebPlan, me: usize, res: &Resource, rng: &mut Rng) {
    if let Some(next) = &res.link_next {
        let target = Target::Url {
            site: me,
            path: next.clone(),
            fragment: None,
        };
        let _ = writeln!(
            out,
            "<link rel=\"next\" href=\"{}\">",
            escape(href(web, me, res, &target, rng).trim())
        );
    }
}

fn render_html(web: &WebPlan, me: usize, res: &Resource, book: &Book, rng: &mut Rng) -> String {
    let title = book.title(rng);
    let mut head = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n",
        escape(&title)
    );
    match &res.base {
        Some(Base::RootRelative(dir)) => {
            let _ = writeln!(head, "<base href=\"{dir}\">");
        }
        Some(Base::Absolute(dir)) => {
            let _ = writeln!(
                head,
                "<base href=\"{}{dir}\">",
                placeholder(&web.sites[me].name)
            );
        }
        None => {}
    }
    match res.meta {
        Meta::NoFollow => head.push_str("<meta name=\"robots\" content=\"nofollow\">\n"),
        Meta::NoIndex => head.push_str("<meta name=\"robots\" content=\"noindex\">\n"),
        Meta::None => {}
    }
    if let Some(to) = &res.refresh {
        let _ = writeln!(
            head,
            "<meta http-equiv=\"refresh\" content=\"0; url={}\">",
            escape(to)
        );
    }
    write_link_next(&mut head, web, me, res, rng);
    head.push_str("</head>\n<body>\n");
    let _ = writeln!(head, "<h1>{}</h1>", escape(&title));

    // Size: log-uniform between about 1 and 30 KB, so most pages are small and a few are big.
    let target_len = (1000.0 * (rng.index(1000) as f64 / 1000.0 * 30f64.ln()).exp()) as usize;
    let mut paragraphs: Vec<String> = Vec::new();
    let mut len = head.len();
    while len < target_len || paragraphs.is_empty() {
        let n = rng.range(20, 90);
        let p = escape(&book.run(rng, n));
        len += p.len() + 8;
        paragraphs.push(p);
    }
    let mut anchors: Vec<Vec<String>> = vec![Vec::new(); paragraphs.len()];
    for (i, link) in res.links.iter().enumerate() {
        let h = href(web, me, res, &link.target, rng);
        let n = rng.range(1, 4);
        let words = escape(&book.run(rng, n));
        let rel = if link.nofollow {
            if rng.chance(0.5) {
                " rel=\"nofollow\""
            } else {
                " rel=\"external NoFollow\""
            }
        } else {
            ""
        };
        anchors[i % paragraphs.len()].push(format!("<a href=\"{}\"{rel}>{words}</a>", escape(&h)));
    }
    let mut body = head;
    for (p, links) in paragraphs.iter().zip(anchors) {
        body.push_str("<p>");
        body.push_str(p);
        for a in links {
            body.push(' ');
            body.push_str(&a);
        }
        body.push_str("</p>\n");
    }
    body.push_str("</body>\n</html>\n");
    body
}

fn render_malformed() -> String {
    // What a browser finds here: /m/unquoted.html, /m/in-table.html, /latin1.html and /.
    // The last tag is cut off by the end of the file, so /m/eof.html is not a link.
    "<html><head><title>Malformed page</title><body>\n\
     <p>Unclosed paragraph <b>bold <i>crossed</b> nesting</i>\n\
     <div><span>stray end tags</div></span></p></p></td>\n\
     <a href=/m/unquoted.html>an unquoted attribute</a>\n\
     <table><tr><td>cell<td><a href='/m/in-table.html'>a link in a cell</a></table>\n\
     <p>an <a href=\"/latin1.html\">unclosed anchor\n\
     <p>and <a href=\"/\">home</a>\n\
     <script>document.write('<a href=\"/m/from-script.html\">');</script>\n\
     <a href=\"/m/eof.html\""
        .to_string()
}

fn render_latin1() -> Vec<u8> {
    let text = "<!DOCTYPE html>\n<html><head>\n\
        <meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\">\n\
        <title>Caf\u{e9} na\u{ef}ve r\u{e9}sum\u{e9}</title></head>\n<body>\n\
        <p>Un caf\u{e9} tr\u{e8}s na\u{ef}f, \u{e0} la fran\u{e7}aise.</p>\n\
        <p><a href=\"/caf\u{e9}.html\">le caf\u{e9}</a> <a href=\"/\">home</a></p>\n\
        </body></html>\n";
    // Every char above is Latin-1, so this is exact ISO-8859-1.
    text.chars().map(|c| c as u32 as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_references() {
        assert_eq!(relative("/a/b/", "/a/c/p.html"), "../c/p.html");
        assert_eq!(relative("/a/", "/a/p.html"), "p.html");
        assert_eq!(relative("/", "/a/b/p.html?x=1"), "a/b/p.html?x=1");
        assert_eq!(relative("/a/b/", "/"), "../../");
        assert_eq!(relative("/a/", "/a/"), "./");
        assert_eq!(relative("/a/", "/a/?ref=1"), "./?ref=1");
    }

    #[test]
    fn rng_is_stable() {
        // Pinned: changing the generator's randomness changes every generated web.
        let mut r = Rng::new(1);
        assert_eq!(r.next_u64(), 0x910a_2dec_8902_5cc1);
    }

    #[test]
    fn disallow_truth_matches_robots_rules() {
        let site = SitePlan::new("s".into(), SiteKind::Normal, RobotsRole::Standard, None);
        assert!(site.disallows("/private/secret-0.html"));
        assert!(!site.disallows("/private/open.html"));
        assert!(site.disallows("/cgi/search.cgi"));
        assert!(!site.disallows("/cgi/search.cgi?q=rabbit"));
        assert!(!site.disallows("/guide/p3.html"));
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(GenOptions::new(0, 5).validate().is_err());
        assert!(GenOptions::new(5, 0).validate().is_err());
        assert!(GenOptions::new(MAX_SITES + 1, 1).validate().is_err());
        assert!(GenOptions::new(1, MAX_PAGES + 1).validate().is_err());
        assert!(GenOptions::new(1000, 10_000).validate().is_err());
        assert!(
            GenOptions::new(2, 2)
                .crawl_delay_s(-1.0)
                .validate()
                .is_err()
        );
        assert!(
            GenOptions::new(2, 2)
                .crawl_delay_s(f64::NAN)
                .validate()
                .is_err()
        );
        assert!(GenOptions::new(2, 2).validate().is_ok());
    }

    #[test]
    fn latin1_page_is_not_utf8() {
        let bytes = render_latin1();
        assert!(std::str::from_utf8(&bytes).is_err());
        assert!(bytes.contains(&0xe9));
    }
}
