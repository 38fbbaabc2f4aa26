//! The dashboard's small parts: number formats, the colour code, and the widgets that are more
//! than a line of text (the shares bar, the worker strip, the heap list, the sparkline, the
//! search prompt and its results).
//!
//! Everything here is a pure function of the values passed in: no `App`, no snapshot lookups, no
//! state kept between frames. Widgets format only what fits in the area they are given, so a
//! caller that passes the visible slice of a long list pays for the visible rows only.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::dashboard::layout::{HIT_ROWS, RESULTS_HEADER_ROWS};
use crate::dashboard::search::{Outcome, Results};
use crate::index::Words;
use crate::robots::RobotsState;
use crate::snapshot::{DelaySource, HeapRow, Shares, WorkerState};

// --- colours -----------------------------------------------------------------------------------

pub const BUSY: Color = Color::Green;
pub const BLOCKED: Color = Color::Yellow;
pub const IDLE: Color = Color::DarkGray;
/// Labels and other text that should recede behind the numbers.
pub const DIM: Style = Style::new().fg(Color::DarkGray);
/// The border of the pane that scroll keys act on.
pub const FOCUS: Color = Color::Cyan;

const BAR_BUSY: char = '█';
const BAR_BLOCKED: char = '▒';
const BAR_IDLE: char = '░';

pub fn robots_style(state: RobotsState) -> Style {
    let fg = match state {
        RobotsState::Handled => Color::Green,
        RobotsState::Unexisting => Color::Blue,
        RobotsState::Error => Color::Red,
        RobotsState::Discovered => Color::Yellow,
        RobotsState::Skipped => Color::Gray,
    };
    Style::new().fg(fg)
}

pub fn robots_label(state: RobotsState) -> &'static str {
    match state {
        RobotsState::Handled => "handled",
        RobotsState::Unexisting => "unexisting",
        RobotsState::Error => "error",
        RobotsState::Discovered => "discovered",
        RobotsState::Skipped => "skipped",
    }
}

/// The robots colour code, in the order a site usually goes through it.
pub const ROBOTS_STATES: [RobotsState; 5] = [
    RobotsState::Discovered,
    RobotsState::Handled,
    RobotsState::Unexisting,
    RobotsState::Error,
    RobotsState::Skipped,
];

pub fn robots_legend() -> Line<'static> {
    let mut spans = vec![Span::styled(" robots.txt:", DIM)];
    for state in ROBOTS_STATES {
        spans.push(Span::styled(" ■ ", robots_style(state)));
        spans.push(Span::styled(robots_label(state), robots_style(state)));
    }
    spans.push(Span::raw(" "));
    Line::from(spans)
}

pub fn source_label(source: DelaySource) -> &'static str {
    match source {
        DelaySource::Configured => "configured",
        DelaySource::CrawlDelay => "crawl-delay",
        DelaySource::CappedCrawlDelay => "capped",
        DelaySource::Adaptive => "adaptive",
        DelaySource::RetryAfter => "retry-after",
        DelaySource::Backoff => "backoff",
    }
}

/// Every busy phase and blocked cause has its own colour, so the strip and the split lines
/// below the bars read as one legend.
pub fn worker_color(state: WorkerState) -> Color {
    match state {
        WorkerState::Idle => IDLE,
        WorkerState::BlockedPoliteness => Color::Yellow,
        WorkerState::BlockedRobots => Color::Magenta,
        WorkerState::BlockedStore => Color::LightRed,
        WorkerState::BlockedParse => Color::LightMagenta,
        WorkerState::Connecting => Color::Blue,
        WorkerState::WaitingFirstByte => Color::Cyan,
        WorkerState::Receiving => Color::Green,
        WorkerState::Parsing => Color::LightGreen,
    }
}

/// The shape tells idle, blocked and busy apart without colour; the colour tells the phase.
pub fn worker_glyph(state: WorkerState) -> char {
    if state.is_busy() {
        '▮'
    } else if state.is_blocked() {
        '▪'
    } else {
        '▯'
    }
}

// --- numbers -----------------------------------------------------------------------------------

/// `18204` -> `18,204`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count that fits `width` columns: `12,345` when it fits, else `1.2M`-style.
pub fn count_fit(n: u64, width: usize) -> String {
    let full = count(n);
    if full.len() <= width {
        return full;
    }
    let (value, unit) = match n {
        0..1_000_000 => (n as f64 / 1e3, 'k'),
        1_000_000..1_000_000_000 => (n as f64 / 1e6, 'M'),
        _ => (n as f64 / 1e9, 'G'),
    };
    if value < 10.0 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.0}{unit}")
    }
}

/// A duration in milliseconds, short: `0 ms`, `640 ms`, `1.5 s`, `29 s`, `2 min`, `3 h`.
pub fn millis(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..10_000 if !ms.is_multiple_of(1_000) => format!("{:.1} s", ms as f64 / 1e3),
        1_000..60_000 => format!("{} s", ms / 1_000),
        60_000..3_600_000 => format!("{} min", ms / 60_000),
        _ => format!("{} h", ms / 3_600_000),
    }
}

/// Time until a site may be contacted again; zero means it may be contacted now, or, while
/// the crawl is paused, as soon as it resumes (audit 31: `now` read as a promise). A wait still
/// to run shows either way: a resume does not cut it.
pub fn countdown(ms: u64, paused: bool) -> String {
    if ms == 0 && paused {
        "paused".to_owned()
    } else if ms == 0 {
        "now".to_owned()
    } else {
        millis(ms)
    }
}

/// `hh:mm:ss` since the crawl started; garbage (negative, NaN) shows as zero.
pub fn elapsed(seconds: f64) -> String {
    let s = if seconds.is_finite() && seconds > 0.0 {
        seconds as u64
    } else {
        0
    };
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// `3.1 MB/s`, decimal units as network tools print them.
pub fn byte_rate(bytes_per_s: f64) -> String {
    let b = finite_non_negative(bytes_per_s);
    match b {
        x if x < 1e3 => format!("{x:.0} B/s"),
        x if x < 1e6 => format!("{:.1} kB/s", x / 1e3),
        x if x < 1e9 => format!("{:.1} MB/s", x / 1e6),
        x => format!("{:.1} GB/s", x / 1e9),
    }
}

pub fn page_rate(pages_per_s: f64) -> String {
    rate(pages_per_s, "p/s")
}

/// Responses of every kind (404s, redirects, robots.txt) a second: `312 resp/s`.
pub fn response_rate(responses_per_s: f64) -> String {
    rate(responses_per_s, "resp/s")
}

fn rate(per_s: f64, unit: &str) -> String {
    let p = finite_non_negative(per_s);
    if p < 10.0 {
        format!("{p:.1} {unit}")
    } else {
        format!("{} {unit}", count(p.round() as u64))
    }
}

/// A percentage as shown: whole numbers, clamped to 0..=100.
pub fn pct(value: f64) -> u64 {
    finite_non_negative(value).min(100.0).round() as u64
}

fn finite_non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
}

/// Keeps the end of `text` (where origins differ: the port, the domain) within `width` columns.
pub fn truncate_left(text: &str, width: usize) -> String {
    let len = text.chars().count();
    if len <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let tail: String = text.chars().skip(len - (width - 1)).collect();
    format!("…{tail}")
}

/// An origin in `width` columns: whole if it fits, else without its scheme, else cut on the
/// left (the port and the domain are what tell sites apart).
pub fn fit_origin(origin: &str, width: usize) -> String {
    if origin.chars().count() <= width {
        return origin.to_owned();
    }
    let host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    truncate_left(host, width)
}

// --- sparkline ---------------------------------------------------------------------------------

const SPARKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The pages/s history as at most `width` cells. A history longer than `width` is averaged in
/// buckets, so the line always spans the whole history (a minute) rather than its last seconds.
pub fn spark(history: &[f64], width: usize) -> String {
    if width == 0 || history.is_empty() {
        return String::new();
    }
    let cells = history.len().min(width);
    let values: Vec<f64> = (0..cells)
        .map(|i| {
            let start = i * history.len() / cells;
            let end = ((i + 1) * history.len() / cells).max(start + 1);
            let bucket = &history[start..end];
            bucket.iter().copied().map(finite_non_negative).sum::<f64>() / bucket.len() as f64
        })
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    values
        .iter()
        .map(|&v| {
            if max <= 0.0 {
                SPARKS[0]
            } else {
                SPARKS[((v / max) * 7.0).round() as usize]
            }
        })
        .collect()
}

// --- the shares bar ----------------------------------------------------------------------------

/// One line: `now ██████▒▒▒░░░  58  27  15`: busy, blocked and idle shares as a stacked bar,
/// then the same shares in percent, each number in its segment's colour.
pub struct SharesBar<'a> {
    pub label: &'a str,
    pub shares: Shares,
}

/// The width of the numbers after the bar: three right-aligned percentages.
const SHARES_SUFFIX: u16 = 12;

impl SharesBar<'_> {
    /// Cell counts of the three segments for a bar `width` cells wide. Rounds cumulatively so
    /// the segments always add up to the width, and normalises shares that do not add up to
    /// 100 (rounding in the engine, or garbage).
    fn segments(&self, width: u16) -> (u16, u16, u16) {
        let busy = finite_non_negative(self.shares.busy_pct);
        let blocked = finite_non_negative(self.shares.blocked_pct);
        let idle = finite_non_negative(self.shares.idle_pct);
        let total = busy + blocked + idle;
        if total <= 0.0 {
            return (0, 0, width);
        }
        let w = f64::from(width);
        let busy_cells = (busy / total * w).round() as u16;
        let upto_blocked = ((busy + blocked) / total * w).round() as u16;
        let busy_cells = busy_cells.min(width);
        let blocked_cells = upto_blocked.clamp(busy_cells, width) - busy_cells;
        (
            busy_cells,
            blocked_cells,
            width - busy_cells - blocked_cells,
        )
    }
}

impl SharesBar<'_> {
    /// Busy, blocked and idle in whole percent, adding up to 100 (all 0 without workers).
    /// Rounded each on its own, 62.5 and 37.5 showed as 63 and 38, and three shares as 101
    /// (audit 31): the largest remainders get the points that flooring leaves over, busy first
    /// on a tie. Shares that do not add up to 100 are normalised first, as the bar does.
    fn whole_percents(&self) -> [u64; 3] {
        let exact = [
            self.shares.busy_pct,
            self.shares.blocked_pct,
            self.shares.idle_pct,
        ]
        .map(finite_non_negative);
        let total: f64 = exact.iter().sum();
        if total <= 0.0 {
            return [0; 3];
        }
        let scaled = exact.map(|share| share / total * 100.0);
        let mut whole = scaled.map(|share| share.floor() as u64);
        let left = 100u64.saturating_sub(whole.iter().sum());
        let mut by_remainder = [0, 1, 2];
        // A stable sort: busy, then blocked, then idle on equal remainders.
        by_remainder.sort_by(|&a, &b| {
            let fraction = |i: usize| scaled[i] - scaled[i].floor();
            fraction(b).total_cmp(&fraction(a))
        });
        for &i in by_remainder.iter().take(left as usize) {
            whole[i] += 1;
        }
        whole
    }
}

impl Widget for SharesBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let label_width = self.label.chars().count() as u16 + 1;
        let (bar_x, bar_width, suffix) = if area.width >= label_width + SHARES_SUFFIX + 4 {
            (
                area.x + label_width,
                area.width - label_width - SHARES_SUFFIX,
                true,
            )
        } else {
            (area.x, area.width, false)
        };
        if bar_x > area.x {
            buf.set_string(area.x, area.y, self.label, Style::new());
        }
        let (busy, blocked, idle) = self.segments(bar_width);
        let mut x = bar_x;
        for (cells, glyph, color) in [
            (busy, BAR_BUSY, BUSY),
            (blocked, BAR_BLOCKED, BLOCKED),
            (idle, BAR_IDLE, IDLE),
        ] {
            for _ in 0..cells {
                buf[(x, area.y)]
                    .set_char(glyph)
                    .set_style(Style::new().fg(color));
                x += 1;
            }
        }
        if suffix {
            let [busy, blocked, idle] = self.whole_percents();
            let numbers = Line::from(vec![
                Span::styled(format!(" {busy:>3}"), BUSY),
                Span::styled(format!(" {blocked:>3}"), BLOCKED),
                Span::styled(format!(" {idle:>3}"), IDLE),
            ]);
            buf.set_line(x, area.y, &numbers, SHARES_SUFFIX);
        }
    }
}

// --- the worker strip --------------------------------------------------------------------------

/// One cell per worker, row after row, coloured by its state. When there are more workers than
/// cells, the last cells say how many are not shown (`+120`).
pub struct WorkerStrip<'a> {
    pub slots: &'a [WorkerState],
}

impl Widget for WorkerStrip<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let cells = usize::from(area.width) * usize::from(area.height);
        if cells == 0 {
            return;
        }
        let (shown, more) = if self.slots.len() <= cells {
            (self.slots.len(), None)
        } else {
            // "+N" with N at most the number of slots: reserve room for its widest form.
            let reserve = 1 + self.slots.len().to_string().len();
            let shown = cells.saturating_sub(reserve);
            (shown, Some(format!("+{}", self.slots.len() - shown)))
        };
        let width = usize::from(area.width);
        let position = |i: usize| (area.x + (i % width) as u16, area.y + (i / width) as u16);
        for (i, &state) in self.slots[..shown].iter().enumerate() {
            buf[position(i)]
                .set_char(worker_glyph(state))
                .set_style(Style::new().fg(worker_color(state)));
        }
        if let Some(more) = more {
            for (i, c) in more.chars().enumerate() {
                if shown + i < cells {
                    buf[position(shown + i)].set_char(c).set_style(DIM);
                }
            }
        }
    }
}

// --- the heap list -----------------------------------------------------------------------------

/// The back-queue heap's top, soonest first: `ready in`, origin, queue length. Renders the
/// entries from `offset` on, as many as there are rows.
pub struct HeapList<'a> {
    pub rows: &'a [HeapRow],
    pub offset: usize,
    /// The crawl is paused: no row is contacted until it resumes.
    pub paused: bool,
}

const HEAP_READY: usize = 6;
const HEAP_QUEUE: usize = 6;

impl HeapList<'_> {
    /// The column header that goes above the list, aligned with its rows.
    pub fn header(width: u16) -> Line<'static> {
        let origin = usize::from(width).saturating_sub(HEAP_READY + HEAP_QUEUE + 2);
        Line::styled(
            format!(
                "{:>HEAP_READY$} {:<origin$} {:>HEAP_QUEUE$}",
                "in", "origin", "queue"
            ),
            DIM.add_modifier(Modifier::BOLD),
        )
    }
}

impl Widget for HeapList<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let origin_width = usize::from(area.width).saturating_sub(HEAP_READY + HEAP_QUEUE + 2);
        let visible = self
            .rows
            .iter()
            .skip(self.offset)
            .take(usize::from(area.height));
        for (y, row) in (area.y..).zip(visible) {
            let ready_style = if row.ready_in_ms == 0 && !self.paused {
                Style::new().fg(BUSY)
            } else {
                Style::new()
            };
            let line = Line::from(vec![
                Span::styled(
                    format!("{:>HEAP_READY$}", countdown(row.ready_in_ms, self.paused)),
                    ready_style,
                ),
                Span::raw(" "),
                Span::raw(format!(
                    "{:<origin_width$}",
                    fit_origin(&row.origin, origin_width)
                )),
                Span::raw(" "),
                Span::raw(format!(
                    "{:>HEAP_QUEUE$}",
                    count_fit(row.queue_len, HEAP_QUEUE)
                )),
            ]);
            buf.set_line(area.x, y, &line, area.width);
        }
    }
}

// --- search ------------------------------------------------------------------------------------

/// The search prompt on one line: `/`, the query (its end, when it is longer than the line),
/// a block cursor, and the keys when there is room for them.
pub struct PromptLine<'a> {
    pub text: &'a str,
    /// The sites filter's prompt (`f`) rather than the search's (`/`).
    pub filter: bool,
}

impl Widget for PromptLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let key = Style::new().fg(FOCUS).add_modifier(Modifier::BOLD);
        let hint: &[Span] = if self.filter {
            &[
                Span::styled("Enter", key),
                Span::styled(" filter sites · ", DIM),
                Span::styled("Esc", key),
                Span::styled(" show all", DIM),
            ]
        } else {
            &[
                Span::styled("Enter", key),
                Span::styled(" search · ", DIM),
                Span::styled("Esc", key),
                Span::styled(" cancel · ", DIM),
                Span::styled("↑", key),
                Span::styled(" history", DIM),
            ]
        };
        let hint_width: usize = hint.iter().map(Span::width).sum();
        let width = usize::from(area.width);
        // " / " before the text, the cursor cell after it.
        let mut room = width.saturating_sub(4);
        let show_hint = room >= hint_width + 3 + 12;
        if show_hint {
            room -= hint_width + 3;
        }
        let text = truncate_left(self.text, room);
        let used = 4 + text.chars().count();
        let mut spans = vec![
            Span::raw(" "),
            Span::styled(if self.filter { "f" } else { "/" }, key),
            Span::raw(" "),
            Span::styled(text, Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(" ", Style::new().add_modifier(Modifier::REVERSED)),
        ];
        if show_hint {
            spans.push(Span::raw(
                " ".repeat(width.saturating_sub(used + hint_width)),
            ));
            spans.extend(hint.iter().cloned());
        }
        buf.set_line(area.x, area.y, &Line::from(spans), area.width);
    }
}

/// The inside of the results pane: a line saying what was found (or why nothing was), then
/// the hits from `results.top()` on, each as its rank, score, URL and title, then its first
/// matching line with the line number, as `crawltop search` prints them.
pub struct SearchResults<'a> {
    pub results: &'a Results,
}

impl SearchResults<'_> {
    fn header(&self) -> Vec<Line<'static>> {
        let r = self.results;
        let query = format!("«{}»", r.query());
        let at = format!(" (searched at {})", elapsed(r.asked_at_s()));
        let again = if r.retrying() {
            "searching again as pages are committed"
        } else {
            ""
        };
        let bad = Style::new().fg(Color::LightRed);
        let Some(outcome) = r.outcome() else {
            return vec![Line::styled("searching…", DIM)];
        };
        let waiting = if r.waiting() { "  searching…" } else { "" };
        match outcome {
            Outcome::NoFolder => vec![
                Line::styled(
                    "search needs an index: run with --out DIR, without --no-index",
                    bad,
                ),
                Line::styled(
                    "this crawl builds no index of its pages, so there is nothing to search",
                    DIM,
                ),
            ],
            Outcome::NothingIndexed => vec![
                Line::from(vec![
                    Span::styled("nothing indexed yet", Style::new().fg(Color::Yellow)),
                    Span::styled(format!("{at}{waiting}"), DIM),
                ]),
                Line::styled(
                    format!(
                        "pages become searchable about a second after they are stored{}{again}",
                        if again.is_empty() { "" } else { "; " }
                    ),
                    DIM,
                ),
            ],
            Outcome::Failed(reason) => vec![
                Line::styled(format!("cannot search: {reason}"), bad),
                Line::styled(
                    "words are OR-ed; \"a phrase\", AND, OR, NOT, +must, -not, title:word",
                    DIM,
                ),
            ],
            Outcome::Found {
                total: 0, indexed, ..
            } => vec![
                Line::from(vec![
                    Span::styled(
                        format!("no page matches {query}"),
                        Style::new().fg(Color::Yellow),
                    ),
                    Span::styled(
                        format!(" among {} indexed{at}{waiting}", count(*indexed)),
                        DIM,
                    ),
                ]),
                Line::styled(again, DIM),
            ],
            Outcome::Found {
                total,
                indexed,
                hits,
            } => {
                let shown = if hits.len() < *total {
                    format!(", best {} listed", count(hits.len() as u64))
                } else {
                    String::new()
                };
                let pages = if *total == 1 { "page" } else { "pages" };
                vec![Line::from(vec![
                    Span::styled(
                        format!("{} {pages}", count(*total as u64)),
                        Style::new().add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(
                        format!(
                            " of {} indexed match {query}{shown}{at}{waiting}",
                            count(*indexed)
                        ),
                        DIM,
                    ),
                ])]
            }
        }
    }
}

impl Widget for SearchResults<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let header = self.header();
        let hits = match self.results.outcome() {
            Some(Outcome::Found { hits, .. }) => hits.as_slice(),
            _ => &[],
        };
        // Error and empty states get their explanation line; a hit list only its summary.
        let header_rows = if hits.is_empty() {
            header.len()
        } else {
            usize::from(RESULTS_HEADER_ROWS)
        };
        let mut y = area.y;
        let bottom = area.y + area.height;
        for line in header.into_iter().take(header_rows) {
            if y >= bottom {
                return;
            }
            buf.set_line(area.x, y, &line, area.width);
            y += 1;
        }
        let rank_width = hits.len().to_string().len().max(2);
        let indent = " ".repeat(rank_width + 2);
        let words = query_words(self.results.query());
        // The indent and "NNNNN: " before the line's text.
        let text_width = usize::from(area.width).saturating_sub(rank_width + 2 + 7);
        let key = Style::new().fg(FOCUS);
        for (rank, hit) in hits.iter().enumerate().skip(self.results.top()) {
            if y + HIT_ROWS > bottom {
                return;
            }
            let mut page = vec![
                Span::styled(format!("{:>rank_width$}. ", rank + 1), DIM),
                Span::styled(format!("{:.3}", hit.score), DIM),
                Span::raw("  "),
                Span::styled(hit.url.clone(), key),
                Span::raw("  "),
                Span::styled(hit.title.clone(), Style::new().add_modifier(Modifier::BOLD)),
            ];
            if hit.line_count > 1 {
                page.push(Span::styled(
                    format!("  {} lines match", count(hit.line_count as u64)),
                    DIM,
                ));
            }
            buf.set_line(area.x, y, &Line::from(page), area.width);
            let first = match hit.lines.first() {
                Some((n, text)) => Line::from(vec![
                    Span::raw(indent.clone()),
                    Span::styled(format!("{n:>5}: "), Style::new().fg(Color::Yellow)),
                    Span::raw(snippet(text.trim(), &words, text_width)),
                ]),
                None => Line::styled(format!("{indent}(the title matches)"), DIM),
            };
            buf.set_line(area.x, y + 1, &first, area.width);
            y += HIT_ROWS;
        }
    }
}

/// The words of a query as a new index makes them ([`Words::NEWEST`]: a soft hyphen inside a
/// word is part of it, case is folded), without field names (`title:`); for showing where a
/// line matches, not for matching.
fn query_words(query: &str) -> Vec<String> {
    Words::NEWEST
        .words(query)
        .into_iter()
        .filter(|(_, bytes)| !query[bytes.end..].starts_with(':'))
        .map(|(word, _)| word)
        .collect()
}

/// Columns of context kept before a match when a line is cut to show it.
const SNIPPET_LEAD: usize = 16;

/// `line` in `width` columns with its first word of `words` in view: the whole line when it
/// fits, its start when the match is near it, else from a little before the match.
pub fn snippet(line: &str, words: &[String], width: usize) -> String {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    if chars.len() <= width {
        return line.to_owned();
    }
    // The first word of the line, as a new index makes them, that is one of the words: its
    // char position and length.
    let first = Words::NEWEST
        .words(line)
        .into_iter()
        .find(|(word, _)| words.contains(word))
        .map(|(_, bytes)| {
            let start = line[..bytes.start].chars().count();
            (start, line[bytes].chars().count())
        });
    match first {
        Some((start, len)) if start + len > width.saturating_sub(1) => {
            // As much context as fits with the whole match after the "…".
            let lead = SNIPPET_LEAD.min(width.saturating_sub(1 + len));
            let from = start - lead.min(start);
            let tail: String = line[chars[from].0..]
                .chars()
                .take(width.saturating_sub(1))
                .collect();
            format!("…{tail}")
        }
        _ => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_keeps_the_first_match_in_view() {
        let words = query_words("title:white RABBIT");
        assert_eq!(words, ["white", "rabbit"]);
        let line = format!("{} the Rabbit ran", "x ".repeat(40));
        assert_eq!(snippet(&line, &words, 200), line, "fits");
        let cut = snippet(&line, &words, 30);
        assert!(cut.starts_with('…'), "{cut}");
        assert!(cut.contains("the Rabbit ran"), "{cut}");
        assert!(cut.chars().count() <= 30, "{cut}");
        assert_eq!(
            snippet("Rabbit first, then a long tail of words", &words, 10),
            "Rabbit first, then a long tail of words",
            "a match in view: the line as it is, cut by the pane"
        );
        assert_eq!(
            snippet("rabbits are not rabbit", &words, 12),
            "… not rabbit"
        );
        // Audit 29: the match is found as the index finds it, across a soft hyphen and in
        // another case form.
        let words = query_words("international ΝΌΜΟΣ");
        assert_eq!(words, ["international", "νόμοσ"]);
        let soft = "in\u{ad}ter\u{ad}na\u{ad}tion\u{ad}al";
        let greek = "ο νόμος";
        for (line, word) in [
            (format!("{} {soft} x", "x ".repeat(20)), soft),
            (format!("{} {greek}", "x ".repeat(20)), greek),
        ] {
            let cut = snippet(&line, &words, 20);
            assert!(cut.starts_with('…') && cut.contains(word), "{cut:?}");
            assert!(cut.chars().count() <= 20, "{cut:?}");
        }
    }

    fn shares(busy: f64, blocked: f64, idle: f64) -> Shares {
        Shares {
            idle_pct: idle,
            blocked_pct: blocked,
            busy_pct: busy,
        }
    }

    #[test]
    fn shares_bar_draws_segments_and_coloured_percentages() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 30, 1));
        SharesBar {
            label: "now",
            shares: shares(50.0, 30.0, 20.0),
        }
        .render(buf.area, &mut buf);

        let mut expected = Buffer::with_lines(["now ███████▒▒▒▒░░░  50  30  20"]);
        // 30 columns: "now " (4), a 14-cell bar, 12 columns of numbers.
        expected.set_style(Rect::new(4, 0, 7, 1), Style::new().fg(BUSY));
        expected.set_style(Rect::new(11, 0, 4, 1), Style::new().fg(BLOCKED));
        expected.set_style(Rect::new(15, 0, 3, 1), Style::new().fg(IDLE));
        expected.set_style(Rect::new(18, 0, 4, 1), Style::new().fg(BUSY));
        expected.set_style(Rect::new(22, 0, 4, 1), Style::new().fg(BLOCKED));
        expected.set_style(Rect::new(26, 0, 4, 1), Style::new().fg(IDLE));
        assert_eq!(buf, expected);
    }

    #[test]
    fn shares_bar_segments_fill_the_width_whatever_the_rounding() {
        let bar = SharesBar {
            label: "10s",
            shares: shares(33.3, 33.3, 33.4),
        };
        for width in 1..40 {
            let (a, b, c) = bar.segments(width);
            assert_eq!(a + b + c, width, "width {width}");
        }
    }

    #[test]
    fn shares_bar_normalises_shares_that_do_not_add_up() {
        let bar = SharesBar {
            label: "now",
            shares: shares(150.0, 50.0, f64::NAN),
        };
        assert_eq!(bar.segments(8), (6, 2, 0));
    }

    #[test]
    fn shares_bar_percentages_add_up_to_100_by_largest_remainder() {
        let percents = |busy, blocked, idle| {
            SharesBar {
                label: "now",
                shares: shares(busy, blocked, idle),
            }
            .whole_percents()
        };
        // Audit 31: 0 of 8 busy, 5 blocked, 3 idle showed as `0 63 38`.
        assert_eq!(percents(0.0, 62.5, 37.5), [0, 63, 37]);
        assert_eq!(percents(0.6, 98.8, 0.6), [1, 99, 0]);
        assert_eq!(percents(33.3, 33.3, 33.4), [33, 33, 34]);
        assert_eq!(
            percents(100.0 / 3.0, 100.0 / 3.0, 100.0 / 3.0),
            [34, 33, 33]
        );
        assert_eq!(percents(50.0, 30.0, 20.0), [50, 30, 20]);
        assert_eq!(percents(150.0, 50.0, f64::NAN), [75, 25, 0]);
        assert_eq!(percents(0.0, 0.0, 0.0), [0, 0, 0]);
        for workers in 1..=64u32 {
            for busy in 0..=workers {
                for blocked in 0..=workers - busy {
                    let share = |n: u32| f64::from(n) * 100.0 / f64::from(workers);
                    let idle = workers - busy - blocked;
                    let shown = percents(share(busy), share(blocked), share(idle));
                    assert_eq!(shown.iter().sum::<u64>(), 100, "{busy} {blocked} {idle}");
                }
            }
        }
    }

    #[test]
    fn shares_bar_without_workers_is_all_idle() {
        let bar = SharesBar {
            label: "now",
            shares: shares(0.0, 0.0, 0.0),
        };
        assert_eq!(bar.segments(10), (0, 0, 10));
    }

    #[test]
    fn shares_bar_too_narrow_for_numbers_draws_only_the_bar() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 8, 1));
        SharesBar {
            label: "now",
            shares: shares(50.0, 25.0, 25.0),
        }
        .render(buf.area, &mut buf);
        let symbols: String = buf
            .content
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        assert_eq!(symbols, "████▒▒░░");
    }

    #[test]
    fn heap_list_renders_entries_in_order_with_aligned_columns() {
        let rows = [
            HeapRow {
                origin: "http://127.0.0.1:18011".into(),
                ready_in_ms: 0,
                queue_len: 488,
            },
            HeapRow {
                origin: "http://127.0.0.1:18004".into(),
                ready_in_ms: 40,
                queue_len: 12_612,
            },
            HeapRow {
                origin: "https://example.org".into(),
                ready_in_ms: 1_500,
                queue_len: 3_400_000,
            },
        ];
        let mut buf = Buffer::empty(Rect::new(0, 0, 30, 3));
        HeapList {
            rows: &rows,
            offset: 0,
            paused: false,
        }
        .render(buf.area, &mut buf);

        let mut expected = Buffer::with_lines([
            "   now 127.0.0.1:18011     488",
            " 40 ms 127.0.0.1:18004  12,612",
            " 1.5 s example.org        3.4M",
        ]);
        expected.set_style(Rect::new(0, 0, 6, 1), Style::new().fg(BUSY));
        assert_eq!(buf, expected);
    }

    #[test]
    fn heap_list_starts_at_the_offset_and_leaves_spare_rows_blank() {
        let rows = [
            HeapRow {
                origin: "a".into(),
                ready_in_ms: 5,
                queue_len: 1,
            },
            HeapRow {
                origin: "b".into(),
                ready_in_ms: 7,
                queue_len: 2,
            },
        ];
        let mut buf = Buffer::empty(Rect::new(0, 0, 16, 2));
        HeapList {
            rows: &rows,
            offset: 1,
            paused: false,
        }
        .render(buf.area, &mut buf);
        assert_eq!(buf, Buffer::with_lines(["  7 ms b       2", ""]));
    }

    #[test]
    fn worker_strip_colours_one_cell_per_worker() {
        let slots = [
            WorkerState::Receiving,
            WorkerState::BlockedPoliteness,
            WorkerState::Idle,
        ];
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
        WorkerStrip { slots: &slots }.render(buf.area, &mut buf);
        let mut expected = Buffer::with_lines(["▮▪▯ "]);
        expected[(0, 0)].set_fg(Color::Green);
        expected[(1, 0)].set_fg(Color::Yellow);
        expected[(2, 0)].set_fg(IDLE);
        assert_eq!(buf, expected);
    }

    #[test]
    fn worker_strip_says_how_many_workers_do_not_fit() {
        let slots = vec![WorkerState::Parsing; 20];
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 2));
        WorkerStrip { slots: &slots }.render(buf.area, &mut buf);
        let symbols: String = buf
            .content
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        assert_eq!(symbols, "▮▮▮▮▮▮▮▮▮+11");
    }

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(18_204), "18,204");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn counts_that_do_not_fit_are_shortened() {
        assert_eq!(count_fit(99_999, 6), "99,999");
        assert_eq!(count_fit(123_456, 6), "123k");
        assert_eq!(count_fit(3_400_000, 6), "3.4M");
        assert_eq!(count_fit(u64::MAX, 6), "18446744074G");
    }

    #[test]
    fn millis_picks_a_readable_unit() {
        assert_eq!(millis(0), "0 ms");
        assert_eq!(millis(640), "640 ms");
        assert_eq!(millis(1_000), "1 s");
        assert_eq!(millis(1_500), "1.5 s");
        assert_eq!(millis(29_400), "29 s");
        assert_eq!(millis(120_000), "2 min");
        assert_eq!(millis(7_200_000), "2 h");
        assert_eq!(countdown(0, false), "now");
        assert_eq!(countdown(640, false), "640 ms");
        assert_eq!(countdown(0, true), "paused");
        assert_eq!(countdown(640, true), "640 ms");
    }

    #[test]
    fn elapsed_is_hours_minutes_seconds_and_ignores_garbage() {
        assert_eq!(elapsed(192.7), "00:03:12");
        assert_eq!(elapsed(3_600.0 * 27.0), "27:00:00");
        assert_eq!(elapsed(-5.0), "00:00:00");
        assert_eq!(elapsed(f64::NAN), "00:00:00");
    }

    #[test]
    fn rates_use_decimal_units() {
        assert_eq!(byte_rate(512.0), "512 B/s");
        assert_eq!(byte_rate(3_100_000.0), "3.1 MB/s");
        assert_eq!(byte_rate(f64::INFINITY), "0 B/s");
        assert_eq!(page_rate(3.44), "3.4 p/s");
        assert_eq!(page_rate(1_482.4), "1,482 p/s");
    }

    #[test]
    fn truncate_left_keeps_the_end() {
        assert_eq!(truncate_left("http://127.0.0.1:18004", 10), "…0.1:18004");
        assert_eq!(truncate_left("short", 10), "short");
        assert_eq!(truncate_left("abc", 0), "");
    }

    #[test]
    fn fit_origin_drops_the_scheme_before_cutting() {
        assert_eq!(
            fit_origin("http://127.0.0.1:18004", 22),
            "http://127.0.0.1:18004"
        );
        assert_eq!(fit_origin("http://127.0.0.1:18004", 16), "127.0.0.1:18004");
        assert_eq!(fit_origin("https://www.example.com", 10), "…ample.com");
        assert_eq!(fit_origin("no-scheme.example", 8), "…example");
    }

    #[test]
    fn spark_scales_to_the_maximum() {
        assert_eq!(spark(&[0.0, 1.0, 2.0, 4.0, 8.0], 10), "▁▂▃▅█");
        assert_eq!(spark(&[0.0, 0.0], 10), "▁▁");
        assert_eq!(spark(&[], 10), "");
        assert_eq!(spark(&[1.0], 0), "");
    }

    #[test]
    fn spark_averages_a_long_history_into_the_width() {
        let history: Vec<f64> = (0..60).map(|i| if i < 30 { 0.0 } else { 10.0 }).collect();
        assert_eq!(spark(&history, 4), "▁▁██");
    }
}
