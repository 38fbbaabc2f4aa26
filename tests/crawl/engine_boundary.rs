//! The engine's edges, judged from the outside: a locked crawl folder is refused before
//! anything else is said, more workers mean more back queues (more sites at once), and a
//! frontier of the test's own making drives the coordinator through the frontier boundary.

use std::collections::{BTreeSet, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawltop::engine::{self, Command};
use crawltop::frontier::{HeapEntry, Queued, Schedule, SiteId, SiteView, Tick};
use crawltop::snapshot::CommandSource;
use crawltop::testweb::manifest::SiteKind;
use crawltop::testweb::serve::SlowPages;
use crawltop::testweb::{GenOptions, RequestRecord, TestWeb};

use crate::engine::{config, seeds};
use crate::util::{Finish, PATIENCE, bin, read_stderr_until};

#[tokio::test]
async fn a_locked_folder_is_refused_once_before_any_resuming() {
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let url = web.url("site00", "/");
    let crawl = |extra: &[&str]| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &url, "--headless", "--checkpoint-ms", "100"])
            .args(extra)
            .arg("--out")
            .arg(out.path())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        cmd
    };
    // A crawl that leaves an unfinished checkpoint behind.
    let mut first = crawl(&["--delay-ms", "100"])
        .stderr(Stdio::null())
        .spawn()
        .expect("first");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 6))
        .await
        .expect("the first crawl runs");
    first.kill().await.expect("kill");
    // A second one resumes it and holds the folder.
    let mut holder = crawl(&["--delay-ms", "100"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("holder");
    let mut holder_err = holder.stderr.take().expect("stderr");
    read_stderr_until(&mut holder_err, |s| s.contains("resuming the crawl in")).await;
    // A third one must refuse, and say only that.
    let third = crawl(&[]).finish().await.expect("third");
    let err = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(2), "{err}");
    assert!(!err.contains("resuming"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, not {}: {err}", lines.len());
    assert_eq!(
        err.matches("in use by another crawltop").count(),
        1,
        "said once: {err}"
    );
    let pid = holder.id().expect("pid").to_string();
    assert!(
        err.contains(&format!("pid {pid}")),
        "names the holder: {err}"
    );
    holder.kill().await.expect("kill");
}

/// The most requests to distinct sites the server was serving at one moment.
fn most_sites_at_once(records: &[RequestRecord]) -> usize {
    records
        .iter()
        .map(|r| {
            records
                .iter()
                .filter(|o| o.t_us <= r.t_us && r.t_us < o.done_us)
                .map(|o| o.site.as_str())
                .collect::<BTreeSet<_>>()
                .len()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn raising_workers_mid_crawl_lets_that_many_sites_be_fetched_at_once() {
    // Every page answers late, so fetches overlap whenever the crawl lets them.
    let web = TestWeb::start_with(GenOptions::new(12, 20).crawl_delay_s(0.01), |o| {
        o.slow = Some(SlowPages {
            one_in: 1,
            delay: Duration::from_millis(300),
        });
    })
    .await
    .expect("web");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.workers = 1;
    let handle = engine::spawn(cfg).expect("starts");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 3))
        .await
        .expect("crawl under way");
    assert_eq!(most_sites_at_once(&web.log().records()), 1, "one worker");
    // With B still 3 (three times one worker), no more than 3 sites could be fetched at once.
    handle
        .commander()
        .send(Command::SetWorkers(8), CommandSource::Library);
    tokio::time::timeout(
        PATIENCE,
        web.log().wait_until(|r| most_sites_at_once(r) >= 8),
    )
    .await
    .expect("eight sites fetched at once");
    handle
        .commander()
        .send(Command::Stop, CommandSource::Library);
    // Bounded: a stop that is never carried out fails the test instead of hanging it.
    tokio::time::timeout(PATIENCE, handle.finished())
        .await
        .expect("the crawl ends within PATIENCE of the stop")
        .expect("ends");
}

/// What the scripted frontier saw and did.
#[derive(Debug, Default)]
struct Script {
    /// URLs handed out by `take`, in order.
    handed: Vec<String>,
    /// Every "site done at t" the coordinator reported.
    completed: Vec<(SiteId, Tick)>,
    /// Every URL pushed, in order.
    pushed: Vec<String>,
    /// Slots given by `next_site`.
    slots: usize,
}

/// A frontier double: one contact at a time, no politeness of its own, and of the URLs
/// queued it always hands out the greatest (so the crawl goes in descending URL order, which
/// no breadth-first frontier would).
#[derive(Default)]
struct Descending {
    origins: Vec<String>,
    /// (site, row id, URL)
    pending: Vec<(SiteId, u32, String)>,
    urls: HashMap<u32, String>,
    held: BTreeSet<SiteId>,
    in_flight: usize,
    script: Arc<Mutex<Script>>,
}

impl Descending {
    fn greatest(&self, of_site: Option<SiteId>) -> Option<usize> {
        self.pending
            .iter()
            .enumerate()
            .filter(|(_, (s, _, _))| of_site.is_none_or(|o| o == *s) && !self.held.contains(s))
            .max_by(|a, b| a.1.2.cmp(&b.1.2))
            .map(|(i, _)| i)
    }
}

impl Schedule for Descending {
    fn site(&mut self, origin: &str) -> SiteId {
        let i = self
            .origins
            .iter()
            .position(|o| o == origin)
            .unwrap_or_else(|| {
                self.origins.push(origin.to_string());
                self.origins.len() - 1
            });
        SiteId::from_index(u32::try_from(i).expect("few sites"))
    }
    fn origin(&self, site: SiteId) -> &str {
        &self.origins[site.index()]
    }
    fn push(&mut self, site: SiteId, url: Queued<'_>) {
        self.urls.insert(url.id, url.url.to_string());
        self.pending.push((site, url.id, url.url.to_string()));
        self.script
            .lock()
            .expect("script")
            .pushed
            .push(url.url.to_string());
    }
    fn push_first(&mut self, site: SiteId, id: u32) {
        let url = self.urls.get(&id).cloned().unwrap_or_default();
        self.pending.push((site, id, url));
    }
    fn remove_site_items(&mut self, site: SiteId) -> Vec<u32> {
        let (gone, kept) = self.pending.drain(..).partition(|(s, _, _)| *s == site);
        self.pending = kept;
        gone.into_iter()
            .map(|(_, id, _): (SiteId, u32, String)| id)
            .collect()
    }
    fn next_ready_at(&self) -> Option<Tick> {
        (self.in_flight == 0 && self.greatest(None).is_some()).then_some(Tick::ZERO)
    }
    fn next_site(&mut self, _now: Tick) -> Option<SiteId> {
        if self.in_flight > 0 {
            return None;
        }
        let i = self.greatest(None)?;
        self.in_flight += 1;
        self.script.lock().expect("script").slots += 1;
        Some(self.pending[i].0)
    }
    fn take(&mut self, site: SiteId) -> Option<u32> {
        let i = self.greatest(Some(site))?;
        let (_, id, url) = self.pending.remove(i);
        self.script.lock().expect("script").handed.push(url);
        Some(id)
    }
    fn hold(&mut self, site: SiteId) {
        self.held.insert(site);
    }
    fn unhold(&mut self, site: SiteId, _now: Tick) {
        self.held.remove(&site);
    }
    fn complete(&mut self, site: SiteId, now: Tick) {
        self.in_flight -= 1;
        self.script
            .lock()
            .expect("script")
            .completed
            .push((site, now));
    }
    fn try_contact(&mut self, _: SiteId, _: Tick) -> bool {
        if self.in_flight > 0 {
            return false;
        }
        self.in_flight += 1;
        true
    }
    fn set_site_delay(&mut self, _: SiteId, _: Duration) {}
    fn set_default_delay(&mut self, _: Duration) {}
    fn defer(&mut self, _: SiteId, _: Tick) {}
    fn assume_contact_at(&mut self, _: Tick) {}
    fn set_back_queues(&mut self, _: usize) {}
    fn next_allowed(&self, _: SiteId) -> Tick {
        Tick::ZERO
    }
    fn delay(&self, _: SiteId) -> Duration {
        Duration::ZERO
    }
    fn per_site(&self) -> usize {
        1
    }
    fn len(&self) -> usize {
        self.pending.len()
    }
    fn sites(&self) -> impl Iterator<Item = SiteView<'_>> {
        std::iter::empty()
    }
    fn heap_top(&self, _: usize) -> Vec<HeapEntry> {
        Vec::new()
    }
}

#[tokio::test]
async fn the_coordinator_fetches_in_the_order_its_frontier_gives() {
    let web = TestWeb::start(GenOptions::new(1, 25).seed(5))
        .await
        .expect("web");
    let script = Arc::new(Mutex::new(Script::default()));
    let frontier = Descending {
        script: script.clone(),
        ..Descending::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let urls_out = dir.path().join("urls.jsonl");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.workers = 4;
    cfg.urls_out = Some(urls_out.clone());
    let handle = engine::spawn_with_frontier(cfg, frontier).expect("starts");
    // Bounded: a crawl that never ends fails the test instead of hanging it.
    let summary = tokio::time::timeout(Duration::from_secs(120), handle.finished())
        .await
        .expect("the crawl ends by itself")
        .expect("ends");
    assert!(summary.completed, "the crawl ends when the double is empty");
    let script = script.lock().expect("script");
    let log = web.log().records();
    // robots.txt first, then the pages in exactly the order the double handed them out.
    assert_eq!(log[0].path, "/robots.txt");
    let served: Vec<&str> = log[1..].iter().map(|r| r.path.as_str()).collect();
    // What robots.txt disallows is handed out too, and dropped by the coordinator unfetched.
    let forbidden: BTreeSet<String> = std::fs::read_to_string(&urls_out)
        .expect("urls file")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json line"))
        .filter(|v| v["state"] == "fetch_forbidden")
        .map(|v| v["url"].as_str().expect("url").to_string())
        .collect();
    assert!(
        !forbidden.is_empty(),
        "the site's robots.txt disallows some pages"
    );
    // The request targets the server saw, of the URLs the crawl fetched, in a given order.
    let targets = |urls: &[String]| -> Vec<String> {
        urls.iter()
            .filter(|u| !forbidden.contains(*u))
            .map(|u| {
                let u = url::Url::parse(u).expect("url");
                match u.query() {
                    Some(q) => format!("{}?{q}", u.path()),
                    None => u.path().to_string(),
                }
            })
            .collect()
    };
    let handed = targets(&script.handed);
    assert_eq!(served, handed);
    assert!(handed.len() > 10, "{handed:?}");
    // The double's order is not the order URLs were found in.
    let pushed = targets(&script.pushed);
    assert_ne!(handed, pushed[..handed.len()]);
    // Every slot was reported done, in time order: the robots.txt one, each page's, and those
    // whose URLs were all forbidden (unused).
    assert_eq!(script.completed.len(), script.slots);
    assert!(script.slots >= log.len());
    assert!(script.completed.windows(2).all(|w| w[0].1 <= w[1].1));
}
