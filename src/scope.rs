//! Decides which URLs the crawl may touch: the user's scope, include and exclude patterns,
//! the depth limit and the spider-trap rules (invariant 7: only what the user aimed it at).
//!
//! Pure: a URL and its depth in, a verdict out. No I/O, no DNS (two names of one server are
//! two hosts here), no state; the engine applies the limits that need counting (pages per
//! crawl and per site, redirects), but their reasons live in [`IgnoreReason`] so every
//! "not fetched" is one type.

use std::collections::{HashMap, HashSet};
use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};
use url::{Host, Url};

/// How far from the seeds the crawl may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// Same scheme, host and port as a seed: the seeds' sites, robots.txt's unit.
    Origin,
    /// Same host as a seed, any scheme or port.
    Host,
    /// Same registrable domain as a seed (`a.example.co.uk` and `b.example.co.uk`).
    Domain,
    /// Any http or https URL.
    Any,
}

/// Why a URL is not fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IgnoreReason {
    UnsupportedScheme,
    OutOfScope,
    NotIncluded,
    Excluded,
    TooDeep,
    UrlTooLong,
    PathTooDeep,
    RepeatedSegment,
    PageLimit,
    SitePageLimit,
    TooManyRedirects,
}

impl fmt::Display for IgnoreReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IgnoreReason::UnsupportedScheme => "not http or https",
            IgnoreReason::OutOfScope => "out of scope",
            IgnoreReason::NotIncluded => "matches no include pattern",
            IgnoreReason::Excluded => "matches an exclude pattern",
            IgnoreReason::TooDeep => "deeper than the depth limit",
            IgnoreReason::UrlTooLong => "URL too long",
            IgnoreReason::PathTooDeep => "too many path segments",
            IgnoreReason::RepeatedSegment => "repeated path segment",
            IgnoreReason::PageLimit => "page limit reached",
            IgnoreReason::SitePageLimit => "site page limit reached",
            IgnoreReason::TooManyRedirects => "too many redirects",
        })
    }
}

/// Longest URL, in bytes of its serialization, that is fetched.
pub const MAX_URL_BYTES: usize = 2048;
/// Most path segments a fetched URL may have.
pub const MAX_PATH_SEGMENTS: usize = 16;
/// A path segment occurring this many times marks a trap such as `/a/b/a/b/a/`.
pub const REPEATED_SEGMENT_LIMIT: usize = 3;

/// The scope and trap rules of one crawl, built once from the configuration.
#[derive(Debug, Clone)]
pub struct ScopeRules {
    kind: ScopeKind,
    /// One entry per seed, in the form `kind` compares: host to its (scheme, port) pairs for
    /// Origin (keyed by host so that a check looks up the URL's own text, no `String` built
    /// per link), the host for Host, the registrable domain for Domain.
    origins: HashMap<String, Vec<(String, u16)>>,
    hosts: HashSet<String>,
    domains: HashSet<String>,
    include: Vec<Regex>,
    exclude: Vec<Regex>,
    max_depth: Option<u32>,
}

impl ScopeRules {
    /// Seeds that are not http(s) or have no host add nothing to the scope; with no usable
    /// seed, only `ScopeKind::Any` lets anything through.
    pub fn new(
        kind: ScopeKind,
        seeds: &[Url],
        include: Vec<Regex>,
        exclude: Vec<Regex>,
        max_depth: Option<u32>,
    ) -> Self {
        let mut rules = ScopeRules {
            kind,
            origins: HashMap::new(),
            hosts: HashSet::new(),
            domains: HashSet::new(),
            include,
            exclude,
            max_depth,
        };
        rules.widen(seeds);
        rules
    }

    /// Adds seeds to the scope: a shared crawl's scope is every member's seeds, and a member
    /// that joins later with seeds of its own widens it for everyone.
    ///
    /// Returns what the scope gained, as texts that every URL it now admits and did not before
    /// contains (the new seeds' hosts, or their registrable domains under `Domain`): empty when
    /// it gained nothing (seeds of sites in scope already, or `Any`, which admits everything).
    /// A URL left out before can be taken back only if its text holds one of them, which spares
    /// parsing the millions of out-of-scope URLs a big crawl holds.
    pub fn widen(&mut self, seeds: &[Url]) -> Vec<String> {
        let rules = self;
        let mut gained = Vec::new();
        for seed in seeds.iter().filter(|s| is_http(s)) {
            let mut new = false;
            if let (Some(host), Some(port)) = (seed.host_str(), seed.port_or_known_default()) {
                let pairs = rules.origins.entry(host.to_owned()).or_default();
                if !pairs.iter().any(|(s, p)| s == seed.scheme() && *p == port) {
                    pairs.push((seed.scheme().to_owned(), port));
                    new |= rules.kind == ScopeKind::Origin;
                }
            }
            if let Some(host) = seed.host_str() {
                new |= rules.hosts.insert(host.to_owned()) && rules.kind == ScopeKind::Host;
                if new {
                    gained.push(host.to_owned());
                }
            }
            if let Some(domain) = domain_key(seed)
                && rules.domains.insert(domain.to_owned())
                && rules.kind == ScopeKind::Domain
            {
                gained.push(domain.to_owned());
            }
        }
        gained.sort_unstable();
        gained.dedup();
        gained
    }

    /// The depth limit (`--depth`), if any.
    pub fn max_depth(&self) -> Option<u32> {
        self.max_depth
    }

    /// `Ok` if the crawl may fetch `url`, found on a page at `depth - 1` (seeds are 0).
    ///
    /// The checks run in this order and the first failure is the reason reported:
    /// 1. scheme (`UnsupportedScheme`),
    /// 2. length (`UrlTooLong`), before any other work on a possibly huge string,
    /// 3. scope (`OutOfScope`),
    /// 4. exclude, then include (`Excluded`, `NotIncluded`): exclude wins, so a URL that
    ///    fails both is reported as excluded,
    /// 5. traps (`PathTooDeep`, then `RepeatedSegment`),
    /// 6. depth (`TooDeep`), last, since it is about the route, not the URL.
    ///
    /// `url` should be canonical (`crate::canonical`), as patterns are matched against its
    /// serialization.
    pub fn check(&self, url: &Url, depth: u32) -> Result<(), IgnoreReason> {
        if !is_http(url) {
            return Err(IgnoreReason::UnsupportedScheme);
        }
        if url.as_str().len() > MAX_URL_BYTES {
            return Err(IgnoreReason::UrlTooLong);
        }
        if !self.in_scope(url) {
            return Err(IgnoreReason::OutOfScope);
        }
        let text = url.as_str();
        if self.exclude.iter().any(|re| re.is_match(text)) {
            return Err(IgnoreReason::Excluded);
        }
        if !self.include.is_empty() && !self.include.iter().any(|re| re.is_match(text)) {
            return Err(IgnoreReason::NotIncluded);
        }
        check_traps(url)?;
        if self.max_depth.is_some_and(|max| depth > max) {
            return Err(IgnoreReason::TooDeep);
        }
        Ok(())
    }

    fn in_scope(&self, url: &Url) -> bool {
        match self.kind {
            ScopeKind::Origin => {
                let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
                    return false;
                };
                (self.origins.get(host))
                    .is_some_and(|pairs| pairs.iter().any(|(s, p)| s == url.scheme() && *p == port))
            }
            ScopeKind::Host => url.host_str().is_some_and(|h| self.hosts.contains(h)),
            ScopeKind::Domain => domain_key(url).is_some_and(|d| self.domains.contains(d)),
            ScopeKind::Any => true,
        }
    }
}

fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// The registrable domain (eTLD+1) of a URL's host. IP addresses, `localhost` and names that
/// are themselves public suffixes or single labels have none, so they stand for themselves.
fn domain_key(url: &Url) -> Option<&str> {
    match url.host()? {
        Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(name);
            if name == "localhost" {
                return Some(name);
            }
            Some(psl::domain_str(name).unwrap_or(name))
        }
        Host::Ipv4(_) | Host::Ipv6(_) => url.host_str(),
    }
}

/// Path segments, not counting the empty one after a trailing slash: `/a/b/` is two
/// segments, like `/a/b`. Empty segments inside the path (`/a//b`) do count, so a path that
/// grows by slashes is caught as a repeat.
fn segments(url: &Url) -> impl Iterator<Item = &str> {
    let path = url.path();
    let path = path.strip_prefix('/').unwrap_or(path);
    let path = path.strip_suffix('/').unwrap_or(path);
    path.split('/').filter(move |_| !path.is_empty())
}

fn check_traps(url: &Url) -> Result<(), IgnoreReason> {
    // On the stack: this runs for every link found.
    let mut segments = [""; MAX_PATH_SEGMENTS];
    let mut n = 0;
    for segment in self::segments(url) {
        let Some(slot) = segments.get_mut(n) else {
            return Err(IgnoreReason::PathTooDeep);
        };
        *slot = segment;
        n += 1;
    }
    let segments = &segments[..n];
    // At most 16 segments here, so comparing pairs is cheaper than hashing.
    for (i, segment) in segments.iter().enumerate() {
        let count = 1 + segments[i + 1..].iter().filter(|s| *s == segment).count();
        if count >= REPEATED_SEGMENT_LIMIT {
            return Err(IgnoreReason::RepeatedSegment);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL parses")
    }

    fn rules(kind: ScopeKind, seeds: &[&str]) -> ScopeRules {
        let seeds: Vec<Url> = seeds.iter().map(|s| url(s)).collect();
        ScopeRules::new(kind, &seeds, Vec::new(), Vec::new(), None)
    }

    fn check(rules: &ScopeRules, s: &str) -> Result<(), IgnoreReason> {
        rules.check(&url(s), 0)
    }

    fn patterns(list: &[&str]) -> Vec<Regex> {
        list.iter()
            .map(|p| Regex::new(p).expect("test pattern compiles"))
            .collect()
    }

    // --- scheme ---

    #[test]
    fn non_http_schemes_are_unsupported_even_with_any_scope() {
        let r = rules(ScopeKind::Any, &[]);
        for s in [
            "ftp://example.com/",
            "mailto:a@example.com",
            "file:///etc/passwd",
        ] {
            assert_eq!(check(&r, s), Err(IgnoreReason::UnsupportedScheme), "{s}");
        }
        assert_eq!(check(&r, "https://anything.org/"), Ok(()));
    }

    // --- origin ---

    #[test]
    fn origin_scope_accepts_same_scheme_host_and_port() {
        let r = rules(ScopeKind::Origin, &["http://example.com/start"]);
        assert_eq!(check(&r, "http://example.com/other?x=1"), Ok(()));
        assert_eq!(check(&r, "http://example.com:80/"), Ok(()));
    }

    #[test]
    fn origin_scope_rejects_other_scheme_port_or_host() {
        let r = rules(ScopeKind::Origin, &["http://example.com/"]);
        for s in [
            "https://example.com/",
            "http://example.com:8080/",
            "http://www.example.com/",
            "http://example.org/",
        ] {
            assert_eq!(check(&r, s), Err(IgnoreReason::OutOfScope), "{s}");
        }
    }

    #[test]
    fn origin_scope_distinguishes_loopback_ports() {
        let r = rules(
            ScopeKind::Origin,
            &["http://127.0.0.1:18001/", "http://127.0.0.1:18002/"],
        );
        assert_eq!(check(&r, "http://127.0.0.1:18001/a"), Ok(()));
        assert_eq!(check(&r, "http://127.0.0.1:18002/b"), Ok(()));
        assert_eq!(
            check(&r, "http://127.0.0.1:18003/"),
            Err(IgnoreReason::OutOfScope)
        );
    }

    /// A widening names what it gained, and every URL it lets in that was out before holds
    /// that text: the engine looks again only at the URLs it left out that hold it.
    #[test]
    fn widening_names_what_it_gained_and_only_urls_holding_it_come_in() {
        let before = [
            "http://127.0.0.1:18003/a",
            "https://127.0.0.1:18001/b",
            "http://www.example.com/c",
            "http://blog.example.org/d",
            "http://example.org/e",
        ];
        let cases: [(ScopeKind, &[&str], &[&str]); 4] = [
            (
                ScopeKind::Origin,
                &[
                    "http://127.0.0.1:18003/",
                    "http://127.0.0.1:18001/x",
                    "https://www.example.com/",
                ],
                &["127.0.0.1", "www.example.com"],
            ),
            (
                ScopeKind::Host,
                &[
                    "https://127.0.0.1:9/",
                    "http://www.example.com/",
                    "http://example.org/",
                ],
                &["example.org", "www.example.com"],
            ),
            (
                ScopeKind::Domain,
                &["http://shop.example.org/"],
                &["example.org"],
            ),
            (ScopeKind::Any, &["http://example.org/"], &[]),
        ];
        for (kind, seeds, gained) in cases {
            let mut r = rules(kind, &["http://127.0.0.1:18001/"]);
            let out: Vec<&str> = (before.iter().copied())
                .filter(|s| check(&r, s).is_err())
                .collect();
            let seeds: Vec<Url> = seeds.iter().map(|s| url(s)).collect();
            assert_eq!(r.widen(&seeds), gained, "{kind:?}");
            for s in out {
                if check(&r, s).is_ok() {
                    assert!(gained.iter().any(|g| s.contains(g)), "{kind:?}: {s}");
                }
            }
            assert!(r.widen(&seeds).is_empty(), "{kind:?}: the same seeds again");
        }
        let mut r = rules(ScopeKind::Origin, &["http://127.0.0.1:18001/"]);
        assert!(check(&r, "http://127.0.0.1:18003/a").is_err());
        r.widen(&[url("http://127.0.0.1:18003/")]);
        assert_eq!(check(&r, "http://127.0.0.1:18003/a"), Ok(()));
        assert!(check(&r, "https://127.0.0.1:18003/a").is_err());
    }

    #[test]
    fn explicit_default_port_in_seed_matches_implicit_one() {
        let r = rules(ScopeKind::Origin, &["https://example.com:443/"]);
        assert_eq!(check(&r, "https://example.com/"), Ok(()));
    }

    // --- host ---

    #[test]
    fn host_scope_ignores_scheme_and_port() {
        let r = rules(ScopeKind::Host, &["http://example.com/"]);
        assert_eq!(check(&r, "https://example.com:8443/x"), Ok(()));
        assert_eq!(
            check(&r, "http://sub.example.com/"),
            Err(IgnoreReason::OutOfScope)
        );
    }

    #[test]
    fn host_scope_with_ip_accepts_other_ports_only_on_that_ip() {
        let r = rules(ScopeKind::Host, &["http://127.0.0.1:18001/"]);
        assert_eq!(check(&r, "http://127.0.0.1:18099/"), Ok(()));
        assert_eq!(
            check(&r, "http://127.0.0.2:18001/"),
            Err(IgnoreReason::OutOfScope)
        );
    }

    // --- domain ---

    #[test]
    fn domain_scope_accepts_siblings_under_a_multi_label_suffix() {
        let r = rules(ScopeKind::Domain, &["http://sub.example.co.uk/"]);
        assert_eq!(check(&r, "https://example.co.uk/"), Ok(()));
        assert_eq!(check(&r, "http://deep.other.example.co.uk:81/"), Ok(()));
    }

    #[test]
    fn domain_scope_rejects_another_domain_under_the_same_suffix() {
        let r = rules(ScopeKind::Domain, &["http://sub.example.co.uk/"]);
        assert_eq!(
            check(&r, "http://other.co.uk/"),
            Err(IgnoreReason::OutOfScope)
        );
        assert_eq!(check(&r, "http://co.uk/"), Err(IgnoreReason::OutOfScope));
    }

    #[test]
    fn domain_scope_on_ipv4_is_the_address_itself() {
        let r = rules(ScopeKind::Domain, &["http://127.0.0.1:18001/"]);
        assert_eq!(check(&r, "http://127.0.0.1:18002/"), Ok(()));
        assert_eq!(
            check(&r, "http://127.0.0.2/"),
            Err(IgnoreReason::OutOfScope)
        );
        assert_eq!(check(&r, "http://0.0.1/"), Err(IgnoreReason::OutOfScope));
    }

    #[test]
    fn domain_scope_on_ipv6_is_the_address_itself() {
        let r = rules(ScopeKind::Domain, &["http://[::1]:8080/"]);
        assert_eq!(check(&r, "http://[0:0::1]/"), Ok(()));
        assert_eq!(check(&r, "http://[::2]/"), Err(IgnoreReason::OutOfScope));
    }

    #[test]
    fn domain_scope_on_localhost_is_the_host_itself() {
        let r = rules(ScopeKind::Domain, &["http://localhost:3000/"]);
        assert_eq!(check(&r, "http://localhost:4000/"), Ok(()));
        assert_eq!(
            check(&r, "http://sub.localhost/"),
            Err(IgnoreReason::OutOfScope)
        );
    }

    #[test]
    fn domain_scope_ignores_a_trailing_dot() {
        let r = rules(ScopeKind::Domain, &["http://www.example.com/"]);
        assert_eq!(check(&r, "http://example.com./"), Ok(()));
    }

    // --- any ---

    #[test]
    fn any_scope_accepts_every_http_url() {
        let r = rules(ScopeKind::Any, &["http://example.com/"]);
        assert_eq!(check(&r, "https://elsewhere.net:1/"), Ok(()));
        assert_eq!(check(&r, "http://10.0.0.1/"), Ok(()));
    }

    #[test]
    fn no_usable_seed_means_nothing_is_in_a_bounded_scope() {
        let r = rules(ScopeKind::Origin, &["ftp://example.com/"]);
        assert_eq!(
            check(&r, "http://example.com/"),
            Err(IgnoreReason::OutOfScope)
        );
    }

    // --- include / exclude ---

    #[test]
    fn include_patterns_must_match_at_least_one() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(
            ScopeKind::Origin,
            &seeds,
            patterns(&["/docs/", r"\.html$"]),
            Vec::new(),
            None,
        );
        assert_eq!(check(&r, "http://example.com/docs/a"), Ok(()));
        assert_eq!(check(&r, "http://example.com/b.html"), Ok(()));
        assert_eq!(
            check(&r, "http://example.com/blog/c"),
            Err(IgnoreReason::NotIncluded)
        );
    }

    #[test]
    fn exclude_patterns_must_match_none() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(
            ScopeKind::Origin,
            &seeds,
            Vec::new(),
            patterns(&[r"\?sort=", "/private/"]),
            None,
        );
        assert_eq!(
            check(&r, "http://example.com/list?sort=asc"),
            Err(IgnoreReason::Excluded)
        );
        assert_eq!(
            check(&r, "http://example.com/private/x"),
            Err(IgnoreReason::Excluded)
        );
        assert_eq!(check(&r, "http://example.com/list"), Ok(()));
    }

    #[test]
    fn exclude_wins_over_include() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(
            ScopeKind::Origin,
            &seeds,
            patterns(&["/docs/"]),
            patterns(&["/docs/old/", "/blog/"]),
            None,
        );
        assert_eq!(
            check(&r, "http://example.com/docs/old/a"),
            Err(IgnoreReason::Excluded)
        );
        // Fails both: the exclusion is what the user asked for explicitly.
        assert_eq!(
            check(&r, "http://example.com/blog/a"),
            Err(IgnoreReason::Excluded)
        );
    }

    #[test]
    fn patterns_see_the_whole_url_string() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(
            ScopeKind::Any,
            &seeds,
            patterns(&["^https://"]),
            Vec::new(),
            None,
        );
        assert_eq!(check(&r, "https://example.com/"), Ok(()));
        assert_eq!(
            check(&r, "http://example.com/"),
            Err(IgnoreReason::NotIncluded)
        );
    }

    // --- traps ---

    fn url_of_len(len: usize) -> String {
        let prefix = "http://example.com/";
        format!("{prefix}{}", "a".repeat(len - prefix.len()))
    }

    #[test]
    fn url_of_2048_bytes_is_allowed() {
        let r = rules(ScopeKind::Any, &[]);
        let s = url_of_len(MAX_URL_BYTES);
        assert_eq!(url(&s).as_str().len(), 2048);
        assert_eq!(check(&r, &s), Ok(()));
    }

    #[test]
    fn url_of_2049_bytes_is_too_long() {
        let r = rules(ScopeKind::Any, &[]);
        let s = url_of_len(MAX_URL_BYTES + 1);
        assert_eq!(url(&s).as_str().len(), 2049);
        assert_eq!(check(&r, &s), Err(IgnoreReason::UrlTooLong));
    }

    fn path_of(segments: usize) -> String {
        let mut url = String::from("http://example.com");
        for i in 0..segments {
            write!(url, "/s{i}").expect("writing to a String cannot fail");
        }
        url
    }

    #[test]
    fn sixteen_path_segments_are_allowed() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(check(&r, &path_of(16)), Ok(()));
        assert_eq!(check(&r, &format!("{}/", path_of(16))), Ok(()));
    }

    #[test]
    fn seventeen_path_segments_are_too_deep() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(check(&r, &path_of(17)), Err(IgnoreReason::PathTooDeep));
    }

    #[test]
    fn root_path_has_no_segments() {
        let all = |s: &str| segments(&url(s)).map(str::to_owned).collect::<Vec<_>>();
        assert!(all("http://example.com/").is_empty());
        assert_eq!(all("http://example.com/a/b/"), ["a", "b"]);
        assert_eq!(all("http://example.com/a//b"), ["a", "", "b"]);
        assert!(all("http://example.com//").is_empty());
    }

    #[test]
    fn segment_occurring_twice_is_allowed() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(check(&r, "http://example.com/a/b/a/b/"), Ok(()));
    }

    #[test]
    fn segment_occurring_three_times_is_a_trap() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(
            check(&r, "http://example.com/a/b/a/b/a/"),
            Err(IgnoreReason::RepeatedSegment)
        );
        assert_eq!(
            check(&r, "http://example.com/x/x/x"),
            Err(IgnoreReason::RepeatedSegment)
        );
    }

    #[test]
    fn growing_run_of_slashes_is_a_trap() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(
            check(&r, "http://example.com/a////b"),
            Err(IgnoreReason::RepeatedSegment)
        );
    }

    #[test]
    fn repeats_are_case_sensitive_like_paths() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(check(&r, "http://example.com/a/A/a"), Ok(()));
    }

    #[test]
    fn query_does_not_count_as_path() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(check(&r, "http://example.com/p?x=/a/a/a/a"), Ok(()));
    }

    // --- depth ---

    #[test]
    fn depth_equal_to_max_is_allowed_and_one_more_is_too_deep() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(ScopeKind::Origin, &seeds, Vec::new(), Vec::new(), Some(3));
        let u = url("http://example.com/page");
        assert_eq!(r.check(&u, 3), Ok(()));
        assert_eq!(r.check(&u, 4), Err(IgnoreReason::TooDeep));
    }

    #[test]
    fn max_depth_zero_allows_only_seeds() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(ScopeKind::Origin, &seeds, Vec::new(), Vec::new(), Some(0));
        assert_eq!(r.check(&seeds[0], 0), Ok(()));
        assert_eq!(
            r.check(&url("http://example.com/a"), 1),
            Err(IgnoreReason::TooDeep)
        );
    }

    #[test]
    fn no_max_depth_means_unlimited() {
        let r = rules(ScopeKind::Any, &[]);
        assert_eq!(r.check(&url("http://example.com/"), u32::MAX), Ok(()));
    }

    // --- order ---

    #[test]
    fn scheme_is_reported_before_length() {
        let r = rules(ScopeKind::Origin, &["http://example.com/"]);
        let s = format!("ftp://example.com/{}", "a".repeat(3000));
        assert_eq!(check(&r, &s), Err(IgnoreReason::UnsupportedScheme));
    }

    #[test]
    fn length_is_reported_before_scope() {
        let r = rules(ScopeKind::Origin, &["http://example.com/"]);
        let s = format!("http://other.org/{}", "a".repeat(3000));
        assert_eq!(check(&r, &s), Err(IgnoreReason::UrlTooLong));
    }

    #[test]
    fn scope_is_reported_before_patterns_traps_and_depth() {
        let seeds = [url("http://example.com/")];
        let r = ScopeRules::new(
            ScopeKind::Origin,
            &seeds,
            patterns(&["nomatch"]),
            patterns(&["x"]),
            Some(0),
        );
        assert_eq!(
            r.check(&url("http://other.org/x/x/x"), 9),
            Err(IgnoreReason::OutOfScope)
        );
    }

    #[test]
    fn patterns_are_reported_before_traps_and_traps_before_depth() {
        let seeds = [url("http://example.com/")];
        let excluding = ScopeRules::new(
            ScopeKind::Origin,
            &seeds,
            Vec::new(),
            patterns(&["/x/"]),
            Some(0),
        );
        let trap = url("http://example.com/x/x/x");
        assert_eq!(excluding.check(&trap, 9), Err(IgnoreReason::Excluded));
        let limited = ScopeRules::new(ScopeKind::Origin, &seeds, Vec::new(), Vec::new(), Some(0));
        assert_eq!(limited.check(&trap, 9), Err(IgnoreReason::RepeatedSegment));
        let deep = url(&path_of(17));
        assert_eq!(limited.check(&deep, 9), Err(IgnoreReason::PathTooDeep));
    }

    // --- serde and display ---

    #[test]
    fn reasons_serialize_in_snake_case() {
        let json = serde_json::to_string(&IgnoreReason::TooManyRedirects).expect("serializes");
        assert_eq!(json, "\"too_many_redirects\"");
        let back: IgnoreReason = serde_json::from_str("\"url_too_long\"").expect("deserializes");
        assert_eq!(back, IgnoreReason::UrlTooLong);
    }

    #[test]
    fn scope_kind_serializes_in_snake_case() {
        let json = serde_json::to_string(&ScopeKind::Domain).expect("serializes");
        assert_eq!(json, "\"domain\"");
    }

    #[test]
    fn reasons_display_short_text() {
        assert_eq!(IgnoreReason::OutOfScope.to_string(), "out of scope");
        assert_eq!(
            IgnoreReason::RepeatedSegment.to_string(),
            "repeated path segment"
        );
    }
}
