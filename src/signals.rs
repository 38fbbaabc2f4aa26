//! The signals that stop a crawl (SIGINT, SIGTERM, SIGHUP), registered at once and before
//! anything starts: from then on none ends the process by default, and one that arrives before
//! anybody reads it waits to be read (tokio keeps it) instead of being lost.
//!
//! The same listeners serve whatever face the crawl has: the headless path, the dashboard (which
//! takes them over from the command line, so a signal sent while a checkpoint was read still
//! stops the crawl once the dashboard is up), `serve` and the demo. What each signal means is
//! the face's business; after a SIGHUP the process no longer writes to the terminal, which is
//! gone ([`crate::hangup`]).

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Which stop signal came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT: Ctrl-C typed on a terminal not in raw mode, or sent by another process.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP: the terminal went away.
    Hangup,
}

pub struct Signals {
    int: Signal,
    term: Signal,
    /// `None` when the process was started with SIGHUP ignored (`nohup`).
    hup: Option<Signal>,
}

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        let said = |what: &str| {
            let what = what.to_owned();
            move |e: std::io::Error| {
                std::io::Error::new(e.kind(), format!("cannot listen for {what}: {e}"))
            }
        };
        Ok(Signals {
            int: signal(SignalKind::interrupt()).map_err(said("SIGINT"))?,
            term: signal(SignalKind::terminate()).map_err(said("SIGTERM"))?,
            hup: crate::hangup::listen().map_err(said("SIGHUP"))?,
        })
    }

    /// The next stop signal; after a SIGHUP, stdin, stdout and stderr are detached.
    pub async fn next(&mut self) -> StopSignal {
        tokio::select! {
            _ = self.int.recv() => StopSignal::Interrupt,
            _ = self.term.recv() => StopSignal::Terminate,
            () = crate::hangup::next(self.hup.as_mut()) => {
                crate::hangup::detach();
                StopSignal::Hangup
            }
        }
    }

    /// The next SIGINT (Ctrl-C).
    pub async fn interrupt(&mut self) {
        self.int.recv().await;
    }
}
