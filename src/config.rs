//! The crawl's configuration: every knob with its default, readable from TOML.
//!
//! It owns the names, defaults and validation of the settings; the command line fills it from
//! flags (which win over a `--config` file). It never acts on them.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::scope::ScopeKind;

/// crawltop's product token: the name its default User-Agent starts with, and the one robots.txt
/// groups are matched against when a `--user-agent` names none ([`product_token`]).
pub const PRODUCT_TOKEN: &str = "crawltop";

/// The product token robots.txt groups are matched against for the User-Agent `user_agent`:
/// the letters, `-` and `_` it starts with (`auditbot` for `auditbot/1.0 (+https://...)`), as
/// RFC 9309 defines a product token and Google's parser reads one; [`PRODUCT_TOKEN`] when it
/// starts with none. A site owner blocks the name they read in their logs, so a crawl sent
/// under another name obeys that name's group.
pub fn product_token(user_agent: &str) -> &str {
    let user_agent = user_agent.trim_start();
    let end = user_agent
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(user_agent.len());
    if end == 0 {
        PRODUCT_TOKEN
    } else {
        &user_agent[..end]
    }
}

/// The default User-Agent: the product token, the version, and where to read about the bot.
pub fn default_user_agent() -> String {
    format!(
        "{PRODUCT_TOKEN}/{} (+https://github.com/crawltop/crawltop)",
        env!("CARGO_PKG_VERSION")
    )
}

/// Everything a crawl needs to know. Durations are whole milliseconds, as in the TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
// Switches are bools by nature, as on the command line.
#[allow(clippy::struct_excessive_bools)]
pub struct CrawlConfig {
    /// Where the crawl starts. The stats file shows the first [`SEEDS_SHOWN`] (a seeds file
    /// may hold millions), and how many there are.
    #[serde(serialize_with = "first_seeds")]
    pub seeds: Vec<String>,
    /// Concurrent fetches (worker slots).
    pub workers: usize,
    /// Connections to one site at a time.
    pub per_site: usize,
    /// Politeness delay between contacts of one site.
    pub delay_ms: u64,
    /// Cap on a robots.txt Crawl-delay.
    pub max_crawl_delay_ms: u64,
    /// Wait at least this factor times a site's last response time between its contacts.
    pub adaptive_delay: Option<f64>,
    /// Link depth limit: seeds are 0, links on a depth-d page are d+1.
    pub depth: Option<u32>,
    pub max_pages: Option<u64>,
    pub max_pages_per_site: Option<u64>,
    pub scope: ScopeKind,
    /// Regexes; a URL must match one of them when any are given.
    pub include: Vec<String>,
    /// Regexes; a URL matching any of them is ignored.
    pub exclude: Vec<String>,
    pub user_agent: String,
    pub ignore_robots: bool,
    pub connect_timeout_ms: u64,
    /// Total patience for one fetch: headers and body.
    pub timeout_ms: u64,
    /// Body cap, counted after decompression; the rest is dropped and the resource says so.
    pub max_body_bytes: u64,
    /// Redirect hops followed from one URL.
    pub max_redirects: u32,
    /// Retries of one URL after 429/503 answers.
    pub max_retries: u32,
    /// Retries of a robots.txt that answers 5xx or cannot be reached, before the site is given
    /// up (nothing fetched there).
    pub robots_retries: u32,
    /// How long a robots.txt answer is obeyed before the site's next contact asks again
    /// (RFC 9309 section 2.4: a cached answer SHOULD NOT be used for more than 24 hours).
    pub robots_max_age_ms: u64,
    pub cookies: bool,
    pub proxy: Option<String>,
    /// The crawl folder: page store, index and checkpoint. Locked while crawling.
    pub out: Option<PathBuf>,
    /// Which page stores to write into `out`.
    pub store: crate::store::committer::StoreKind,
    /// Start over in `out`, deleting what an earlier crawl kept there, instead of resuming it.
    pub fresh: bool,
    /// A WARC file is closed and a new one started past this size.
    pub warc_max_bytes: u64,
    /// How often the crawl folder's checkpoint is written: at most this much crawling is
    /// fetched again after a kill.
    pub checkpoint_ms: u64,
    /// With `out`: URLs each frontier queue keeps in memory; the rest wait on disk.
    pub queue_memory: usize,
    /// With `out`: results that may wait in memory for an earlier one (the reorder window)
    /// before new fetches wait; also bounded at 64 MiB of bodies.
    pub commit_window: usize,
    /// With `out`: what the index writer buffers before it writes a segment, in MB.
    pub index_memory_mb: usize,
    /// With `out`: build the full-text index (`--no-index` turns it off; no page text is
    /// extracted then).
    pub index: bool,
    /// Threads of the parse pool (parsing and `--extract`); the machine's cores by default.
    pub parse_threads: usize,
    /// `NAME=CSS[@attr]` fields extracted from every HTML page as it is parsed.
    pub extract: Vec<String>,
    /// With `out`: where the extract lines go, appended in commit order.
    pub extract_out: Option<PathBuf>,
    /// Pages larger than this get a "too large" extract line instead of a tree.
    pub extract_max_bytes: usize,
    pub stats_out: Option<PathBuf>,
    pub sites_out: Option<PathBuf>,
    pub urls_out: Option<PathBuf>,
    /// The command port's address (`--command-port`): commands as lines of text over TCP;
    /// anything but loopback needs a token.
    pub command_port: Option<std::net::SocketAddr>,
    /// A member of a shared crawl (`--cluster`) may bring no seeds: it works on the crawl's.
    #[serde(skip)]
    pub shared: bool,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            seeds: Vec::new(),
            workers: 16,
            per_site: 1,
            delay_ms: 1000,
            max_crawl_delay_ms: 30_000,
            adaptive_delay: None,
            depth: Some(20),
            max_pages: None,
            max_pages_per_site: None,
            scope: ScopeKind::Origin,
            include: Vec::new(),
            exclude: Vec::new(),
            user_agent: default_user_agent(),
            ignore_robots: false,
            connect_timeout_ms: 10_000,
            timeout_ms: 30_000,
            max_body_bytes: 10 * 1024 * 1024,
            max_redirects: 10,
            max_retries: 3,
            robots_retries: 4,
            robots_max_age_ms: 86_400_000,
            cookies: false,
            proxy: None,
            out: None,
            store: crate::store::committer::StoreKind::Warc,
            fresh: false,
            warc_max_bytes: 1 << 30,
            checkpoint_ms: 1000,
            queue_memory: 4096,
            commit_window: 4096,
            index_memory_mb: crate::index::DEFAULT_MEMORY_MB,
            index: true,
            parse_threads: default_parse_threads(),
            extract: Vec::new(),
            extract_out: None,
            extract_max_bytes: crate::extract::DEFAULT_MAX_BYTES,
            stats_out: None,
            sites_out: None,
            urls_out: None,
            command_port: None,
            shared: false,
        }
    }
}

/// The most workers a crawl may have: beyond this a typo, not a plan.
pub const MAX_WORKERS: usize = 4096;

/// The most parse threads a crawl may have: beyond this a typo, not a plan.
pub const MAX_PARSE_THREADS: usize = 1024;

/// One parse thread per core the process may use (1 when that cannot be known).
pub fn default_parse_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// A setting that cannot work, named.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("no seed URL: give at least one, on the command line or with --seeds-file")]
    NoSeeds,
    #[error("seed {seed:?} is not a valid URL: {reason}")]
    BadSeed { seed: String, reason: String },
    #[error("seed {0:?} is not an http or https URL")]
    SeedScheme(String),
    #[error("{name} must be between {min} and {max}, not {value}")]
    OutOfRange {
        name: &'static str,
        value: String,
        min: String,
        max: String,
    },
    #[error("{flag} {pattern:?} is not a valid regex: {reason}")]
    BadRegex {
        flag: &'static str,
        pattern: String,
        reason: String,
    },
    #[error("--proxy {0:?} is not a valid URL")]
    BadProxy(String),
    #[error("--user-agent must not be empty")]
    EmptyUserAgent,
    #[error(transparent)]
    Extract(#[from] crate::extract::ExtractError),
    #[error("--extract needs --extract-out FILE: where its lines go")]
    ExtractWithoutOut,
    #[error("--extract-out needs at least one --extract NAME=CSS[@attr]")]
    ExtractOutWithoutFields,
    #[error(
        "--extract-out needs --out DIR: its lines are written as pages are committed to the crawl folder, in commit order"
    )]
    ExtractOutWithoutCrawlFolder,
    #[error(
        "{first} and {second} name the same file, {path}: each output needs a file of its own (the later would replace the earlier)"
    )]
    SameOutput {
        first: &'static str,
        second: &'static str,
        path: String,
    },
    #[error("{flag} {path} is a folder: give a file's path")]
    OutputIsFolder { flag: &'static str, path: String },
    #[error(
        "{flag} {path} is {part}, which crawltop writes (and cuts back on a resume): give a path outside it"
    )]
    OutputInCrawlFolder {
        flag: &'static str,
        path: String,
        part: String,
    },
}

/// `--extract-max-bytes`, for `crawl` and `extract` alike: 0 would skip every page.
pub fn check_extract_max_bytes(max: usize) -> Result<(), ConfigError> {
    if max == 0 {
        return Err(ConfigError::OutOfRange {
            name: "--extract-max-bytes",
            value: "0".into(),
            min: "1".into(),
            max: usize::MAX.to_string(),
        });
    }
    Ok(())
}

/// What crawltop keeps in a crawl folder (`--out DIR`), by name: its checkpoint, its lock, its
/// WARC files, its mirror and its index. A file of the user's beside them is left alone; an
/// output written into one of them would destroy it, or be destroyed (audit 33).
pub const CRAWL_FOLDER_PARTS: [&str; 5] = [
    crate::store::checkpoint::STATE_FILE,
    crate::store::committer::LOCK_FILE,
    "warc",
    "pages",
    "index",
];

/// `path` as the file system will resolve it: its longest existing ancestor with symlinks and
/// `..` followed, then the rest as written (`.` dropped, `..` taking a name back), so that two
/// spellings of one file, even one not yet made, compare equal. A symlink to a file not yet
/// made is followed to where it points.
fn resolved(path: &std::path::Path) -> PathBuf {
    resolved_within(path, 8)
}

fn resolved_within(path: &std::path::Path, links: u8) -> PathBuf {
    use std::path::Component;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if links > 0
        && std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
        && std::fs::canonicalize(&path).is_err()
        && let Ok(target) = std::fs::read_link(&path)
    {
        let target = match path.parent() {
            Some(parent) if target.is_relative() => parent.join(target),
            _ => target,
        };
        return resolved_within(&target, links - 1);
    }
    let mut rest = Vec::new();
    let mut base = path.as_path();
    let mut real = loop {
        if let Ok(real) = std::fs::canonicalize(base) {
            break real;
        }
        // The last component, `..` too (which `file_name` does not give).
        match (base.parent(), base.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last.as_os_str().to_os_string());
                base = parent;
            }
            _ => break base.to_path_buf(),
        }
    };
    for name in rest.iter().rev() {
        match std::path::Path::new(name).components().next() {
            Some(Component::ParentDir) => {
                real.pop();
            }
            Some(Component::CurDir) | None => {}
            Some(_) => real.push(name),
        }
    }
    real
}

/// The file `path` names, as the file system knows it (device and inode), if it exists: one
/// file under two names (a hard link) is one file.
fn file_id(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether `a` and `b` are one file (or folder): the same one when both exist (a hard link
/// too), else the same resolved path.
pub(crate) fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (file_id(a), file_id(b)) {
        (Some(a), Some(b)) => a == b,
        _ => resolved(a) == resolved(b),
    }
}

/// Which part of the crawl folder `dir` ([`CRAWL_FOLDER_PARTS`]) `path` is or lies in, said
/// for a person (`in the crawl folder's warc (/x/crawl/warc)`), if any.
pub fn crawl_folder_part(dir: &std::path::Path, path: &std::path::Path) -> Option<String> {
    let (dir, path) = (resolved(dir), resolved(path));
    if path == dir {
        return Some(format!("the crawl folder ({}) itself", dir.display()));
    }
    let said = |part: &str| {
        format!(
            "in the crawl folder's {part} ({})",
            dir.join(part).display()
        )
    };
    if let Ok(inside) = path.strip_prefix(&dir) {
        let first = inside.components().next()?.as_os_str().to_str()?;
        return CRAWL_FOLDER_PARTS.contains(&first).then(|| said(first));
    }
    // Elsewhere, but one of the folder's files under another name (a hard link; audit 34).
    // The mirror's files lie deeper, in a folder a site; they are not looked through.
    let id = file_id(&path)?;
    CRAWL_FOLDER_PARTS
        .iter()
        .filter(|part| **part != "pages")
        .find_map(|part| {
            let part_path = dir.join(part);
            let files: Vec<PathBuf> = if part_path.is_dir() {
                std::fs::read_dir(&part_path)
                    .map(|entries| entries.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default()
            } else {
                vec![part_path]
            };
            files
                .iter()
                .any(|f| file_id(f) == Some(id))
                .then(|| said(part))
        })
}

/// The outputs a crawl writes, by flag: each a file of its own, none a folder, none inside the
/// crawl folder's own parts. `log` is `--log`, which is not a crawl setting.
pub fn check_outputs(
    out: Option<&std::path::Path>,
    outputs: &[(&'static str, Option<&std::path::Path>)],
) -> Result<(), ConfigError> {
    let given: Vec<(&'static str, &std::path::Path)> = outputs
        .iter()
        .filter_map(|&(flag, path)| path.map(|p| (flag, p)))
        .collect();
    for (i, &(flag, path)) in given.iter().enumerate() {
        if path.is_dir() {
            return Err(ConfigError::OutputIsFolder {
                flag,
                path: path.display().to_string(),
            });
        }
        if let Some(part) = out.and_then(|dir| crawl_folder_part(dir, path)) {
            return Err(ConfigError::OutputInCrawlFolder {
                flag,
                path: path.display().to_string(),
                part,
            });
        }
        if let Some(&(first, _)) = given[..i]
            .iter()
            .find(|(_, earlier)| same_file(earlier, path))
        {
            return Err(ConfigError::SameOutput {
                first,
                second: flag,
                path: path.display().to_string(),
            });
        }
    }
    Ok(())
}

impl CrawlConfig {
    pub fn checkpoint_every(&self) -> Duration {
        Duration::from_millis(self.checkpoint_ms)
    }

    pub fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_ms)
    }

    /// What a resumed crawl must be told as its first run was, by flag name: the settings that
    /// decide which URLs are fetched and what is kept of them (`--extract`). Politeness and
    /// limits may change between runs (a throttle is a resume's right); a crawl's depth or scope
    /// may not, or its folder would hold one crawl's pages under another's rules.
    pub fn resume_settings(&self) -> std::collections::BTreeMap<String, String> {
        let shared = self.shared_settings();
        let mut settings: std::collections::BTreeMap<String, String> = [
            "scope",
            "depth",
            "include",
            "exclude",
            "ignore-robots",
            "max-redirects",
        ]
        .into_iter()
        .filter_map(|k| Some((k.to_string(), shared.get(k)?.clone())))
        .collect();
        settings.insert("extract".into(), self.extract.join(" "));
        // The size cap decides which pages get fields and which a "too large" line: one file
        // under two caps is not what `crawltop extract` gives (audit 24). Kept only when it is
        // not the default, so that a folder crawled before it was kept resumes with the default.
        if !self.extract.is_empty() && self.extract_max_bytes != crate::extract::DEFAULT_MAX_BYTES {
            settings.insert(
                "extract-max-bytes".into(),
                self.extract_max_bytes.to_string(),
            );
        }
        settings
    }

    /// What every member of a shared crawl must agree on, by flag name: the first member
    /// stores these, and a member that differs is refused with the names.
    pub fn shared_settings(&self) -> std::collections::BTreeMap<String, String> {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "none".to_string());
        [
            ("scope", format!("{:?}", self.scope).to_lowercase()),
            ("depth", opt(self.depth.map(|d| d.to_string()))),
            ("delay-ms", self.delay_ms.to_string()),
            ("per-site", self.per_site.to_string()),
            ("max-crawl-delay-ms", self.max_crawl_delay_ms.to_string()),
            (
                "adaptive-delay",
                opt(self.adaptive_delay.map(|f| f.to_string())),
            ),
            ("ignore-robots", self.ignore_robots.to_string()),
            ("robots-retries", self.robots_retries.to_string()),
            ("robots-max-age-ms", self.robots_max_age_ms.to_string()),
            ("user-agent", self.user_agent.clone()),
            ("include", self.include.join(" ")),
            ("exclude", self.exclude.join(" ")),
            ("max-redirects", self.max_redirects.to_string()),
            ("max-retries", self.max_retries.to_string()),
            // A page cut at a smaller cap loses the links past it for every member: the
            // pages a crawl reaches must not hang on which member fetched them (audit 30).
            ("max-body-bytes", self.max_body_bytes.to_string()),
            // Kept crawl-wide by the pulls, so one for every member.
            ("max-pages", opt(self.max_pages.map(|n| n.to_string()))),
            (
                "max-pages-per-site",
                opt(self.max_pages_per_site.map(|n| n.to_string())),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Checks every setting and parses the seeds; the first problem is named.
    pub fn validate(&self) -> Result<Vec<url::Url>, ConfigError> {
        fn range<T: PartialOrd + ToString + Copy>(
            name: &'static str,
            value: T,
            min: T,
            max: T,
        ) -> Result<(), ConfigError> {
            if value < min || value > max {
                return Err(ConfigError::OutOfRange {
                    name,
                    value: value.to_string(),
                    min: min.to_string(),
                    max: max.to_string(),
                });
            }
            Ok(())
        }
        range("--workers", self.workers, 1, MAX_WORKERS)?;
        range("--parse-threads", self.parse_threads, 1, MAX_PARSE_THREADS)?;
        range("--per-site", self.per_site, 1, 256)?;
        range("--delay-ms", self.delay_ms, 0, 3_600_000)?;
        range(
            "--max-crawl-delay-ms",
            self.max_crawl_delay_ms,
            0,
            86_400_000,
        )?;
        range(
            "--connect-timeout-ms",
            self.connect_timeout_ms,
            1,
            3_600_000,
        )?;
        range("--timeout-ms", self.timeout_ms, 1, 86_400_000)?;
        range("--max-body-bytes", self.max_body_bytes, 1, 1 << 40)?;
        range("--max-redirects", self.max_redirects, 0, 100)?;
        range("--max-retries", self.max_retries, 0, 100)?;
        range("--robots-retries", self.robots_retries, 0, 100)?;
        range(
            "--robots-max-age-ms",
            self.robots_max_age_ms,
            1_000,
            86_400_000,
        )?;
        range("--warc-max-bytes", self.warc_max_bytes, 1 << 16, 1 << 40)?;
        // The coordinator checks on its 100 ms snapshot tick.
        range("--checkpoint-ms", self.checkpoint_ms, 100, 3_600_000)?;
        range("--queue-memory", self.queue_memory, 0, 1 << 30)?;
        range("--commit-window", self.commit_window, 1, 1 << 24)?;
        range(
            "--index-memory-mb",
            self.index_memory_mb,
            crate::index::MIN_MEMORY_MB,
            4096,
        )?;
        if let Some(f) = self.adaptive_delay
            && !(f.is_finite() && (0.0..=1000.0).contains(&f))
        {
            return Err(ConfigError::OutOfRange {
                name: "--adaptive-delay",
                value: f.to_string(),
                min: "0".into(),
                max: "1000".into(),
            });
        }
        if self.user_agent.trim().is_empty() {
            return Err(ConfigError::EmptyUserAgent);
        }
        for (flag, patterns) in [("--include", &self.include), ("--exclude", &self.exclude)] {
            for p in patterns {
                regex::Regex::new(p).map_err(|e| ConfigError::BadRegex {
                    flag,
                    pattern: p.clone(),
                    reason: e.to_string(),
                })?;
            }
        }
        if let Some(p) = &self.proxy {
            url::Url::parse(p).map_err(|_| ConfigError::BadProxy(p.clone()))?;
        }
        self.extractor()?;
        if self.seeds.is_empty() && !self.shared {
            return Err(ConfigError::NoSeeds);
        }
        let mut seeds = Vec::new();
        for s in &self.seeds {
            let url = url::Url::parse(s.trim()).map_err(|e| ConfigError::BadSeed {
                seed: s.clone(),
                reason: e.to_string(),
            })?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(ConfigError::SeedScheme(s.clone()));
            }
            seeds.push(url);
        }
        Ok(seeds)
    }

    /// The `--extract` fields, checked (a bad selector is an error before anything is
    /// fetched), with where their lines go; `None` without `--extract`.
    pub fn extractor(&self) -> Result<Option<crate::extract::Extractor>, ConfigError> {
        check_extract_max_bytes(self.extract_max_bytes)?;
        if self.extract.is_empty() {
            return match self.extract_out {
                Some(_) => Err(ConfigError::ExtractOutWithoutFields),
                None => Ok(None),
            };
        }
        let extractor = crate::extract::Extractor::new(&self.extract, self.extract_max_bytes)?;
        if self.extract_out.is_none() {
            return Err(ConfigError::ExtractWithoutOut);
        }
        if self.out.is_none() {
            return Err(ConfigError::ExtractOutWithoutCrawlFolder);
        }
        Ok(Some(extractor))
    }

    /// Compiled include and exclude patterns (after [`CrawlConfig::validate`]).
    pub fn regexes(&self) -> Result<(Vec<regex::Regex>, Vec<regex::Regex>), ConfigError> {
        let compile = |flag: &'static str, ps: &[String]| {
            ps.iter()
                .map(|p| {
                    regex::Regex::new(p).map_err(|e| ConfigError::BadRegex {
                        flag,
                        pattern: p.clone(),
                        reason: e.to_string(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok((
            compile("--include", &self.include)?,
            compile("--exclude", &self.exclude)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_seed() -> CrawlConfig {
        CrawlConfig {
            seeds: vec!["http://127.0.0.1:8000/".into()],
            ..CrawlConfig::default()
        }
    }

    /// Audit 33: two outputs on one file, an output that is a folder, or one in the crawl
    /// folder's own parts lost data; a file of the user's beside those parts is fine.
    #[test]
    fn outputs_are_files_of_their_own_outside_the_crawl_folders_parts() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("crawl");
        std::fs::create_dir_all(dir.join("warc")).expect("warc folder");
        let at = |p: &str| tmp.path().join(p);
        let check = |outputs: &[(&'static str, Option<&std::path::Path>)]| {
            check_outputs(Some(&dir), outputs).map_err(|e| e.to_string())
        };
        let (a, b) = (at("a.json"), at("sub/../a.json"));
        std::fs::create_dir(at("sub")).expect("sub");
        let same = check(&[("--stats-out", Some(&a)), ("--urls-out", Some(&b))]);
        assert!(
            same.as_ref()
                .is_err_and(|e| e.contains("--stats-out and --urls-out name the same file")),
            "{same:?}"
        );
        let folder = check(&[("--extract-out", Some(&at("sub")))]);
        assert!(
            folder.as_ref().is_err_and(|e| e.contains("is a folder")),
            "{folder:?}"
        );
        for inside in [
            "crawl/state.redb",
            "crawl/crawltop.lock",
            "crawl/warc/crawltop-00000.warc.gz",
            "crawl/index/x",
            "crawl/pages/new/file",
            "crawl/./warc/../state.redb",
        ] {
            let e = check(&[("--extract-out", Some(&at(inside)))]);
            assert!(
                e.as_ref()
                    .is_err_and(|e| e.contains("in the crawl folder's")),
                "{inside}: {e:?}"
            );
        }
        // The crawl folder itself, not yet made.
        let e = check_outputs(Some(&at("new")), &[("--log", Some(&at("new")))]);
        assert!(e.is_err_and(|e| e.to_string().contains("itself")));
        // A folder not yet made, named through a symlink to its parent and through `..`.
        std::os::unix::fs::symlink(tmp.path(), at("link")).expect("symlink");
        let e = check_outputs(
            Some(&at("new")),
            &[("--stats-out", Some(&at("link/new/../new/state.redb")))],
        );
        assert!(e.is_err_and(|e| e.to_string().contains("state.redb")));
        // Audit 34: a hard link to one of the folder's files, or to another output; a symlink
        // to an output not yet made.
        std::fs::write(dir.join("state.redb"), b"state").expect("state");
        std::fs::hard_link(dir.join("state.redb"), at("hard")).expect("hard link");
        let e = check(&[("--log", Some(&at("hard")))]);
        assert!(e.as_ref().is_err_and(|e| e.contains("state.redb")), "{e:?}");
        std::fs::write(dir.join("warc/crawltop-00000.warc.gz"), b"warc").expect("warc");
        std::fs::hard_link(dir.join("warc/crawltop-00000.warc.gz"), at("w")).expect("link");
        let e = check(&[("--extract-out", Some(&at("w")))]);
        assert!(e.as_ref().is_err_and(|e| e.contains("warc")), "{e:?}");
        std::fs::write(at("log"), b"").expect("log");
        std::fs::hard_link(at("log"), at("log2")).expect("link");
        let e = check(&[
            ("--log", Some(&at("log"))),
            ("--extract-out", Some(&at("log2"))),
        ]);
        assert!(
            e.as_ref().is_err_and(|e| e.contains("name the same file")),
            "{e:?}"
        );
        std::os::unix::fs::symlink(at("later.json"), at("sym")).expect("symlink");
        let e = check(&[
            ("--log", Some(&at("sym"))),
            ("--stats-out", Some(&at("later.json"))),
        ]);
        assert!(
            e.as_ref().is_err_and(|e| e.contains("name the same file")),
            "{e:?}"
        );
        check(&[
            ("--stats-out", Some(&at("crawl/stats.json"))),
            ("--urls-out", Some(&at("urls.jsonl"))),
            ("--sites-out", None),
            ("--extract-out", Some(&at("crawl/warc-notes.jsonl"))),
        ])
        .expect("files of the user's beside the crawl's parts");
    }

    #[test]
    fn the_product_token_is_what_the_user_agent_starts_with() {
        assert_eq!(product_token(&default_user_agent()), PRODUCT_TOKEN);
        assert_eq!(
            product_token("auditbot/1.0 (+https://a.example)"),
            "auditbot"
        );
        assert_eq!(product_token("  my_bot-2"), "my_bot-");
        assert_eq!(product_token("Mozilla/5.0 (X11)"), "Mozilla");
        for none in ["", "   ", "/1.0", "42bot", "(bot)"] {
            assert_eq!(product_token(none), PRODUCT_TOKEN, "{none:?}");
        }
    }

    #[test]
    fn the_command_port_is_a_config_key() {
        let cfg: CrawlConfig =
            toml::from_str("command_port = \"127.0.0.1:7071\"\n").expect("parses");
        assert_eq!(
            cfg.command_port,
            Some("127.0.0.1:7071".parse().expect("addr"))
        );
        assert!(toml::from_str::<CrawlConfig>("command_port = \"nowhere\"\n").is_err());
        assert_eq!(CrawlConfig::default().command_port, None);
    }

    #[test]
    fn defaults_are_valid_with_a_seed() {
        assert_eq!(with_seed().validate().map(|s| s.len()), Ok(1));
        assert_eq!(CrawlConfig::default().validate(), Err(ConfigError::NoSeeds));
    }

    #[test]
    fn each_bad_setting_is_named() {
        let cases: Vec<(CrawlConfig, &str)> = vec![
            (
                CrawlConfig {
                    workers: 0,
                    ..with_seed()
                },
                "--workers",
            ),
            (
                CrawlConfig {
                    per_site: 0,
                    ..with_seed()
                },
                "--per-site",
            ),
            (
                CrawlConfig {
                    timeout_ms: 0,
                    ..with_seed()
                },
                "--timeout-ms",
            ),
            (
                CrawlConfig {
                    adaptive_delay: Some(f64::NAN),
                    ..with_seed()
                },
                "--adaptive-delay",
            ),
            (
                CrawlConfig {
                    include: vec!["(".into()],
                    ..with_seed()
                },
                "--include",
            ),
            (
                CrawlConfig {
                    exclude: vec!["[z-a]".into()],
                    ..with_seed()
                },
                "--exclude",
            ),
            (
                CrawlConfig {
                    proxy: Some("not a url".into()),
                    ..with_seed()
                },
                "--proxy",
            ),
            (
                CrawlConfig {
                    user_agent: " ".into(),
                    ..with_seed()
                },
                "--user-agent",
            ),
            (
                CrawlConfig {
                    seeds: vec!["nope".into()],
                    ..with_seed()
                },
                "\"nope\"",
            ),
            (
                CrawlConfig {
                    seeds: vec!["ftp://x/".into()],
                    ..with_seed()
                },
                "http",
            ),
        ];
        for (cfg, needle) in cases {
            let err = cfg.validate().expect_err(needle).to_string();
            assert!(err.contains(needle), "{err} lacks {needle}");
        }
    }

    #[test]
    fn toml_with_an_unknown_key_is_refused() {
        let err = toml::from_str::<CrawlConfig>("workers = 4\nwrokers = 5\n").expect_err("typo");
        assert!(err.to_string().contains("wrokers"), "{err}");
        let ok: CrawlConfig =
            toml::from_str("workers = 4\ndelay_ms = 50\nscope = \"host\"\n").expect("valid");
        assert_eq!(
            (ok.workers, ok.delay_ms, ok.scope),
            (4, 50, ScopeKind::Host)
        );
    }
}

/// Malformed lines a seeds file's warning names one by one; the rest are counted.
pub const SEEDS_NAMED: usize = 10;

/// Seeds the stats file shows in its configuration; `seeds_total` says how many there are.
pub const SEEDS_SHOWN: usize = 100;

/// Longest line of a seeds file that is read: a URL crawltop would fetch
/// ([`crate::scope::MAX_URL_BYTES`]) with room for the spaces around it. A longer line is
/// skipped as it is read, never held whole.
pub const MAX_SEED_LINE: usize = 4 * crate::scope::MAX_URL_BYTES;

/// Writes the first [`SEEDS_SHOWN`] seeds.
fn first_seeds<S: serde::Serializer>(seeds: &[String], to: S) -> Result<S::Ok, S::Error> {
    to.collect_seq(seeds.iter().take(SEEDS_SHOWN))
}

/// What a seeds file held: its good seeds (each once), and what was wrong with the rest.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeedsFile {
    /// Good seeds, in file order, each distinct URL once (compared in canonical form).
    pub seeds: Vec<String>,
    /// The first [`SEEDS_NAMED`] malformed lines: (line number from 1, why).
    pub malformed: Vec<(u64, String)>,
    /// Every malformed line, named or not.
    pub malformed_count: u64,
    /// Lines that repeated an earlier seed.
    pub duplicates: u64,
}

impl SeedsFile {
    /// Reads seeds one line at a time: blank lines and `#` comments are skipped, a line that is
    /// not an http(s) URL with a host (or not UTF-8, or a URL longer than crawltop fetches) is
    /// counted with its number, a repeat is counted once. Memory is the good seeds plus 8 bytes
    /// each for the repeat check, whatever the file's length, and a line is held up to
    /// [`MAX_SEED_LINE`] bytes (a longer one is counted, and skipped as it is read).
    pub fn read(mut input: impl std::io::BufRead) -> std::io::Result<SeedsFile> {
        use std::io::{BufRead as _, Read as _};
        let mut out = SeedsFile::default();
        let mut seen = std::collections::HashSet::new();
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            // The line, then its CR and LF: a line end is no part of the line's length.
            let limit = MAX_SEED_LINE as u64 + 2;
            if (&mut input).take(limit).read_until(b'\n', &mut line)? == 0 {
                break;
            }
            number += 1;
            let ended = line.last() == Some(&b'\n');
            let end = if line.ends_with(b"\r\n") {
                2
            } else {
                usize::from(ended)
            };
            if line.len() - end > MAX_SEED_LINE {
                if !ended {
                    skip_line(&mut input)?;
                }
                out.malformed(number, format!("longer than {MAX_SEED_LINE} bytes"));
                continue;
            }
            let Ok(text) = std::str::from_utf8(&line) else {
                out.malformed(number, "not UTF-8".into());
                continue;
            };
            // A byte order mark some editors put at a file's start is no part of its first URL.
            let text = if number == 1 {
                text.strip_prefix('\u{feff}').unwrap_or(text)
            } else {
                text
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let mut url = match url::Url::parse(text) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {
                    url
                }
                Ok(_) => {
                    out.malformed(number, "not an http(s) URL with a host".into());
                    continue;
                }
                Err(e) => {
                    out.malformed(number, e.to_string());
                    continue;
                }
            };
            crate::canonical::canonicalize(&mut url);
            if url.as_str().len() > crate::scope::MAX_URL_BYTES {
                out.malformed(
                    number,
                    format!(
                        "a URL longer than {} bytes, which is never fetched",
                        crate::scope::MAX_URL_BYTES
                    ),
                );
                continue;
            }
            if seen.insert(crate::frontier::fingerprint(url.as_str())) {
                out.seeds.push(text.to_string());
            } else {
                out.duplicates += 1;
            }
        }
        out.seeds.shrink_to_fit();
        Ok(out)
    }

    fn malformed(&mut self, line: u64, why: String) {
        self.malformed_count += 1;
        if self.malformed.len() < SEEDS_NAMED {
            self.malformed.push((line, why));
        }
    }

    /// One warning about what was skipped, or `None` when nothing was: the malformed lines by
    /// number (the first [`SEEDS_NAMED`], then how many more), and the repeats.
    pub fn warning(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.malformed_count > 0 {
            let named: Vec<String> = self
                .malformed
                .iter()
                .map(|(n, why)| format!("line {n} ({why})"))
                .collect();
            let more = self.malformed_count - self.malformed.len() as u64;
            let rest = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            let lines = if self.malformed_count == 1 {
                "line"
            } else {
                "lines"
            };
            parts.push(format!(
                "{} malformed {lines} skipped: {}{rest}",
                self.malformed_count,
                named.join(", ")
            ));
        }
        if self.duplicates > 0 {
            parts.push(format!("{} duplicate lines counted once", self.duplicates));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Reads past the rest of the current line (its newline included) without keeping it.
fn skip_line(input: &mut impl std::io::BufRead) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            input.consume(end + 1);
            return Ok(());
        }
        let len = buf.len();
        input.consume(len);
    }
}

#[cfg(test)]
mod seeds_tests {
    use super::*;

    /// A line longer than any URL crawltop fetches is named and skipped as it is read; the
    /// lines after it are read as usual.
    /// A byte order mark at the file's start (Windows editors write one) and CRLF line ends
    /// are no part of a URL.
    #[test]
    fn a_seeds_file_with_a_byte_order_mark_and_crlf_reads_its_first_line() {
        let text = "\u{feff}http://a.test/\r\nhttp://b.test/\r\n\u{feff}http://c.test/\r\n";
        let got = SeedsFile::read(std::io::Cursor::new(text)).expect("in memory");
        assert_eq!(got.seeds, ["http://a.test/", "http://b.test/"]);
        // Only the file's start may hold one.
        assert_eq!(got.malformed_count, 1);
        assert_eq!(got.malformed[0].0, 3);
    }

    #[test]
    fn a_seeds_file_line_too_long_is_skipped_not_held() {
        let mut text = b"http://a.test/\n".to_vec();
        text.extend(format!("http://b.test/{}\n", "b".repeat(3000)).bytes());
        text.extend(format!("http://c.test/{}\n", "c".repeat(10_000_000)).bytes());
        text.extend(b"http://d.test/\n");
        text.extend(format!("http://e.test/{}", "e".repeat(100_000)).bytes());
        let got = SeedsFile::read(std::io::Cursor::new(text)).expect("in memory");
        assert_eq!(got.seeds, ["http://a.test/", "http://d.test/"]);
        assert_eq!(
            got.malformed,
            [
                (
                    2,
                    "a URL longer than 2048 bytes, which is never fetched".to_owned()
                ),
                (3, "longer than 8192 bytes".to_owned()),
                (5, "longer than 8192 bytes".to_owned()),
            ]
        );
    }

    /// The limit is the line's own bytes: a line of exactly the limit is read as a line
    /// whatever its end (LF, CRLF or the file's end), one byte more is too long.
    #[test]
    fn a_seeds_file_line_at_the_limit_is_read_whatever_its_end() {
        let at = |n: usize| format!("http://a.test/{}", "a".repeat(n - "http://a.test/".len()));
        let url_reason = "a URL longer than 2048 bytes, which is never fetched".to_owned();
        let long_reason = format!("longer than {MAX_SEED_LINE} bytes");
        for end in ["\n", "\r\n"] {
            let text = format!(
                "{}{end}{}{end}http://b.test/",
                at(MAX_SEED_LINE),
                at(MAX_SEED_LINE + 1)
            );
            let got = SeedsFile::read(std::io::Cursor::new(text)).expect("in memory");
            assert_eq!(got.seeds, ["http://b.test/"], "end {end:?}");
            assert_eq!(
                got.malformed,
                [(1, url_reason.clone()), (2, long_reason.clone())],
                "end {end:?}"
            );
        }
        for (n, reason) in [
            (MAX_SEED_LINE, url_reason),
            (MAX_SEED_LINE + 1, long_reason),
        ] {
            let got = SeedsFile::read(std::io::Cursor::new(at(n))).expect("in memory");
            assert_eq!(got.malformed, [(1, reason)], "{n} bytes at the file's end");
        }
    }

    #[test]
    fn a_seeds_file_names_its_malformed_lines_and_keeps_each_seed_once() {
        let mut text = Vec::new();
        text.extend_from_slice(b"# seeds\nhttp://a.test/\n\nHTTP://A.TEST:80/\nnot a url\n");
        text.extend_from_slice(b"ftp://b.test/\n\xff\xfe\nhttp://b.test/x\n");
        for _ in 0..20 {
            text.extend_from_slice(b"http://\n");
        }
        text.extend_from_slice(b"http://a.test/");
        let got = SeedsFile::read(&text[..]).expect("reads");
        assert_eq!(got.seeds, ["http://a.test/", "http://b.test/x"]);
        assert_eq!(got.duplicates, 2);
        assert_eq!(got.malformed_count, 23);
        assert_eq!(got.malformed.len(), SEEDS_NAMED);
        let lines: Vec<u64> = got.malformed.iter().map(|(n, _)| *n).collect();
        assert_eq!(lines[..4], [5, 6, 7, 9]);
        let warning = got.warning().expect("a warning");
        assert!(
            warning.starts_with("23 malformed lines skipped: line 5 (")
                && warning.contains("line 7 (not UTF-8)")
                && warning.contains("and 13 more; 2 duplicate lines counted once"),
            "{warning}"
        );
        assert_eq!(
            SeedsFile::read(&b"http://x.test/\n"[..])
                .expect("reads")
                .warning(),
            None
        );
    }
}
