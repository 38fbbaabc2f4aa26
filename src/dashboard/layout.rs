//! The dashboard's geometry: where each pane goes for a terminal size, and the numbers that
//! follow from it (rows a pane shows, hits the results pane shows, the smallest terminal).
//!
//! Both the state ([`super::app`], which scrolls by the rows in view) and the drawing
//! ([`super::view`]) read these numbers from here, so neither imports the other for them. It is
//! pure arithmetic on a [`Rect`]: it never reads the app, a snapshot or the terminal, and never
//! draws.

use ratatui::layout::{Constraint, Layout, Rect};

/// The pane that scroll keys act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Sites,
    Heap,
    Log,
}

impl Pane {
    pub(crate) fn next(self) -> Pane {
        match self {
            Pane::Sites => Pane::Heap,
            Pane::Heap => Pane::Log,
            Pane::Log => Pane::Sites,
        }
    }

    pub(crate) fn prev(self) -> Pane {
        match self {
            Pane::Sites => Pane::Log,
            Pane::Heap => Pane::Sites,
            Pane::Log => Pane::Heap,
        }
    }
}

/// Rows one hit takes in the results: the page, then its first matching line.
pub const HIT_ROWS: u16 = 2;
/// Rows above the hits: what was found, or why nothing was.
pub const RESULTS_HEADER_ROWS: u16 = 1;

/// The smallest terminal the dashboard draws on; below it, a notice says so.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;
/// From this width on, the heap sits beside the sites instead of beside the log.
const WIDE: u16 = 120;

/// Where each pane goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub workers: Rect,
    pub jobs: Rect,
    pub sites: Rect,
    pub heap: Rect,
    pub log: Rect,
    pub footer: Rect,
}

/// The panes for a terminal of `area`'s size; `None` below 80 x 24. Extra height goes mostly to
/// the sites, some to the log and the worker strip; extra width to the origins and, from 120
/// columns on, to a heap beside the sites.
pub fn layout(area: Rect) -> Option<Areas> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let extra = area.height - MIN_HEIGHT;
    let top = 8 + (extra / 6).min(3);
    let bottom = 4 + (extra / 3).min(6);
    let [header, top, middle, bottom, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(top),
        Constraint::Fill(1),
        Constraint::Length(bottom),
        Constraint::Length(1),
    ])
    .areas(area);
    let workers_width = (area.width * 9 / 20).clamp(36, 60);
    let [workers, jobs] =
        Layout::horizontal([Constraint::Length(workers_width), Constraint::Fill(1)]).areas(top);
    let (sites, heap, log) = if area.width >= WIDE {
        let [sites, heap] =
            Layout::horizontal([Constraint::Fill(1), Constraint::Length(36)]).areas(middle);
        (sites, heap, bottom)
    } else {
        let [log, heap] =
            Layout::horizontal([Constraint::Fill(1), Constraint::Length(32)]).areas(bottom);
        (middle, heap, log)
    };
    Some(Areas {
        header,
        workers,
        jobs,
        sites,
        heap,
        log,
        footer,
    })
}

/// How many entries of `pane` a terminal of `area`'s size shows (0 when too small).
pub fn visible_rows(area: Rect, pane: Pane) -> usize {
    let Some(areas) = layout(area) else {
        return 0;
    };
    let inner = |r: Rect| usize::from(r.height.saturating_sub(2));
    match pane {
        Pane::Sites => inner(areas.sites).saturating_sub(1),
        Pane::Heap => inner(areas.heap).saturating_sub(heap_header_rows(areas.heap)),
        Pane::Log => inner(areas.log),
    }
}

/// The search results pane: over the sites, the heap and the log, so the header, the workers
/// and the jobs stay in view and keep moving while the results are read.
pub(crate) fn results_area(areas: &Areas) -> Rect {
    Rect {
        x: areas.header.x,
        y: areas.sites.y,
        width: areas.header.width,
        height: areas.footer.y - areas.sites.y,
    }
}

/// How many hits the results pane shows at once for a terminal of `area`'s size.
pub fn visible_hits(area: Rect) -> usize {
    layout(area).map_or(0, |areas| {
        let inner = results_area(&areas).height.saturating_sub(2);
        usize::from(inner.saturating_sub(RESULTS_HEADER_ROWS) / HIT_ROWS)
    })
}

/// The heap gets a column header only when it has room for two entries below it.
pub(crate) fn heap_header_rows(heap: Rect) -> usize {
    usize::from(heap.height.saturating_sub(2) >= 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `use` lines of a source file, joined: what it imports, not what its comments say.
    fn imports(source: &str) -> String {
        source
            .lines()
            .filter(|l| {
                l.trim_start().starts_with("use ") || l.trim_start().starts_with("pub use ")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn geometry_depends_on_neither_the_state_nor_the_drawing() {
        let own = imports(include_str!("layout.rs"));
        assert!(!own.contains("app") && !own.contains("view"), "{own}");
        let app = imports(include_str!("app.rs"));
        assert!(!app.contains("view"), "app.rs imports view: {app}");
    }

    #[test]
    fn below_the_minimum_nothing_is_laid_out() {
        assert_eq!(layout(Rect::new(0, 0, MIN_WIDTH - 1, MIN_HEIGHT)), None);
        assert_eq!(layout(Rect::new(0, 0, MIN_WIDTH, MIN_HEIGHT - 1)), None);
        assert_eq!(visible_rows(Rect::new(0, 0, 79, 24), Pane::Sites), 0);
        assert_eq!(visible_hits(Rect::new(0, 0, 79, 24)), 0);
        let areas = layout(Rect::new(0, 0, MIN_WIDTH, MIN_HEIGHT)).expect("fits");
        // Every row of the terminal belongs to exactly one band.
        assert_eq!(
            areas.header.height + areas.workers.height + areas.sites.height + areas.log.height + 1,
            MIN_HEIGHT
        );
    }
}
