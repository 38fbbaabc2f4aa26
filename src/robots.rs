//! robots.txt for one site (RFC 9309): the site's robots state machine, the decision "may
//! this URL be fetched", and the Crawl-delay that applies to us.
//!
//! It never fetches anything and never reads a clock: the engine fetches `/robots.txt`
//! (following up to five redirects, RFC 9309 section 2.3.1.2) and hands over the final status
//! and body, or reports that the server was unreachable; this module answers with what to do
//! next. Parsing and matching are `robotxt`'s; what this module adds is the state machine
//! around it, the retry budget, the Crawl-delay cap and the size accounting.
//!
//! Matching follows `robotxt`, which follows RFC 9309 section 2.2.2 (Google's reading of it):
//! the longest matching pattern wins, `Allow` wins a tie, unreserved characters are
//! percent-decoded, other percent-encodings get uppercase digits, non-ASCII is encoded. Two
//! choices of ours on top:
//! - a literal `*` or `$` in the URL is percent-encoded before matching, as section 2.2.3
//!   asks, so `Disallow: /foo-%24` matches `/foo-$`;
//! - reserved characters (`:`, `/`, `?`, ...) are compared as written on both sides, as in
//!   `robotxt` and Google's parser: `%3A` and `:` are different octets, so a rule written
//!   `?u=https%3A%2F%2Fa` does not match a URL whose query holds `https://a`.

use std::borrow::Cow;
use std::time::Duration;

use robotxt::Robots;
use serde::{Deserialize, Serialize, Serializer};
use url::{Position, Url};

use crate::backoff::Backoff;

/// The most of a robots.txt that is parsed (500 KiB, the floor RFC 9309 section 2.5 sets).
/// The rest, and the line that crosses the limit, is ignored.
pub const BODY_LIMIT: usize = robotxt::BYTE_LIMIT;

/// Where a site stands with its robots.txt (docs/ARCHITECTURE.md, "The object model").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RobotsState {
    /// Not resolved yet: nothing but robots.txt may be fetched.
    #[default]
    Discovered,
    /// Fetched (2xx) and parsed: its rules are obeyed.
    Handled,
    /// The server said there is none (4xx but 429): everything is allowed.
    Unexisting,
    /// 5xx, 429 or unreachable: nothing is fetched while it is retried (RFC 9309 2.3.1.4).
    Error,
    /// Robots ignored by configuration (`--ignore-robots`): everything is allowed.
    Skipped,
}

/// How the site's robots.txt is fetched and obeyed; the same for every site of a crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsPolicy {
    /// The product token matched against `User-Agent` lines, e.g. `crawltop`; never the
    /// whole `User-Agent` header, which would match no group but `*`.
    pub user_agent_token: String,
    /// A larger Crawl-delay is cut to this, so one site cannot stall its queue for hours.
    pub max_crawl_delay: Duration,
    /// How many times a robots.txt that failed (5xx, 429, unreachable) is fetched again
    /// before the site is given up: `max_retries + 1` attempts in all.
    pub max_retries: u32,
    /// The wait between those attempts when the server sends no `Retry-After`.
    pub backoff: Backoff,
}

impl RobotsPolicy {
    /// The default policy for a crawler whose product token is `user_agent_token`.
    pub fn new(user_agent_token: impl Into<String>) -> Self {
        Self {
            user_agent_token: user_agent_token.into(),
            max_crawl_delay: Duration::from_secs(30),
            max_retries: 4,
            backoff: Backoff::default(),
        }
    }
}

/// What the engine does after handing a robots.txt fetch result to [`SiteRobots`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsOutcome {
    /// The site's rules are known: its waiting URLs can be judged by [`SiteRobots::is_allowed`].
    Resolved,
    /// Fetch robots.txt again after this wait; the site's URLs keep waiting.
    Retry { after: Duration },
    /// The retry budget is spent: end the site's URLs as forbidden ("robots.txt unreachable").
    GaveUp,
}

/// The verdict on one URL, for an engine that must tell "not yet" from "never".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RobotsVerdict {
    Allowed,
    /// Forbidden by the rules, or by a robots.txt that stayed unreachable.
    Disallowed,
    /// robots.txt is not resolved yet (or is being retried): keep the URL waiting.
    Pending,
}

/// The last answer to a robots.txt fetch, as shown on the dashboard ("error (503)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RobotsResponse {
    Status(u16),
    Unreachable,
    TooManyRedirects,
}

/// Where a site in [`RobotsState::Error`] stands with its retry budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorPhase {
    Retrying,
    GaveUp,
}

/// The Crawl-delay of the group that applies to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CrawlDelay {
    /// What the politeness heap uses: `requested`, cut to the policy's maximum.
    #[serde(rename = "effective_ms", serialize_with = "serialize_millis")]
    pub effective: Duration,
    /// What the site asked for (the smallest, if several matching groups set one).
    #[serde(rename = "requested_ms", serialize_with = "serialize_millis")]
    pub requested: Duration,
    /// True when `requested` was above the maximum, so the log can say it was cut.
    pub capped: bool,
}

impl CrawlDelay {
    /// What the site asked for, for a log line: `3600 s`, or `too long to count` ([`ENDLESS`]).
    pub fn asked(&self) -> String {
        if self.requested == ENDLESS {
            "too long to count".to_owned()
        } else {
            format!("{} s", self.requested.as_secs_f64())
        }
    }
}

/// How many rules of the group that applies to us allow and disallow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCounts {
    pub allow: usize,
    pub disallow: usize,
}

/// The dashboard's view of one site's robots.txt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RobotsSummary {
    pub state: RobotsState,
    /// Only in [`RobotsState::Error`].
    pub error: Option<ErrorPhase>,
    pub last_response: Option<RobotsResponse>,
    /// Failed fetches since robots.txt was last resolved.
    pub failures: u32,
    /// Bytes of the 2xx body as handed over, before the cut at [`BODY_LIMIT`].
    pub size_bytes: Option<u64>,
    /// The body was longer than [`BODY_LIMIT`]: only its start was obeyed.
    pub truncated: bool,
    /// The `User-Agent` value of the group we obey: our token, or `*`; `None` when the file
    /// has no group for either (nothing applies to us: everything is allowed).
    pub group: Option<String>,
    pub rules: Option<RuleCounts>,
    pub crawl_delay: Option<CrawlDelay>,
    /// Every valid absolute `Sitemap` URL of the file, whatever its group.
    pub sitemaps: Vec<String>,
}

/// One site's robots.txt: its state, and its rules once fetched.
#[derive(Debug, Clone)]
pub struct SiteRobots {
    resolution: Resolution,
    last_response: Option<RobotsResponse>,
    failures: u32,
}

/// The state with the data only that state has, so that "handled without rules" cannot exist.
#[derive(Debug, Clone)]
enum Resolution {
    Discovered,
    Handled(Parsed),
    Unexisting,
    Error(ErrorPhase),
    Skipped,
}

#[derive(Debug, Clone)]
struct Parsed {
    robots: Robots,
    /// A group of the file names us or `*` (else nothing applies to us: all allowed).
    has_group: bool,
    crawl_delay: Option<CrawlDelay>,
    size_bytes: u64,
    truncated: bool,
}

impl Default for SiteRobots {
    fn default() -> Self {
        Self::discovered()
    }
}

impl SiteRobots {
    /// A site seen for the first time: its URLs wait until robots.txt is resolved.
    pub fn discovered() -> Self {
        Self::with(Resolution::Discovered)
    }

    /// A site whose robots.txt is ignored by configuration: everything is allowed.
    pub fn skipped() -> Self {
        Self::with(Resolution::Skipped)
    }

    fn with(resolution: Resolution) -> Self {
        Self {
            resolution,
            last_response: None,
            failures: 0,
        }
    }

    pub fn state(&self) -> RobotsState {
        match self.resolution {
            Resolution::Discovered => RobotsState::Discovered,
            Resolution::Handled(_) => RobotsState::Handled,
            Resolution::Unexisting => RobotsState::Unexisting,
            Resolution::Error(_) => RobotsState::Error,
            Resolution::Skipped => RobotsState::Skipped,
        }
    }

    /// Takes the final response to the robots.txt fetch (after redirects).
    ///
    /// 2xx: parsed and obeyed. 4xx but 429: none exists, everything allowed (RFC 9309
    /// 2.3.1.3). Everything else is a server error (RFC 9309 2.3.1.4), retried: 5xx; 429,
    /// which is the server pushing back, not saying the file is missing, so crawling the
    /// whole site then would be the least polite answer (Google treats it as a 5xx too); and
    /// the statuses that should never reach here (1xx, an unfollowed 3xx, >= 600), where
    /// assuming the worst keeps invariant 1. A skipped site ignores the call.
    pub fn on_response(
        &mut self,
        status: u16,
        body: &[u8],
        retry_after: Option<Duration>,
        policy: &RobotsPolicy,
    ) -> RobotsOutcome {
        if matches!(self.resolution, Resolution::Skipped) {
            return RobotsOutcome::Resolved;
        }
        self.last_response = Some(RobotsResponse::Status(status));
        match status {
            200..=299 => self.resolve(Resolution::Handled(Parsed::new(body, policy))),
            429 => self.fail(retry_after, policy),
            400..=499 => self.resolve(Resolution::Unexisting),
            _ => self.fail(retry_after, policy),
        }
    }

    /// The robots.txt fetch failed without a response: connection refused, DNS, timeout.
    /// Treated like a 5xx (RFC 9309 2.3.1.4: unreachable means complete disallow).
    pub fn on_unreachable(&mut self, policy: &RobotsPolicy) -> RobotsOutcome {
        if matches!(self.resolution, Resolution::Skipped) {
            return RobotsOutcome::Resolved;
        }
        self.last_response = Some(RobotsResponse::Unreachable);
        self.fail(None, policy)
    }

    /// More than five redirects: RFC 9309 2.3.1.2 lets us take the file as unavailable, so
    /// everything is allowed, as for a 4xx.
    pub fn on_too_many_redirects(&mut self) -> RobotsOutcome {
        if matches!(self.resolution, Resolution::Skipped) {
            return RobotsOutcome::Resolved;
        }
        self.last_response = Some(RobotsResponse::TooManyRedirects);
        self.resolve(Resolution::Unexisting)
    }

    fn resolve(&mut self, resolution: Resolution) -> RobotsOutcome {
        self.resolution = resolution;
        self.failures = 0;
        RobotsOutcome::Resolved
    }

    fn fail(&mut self, retry_after: Option<Duration>, policy: &RobotsPolicy) -> RobotsOutcome {
        self.failures = self.failures.saturating_add(1);
        if self.failures > policy.max_retries {
            self.resolution = Resolution::Error(ErrorPhase::GaveUp);
            return RobotsOutcome::GaveUp;
        }
        self.resolution = Resolution::Error(ErrorPhase::Retrying);
        let after = policy.backoff.with_retry_after(self.failures, retry_after);
        RobotsOutcome::Retry { after }
    }

    /// May this URL of the site be fetched now? Only path and query are matched: the caller
    /// passes URLs of this site only. Unresolved and failed sites allow nothing, so nothing
    /// but robots.txt (which the engine fetches on its own path) leaves before it resolves.
    pub fn is_allowed(&self, url: &Url) -> bool {
        self.verdict(url) == RobotsVerdict::Allowed
    }

    /// Like [`Self::is_allowed`], but tells a URL that must wait from one that is forbidden.
    pub fn verdict(&self, url: &Url) -> RobotsVerdict {
        match &self.resolution {
            Resolution::Discovered | Resolution::Error(ErrorPhase::Retrying) => {
                RobotsVerdict::Pending
            }
            Resolution::Error(ErrorPhase::GaveUp) => RobotsVerdict::Disallowed,
            Resolution::Unexisting | Resolution::Skipped => RobotsVerdict::Allowed,
            Resolution::Handled(parsed) => {
                if parsed.robots.is_allowed(&match_target(url)) {
                    RobotsVerdict::Allowed
                } else {
                    RobotsVerdict::Disallowed
                }
            }
        }
    }

    /// The Crawl-delay of the group that applies to us; `None` when there is none or the
    /// site is not [`RobotsState::Handled`].
    pub fn crawl_delay(&self) -> Option<CrawlDelay> {
        match &self.resolution {
            Resolution::Handled(parsed) => parsed.crawl_delay,
            _ => None,
        }
    }

    pub fn summary(&self) -> RobotsSummary {
        let parsed = match &self.resolution {
            Resolution::Handled(parsed) => Some(parsed),
            _ => None,
        };
        let error = match self.resolution {
            Resolution::Error(phase) => Some(phase),
            _ => None,
        };
        RobotsSummary {
            state: self.state(),
            error,
            last_response: self.last_response,
            failures: self.failures,
            size_bytes: parsed.map(|parsed| parsed.size_bytes),
            truncated: parsed.is_some_and(|parsed| parsed.truncated),
            group: parsed
                .filter(|parsed| parsed.has_group)
                .map(|parsed| parsed.robots.user_agent().to_owned()),
            rules: parsed.map(Parsed::rule_counts),
            crawl_delay: self.crawl_delay(),
            sitemaps: parsed.map_or_else(Vec::new, |parsed| {
                let sitemaps = parsed.robots.sitemaps().iter();
                sitemaps.map(ToString::to_string).collect()
            }),
        }
    }
}

impl Parsed {
    fn new(body: &[u8], policy: &RobotsPolicy) -> Self {
        // robotxt cuts the body itself (at the last line end within the limit) and parses
        // bytes, not UTF-8: a BOM is skipped, invalid UTF-8 and binary lines are no
        // directives, so garbage parses to "no rules" and allows everything.
        let tokens = agent_tokens(body);
        let body = tokens.as_deref().unwrap_or(body);
        let robots = Robots::parse(body, policy.user_agent_token.as_str());
        let requested = robots
            .crawl_delay()
            .or_else(|| endless_delay(body, policy.user_agent_token.as_str()));
        let crawl_delay = requested.map(|requested| CrawlDelay {
            effective: requested.min(policy.max_crawl_delay),
            requested,
            capped: requested > policy.max_crawl_delay,
        });
        // `robotxt` names `*` as the group obeyed even when the file has none for `*`.
        let has_group = robots.user_agent() != robotxt::ANY_AGENT || names_any_agent(body);
        Self {
            robots,
            has_group,
            crawl_delay,
            size_bytes: body.len() as u64,
            truncated: body.len() > BODY_LIMIT,
        }
    }

    fn rule_counts(&self) -> RuleCounts {
        let rules = self.robots.rules();
        let allow = rules.iter().filter(|rule| rule.is_allow()).count();
        RuleCounts {
            allow,
            disallow: rules.len() - allow,
        }
    }
}

/// The Crawl-delay our group asked for when it is a positive number too long for a `Duration`
/// (`inf`, `1e300`, 2^64 s): [`ENDLESS`]. robotxt drops such a value as if none were given, but
/// a site that wrote one asked to be left alone as long as can be, which is the cap, not the
/// crawler's fastest pace.
///
/// robotxt keeps its groups to itself, so it is asked again, on a copy whose too-long values
/// are written `1` (padded to the same length, so its byte limit cuts at the same place): a
/// delay for us there was one of them. Only files with such a value are parsed twice.
fn endless_delay(body: &[u8], token: &str) -> Option<Duration> {
    let mut copy: Option<Vec<u8>> = None;
    let mut at = 0;
    for line in body.split_inclusive(|&b| matches!(b, b'\r' | b'\n' | b'\0')) {
        if let Some(value) = too_long_delay(line) {
            let copy = copy.get_or_insert_with(|| body.to_vec());
            let value = &mut copy[at + value.start..at + value.end];
            value.fill(b' ');
            value[0] = b'1';
        }
        at += line.len();
    }
    Robots::parse(&copy?, token).crawl_delay().map(|_| ENDLESS)
}

/// A copy of `body` whose `User-agent` values are cut to their product token, when a value
/// has more: `crawltop/1.0` and `crawltop (our bot)` name the crawler `crawltop`, as RFC 9309's
/// product token and Google's parser read them, but robotxt compares whole values. The rest
/// of a value is written as spaces, so every byte stays where it was (robotxt's byte limit cuts
/// at the same place). `None` when no value needs it: most files are parsed as they came.
fn agent_tokens(body: &[u8]) -> Option<Vec<u8>> {
    const KEYS: [&[u8]; 3] = [b"user-agent", b"user agent", b"useragent"];
    let mut copy: Option<Vec<u8>> = None;
    let mut at = 0;
    for line in body.split_inclusive(|&b| matches!(b, b'\r' | b'\n' | b'\0')) {
        if let Some(value) = directive_value(line, &KEYS) {
            let token = line[value.clone()]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic() || matches!(c, b'-' | b'_'))
                .count();
            if token > 0 && value.start + token < value.end {
                let copy = copy.get_or_insert_with(|| body.to_vec());
                copy[at + value.start + token..at + value.end].fill(b' ');
            }
        }
        at += line.len();
    }
    copy
}

/// Where the value of a line with one of `keys` is, as robotxt reads a line: the key (any
/// case) after spaces and tabs, then a colon or spaces, the value up to a `#` or the line's
/// end, trimmed of spaces and tabs.
fn directive_value(line: &[u8], keys: &[&[u8]]) -> Option<std::ops::Range<usize>> {
    let is_space = |c: &u8| *c == b' ' || *c == b'\t';
    let start = line.iter().position(|c| !is_space(c))?;
    let key = keys.iter().find(|key| {
        line[start..]
            .get(..key.len())
            .is_some_and(|k| k.eq_ignore_ascii_case(key))
    })?;
    let after_key = start + key.len();
    let spaces = line[after_key..].iter().take_while(|c| is_space(c)).count();
    let value_at = match line.get(after_key + spaces) {
        Some(b':') => after_key + spaces + 1,
        _ if spaces > 0 => after_key + spaces,
        _ => return None,
    };
    let end = line[value_at..]
        .iter()
        .position(|&c| matches!(c, b'#' | b'\r' | b'\n' | b'\0'))
        .map_or(line.len(), |end| value_at + end);
    let lead = line[value_at..end]
        .iter()
        .take_while(|c| is_space(c))
        .count();
    let trail = line[value_at..end]
        .iter()
        .rev()
        .take_while(|c| is_space(c))
        .count();
    let value = value_at + lead..end.saturating_sub(trail).max(value_at + lead);
    Some(value)
}

/// A Crawl-delay too long to count: what [`CrawlDelay::requested`] says of `inf` or `1e300`.
pub const ENDLESS: Duration = Duration::MAX;

/// Where the value of a Crawl-delay line is, when it is a positive number too long for a
/// `Duration`. The line is read as robotxt reads it: the key (any of its spellings, any case)
/// after spaces and tabs, then a colon or spaces, the value up to a `#`, trimmed.
fn too_long_delay(line: &[u8]) -> Option<std::ops::Range<usize>> {
    const KEYS: [&[u8]; 3] = [b"crawl-delay", b"crawl delay", b"crawldelay"];
    let value = directive_value(line, &KEYS)?;
    let secs: f64 = std::str::from_utf8(&line[value.clone()])
        .ok()?
        .parse()
        .ok()?;
    let too_long = secs > 0.0 && Duration::try_from_secs_f64(secs).is_err();
    too_long.then_some(value)
}

/// Whether a `User-agent: *` line is in the file (its group is the one obeyed when none names
/// us).
fn names_any_agent(body: &[u8]) -> bool {
    body.split(|&b| b == b'\n').any(|line| {
        let line = line.split(|&b| b == b'#').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        let Some((key, value)) = text.split_once(':') else {
            return false;
        };
        let key = key.trim();
        (key.eq_ignore_ascii_case("user-agent")
            || key.eq_ignore_ascii_case("useragent")
            || key.eq_ignore_ascii_case("user agent"))
            && value.trim() == "*"
    })
}

/// The path and query as matched: a literal `*` or `$` is percent-encoded, so that only a
/// rule written `%2A` or `%24` matches it (RFC 9309 section 2.2.3, figure 6), as a rule's own
/// `*` and `$` are wildcards.
fn match_target(url: &Url) -> Cow<'_, str> {
    let target = &url[Position::BeforePath..Position::AfterQuery];
    if target.contains(['*', '$']) {
        Cow::Owned(target.replace('*', "%2A").replace('$', "%24"))
    } else {
        Cow::Borrowed(target)
    }
}

fn serialize_millis<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "crawltop";

    fn policy() -> RobotsPolicy {
        RobotsPolicy::new(TOKEN)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn url(path: &str) -> Url {
        Url::parse(&format!("https://example.com{path}")).expect("test URL parses")
    }

    /// A site whose robots.txt `body` came back 200, read by the crawler named `token`.
    fn handled_as(token: &str, body: &[u8]) -> SiteRobots {
        let mut site = SiteRobots::discovered();
        let outcome = site.on_response(200, body, None, &RobotsPolicy::new(token));
        assert_eq!(outcome, RobotsOutcome::Resolved);
        assert_eq!(site.state(), RobotsState::Handled);
        site
    }

    fn handled(body: &str) -> SiteRobots {
        handled_as(TOKEN, body.as_bytes())
    }

    fn allowed(site: &SiteRobots, path: &str) -> bool {
        site.is_allowed(&url(path))
    }

    // RFC 9309 section 5.1, "Simple Example", verbatim but for the closing "EOF" marker.
    const RFC_5_1: &str = "User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot
";

    #[test]
    fn rfc_5_1_star_group_applies_to_an_unnamed_crawler() {
        let site = handled(RFC_5_1);
        assert!(allowed(&site, "/publications/"));
        assert!(
            allowed(&site, "/publications/chart.gif"),
            "longer Allow beats *.gif$"
        );
        assert!(allowed(&site, "/index.html"));
        assert!(!allowed(&site, "/example/"));
        assert!(!allowed(&site, "/example/page.html"));
        assert!(!allowed(&site, "/images/logo.gif"));
        assert!(
            allowed(&site, "/images/logo.gif?v=2"),
            "$ anchors at the end of the query"
        );
    }

    #[test]
    fn rfc_5_1_foobot_may_fetch_two_paths_only() {
        let site = handled_as("foobot", RFC_5_1.as_bytes());
        assert!(allowed(&site, "/example/page.html"));
        assert!(allowed(&site, "/example/allowed.gif"));
        assert!(!allowed(&site, "/example/other.html"));
        assert!(!allowed(&site, "/publications/"));
        assert!(!allowed(&site, "/"));
    }

    #[test]
    fn rfc_5_1_barbot_and_bazbot_share_one_group() {
        for token in ["barbot", "bazbot"] {
            let site = handled_as(token, RFC_5_1.as_bytes());
            assert!(!allowed(&site, "/example/page.html"), "{token}");
            assert!(allowed(&site, "/example/other.html"), "{token}");
            assert!(
                allowed(&site, "/images/logo.gif"),
                "{token}: the * group is not merged in"
            );
        }
    }

    #[test]
    fn rfc_5_1_quxbot_empty_last_group_is_unrestricted() {
        let site = handled_as("quxbot", RFC_5_1.as_bytes());
        assert!(allowed(&site, "/example/page.html"));
        assert!(allowed(&site, "/images/logo.gif"));
        assert_eq!(site.summary().group.as_deref(), Some("quxbot"));
    }

    #[test]
    fn rfc_5_2_longest_match_wins() {
        let body =
            "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n";
        let site = handled_as("foobot", body.as_bytes());
        assert!(!allowed(&site, "/example/page/disallowed.gif"));
        assert!(allowed(&site, "/example/page/"));
        // The RFC's prose names ".../disallow.gif" (a known typo): the longer rule does not
        // match that URL, so the shorter Allow decides.
        assert!(allowed(&site, "/example/page/disallow.gif"));
    }

    #[test]
    fn rfc_5_2_longest_match_wins_whatever_the_order() {
        let body =
            "User-Agent: foobot\nDisallow: /example/page/disallowed.gif\nAllow: /example/page/\n";
        let site = handled_as("foobot", body.as_bytes());
        assert!(!allowed(&site, "/example/page/disallowed.gif"));
        assert!(allowed(&site, "/example/page/other.gif"));
    }

    #[test]
    fn a_group_only_for_another_agent_leaves_us_unrestricted() {
        let site = handled("User-agent: Googlebot\nDisallow: /\n");
        assert!(allowed(&site, "/"));
        assert!(allowed(&site, "/anything/at/all"));
        // No group names us or `*`: none is obeyed (the detail says "no group for crawltop").
        assert_eq!(site.summary().group, None);
    }

    #[test]
    fn our_group_replaces_the_star_group() {
        // RFC 9309 2.2.1: the matching group is obeyed, the "*" group only when none matches.
        let site =
            handled("User-agent: *\nDisallow: /\n\nUser-agent: crawltop\nDisallow: /private\n");
        assert!(allowed(&site, "/public"));
        assert!(!allowed(&site, "/private/x"));
    }

    #[test]
    fn user_agent_matching_ignores_case() {
        // RFC 9309 2.2.1: "Crawlers MUST use case-insensitive matching".
        for line in [
            "User-agent: CrawlTop",
            "USER-AGENT: CRAWLTOP",
            "user-agent: crawltop",
        ] {
            let site = handled(&format!("{line}\nDisallow: /x\n"));
            assert!(!allowed(&site, "/x"), "{line}");
        }
        let site = handled_as("CRAWLTOP", b"User-agent: crawltop\nDisallow: /x\n");
        assert!(!allowed(&site, "/x"));
    }

    /// Audit 28 #3: a group's `User-agent` value names a product token; what follows it (a
    /// version, a comment without `#`) does not stop the group applying, as in Google's parser.
    #[test]
    fn a_group_named_with_a_version_or_more_applies_to_its_product_token() {
        for line in [
            "User-agent: crawltop/1.0",
            "User-agent: CrawlTop/2 (+https://example.org)",
            "user-agent:crawltop bot",
            "User-agent:   crawltop/1.0   ",
        ] {
            let body = format!("User-agent: *\nAllow: /\n\n{line}\nDisallow: /private/\n");
            let site = handled(&body);
            assert!(!allowed(&site, "/private/x.html"), "{line}");
            assert!(allowed(&site, "/public.html"), "{line}");
            assert_eq!(site.summary().group.as_deref(), Some("crawltop"), "{line}");
        }
        // Another crawler's token that starts like ours is not ours, nor is ours a prefix of it.
        for line in ["User-agent: crawltopper/1.0", "User-agent: crawl/1.0"] {
            let site = handled(&format!("{line}\nDisallow: /\n"));
            assert!(allowed(&site, "/page"), "{line}");
        }
        // The cut keeps every byte in place: a Crawl-delay after it is read as before.
        let site = handled("User-agent: crawltop/1.0\nCrawl-delay: 3\nDisallow: /x\n");
        assert_eq!(
            site.crawl_delay().map(|c| c.effective),
            Some(Duration::from_secs(3))
        );
    }

    /// A crawl sent under another name obeys that name's group: the policy's token comes from
    /// the User-Agent (`crate::config::product_token`).
    #[test]
    fn a_crawl_under_another_name_obeys_that_names_group() {
        let body = b"User-agent: auditbot\nDisallow: /\n\nUser-agent: *\nAllow: /\n";
        let token = crate::config::product_token("auditbot/1.0 (+mailto:audit@example.invalid)");
        assert_eq!(token, "auditbot");
        assert!(!allowed(&handled_as(token, body), "/p1.html"));
        assert!(allowed(&handled_as("crawltop", body), "/p1.html"));
    }

    #[test]
    fn the_whole_user_agent_header_matches_no_named_group() {
        // Why the policy takes the product token: an exact match on the header finds nothing.
        let body = b"User-agent: crawltop\nDisallow: /\n";
        let site = handled_as("crawltop/0.1 (+https://example.org/bot)", body);
        assert!(allowed(&site, "/page"));
    }

    #[test]
    fn rfc_2_2_1_groups_for_the_same_agent_are_merged() {
        // Figure 2.
        let site = handled(
            "user-agent: crawltop\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: crawltop\ndisallow: /baz\n",
        );
        for path in ["/foo", "/bar", "/baz"] {
            assert!(!allowed(&site, path), "{path}");
        }
        assert_eq!(
            site.summary().rules,
            Some(RuleCounts {
                allow: 0,
                disallow: 3
            })
        );
    }

    #[test]
    fn rfc_2_2_1_without_our_group_the_star_group_applies() {
        // Figure 3.
        let site = handled(
            "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n",
        );
        assert!(!allowed(&site, "/foo"));
        assert!(!allowed(&site, "/bar"));
        assert!(allowed(&site, "/baz"));
    }

    #[test]
    fn rfc_2_2_1_without_our_group_or_a_star_group_no_rules_apply() {
        let site = handled("user-agent: BazBot\ndisallow: /\n");
        assert!(allowed(&site, "/baz"));
    }

    #[test]
    fn rfc_2_2_2_matching_is_case_sensitive_and_starts_at_the_first_octet() {
        let site = handled("User-agent: *\nDisallow: /fish\n");
        assert!(!allowed(&site, "/fish"));
        assert!(!allowed(&site, "/fish.html"));
        assert!(!allowed(&site, "/fishheads/yummy.html"));
        assert!(allowed(&site, "/Fish.asp"));
        assert!(allowed(&site, "/catfish"));
        assert!(allowed(&site, "/desert/fish"));
    }

    #[test]
    fn rfc_2_2_2_allow_beats_disallow_at_equal_length() {
        for body in [
            "User-agent: *\nDisallow: /folder\nAllow: /folder\n",
            "User-agent: *\nAllow: /folder\nDisallow: /folder\n",
        ] {
            let site = handled(body);
            assert!(allowed(&site, "/folder/page.html"), "{body:?}");
        }
    }

    #[test]
    fn rfc_2_2_2_no_matching_rule_allows() {
        let site = handled("User-agent: *\nDisallow: /private\n");
        assert!(allowed(&site, "/public"));
    }

    #[test]
    fn rfc_2_2_2_robots_txt_itself_is_always_allowed() {
        let site = handled("User-agent: *\nDisallow: /\n");
        assert!(allowed(&site, "/robots.txt"));
        assert!(!allowed(&site, "/robots.txt.bak"));
    }

    #[test]
    fn rfc_2_2_2_rules_before_the_first_group_are_ignored() {
        let site = handled("Disallow: /early\nUser-agent: *\nDisallow: /late\n");
        assert!(allowed(&site, "/early"));
        assert!(!allowed(&site, "/late"));
    }

    #[test]
    fn rfc_2_2_2_figure_4_query_is_part_of_the_match() {
        let site = handled("User-agent: *\nDisallow: /foo/bar?baz=quz\n");
        assert!(!allowed(&site, "/foo/bar?baz=quz"));
        assert!(!allowed(&site, "/foo/bar?baz=quz&more=1"));
        assert!(allowed(&site, "/foo/bar?baz=other"));
        assert!(allowed(&site, "/foo/bar"));
    }

    #[test]
    fn rfc_2_2_2_figure_4_reserved_characters_match_as_written() {
        // Row 2. Reserved characters are not bridged (see the module comment): a rule matches
        // the URL written the same way, literal or encoded.
        let literal = handled("User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n");
        assert!(!allowed(&literal, "/foo/bar?baz=https://foo.bar"));
        let encoded = handled("User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n");
        assert!(!allowed(&encoded, "/foo/bar?baz=https%3A%2F%2Ffoo.bar"));
        assert!(
            !allowed(&encoded, "/foo/bar?baz=https%3a%2f%2ffoo.bar"),
            "hex case is ignored"
        );
        assert!(allowed(&encoded, "/foo/bar?baz=https://foo.bar"));
    }

    #[test]
    fn rfc_2_2_2_figure_4_non_ascii_is_matched_percent_encoded() {
        // Rows 3 and 4: U+30C4 is %E3%83%84 whether the rule or the URL writes it raw.
        for rule in ["/foo/bar/ツ", "/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"] {
            let site = handled(&format!("User-agent: *\nDisallow: {rule}\n"));
            assert!(!allowed(&site, "/foo/bar/ツ"), "{rule}");
            assert!(!allowed(&site, "/foo/bar/%E3%83%84"), "{rule}");
            assert!(allowed(&site, "/foo/bar/baz"), "{rule}");
        }
    }

    #[test]
    fn rfc_2_2_2_figure_4_encoded_unreserved_characters_are_decoded() {
        // Row 5: /foo/bar/%62%61%7A is matched as /foo/bar/baz, on either side.
        let site = handled("User-agent: *\nDisallow: /foo/bar/%62%61%7A\n");
        assert!(!allowed(&site, "/foo/bar/baz"));
        let site = handled("User-agent: *\nDisallow: /foo/bar/baz\n");
        assert!(!allowed(&site, "/foo/bar/%62%61%7A"));
        let site = handled("User-agent: *\nDisallow: /~joe/\n");
        assert!(!allowed(&site, "/%7Ejoe/index.html"));
    }

    #[test]
    fn an_encoded_slash_is_not_a_slash() {
        let site = handled("User-agent: *\nDisallow: /a%2Fb\n");
        assert!(allowed(&site, "/a/b"));
        assert!(!allowed(&site, "/a%2fb"));
    }

    #[test]
    fn rfc_2_2_3_wildcard_matches_any_run_of_characters() {
        let site = handled("User-agent: *\nDisallow: /this/*/exactly\nDisallow: /*.php\n");
        assert!(!allowed(&site, "/this/a/b/exactly"));
        assert!(!allowed(&site, "/this//exactly"));
        assert!(allowed(&site, "/this/exactly"));
        assert!(!allowed(&site, "/index.php"));
        assert!(!allowed(&site, "/folder/file.php?x=1"));
        assert!(allowed(&site, "/windows.PHP"));
    }

    #[test]
    fn rfc_2_2_3_dollar_anchors_the_end() {
        let site = handled("User-agent: *\nDisallow: /this/path/exactly$\nDisallow: /*.gif$\n");
        assert!(!allowed(&site, "/this/path/exactly"));
        assert!(allowed(&site, "/this/path/exactly/more"));
        assert!(allowed(&site, "/this/path/exactly?q"));
        assert!(!allowed(&site, "/a/b.gif"));
        assert!(allowed(&site, "/a/b.gif?size=large"));
        assert!(allowed(&site, "/a/b.gifs"));
    }

    #[test]
    fn rfc_2_2_3_anchored_allow_of_the_root_only() {
        let site = handled("User-agent: *\nAllow: /$\nDisallow: /\n");
        assert!(allowed(&site, "/"));
        assert!(!allowed(&site, "/page.html"));
    }

    #[test]
    fn rfc_2_2_3_figure_6_encoded_special_characters_match_literally() {
        let site = handled(
            "User-agent: *\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\n",
        );
        assert!(!allowed(&site, "/path/file-with-a-*.html"));
        assert!(allowed(&site, "/path/file-with-a-b.html"));
        assert!(!allowed(&site, "/path/foo-$"));
        assert!(allowed(&site, "/path/foo-"));
    }

    #[test]
    fn rfc_2_2_3_comments_are_ignored() {
        let site = handled(
            "# comment on its own line\nUser-agent: * # us too\nDisallow: /x # comment in line\n",
        );
        assert!(!allowed(&site, "/x"));
        assert!(allowed(&site, "/y"));
    }

    #[test]
    fn rfc_2_2_4_a_sitemap_line_does_not_end_a_group() {
        let site =
            handled("User-agent: crawltop\nSitemap: https://example.com/s.xml\nDisallow: /x\n");
        assert!(!allowed(&site, "/x"));
        assert_eq!(site.summary().sitemaps, ["https://example.com/s.xml"]);
    }

    #[test]
    fn the_fragment_is_not_matched() {
        // `$` would not match if the fragment were part of the matched text.
        let site = handled("User-agent: *\nDisallow: /page$\n");
        assert!(!allowed(&site, "/page#section"));
        assert!(allowed(&site, "/page?q#section"));
    }

    #[test]
    fn crawl_delay_of_our_group_is_parsed() {
        let site =
            handled("User-agent: *\nCrawl-delay: 9\n\nUser-agent: crawltop\nCrawl-delay: 5\n");
        let expected = CrawlDelay {
            effective: secs(5),
            requested: secs(5),
            capped: false,
        };
        assert_eq!(site.crawl_delay(), Some(expected));
    }

    #[test]
    fn crawl_delay_may_be_fractional() {
        let site = handled("User-agent: *\nCrawl-delay: 0.25\n");
        let delay = site.crawl_delay().expect("a Crawl-delay was given");
        assert_eq!(delay.effective, Duration::from_millis(250));
        assert!(!delay.capped);
    }

    #[test]
    fn crawl_delay_above_the_maximum_is_capped() {
        let site = handled("User-agent: *\nCrawl-delay: 3600\n");
        let expected = CrawlDelay {
            effective: secs(30),
            requested: secs(3600),
            capped: true,
        };
        assert_eq!(site.crawl_delay(), Some(expected));
    }

    #[test]
    fn crawl_delay_at_the_maximum_is_not_capped() {
        let site = handled("User-agent: *\nCrawl-delay: 30\n");
        assert_eq!(site.crawl_delay().map(|delay| delay.capped), Some(false));
    }

    #[test]
    fn crawl_delay_of_another_group_or_invalid_is_ignored() {
        let other =
            handled("User-agent: slowbot\nCrawl-delay: 10\n\nUser-agent: *\nDisallow: /x\n");
        assert_eq!(other.crawl_delay(), None);
        for value in ["-5", "soon", "NaN", "-inf", "0x10", ""] {
            let site = handled(&format!("User-agent: *\nCrawl-delay: {value}\n"));
            assert_eq!(site.crawl_delay(), None, "{value:?}");
        }
    }

    #[test]
    fn a_crawl_delay_too_long_to_count_is_the_maximum() {
        // robotxt drops these as if no delay were asked: the crawler's fastest pace.
        for value in [
            "inf",
            "+inf",
            "1e300",
            "1e400",
            "18446744073709551616",
            "Infinity",
        ] {
            for spelling in ["Crawl-delay: ", "crawl delay ", "CRAWLDELAY:\t"] {
                let file = format!("User-agent: *\n{spelling}{value} # forever\r\n");
                let expected = CrawlDelay {
                    effective: secs(30),
                    requested: ENDLESS,
                    capped: true,
                };
                assert_eq!(handled(&file).crawl_delay(), Some(expected), "{file:?}");
            }
        }
        // Only our group's: another agent's endless delay, or one before any group, is not.
        for file in [
            "User-agent: slowbot\nCrawl-delay: inf\n\nUser-agent: *\nDisallow: /x\n",
            "Crawl-delay: inf\nUser-agent: *\nDisallow: /x\n",
            "User-agent: *\nCrawl-delayed: inf\n",
        ] {
            assert_eq!(handled(file).crawl_delay(), None, "{file:?}");
        }
        // A delay that counts, beside an endless one in the same group, is the smaller.
        let endless = handled("User-agent: *\nCrawl-delay: inf\n").crawl_delay();
        assert_eq!(
            endless.map(|d| d.asked()).as_deref(),
            Some("too long to count")
        );
        let json = serde_json::to_value(endless).expect("json");
        assert_eq!(json["requested_ms"], u64::MAX);
        let both = handled("User-agent: *\nCrawl-delay: inf\nCrawl-delay: 3\n");
        assert_eq!(
            both.crawl_delay().map(|d| d.asked()).as_deref(),
            Some("3 s")
        );
        assert_eq!(both.crawl_delay().map(|d| d.requested), Some(secs(3)));
        // The file is cut at the byte limit where it was: a line that ends beyond it (and that
        // written shorter would end within) is not read.
        let mut file = b"User-agent: *\nDisallow: /x\n".to_vec();
        file.resize(BODY_LIMIT - 18, b'#');
        file.extend_from_slice(b"\nCrawl-delay: 1e300\n");
        assert_eq!(file.len(), BODY_LIMIT + 2);
        assert_eq!(handled_as(TOKEN, &file).crawl_delay(), None);
        file.drain(30..32);
        let within = handled_as(TOKEN, &file).crawl_delay();
        assert_eq!(within.map(|d| d.requested), Some(ENDLESS));
    }

    #[test]
    fn client_errors_mean_no_robots_txt_and_everything_allowed() {
        for status in [400, 401, 403, 404, 410, 451, 499] {
            let mut site = SiteRobots::discovered();
            let outcome =
                site.on_response(status, b"User-agent: *\nDisallow: /\n", None, &policy());
            assert_eq!(outcome, RobotsOutcome::Resolved, "{status}");
            assert_eq!(site.state(), RobotsState::Unexisting, "{status}");
            assert!(allowed(&site, "/private"), "{status}");
            assert_eq!(site.crawl_delay(), None, "{status}");
        }
    }

    #[test]
    fn a_server_error_allows_nothing_and_is_retried() {
        let mut site = SiteRobots::discovered();
        let outcome = site.on_response(503, b"", None, &policy());
        assert_eq!(outcome, RobotsOutcome::Retry { after: secs(1) });
        assert_eq!(site.state(), RobotsState::Error);
        assert!(!allowed(&site, "/"));
        assert_eq!(site.verdict(&url("/")), RobotsVerdict::Pending);
        assert_eq!(
            site.summary().last_response,
            Some(RobotsResponse::Status(503))
        );
    }

    #[test]
    fn retries_back_off_exponentially() {
        let mut site = SiteRobots::discovered();
        let waits: Vec<_> = [500, 502, 503, 504]
            .into_iter()
            .map(|status| site.on_response(status, b"", None, &policy()))
            .collect();
        let expected = [1, 2, 4, 8].map(|n| RobotsOutcome::Retry { after: secs(n) });
        assert_eq!(waits, expected);
        assert_eq!(site.summary().failures, 4);
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let mut site = SiteRobots::discovered();
        let outcome = site.on_response(503, b"", Some(secs(42)), &policy());
        assert_eq!(outcome, RobotsOutcome::Retry { after: secs(42) });
        let outcome = site.on_response(503, b"", Some(secs(86_400)), &policy());
        assert_eq!(outcome, RobotsOutcome::Retry { after: secs(300) });
    }

    #[test]
    fn the_site_is_given_up_after_max_retries() {
        let mut site = SiteRobots::discovered();
        for attempt in 1..=4 {
            let outcome = site.on_response(500, b"", None, &policy());
            assert!(
                matches!(outcome, RobotsOutcome::Retry { .. }),
                "attempt {attempt}: {outcome:?}"
            );
        }
        assert_eq!(
            site.on_response(500, b"", None, &policy()),
            RobotsOutcome::GaveUp
        );
        assert_eq!(site.state(), RobotsState::Error);
        assert_eq!(site.summary().error, Some(ErrorPhase::GaveUp));
        assert_eq!(site.verdict(&url("/")), RobotsVerdict::Disallowed);
        assert!(!allowed(&site, "/"));
        assert_eq!(
            site.on_unreachable(&policy()),
            RobotsOutcome::GaveUp,
            "stays given up"
        );
    }

    #[test]
    fn zero_retries_gives_up_on_the_first_failure() {
        let policy = RobotsPolicy {
            max_retries: 0,
            ..policy()
        };
        let mut site = SiteRobots::discovered();
        assert_eq!(site.on_unreachable(&policy), RobotsOutcome::GaveUp);
    }

    #[test]
    fn too_many_requests_is_a_server_error_not_a_missing_file() {
        let mut site = SiteRobots::discovered();
        let outcome = site.on_response(429, b"", Some(secs(7)), &policy());
        assert_eq!(outcome, RobotsOutcome::Retry { after: secs(7) });
        assert_eq!(site.state(), RobotsState::Error);
        assert!(!allowed(&site, "/"));
    }

    #[test]
    fn statuses_that_should_not_arrive_are_server_errors() {
        for status in [0, 100, 199, 302, 304, 600, 999, u16::MAX] {
            let mut site = SiteRobots::discovered();
            let outcome = site.on_response(status, b"User-agent: *\nAllow: /\n", None, &policy());
            assert!(matches!(outcome, RobotsOutcome::Retry { .. }), "{status}");
            assert_eq!(site.state(), RobotsState::Error, "{status}");
        }
    }

    #[test]
    fn unreachable_is_an_error_and_retried() {
        let mut site = SiteRobots::discovered();
        assert_eq!(
            site.on_unreachable(&policy()),
            RobotsOutcome::Retry { after: secs(1) }
        );
        assert_eq!(
            site.on_unreachable(&policy()),
            RobotsOutcome::Retry { after: secs(2) }
        );
        assert_eq!(site.state(), RobotsState::Error);
        assert_eq!(
            site.summary().last_response,
            Some(RobotsResponse::Unreachable)
        );
        assert!(!allowed(&site, "/"));
    }

    #[test]
    fn success_after_errors_resolves_and_resets_the_budget() {
        let mut site = SiteRobots::discovered();
        site.on_unreachable(&policy());
        site.on_response(503, b"", None, &policy());
        let outcome = site.on_response(200, b"User-agent: *\nDisallow: /x\n", None, &policy());
        assert_eq!(outcome, RobotsOutcome::Resolved);
        assert_eq!(site.state(), RobotsState::Handled);
        assert_eq!(site.summary().failures, 0);
        assert_eq!(site.summary().error, None);
        assert!(allowed(&site, "/y"));
        assert!(!allowed(&site, "/x"));
        assert_eq!(
            site.on_unreachable(&policy()),
            RobotsOutcome::Retry { after: secs(1) }
        );
    }

    #[test]
    fn too_many_redirects_means_unavailable() {
        let mut site = SiteRobots::discovered();
        assert_eq!(site.on_too_many_redirects(), RobotsOutcome::Resolved);
        assert_eq!(site.state(), RobotsState::Unexisting);
        assert!(allowed(&site, "/anything"));
        assert_eq!(
            site.summary().last_response,
            Some(RobotsResponse::TooManyRedirects)
        );
    }

    #[test]
    fn discovered_allows_nothing_yet() {
        let site = SiteRobots::discovered();
        assert_eq!(site.state(), RobotsState::Discovered);
        assert!(!allowed(&site, "/"));
        assert!(
            !allowed(&site, "/robots.txt"),
            "the engine fetches robots.txt on its own path"
        );
        assert_eq!(site.verdict(&url("/")), RobotsVerdict::Pending);
        assert_eq!(site.crawl_delay(), None);
    }

    #[test]
    fn skipped_allows_everything_and_ignores_responses() {
        let mut site = SiteRobots::skipped();
        assert!(allowed(&site, "/private"));
        let outcome = site.on_response(200, b"User-agent: *\nDisallow: /\n", None, &policy());
        assert_eq!(outcome, RobotsOutcome::Resolved);
        assert_eq!(site.on_unreachable(&policy()), RobotsOutcome::Resolved);
        assert_eq!(site.on_too_many_redirects(), RobotsOutcome::Resolved);
        assert_eq!(site.state(), RobotsState::Skipped);
        assert!(allowed(&site, "/private"));
    }

    /// A robots.txt of `total` bytes: a `Disallow: /early` group, comment filler, then
    /// `tail` starting at byte `tail_at`.
    fn padded(tail_at: usize, tail: &str, total: usize) -> Vec<u8> {
        let mut body = b"User-agent: *\nDisallow: /early\n".to_vec();
        while body.len() + 80 < tail_at {
            body.extend_from_slice(format!("# {}\n", "x".repeat(76)).as_bytes());
        }
        body.extend_from_slice(b"#");
        body.resize(tail_at - 1, b'x');
        body.push(b'\n');
        body.extend_from_slice(tail.as_bytes());
        while body.len() < total {
            body.extend_from_slice(b"# filler\n");
        }
        body
    }

    #[test]
    fn a_600_kib_body_is_cut_at_500_kib() {
        let body = padded(550 * 1024, "Disallow: /past-the-cut\n", 600 * 1024);
        let site = handled_as(TOKEN, &body);
        assert!(!allowed(&site, "/early"));
        assert!(allowed(&site, "/past-the-cut"));
        let summary = site.summary();
        assert!(summary.truncated);
        assert_eq!(summary.size_bytes, Some(body.len() as u64));
        assert!(body.len() >= 600 * 1024);
    }

    #[test]
    fn a_rule_crossing_the_cut_is_not_obeyed() {
        let body = padded(BODY_LIMIT - 5, "Disallow: /straddle\n", 600 * 1024);
        let site = handled_as(TOKEN, &body);
        assert!(allowed(&site, "/straddle"));
        assert!(!allowed(&site, "/early"));
    }

    #[test]
    fn a_rule_just_inside_the_limit_is_obeyed() {
        let tail = "Disallow: /inside\n";
        let body = padded(BODY_LIMIT - tail.len(), tail, BODY_LIMIT);
        assert_eq!(body.len(), BODY_LIMIT);
        let site = handled_as(TOKEN, &body);
        assert!(!allowed(&site, "/inside"));
        assert!(!site.summary().truncated);
    }

    #[test]
    fn an_empty_body_allows_everything() {
        let site = handled("");
        assert!(allowed(&site, "/"));
        assert_eq!(site.crawl_delay(), None);
        let summary = site.summary();
        assert_eq!(summary.size_bytes, Some(0));
        assert_eq!(
            summary.rules,
            Some(RuleCounts {
                allow: 0,
                disallow: 0
            })
        );
    }

    #[test]
    fn binary_garbage_parses_to_no_rules() {
        // xorshift, so the garbage is the same on every run.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let garbage: Vec<u8> = (0..64 * 1024)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed.to_le_bytes()[0]
            })
            .collect();
        let site = handled_as(TOKEN, &garbage);
        assert!(allowed(&site, "/"));
        assert!(allowed(&site, "/private"));
        let site = handled_as(
            TOKEN,
            b"\xff\xfe\x00\x01\x80\x81\xc3\x28\r\r\0\n\xf0\x28\x8c\xbc",
        );
        assert!(allowed(&site, "/"));
    }

    #[test]
    fn non_utf8_rules_are_still_obeyed_byte_for_byte() {
        // Latin-1 "café": the 0xE9 octet is percent-encoded, RFC 9309 2.2.2 lets us bridge.
        let site = handled_as(TOKEN, b"User-agent: *\nDisallow: /caf\xe9\n");
        assert!(!allowed(&site, "/caf%E9"));
        assert!(allowed(&site, "/cafe"));
    }

    #[test]
    fn a_utf8_byte_order_mark_is_skipped() {
        let site = handled_as(TOKEN, b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n");
        assert!(!allowed(&site, "/x"));
        assert!(allowed(&site, "/y"));
    }

    #[test]
    fn crlf_line_ends_are_understood() {
        let body = b"User-agent: crawltop\r\nDisallow: /x\r\nCrawl-delay: 2\r\n\r\nUser-agent: *\r\nDisallow: /\r\n";
        let site = handled_as(TOKEN, body);
        assert!(!allowed(&site, "/x"));
        assert!(allowed(&site, "/y"));
        assert_eq!(
            site.crawl_delay().map(|delay| delay.effective),
            Some(secs(2))
        );
    }

    #[test]
    fn a_file_with_groups_only_for_others_has_no_group_for_us() {
        let others = handled("User-agent: otherbot\nDisallow: /\n");
        assert_eq!(others.summary().group, None);
        let any = handled("User-agent: otherbot\nDisallow: /\n\nuser-agent : * # all\nAllow: /x\n");
        assert_eq!(any.summary().group.as_deref(), Some("*"));
        let empty = handled("");
        assert_eq!(empty.summary().group, None);
    }

    #[test]
    fn summary_describes_a_handled_site() {
        let body = "User-agent: crawltop\nAllow: /a\nDisallow: /b\nDisallow: /c\nCrawl-delay: 60\n\
                    Sitemap: https://example.com/1.xml\nSitemap: not a url\n";
        let site = handled(body);
        let expected = RobotsSummary {
            state: RobotsState::Handled,
            error: None,
            last_response: Some(RobotsResponse::Status(200)),
            failures: 0,
            size_bytes: Some(body.len() as u64),
            truncated: false,
            group: Some(TOKEN.to_owned()),
            rules: Some(RuleCounts {
                allow: 1,
                disallow: 2,
            }),
            crawl_delay: Some(CrawlDelay {
                effective: secs(30),
                requested: secs(60),
                capped: true,
            }),
            sitemaps: vec!["https://example.com/1.xml".to_owned()],
        };
        assert_eq!(site.summary(), expected);
    }

    #[test]
    fn summary_serializes_with_snake_case_and_milliseconds() {
        let mut site = handled("User-agent: *\nCrawl-delay: 1.5\n");
        let json = serde_json::to_value(site.summary()).expect("summary serializes");
        assert_eq!(json["state"], "handled");
        assert_eq!(json["last_response"]["status"], 200);
        assert_eq!(json["crawl_delay"]["effective_ms"], 1500);
        assert_eq!(json["crawl_delay"]["requested_ms"], 1500);
        site.on_unreachable(&policy());
        let json = serde_json::to_value(site.summary()).expect("summary serializes");
        assert_eq!(json["state"], "error");
        assert_eq!(json["error"], "retrying");
        assert_eq!(json["last_response"], "unreachable");
    }

    #[test]
    fn robots_state_round_trips_through_serde() {
        for state in [
            RobotsState::Discovered,
            RobotsState::Handled,
            RobotsState::Unexisting,
            RobotsState::Error,
            RobotsState::Skipped,
        ] {
            let json = serde_json::to_string(&state).expect("state serializes");
            let back: RobotsState = serde_json::from_str(&json).expect("state deserializes");
            assert_eq!(back, state);
        }
        assert_eq!(
            serde_json::to_string(&RobotsState::Unexisting).expect("serializes"),
            "\"unexisting\""
        );
    }
}
