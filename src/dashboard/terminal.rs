//! The terminal the dashboard draws on: taken (raw mode, alternate screen, bracketed paste),
//! its input events, and given back on every way out, a panic included.
//!
//! Bracketed paste makes the terminal mark a paste, so crossterm hands it over as one
//! `Event::Paste` instead of keystrokes: without it, the `e`, space, `p`, `s` and `q` of a
//! pasted URL exported, paused and stopped the crawl (audit 31).
//!
//! A panic on the thread that took the terminal gives it back; one elsewhere (a search task,
//! whose panic tokio catches while the dashboard goes on) leaves it to the dashboard.
//!
//! It must never panic or print: giving the terminal back runs inside the panic hook, often
//! when the terminal is gone (hung up, closed), and a write there fails. A panic inside the
//! panic hook aborts the process, which then leaves its crawl folder half-written; an error
//! here is dropped instead.

use std::io::stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, EventStream};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::DefaultTerminal;
use ratatui::backend::CrosstermBackend;

/// Why a terminal whose `TERM` is `term` cannot show the dashboard, or `None` when it can.
///
/// `dumb` (Emacs's shell buffers, some CI consoles) moves no cursor and draws no colour: the
/// dashboard's escapes would be printed as soup. An unset or empty `TERM` says nothing of what
/// the terminal can do, and is taken the same way. The crawl then runs with progress lines, as
/// when stdout is not a terminal.
pub fn unfit(term: Option<&std::ffi::OsStr>) -> Option<&'static str> {
    match term.map(std::ffi::OsStr::as_encoded_bytes) {
        None => Some("TERM is not set"),
        Some(b"") => Some("TERM is empty"),
        Some(b"dumb") => Some("TERM is dumb"),
        Some(_) => None,
    }
}

/// Whether the terminal is taken now: what a panic has to give back.
static TAKEN: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();
/// The thread that took the terminal (the dashboard's loop). A panic on another thread (a
/// search on tokio's blocking pool, caught and turned into an error) leaves the dashboard
/// running, so it must not take the terminal from under it.
static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);

/// Takes the terminal: raw mode, the alternate screen, bracketed paste, and a panic hook that
/// gives it back before the panic's message is printed. On error, whatever was taken is given
/// back.
pub fn take() -> std::io::Result<DefaultTerminal> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let owner = *OWNER.lock().unwrap_or_else(PoisonError::into_inner);
            if owner == Some(std::thread::current().id()) {
                give_back();
            }
            // The default hook prints the message and ignores a write that fails.
            previous(info);
        }));
    });
    crossterm::terminal::enable_raw_mode()?;
    TAKEN.store(true, Ordering::SeqCst);
    *OWNER.lock().unwrap_or_else(PoisonError::into_inner) = Some(std::thread::current().id());
    let taken = crossterm::execute!(stdout(), EnterAlternateScreen, EnableBracketedPaste)
        .and_then(|()| ratatui::Terminal::new(CrosstermBackend::new(stdout())));
    if taken.is_err() {
        give_back();
    }
    taken
}

/// Gives the terminal back (raw mode off, pastes unmarked, the main screen again) if it is
/// taken. Never fails: on a terminal that is gone there is nothing to give back and nobody to
/// tell.
pub fn give_back() {
    if TAKEN.swap(false, Ordering::SeqCst) {
        let _ = crossterm::terminal::disable_raw_mode();
        // Left on, the shell's next paste would arrive wrapped in `ESC[200~`.
        let _ = crossterm::execute!(stdout(), DisableBracketedPaste, LeaveAlternateScreen);
    }
}

/// How long the first poll of the terminal may take before the terminal is taken as gone
/// ([`events`]); a live terminal answers in microseconds.
const FIRST_POLL: Duration = Duration::from_secs(2);

/// The terminal's input events, or `None` when it went away after it was taken.
///
/// crossterm opens its input reader once, on first use, and `EventStream::new` panics when
/// that reader could not open the terminal (a hangup between `take` and here: the terminal is
/// no longer a terminal and `/dev/tty` is gone). A poll that takes no time opens the reader
/// and says so with an error instead.
///
/// That poll runs on a thread of its own: when the reader opens but the terminal hangs up
/// around it, crossterm 0.29 reads it forever (its read loop retries a `read` that gives 0 or
/// EIO at once, whatever the poll's timeout: crossterm issue #793), and on the dashboard's
/// thread that kept the demo from ever ending (seen once in CI, a demo at 100 % CPU). A poll
/// that does not answer within [`FIRST_POLL`] counts as a terminal gone; its thread spins
/// until the process ends, which a terminal gone brings soon.
pub fn events() -> Option<EventStream> {
    let (answer, answered) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("crawltop-tty-poll".into())
        .spawn(move || {
            let _ = answer.send(crossterm::event::poll(Duration::ZERO).is_ok());
        })
        .ok()?;
    answered.recv_timeout(FIRST_POLL).ok().filter(|ok| *ok)?;
    Some(EventStream::new())
}

#[cfg(test)]
mod tests {
    use super::unfit;
    use std::ffi::OsStr;

    #[test]
    fn a_dumb_empty_or_unset_term_cannot_show_the_dashboard() {
        assert_eq!(unfit(Some(OsStr::new("dumb"))), Some("TERM is dumb"));
        assert_eq!(unfit(Some(OsStr::new(""))), Some("TERM is empty"));
        assert_eq!(unfit(None), Some("TERM is not set"));
        for fit in [
            "xterm-256color",
            "screen",
            "tmux-256color",
            "linux",
            "vt100",
        ] {
            assert_eq!(unfit(Some(OsStr::new(fit))), None, "{fit}");
        }
    }
}
