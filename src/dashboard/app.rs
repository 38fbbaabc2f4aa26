//! The dashboard's state: the latest snapshot, what the user is looking at (mode, focused pane,
//! sort, scroll positions), and what the user asked for that the engine has not confirmed yet.
//!
//! `App` never talks to the engine: `apply` turns an [`Action`] into an [`Effect`] that the
//! terminal loop carries out (send a command, run a search, leave). It never reads a clock or the terminal;
//! the loop tells it the terminal's size with [`App::resize`]. Drawing (`view.rs`) takes `&App`.

use std::sync::Arc;
use std::time::Duration;

use ratatui::layout::Rect;

use crate::dashboard::layout::{self, MIN_HEIGHT, MIN_WIDTH, Pane};
use crate::dashboard::search::{Edit, Outcome, Search, SearchRequest};
use crate::engine::Command;
use crate::site_table::{SiteSort, SiteTable};
use crate::snapshot::{RunState, SiteRow, Snapshot};

/// What a key asks for; `keys::action` decides, `App::apply` carries it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Pause,
    Resume,
    SetDelay(Duration),
    SetWorkers(usize),
    /// Stop gracefully; the final screen stays until a key.
    Stop,
    /// Stop, then leave once the crawl has finished.
    Quit,
    /// Leave at once (a second Ctrl-C).
    QuitNow,
    /// Write the stats now.
    Export,
    /// The crawl has finished: leave.
    Exit,
    FocusNext,
    FocusPrev,
    Scroll(Scroll),
    CycleSort,
    /// Open the detail of the site under the cursor.
    OpenDetail,
    /// Close the help overlay, the site detail or the search results.
    Close,
    Help,
    /// `/`: open the search prompt.
    OpenSearch,
    /// A key typed into the open prompt.
    Prompt(Edit),
    /// Esc in the prompt.
    ClosePrompt,
    /// Enter in the prompt: search for what it holds.
    RunSearch,
    /// Enter in the results pane: search again, the index having grown.
    RefreshSearch,
    /// `f`: open the sites filter prompt (a substring of the origin).
    OpenFilter,
    /// `c`: the members of a shared crawl in place of the heap, or the heap again.
    ToggleMembers,
    /// A key typed into the open filter prompt.
    FilterPrompt(Edit),
    /// Enter in the filter prompt: show only the matching sites.
    ApplyFilter,
    /// Esc in the filter prompt: close it and show every site again.
    ClearFilter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scroll {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
}

/// What the terminal loop must do after an action.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    None,
    Send(Command),
    /// Send `Command::Leave` (a stop, or a shared crawl's member leaving); the app stops
    /// running by itself once a finished snapshot arrives.
    Quit,
    /// Abort the crawl and leave now.
    QuitNow,
    /// The crawl has finished: leave.
    Exit,
    /// Run this query on the index, off the UI loop, and hand the answer to
    /// [`App::set_search_answer`].
    Search(SearchRequest),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Help,
    /// The detail of one site, by its id in the site table (discovery order, so the id names
    /// the same site for the whole crawl).
    SiteDetail(usize),
    /// The search results pane.
    Search,
}

/// The sites table's order; `o` cycles through them in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Most queued first.
    Queued,
    /// Most fetched first.
    Fetched,
    /// Most errors first.
    Errors,
    /// Soonest next contact first.
    NextContact,
    Origin,
}

impl SortKey {
    fn next(self) -> SortKey {
        match self {
            SortKey::Queued => SortKey::Fetched,
            SortKey::Fetched => SortKey::Errors,
            SortKey::Errors => SortKey::NextContact,
            SortKey::NextContact => SortKey::Origin,
            SortKey::Origin => SortKey::Queued,
        }
    }

    /// The table's order for this key.
    pub fn table_sort(self) -> SiteSort {
        match self {
            SortKey::Queued => SiteSort::Queued,
            SortKey::Fetched => SiteSort::Fetched,
            SortKey::Errors => SiteSort::Errors,
            SortKey::NextContact => SiteSort::Next,
            SortKey::Origin => SiteSort::Origin,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            SortKey::Queued => "queued",
            SortKey::Fetched => "fetched",
            SortKey::Errors => "errors",
            SortKey::NextContact => "next contact",
            SortKey::Origin => "origin",
        }
    }
}

/// Whether the dashboard stays up.
///
/// A crawl that ends by itself, or by `s` at this terminal, stays on its final screen until a
/// key: the user is here and may want to read or search it. One stopped from anywhere else (the
/// control API, the command port, a signal, another member of a shared crawl) ends the
/// dashboard once it has finished, as `q` does: whoever stopped it is not at this terminal, and
/// a process left waiting for a key would hold its control port (audit 31).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    Watching,
    /// `s`: the crawl was told to stop from this terminal; its end stays on screen.
    StopAskedHere,
    /// `q`, Ctrl-C, a signal, or a stop from elsewhere: leave as soon as it has finished.
    QuitWhenFinished,
    Leaving,
}

/// A setting the user can change: the value the engine last confirmed, and the one asked for.
/// The screen shows the asked-for value at once, marked as pending until a snapshot has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Setting<T> {
    confirmed: T,
    pending: Option<T>,
}

impl<T: Copy + PartialEq> Setting<T> {
    fn new(value: T) -> Self {
        Setting {
            confirmed: value,
            pending: None,
        }
    }

    fn shown(&self) -> T {
        self.pending.unwrap_or(self.confirmed)
    }

    fn confirm(&mut self, value: T) {
        self.confirmed = value;
        if self.pending == Some(value) {
            self.pending = None;
        }
    }
}

#[derive(Debug, Clone)]
pub struct App {
    snapshot: Arc<Snapshot>,
    /// The sites: the engine's live table, or one built from a snapshot that carries its rows
    /// (the final one, a fixture). Drawing reads the visible rows from it by id.
    table: Arc<SiteTable>,
    /// Site ids in display order (only those the filter matches); rebuilt when the table's
    /// version, the sort or the filter changes, never while drawing.
    order: Vec<usize>,
    /// The table version `order` was built at.
    sorted_at: Option<u64>,
    sort: SortKey,
    /// The filter in force: a substring of the origin; empty shows every site.
    filter: String,
    /// The filter prompt's text while it is open.
    filter_prompt: Option<String>,
    mode: Mode,
    focus: Pane,
    /// Position of the highlighted row in `order`.
    cursor: usize,
    /// The site the user moved the cursor to: the cursor follows it when the order changes.
    /// `None` until the user scrolls, so an untouched table keeps its top row highlighted.
    followed: Option<usize>,
    sites_top: usize,
    heap_top: usize,
    /// The members pane is shown in the heap's place (`c`).
    members: bool,
    /// Log lines scrolled back from the newest (0: follow the newest).
    log_back: usize,
    delay_ms: Setting<u64>,
    workers: Setting<usize>,
    /// Pause or resume asked for and not yet confirmed.
    pending_state: Option<RunState>,
    lifecycle: Lifecycle,
    notice: Option<String>,
    stats_path: Option<String>,
    /// The search prompt and results.
    search: Search,
    /// The terminal's size, so scrolling knows how many rows each pane shows.
    area: Rect,
}

impl App {
    /// `delay_ms` and `workers` are the configured values, shown until the first snapshot.
    pub fn new(delay_ms: u64, workers: usize) -> App {
        App {
            snapshot: Arc::new(Snapshot::default()),
            table: Arc::new(SiteTable::new()),
            order: Vec::new(),
            sorted_at: None,
            sort: SortKey::Queued,
            filter: String::new(),
            filter_prompt: None,
            mode: Mode::Normal,
            focus: Pane::Sites,
            cursor: 0,
            followed: None,
            sites_top: 0,
            heap_top: 0,
            members: false,
            log_back: 0,
            delay_ms: Setting::new(delay_ms),
            workers: Setting::new(workers),
            pending_state: None,
            lifecycle: Lifecycle::Watching,
            notice: None,
            stats_path: None,
            search: Search::default(),
            area: Rect::new(0, 0, MIN_WIDTH, MIN_HEIGHT),
        }
    }

    pub fn set_snapshot(&mut self, snap: Arc<Snapshot>) {
        self.delay_ms.confirm(snap.politeness.delay_ms);
        self.workers.confirm(snap.workers.total);
        if let Some(wanted) = self.pending_state
            && (snap.state == wanted
                || matches!(snap.state, RunState::Stopping | RunState::Finished))
        {
            self.pending_state = None;
        }
        if self.lifecycle == Lifecycle::Watching && stopped_elsewhere(&snap) {
            self.lifecycle = Lifecycle::QuitWhenFinished;
        }
        if self.lifecycle == Lifecycle::QuitWhenFinished && snap.state == RunState::Finished {
            self.lifecycle = Lifecycle::Leaving;
        }
        if !snap.sites.is_empty() {
            // A snapshot with its rows (the final one, a fixture) is the table from now on.
            self.table = Arc::new(SiteTable::from_rows(snap.sites.clone()));
            self.sorted_at = None;
        }
        self.snapshot = snap;
        self.sort_sites();
        self.clamp_scroll();
    }

    /// The engine's live site table, read in place (`CrawlHandle::sites`).
    pub fn set_table(&mut self, table: Arc<SiteTable>) {
        self.table = table;
        self.sorted_at = None;
        self.sort_sites();
        self.clamp_scroll();
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The terminal's size: call it at start and on every resize event.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.area = Rect::new(0, 0, width, height);
        self.clamp_scroll();
        let visible = self.visible_hits();
        self.search.scroll(None, visible);
    }

    pub fn is_running(&self) -> bool {
        self.lifecycle != Lifecycle::Leaving
    }

    /// A one-line message for the footer; it goes away with the next key.
    pub fn set_notice(&mut self, text: String) {
        self.notice = Some(text);
    }

    /// Where the stats were written, for the final screen.
    pub fn set_stats_path(&mut self, path: String) {
        self.stats_path = Some(path);
    }

    pub fn apply(&mut self, action: Action) -> Effect {
        if action != Action::Export {
            self.notice = None;
        }
        match action {
            Action::Pause => {
                self.pending_state = Some(RunState::Paused);
                Effect::Send(Command::Pause)
            }
            Action::Resume => {
                self.pending_state = Some(RunState::Running);
                Effect::Send(Command::Resume)
            }
            Action::SetDelay(delay) => {
                self.delay_ms.pending = Some(delay.as_millis() as u64);
                Effect::Send(Command::SetDelay(delay))
            }
            Action::SetWorkers(n) => {
                self.workers.pending = Some(n);
                Effect::Send(Command::SetWorkers(n))
            }
            Action::Stop => self.stop_here(),
            Action::Export => Effect::Send(Command::Export),
            Action::Quit => self.quit(),
            Action::QuitNow => self.leave(Effect::QuitNow),
            Action::Exit => self.leave(Effect::Exit),
            Action::FocusNext => {
                self.focus = self.focus.next();
                Effect::None
            }
            Action::FocusPrev => {
                self.focus = self.focus.prev();
                Effect::None
            }
            Action::Scroll(scroll) if self.mode == Mode::Search => {
                self.search.scroll(Some(scroll), self.visible_hits());
                Effect::None
            }
            Action::Scroll(scroll) => {
                self.scroll(scroll);
                Effect::None
            }
            Action::CycleSort => {
                self.sort = self.sort.next();
                self.resort();
                Effect::None
            }
            Action::OpenDetail => {
                if let Some(site) = self.site_under_cursor() {
                    self.mode = Mode::SiteDetail(site);
                }
                Effect::None
            }
            Action::Close => {
                if self.mode == Mode::Search {
                    self.search.close_results();
                }
                self.mode = Mode::Normal;
                Effect::None
            }
            Action::Help => {
                self.mode = Mode::Help;
                Effect::None
            }
            Action::OpenSearch | Action::Prompt(_) | Action::ClosePrompt => {
                match action {
                    Action::OpenSearch => self.search.open_prompt(),
                    Action::Prompt(edit) => self.search.edit(edit),
                    _ => self.search.close_prompt(),
                }
                Effect::None
            }
            Action::RunSearch => {
                let (now, finished) = self.crawl_clock();
                match self.search.submit(now, finished) {
                    Some(request) => {
                        self.mode = Mode::Search;
                        Effect::Search(request)
                    }
                    None => Effect::None,
                }
            }
            Action::ToggleMembers => self.toggle_members(),
            Action::OpenFilter
            | Action::FilterPrompt(_)
            | Action::ApplyFilter
            | Action::ClearFilter => self.filter_action(action),
            Action::RefreshSearch => {
                let (now, finished) = self.crawl_clock();
                self.search
                    .refresh(now, finished)
                    .map_or(Effect::None, Effect::Search)
            }
        }
    }

    /// A paste (the terminal brackets it): its text goes into the open prompt, control
    /// characters and line breaks as spaces. With no prompt open it does nothing: pasted text
    /// is never taken as keys.
    pub fn paste(&mut self, text: &str) {
        let clean = text.chars().map(|c| if c.is_control() { ' ' } else { c });
        if self.search.prompt().is_some() {
            for c in clean {
                self.search.edit(Edit::Insert(c));
            }
        } else if let Some(prompt) = self.filter_prompt.as_mut() {
            prompt.extend(clean);
        }
    }

    /// The crawl time and whether it has finished, as the latest snapshot says.
    fn crawl_clock(&self) -> (f64, bool) {
        (
            self.snapshot.elapsed_s,
            self.snapshot.state == RunState::Finished,
        )
    }

    /// The answer to a search the loop ran for an [`Effect::Search`].
    pub fn set_search_answer(&mut self, id: u64, outcome: Outcome) {
        let visible = self.visible_hits();
        self.search.answer(id, outcome, visible);
    }

    /// A search to run again now, when the pane shows nothing found and the index may have
    /// grown; the loop asks after each snapshot.
    pub fn search_due(&mut self) -> Option<SearchRequest> {
        if self.mode != Mode::Search {
            return None;
        }
        let (now, finished) = self.crawl_clock();
        self.search.due(now, finished)
    }

    pub fn search(&self) -> &Search {
        &self.search
    }

    fn visible_hits(&self) -> usize {
        layout::visible_hits(self.area).max(1)
    }

    /// `s`: the crawl stops; its end stays on screen ([`Lifecycle::StopAskedHere`]).
    fn stop_here(&mut self) -> Effect {
        if self.lifecycle == Lifecycle::Watching {
            self.lifecycle = Lifecycle::StopAskedHere;
        }
        Effect::Send(Command::Stop)
    }

    /// `q`, Ctrl-C: stop and leave once finished; leave now if it has finished.
    fn quit(&mut self) -> Effect {
        match (self.lifecycle, self.snapshot.state) {
            (_, RunState::Finished) => self.leave(Effect::Exit),
            (Lifecycle::Watching | Lifecycle::StopAskedHere, _) => {
                self.lifecycle = Lifecycle::QuitWhenFinished;
                Effect::Quit
            }
            _ => Effect::None,
        }
    }

    fn leave(&mut self, effect: Effect) -> Effect {
        self.lifecycle = Lifecycle::Leaving;
        effect
    }

    // --- what keys and view read ---------------------------------------------------------------

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn focus(&self) -> Pane {
        self.focus
    }

    pub fn sort(&self) -> SortKey {
        self.sort
    }

    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// The run state as the user sees it: a pause or resume asked for counts at once.
    pub fn run_state(&self) -> RunState {
        self.pending_state.unwrap_or(self.snapshot.state)
    }

    /// The confirmed run state differs from what was asked for.
    pub fn run_state_pending(&self) -> Option<RunState> {
        self.pending_state
    }

    /// The global politeness delay as shown: the asked-for value if any.
    pub fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_ms.shown())
    }

    pub fn delay_pending(&self) -> Option<Duration> {
        self.delay_ms.pending.map(Duration::from_millis)
    }

    /// The number of workers as shown: the asked-for value if any.
    pub fn workers(&self) -> usize {
        self.workers.shown()
    }

    pub fn workers_pending(&self) -> Option<usize> {
        self.workers.pending
    }

    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    pub fn stats_path(&self) -> Option<&str> {
        self.stats_path.as_deref()
    }

    /// Site ids, in display order, only those the filter matches.
    pub fn site_order(&self) -> &[usize] {
        &self.order
    }

    /// One site's row, by id (as in [`App::site_order`] and [`Mode::SiteDetail`]).
    pub fn site(&self, id: usize) -> Option<SiteRow> {
        self.table.get(id)
    }

    /// Every site the crawl knows, matched by the filter or not.
    pub fn site_count(&self) -> usize {
        self.table.len()
    }

    /// The filter in force (empty: none).
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// The filter prompt's text while it is open.
    pub fn filter_prompt(&self) -> Option<&str> {
        self.filter_prompt.as_deref()
    }

    /// The highlighted row's position in `site_order()`.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The highlighted site, as a site id.
    pub fn site_under_cursor(&self) -> Option<usize> {
        self.order.get(self.cursor).copied()
    }

    /// The first visible row of the sites table, as a position in `site_order()`.
    pub fn sites_top(&self) -> usize {
        self.sites_top
    }

    pub fn heap_top(&self) -> usize {
        self.heap_top
    }

    /// The members pane is shown in the heap's place.
    pub fn members_shown(&self) -> bool {
        self.members
    }

    fn toggle_members(&mut self) -> Effect {
        self.members = !self.members;
        Effect::None
    }

    pub fn log_back(&self) -> usize {
        self.log_back
    }

    // --- sorting and scrolling -----------------------------------------------------------------

    /// The sort or the filter changed: the order is built again now.
    fn resort(&mut self) {
        self.sorted_at = None;
        self.sort_sites();
        self.clamp_scroll();
    }

    /// `f`, typing in its prompt, Enter and Esc there.
    fn filter_action(&mut self, action: Action) -> Effect {
        match action {
            Action::OpenFilter => self.filter_prompt = Some(self.filter.clone()),
            Action::FilterPrompt(edit) => {
                if let Some(text) = self.filter_prompt.as_mut() {
                    match edit {
                        Edit::Insert(c) => text.push(c),
                        Edit::Backspace => {
                            text.pop();
                        }
                        Edit::Clear => text.clear(),
                        Edit::DeleteWord => {
                            let kept = text.trim_end().len();
                            let start = text[..kept].rfind(' ').map_or(0, |i| i + 1);
                            text.truncate(start);
                        }
                        Edit::Older | Edit::Newer => {}
                    }
                }
            }
            Action::ApplyFilter => {
                let text = self.filter_prompt.take().unwrap_or_default();
                self.set_filter(text.trim().to_string());
            }
            Action::ClearFilter => {
                self.filter_prompt = None;
                self.set_filter(String::new());
            }
            _ => {}
        }
        Effect::None
    }

    fn set_filter(&mut self, filter: String) {
        if filter != self.filter {
            self.filter = filter;
            self.resort();
        }
    }

    /// Rebuilds the order when the table changed since it was built (or the sort or filter
    /// did): at most once per snapshot, never while drawing.
    fn sort_sites(&mut self) {
        let version = self.table.version();
        if self.sorted_at == Some(version) {
            return;
        }
        self.sorted_at = Some(version);
        self.order.clear();
        self.order.extend(
            self.table
                .order(self.sort.table_sort(), &self.filter)
                .into_iter()
                .map(|id| id as usize),
        );
        if let Some(site) = self.followed {
            match self.order.iter().position(|&i| i == site) {
                Some(position) => self.cursor = position,
                None => self.followed = None,
            }
        }
    }

    fn rows(&self, pane: Pane) -> usize {
        layout::visible_rows(self.area, pane).max(1)
    }

    fn scroll(&mut self, scroll: Scroll) {
        match self.focus {
            Pane::Sites => {
                let last = self.order.len().saturating_sub(1);
                self.cursor = step(self.cursor, scroll, self.rows(Pane::Sites), last);
                self.followed = self.site_under_cursor();
            }
            Pane::Heap => {
                let rows = self.rows(Pane::Heap);
                let last_top = self.snapshot.heap.len().saturating_sub(rows);
                self.heap_top = step(self.heap_top, scroll, rows, last_top);
            }
            Pane::Log => {
                // `log_back` counts from the newest line, so up means further back.
                let rows = self.rows(Pane::Log);
                let oldest = self.snapshot.log.len().saturating_sub(rows);
                let reversed = match scroll {
                    Scroll::Up => Scroll::Down,
                    Scroll::Down => Scroll::Up,
                    Scroll::PageUp => Scroll::PageDown,
                    Scroll::PageDown => Scroll::PageUp,
                    Scroll::Home => Scroll::End,
                    Scroll::End => Scroll::Home,
                };
                self.log_back = step(self.log_back, reversed, rows, oldest);
            }
        }
        self.clamp_scroll();
    }

    /// Keeps every position inside its list and the cursor inside the visible rows.
    fn clamp_scroll(&mut self) {
        let sites = self.order.len();
        self.cursor = self.cursor.min(sites.saturating_sub(1));
        let rows = self.rows(Pane::Sites);
        // A list that shrank (a filter, fewer sites) fills the pane again from the top: no
        // rows above it are left scrolled away while the pane has room for them.
        let last_top = sites.saturating_sub(rows);
        self.sites_top = keep_visible(self.sites_top.min(last_top), self.cursor, rows);
        let heap_rows = self.rows(Pane::Heap);
        self.heap_top = self
            .heap_top
            .min(self.snapshot.heap.len().saturating_sub(heap_rows));
        let log_rows = self.rows(Pane::Log);
        self.log_back = self
            .log_back
            .min(self.snapshot.log.len().saturating_sub(log_rows));
    }
}

/// The crawl is stopping or over on a stop it was given. Read while the dashboard is
/// [`Lifecycle::Watching`], that stop came from elsewhere: one from this terminal's keys or the
/// dashboard's signals changed the lifecycle before it was sent.
fn stopped_elsewhere(snap: &Snapshot) -> bool {
    matches!(snap.state, RunState::Stopping | RunState::Finished)
        && snap.commands.iter().any(|c| c.command == "stop")
}

/// Moves `position` in 0..=`last` by one scroll step; a page is `rows` long.
pub(crate) fn step(position: usize, scroll: Scroll, rows: usize, last: usize) -> usize {
    let moved = match scroll {
        Scroll::Up => position.saturating_sub(1),
        Scroll::Down => position.saturating_add(1),
        Scroll::PageUp => position.saturating_sub(rows),
        Scroll::PageDown => position.saturating_add(rows),
        Scroll::Home => 0,
        Scroll::End => last,
    };
    moved.min(last)
}

/// The first visible row, moved as little as possible so that `cursor` is on screen.
pub(crate) fn keep_visible(top: usize, cursor: usize, rows: usize) -> usize {
    let rows = rows.max(1);
    if cursor < top {
        cursor
    } else if cursor >= top + rows {
        cursor + 1 - rows
    } else {
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{
        CommandRecord, CommandSource, HeapRow, LogLine, Politeness, SiteRow, Workers,
    };

    fn site(origin: &str, queued: u64, fetched: u64, errors: u64, next: u64) -> SiteRow {
        SiteRow {
            recent_errors: Vec::new(),
            robots_rules: String::new(),
            origin: origin.into(),
            queued,
            fetched,
            errors,
            next_allowed_in_ms: next,
            ..SiteRow::default()
        }
    }

    fn snapshot_with_sites(sites: Vec<SiteRow>) -> Arc<Snapshot> {
        Arc::new(Snapshot {
            sites,
            politeness: Politeness {
                delay_ms: 100,
                ..Politeness::default()
            },
            workers: Workers {
                total: 8,
                ..Workers::default()
            },
            ..Snapshot::default()
        })
    }

    fn app_with(sites: Vec<SiteRow>) -> App {
        let mut app = App::new(100, 8);
        app.set_snapshot(snapshot_with_sites(sites));
        app
    }

    fn origins(app: &App) -> Vec<String> {
        app.site_order()
            .iter()
            .filter_map(|&i| app.site(i).map(|r| r.origin))
            .collect()
    }

    #[test]
    fn sites_sort_by_each_key_in_turn() {
        let mut app = app_with(vec![
            site("b", 5, 1, 0, 300),
            site("a", 9, 0, 2, 0),
            site("c", 1, 7, 1, 100),
        ]);
        assert_eq!(origins(&app), ["a", "b", "c"], "queued, most first");
        app.apply(Action::CycleSort);
        assert_eq!(origins(&app), ["c", "b", "a"], "fetched, most first");
        app.apply(Action::CycleSort);
        assert_eq!(origins(&app), ["a", "c", "b"], "errors, most first");
        app.apply(Action::CycleSort);
        assert_eq!(
            origins(&app),
            ["a", "c", "b"],
            "next contact, soonest first"
        );
        app.apply(Action::CycleSort);
        assert_eq!(app.sort(), SortKey::Origin);
        assert_eq!(origins(&app), ["a", "b", "c"]);
        app.apply(Action::CycleSort);
        assert_eq!(app.sort(), SortKey::Queued);
    }

    #[test]
    fn the_filter_shows_matching_origins_in_the_sort_and_esc_shows_all_again() {
        let mut app = app_with(vec![
            site("http://127.0.0.1:8001", 5, 0, 0, 0),
            site("http://127.0.0.2:9001", 9, 0, 0, 0),
            site("http://127.0.0.3:8002", 7, 0, 0, 0),
        ]);
        app.apply(Action::OpenFilter);
        assert_eq!(app.filter_prompt(), Some(""));
        for c in ":80".chars() {
            app.apply(Action::FilterPrompt(Edit::Insert(c)));
        }
        assert_eq!(origins(&app).len(), 3, "typing does not filter yet");
        app.apply(Action::ApplyFilter);
        assert_eq!(app.filter_prompt(), None);
        assert_eq!(app.filter(), ":80");
        assert_eq!(
            origins(&app),
            ["http://127.0.0.3:8002", "http://127.0.0.1:8001"],
            "only matching origins, most queued first"
        );
        assert_eq!(app.site_count(), 3);
        app.apply(Action::CycleSort);
        app.apply(Action::CycleSort);
        app.apply(Action::CycleSort);
        app.apply(Action::CycleSort);
        assert_eq!(app.sort(), SortKey::Origin);
        assert_eq!(
            origins(&app),
            ["http://127.0.0.1:8001", "http://127.0.0.3:8002"]
        );
        app.apply(Action::Scroll(Scroll::End));
        assert_eq!(app.site_under_cursor(), Some(2));
        // A filter that matches nothing leaves no cursor; Esc in the prompt shows all again.
        app.apply(Action::OpenFilter);
        app.apply(Action::FilterPrompt(Edit::Clear));
        app.apply(Action::FilterPrompt(Edit::Insert('#')));
        app.apply(Action::ApplyFilter);
        assert!(origins(&app).is_empty());
        assert_eq!(app.site_under_cursor(), None);
        app.apply(Action::OpenFilter);
        app.apply(Action::ClearFilter);
        assert_eq!(app.filter(), "");
        assert_eq!(origins(&app).len(), 3);
    }

    #[test]
    fn the_order_is_rebuilt_only_when_the_table_changed() {
        let table = Arc::new(SiteTable::new());
        table.write(0, site("http://a", 1, 0, 0, 0), 0);
        table.write(1, site("http://b", 2, 0, 0, 0), 0);
        table.publish(0, true);
        let mut app = App::new(100, 8);
        app.set_table(table.clone());
        assert_eq!(origins(&app), ["http://b", "http://a"]);
        // Written but not published: the order stays as built (the rows read are current).
        table.write(0, site("http://a", 5, 0, 0, 0), 0);
        app.set_snapshot(snapshot_with_sites(vec![]));
        assert_eq!(app.site_order(), [1, 0]);
        table.publish(100, true);
        app.set_snapshot(snapshot_with_sites(vec![]));
        assert_eq!(origins(&app), ["http://a", "http://b"]);
    }

    #[test]
    fn cursor_follows_the_chosen_site_when_the_order_changes() {
        let mut app = app_with(vec![site("a", 9, 0, 0, 0), site("b", 5, 0, 0, 0)]);
        app.apply(Action::Scroll(Scroll::Down));
        assert_eq!(app.site_under_cursor(), Some(1));
        app.set_snapshot(snapshot_with_sites(vec![
            site("a", 1, 0, 0, 0),
            site("b", 5, 0, 0, 0),
        ]));
        assert_eq!(app.cursor(), 0, "b is now first");
        assert_eq!(app.site_under_cursor(), Some(1));
    }

    #[test]
    fn scrolling_stops_at_both_ends_of_the_sites() {
        let mut app = app_with((0..5).map(|i| site(&i.to_string(), 0, 0, 0, 0)).collect());
        app.apply(Action::Scroll(Scroll::Up));
        assert_eq!(app.cursor(), 0);
        app.apply(Action::Scroll(Scroll::End));
        assert_eq!(app.cursor(), 4);
        app.apply(Action::Scroll(Scroll::Down));
        assert_eq!(app.cursor(), 4);
        app.apply(Action::Scroll(Scroll::Home));
        assert_eq!(app.cursor(), 0);
    }

    #[test]
    fn page_down_moves_by_the_visible_rows_and_keeps_the_cursor_on_screen() {
        let mut app = app_with(
            (0..100)
                .map(|i| site(&format!("{i:03}"), 0, 0, 0, 0))
                .collect(),
        );
        app.resize(100, 30);
        let rows = layout::visible_rows(Rect::new(0, 0, 100, 30), Pane::Sites);
        assert!(rows > 3);
        app.apply(Action::Scroll(Scroll::PageDown));
        assert_eq!(app.cursor(), rows);
        assert_eq!(app.sites_top(), 1, "moved just enough to show the cursor");
        app.apply(Action::Scroll(Scroll::Up));
        assert_eq!(app.sites_top(), 1, "moving back inside the window keeps it");
    }

    #[test]
    fn a_filter_after_end_shows_every_match_from_the_top() {
        let mut sites: Vec<SiteRow> = (0..1000)
            .map(|i| site(&format!("http://127.0.0.1:{}", 40_000 + i), 5, 0, 0, 0))
            .collect();
        for (i, origin) in ["http://45765.a", "http://45766.b", "http://45767.c"]
            .into_iter()
            .enumerate()
        {
            sites[100 * i + 1] = site(origin, 1, 0, 0, 0);
        }
        let mut app = app_with(sites);
        app.resize(100, 30);
        app.apply(Action::Scroll(Scroll::End));
        app.apply(Action::OpenFilter);
        for c in "4576".chars() {
            app.apply(Action::FilterPrompt(Edit::Insert(c)));
        }
        app.apply(Action::ApplyFilter);
        assert_eq!(origins(&app).len(), 3);
        assert!(app.cursor() < 3);
        assert_eq!(
            app.sites_top(),
            0,
            "the three matches all fit: none is scrolled away"
        );
    }

    #[test]
    fn a_shrinking_site_list_pulls_the_cursor_back() {
        let mut app = app_with((0..10).map(|i| site(&i.to_string(), 0, 0, 0, 0)).collect());
        app.apply(Action::Scroll(Scroll::End));
        app.set_snapshot(snapshot_with_sites(vec![site("x", 0, 0, 0, 0)]));
        assert_eq!(app.cursor(), 0);
        assert_eq!(app.site_under_cursor(), Some(0));
    }

    #[test]
    fn log_scrolls_back_from_the_newest_line_and_returns() {
        let mut app = App::new(0, 1);
        let log = (0..50)
            .map(|i| LogLine {
                at_s: i,
                level: "WARN".into(),
                message: format!("line {i}"),
            })
            .collect();
        app.set_snapshot(Arc::new(Snapshot {
            log,
            ..Snapshot::default()
        }));
        app.apply(Action::FocusNext);
        app.apply(Action::FocusNext);
        assert_eq!(app.focus(), Pane::Log);
        app.apply(Action::Scroll(Scroll::Up));
        assert_eq!(app.log_back(), 1);
        app.apply(Action::Scroll(Scroll::Home));
        let rows = layout::visible_rows(Rect::new(0, 0, 80, 24), Pane::Log);
        assert_eq!(app.log_back(), 50 - rows, "oldest line at the top");
        app.apply(Action::Scroll(Scroll::End));
        assert_eq!(app.log_back(), 0);
    }

    #[test]
    fn heap_scroll_stops_when_the_last_entry_is_visible() {
        let mut app = App::new(0, 1);
        let heap = (0..3)
            .map(|i| HeapRow {
                origin: i.to_string(),
                ready_in_ms: i,
                queue_len: 1,
            })
            .collect();
        app.set_snapshot(Arc::new(Snapshot {
            heap,
            ..Snapshot::default()
        }));
        app.apply(Action::FocusNext);
        app.apply(Action::Scroll(Scroll::End));
        let rows = layout::visible_rows(Rect::new(0, 0, 80, 24), Pane::Heap);
        assert_eq!(app.heap_top(), 3_usize.saturating_sub(rows));
    }

    #[test]
    fn focus_cycles_through_the_panes_both_ways() {
        let mut app = App::new(0, 1);
        assert_eq!(app.focus(), Pane::Sites);
        app.apply(Action::FocusNext);
        assert_eq!(app.focus(), Pane::Heap);
        app.apply(Action::FocusPrev);
        app.apply(Action::FocusPrev);
        assert_eq!(app.focus(), Pane::Log);
    }

    #[test]
    fn delay_change_is_shown_at_once_and_pending_until_confirmed() {
        let mut app = app_with(vec![]);
        let effect = app.apply(Action::SetDelay(Duration::from_millis(250)));
        assert_eq!(
            effect,
            Effect::Send(Command::SetDelay(Duration::from_millis(250)))
        );
        assert_eq!(app.delay(), Duration::from_millis(250));
        assert_eq!(app.delay_pending(), Some(Duration::from_millis(250)));
        app.set_snapshot(snapshot_with_sites(vec![]));
        assert_eq!(
            app.delay_pending(),
            Some(Duration::from_millis(250)),
            "still 100 ms"
        );
        let mut confirmed = (*snapshot_with_sites(vec![])).clone();
        confirmed.politeness.delay_ms = 250;
        app.set_snapshot(Arc::new(confirmed));
        assert_eq!(app.delay_pending(), None);
        assert_eq!(app.delay(), Duration::from_millis(250));
    }

    #[test]
    fn configured_values_are_shown_before_the_first_snapshot() {
        let app = App::new(500, 16);
        assert_eq!(app.delay(), Duration::from_millis(500));
        assert_eq!(app.workers(), 16);
    }

    #[test]
    fn worker_change_is_pending_until_confirmed() {
        let mut app = app_with(vec![]);
        assert_eq!(
            app.apply(Action::SetWorkers(10)),
            Effect::Send(Command::SetWorkers(10))
        );
        assert_eq!((app.workers(), app.workers_pending()), (10, Some(10)));
        let mut confirmed = (*snapshot_with_sites(vec![])).clone();
        confirmed.workers.total = 10;
        app.set_snapshot(Arc::new(confirmed));
        assert_eq!((app.workers(), app.workers_pending()), (10, None));
    }

    #[test]
    fn pause_shows_paused_until_the_engine_says_so() {
        let mut app = app_with(vec![]);
        assert_eq!(app.apply(Action::Pause), Effect::Send(Command::Pause));
        assert_eq!(app.run_state(), RunState::Paused);
        assert_eq!(app.run_state_pending(), Some(RunState::Paused));
        let mut paused = (*snapshot_with_sites(vec![])).clone();
        paused.state = RunState::Paused;
        app.set_snapshot(Arc::new(paused));
        assert_eq!(app.run_state_pending(), None);
        assert_eq!(app.apply(Action::Resume), Effect::Send(Command::Resume));
        assert_eq!(app.run_state(), RunState::Running);
    }

    /// A snapshot in `state` whose commands hold a stop from `source`.
    fn stopped_by(state: RunState, source: CommandSource) -> Arc<Snapshot> {
        let mut snap = (*snapshot_with_sites(vec![])).clone();
        snap.state = state;
        snap.commands.push(CommandRecord {
            at_s: 1.0,
            source,
            command: "stop".into(),
            by: None,
        });
        Arc::new(snap)
    }

    #[test]
    fn a_stop_from_elsewhere_leaves_once_the_crawl_has_finished() {
        for source in [
            CommandSource::Api,
            CommandSource::Port,
            CommandSource::Cluster,
            CommandSource::Signal,
        ] {
            let mut app = app_with(vec![]);
            app.set_snapshot(stopped_by(RunState::Stopping, source));
            assert_eq!(app.lifecycle(), Lifecycle::QuitWhenFinished, "{source:?}");
            assert!(app.is_running(), "in-flight fetches finish first");
            app.set_snapshot(stopped_by(RunState::Finished, source));
            assert!(!app.is_running(), "{source:?}");
        }
    }

    #[test]
    fn a_stop_by_s_here_or_a_crawl_ending_by_itself_stays_on_screen() {
        let mut app = app_with(vec![]);
        assert_eq!(app.apply(Action::Stop), Effect::Send(Command::Stop));
        assert_eq!(app.lifecycle(), Lifecycle::StopAskedHere);
        app.set_snapshot(stopped_by(RunState::Stopping, CommandSource::Key));
        app.set_snapshot(stopped_by(RunState::Finished, CommandSource::Key));
        assert!(app.is_running(), "the final screen stays until a key");
        // In a shared crawl, `s` comes back from the crawl's log as the cluster's stop.
        let mut app = app_with(vec![]);
        app.apply(Action::Stop);
        app.set_snapshot(stopped_by(RunState::Finished, CommandSource::Cluster));
        assert!(app.is_running());
        // `q` after `s` still leaves when the crawl has finished.
        let mut app = app_with(vec![]);
        app.apply(Action::Stop);
        assert_eq!(app.apply(Action::Quit), Effect::Quit);
        assert_eq!(app.lifecycle(), Lifecycle::QuitWhenFinished);
        // Ended by itself: no stop among the commands.
        let mut app = app_with(vec![]);
        let mut finished = (*snapshot_with_sites(vec![])).clone();
        finished.state = RunState::Finished;
        app.set_snapshot(Arc::new(finished));
        assert_eq!(app.lifecycle(), Lifecycle::Watching);
        assert!(app.is_running());
    }

    #[test]
    fn a_paste_goes_into_the_open_prompt_and_nowhere_else() {
        let mut app = app_with(vec![]);
        app.paste("e p s q");
        assert_eq!(app.search().prompt(), None);
        assert_eq!(app.filter_prompt(), None);
        assert_eq!(app.lifecycle(), Lifecycle::Watching);
        app.apply(Action::OpenSearch);
        app.apply(Action::Prompt(Edit::Insert('a')));
        app.paste("white\r\nrabbit\t\u{1b}[x");
        assert_eq!(app.search().prompt(), Some("awhite  rabbit  [x"));
        app.apply(Action::ClosePrompt);
        app.apply(Action::OpenFilter);
        app.paste(":8080\n");
        assert_eq!(app.filter_prompt(), Some(":8080 "));
    }

    #[test]
    fn quit_stops_and_leaves_once_the_crawl_has_finished() {
        let mut app = app_with(vec![]);
        assert_eq!(app.apply(Action::Quit), Effect::Quit);
        assert_eq!(app.lifecycle(), Lifecycle::QuitWhenFinished);
        assert_eq!(
            app.apply(Action::Quit),
            Effect::None,
            "asked once is enough"
        );
        let mut stopping = (*snapshot_with_sites(vec![])).clone();
        stopping.state = RunState::Stopping;
        app.set_snapshot(Arc::new(stopping.clone()));
        assert!(app.is_running());
        stopping.state = RunState::Finished;
        app.set_snapshot(Arc::new(stopping));
        assert!(!app.is_running());
    }

    #[test]
    fn quit_after_the_crawl_finished_exits() {
        let mut app = App::new(0, 1);
        app.set_snapshot(Arc::new(Snapshot {
            state: RunState::Finished,
            ..Snapshot::default()
        }));
        assert_eq!(app.apply(Action::Quit), Effect::Exit);
        assert!(!app.is_running());
    }

    #[test]
    fn stop_keeps_the_dashboard_up_after_the_crawl_finished() {
        let mut app = app_with(vec![]);
        assert_eq!(app.apply(Action::Stop), Effect::Send(Command::Stop));
        app.set_snapshot(Arc::new(Snapshot {
            state: RunState::Finished,
            ..Snapshot::default()
        }));
        assert!(app.is_running());
        assert_eq!(app.apply(Action::Exit), Effect::Exit);
        assert!(!app.is_running());
    }

    #[test]
    fn quit_now_leaves_at_once() {
        let mut app = app_with(vec![]);
        app.apply(Action::Quit);
        assert_eq!(app.apply(Action::QuitNow), Effect::QuitNow);
        assert!(!app.is_running());
    }

    #[test]
    fn detail_opens_on_the_site_under_the_cursor_and_closes() {
        let mut app = app_with(vec![site("a", 1, 0, 0, 0), site("b", 5, 0, 0, 0)]);
        app.apply(Action::OpenDetail);
        assert_eq!(app.mode(), Mode::SiteDetail(1), "b has the most queued");
        app.apply(Action::Close);
        assert_eq!(app.mode(), Mode::Normal);
    }

    #[test]
    fn detail_does_not_open_without_sites() {
        let mut app = app_with(vec![]);
        app.apply(Action::OpenDetail);
        assert_eq!(app.mode(), Mode::Normal);
    }

    #[test]
    fn notice_stays_until_the_next_key() {
        let mut app = app_with(vec![]);
        app.set_notice("stats written".into());
        assert_eq!(app.apply(Action::Export), Effect::Send(Command::Export));
        assert_eq!(app.notice(), Some("stats written"));
        app.apply(Action::FocusNext);
        assert_eq!(app.notice(), None);
    }

    fn type_query(app: &mut App, query: &str) {
        app.apply(Action::OpenSearch);
        for c in query.chars() {
            app.apply(Action::Prompt(Edit::Insert(c)));
        }
    }

    #[test]
    fn enter_in_the_prompt_asks_for_a_search_and_opens_the_results() {
        let mut app = app_with(vec![site("a", 1, 0, 0, 0)]);
        type_query(&mut app, "white rabbit");
        assert_eq!(app.search().prompt(), Some("white rabbit"));
        assert_eq!(app.mode(), Mode::Normal, "typing changes nothing else");
        let Effect::Search(request) = app.apply(Action::RunSearch) else {
            panic!("a search");
        };
        assert_eq!(request.query, "white rabbit");
        assert_eq!(app.mode(), Mode::Search);
        assert_eq!(app.search().prompt(), None);
        let results = app.search().results().expect("pane");
        assert!(results.waiting());
        app.set_search_answer(request.id, Outcome::NothingIndexed);
        let results = app.search().results().expect("pane");
        assert_eq!(results.outcome(), Some(&Outcome::NothingIndexed));
        assert_eq!(app.apply(Action::Close), Effect::None);
        assert_eq!(app.mode(), Mode::Normal);
        assert!(app.search().results().is_none());
    }

    #[test]
    fn esc_in_the_prompt_closes_it_and_keeps_the_results() {
        let mut app = app_with(vec![]);
        type_query(&mut app, "alice");
        let Effect::Search(request) = app.apply(Action::RunSearch) else {
            panic!("a search");
        };
        type_query(&mut app, "qp+");
        assert_eq!(app.apply(Action::ClosePrompt), Effect::None);
        assert_eq!(app.search().prompt(), None);
        assert_eq!(app.mode(), Mode::Search);
        assert_eq!(app.search().results().expect("pane").query(), "alice");
        assert_eq!(
            app.apply(Action::RefreshSearch),
            Effect::Search(crate::dashboard::search::SearchRequest {
                id: request.id + 1,
                query: "alice".into()
            })
        );
    }

    #[test]
    fn an_empty_answer_is_asked_again_as_snapshots_arrive() {
        let mut app = app_with(vec![]);
        type_query(&mut app, "rabbit");
        let Effect::Search(request) = app.apply(Action::RunSearch) else {
            panic!("a search");
        };
        app.set_search_answer(request.id, Outcome::NothingIndexed);
        assert_eq!(app.search_due(), None, "same crawl time");
        let mut later = (*snapshot_with_sites(vec![])).clone();
        later.elapsed_s = 1.5;
        app.set_snapshot(Arc::new(later));
        let again = app.search_due().expect("asked again");
        assert_eq!(again.query, "rabbit");
        assert_eq!(app.search_due(), None, "one at a time");
    }

    #[test]
    fn scroll_keys_move_the_results_not_the_sites() {
        let mut app = app_with((0..5).map(|i| site(&i.to_string(), 0, 0, 0, 0)).collect());
        app.resize(100, 30);
        type_query(&mut app, "rabbit");
        let Effect::Search(request) = app.apply(Action::RunSearch) else {
            panic!("a search");
        };
        let hits = (0..50)
            .map(|i| crate::index::Hit {
                seq: i,
                url: format!("http://h/{i}"),
                title: String::new(),
                score: 1.0,
                lines: Vec::new(),
                line_count: 0,
            })
            .collect();
        app.set_search_answer(
            request.id,
            Outcome::Found {
                total: 50,
                indexed: 50,
                hits,
            },
        );
        app.apply(Action::Scroll(Scroll::Down));
        app.apply(Action::Scroll(Scroll::Down));
        assert_eq!(app.search().results().expect("pane").top(), 2);
        assert_eq!(app.cursor(), 0);
        app.apply(Action::Scroll(Scroll::End));
        let visible = layout::visible_hits(Rect::new(0, 0, 100, 30));
        assert_eq!(app.search().results().expect("pane").top(), 50 - visible);
    }

    #[test]
    fn keep_visible_moves_the_window_as_little_as_possible() {
        assert_eq!(keep_visible(0, 3, 5), 0);
        assert_eq!(keep_visible(0, 5, 5), 1);
        assert_eq!(keep_visible(4, 2, 5), 2);
        assert_eq!(keep_visible(0, 0, 0), 0);
    }
}
