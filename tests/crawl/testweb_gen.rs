//! gen-site: the manifest is the truth a crawler is judged by, so it is checked against an
//! independent breadth-first walk over what the server really serves.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;

use crawltop::testweb::manifest::{ContentKind, SiteKind};
use crawltop::testweb::{GenError, GenOptions, HeavyOptions, LinkFarm, TestWeb, generate};
use scraper::{Html, Selector};
use url::Url;

use crate::util::{client, get_text};

#[derive(Debug, Default, PartialEq)]
struct Found {
    /// path with query -> (depth, content type)
    pages: BTreeMap<String, (u32, String)>,
    disallowed: BTreeSet<String>,
    dead: BTreeSet<String>,
    redirects: BTreeSet<(String, String)>,
    mailto: BTreeSet<String>,
    noindex: BTreeSet<String>,
}

/// A walk that knows nothing of the generator: robots.txt via the `robotxt` crate, links via
/// `scraper`, from site00's index, 0-1 BFS (a redirect keeps its source's depth).
async fn walk(web: &TestWeb) -> BTreeMap<String, Found> {
    let http = client();
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let mut robots: HashMap<String, robotxt::Robots> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<(Url, u32)> = VecDeque::new();
    let start = Url::parse(&web.url("site00", "/")).expect("url");
    seen.insert(start.to_string());
    queue.push_back((start, 0));
    let a_sel = Selector::parse("a[href], area[href]").expect("selector");
    let link_sel = Selector::parse("link[href]").expect("selector");
    let frame_sel = Selector::parse("frame[src], iframe[src]").expect("selector");
    let base_sel = Selector::parse("base[href]").expect("selector");
    let meta_sel = Selector::parse("meta[name]").expect("selector");

    while let Some((url, depth)) = queue.pop_front() {
        let origin = url.origin().ascii_serialization();
        let site = web
            .site_of(&origin)
            .expect("links stay in the web")
            .to_string();
        if !robots.contains_key(&site) {
            let resp = http
                .get(format!("{origin}/robots.txt"))
                .send()
                .await
                .expect("robots");
            let status = resp.status().as_u16();
            let body = resp.bytes().await.expect("robots body");
            let r = match status {
                200..=299 => robotxt::Robots::parse(&body, "crawltop"),
                400..=499 => robotxt::Robots::allow_all(),
                _ => robotxt::Robots::disallow_all(),
            };
            robots.insert(site.clone(), r);
        }
        let path_q = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let f = found.entry(site.clone()).or_default();
        if !robots[&site].is_allowed(&path_q) {
            f.disallowed.insert(path_q);
            continue;
        }
        let resp = http.get(url.clone()).send().await.expect("get");
        let status = resp.status().as_u16();
        match status {
            301 | 302 => {
                let loc = resp.headers()["location"].to_str().expect("location");
                let target = url.join(loc).expect("location resolves");
                f.redirects.insert((path_q, target.path().to_string()));
                if seen.insert(target.to_string()) {
                    queue.push_front((target, depth));
                }
                continue;
            }
            404 => {
                f.dead.insert(path_q);
                continue;
            }
            200 => {}
            other => panic!("{url} answered {other}"),
        }
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = resp.text().await.expect("body");
        f.pages.insert(path_q.clone(), (depth, ctype.clone()));
        if !ctype.starts_with("text/html") {
            continue;
        }
        let doc = Html::parse_document(&body);
        let mut nofollow_page = false;
        for meta in doc.select(&meta_sel) {
            if meta
                .attr("name")
                .is_some_and(|n| n.eq_ignore_ascii_case("robots"))
            {
                let content = meta.attr("content").unwrap_or("").to_ascii_lowercase();
                nofollow_page |= content.contains("nofollow");
                if content.contains("noindex") {
                    f.noindex.insert(path_q.clone());
                }
            }
        }
        let base = doc
            .select(&base_sel)
            .next()
            .and_then(|b| b.attr("href"))
            .and_then(|h| url.join(h.trim()).ok())
            .unwrap_or_else(|| url.clone());
        let mut hrefs: Vec<(String, bool)> = Vec::new();
        for l in doc.select(&link_sel) {
            let rel = l.attr("rel").unwrap_or("").to_ascii_lowercase();
            if rel.split_whitespace().any(|r| r == "next" || r == "prev") {
                hrefs.push((l.attr("href").unwrap_or("").to_string(), false));
            }
        }
        for a in doc.select(&a_sel) {
            let rel = a.attr("rel").unwrap_or("").to_ascii_lowercase();
            let nofollow = rel.split_whitespace().any(|r| r == "nofollow");
            hrefs.push((a.attr("href").unwrap_or("").to_string(), nofollow));
        }
        for fr in doc.select(&frame_sel) {
            hrefs.push((fr.attr("src").unwrap_or("").to_string(), false));
        }
        for (href, nofollow) in hrefs {
            let href = href.trim();
            if let Some(addr) = href.strip_prefix("mailto:") {
                let addr = addr.split('?').next().unwrap_or(addr);
                f.mailto.insert(addr.to_string());
                continue;
            }
            if nofollow || nofollow_page {
                continue;
            }
            let Ok(mut target) = base.join(href) else {
                continue;
            };
            target.set_fragment(None);
            if !matches!(target.scheme(), "http" | "https") {
                continue;
            }
            if seen.insert(target.to_string()) {
                queue.push_back((target, depth + 1));
            }
        }
    }
    found
}

/// Every site of the manifest against the walk: pages and depths, content types, disallowed,
/// dead, redirects, mailto, noindex. Returns how many pages there are in all.
fn assert_walk_matches(
    manifest: &crawltop::testweb::Manifest,
    walked: &BTreeMap<String, Found>,
) -> usize {
    assert_eq!(walked.len(), manifest.sites.len(), "every site reached");
    let mut total = 0;
    for site in &manifest.sites {
        let w = &walked[&site.name];
        let pages: BTreeMap<String, u32> = site
            .pages
            .iter()
            .map(|p| (p.path.clone(), p.depth))
            .collect();
        let walked_pages: BTreeMap<String, u32> =
            w.pages.iter().map(|(p, (d, _))| (p.clone(), *d)).collect();
        assert_eq!(walked_pages, pages, "{}: pages and depths", site.name);
        for p in &site.pages {
            let ctype = &w.pages[&p.path].1;
            let expected = match p.content {
                ContentKind::Html => "text/html",
                ContentKind::Text => "text/plain",
                ContentKind::Image => "image/png",
            };
            assert!(
                ctype.starts_with(expected),
                "{} {}: {ctype}",
                site.name,
                p.path
            );
        }
        let dis: BTreeSet<String> = site.disallowed.iter().cloned().collect();
        assert_eq!(w.disallowed, dis, "{}: disallowed", site.name);
        let dead: BTreeSet<String> = site.dead.iter().cloned().collect();
        assert_eq!(w.dead, dead, "{}: dead links", site.name);
        let redirects: BTreeSet<(String, String)> = site
            .redirects
            .iter()
            .map(|r| (r.from.clone(), r.to.clone()))
            .collect();
        assert_eq!(w.redirects, redirects, "{}: redirects", site.name);
        let mailto: BTreeSet<String> = site.mailto.iter().cloned().collect();
        assert_eq!(w.mailto, mailto, "{}: mailto", site.name);
        let noindex: BTreeSet<String> = site.noindex.iter().cloned().collect();
        assert_eq!(w.noindex, noindex, "{}: noindex", site.name);
        total += pages.len();
    }
    total
}

#[tokio::test]
async fn manifest_equals_a_walk_over_the_served_pages() {
    let web = TestWeb::start(GenOptions::new(6, 40).seed(7))
        .await
        .expect("web starts");
    let walked = walk(&web).await;
    let manifest = web.manifest();
    let total = assert_walk_matches(manifest, &walked);
    assert!(
        total > 6 * 40,
        "query variants and extra pages add URLs: {total}"
    );

    // What the manifest says is reachable only by nofollow exists, and the walk never asked.
    let http = client();
    for site in manifest.normal_sites() {
        assert!(!site.nofollow_only.is_empty(), "{}", site.name);
        for path in &site.nofollow_only {
            let resp = http
                .get(web.url(&site.name, path))
                .send()
                .await
                .expect("get");
            assert_eq!(resp.status(), 200, "{} {path}", site.name);
            assert!(!walked[&site.name].pages.contains_key(path));
        }
    }
}

#[tokio::test]
async fn heavy_sites_manifest_equals_a_walk_over_the_served_pages() {
    let heavy = HeavyOptions {
        listings: 3,
        listing_max_bytes: 64 << 10,
        api_pages: 40,
        chapters: 15,
    };
    let web = TestWeb::start(GenOptions::new(2, 10).seed(4).heavy(Some(heavy)))
        .await
        .expect("web starts");
    let walked = walk(&web).await;
    let manifest = web.manifest();
    assert_walk_matches(manifest, &walked);

    let listings = manifest.site("listings").expect("listings");
    assert_eq!(listings.kind, SiteKind::Listings);
    assert_eq!(listings.pages.len(), 1 + 3, "the index and three listings");
    for page in listings.pages.iter().filter(|p| p.path != "/") {
        // Itself (line anchors), the two other files, and home.
        assert_eq!(page.links.len(), 4, "{}: {:?}", page.path, page.links);
    }

    let docs = manifest.site("docs").expect("docs");
    assert_eq!(docs.kind, SiteKind::Docs);
    assert_eq!(docs.pages.len(), 1 + 40 + 15);
    for page in &docs.pages {
        assert!(
            page.links.len() >= 40,
            "{}: {} links",
            page.path,
            page.links.len()
        );
    }
    // The book is one rel=next chain: chapter k is k links further than the first.
    let depth = |path: &str| {
        docs.pages
            .iter()
            .find(|p| p.path == path)
            .map(|p| p.depth)
            .expect("reachable")
    };
    let first = depth("/book/ch000.html");
    assert_eq!(first, depth("/") + 1);
    for k in 0..15u32 {
        assert_eq!(depth(&format!("/book/ch{k:03}.html")), first + k);
    }
}

/// Elements in an HTML page: `<` followed by a letter.
fn elements(html: &[u8]) -> usize {
    html.windows(2)
        .filter(|w| w[0] == b'<' && w[1].is_ascii_alphabetic())
        .count()
}

#[test]
fn heavy_sites_at_full_size_leave_the_rest_of_the_web_as_it_was() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plain = GenOptions::new(3, 20).seed(5).hostile(true);
    let heavy = plain.clone().heavy(Some(HeavyOptions::default()));
    generate(&tmp.path().join("plain"), &plain, false).expect("gen plain");
    let m = generate(&tmp.path().join("heavy"), &heavy, false).expect("gen heavy");
    generate(&tmp.path().join("again"), &heavy, false).expect("gen again");
    let plain = tree_digest(&tmp.path().join("plain"));
    let heavy = tree_digest(&tmp.path().join("heavy"));
    assert_eq!(
        heavy,
        tree_digest(&tmp.path().join("again")),
        "deterministic"
    );

    // Every file of the plain web is there, the same bytes; only site00's index links more.
    for (name, bytes) in &plain {
        if name == "manifest.json" || name == "site00/index.html" {
            continue;
        }
        assert_eq!(heavy.get(name), Some(bytes), "{name} changed");
    }
    assert_ne!(heavy["site00/index.html"], plain["site00/index.html"]);

    // Listings from 1 to 8 MB; the largest with 100,000+ elements.
    let listings: Vec<&Vec<u8>> = heavy
        .iter()
        .filter(|(name, _)| name.starts_with("listings/src/"))
        .map(|(_, b)| b)
        .collect();
    assert_eq!(listings.len(), 6);
    let sizes: Vec<usize> = listings.iter().map(|b| b.len()).collect();
    let min = sizes.iter().min().copied().unwrap_or(0);
    let max = sizes.iter().max().copied().unwrap_or(0);
    assert!((1 << 20..(1 << 20) + 4096).contains(&min), "smallest {min}");
    assert!((8 << 20..(8 << 20) + 4096).contains(&max), "largest {max}");
    let largest = listings.iter().max_by_key(|b| b.len()).expect("six");
    assert!(
        elements(largest) >= 100_000,
        "{} elements",
        elements(largest)
    );

    // Docs: 300+ links on every page, and a chain of 100 chapters.
    let docs = m.site("docs").expect("docs");
    assert_eq!(docs.pages.len(), 1 + 320 + 100);
    assert!(docs.pages.iter().all(|p| p.links.len() >= 300));
    let deepest = docs.pages.iter().map(|p| p.depth).max().unwrap_or(0);
    assert_eq!(deepest, 1 + 100, "site00 -> docs index -> 100 chapters");
}

#[tokio::test]
async fn a_link_farm_is_served_from_its_parameters_and_learns_what_the_manifest_says() {
    let farm = LinkFarm {
        pages: 3,
        links_per_page: 1_000,
    };
    let web = TestWeb::start(GenOptions::new(2, 5).link_farm(2, farm))
        .await
        .expect("web starts");
    let site = web.manifest().site("farm01").expect("farm01");
    assert_eq!(site.kind, SiteKind::LinkFarm);
    let f = site.farm.clone().expect("the farm's parameters");
    assert_eq!((f.farm, f.known_urls, f.existing), (farm, 3_001, 3));
    assert_eq!(f.root_depth, 1, "site00's index links every farm");
    assert!(
        site.pages.is_empty() && site.dead.is_empty(),
        "computed, not listed"
    );
    let http = client();
    let index = get_text(&http, &web.url("site00", "/")).await;
    assert!(
        index.contains(&web.origin("farm01")),
        "site00 links the farm"
    );

    // A crawl of the farm alone: every URL it learns, and what each answers.
    let a_sel = Selector::parse("a[href]").expect("selector");
    let root = Url::parse(&web.url("farm01", "/")).expect("url");
    let mut depth: BTreeMap<String, u32> = BTreeMap::from([("/".to_string(), 0)]);
    let mut status: BTreeMap<String, u16> = BTreeMap::new();
    let mut queue = VecDeque::from(["/".to_string()]);
    while let Some(path) = queue.pop_front() {
        let resp = http
            .get(root.join(&path).expect("url"))
            .send()
            .await
            .expect("get");
        status.insert(path.clone(), resp.status().as_u16());
        if resp.status() != 200 {
            continue;
        }
        let body = resp.text().await.expect("body");
        for a in Html::parse_document(&body).select(&a_sel) {
            let target = root.join(a.attr("href").unwrap_or("")).expect("href");
            assert_eq!(
                target.origin(),
                root.origin(),
                "farm links stay on the farm"
            );
            let d = depth[&path] + 1;
            if !depth.contains_key(target.path()) {
                depth.insert(target.path().to_string(), d);
                queue.push_back(target.path().to_string());
            }
        }
    }
    assert_eq!(depth.len() as u64, f.known_urls);
    let ok: Vec<&str> = status
        .iter()
        .filter(|(_, s)| **s == 200)
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(ok, ["/", "/f/1.html", "/f/2.html"]);
    assert!(status.values().all(|s| *s == 200 || *s == 404));
    for (path, d) in &depth {
        let id = LinkFarm::id_of(path).expect("a farm path");
        assert!(f.farm.is_known(id));
        assert_eq!(*d, f.farm.depth(id), "{path}");
    }
    // Nothing else answers: other spellings, and pages past what the farm links.
    for path in ["/f/01.html", "/f/3001.html", "/index.html", "/f/"] {
        let resp = http.get(web.url("farm01", path)).send().await.expect("get");
        assert_eq!(resp.status(), 404, "{path}");
    }
    // On disk: robots.txt and the parameters, no pages.
    let files = std::fs::read_dir(web.dir().join("farm01"))
        .expect("farm folder")
        .count();
    assert_eq!(files, 2);
}

#[tokio::test]
async fn every_site_role_is_present_with_four_sites_or_more() {
    use crawltop::testweb::manifest::RobotsRole;
    let web = TestWeb::start(GenOptions::new(5, 10).crawl_delay_s(0.5))
        .await
        .expect("web starts");
    let m = web.manifest();
    let roles: Vec<RobotsRole> = m.sites.iter().map(|s| s.robots).collect();
    assert_eq!(
        roles,
        [
            RobotsRole::Standard,
            RobotsRole::CrawlDelay,
            RobotsRole::OtherAgent,
            RobotsRole::None,
            RobotsRole::Standard
        ]
    );
    let http = client();
    let robots = |site: &str| {
        let url = web.url(site, "/robots.txt");
        let http = http.clone();
        async move {
            let r = http.get(url).send().await.expect("get");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    };
    let (status, text) = robots("site01").await;
    assert_eq!(status, 200);
    assert!(text.contains("Crawl-delay: 0.5"), "{text}");
    assert_eq!(m.sites[1].crawl_delay_s, Some(0.5));
    let (status, text) = robots("site02").await;
    assert_eq!(status, 200);
    assert!(text.contains("User-agent: otherbot") && !text.contains("User-agent: *"));
    assert_eq!(robots("site03").await.0, 404);
    let (_, text) = robots("site00").await;
    assert!(text.contains("Disallow: /private/"));
}

fn tree_digest(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    crate::util::files_under(dir)
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(dir)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&p).expect("read");
            (rel, bytes)
        })
        .collect()
}

#[test]
fn generation_is_deterministic() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = GenOptions::new(5, 60).seed(42).hostile(true);
    generate(&tmp.path().join("a"), &opts, false).expect("gen a");
    generate(&tmp.path().join("b"), &opts, false).expect("gen b");
    generate(&tmp.path().join("c"), &opts.clone().seed(43), false).expect("gen c");
    let a = tree_digest(&tmp.path().join("a"));
    let b = tree_digest(&tmp.path().join("b"));
    let c = tree_digest(&tmp.path().join("c"));
    assert!(a.len() > 5 * 60, "{} files", a.len());
    assert_eq!(a, b, "same seed, same bytes");
    assert_ne!(a, c, "another seed, another web");
}

#[test]
fn page_sizes_vary_from_about_one_to_thirty_kb() {
    let tmp = tempfile::tempdir().expect("tempdir");
    generate(&tmp.path().join("w"), &GenOptions::new(2, 200), false).expect("gen");
    let sizes: Vec<usize> = tree_digest(&tmp.path().join("w"))
        .iter()
        .filter(|(name, _)| {
            let n = Path::new(name.as_str());
            n.extension().is_some_and(|e| e == "html")
                && n.file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with('p'))
        })
        .map(|(_, b)| b.len())
        .collect();
    let min = sizes.iter().min().copied().unwrap_or(0);
    let max = sizes.iter().max().copied().unwrap_or(0);
    assert!((800..2_500).contains(&min), "smallest page {min} bytes");
    assert!((20_000..40_000).contains(&max), "largest page {max} bytes");
}

#[test]
fn hostile_web_has_its_four_extra_sites() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let m = generate(
        &tmp.path().join("w"),
        &GenOptions::new(2, 5).hostile(true),
        false,
    )
    .expect("gen");
    let kinds: Vec<SiteKind> = m.sites.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SiteKind::Normal,
            SiteKind::Normal,
            SiteKind::Hostile,
            SiteKind::Robots500,
            SiteKind::RobotsMoved,
            SiteKind::RobotsAway
        ]
    );
    let hostile = m.site("hostile").expect("hostile");
    assert_eq!(hostile.behaviours.len(), 11);
    let r500 = m.site("robots500").expect("robots500");
    assert!(r500.pages.is_empty());
    assert_eq!(r500.disallowed, ["/"]);
    let moved = m.site("robotsmoved").expect("robotsmoved");
    assert_eq!(moved.page_paths(), ["/", "/p0.html", "/p1.html"].into());
    assert_eq!(moved.disallowed, ["/private/secret.html"]);
    let dir = tmp.path().join("w/robotsmoved");
    assert!(
        !dir.join("robots.txt").exists(),
        "the server answers it with a redirect"
    );
    let rules = std::fs::read_to_string(dir.join("policy/robots.txt")).expect("policy");
    assert!(rules.contains("Disallow: /private/"), "{rules}");
    assert!(dir.join("private/secret.html").is_file());
    let away = m.site("robotsaway").expect("robotsaway");
    assert_eq!(away.disallowed, ["/private/secret.html"]);
    assert!(!tmp.path().join("w/robotsaway/robots.txt").exists());
}

fn no_partial_left(parent: &Path) {
    for e in std::fs::read_dir(parent).expect("read_dir") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(!name.contains(".partial-"), "left behind: {name}");
    }
}

#[test]
fn bad_input_is_refused_and_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("w");
    for (opts, words) in [
        (GenOptions::new(0, 5), "--sites"),
        (GenOptions::new(5, 0), "--pages"),
        (GenOptions::new(2_000, 5), "limit"),
        (GenOptions::new(1, 1_000_000), "limit"),
        (GenOptions::new(999, 9_999), "in all"),
        (GenOptions::new(2, 2).text("too few words".into()), "words"),
        (
            GenOptions::new(2, 2).heavy(Some(HeavyOptions {
                listings: 0,
                ..HeavyOptions::default()
            })),
            "listing pages",
        ),
        (
            GenOptions::new(2, 2).heavy(Some(HeavyOptions {
                listing_max_bytes: 100,
                ..HeavyOptions::default()
            })),
            "largest listing",
        ),
        (
            GenOptions::new(2, 2).heavy(Some(HeavyOptions {
                api_pages: usize::MAX,
                ..HeavyOptions::default()
            })),
            "API pages",
        ),
        (
            GenOptions::new(2, 2).heavy(Some(HeavyOptions {
                chapters: 0,
                ..HeavyOptions::default()
            })),
            "chapters",
        ),
        (
            GenOptions::new(2, 2).link_farm(0, LinkFarm::default()),
            "--link-farm",
        ),
        (
            GenOptions::new(2, 2).link_farm(
                1,
                LinkFarm {
                    pages: 0,
                    links_per_page: 5,
                },
            ),
            "pages",
        ),
        (
            GenOptions::new(2, 2).link_farm(
                1,
                LinkFarm {
                    pages: u64::MAX,
                    links_per_page: u64::MAX,
                },
            ),
            "link farm",
        ),
    ] {
        let err = generate(&out, &opts, false).expect_err("refused");
        assert!(err.to_string().contains(words), "{err}");
        assert!(!out.exists());
    }
    no_partial_left(tmp.path());

    // A folder that is not empty: refused without --force, refused even with it when it
    // does not hold a generated web, and its files untouched.
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("precious.txt"), "keep me").expect("write");
    let err = generate(&out, &GenOptions::new(2, 2), false).expect_err("not empty");
    assert!(matches!(err, GenError::NotEmpty(_)), "{err}");
    let err = generate(&out, &GenOptions::new(2, 2), true).expect_err("foreign");
    assert!(matches!(err, GenError::ForeignContent(_)), "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("precious.txt")).expect("kept"),
        "keep me"
    );

    // An unwritable place: the parent is a file.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").expect("write");
    let err = generate(&file.join("w"), &GenOptions::new(2, 2), false).expect_err("unwritable");
    assert!(matches!(err, GenError::Io { .. }), "{err}");
    no_partial_left(tmp.path());

    // --force replaces a web generated before.
    let web = tmp.path().join("web");
    generate(&web, &GenOptions::new(2, 3), false).expect("first");
    let err = generate(&web, &GenOptions::new(2, 3), false).expect_err("exists");
    assert!(matches!(err, GenError::NotEmpty(_)));
    let m = generate(&web, &GenOptions::new(3, 3), true).expect("forced");
    assert_eq!(m.sites.len(), 3);
    assert!(web.join("site02").is_dir());
    no_partial_left(tmp.path());
}
