//! The exposition read back by a strict reader of the text format 0.0.4 and by the lenient
//! `prometheus-parse`, against the snapshot's numbers.

// The values compared are exact decimal renderings of the fixture's numbers.
#![allow(clippy::float_cmp)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::*;
use crate::snapshot::CommandRecord;

/// Label names and values, in order.
type Labels = Vec<(String, String)>;

fn text_of(snap: &Snapshot) -> String {
    metrics_text(&Arc::new(snap.clone()))
}

fn fixture() -> Snapshot {
    let mut s = Snapshot {
        state: RunState::Paused,
        elapsed_s: 12.5,
        crawl_elapsed_s: 40.25,
        ..Snapshot::default()
    };
    s.workers.total = 8;
    s.workers.busy = 5;
    s.workers.idle = 3;
    s.workers.busy_pct = 62.5;
    s.scheduler.queued = 40;
    s.scheduler.done = 900;
    s.scheduler.spider.done = 450;
    s.resources.discovered = 1000;
    s.resources.fetched = 450;
    s.errors.timeout = 2;
    s.errors.retries = 4;
    s.http.status.insert("200".into(), 440);
    s.http.status.insert("404".into(), 10);
    s.http.bytes = 123_456_789;
    s.politeness.delay_ms = 1500;
    s.politeness.per_site = 1;
    s.politeness.adaptive_factor = Some(2.0);
    s.rates.pages_per_s = f64::NAN;
    s.rates.bytes_per_s = f64::INFINITY;
    s.commands.push(CommandRecord {
        at_s: 1.0,
        source: CommandSource::Api,
        command: "pause".into(),
        by: None,
    });
    s.sites.push(SiteRow {
        origin: "http://a.example".into(),
        queued: 7,
        fetched: 300,
        errors: 1,
        delay_ms: 250,
        ..SiteRow::default()
    });
    s
}

/// One sample as the strict reader saw it.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::control) struct StrictSample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

fn valid_name(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Labels after the `{`: decoded pairs and the text after the `}`.
fn strict_labels(mut rest: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        let eq = rest.find('=').ok_or("a label without =")?;
        let name = &rest[..eq];
        if !valid_name(name) || name.contains(':') {
            return Err(format!("bad label name {name:?}"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("an unquoted label value")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err("an unterminated label value".into()),
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    _ => return Err("a bad escape".into()),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((name.to_string(), value));
        rest = &rest[close + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        } else {
            return Err("labels not closed".into());
        }
    }
}

/// A strict reader of the text format 0.0.4, for what the lenient `prometheus-parse`
/// skips silently: every family opens with HELP then TYPE, once; its samples follow
/// without interruption; names, labels, escapes and values are well formed; counters and
/// only counters end in `_total`; no series twice.
pub(in crate::control) fn strict_parse(
    text: &str,
) -> Result<(BTreeMap<String, String>, Vec<StrictSample>), String> {
    if !text.ends_with('\n') {
        return Err("the text must end with a newline".into());
    }
    let mut types = BTreeMap::new();
    let mut help: Option<&str> = None;
    let mut current: Option<&str> = None;
    let mut series = BTreeSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, doc) = rest.split_once(' ').ok_or(format!("bare HELP: {line}"))?;
            if !valid_name(name) || doc.trim().is_empty() || types.contains_key(name) {
                return Err(format!("bad or repeated HELP: {line}"));
            }
            help = Some(name);
            current = None;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').ok_or(format!("bare TYPE: {line}"))?;
            if help.take() != Some(name) {
                return Err(format!("TYPE without its HELP just before: {line}"));
            }
            match kind {
                "counter" if name.ends_with("_total") => {}
                "gauge" if !name.ends_with("_total") => {}
                _ => return Err(format!("bad type, or a name that does not fit it: {line}")),
            }
            types.insert(name.to_string(), kind.to_string());
            current = Some(name);
        } else if line.starts_with('#') || line.is_empty() {
            return Err(format!("stray line: {line:?}"));
        } else {
            let name_end = line.find(['{', ' ']).ok_or(format!("no value: {line}"))?;
            let name = &line[..name_end];
            if current != Some(name) {
                return Err(format!("sample outside its family: {line}"));
            }
            let rest = &line[name_end..];
            let (labels, rest) = match rest.strip_prefix('{') {
                Some(after) => strict_labels(after).map_err(|e| format!("{e}: {line}"))?,
                None => (Vec::new(), rest),
            };
            let text = rest.strip_prefix(' ').ok_or(format!("no space: {line}"))?;
            let value = match text {
                "NaN" => f64::NAN,
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                t if !t.contains(char::is_alphabetic) => {
                    t.parse().map_err(|_| format!("bad value: {line}"))?
                }
                _ => return Err(format!("bad value: {line}")),
            };
            if !series.insert(format!("{name}{labels:?}")) {
                return Err(format!("series twice: {line}"));
            }
            samples.push(StrictSample {
                name: name.to_string(),
                labels,
                value,
            });
        }
    }
    if help.is_some() {
        return Err("HELP without TYPE at the end".into());
    }
    Ok((types, samples))
}

pub(in crate::control) fn lenient_parse(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("prometheus-parse reads it")
}

fn sample<'a>(
    samples: &'a [StrictSample],
    name: &str,
    labels: &[(&str, &str)],
) -> Option<&'a StrictSample> {
    samples.iter().find(|s| {
        s.name == name
            && s.labels.len() == labels.len()
            && labels
                .iter()
                .all(|(k, v)| s.labels.iter().any(|(k2, v2)| k2 == k && v2 == v))
    })
}

#[test]
fn metrics_are_well_formed_and_hold_the_snapshot_numbers() {
    let snap = fixture();
    let text = text_of(&snap);
    let (types, samples) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let scrape = lenient_parse(&text);
    assert_eq!(
        scrape.samples.len(),
        samples.len(),
        "prometheus-parse skipped lines"
    );
    assert_eq!(scrape.docs.len(), types.len());
    for name in types.keys() {
        assert!(name.starts_with("crawltop_"), "{name}");
    }
    let value = |name: &str, labels: &[(&str, &str)]| {
        sample(&samples, name, labels)
            .unwrap_or_else(|| panic!("{name} {labels:?} missing"))
            .value
    };
    assert_eq!(value("crawltop_resources_fetched_total", &[]), 450.0);
    assert_eq!(value("crawltop_resources_discovered_total", &[]), 1000.0);
    assert_eq!(
        value("crawltop_http_responses_total", &[("status", "200")]),
        440.0
    );
    assert_eq!(
        value("crawltop_http_responses_total", &[("status", "404")]),
        10.0
    );
    assert_eq!(value("crawltop_http_body_bytes_total", &[]), 123_456_789.0);
    assert_eq!(value("crawltop_errors_total", &[("class", "timeout")]), 2.0);
    assert_eq!(value("crawltop_retries_total", &[]), 4.0);
    assert_eq!(value("crawltop_politeness_delay_seconds", &[]), 1.5);
    assert_eq!(value("crawltop_politeness_adaptive_factor", &[]), 2.0);
    assert_eq!(value("crawltop_elapsed_seconds", &[]), 12.5);
    assert_eq!(value("crawltop_crawl_elapsed_seconds", &[]), 40.25);
    assert_eq!(value("crawltop_state", &[("state", "paused")]), 1.0);
    assert_eq!(value("crawltop_state", &[("state", "running")]), 0.0);
    assert_eq!(
        value("crawltop_workers_by_state", &[("state", "busy")]),
        5.0
    );
    assert_eq!(
        value(
            "crawltop_workers_share_ratio",
            &[("state", "busy"), ("window", "now")]
        ),
        0.625
    );
    assert_eq!(
        value("crawltop_tasks_done_total", &[("kind", "spider")]),
        450.0
    );
    assert_eq!(value("crawltop_commands_total", &[("source", "api")]), 1.0);
    assert_eq!(value("crawltop_sites", &[]), 1.0);
    assert_eq!(
        value(
            "crawltop_site_fetched_total",
            &[("origin", "http://a.example")]
        ),
        300.0
    );
    assert_eq!(
        value(
            "crawltop_site_delay_seconds",
            &[("origin", "http://a.example")]
        ),
        0.25
    );
    assert!(value("crawltop_fetch_rate_pages_per_second", &[]).is_nan());
    assert_eq!(
        value("crawltop_receive_rate_bytes_per_second", &[]),
        f64::INFINITY
    );
    assert_eq!(types["crawltop_site_queued_urls"], "gauge");
    assert_eq!(types["crawltop_http_responses_total"], "counter");
}

#[test]
fn hostile_origins_are_escaped_in_labels() {
    // `prometheus-parse` cannot read a `}` inside a label value (its regex stops there):
    // this one is judged by the strict reader alone.
    let mut snap = fixture();
    snap.sites.push(SiteRow {
        origin: "http://evil.example/\"}\\\nx=\"1".into(),
        queued: 9,
        fetched: 150,
        ..SiteRow::default()
    });
    let text = text_of(&snap);
    let (_, samples) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let evil = &snap.sites[1].origin;
    let got = sample(&samples, "crawltop_site_queued_urls", &[("origin", evil)])
        .expect("the hostile origin round-trips through the escapes");
    assert_eq!(got.value, 9.0);
    // One line per sample: the newline in the origin did not break a line.
    assert!(
        text.lines()
            .all(|l| l.starts_with("crawltop_") || l.starts_with("# "))
    );
}

#[test]
fn per_site_series_stop_at_the_limit_keeping_the_most_queued() {
    let mut snap = Snapshot::default();
    for i in 0..(METRICS_SITE_LIMIT as u64 + 500) {
        snap.sites.push(SiteRow {
            origin: format!("http://s{i}.example"),
            queued: i,
            ..SiteRow::default()
        });
    }
    let text = text_of(&snap);
    let (_, samples) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let queued: Vec<&StrictSample> = samples
        .iter()
        .filter(|s| s.name == "crawltop_site_queued_urls")
        .collect();
    assert_eq!(queued.len(), METRICS_SITE_LIMIT);
    assert!(queued.iter().all(|s| s.value >= 500.0));
    assert_eq!(queued[0].value, (METRICS_SITE_LIMIT + 499) as f64);
    for family in [
        "crawltop_site_fetched_total",
        "crawltop_site_errors_total",
        "crawltop_site_in_flight_fetches",
        "crawltop_site_delay_seconds",
    ] {
        assert_eq!(
            samples.iter().filter(|s| s.name == family).count(),
            METRICS_SITE_LIMIT,
            "{family}"
        );
    }
    assert_eq!(
        sample(&samples, "crawltop_sites", &[]).map(|s| s.value),
        Some((METRICS_SITE_LIMIT + 500) as f64)
    );
    assert!(text.contains("at most the first 1000 sites by queued"));
}

#[test]
fn an_empty_snapshot_still_makes_valid_metrics() {
    let text = text_of(&Snapshot::default());
    let (types, _) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // Families without samples keep their HELP and TYPE: a scraper learns them at once.
    assert!(types.contains_key("crawltop_http_responses_total"));
    assert!(types.contains_key("crawltop_site_queued_urls"));
    assert!(!types.contains_key("crawltop_politeness_adaptive_factor"));
}

#[test]
fn the_strict_reader_catches_what_it_should() {
    for bad in [
        "crawltop_x 1\n",
        "# HELP a_total h\n# TYPE a_total gauge\na_total 1\n",
        "# HELP a h\n# TYPE a counter\na 1\n",
        "# HELP a h\n# TYPE a gauge\na{x=\"1} 1\n",
        "# HELP a h\n# TYPE a gauge\na{x=\"\\q\"} 1\n",
        "# HELP a h\n# TYPE a gauge\na inf\n",
        "# HELP a h\n# TYPE a gauge\na 1\na 2\n",
        "# HELP a h\n# TYPE a gauge\n# HELP b h\n# TYPE b gauge\na 1\n",
        "# HELP a h\n# TYPE a gauge\na 1",
    ] {
        assert!(strict_parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn openmetrics_text_becomes_format_004() {
    let open = "# HELP a_seconds Time.\n# TYPE a_seconds gauge\n# UNIT a_seconds seconds\na_seconds inf\n\
                # HELP b_bytes Bytes.\n# TYPE b_bytes counter\n# UNIT b_bytes bytes\nb_bytes_total{x=\"1 inf\"} 3\n\
                # HELP c Rate.\n# TYPE c gauge\nc -inf\nc{k=\"v\"} NaN\n# EOF\n";
    assert_eq!(
        text_format_004(open),
        "# HELP a_seconds Time.\n# TYPE a_seconds gauge\na_seconds +Inf\n\
         # HELP b_bytes_total Bytes.\n# TYPE b_bytes_total counter\nb_bytes_total{x=\"1 inf\"} 3\n\
         # HELP c Rate.\n# TYPE c gauge\nc -Inf\nc{k=\"v\"} NaN\n"
    );
}
