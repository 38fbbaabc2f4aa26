//! The live terminal dashboard: watch a crawl, pause it, throttle it, stop it.
//!
//! It owns the terminal (alternate screen, raw mode, restored on every way out) and the loop
//! that draws after each snapshot or key. It observes the engine only through its handle:
//! snapshots in, commands out. It never reaches into engine state and never slows the crawl:
//! the engine publishes on a `watch` channel and never waits for the screen. Searches read the
//! crawl folder's index on disk, on tokio's blocking pool, and come back to the loop as messages.

pub mod app;
pub mod keys;
pub mod layout;
pub mod search;
pub mod terminal;
pub mod view;
pub mod widgets;

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt as _;

use crate::engine::{Command, CrawlHandle, EngineError, Summary};
use crate::signals::{Signals, StopSignal};
use crate::snapshot::{CommandSource, RunState, Snapshot};
use app::{App, Effect};
use search::{IndexSearch, SearchRequest};

/// Set in the environment, the dashboard panics after its first frame (or, set to `input`,
/// just before it reads its input): how the tests prove that a panic gives the terminal back,
/// and that one with the terminal gone ends as a panic (unwinding, exit code 101), not an
/// abort.
pub const PANIC_ENV: &str = "CRAWLTOP_TEST_PANIC";

/// Set in the environment to a path, the dashboard, having taken the terminal, creates that
/// file and waits until it is removed before it reads the terminal's input: how the tests close
/// the terminal at that moment.
pub const HOLD_ENV: &str = "CRAWLTOP_TEST_HOLD_BEFORE_INPUT";

/// Why the dashboard ended without a summary.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// What the dashboard needs to know beyond the snapshots.
#[derive(Debug, Clone)]
pub struct DashboardOptions {
    /// The configured delay and workers, shown before the first snapshot.
    pub delay_ms: u64,
    pub workers: usize,
    /// Where the stats file goes, shown on the final screen and after `e`.
    pub stats_path: Option<String>,
    /// The crawl folder's `index/`, which `/` searches; `None` when the crawl keeps no index.
    pub index_dir: Option<PathBuf>,
}

/// Runs the dashboard over a crawl until the user leaves, and returns the crawl's summary.
/// `signals` were registered before the crawl started; one that came since is read first.
///
/// The terminal is given back on return, on error and on panic (`terminal::take`).
pub async fn run(
    handle: CrawlHandle,
    opts: DashboardOptions,
    signals: Signals,
) -> Result<Option<Summary>, DashboardError> {
    let mut terminal = match terminal::take() {
        Ok(terminal) => terminal,
        Err(e) => return without_terminal(handle, e).await,
    };
    let result = event_loop(&mut terminal, handle, &opts, signals).await;
    terminal::give_back();
    result
}

/// The terminal could not be taken: the crawl stops as on SIGTERM, its stats written. One that
/// is gone (it hung up as the crawl started: EIO, ENXIO) ends the dashboard quietly, as a hangup
/// does; any other failure is said.
async fn without_terminal(
    handle: CrawlHandle,
    e: std::io::Error,
) -> Result<Option<Summary>, DashboardError> {
    // EIO, ENXIO.
    let gone = matches!(e.raw_os_error(), Some(5 | 6));
    if gone {
        crate::hangup::detach();
    }
    handle
        .commander()
        .send(Command::Stop, CommandSource::Signal);
    let summary = handle.finished().await?;
    if gone {
        Ok(Some(summary))
    } else {
        Err(e.into())
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    handle: CrawlHandle,
    opts: &DashboardOptions,
    mut signals: Signals,
) -> Result<Option<Summary>, DashboardError> {
    let mut app = App::new(opts.delay_ms, opts.workers);
    if let Some(p) = &opts.stats_path {
        app.set_stats_path(p.clone());
    }
    // A size that cannot be read is the first frame's failure (below), not this one's.
    let size = terminal.size().unwrap_or_default();
    app.resize(size.width, size.height);
    let mut snapshots = handle.snapshots();
    app.set_table(handle.sites());
    app.set_snapshot(snapshots.borrow_and_update().clone());
    let commander = handle.commander();
    let abort = handle.abort_token();
    let mut finished = tokio::spawn(handle.finished());
    let mut summary: Option<Summary> = None;
    // `None` when the terminal went away since it was taken: the first frame or event says so.
    let mut events = input();
    let mut snapshots_open = true;
    let panic_after_draw = std::env::var_os(PANIC_ENV).is_some_and(|v| v != "input");
    let index = Arc::new(IndexSearch::new(opts.index_dir.clone()));
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let search = |request: SearchRequest| {
        let (index, answers) = (index.clone(), answers_tx.clone());
        // Queries are short, but a blocking read must never hold up a frame or the crawl.
        tokio::task::spawn_blocking(move || {
            let outcome = index.run(&request.query);
            // The loop may have ended meanwhile; nobody waits for the answer then.
            let _ = answers.send((request.id, outcome));
        });
    };
    while app.is_running() {
        if terminal.draw(|f| f.render_widget(&app, f.area())).is_err() {
            // The terminal is gone (hung up while a frame was written): as on SIGHUP.
            crate::hangup::detach();
            commander.send(Command::Stop, CommandSource::Signal);
            break;
        }
        assert!(
            !panic_after_draw,
            "{PANIC_ENV} is set: panicking on purpose"
        );
        tokio::select! {
            changed = snapshots.changed(), if snapshots_open => {
                if changed.is_ok() {
                    let snap: Arc<Snapshot> = snapshots.borrow_and_update().clone();
                    app.set_snapshot(snap);
                    if let Some(request) = app.search_due() {
                        search(request);
                    }
                } else {
                    snapshots_open = false;
                }
            }
            done = &mut finished, if summary.is_none() => {
                let s = done.map_err(|e| EngineError::Task(e.to_string()))??;
                app.set_snapshot(s.snapshot.clone());
                summary = Some(s);
                if let Some(request) = app.search_due() {
                    search(request);
                }
            }
            Some((id, outcome)) = answers.recv() => app.set_search_answer(id, outcome),
            event = next_event(events.as_mut()) => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => {
                    let Some(action) = keys::action(&app, key) else { continue };
                    match app.apply(action) {
                        Effect::None | Effect::Exit => {}
                        Effect::Search(request) => search(request),
                        Effect::Send(command) => send_key(&mut app, &commander, command, opts),
                        // In a shared crawl only this member leaves (as on Ctrl-C
                        // headless); `s` stops every member.
                        Effect::Quit => {
                            commander.send(Command::Leave, CommandSource::Key);
                        }
                        Effect::QuitNow => abort.cancel(),
                    }
                }
                Some(Ok(Event::Resize(w, h))) => app.resize(w, h),
                Some(Ok(Event::Paste(text))) => app.paste(&text),
                Some(Ok(_)) => {}
                // The terminal is gone: stop the crawl (this member's part), wait for its
                // end, leave.
                Some(Err(_)) | None => {
                    crate::hangup::detach();
                    commander.send(Command::Leave, CommandSource::Key);
                    break;
                }
            },
            signal = signals.next() => on_signal(&mut app, signal, &commander, &abort),
        }
    }
    if let Some(summary) = summary {
        return Ok(Some(summary));
    }
    // Leaving: the crawl ends (stopped or aborted) and its stats are written before we return.
    if app.snapshot().state != RunState::Finished {
        commander.send(Command::Leave, CommandSource::Key);
    }
    let s = finished
        .await
        .map_err(|e| EngineError::Task(e.to_string()))??;
    Ok(Some(s))
}

/// The terminal's input from here on (`terminal::events`), after the tests' hold and panic.
fn input() -> Option<EventStream> {
    if let Some(path) = std::env::var_os(HOLD_ENV) {
        hold(path.as_ref());
    }
    assert!(
        std::env::var_os(PANIC_ENV).is_none_or(|v| v != "input"),
        "{PANIC_ENV} is input: panicking on purpose"
    );
    terminal::events()
}

/// The next input event; `None` when the input ended or could not be read at all.
async fn next_event(events: Option<&mut EventStream>) -> Option<std::io::Result<Event>> {
    events?.next().await
}

/// The tests' hold (`HOLD_ENV`): says it is here, waits until told to go on.
fn hold(path: &std::path::Path) {
    if std::fs::write(path, b"").is_err() {
        return;
    }
    while path.exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A command a key gave, to the engine; an export says where the stats went.
fn send_key(
    app: &mut App,
    commander: &crate::engine::Commander,
    command: Command,
    opts: &DashboardOptions,
) {
    if command == Command::Export
        && let Some(p) = &opts.stats_path
    {
        app.set_notice(format!("stats written to {p}"));
    }
    commander.send(command, CommandSource::Key);
}

/// A stop signal: recorded as the `signal` source in the stats' commands.
fn on_signal(
    app: &mut App,
    signal: StopSignal,
    commander: &crate::engine::Commander,
    abort: &tokio_util::sync::CancellationToken,
) {
    match signal {
        // Raw mode turns a typed Ctrl-C into a key; a SIGINT sent by another process
        // (`kill -INT`, `timeout -s INT`, a supervisor) means the same.
        StopSignal::Interrupt => match app.apply(keys::interrupt(app)) {
            Effect::Quit => {
                commander.send(Command::Stop, CommandSource::Signal);
            }
            Effect::QuitNow => abort.cancel(),
            _ => {}
        },
        // After a hangup (`Signals::next` detached the terminal, which is gone) nothing more is
        // drawn or restored on it.
        StopSignal::Terminate | StopSignal::Hangup => {
            commander.send(Command::Stop, CommandSource::Signal);
            app.apply(app::Action::Quit);
        }
    }
}
