//! `/metrics`: the snapshot's numbers for Prometheus, through the Prometheus project's client
//! (`prometheus-client`): typed counters and gauges with help and units, written by its
//! encoder from a collector over the snapshot, then given as the text format 0.0.4 that every
//! scraper reads.
//!
//! It owns the metric names, types, label sets and help lines (a contract with dashboards:
//! add, never rename) and the bound on per-site series. It must never keep state between
//! scrapes: the snapshot is the only source, read once per new snapshot.

use std::fmt::Write as _;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use crate::site_table::{SiteTable, most_queued};
use crate::snapshot::{CommandSource, FaultKind, RunState, SiteRow, Snapshot};

/// Per-site series in `/metrics` are cut here, so a crawl of a million sites cannot make a
/// scrape of a million lines.
pub const METRICS_SITE_LIMIT: usize = 1000;

/// The snapshot's numbers in the Prometheus text exposition format 0.0.4: every family has
/// HELP and TYPE lines, units in the names, `_total` on counters; per-site series are bounded
/// by [`METRICS_SITE_LIMIT`].
pub fn metrics_text(snap: &Arc<Snapshot>) -> String {
    let keys = snap
        .sites
        .iter()
        .enumerate()
        .map(|(i, row)| (row.queued, u32::try_from(i).unwrap_or(u32::MAX)));
    let top = most_queued(keys, METRICS_SITE_LIMIT)
        .into_iter()
        .filter_map(|i| snap.sites.get(i as usize).cloned())
        .collect();
    encode(snap, top)
}

/// [`metrics_text`] of a live snapshot, whose site rows are in the live table: the per-site
/// series take the [`METRICS_SITE_LIMIT`] most queued sites from it in one pass, without a
/// copy of every row.
pub fn metrics_text_live(snap: &Arc<Snapshot>, sites: &SiteTable) -> String {
    encode(snap, sites.top_queued(METRICS_SITE_LIMIT))
}

fn encode(snap: &Arc<Snapshot>, top: Vec<SiteRow>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SnapshotMetrics(snap.clone(), top)));
    let mut open = String::new();
    // Writing to a String cannot fail, and the collector only writes.
    let _ = prometheus_client::encoding::text::encode_registry(&mut open, &registry);
    text_format_004(&open)
}

/// `OpenMetrics` text, as the client writes it, into the format 0.0.4 that Prometheus asked for
/// as `text/plain; version=0.0.4`: a counter family is named with its `_total` (as its
/// samples are), there is no `# UNIT` (the unit is already in the name) and no `# EOF`, and
/// infinities are `+Inf` and `-Inf`.
fn text_format_004(open: &str) -> String {
    let mut out = String::with_capacity(open.len());
    let mut help: Option<&str> = None;
    for line in open.lines() {
        if line.starts_with("# HELP ") {
            help = Some(line);
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let counter = rest.ends_with(" counter");
            if let Some(h) = help.take() {
                let (name, doc) = h["# HELP ".len()..].split_once(' ').unwrap_or((h, ""));
                let suffix = if counter { "_total" } else { "" };
                let _ = writeln!(out, "# HELP {name}{suffix} {doc}");
            }
            if let Some((name, "counter")) = rest.split_once(' ') {
                let _ = writeln!(out, "# TYPE {name}_total counter");
            } else {
                out.push_str(line);
                out.push('\n');
            }
        } else if line.starts_with('#') {
            // `# UNIT` and `# EOF` have no place in 0.0.4.
        } else {
            match line.rsplit_once(' ') {
                Some((series, "inf")) => {
                    let _ = writeln!(out, "{series} +Inf");
                }
                Some((series, "-inf")) => {
                    let _ = writeln!(out, "{series} -Inf");
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// One snapshot, collected at scrape time, with the sites its per-site series cover (most
/// queued first, at most [`METRICS_SITE_LIMIT`]).
#[derive(Debug)]
struct SnapshotMetrics(Arc<Snapshot>, Vec<SiteRow>);

impl Collector for SnapshotMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let e = &mut Families(&mut encoder);
        let s = &*self.0;
        let states = [
            (RunState::Running, "running"),
            (RunState::Paused, "paused"),
            (RunState::Stopping, "stopping"),
            (RunState::Finished, "finished"),
        ];
        e.family(
            "crawltop_state",
            "Where the crawl stands: 1 for the current state, 0 for the others.",
            None,
            states.map(|(st, name)| ([("state", name)], gauge(u64::from(s.state == st)))),
        )?;
        e.one(
            "crawltop_elapsed",
            "Time since this run of the crawl started (a resume starts again at 0).",
            Some(&Unit::Seconds),
            &ConstGauge::new(s.elapsed_s),
        )?;
        e.one(
            "crawltop_crawl_elapsed",
            "Time crawled by every run of this crawl, this one included: the span of the \
             counters, which are the whole crawl's.",
            Some(&Unit::Seconds),
            &ConstGauge::new(s.crawl_elapsed_s),
        )?;
        workers_metrics(e, s)?;
        scheduler_metrics(e, s)?;
        outcome_metrics(e, s)?;
        site_metrics(e, s, &self.1)?;
        progress_metrics(e, s)
    }
}

/// The families of one scrape, each described once and then given its samples.
struct Families<'a, 'b>(&'a mut DescriptorEncoder<'b>);

impl Families<'_, '_> {
    /// A family of labelled samples; its HELP and TYPE are written even when it has none.
    fn family<L, M>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<&Unit>,
        samples: impl IntoIterator<Item = (L, M)>,
    ) -> std::fmt::Result
    where
        L: EncodeLabelSet,
        M: EncodeMetric + TypedMetric,
    {
        let mut metric = self.0.encode_descriptor(name, help, unit, M::TYPE)?;
        for (labels, value) in samples {
            value.encode(metric.encode_family(&labels)?)?;
        }
        Ok(())
    }

    /// A family of one sample without labels.
    fn one<M: EncodeMetric + TypedMetric>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<&Unit>,
        value: &M,
    ) -> std::fmt::Result {
        value.encode(self.0.encode_descriptor(name, help, unit, M::TYPE)?)
    }
}

fn gauge(n: impl TryInto<u64>) -> ConstGauge<u64> {
    ConstGauge::new(n.try_into().unwrap_or(u64::MAX))
}

fn counter(n: impl TryInto<u64>) -> ConstCounter<u64> {
    ConstCounter::new(n.try_into().unwrap_or(u64::MAX))
}

fn seconds(ms: u64) -> ConstGauge<f64> {
    ConstGauge::new(ms as f64 / 1000.0)
}

fn workers_metrics(e: &mut Families, s: &Snapshot) -> std::fmt::Result {
    let w = &s.workers;
    e.one(
        "crawltop_workers",
        "Worker slots (concurrent fetches allowed).",
        None,
        &gauge(w.total),
    )?;
    e.family(
        "crawltop_workers_by_state",
        "Workers idle, blocked (holding work that must wait) and busy, now.",
        None,
        [("idle", w.idle), ("blocked", w.blocked), ("busy", w.busy)]
            .map(|(st, n)| ([("state", st)], gauge(n))),
    )?;
    e.family(
        "crawltop_workers_blocked_by",
        "Blocked workers by what they wait for.",
        None,
        [
            ("politeness", w.blocked_by.politeness),
            ("robots", w.blocked_by.robots),
            ("store", w.blocked_by.store),
            ("parse", w.blocked_by.parse),
        ]
        .map(|(r, n)| ([("reason", r)], gauge(n))),
    )?;
    e.family(
        "crawltop_workers_busy_by",
        "Busy workers by phase of the fetch.",
        None,
        [
            ("connecting", w.busy_by.connecting),
            ("waiting_first_byte", w.busy_by.waiting_first_byte),
            ("receiving", w.busy_by.receiving),
            ("parsing", w.busy_by.parsing),
        ]
        .map(|(p, n)| ([("phase", p)], gauge(n))),
    )?;
    let shares = |window: &'static str, idle: f64, blocked: f64, busy: f64| {
        [("idle", idle), ("blocked", blocked), ("busy", busy)].map(move |(st, pct)| {
            (
                [("state", st), ("window", window)],
                ConstGauge::new(pct / 100.0),
            )
        })
    };
    e.family(
        "crawltop_workers_share",
        "Share of workers in each state (0 to 1), now and averaged over the last 10 seconds.",
        Some(&Unit::Other("ratio".into())),
        shares("now", w.idle_pct, w.blocked_pct, w.busy_pct)
            .into_iter()
            .chain(shares(
                "10s",
                w.avg_10s.idle_pct,
                w.avg_10s.blocked_pct,
                w.avg_10s.busy_pct,
            )),
    )
}

fn scheduler_metrics(e: &mut Families, s: &Snapshot) -> std::fmt::Result {
    let sc = &s.scheduler;
    e.one(
        "crawltop_scheduler_queued_tasks",
        "Tasks waiting for a worker, spider and thinker.",
        None,
        &gauge(sc.queued),
    )?;
    e.one(
        "crawltop_scheduler_assigned_tasks",
        "Tasks a worker is on now.",
        None,
        &gauge(sc.assigned),
    )?;
    e.one(
        "crawltop_scheduler_blocked_tasks",
        "Page fetches waiting for their site's robots.txt.",
        None,
        &gauge(sc.blocked),
    )?;
    e.one(
        "crawltop_scheduler_done_tasks",
        "Tasks finished, spider and thinker.",
        None,
        &counter(sc.done),
    )?;
    let kinds = [("spider", sc.spider), ("thinker", sc.thinker)];
    e.family(
        "crawltop_tasks_queued",
        "Queued tasks by kind (spider: touches the network; thinker: parses and decides).",
        None,
        kinds.map(|(k, c)| ([("kind", k)], gauge(c.queued))),
    )?;
    e.family(
        "crawltop_tasks_assigned",
        "Assigned tasks by kind.",
        None,
        kinds.map(|(k, c)| ([("kind", k)], gauge(c.assigned))),
    )?;
    e.family(
        "crawltop_tasks_done",
        "Finished tasks by kind.",
        None,
        kinds.map(|(k, c)| ([("kind", k)], counter(c.done))),
    )?;

    let r = &s.resources;
    for (key, value, help) in [
        (
            "discovered",
            r.discovered,
            "Distinct URLs the crawl learned of.",
        ),
        (
            "fetched",
            r.fetched,
            "URLs fetched (whatever came of the parse).",
        ),
        ("parsed", r.parsed, "Fetched URLs parsed as HTML."),
        (
            "fetch_error",
            r.fetch_error,
            "URLs whose fetch failed for good.",
        ),
        (
            "fetch_ignored",
            r.fetch_ignored,
            "URLs not fetched: out of scope, too deep, over a limit or a trap.",
        ),
        (
            "fetch_forbidden",
            r.fetch_forbidden,
            "URLs not fetched because robots.txt disallows them.",
        ),
        (
            "parse_error",
            r.parse_error,
            "Fetched URLs whose parse failed.",
        ),
        (
            "parse_ignored",
            r.parse_ignored,
            "Fetched URLs not parsed (not HTML).",
        ),
        (
            "text_cut",
            r.text_cut,
            "Parsed pages whose text the index took only in part (too many distinct words).",
        ),
    ] {
        e.one(
            &format!("crawltop_resources_{key}"),
            help,
            None,
            &counter(value),
        )?;
    }
    Ok(())
}

fn outcome_metrics(e: &mut Families, s: &Snapshot) -> std::fmt::Result {
    let er = &s.errors;
    e.family(
        "crawltop_errors",
        "Errors and skipped URLs by class.",
        None,
        [
            ("timeout", er.timeout),
            ("connect", er.connect),
            ("http_4xx", er.http_4xx),
            ("http_5xx", er.http_5xx),
            ("too_large", er.too_large),
            ("robots_forbidden", er.robots_forbidden),
            ("robots_unreachable", er.robots_unreachable),
            ("ignored", er.ignored),
            ("too_many_redirects", er.too_many_redirects),
            ("other", er.other),
        ]
        .map(|(c, n)| ([("class", c)], counter(n))),
    )?;
    e.one(
        "crawltop_retries",
        "Fetches repeated after a 429/503 or a failure.",
        None,
        &counter(er.retries),
    )?;
    e.family(
        "crawltop_http_responses",
        "HTTP responses by status code.",
        None,
        s.http
            .status
            .iter()
            .map(|(code, n)| ([("status", code.as_str())], counter(*n))),
    )?;
    e.one(
        "crawltop_http_body",
        "Response body bytes received (after decompression).",
        Some(&Unit::Bytes),
        &counter(s.http.bytes),
    )?;

    let p = &s.politeness;
    e.one(
        "crawltop_politeness_delay",
        "The global politeness delay between contacts of one site, as set now.",
        Some(&Unit::Seconds),
        &seconds(p.delay_ms),
    )?;
    e.one(
        "crawltop_politeness_per_site_connections",
        "Connections allowed to one site at a time.",
        None,
        &gauge(p.per_site),
    )?;
    e.one(
        "crawltop_politeness_max_crawl_delay",
        "The cap on a robots.txt Crawl-delay.",
        Some(&Unit::Seconds),
        &seconds(p.max_crawl_delay_ms),
    )?;
    if let Some(factor) = p.adaptive_factor {
        e.one(
            "crawltop_politeness_adaptive_factor",
            "Adaptive politeness: a site waits this factor times its last response time.",
            None,
            &ConstGauge::new(factor),
        )?;
    }
    Ok(())
}

fn site_metrics(e: &mut Families, s: &Snapshot, top: &[SiteRow]) -> std::fmt::Result {
    e.one(
        "crawltop_sites",
        "Sites (origins) discovered; the per-site series cover at most the first 1000 by queued URLs.",
        None,
        &gauge((s.site_count as usize).max(s.sites.len())),
    )?;
    let limit_note = format!("; at most the first {METRICS_SITE_LIMIT} sites by queued URLs.");
    let per_site = |value: fn(&SiteRow) -> u64| {
        top.iter()
            .map(move |row| ([("origin", row.origin.as_str())], value(row)))
    };
    e.family(
        "crawltop_site_queued_urls",
        &format!("URLs queued for a site{limit_note}"),
        None,
        per_site(|r| r.queued).map(|(l, n)| (l, gauge(n))),
    )?;
    e.family(
        "crawltop_site_in_flight_fetches",
        &format!("Fetches in flight to a site{limit_note}"),
        None,
        per_site(|r| r.in_flight).map(|(l, n)| (l, gauge(n))),
    )?;
    e.family(
        "crawltop_site_fetched",
        &format!("Pages fetched from a site{limit_note}"),
        None,
        per_site(|r| r.fetched).map(|(l, n)| (l, counter(n))),
    )?;
    e.family(
        "crawltop_site_errors",
        &format!("Errors on a site{limit_note}"),
        None,
        per_site(|r| r.errors).map(|(l, n)| (l, counter(n))),
    )?;
    e.family(
        "crawltop_site_delay",
        &format!("The delay between contacts now in force for a site{limit_note}"),
        Some(&Unit::Seconds),
        per_site(|r| r.delay_ms).map(|(l, ms)| (l, seconds(ms))),
    )
}

fn progress_metrics(e: &mut Families, s: &Snapshot) -> std::fmt::Result {
    e.one(
        "crawltop_fetch_rate_pages_per_second",
        "Pages fetched per second over the last few seconds.",
        None,
        &ConstGauge::new(s.rates.pages_per_s),
    )?;
    e.one(
        "crawltop_receive_rate_bytes_per_second",
        "Body bytes received per second over the last few seconds.",
        None,
        &ConstGauge::new(s.rates.bytes_per_s),
    )?;

    let c = &s.commit;
    e.one(
        "crawltop_commit_next_sequence",
        "The next sequence number to commit: everything below it is decided.",
        None,
        &gauge(c.next_seq),
    )?;
    e.one(
        "crawltop_commit_waiting_results",
        "Results that arrived but wait for an earlier one.",
        None,
        &gauge(c.waiting),
    )?;
    e.one(
        "crawltop_commit_in_flight_fetches",
        "Dispatched fetches not back yet.",
        None,
        &gauge(c.in_flight),
    )?;
    e.one(
        "crawltop_commit_rescheduled",
        "Fetches dispatched again because their result was overdue.",
        None,
        &counter(c.rescheduled),
    )?;
    e.one(
        "crawltop_commit_committed",
        "Exchanges written to the store.",
        None,
        &counter(c.committed),
    )?;
    e.one(
        "crawltop_store_failed",
        "1 when the store has hit a write error (the crawl pauses on it), else 0.",
        None,
        &gauge(u64::from(c.error.is_some())),
    )?;
    let faults = [
        (FaultKind::Store, "store"),
        (FaultKind::Spill, "spill"),
        (FaultKind::State, "state"),
    ];
    e.family(
        "crawltop_paused_on",
        "1 for the failure the engine paused the crawl on by itself (the page store, the \
         frontier's spill file, the state file), until a resume takes it back; else 0.",
        None,
        faults.map(|(what, name)| {
            let on = s.fault.as_ref().is_some_and(|f| f.what == what);
            ([("what", name)], gauge(u64::from(on)))
        }),
    )?;

    let sources = [
        (CommandSource::Key, "key"),
        (CommandSource::Api, "api"),
        (CommandSource::Port, "port"),
        (CommandSource::Signal, "signal"),
        (CommandSource::Library, "library"),
        (CommandSource::Cluster, "cluster"),
        (CommandSource::Headless, "headless"),
    ];
    e.family(
        "crawltop_commands",
        "Commands given while running, by source.",
        None,
        sources.map(|(src, name)| {
            let n = s.commands.iter().filter(|c| c.source == src).count();
            ([("source", name)], counter(n))
        }),
    )
}

#[cfg(test)]
pub(super) mod tests;
