//! The project's own web: a generator of synthetic sites and a small server for them.
//!
//! The demo, the tests and the benchmarks crawl this web on loopback, never anything else. It
//! owns generation ([`generator`]), serving ([`serve`]), the misbehaving paths ([`hostile`]),
//! the link farm's pages made on request ([`farm`]),
//! the server's request log ([`log`]) and the right answers ([`manifest`]). It never depends
//! on the crawl engine: it is the world the engine is judged in, from the outside.
//!
//! Cross-site links work with OS-chosen ports because generated files never hold a port: they
//! hold the placeholder `{{origin:NAME}}` (e.g. `{{origin:site03}}/guide/p7.html`), and the
//! server replaces it with `http://127.0.0.1:PORT` of that site in every text body it serves.

pub mod farm;
pub mod generator;
mod hostile;
pub mod log;
pub mod manifest;
mod reply;
pub mod rng;
pub mod serve;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use farm::LinkFarm;
pub use generator::{GenError, GenOptions, HeavyOptions, generate};
pub use hostile::{DISTINCT_WORDS, HostileOptions, LONG_TITLE_BYTES};
pub use log::{RequestLog, RequestRecord, ServerStats, SiteStats};
pub use manifest::{Manifest, SiteKind, SiteManifest};
pub use rng::SplitMix64;
pub use serve::{Listening, PORTS_FILE, ServeError, ServeOptions, Server};

/// File in a site folder saying what kind of site it is; absent means a normal static site.
pub const SITE_CONFIG_FILE: &str = ".crawltop-site.json";

/// The contents of [`SITE_CONFIG_FILE`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteConfig {
    pub kind: SiteKind,
    /// A link farm's parameters: its pages are made from them when asked, never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm: Option<LinkFarm>,
}

const PLACEHOLDER_OPEN: &str = "{{origin:";
const PLACEHOLDER_CLOSE: &str = "}}";

/// The placeholder for a site's origin in generated files.
pub fn placeholder(site: &str) -> String {
    format!("{PLACEHOLDER_OPEN}{site}{PLACEHOLDER_CLOSE}")
}

/// Replaces every `{{origin:NAME}}` whose NAME is in `origins`; unknown names stay as they are.
/// `None` when there was nothing to replace (the common case for a non-HTML file).
pub fn fill_origins(body: &[u8], origins: &BTreeMap<String, String>) -> Option<Vec<u8>> {
    let open = PLACEHOLDER_OPEN.as_bytes();
    let finder = memchr::memmem::Finder::new(open);
    let first = finder.find(body)?;
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(&body[..first]);
    let mut rest = &body[first..];
    loop {
        // `rest` starts with the opening of a placeholder here.
        let after = &rest[open.len()..];
        let close = memchr::memmem::find(&after[..after.len().min(256)], b"}}");
        let name = close.and_then(|c| std::str::from_utf8(&after[..c]).ok());
        if let (Some(c), Some(origin)) = (close, name.and_then(|n| origins.get(n))) {
            out.extend_from_slice(origin.as_bytes());
            rest = &after[c + PLACEHOLDER_CLOSE.len()..];
        } else {
            out.extend_from_slice(open);
            rest = after;
        }
        let Some(i) = finder.find(rest) else {
            out.extend_from_slice(rest);
            return Some(out);
        };
        out.extend_from_slice(&rest[..i]);
        rest = &rest[i..];
    }
}

/// Why a [`TestWeb`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum TestWebError {
    #[error(transparent)]
    Gen(#[from] GenError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error("temporary folder: {0}")]
    Io(#[from] std::io::Error),
}

/// A generated web served in-process on loopback: what every integration test crawls.
///
/// The folder is temporary; the server shuts down and the folder is removed on drop.
#[derive(Debug)]
pub struct TestWeb {
    server: Server,
    manifest: Manifest,
    // Dropped after the server's shutdown is triggered (field order), so no file vanishes
    // under a response being read.
    dir: tempfile::TempDir,
}

impl TestWeb {
    /// Generates a web with `gen` and serves it with the default options (records kept).
    pub async fn start(web: GenOptions) -> Result<TestWeb, TestWebError> {
        Self::start_with(web, |_| {}).await
    }

    /// As [`TestWeb::start`], every response `latency` late (see [`ServeOptions::latency`]).
    pub async fn start_with_latency(
        web: GenOptions,
        latency: std::time::Duration,
    ) -> Result<TestWeb, TestWebError> {
        Self::start_with(web, |o| o.latency = latency).await
    }

    /// As [`TestWeb::start`], with the serving options adjusted by `tune`.
    pub async fn start_with(
        web: GenOptions,
        tune: impl FnOnce(&mut ServeOptions),
    ) -> Result<TestWeb, TestWebError> {
        let dir = tempfile::Builder::new().prefix("crawltop-web-").tempdir()?;
        let out = dir.path().join("web");
        let out2 = out.clone();
        let manifest = tokio::task::spawn_blocking(move || generate(&out2, &web, false))
            .await
            .map_err(std::io::Error::other)??;
        let mut opts = ServeOptions::new(&out);
        tune(&mut opts);
        let server = Server::start(opts).await?;
        Ok(TestWeb {
            server,
            manifest,
            dir,
        })
    }

    /// The origin of a site, e.g. `http://127.0.0.1:41234`.
    ///
    /// # Panics
    /// If the web has no such site: a test asked for something its own web does not have.
    pub fn origin(&self, site: &str) -> String {
        self.server
            .origin(site)
            .unwrap_or_else(|| panic!("the test web has no site {site:?}"))
            .to_string()
    }

    /// A full URL: the site's origin and a path.
    pub fn url(&self, site: &str, path: &str) -> String {
        format!("{}{path}", self.origin(site))
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn log(&self) -> &RequestLog {
        self.server.log()
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The served folder (site folders, `manifest.json`, `ports.json`).
    pub fn dir(&self) -> std::path::PathBuf {
        self.dir.path().join("web")
    }

    /// The site name for an origin, if it is one of this web's.
    pub fn site_of(&self, origin: &str) -> Option<&str> {
        self.server
            .listening()
            .sites
            .iter()
            .find(|(_, o)| o.as_str() == origin.trim_end_matches('/'))
            .map(|(name, _)| name.as_str())
    }

    /// Shuts the server down and waits until it has.
    pub async fn shutdown(self) {
        self.server.shutdown();
        self.server.finished().await;
    }
}

impl Drop for TestWeb {
    fn drop(&mut self) {
        self.server.shutdown();
    }
}

/// Loads a served web's folder listing (`ports.json`), as written by `serve`.
pub fn read_listening(dir: &Path) -> std::io::Result<Listening> {
    let bytes = std::fs::read(dir.join(PORTS_FILE))?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("site00".to_string(), "http://127.0.0.1:1000".to_string()),
            ("site01".to_string(), "http://127.0.0.1:1001".to_string()),
        ])
    }

    #[test]
    fn placeholders_are_filled() {
        let body = b"<a href=\"{{origin:site01}}/p.html\">x</a>{{origin:site00}}";
        let out = fill_origins(body, &origins()).expect("has placeholders");
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            "<a href=\"http://127.0.0.1:1001/p.html\">x</a>http://127.0.0.1:1000"
        );
    }

    #[test]
    fn unknown_and_broken_placeholders_stay() {
        let body = b"{{origin:nope}}/a {{origin:site00 {{origin:";
        let out = fill_origins(body, &origins()).expect("has placeholders");
        assert_eq!(out, body.to_vec());
        assert_eq!(fill_origins(b"no placeholder", &origins()), None);
    }
}
