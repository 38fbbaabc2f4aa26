//! The command port: `crawltop crawl --command-port ADDR` takes the control API's commands as
//! lines of text over TCP, for a script or `nc` where HTTP is too much.
//!
//! The protocol, one command a line (UTF-8, `\n` or `\r\n`, at most 8 KiB), the command word
//! in any case, its arguments separated by spaces:
//!
//! | line | answer |
//! | --- | --- |
//! | `AUTH TOKEN` | `OK auth`; when the crawl has `--control-token`, this must be the first line, else `ERR ...` and the connection closes (without a token, any `AUTH` is `OK auth`) |
//! | `STATS` | the snapshot as one line of JSON (the schema of `/stats` and the stats file) |
//! | `SITES [sort=S limit=N offset=N filter=F]` | a page of the sites' rows as one line of JSON (`GET /sites`) |
//! | `PAUSE`, `RESUME`, `EXPORT`, `SHUTDOWN` | `OK pause`, `OK resume`, `OK export` (the stats files are written now; `ERR nothing to export: ...` for a crawl without `--stats-out`, `--sites-out` or `--urls-out`), `OK stop` |
//! | `DELAY MS`, `WORKERS N` | `OK delay 300 ms`, `OK workers 4` |
//! | `SEARCH WORDS...`, `MAXCOUNT WORD`, `MINCOUNT WORD`, `WORDCOUNT` | a block: one JSON value a line (each hit of a search; the count or `null`; the totals), then an empty line, even when the block holds one line |
//! | `QUIT` | `OK bye`, and the connection closes |
//!
//! Every other answer is exactly one line, never followed by an empty one: only the four index
//! queries answer with a block. A command's answer that is not `OK`, JSON or a block is one
//! line `ERR message`, and the connection
//! stays usable: an unknown command, a missing, extra or out-of-range argument (the same checks
//! and words as the HTTP API: `control::commands`), bytes that are not UTF-8, a query without
//! `--out`, a crawl that is over. Only four things close it: a line longer than 8 KiB (after
//! `ERR`), a wrong or missing `AUTH` when a token is set (after `ERR`), silence, and a full
//! port. A client that sends no whole line for 10 s is let go after `ERR idle for 10 s (no
//! command line); closing`, one that does not read its answers for 10 s without a word. At
//! most 64 clients are served at once; a newcomer beyond them takes the place of the client
//! waiting longest for its next line, which is let go after `ERR the port is full; closing
//! this idle session`. A client in the middle of a line or a command keeps its place: while
//! all 64 are, a newcomer waits until one is done (`control::places`).
//!
//! It owns the line reading, its bounds and the words of the answers. It must never hold a
//! snapshot borrow or a lock across an await, and never let one client hold up the crawl or
//! another client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::commands::{self, Handlers, View};
use super::index::{self, IndexQuery};
use super::places::Place;
use super::{ControlError, ControlOptions, ControlServer, auth};
use crate::engine::{Command, Commander};
use crate::snapshot::{CommandSource, Snapshot};

/// The longest line the port reads, its `\n` included.
pub const MAX_LINE: usize = 8 * 1024;
/// A client that sends nothing (or reads nothing) for this long is let go.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Clients served at once.
const MAX_CLIENTS: usize = 64;
/// After a last `ERR`, what a client still sends is read and dropped for at most this long,
/// so that closing does not reset the connection before the client has read the answer.
const LINGER: Duration = Duration::from_secs(2);

const COMMANDS: &str = "STATS, SITES [sort=S limit=N offset=N filter=F], PAUSE, RESUME, DELAY MS, WORKERS N, EXPORT, SHUTDOWN, SEARCH WORDS, MAXCOUNT WORD, MINCOUNT WORD, WORDCOUNT, QUIT";

/// Checks the options (the token rules of the HTTP API), binds, and serves the command port
/// on the current tokio runtime until shutdown. `index` is the crawl's index folder, for the
/// queries.
pub async fn serve_port(
    opts: ControlOptions,
    index: Option<PathBuf>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    commander: Commander,
) -> Result<ControlServer, ControlError> {
    let token = match auth::checked_token(&opts) {
        Err(ControlError::NeedsToken(addr)) => return Err(ControlError::PortNeedsToken(addr)),
        other => other?,
    };
    let bind_error = |source| ControlError::PortBind {
        addr: opts.addr,
        source,
    };
    let listener = TcpListener::bind(opts.addr).await.map_err(bind_error)?;
    let local_addr: SocketAddr = listener.local_addr().map_err(bind_error)?;
    let handlers = Arc::new(Handlers::new(
        snapshots,
        commander,
        CommandSource::Port,
        index,
    ));
    let token: Option<Arc<str>> = token.map(Arc::from);
    Ok(ControlServer::start(
        listener,
        local_addr,
        MAX_CLIENTS,
        move |stream, place, stop| {
            serve_client(handlers.clone(), token.clone(), stream, place, stop)
        },
    ))
}

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    NotUtf8,
    TooLong,
    /// Nothing (or no whole line) came for [`IDLE_TIMEOUT`].
    Idle,
    /// The client's place went to a newcomer while it was waiting for its next line.
    Evicted,
    /// The client closed, or the port is shutting down.
    End,
}

/// What to send back.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Line(String),
    Block(Vec<String>),
    /// A last line, then the connection closes.
    Close(String),
}

async fn serve_client(
    handlers: Arc<Handlers>,
    token: Option<Arc<str>>,
    stream: TcpStream,
    place: Place,
    stop: CancellationToken,
) {
    let mut stream = BufReader::new(stream);
    let mut authenticated = token.is_none();
    loop {
        let answer = match read_line(&mut stream, &place, &stop).await {
            Line::End => return,
            // Nothing unread is left behind, so these closes need no linger.
            Line::Idle => {
                let said = format!(
                    "ERR idle for {} s (no command line); closing",
                    IDLE_TIMEOUT.as_secs()
                );
                return last_line(stream, &said).await;
            }
            Line::Evicted => {
                return last_line(stream, "ERR the port is full; closing this idle session").await;
            }
            Line::TooLong => Answer::Close(format!(
                "ERR the line is longer than {MAX_LINE} bytes; closing"
            )),
            Line::NotUtf8 => Answer::Line("ERR the line is not UTF-8 text".into()),
            Line::Text(line)
                if !authenticated || split_command(&line).0.eq_ignore_ascii_case("auth") =>
            {
                // Without a token any AUTH passes, so a script may always send one.
                if token.as_deref().is_none_or(|t| authenticate(&line, t)) {
                    authenticated = true;
                    Answer::Line("OK auth".into())
                } else if authenticated {
                    Answer::Line("ERR wrong token".into())
                } else {
                    Answer::Close(
                        "ERR missing or wrong token: the first line must be AUTH TOKEN".into(),
                    )
                }
            }
            Line::Text(line) => answer(&handlers, &line).await,
        };
        let (text, close) = match answer {
            Answer::Line(line) => (line + "\n", false),
            Answer::Block(lines) => {
                let mut text = String::new();
                for l in &lines {
                    text.push_str(l);
                    text.push('\n');
                }
                text.push('\n');
                (text, false)
            }
            Answer::Close(line) => (line + "\n", true),
        };
        let written =
            tokio::time::timeout(IDLE_TIMEOUT, stream.get_mut().write_all(text.as_bytes())).await;
        if !matches!(written, Ok(Ok(()))) {
            return;
        }
        if close {
            linger(stream).await;
            return;
        }
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes, waiting at most [`IDLE_TIMEOUT`]. Until
/// its first byte comes the client is idle, and may lose its place to a newcomer.
async fn read_line(
    stream: &mut BufReader<TcpStream>,
    place: &Place,
    stop: &CancellationToken,
) -> Line {
    let deadline = tokio::time::Instant::now() + IDLE_TIMEOUT;
    // A line that came with the last one is no pause: the client stays busy.
    if stream.buffer().is_empty() {
        place.idle();
    }
    let first = tokio::select! {
        () = stop.cancelled() => return Line::End,
        () = place.evicted() => return Line::Evicted,
        r = tokio::time::timeout_at(deadline, stream.fill_buf()) => r.map(|r| r.map(<[u8]>::is_empty)),
    };
    match first {
        Err(_) => return Line::Idle,
        Ok(Err(_) | Ok(true)) => return Line::End,
        Ok(Ok(false)) => {}
    }
    // Evicted in the very moment its line came, it goes as if the line had come a moment later.
    if place.busy().is_err() {
        return Line::Evicted;
    }
    let mut buf = Vec::new();
    let read = async {
        (&mut *stream)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await
    };
    let n = tokio::select! {
        () = stop.cancelled() => return Line::End,
        r = tokio::time::timeout_at(deadline, read) => match r {
            Ok(Ok(n)) => n,
            Ok(Err(_)) => return Line::End,
            Err(_) => return Line::Idle,
        },
    };
    if n == 0 {
        return Line::End;
    }
    if buf.last() != Some(&b'\n') && buf.len() > MAX_LINE {
        return Line::TooLong;
    }
    // A last line without its `\n` (the client closed after it) still counts.
    let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match String::from_utf8(line.to_vec()) {
        Ok(text) => Line::Text(text),
        Err(_) => Line::NotUtf8,
    }
}

/// Whether `line` is `AUTH TOKEN` with the right token.
fn authenticate(line: &str, token: &str) -> bool {
    let (word, rest) = split_command(line);
    word.eq_ignore_ascii_case("auth") & auth::same_secret(rest.as_bytes(), token.as_bytes())
}

/// The command word and the rest of the line, trimmed.
fn split_command(line: &str) -> (&str, &str) {
    let line = line.trim();
    line.split_once(char::is_whitespace)
        .map_or((line, ""), |(w, rest)| (w, rest.trim()))
}

/// The answer to one authenticated line.
async fn answer(handlers: &Arc<Handlers>, line: &str) -> Answer {
    let (word, rest) = split_command(line);
    let args: Vec<&str> = rest.split_whitespace().collect();
    let upper = word.to_ascii_uppercase();
    let query = match upper.as_str() {
        "SEARCH" => Some(IndexQuery::Search),
        "MAXCOUNT" => Some(IndexQuery::MaxCount),
        "MINCOUNT" => Some(IndexQuery::MinCount),
        "WORDCOUNT" => Some(IndexQuery::WordCount),
        _ => None,
    };
    if upper == "SITES" {
        // `SITES sort=origin limit=20 filter=:80`: the parameters of `GET /sites`.
        let mut params = Vec::new();
        for arg in &args {
            let Some(pair) = arg.split_once('=') else {
                return Answer::Line(format!(
                    "ERR SITES takes NAME=VALUE arguments (sort, limit, offset, filter), got {arg:?}"
                ));
            };
            params.push(pair);
        }
        return match commands::site_query(params) {
            // One line, as `STATS`: an answer is a block only for the index queries, which
            // may give many values (audit 33 F9: a blank line followed this one).
            Ok(q) => Answer::Line(handlers.sites(&q).to_string()),
            Err(message) => Answer::Line(format!("ERR {message}")),
        };
    }
    if let Some(query) = query {
        return match query_argument(query, rest, &args) {
            Ok(word) => match index::run(handlers, query, word, index::SEARCH_LIMIT).await {
                Ok(value) => Answer::Block(block(value)),
                Err(e) => Answer::Line(format!("ERR {e}")),
            },
            Err(message) => Answer::Line(format!("ERR {message}")),
        };
    }
    match command_line(handlers, &upper, &args) {
        Ok(ok) => Answer::Line(ok),
        Err(Some(message)) => Answer::Line(format!("ERR {message}")),
        Err(None) => Answer::Close("OK bye".into()),
    }
}

/// The answer to a line that is not a query: `Ok(line)`, `Err(Some(message))`, or `Err(None)`
/// for `QUIT`.
fn command_line(handlers: &Handlers, word: &str, args: &[&str]) -> Result<String, Option<String>> {
    let command = match (word, args) {
        ("", _) => return Err(Some(format!("no command; try {COMMANDS}"))),
        ("QUIT", []) => return Err(None),
        ("STATS", []) => {
            return match handlers.render(View::Stats) {
                Ok(json) => Ok(String::from_utf8_lossy(&json).into_owned()),
                Err(e) => Err(Some(format!("cannot serialize the snapshot: {e}"))),
            };
        }
        ("PAUSE", []) => Command::Pause,
        ("RESUME", []) => Command::Resume,
        ("EXPORT", []) => Command::Export,
        ("SHUTDOWN", []) => Command::Stop,
        ("DELAY", [ms]) => commands::delay(ms).map_err(Some)?,
        ("WORKERS", [n]) => commands::workers(n).map_err(Some)?,
        ("DELAY", _) => return Err(Some(one_argument("DELAY MS", args))),
        ("WORKERS", _) => return Err(Some(one_argument("WORKERS N", args))),
        ("QUIT" | "STATS" | "PAUSE" | "RESUME" | "EXPORT" | "SHUTDOWN", _) => {
            return Err(Some(format!("{word} takes no argument")));
        }
        _ => {
            let shown: String = word.chars().take(40).collect();
            return Err(Some(format!("unknown command {shown:?}; try {COMMANDS}")));
        }
    };
    handlers
        .send(command)
        .map(|_| format!("OK {command}"))
        .map_err(|refused| Some(refused.to_string()))
}

fn one_argument(usage: &str, args: &[&str]) -> String {
    if args.is_empty() {
        format!("missing argument: use {usage}")
    } else {
        format!("too many arguments: use {usage}")
    }
}

/// The text a query runs on, or what is wrong with its arguments.
fn query_argument(query: IndexQuery, rest: &str, args: &[&str]) -> Result<String, String> {
    match (query, args) {
        (IndexQuery::Search, []) => Err("missing words: use SEARCH WORDS".into()),
        // The whole rest of the line: quotes and operators mean what they mean to `crawltop search`.
        (IndexQuery::Search, _) => Ok(rest.to_string()),
        (IndexQuery::MaxCount | IndexQuery::MinCount, [word]) => Ok((*word).to_string()),
        (IndexQuery::MaxCount, _) => Err(one_argument("MAXCOUNT WORD", args)),
        (IndexQuery::MinCount, _) => Err(one_argument("MINCOUNT WORD", args)),
        (IndexQuery::WordCount, []) => Ok(String::new()),
        (IndexQuery::WordCount, _) => Err("WORDCOUNT takes no argument".into()),
    }
}

/// A query's JSON as the lines of a block: each element of a list, or the one value.
fn block(value: serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::Array(items) => items.iter().map(ToString::to_string).collect(),
        other => vec![other.to_string()],
    }
}

/// Says `line` and closes, giving the write at most [`LINGER`]: for a client that has left
/// nothing unread, so that no reset can overtake the line.
async fn last_line(mut stream: BufReader<TcpStream>, line: &str) {
    let said = format!("{line}\n");
    let _ = tokio::time::timeout(LINGER, stream.get_mut().write_all(said.as_bytes())).await;
}

/// Closes our side, then reads and drops what the client still sends for a short while, so
/// that its unread bytes do not turn our close into a reset that loses the last answer.
async fn linger(mut stream: BufReader<TcpStream>) {
    let _ = stream.get_mut().shutdown().await;
    let mut sink = [0u8; 8192];
    let _ = tokio::time::timeout(LINGER, async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

#[cfg(test)]
mod tests;
