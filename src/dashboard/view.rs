//! The screen: `impl Widget for &App`, each pane drawn where [`super::layout`] puts it.
//!
//! Drawing reads the app and its snapshot and writes the buffer; it never changes state and never
//! reaches the engine. Cost does not grow with the crawl: the sites table formats only the rows
//! in view (a slice of the order `App` keeps sorted), the log only its last lines, the heap only
//! its visible entries.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Cell, Clear, HighlightSpacing, Paragraph, Row, StatefulWidget, Table,
    TableState, Widget, Wrap,
};

use crate::dashboard::app::{App, Lifecycle, Mode, keep_visible};
use crate::dashboard::layout::{
    MIN_HEIGHT, MIN_WIDTH, Pane, heap_header_rows, layout, results_area,
};
use crate::dashboard::widgets::{
    self, BUSY, DIM, FOCUS, HeapList, PromptLine, SearchResults, SharesBar, WorkerStrip, count,
    count_fit,
};
use crate::snapshot::{
    DelaySource, Ended, FaultKind, RunState, Shares, SiteRow, Snapshot, WorkerState,
};

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Some(areas) = layout(area) else {
            render_too_small(area, buf);
            return;
        };
        render_header(self, areas.header, buf);
        render_workers(self.snapshot(), areas.workers, buf);
        render_jobs(self.snapshot(), areas.jobs, buf);
        render_sites(self, areas.sites, buf);
        if self.members_shown() {
            render_members(self, areas.heap, buf);
        } else {
            render_heap(self, areas.heap, buf);
        }
        render_log(self, areas.log, buf);
        render_footer(self, areas.footer, buf);
        match self.mode() {
            Mode::Normal => {}
            Mode::Help => render_help(area, buf),
            Mode::SiteDetail(site) => {
                render_detail(self.snapshot(), self.site(site).as_ref(), area, buf);
            }
            Mode::Search => render_results(self, results_area(&areas), buf),
        }
        // The prompt takes the footer's line, over whatever mode is shown.
        if let Some(text) = self.search().prompt() {
            Clear.render(areas.footer, buf);
            PromptLine {
                text,
                filter: false,
            }
            .render(areas.footer, buf);
        } else if let Some(text) = self.filter_prompt() {
            Clear.render(areas.footer, buf);
            PromptLine { text, filter: true }.render(areas.footer, buf);
        }
    }
}

fn render_too_small(area: Rect, buf: &mut Buffer) {
    let text = format!(
        "terminal too small: {MIN_WIDTH}x{MIN_HEIGHT} needed, have {}x{}",
        area.width, area.height
    );
    let middle = area.height / 2;
    let line_area = Rect::new(area.x, area.y + middle, area.width, area.height - middle);
    Paragraph::new(text)
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true })
        .render(line_area, buf);
}

// --- header ------------------------------------------------------------------------------------

fn state_badge(app: &App) -> Span<'static> {
    let (label, color) = match (app.run_state_pending(), app.snapshot().state) {
        (Some(RunState::Paused), _) => ("PAUSING…", Color::Yellow),
        (Some(RunState::Running), _) => ("RESUMING…", Color::Green),
        (_, RunState::Running) => ("RUNNING", Color::Green),
        (_, RunState::Paused) => ("PAUSED", Color::Yellow),
        (_, RunState::Stopping) => ("STOPPING", Color::Magenta),
        // `state` says finished either way; how it ended is on the final snapshot.
        (_, RunState::Finished) if stopped(app) => ("STOPPED", Color::Blue),
        (_, RunState::Finished) => ("FINISHED", Color::Blue),
    };
    Span::styled(
        format!(" {label} "),
        Style::new().fg(Color::Black).bg(color).bold(),
    )
}

/// The crawl ended before its work ran out (a stop, a quit, a signal).
fn stopped(app: &App) -> bool {
    app.snapshot().ended == Some(Ended::Stopped)
}

/// A value the user changed: shown at once, in yellow with an ellipsis until confirmed.
fn setting(label: &'static str, value: String, pending: bool) -> Vec<Span<'static>> {
    let value = if pending {
        Span::styled(format!("{value}…"), Style::new().fg(Color::Yellow).bold())
    } else {
        Span::styled(value, Style::new().bold())
    };
    vec![Span::styled(label, DIM), value]
}

fn render_header(app: &App, area: Rect, buf: &mut Buffer) {
    let snap = app.snapshot();
    let gap = if area.width >= 100 { "  " } else { " " };
    let bold = Style::new().bold();
    // A crawl that ended shows its average rates: the last seconds' froze when it ended, and
    // looked like work going on (audit 25). The snapshot's own averages, over every run of a
    // resumed crawl: the stats file says the same numbers.
    let ended = snap.state == RunState::Finished && snap.crawl_elapsed_s > 0.0;
    let (page_rate, byte_rate, avg) = if ended {
        (snap.averages.pages_per_s, snap.averages.bytes_per_s, "avg ")
    } else {
        (snap.rates.pages_per_s, snap.rates.bytes_per_s, "")
    };
    let mut left = vec![
        Span::raw(" "),
        state_badge(app),
        Span::raw(" "),
        Span::styled(widgets::elapsed(snap.elapsed_s), bold),
        Span::raw(gap),
        Span::styled("fetched ", DIM),
        Span::styled(count(snap.resources.fetched), bold),
        Span::raw(gap),
        Span::styled(format!("{avg}{}", widgets::page_rate(page_rate)), bold),
        Span::raw(" "),
    ];
    // A crawl whose answers are mostly not pages (404s, redirects) shows that it is working.
    let (pages, responses) = (snap.rates.pages_per_s, snap.rates.responses_per_s);
    if !ended && responses >= 1.0 && responses > 2.0 * pages {
        left.extend([
            Span::styled(widgets::response_rate(responses), DIM),
            Span::raw(" "),
        ]);
    }
    // A member of a shared crawl: the whole crawl's pages and members beside its own.
    if let Some(c) = &snap.cluster {
        let pages = c.totals.get("pages").copied().unwrap_or(0);
        // A member that died never says it left: silent past its lease it is not counted as
        // working (the members pane shows it silent).
        let left_or_silent = |m: &&crate::snapshot::MemberRow| m.gone || m.silent;
        let silent = c
            .members
            .iter()
            .filter(|m| !m.gone && left_or_silent(m))
            .count();
        let alive = c.members.iter().filter(|m| !left_or_silent(m)).count();
        let members = if alive == 1 { "member" } else { "members" };
        let silent = match silent {
            0 => String::new(),
            n => format!(", {n} silent"),
        };
        left.extend([
            Span::styled("crawl-wide ", DIM),
            Span::styled(count(u64::try_from(pages).unwrap_or(0)), bold),
            Span::styled(format!(" · {alive} {members}{silent} "), DIM),
        ]);
    }
    let mut right = vec![
        Span::raw(gap),
        Span::styled(format!("{avg}{}", widgets::byte_rate(byte_rate)), bold),
        Span::raw(gap),
    ];
    right.extend(setting(
        "delay ",
        widgets::millis(app.delay().as_millis() as u64),
        app.delay_pending().is_some(),
    ));
    let mut workers = vec![Span::raw(gap)];
    workers.extend(setting(
        "workers ",
        count(app.workers() as u64),
        app.workers_pending().is_some(),
    ));
    let width = |spans: &[Span]| spans.iter().map(Span::width).sum::<usize>();
    let mut room = usize::from(area.width).saturating_sub(width(&left) + width(&right));
    // The worker count is also in the Workers pane's title: on a narrow terminal the
    // sparkline gets its place.
    if room >= width(&workers) + MIN_SPARK {
        room -= width(&workers);
        right.extend(workers);
    }
    let brand = "crawltop ";
    if room >= brand.len() + 40 {
        left.insert(1, Span::styled(brand, Style::new().fg(FOCUS).bold()));
        room -= brand.len();
    }
    // The sparkline takes what is left, up to one cell per second of history.
    let spark = widgets::spark(&snap.rates.history, room.min(60));
    left.push(Span::styled(spark, Style::new().fg(BUSY)));
    left.extend(right);
    Line::from(left).render(area, buf);
}

/// Below this many cells the sparkline would say nothing.
const MIN_SPARK: usize = 12;

// --- workers -----------------------------------------------------------------------------------

fn pane_block(title: &str, focused: bool) -> Block<'_> {
    let border = if focused { Style::new().fg(FOCUS) } else { DIM };
    Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(Span::styled(
            format!(" {title} "),
            Style::new().add_modifier(Modifier::BOLD),
        ))
}

/// `count` of `total` workers in whole percent.
fn share(count: usize, total: usize) -> String {
    if total == 0 {
        return "0%".to_owned();
    }
    format!("{}%", widgets::pct(count as f64 * 100.0 / total as f64))
}

/// An item of a packed line: a label and its value, in one colour or dim/plain.
fn item(label: &str, value: String, color: Option<Color>) -> Vec<Span<'static>> {
    match color {
        Some(c) => vec![Span::styled(format!("{label} {value}"), Style::new().fg(c))],
        None => vec![Span::styled(format!("{label} "), DIM), Span::raw(value)],
    }
}

/// Lays items out left to right, two spaces apart, starting a new line (indented by `indent`)
/// when the next item would not fit in `width`.
fn pack(items: Vec<Vec<Span<'static>>>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    let mut items_on_line = 0;
    for item in items {
        let w: usize = item.iter().map(Span::width).sum();
        if items_on_line > 0 && used + 2 + w > width {
            lines.push(Line::from(std::mem::take(&mut line)));
            line.push(Span::raw(" ".repeat(indent)));
            used = indent;
            items_on_line = 0;
        }
        if items_on_line > 0 {
            line.push(Span::raw("  "));
            used += 2;
        }
        line.extend(item);
        used += w;
        items_on_line += 1;
    }
    if items_on_line > 0 {
        lines.push(Line::from(line));
    }
    lines
}

/// The indent that lines up continuation lines after a leading item.
fn hanging(first: &[Span]) -> usize {
    first.iter().map(Span::width).sum::<usize>() + 2
}

fn render_workers(snap: &Snapshot, area: Rect, buf: &mut Buffer) {
    let w = &snap.workers;
    let legend = Line::from(vec![
        Span::styled(" █ busy", Style::new().fg(BUSY)),
        Span::styled(" ▒ blocked", Style::new().fg(widgets::BLOCKED)),
        Span::styled(" ░ idle ", Style::new().fg(widgets::IDLE)),
        Span::styled("% ", DIM),
    ]);
    let title = if w.total == 0 {
        "Workers".to_owned()
    } else {
        format!("Workers {}", count(w.total as u64))
    };
    let block = pane_block(&title, false).title_bottom(legend.right_aligned());
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.is_empty() {
        return;
    }
    let width = usize::from(inner.width);
    let phase = |label: &str, state: WorkerState, n: usize| {
        item(label, share(n, w.total), Some(widgets::worker_color(state)))
    };
    let busy = item("busy", share(w.busy, w.total), Some(BUSY));
    let busy_indent = hanging(&busy);
    let mut lines = pack(
        vec![
            busy,
            phase("connect", WorkerState::Connecting, w.busy_by.connecting),
            phase(
                "ttfb",
                WorkerState::WaitingFirstByte,
                w.busy_by.waiting_first_byte,
            ),
            phase("receive", WorkerState::Receiving, w.busy_by.receiving),
            phase("parse", WorkerState::Parsing, w.busy_by.parsing),
        ],
        width,
        busy_indent,
    );
    let blocked = item("blocked", share(w.blocked, w.total), Some(widgets::BLOCKED));
    let blocked_indent = hanging(&blocked);
    let mut causes = vec![
        blocked,
        phase(
            "polite",
            WorkerState::BlockedPoliteness,
            w.blocked_by.politeness,
        ),
        phase("robots", WorkerState::BlockedRobots, w.blocked_by.robots),
    ];
    // Only while the page store holds the crawl back: the pane has no line to spare.
    if w.blocked_by.store > 0 {
        causes.push(phase(
            "store",
            WorkerState::BlockedStore,
            w.blocked_by.store,
        ));
    }
    // Likewise only while fetched pages wait for a thread of the parse pool.
    if w.blocked_by.parse > 0 {
        causes.push(phase(
            "parse",
            WorkerState::BlockedParse,
            w.blocked_by.parse,
        ));
    }
    lines.extend(pack(causes, width, blocked_indent));
    let now = Shares {
        idle_pct: w.idle_pct,
        blocked_pct: w.blocked_pct,
        busy_pct: w.busy_pct,
    };
    SharesBar {
        label: "now",
        shares: now,
    }
    .render(row(inner, 0), buf);
    SharesBar {
        label: "10s",
        shares: w.avg_10s,
    }
    .render(row(inner, 1), buf);
    let mut y = 2;
    for line in lines {
        if y >= inner.height {
            return;
        }
        line.render(row(inner, y), buf);
        y += 1;
    }
    let strip = Rect {
        y: inner.y + y,
        height: inner.height - y,
        ..inner
    };
    WorkerStrip { slots: &w.slots }.render(strip, buf);
}

/// Line `y` of `area`.
fn row(area: Rect, y: u16) -> Rect {
    Rect {
        y: area.y + y,
        height: 1,
        ..area
    }
    .intersection(area)
}

// --- jobs and errors ---------------------------------------------------------------------------

const JOB_COLUMN: usize = 9;

fn render_jobs(snap: &Snapshot, area: Rect, buf: &mut Buffer) {
    let s = &snap.scheduler;
    let block = pane_block("Jobs", false);
    let inner = block.inner(area);
    block.render(area, buf);
    let cell = |n: u64| format!("{:>JOB_COLUMN$}", count_fit(n, JOB_COLUMN - 1));
    let mut lines = vec![
        Line::styled(
            format!(
                "{:<7}{:>JOB_COLUMN$}{:>JOB_COLUMN$}{:>JOB_COLUMN$}",
                "", "queued", "assigned", "done"
            ),
            DIM,
        ),
        Line::from(vec![
            Span::styled("spider ", DIM),
            Span::raw(cell(s.spider.queued)),
            Span::raw(cell(s.spider.assigned)),
            Span::raw(cell(s.spider.done)),
        ]),
        Line::from(vec![
            Span::styled("thinker", DIM),
            Span::raw(cell(s.thinker.queued)),
            Span::raw(cell(s.thinker.assigned)),
            Span::raw(cell(s.thinker.done)),
        ]),
    ];
    let total = s.queued + s.assigned + s.blocked + s.done;
    let blocked_style = if s.blocked > 0 {
        Style::new().fg(Color::Magenta)
    } else {
        Style::new()
    };
    lines.push(Line::from(vec![
        Span::styled("blocked on robots.txt ", DIM),
        Span::styled(count(s.blocked), blocked_style),
        Span::styled("   total ", DIM),
        Span::raw(count(total)),
    ]));
    let e = &snap.errors;
    let error = |label: &str, n: u64| {
        let color = (n > 0).then_some(Color::LightRed);
        vec![
            Span::styled(format!("{label} "), DIM),
            Span::styled(count(n), color.map_or(Style::new(), |c| Style::new().fg(c))),
        ]
    };
    // The classes the issue names first; the rest only where there is room.
    let mut items = vec![
        error("timeout", e.timeout),
        error("connect", e.connect),
        error("4xx", e.http_4xx),
        error("5xx", e.http_5xx),
        error("too large", e.too_large),
        error("disallowed", e.robots_forbidden),
        error("ignored", e.ignored),
        error("redirects", e.too_many_redirects),
        error("other", e.other),
        error("retries", e.retries),
    ];
    // Rare (a site whose robots.txt never answered), so only when there are some: beside the
    // URLs robots.txt rules disallow, which it is not.
    if e.robots_unreachable > 0 {
        items.insert(6, error("robots unread", e.robots_unreachable));
    }
    // The ordered commit, when pages are stored.
    let c = &snap.commit;
    if !c.store.is_empty() && c.store != "none" {
        let stat =
            |label: &str, n: u64| vec![Span::styled(format!("{label} "), DIM), Span::raw(count(n))];
        items.push(stat("commit: next seq", c.next_seq));
        items.push(stat("window", c.waiting));
        items.push(stat("rescheduled", c.rescheduled));
        let what = match snap.fault.as_ref().map(|f| f.what) {
            Some(FaultKind::Store) => Some("store error (see log)"),
            Some(FaultKind::Spill) => Some("spill file error (see log)"),
            Some(FaultKind::State) => Some("state file error (see log)"),
            None => c.error.is_some().then_some("store error (see log)"),
        };
        if let Some(what) = what {
            items.push(vec![Span::styled(what, Style::new().fg(Color::LightRed))]);
        }
    }
    lines.extend(pack(items, usize::from(inner.width), 0));
    for (y, line) in (0..inner.height).zip(lines) {
        line.render(row(inner, y), buf);
    }
}

// --- sites -------------------------------------------------------------------------------------

const SITE_COLUMNS: [(&str, u16); 7] = [
    ("robots", 10),
    ("delay", 6),
    ("source", 11),
    ("queued", 7),
    ("fetched", 7),
    ("err", 5),
    ("next", 6),
];
/// The cursor's mark before the origin.
const MARK: &str = "› ";

fn render_sites(app: &App, area: Rect, buf: &mut Buffer) {
    let focused = app.focus() == Pane::Sites;
    let total = count(app.site_count() as u64);
    let title = if app.filter().is_empty() {
        format!("Sites {total} · sort: {}", app.sort().label())
    } else {
        let filter: String = app.filter().chars().take(24).collect();
        format!(
            "Sites {} of {total} matching «{filter}» · sort: {}",
            count(app.site_order().len() as u64),
            app.sort().label()
        )
    };
    let block = pane_block(&title, focused).title_bottom(widgets::robots_legend().right_aligned());
    let inner = block.inner(area);
    block.render(area, buf);
    if app.site_count() == 0 {
        Line::styled("no sites yet", DIM).render(row(inner, 1), buf);
        return;
    }
    if app.site_order().is_empty() {
        Line::styled("no site matches the filter (f to change it)", DIM).render(row(inner, 1), buf);
        return;
    }
    let fixed: u16 = SITE_COLUMNS.iter().map(|(_, w)| w + 1).sum();
    // One free column before the right border, as in the other panes.
    let mark = MARK.chars().count() as u16;
    let origin_width = inner.width.saturating_sub(fixed + mark + 1);

    let rows = usize::from(inner.height.saturating_sub(1)).max(1);
    // App keeps the cursor visible for the size it was told; clamp again for the size drawn.
    let last_top = app.site_order().len().saturating_sub(rows);
    let top = keep_visible(app.sites_top().min(last_top), app.cursor(), rows);
    let visible = app.site_order().iter().skip(top).take(rows);
    let paused = app.snapshot().state == RunState::Paused;
    let table_rows = visible
        .filter_map(|&i| app.site(i))
        .map(|site| site_row(&site, usize::from(origin_width), paused));

    let mut widths = vec![Constraint::Length(origin_width)];
    widths.extend(SITE_COLUMNS.iter().map(|&(_, w)| Constraint::Length(w)));
    let mut header = vec![Cell::from("origin")];
    header.extend(SITE_COLUMNS.iter().enumerate().map(|(i, &(name, w))| {
        Cell::from(if i == 1 || i >= 3 {
            right(name, w)
        } else {
            name.into()
        })
    }));
    let highlight = if focused {
        Style::new().bg(Color::Indexed(236)).bold()
    } else {
        Style::new()
    };
    let table = Table::new(table_rows, widths)
        .header(Row::new(header).style(DIM.bold()))
        .column_spacing(1)
        .row_highlight_style(highlight)
        .highlight_symbol(MARK)
        .highlight_spacing(HighlightSpacing::Always);
    let mut state = TableState::new().with_selected(Some(app.cursor() - top));
    StatefulWidget::render(table, inner, buf, &mut state);
}

fn right(text: &str, width: u16) -> String {
    format!("{text:>w$}", w = usize::from(width))
}

fn site_row(site: &SiteRow, origin_width: usize, paused: bool) -> Row<'static> {
    let source_style = match site.delay_source {
        DelaySource::Configured => DIM,
        DelaySource::CrawlDelay | DelaySource::CappedCrawlDelay | DelaySource::Adaptive => {
            Style::new().fg(Color::Cyan)
        }
        DelaySource::Backoff | DelaySource::RetryAfter => Style::new().fg(Color::Yellow),
    };
    let errors_style = if site.errors > 0 {
        Style::new().fg(Color::LightRed)
    } else {
        Style::new()
    };
    let next_style = if site.next_allowed_in_ms == 0 && !paused {
        Style::new().fg(BUSY)
    } else {
        Style::new()
    };
    let number = |n: u64, w: usize| format!("{:>w$}", count_fit(n, w));
    Row::new(vec![
        Cell::from(widgets::fit_origin(&site.origin, origin_width)),
        Cell::from(Span::styled(
            widgets::robots_label(site.robots_state),
            widgets::robots_style(site.robots_state),
        )),
        Cell::from(format!("{:>6}", widgets::millis(site.delay_ms))),
        Cell::from(Span::styled(
            widgets::source_label(site.delay_source),
            source_style,
        )),
        Cell::from(number(site.queued, 7)),
        Cell::from(number(site.fetched, 7)),
        Cell::from(Span::styled(number(site.errors, 5), errors_style)),
        Cell::from(Span::styled(
            format!("{:>6}", widgets::countdown(site.next_allowed_in_ms, paused)),
            next_style,
        )),
    ])
}

// --- heap and log ------------------------------------------------------------------------------

fn render_heap(app: &App, area: Rect, buf: &mut Buffer) {
    let snap = app.snapshot();
    let block = pane_block("Next up (heap)", app.focus() == Pane::Heap);
    let mut inner = block.inner(area);
    block.render(area, buf);
    if snap.heap.is_empty() {
        Line::styled("heap empty", DIM).render(row(inner, 0), buf);
        return;
    }
    if heap_header_rows(area) == 1 {
        HeapList::header(inner.width).render(row(inner, 0), buf);
        inner.y += 1;
        inner.height -= 1;
    }
    let last_top = snap.heap.len().saturating_sub(usize::from(inner.height));
    HeapList {
        rows: &snap.heap,
        offset: app.heap_top().min(last_top),
        paused: snap.state == RunState::Paused,
    }
    .render(inner, buf);
}

/// The members of a shared crawl (`c`): who works, on how many sites, how fast, how recently
/// heard from.
fn render_members(app: &App, area: Rect, buf: &mut Buffer) {
    let snap = app.snapshot();
    let Some(c) = &snap.cluster else {
        let block = pane_block("Members", app.focus() == Pane::Heap);
        let inner = block.inner(area);
        block.render(area, buf);
        // Two short lines: the heap's pane is narrow on an 80- or 100-column terminal.
        Line::styled("not a shared crawl", DIM).render(row(inner, 0), buf);
        Line::styled("(crawl --cluster)", DIM).render(row(inner, 1), buf);
        return;
    };
    let title = format!("Members of {}", c.crawl_id);
    let block = pane_block(&title, app.focus() == Pane::Heap);
    let inner = block.inner(area);
    block.render(area, buf);
    if let Some(fault) = &c.fault {
        Line::styled(format!("Redis: {fault}"), Style::new().fg(Color::Red))
            .render(row(inner, 0), buf);
        return;
    }
    // Two lines a member, to fit the heap's place: who, its sites, when last heard from; then
    // its speed and its workers busy / blocked / idle.
    let rows = c.members.iter().map(|m| {
        let state = if m.gone {
            Span::styled("gone", DIM)
        } else if m.silent {
            Span::styled("silent", Style::new().fg(Color::Red))
        } else {
            Span::styled(format!("{:.0}s", m.last_beat_s), DIM)
        };
        let me = if m.id == c.member { "*" } else { " " };
        let who = ratatui::text::Text::from(vec![
            Line::raw(format!("{me}{}", m.id)),
            Line::styled(
                format!(
                    "  {}  {}/{}/{}",
                    widgets::page_rate(m.pages_per_s),
                    m.busy,
                    m.blocked,
                    m.idle
                ),
                DIM,
            ),
        ]);
        Row::new(vec![
            Cell::from(who),
            Cell::from(count(m.sites_leased)),
            Cell::from(state),
        ])
        .height(2)
    });
    let widths = [
        Constraint::Min(8),
        Constraint::Length(5),
        Constraint::Length(6),
    ];
    let header = Row::new(["member: p/s b/bl/i", "sites", "beat"]).style(DIM);
    let table = Table::new(rows, widths).header(header);
    Widget::render(table, inner, buf);
}

fn render_log(app: &App, area: Rect, buf: &mut Buffer) {
    let log = &app.snapshot().log;
    let rows = usize::from(area.height.saturating_sub(2));
    let back = app.log_back().min(log.len().saturating_sub(rows));
    let title = if back > 0 {
        format!("Log ↑{back}")
    } else {
        "Log".to_owned()
    };
    let block = pane_block(&title, app.focus() == Pane::Log);
    let inner = block.inner(area);
    block.render(area, buf);
    if log.is_empty() {
        Line::styled("no warnings", DIM).render(row(inner, 0), buf);
        return;
    }
    let end = log.len() - back;
    let start = end.saturating_sub(rows);
    for (y, entry) in (0..inner.height).zip(&log[start..end]) {
        let level_style = match entry.level.to_ascii_uppercase().as_str() {
            "ERROR" => Style::new().fg(Color::LightRed).bold(),
            "WARN" | "WARNING" => Style::new().fg(Color::Yellow),
            _ => DIM,
        };
        Line::from(vec![
            Span::styled(widgets::elapsed(entry.at_s as f64), DIM),
            Span::raw(" "),
            Span::styled(format!("{:<5}", entry.level), level_style),
            Span::raw(" "),
            Span::raw(entry.message.as_str()),
        ])
        .render(row(inner, y), buf);
    }
}

// --- footer ------------------------------------------------------------------------------------

fn render_footer(app: &App, area: Rect, buf: &mut Buffer) {
    let snap = app.snapshot();
    let key = |k: &'static str| Span::styled(k, Style::new().fg(FOCUS).bold());
    if snap.state == RunState::Finished {
        // The long label when it fits with the rest, the short one otherwise.
        let ended = if stopped(app) {
            " crawl stopped"
        } else {
            " crawl finished"
        };
        for label in [" · stats written to ", " · stats in "] {
            let mut spans = vec![Span::styled(ended, Style::new().bold())];
            if let Some(path) = app.stats_path() {
                spans.push(Span::styled(label, DIM));
                spans.push(Span::styled(path.to_owned(), Style::new().fg(Color::Green)));
            }
            spans.extend([
                Span::styled(" · ", DIM),
                key("/"),
                Span::styled(" search · any other key exits", DIM),
            ]);
            let line = Line::from(spans);
            if line.width() <= usize::from(area.width) || label == " · stats in " {
                line.render(area, buf);
                return;
            }
        }
    }
    if app.lifecycle() == Lifecycle::QuitWhenFinished {
        Line::from(vec![
            Span::styled(" stopping: in-flight fetches finish, then exit · ", DIM),
            key("Ctrl-C"),
            Span::styled(" exit now", DIM),
        ])
        .render(area, buf);
        return;
    }
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1;
    if let Some(notice) = app.notice() {
        spans.push(Span::styled(
            notice.to_owned(),
            Style::new().fg(Color::Yellow),
        ));
        spans.push(Span::raw("  "));
        used += notice.chars().count() + 2;
    }
    let pause = if app.run_state() == RunState::Paused {
        "resume"
    } else {
        "pause"
    };
    let hints = [
        ("p", pause),
        ("+/-", "delay"),
        ("]/[", "workers"),
        ("s", "stop"),
        ("q", "quit"),
        ("e", "export"),
        ("/", "search"),
        ("o", "sort"),
        ("tab", "pane"),
        ("enter", "detail"),
    ];
    let help = 6; // "? help"
    for (k, what) in hints {
        let w = k.len() + 1 + what.len() + 2;
        if used + w + help > usize::from(area.width) {
            break;
        }
        spans.extend([key(k), Span::styled(format!(" {what}  "), DIM)]);
        used += w;
    }
    spans.extend([key("?"), Span::styled(" help", DIM)]);
    Line::from(spans).render(area, buf);
}

/// `  (asked 10 min, capped)` when the site's Crawl-delay was cut to the maximum; a delay too
/// long to count (`inf`) was asked `for ever`.
fn capped_from(site: &SiteRow) -> String {
    match (site.crawl_delay_asked_ms, site.crawl_delay_ms) {
        (Some(u64::MAX), Some(_)) => "  (asked for ever, capped)".to_owned(),
        (Some(asked), Some(used)) if asked > used => {
            format!("  (asked {}, capped)", widgets::millis(asked))
        }
        _ => String::new(),
    }
}

// --- overlays ----------------------------------------------------------------------------------

fn render_results(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(results) = app.search().results() else {
        return;
    };
    Clear.render(area, buf);
    let key = |k: &'static str| Span::styled(k, Style::new().fg(FOCUS).bold());
    let keys = Line::from(vec![
        Span::raw(" "),
        key("↑↓"),
        Span::styled(" scroll · ", DIM),
        key("enter"),
        Span::styled(" search again · ", DIM),
        key("/"),
        Span::styled(" new search · ", DIM),
        key("esc"),
        Span::styled(" close ", DIM),
    ]);
    let title = format!("Search: {}", results.query());
    let title = widgets::truncate_left(&title, usize::from(area.width.saturating_sub(8)));
    let block = pane_block(&title, true).title_bottom(keys.right_aligned());
    let inner = block.inner(area);
    block.render(area, buf);
    SearchResults { results }.render(inner, buf);
}

/// A box of at most `width` x `height` in the middle of `area`, cleared.
fn popup(area: Rect, width: u16, height: u16, buf: &mut Buffer) -> Rect {
    let rect = area.centered(
        Constraint::Length(width.min(area.width)),
        Constraint::Length(height.min(area.height)),
    );
    Clear.render(rect, buf);
    rect
}

const HELP: [(&str, &str); 17] = [
    ("p, space", "pause / resume the crawl"),
    ("+ / -", "politeness delay up / down (0 ms … 10 s)"),
    ("] / [", "workers up / down"),
    ("s", "stop (a shared crawl: every member); screen stays"),
    ("q", "stop (a shared crawl: leave it), exit when done"),
    ("Ctrl-C", "the same; a second Ctrl-C exits at once"),
    ("e", "export the stats now"),
    ("tab, shift-tab", "next / previous pane: sites, heap, log"),
    ("↑ ↓ pgup pgdn", "scroll the focused pane"),
    ("home, end", "first / last row"),
    ("o", "sort sites: queued, fetched, errors, next, origin"),
    ("f", "filter sites by origin: enter applies, esc clears"),
    ("c", "members of a shared crawl, or the heap again"),
    ("enter, esc", "open / close the selected site's detail"),
    ("/", "search the pages stored so far (needs --out)"),
    ("", "results: enter again, ↑ ↓ scroll, esc close"),
    ("?", "this help"),
];

fn render_help(area: Rect, buf: &mut Buffer) {
    let key_style = Style::new().fg(FOCUS).bold();
    let mut lines: Vec<Line> = HELP
        .iter()
        .map(|&(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<15}"), key_style),
                Span::raw(what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    let mut glyphs = vec![Span::styled(" workers        ", DIM)];
    for (state, name) in [
        (WorkerState::Receiving, "busy "),
        (WorkerState::BlockedPoliteness, "blocked "),
        (WorkerState::Idle, "idle"),
    ] {
        glyphs.push(Span::styled(
            format!("{} {name}", widgets::worker_glyph(state)),
            Style::new().fg(widgets::worker_color(state)),
        ));
        glyphs.push(Span::raw(" "));
    }
    lines.push(Line::from(glyphs));
    lines.push(Line::from(vec![
        Span::styled(" busy phases    ", DIM),
        phase_span("connect", WorkerState::Connecting),
        phase_span("first byte", WorkerState::WaitingFirstByte),
        phase_span("receive", WorkerState::Receiving),
        phase_span("parse", WorkerState::Parsing),
    ]));
    lines.push(Line::from(vec![
        Span::styled(" blocked by     ", DIM),
        phase_span("politeness", WorkerState::BlockedPoliteness),
        phase_span("robots.txt", WorkerState::BlockedRobots),
        phase_span("store", WorkerState::BlockedStore),
        phase_span("parse", WorkerState::BlockedParse),
    ]));
    let mut robots = vec![Span::styled(" robots.txt     ", DIM)];
    for state in widgets::ROBOTS_STATES {
        robots.push(Span::styled(
            format!("{} ", widgets::robots_label(state)),
            widgets::robots_style(state),
        ));
    }
    lines.push(Line::from(robots));
    let height = lines.len() as u16 + 2;
    let rect = popup(area, 68, height, buf);
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(Style::new().fg(FOCUS))
                .title(" Keys ".bold())
                .title_bottom(Line::styled(" any key closes ", DIM).right_aligned()),
        )
        .render(rect, buf);
}

fn phase_span(name: &'static str, state: WorkerState) -> Span<'static> {
    Span::styled(
        format!("{name}  "),
        Style::new().fg(widgets::worker_color(state)),
    )
}

const DETAIL_WIDTH: u16 = 62;

/// The robots.txt rules summary, its parts packed into lines that fit the site detail.
fn rules_lines<'a>(rules: &str, label: impl Fn(&str) -> Span<'a>) -> Vec<Line<'a>> {
    let width = usize::from(DETAIL_WIDTH - 2 - 15);
    let mut packed: Vec<String> = Vec::new();
    for part in rules.split("; ").filter(|p| !p.is_empty()) {
        match packed.last_mut() {
            Some(line) if line.chars().count() + 2 + part.chars().count() <= width => {
                line.push_str("; ");
                line.push_str(part);
            }
            _ => packed.push(part.chars().take(width).collect()),
        }
    }
    packed
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            Line::from(vec![
                label(if i == 0 { "rules" } else { "" }),
                Span::raw(text),
            ])
        })
        .collect()
}

fn render_detail(snap: &Snapshot, site: Option<&SiteRow>, area: Rect, buf: &mut Buffer) {
    let Some(site) = site else {
        let rect = popup(area, 50, 3, buf);
        Paragraph::new(" this site is no longer in the snapshot")
            .block(Block::bordered().title_bottom(" esc closes "))
            .render(rect, buf);
        return;
    };
    let label = |text: &str| Span::styled(format!(" {text:<14}"), DIM);
    let mut lines = vec![Line::from(vec![
        label("robots.txt"),
        Span::styled(
            widgets::robots_label(site.robots_state),
            widgets::robots_style(site.robots_state),
        ),
    ])];
    lines.extend(rules_lines(&site.robots_rules, label));
    lines.extend([
        Line::from(vec![
            label("delay"),
            Span::raw(widgets::millis(site.delay_ms)),
            Span::styled(
                format!("  ({})", widgets::source_label(site.delay_source)),
                DIM,
            ),
        ]),
        Line::from(vec![
            label("Crawl-delay"),
            Span::raw(
                site.crawl_delay_ms
                    .map_or("none".to_owned(), widgets::millis),
            ),
            Span::styled(capped_from(site), DIM),
        ]),
        Line::from(vec![
            label("next contact"),
            Span::raw(widgets::countdown(
                site.next_allowed_in_ms,
                snap.state == RunState::Paused,
            )),
        ]),
    ]);
    if let Some((rank, entry)) = snap
        .heap
        .iter()
        .enumerate()
        .find(|(_, h)| h.origin == site.origin)
    {
        lines.push(Line::from(vec![
            label("in the heap"),
            Span::raw(format!(
                "#{} of the top {}, ready in {}",
                rank + 1,
                snap.heap.len(),
                widgets::millis(entry.ready_in_ms)
            )),
        ]));
    }
    lines.push(Line::from(vec![
        label("queued"),
        Span::raw(count(site.queued)),
        Span::styled("   in flight ", DIM),
        Span::raw(count(site.in_flight)),
    ]));
    lines.push(Line::from(vec![
        label("fetched"),
        Span::raw(count(site.fetched)),
        Span::styled("   errors ", DIM),
        Span::raw(count(site.errors)),
    ]));
    lines.extend(status_lines(
        site,
        usize::from(DETAIL_WIDTH - 2 - 15),
        label,
    ));
    for (i, e) in site.recent_errors.iter().rev().take(3).enumerate() {
        let width = usize::from(DETAIL_WIDTH - 2 - 15);
        let text: String = e.chars().take(width).collect();
        lines.push(Line::from(vec![
            label(if i == 0 { "recent errors" } else { "" }),
            Span::styled(text, Style::new().fg(Color::Red)),
        ]));
    }
    let height = lines.len() as u16 + 2;
    let rect = popup(area, DETAIL_WIDTH, height, buf);
    let origin = widgets::fit_origin(&site.origin, usize::from(DETAIL_WIDTH) - 6);
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(Style::new().fg(FOCUS))
                .title(Span::styled(format!(" {origin} "), Style::new().bold()))
                .title_bottom(Line::styled(" esc closes ", DIM).right_aligned()),
        )
        .render(rect, buf);
}

/// Responses by status code, coloured by class, packed under a `status` label.
fn status_lines(
    site: &SiteRow,
    width: usize,
    label: impl Fn(&str) -> Span<'static>,
) -> Vec<Line<'static>> {
    let statuses: Vec<Vec<Span<'static>>> = site
        .status
        .iter()
        .map(|(code, n)| {
            let color = match code.as_bytes().first() {
                Some(b'2') => Color::Green,
                Some(b'3') => Color::Cyan,
                Some(b'4') => Color::Yellow,
                Some(b'5') => Color::LightRed,
                _ => Color::Gray,
            };
            vec![
                Span::styled(code.clone(), Style::new().fg(color)),
                Span::raw(format!(" {}", count(*n))),
            ]
        })
        .collect();
    let packed = if statuses.is_empty() {
        vec![Line::styled("no responses yet", DIM)]
    } else {
        pack(statuses, width, 0)
    };
    packed
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let mut spans = vec![label(if i == 0 { "status" } else { "" })];
            spans.extend(line.spans);
            Line::from(spans)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::dashboard::app::{Action, Effect, Scroll};
    use crate::dashboard::search::{Edit, Outcome};
    use crate::robots::RobotsState;
    use crate::snapshot::{
        Averages, BlockedBy, BusyBy, Ended, Errors, HeapRow, Http, LogLine, Politeness, Rates,
        Resources, Scheduler, TaskCounts, Workers,
    };

    #[allow(clippy::too_many_arguments)]
    fn site(
        port: u16,
        robots_state: RobotsState,
        delay_ms: u64,
        delay_source: DelaySource,
        queued: u64,
        fetched: u64,
        errors: u64,
        next_allowed_in_ms: u64,
    ) -> SiteRow {
        let mut status = BTreeMap::new();
        if fetched > 0 {
            status.insert("200".to_owned(), fetched - errors);
        }
        if errors > 0 {
            status.insert("404".to_owned(), errors);
        }
        SiteRow {
            origin: format!("http://127.0.0.1:{port}"),
            robots_state,
            crawl_delay_ms: matches!(
                delay_source,
                DelaySource::CrawlDelay | DelaySource::CappedCrawlDelay
            )
            .then_some(delay_ms),
            crawl_delay_asked_ms: match delay_source {
                DelaySource::CrawlDelay => Some(delay_ms),
                DelaySource::CappedCrawlDelay => Some(delay_ms * 2),
                _ => None,
            },
            delay_ms,
            delay_source,
            queued,
            in_flight: u64::from(next_allowed_in_ms == 0 && queued > 0),
            fetched,
            errors,
            next_allowed_in_ms,
            status,
            recent_errors: (0..errors.min(2))
                .map(|i| format!("/missing-{i}.html: http 404"))
                .collect(),
            robots_rules: "group \"*\": 2 allow, 3 disallow; 312 bytes; last answer 200".into(),
        }
    }

    fn fixture() -> Snapshot {
        use DelaySource::{
            Adaptive, Backoff, CappedCrawlDelay, Configured, CrawlDelay, RetryAfter,
        };
        use RobotsState::{Discovered, Error, Handled, Skipped, Unexisting};
        let sites = vec![
            site(18004, Handled, 100, Configured, 612, 1_031, 3, 12),
            site(18019, Handled, 1_000, CrawlDelay, 9, 16, 0, 640),
            site(18002, Unexisting, 100, Configured, 540, 1_120, 0, 71),
            site(18031, Error, 30_000, Backoff, 44, 0, 5, 29_400),
            site(18007, Handled, 30_000, CappedCrawlDelay, 590, 48, 0, 12_050),
            site(18011, Handled, 180, Adaptive, 488, 2_210, 1, 0),
            site(18023, Unexisting, 5_000, RetryAfter, 130, 402, 27, 4_200),
            site(18040, Discovered, 100, Configured, 73, 0, 0, 0),
            site(18041, Discovered, 100, Configured, 12, 0, 0, 0),
            site(18013, Skipped, 100, Configured, 301, 877, 2, 35),
            site(18016, Handled, 250, Adaptive, 0, 1_504, 0, 180),
            site(18028, Error, 2_000, Backoff, 18, 3, 3, 1_600),
        ];
        let heap = vec![
            heap_row(18011, 0, 488),
            heap_row(18004, 12, 612),
            heap_row(18013, 35, 301),
            heap_row(18002, 71, 540),
            heap_row(18016, 180, 1),
            heap_row(18019, 640, 9),
        ];
        let log = vec![
            log_line(
                41,
                "WARN",
                "http://127.0.0.1:18007 Crawl-delay 60 s capped to 30 s",
            ),
            log_line(
                96,
                "WARN",
                "http://127.0.0.1:18023 429 Too Many Requests: Retry-After 5 s",
            ),
            log_line(
                150,
                "ERROR",
                "http://127.0.0.1:18031 robots.txt: 503, retrying in 30 s",
            ),
            log_line(
                188,
                "WARN",
                "http://127.0.0.1:18028 connection refused, backing off 2 s",
            ),
        ];
        let history = (0..60)
            .map(|i| 900.0 + 600.0 * (f64::from(i) / 6.0).sin().abs())
            .collect();
        Snapshot {
            state: RunState::Running,
            elapsed_s: 192.4,
            workers: fixture_workers(),
            scheduler: Scheduler {
                queued: 9_323,
                assigned: 64,
                blocked: 212,
                done: 36_438,
                spider: TaskCounts {
                    queued: 9_311,
                    assigned: 61,
                    done: 18_240,
                },
                thinker: TaskCounts {
                    queued: 12,
                    assigned: 3,
                    done: 18_198,
                },
                on_disk: 0,
                spilled_bytes: 0,
            },
            resources: Resources {
                discovered: 27_940,
                fetched: 18_204,
                parsed: 16_800,
                ..Resources::default()
            },
            errors: fixture_errors(),
            http: Http::default(),
            politeness: Politeness {
                delay_ms: 100,
                per_site: 1,
                max_crawl_delay_ms: 30_000,
                adaptive_factor: Some(2.0),
            },
            sites,
            site_count: 0,
            heap,
            rates: Rates {
                pages_per_s: 1_482.3,
                bytes_per_s: 3_140_000.0,
                responses_per_s: 1_490.1,
                history,
            },
            log,
            ..Snapshot::default()
        }
    }

    fn fixture_workers() -> Workers {
        let slots = [
            [WorkerState::Receiving; 9].as_slice(),
            &[WorkerState::WaitingFirstByte; 20],
            &[WorkerState::Connecting; 3],
            &[WorkerState::Parsing; 5],
            &[WorkerState::BlockedPoliteness; 16],
            &[WorkerState::BlockedRobots; 1],
            &[WorkerState::Idle; 10],
        ]
        .concat();
        Workers {
            total: 64,
            idle: 10,
            blocked: 17,
            busy: 37,
            idle_pct: 15.6,
            blocked_pct: 26.6,
            busy_pct: 57.8,
            blocked_by: BlockedBy {
                politeness: 16,
                robots: 1,
                store: 0,
                parse: 0,
            },
            busy_by: BusyBy {
                connecting: 3,
                waiting_first_byte: 20,
                receiving: 9,
                parsing: 5,
            },
            avg_10s: Shares {
                idle_pct: 12.0,
                blocked_pct: 33.0,
                busy_pct: 55.0,
            },
            slots,
        }
    }

    fn fixture_errors() -> Errors {
        Errors {
            timeout: 3,
            connect: 0,
            http_4xx: 1_402,
            http_5xx: 7,
            too_large: 1,
            robots_forbidden: 152,
            robots_unreachable: 0,
            ignored: 5_575,
            other: 0,
            retries: 11,
            too_many_redirects: 2,
        }
    }

    fn heap_row(port: u16, ready_in_ms: u64, queue_len: u64) -> HeapRow {
        HeapRow {
            origin: format!("http://127.0.0.1:{port}"),
            ready_in_ms,
            queue_len,
        }
    }

    fn log_line(at_s: u64, level: &str, message: &str) -> LogLine {
        LogLine {
            at_s,
            level: level.into(),
            message: message.into(),
        }
    }

    fn app_with(snapshot: Snapshot, width: u16, height: u16) -> App {
        let mut app = App::new(100, 64);
        app.resize(width, height);
        app.set_snapshot(Arc::new(snapshot));
        app
    }

    fn draw(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
        terminal
            .draw(|frame| frame.render_widget(app, frame.area()))
            .expect("test backend");
        terminal
    }

    fn screen_text(terminal: &Terminal<TestBackend>) -> String {
        terminal.backend().to_string()
    }

    #[test]
    fn running_100x30() {
        let app = app_with(fixture(), 100, 30);
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    #[test]
    fn running_80x24() {
        let app = app_with(fixture(), 80, 24);
        insta::assert_snapshot!(draw(&app, 80, 24).backend());
    }

    #[test]
    fn running_140x40_puts_the_heap_beside_the_sites() {
        let app = app_with(fixture(), 140, 40);
        insta::assert_snapshot!(draw(&app, 140, 40).backend());
    }

    #[test]
    fn paused_100x30() {
        let mut snapshot = fixture();
        snapshot.state = RunState::Paused;
        snapshot.workers.slots = vec![WorkerState::Idle; 64];
        snapshot.workers.busy_pct = 0.0;
        snapshot.workers.blocked_pct = 0.0;
        snapshot.workers.idle_pct = 100.0;
        snapshot.workers.busy = 0;
        snapshot.workers.blocked = 0;
        snapshot.workers.idle = 64;
        snapshot.workers.busy_by = BusyBy::default();
        snapshot.workers.blocked_by = BlockedBy::default();
        snapshot.rates.pages_per_s = 0.0;
        snapshot.rates.responses_per_s = 0.0;
        snapshot.rates.bytes_per_s = 0.0;
        let app = app_with(snapshot, 100, 30);
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    /// URLs of a site whose robots.txt could not be read are counted apart from those its
    /// rules disallow, and shown only when there are some.
    #[test]
    fn urls_of_an_unread_robots_txt_are_shown_apart_from_disallowed_ones() {
        let mut snapshot = fixture();
        snapshot.errors.robots_unreachable = 4;
        let text = screen_text(&draw(&app_with(snapshot, 100, 30), 100, 30));
        assert!(
            text.contains("disallowed 152  robots unread 4  ignored 5,575"),
            "{text}"
        );
        let text = screen_text(&draw(&app_with(fixture(), 100, 30), 100, 30));
        assert!(!text.contains("robots unread"), "{text}");
    }

    /// A crawl that meets mostly 404s fetches few pages but many responses: the header says
    /// both, so it does not look stuck; when nearly every response is a page, pages alone.
    #[test]
    fn the_header_shows_responses_when_most_are_not_pages() {
        let mut snapshot = fixture();
        snapshot.rates.pages_per_s = 0.0;
        snapshot.rates.responses_per_s = 312.4;
        let text = screen_text(&draw(&app_with(snapshot, 100, 30), 100, 30));
        let header = text.lines().next().expect("a header");
        assert!(header.contains("0.0 p/s 312 resp/s"), "{header}");
        let text = screen_text(&draw(&app_with(fixture(), 100, 30), 100, 30));
        let header = text.lines().next().expect("a header");
        assert!(
            header.contains("1,482 p/s") && !header.contains("resp/s"),
            "{header}"
        );
    }

    /// The fixture as a crawl of `crawl_elapsed_s` seconds in all ended, with the averages the
    /// engine gives it.
    fn ended_after(mut snapshot: Snapshot, crawl_elapsed_s: f64) -> Snapshot {
        snapshot.state = RunState::Finished;
        snapshot.crawl_elapsed_s = crawl_elapsed_s;
        snapshot.averages = Averages::of(&snapshot);
        snapshot
    }

    /// A resumed crawl: its counts are the whole crawl's, so its averages are over every run's
    /// seconds, not this run's 192.4 (audit 33 F4: the header said 95 p/s for 18 p/s).
    #[test]
    fn a_resumed_crawl_that_ended_shows_the_whole_crawls_averages() {
        let mut snapshot = fixture();
        snapshot.http.bytes = 603_000_000;
        let app = app_with(ended_after(snapshot, 1_000.0), 100, 30);
        let text = screen_text(&draw(&app, 100, 30));
        let header = text.lines().next().unwrap_or_default();
        assert!(
            header.contains("avg 18 p/s") && header.contains("avg 603.0 kB/s"),
            "{header}"
        );
        // The clock is this run's.
        assert!(header.contains("00:03:12"), "{header}");
    }

    #[test]
    fn finished_with_stats_path_100x30() {
        let mut snapshot = fixture();
        snapshot.http.bytes = 603_000_000;
        let snapshot = ended_after(snapshot, 192.4);
        let mut app = app_with(snapshot, 100, 30);
        app.set_stats_path("crawltop-stats-20261121-063000.json".into());
        // The whole crawl's rates (18,204 pages and 603 MB in 192.4 s), not the last seconds'
        // (1,482 p/s, 3.1 MB/s in the fixture), which froze when it ended (audit 25).
        let header = screen_text(&draw(&app, 100, 30));
        let header = header.lines().next().unwrap_or_default();
        assert!(
            header.contains("avg 95 p/s") && header.contains("avg 3.1 MB/s"),
            "{header}"
        );
        assert!(!header.contains("1,482"), "{header}");
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    #[test]
    fn help_overlay_100x30() {
        let mut app = app_with(fixture(), 100, 30);
        app.apply(Action::Help);
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    #[test]
    fn help_overlay_fits_80x24() {
        let mut app = app_with(fixture(), 80, 24);
        app.apply(Action::Help);
        let text = screen_text(&draw(&app, 80, 24));
        assert!(text.contains("Keys"), "{text}");
        assert!(text.contains("any key closes"), "{text}");
        assert!(text.contains("this help"), "{text}");
    }

    #[test]
    fn site_detail_100x30() {
        let mut app = app_with(fixture(), 100, 30);
        app.apply(Action::OpenDetail);
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    /// A capped Crawl-delay says what the site asked for beside what is obeyed.
    #[test]
    fn a_capped_crawl_delay_shows_what_the_site_asked() {
        let mut app = app_with(fixture(), 100, 30);
        open_detail_of_18007(&mut app);
        let text = screen_text(&draw(&app, 100, 30));
        assert!(
            text.contains("Crawl-delay   30 s  (asked 1 min, capped)"),
            "{text}"
        );
    }

    /// A Crawl-delay too long to count (`inf`) was asked for ever, not for 5 billion hours.
    #[test]
    fn an_endless_crawl_delay_shows_as_asked_for_ever() {
        let mut snapshot = fixture();
        for site in &mut snapshot.sites {
            if site.origin.ends_with(":18007") {
                site.crawl_delay_asked_ms = Some(u64::MAX);
            }
        }
        let mut app = app_with(snapshot, 100, 30);
        open_detail_of_18007(&mut app);
        let text = screen_text(&draw(&app, 100, 30));
        assert!(
            text.contains("Crawl-delay   30 s  (asked for ever, capped)"),
            "{text}"
        );
    }

    fn open_detail_of_18007(app: &mut App) {
        app.apply(Action::OpenFilter);
        for c in "18007".chars() {
            app.apply(Action::FilterPrompt(Edit::Insert(c)));
        }
        app.apply(Action::ApplyFilter);
        app.apply(Action::OpenDetail);
    }

    #[test]
    fn too_small_60x20() {
        let app = app_with(fixture(), 60, 20);
        insta::assert_snapshot!(draw(&app, 60, 20).backend());
    }

    #[test]
    fn too_small_by_one_column_shows_the_notice() {
        let app = app_with(fixture(), 79, 24);
        let text = screen_text(&draw(&app, 79, 24));
        assert!(
            text.contains("terminal too small: 80x24 needed, have 79x24"),
            "{text}"
        );
    }

    #[test]
    fn empty_snapshot_draws_placeholders_not_garbage() {
        let app = app_with(Snapshot::default(), 80, 24);
        let text = screen_text(&draw(&app, 80, 24));
        assert!(text.contains("no sites yet"), "{text}");
        assert!(text.contains("heap empty"), "{text}");
        assert!(text.contains("no warnings"), "{text}");
    }

    #[test]
    fn c_shows_a_shared_crawls_members_in_the_heaps_place_and_the_header_its_totals() {
        let mut snap = fixture();
        let member = |id: &str, beat: f64, gone: bool| crate::snapshot::MemberRow {
            id: id.into(),
            host: "h".into(),
            pid: 1,
            sites_leased: 3,
            pages: 10,
            pages_per_s: 42.0,
            busy: 2,
            blocked: 1,
            idle: 1,
            last_beat_s: beat,
            gone,
            // Silent past its lease, 10 s here.
            silent: !gone && beat >= 10.0,
        };
        snap.cluster = Some(crate::snapshot::ClusterView {
            crawl_id: "docs-run".into(),
            member: "alpha:11".into(),
            members: vec![
                member("alpha:11", 0.4, false),
                member("beta:22", 0.0, true),
                member("gamma:33", 12.0, false),
            ],
            totals: [("pages".to_string(), 1234)].into(),
            ..Default::default()
        });
        let mut app = app_with(snap, 100, 30);
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("crawl-wide 1,234"), "{text}");
        // beta left; gamma has not beaten for 12 s: it is not counted as working.
        assert!(text.contains("1 member, 1 silent"), "{text}");
        assert!(!text.contains("Members of"), "the heap until c: {text}");
        app.apply(Action::ToggleMembers);
        let text = screen_text(&draw(&app, 100, 50));
        assert!(text.contains("Members of docs-run"), "{text}");
        assert!(text.contains("*alpha:11"), "this member marked: {text}");
        let line = |id: &str| text.lines().find(|l| l.contains(id)).unwrap_or_default();
        assert!(line("beta:22").contains("gone"), "{text}");
        assert!(line("gamma:33").contains("silent"), "{text}");
        // Below each member, its speed and workers.
        let below = text
            .lines()
            .skip_while(|l| !l.contains("alpha:11"))
            .nth(1)
            .unwrap_or_default();
        assert!(below.contains("42 p/s  2/1/1"), "{text}");
        app.apply(Action::ToggleMembers);
        let text = screen_text(&draw(&app, 100, 30));
        assert!(!text.contains("Members of"), "c again: the heap: {text}");
    }

    /// `c` in a crawl of one's own says it is none, whole, in the heap's narrow pane at 100x30
    /// (the sentence was cut: "not a shared crawl (crawl --cl"; audit 31).
    #[test]
    fn c_in_a_crawl_that_is_not_shared_says_so_whole() {
        let mut app = app_with(fixture(), 100, 30);
        app.apply(Action::ToggleMembers);
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("not a shared crawl"), "{text}");
        assert!(text.contains("(crawl --cluster)"), "{text}");
    }

    #[test]
    fn pending_delay_is_shown_at_once() {
        let mut app = app_with(fixture(), 100, 30);
        app.apply(Action::SetDelay(std::time::Duration::from_millis(250)));
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("delay 250 ms…"), "{text}");
    }

    #[test]
    fn notice_is_shown_in_the_footer() {
        let mut app = app_with(fixture(), 100, 30);
        app.set_notice("stats written to crawltop-stats-20261121-063000.json".into());
        let text = screen_text(&draw(&app, 100, 30));
        let footer = text.lines().last().unwrap_or_default();
        assert!(
            footer.contains("stats written to crawltop-stats"),
            "{footer}"
        );
    }

    /// The fixture with 10,000 sites on ports 20000.., site `i` with `i` URLs queued.
    fn ten_thousand_sites() -> Snapshot {
        let mut snapshot = fixture();
        snapshot.sites = (0..10_000u16)
            .map(|i| {
                site(
                    20_000 + i,
                    RobotsState::Handled,
                    100,
                    DelaySource::Configured,
                    u64::from(i),
                    0,
                    0,
                    0,
                )
            })
            .collect();
        snapshot
    }

    #[test]
    fn ten_thousand_sites_show_the_selected_window() {
        let snapshot = ten_thousand_sites();
        let mut app = app_with(snapshot, 100, 30);
        app.apply(Action::Scroll(Scroll::End));
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("Sites 10,000"), "{text}");
        // Sorted by queued, most first: the last row is the site with none queued.
        assert!(text.contains("› http://127.0.0.1:20000"), "{text}");
        assert!(!text.contains("http://127.0.0.1:29999"), "{text}");
    }

    #[test]
    fn a_filter_shows_its_text_and_match_count_in_the_title_and_its_prompt_in_the_footer() {
        let snapshot = ten_thousand_sites();
        let mut app = app_with(snapshot, 100, 30);
        app.apply(Action::OpenFilter);
        for c in ":2999".chars() {
            app.apply(Action::FilterPrompt(
                crate::dashboard::search::Edit::Insert(c),
            ));
        }
        let typing = screen_text(&draw(&app, 100, 30));
        assert!(typing.contains(" f :2999"), "{typing}");
        assert!(typing.contains("Enter filter sites"), "{typing}");
        assert!(
            typing.contains("Sites 10,000 ·"),
            "not applied yet: {typing}"
        );
        app.apply(Action::ApplyFilter);
        let text = screen_text(&draw(&app, 100, 30));
        // :29990 to :29999 match; most queued first.
        assert!(
            text.contains("Sites 10 of 10,000 matching «:2999»"),
            "{text}"
        );
        assert!(text.contains("› http://127.0.0.1:29999"), "{text}");
        assert!(!text.contains("http://127.0.0.1:2000"), "{text}");
        app.apply(Action::OpenFilter);
        app.apply(Action::FilterPrompt(
            crate::dashboard::search::Edit::Insert('x'),
        ));
        app.apply(Action::ApplyFilter);
        let none = screen_text(&draw(&app, 100, 30));
        assert!(none.contains("no site matches the filter"), "{none}");
    }

    #[test]
    fn a_resize_without_telling_the_app_still_shows_the_cursor() {
        let mut app = app_with(fixture(), 100, 40);
        app.apply(Action::Scroll(Scroll::End));
        let text = screen_text(&draw(&app, 80, 24));
        assert!(text.contains("› "), "{text}");
    }

    #[test]
    fn scrolled_back_log_says_so_in_its_title() {
        let mut snapshot = fixture();
        snapshot.log = (0..30)
            .map(|i| log_line(i, "WARN", &format!("warning number {i}")))
            .collect();
        let mut app = app_with(snapshot, 100, 30);
        app.apply(Action::FocusPrev);
        app.apply(Action::Scroll(Scroll::Up));
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("Log ↑1"), "{text}");
        assert!(text.contains("warning number 28"), "{text}");
        assert!(!text.contains("warning number 29"), "{text}");
    }

    fn hit(seq: u64, score: f32, title: &str, lines: &[(usize, &str)]) -> crate::index::Hit {
        crate::index::Hit {
            seq,
            url: format!("http://127.0.0.1:18004/chapter-{seq}.html"),
            title: title.into(),
            score,
            lines: lines.iter().map(|&(n, l)| (n, l.to_owned())).collect(),
            line_count: lines.len(),
        }
    }

    /// The fixture with `/rabbit` run and answered.
    fn searched(outcome: Outcome, width: u16, height: u16) -> App {
        let mut app = app_with(fixture(), width, height);
        app.apply(Action::OpenSearch);
        for c in "rabbit".chars() {
            app.apply(Action::Prompt(Edit::Insert(c)));
        }
        let Effect::Search(request) = app.apply(Action::RunSearch) else {
            panic!("a search is asked for");
        };
        assert_eq!(request.query, "rabbit");
        app.set_search_answer(request.id, outcome);
        app
    }

    fn rabbit_hits() -> Outcome {
        Outcome::Found {
            total: 184,
            indexed: 16_800,
            hits: vec![
                hit(
                    17,
                    8.214,
                    "Down the Rabbit-Hole",
                    &[
                        (
                            3,
                            "when suddenly a White Rabbit with pink eyes ran close by her.",
                        ),
                        (9, "the Rabbit say to itself, Oh dear! Oh dear!"),
                    ],
                ),
                hit(
                    42,
                    6.5,
                    "The Rabbit Sends in a Little Bill",
                    &[(1, "It was the White Rabbit, trotting slowly back again")],
                ),
                hit(
                    5,
                    5.031,
                    "The Pool of Tears",
                    &[(12, "  the Rabbit came near her")],
                ),
                hit(88, 4.2, "The White Rabbit", &[]),
            ],
        }
    }

    #[test]
    fn search_results_100x30() {
        let app = searched(rabbit_hits(), 100, 30);
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    #[test]
    fn search_prompt_100x30() {
        let mut app = searched(rabbit_hits(), 100, 30);
        app.apply(Action::OpenSearch);
        for c in "white q+p".chars() {
            app.apply(Action::Prompt(Edit::Insert(c)));
        }
        let text = screen_text(&draw(&app, 100, 30));
        let footer = text.lines().last().unwrap_or_default();
        assert!(footer.contains("/ white q+p"), "{footer}");
        assert!(footer.contains("Enter search · Esc cancel"), "{footer}");
        assert!(text.contains("Search: rabbit"), "the results stay: {text}");
    }

    #[test]
    fn a_long_query_shows_its_end_in_the_prompt() {
        let mut app = app_with(fixture(), 80, 24);
        app.apply(Action::OpenSearch);
        for c in format!("{}the end", "x".repeat(200)).chars() {
            app.apply(Action::Prompt(Edit::Insert(c)));
        }
        let text = screen_text(&draw(&app, 80, 24));
        let footer = text.lines().last().unwrap_or_default();
        assert!(footer.contains(" / …xxx"), "{footer}");
        assert!(footer.contains("xthe end "), "{footer}");
        assert!(
            footer.contains("Enter search · Esc cancel · ↑ history"),
            "{footer}"
        );
    }

    #[test]
    fn search_results_scroll_by_hits() {
        let hits = (0..40)
            .map(|i| hit(i, 40.0 - i as f32, &format!("Page {i}"), &[(1, "rabbit")]))
            .collect();
        let mut app = searched(
            Outcome::Found {
                total: 40,
                indexed: 100,
                hits,
            },
            100,
            30,
        );
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("chapter-0.html"), "{text}");
        app.apply(Action::Scroll(Scroll::End));
        let text = screen_text(&draw(&app, 100, 30));
        assert!(text.contains("chapter-39.html"), "{text}");
        assert!(!text.contains("chapter-0.html"), "{text}");
        assert!(text.contains("Workers 64"), "the panes above stay: {text}");
    }

    #[test]
    fn search_states_say_why_nothing_is_listed() {
        let cases = [
            (
                Outcome::NoFolder,
                "search needs an index: run with --out DIR, without --no-index",
            ),
            (Outcome::NothingIndexed, "nothing indexed yet"),
            (
                Outcome::Found {
                    total: 0,
                    indexed: 1_203,
                    hits: Vec::new(),
                },
                "no page matches «rabbit» among 1,203 indexed",
            ),
            (
                Outcome::Failed("cannot understand the query: unbalanced quote".into()),
                "cannot search: cannot understand the query: unbalanced quote",
            ),
        ];
        for (outcome, says) in cases {
            let app = searched(outcome, 80, 24);
            let text = screen_text(&draw(&app, 80, 24));
            assert!(text.contains(says), "{says}: {text}");
        }
        let mut waiting = app_with(fixture(), 80, 24);
        waiting.apply(Action::OpenSearch);
        waiting.apply(Action::RunSearch);
        let text = screen_text(&draw(&waiting, 80, 24));
        assert!(text.contains("searching…"), "{text}");
    }

    #[test]
    fn workers_held_back_by_the_store_are_named_only_then() {
        let text = screen_text(&draw(&app_with(fixture(), 100, 30), 100, 30));
        assert!(!text.contains("store "), "{text}");
        let mut snapshot = fixture();
        snapshot.workers.blocked_by.store = 8;
        let text = screen_text(&draw(&app_with(snapshot, 100, 30), 100, 30));
        assert!(text.contains("store 13%"), "{text}");
    }

    #[test]
    fn workers_waiting_for_the_parse_pool_are_named_only_then() {
        let text = screen_text(&draw(&app_with(fixture(), 100, 30), 100, 30));
        assert!(!text.contains("parse 19%"), "{text}");
        let mut snapshot = fixture();
        snapshot.workers.blocked_by.parse = 12;
        let text = screen_text(&draw(&app_with(snapshot, 100, 30), 100, 30));
        assert!(text.contains("parse 19%"), "{text}");
    }

    #[test]
    fn the_finished_screen_offers_search() {
        let app = app_with(ended_after(fixture(), 192.4), 80, 24);
        let text = screen_text(&draw(&app, 80, 24));
        let footer = text.lines().last().unwrap_or_default();
        assert!(
            footer.contains("/ search · any other key exits"),
            "{footer}"
        );
    }

    #[test]
    fn a_stopped_crawl_says_stopped_on_its_final_screen() {
        let mut snapshot = ended_after(fixture(), 192.4);
        snapshot.ended = Some(Ended::Stopped);
        let mut app = app_with(snapshot, 100, 30);
        app.set_stats_path("stats.json".into());
        let text = screen_text(&draw(&app, 100, 30));
        let header = text.lines().next().unwrap_or_default();
        assert!(header.contains("STOPPED"), "{header}");
        let footer = text.lines().last().unwrap_or_default();
        assert!(footer.contains("crawl stopped"), "{footer}");
        assert!(
            !text.contains("FINISHED") && !text.contains("crawl finished"),
            "{text}"
        );
        // A crawl that ran out of work is finished, as before.
        let mut snapshot = ended_after(fixture(), 192.4);
        snapshot.ended = Some(Ended::Completed);
        let text = screen_text(&draw(&app_with(snapshot, 100, 30), 100, 30));
        assert!(
            text.contains("FINISHED") && text.contains("crawl finished"),
            "{text}"
        );
    }

    #[test]
    fn pack_wraps_items_with_a_hanging_indent() {
        let items = ["aaaa", "bbbb", "cccc"]
            .iter()
            .map(|s| vec![Span::raw(*s)])
            .collect();
        let lines: Vec<String> = pack(items, 10, 2).iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["aaaa  bbbb", "  cccc"]);
    }
}
