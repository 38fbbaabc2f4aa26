//! When the terminal goes away (SIGHUP: a closed terminal window, a dropped ssh session, a
//! killed tmux server), the crawl stops as on SIGTERM: gracefully, its stats written, its folder
//! left resumable, a demo's temporary web removed.
//!
//! It owns one thing: pointing the process's stdin, stdout and stderr at `/dev/null` at that
//! moment, each unless it is a regular file (a log the crawl was started with: `2> crawl.log`
//! keeps its summary and "stats written to" line). Writes to a hung-up terminal fail (EIO), as
//! do writes to a pipe whose reader went with the terminal (EPIPE), and Rust's `eprintln!`
//! panics on a failed write, so every progress line, summary and terminal restore after the
//! hangup would otherwise end the process before its stats were written. It must never run
//! while the terminal is there.

/// Whether this process was started with SIGHUP ignored (`nohup`, or a shell's `disown` with
/// `huponexit` off): then a hangup must stay ignored, and nothing listens for it. Read from
/// `/proc/self/status` (`SigIgn`, a mask whose lowest bit is SIGHUP); false where it cannot be.
pub fn ignored() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| ignored_in(&status))
}

fn ignored_in(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & 1 == 1)
}

/// A listener for SIGHUP, unless the process was started with it ignored ([`ignored`]): then
/// `None`, and the signal keeps doing nothing.
pub fn listen() -> std::io::Result<Option<tokio::signal::unix::Signal>> {
    if ignored() {
        return Ok(None);
    }
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).map(Some)
}

/// The next SIGHUP from [`listen`]'s listener; never without one.
pub async fn next(listener: Option<&mut tokio::signal::unix::Signal>) {
    match listener {
        Some(l) => {
            l.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Points stdin, stdout and stderr at `/dev/null`, each unless it is a regular file; what
/// would have been written to a terminal or a pipe is dropped. A failure leaves them as they
/// were (there is nobody left to tell).
pub fn detach() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    if !is_file(rustix::stdio::stdin()) {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
    if !is_file(rustix::stdio::stdout()) {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
    if !is_file(rustix::stdio::stderr()) {
        let _ = rustix::stdio::dup2_stderr(&null);
    }
}

/// Whether `fd` is a regular file (not a terminal, a pipe or a socket).
fn is_file(fd: rustix::fd::BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
    })
}

#[cfg(test)]
mod tests {
    use super::ignored_in;

    #[test]
    fn the_ignored_mask_is_read_for_sighup_only() {
        let status = |mask: &str| {
            format!("Name:\tcrawltop\nSigBlk:\t0000000000000000\nSigIgn:\t{mask}\nSigCgt:\t0\n")
        };
        assert!(ignored_in(&status("0000000000000001")));
        assert!(ignored_in(&status("0000000000001001")));
        assert!(!ignored_in(&status("0000000000001000")), "SIGPIPE alone");
        assert!(!ignored_in(&status("0000000000000000")));
        assert!(!ignored_in("Name:\tcrawltop\n"), "no mask: not ignored");
        assert!(
            !ignored_in(&status("zz")),
            "a mask that does not read: not ignored"
        );
    }
}
