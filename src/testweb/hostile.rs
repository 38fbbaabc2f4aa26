//! The hostile site's dynamic paths: each misbehaves in one way a crawler must survive.
//!
//! It owns those behaviours (redirect loop and chain, endless calendar, huge, trickling, stalled
//! and gzip-bomb bodies, 429/503 with Retry-After, a page of more distinct words than the index
//! takes, a title of megabytes). Every endless behaviour ends when the server
//! shuts down, so a shutdown never waits on it. It never serves files: what it does not claim
//! falls through to the static files. It never imports the server ([`super::serve`]): it hands
//! back a [`Reply`], and the server puts it on the wire.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{self, HeaderValue};

use tokio_util::sync::CancellationToken;

use super::reply::{Payload, Reply};

/// How the hostile behaviours are tuned. The defaults are the documented ones; tests shrink
/// the slow ones.
#[derive(Debug, Clone)]
pub struct HostileOptions {
    /// `/stall.html` waits this long before answering.
    pub stall: Duration,
    /// `/trickle.html` sends a few bytes this often.
    pub trickle_interval: Duration,
    /// `/big.html`'s body size.
    pub big_body: u64,
    /// `/bomb.html`'s unpacked size (a multiple of 1 MiB; rounded up).
    pub bomb_unpacked: u64,
    /// How many requests `/retry/*.html` refuse before answering 200.
    pub retry_failures: u32,
}

impl Default for HostileOptions {
    fn default() -> Self {
        HostileOptions {
            stall: Duration::from_secs(30),
            trickle_interval: Duration::from_secs(1),
            big_body: 50_000_000,
            bomb_unpacked: 1 << 30,
            retry_failures: 2,
        }
    }
}

#[derive(Debug)]
pub(super) struct Hostile {
    opts: HostileOptions,
    bomb: tokio::sync::OnceCell<Bytes>,
    retries: Mutex<HashMap<String, u32>>,
    /// The server's shutdown: every endless or slow behaviour ends when it fires.
    shutdown: CancellationToken,
}

impl Hostile {
    pub(super) fn new(opts: HostileOptions, shutdown: CancellationToken) -> Hostile {
        Hostile {
            opts,
            bomb: tokio::sync::OnceCell::new(),
            retries: Mutex::new(HashMap::new()),
            shutdown,
        }
    }

    /// Counts a request to `path` and says whether it is still among the refused ones.
    fn refuse(&self, path: &str) -> bool {
        let mut map = self.retries.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(path.to_string()).or_default();
        *n += 1;
        *n <= self.opts.retry_failures
    }
}

const CHAIN_END: u32 = 20;

fn html(body: String) -> Reply {
    Reply::new(StatusCode::OK, "text/html", body)
}

/// The reply for a dynamic path, or `None` to fall through to the site's files.
pub(super) async fn route(h: &Hostile, uri: &hyper::Uri) -> Option<Reply> {
    let path = uri.path();
    match path {
        "/loop/a" => return Some(Reply::redirect(StatusCode::FOUND, "/loop/b")),
        "/loop/b" => return Some(Reply::redirect(StatusCode::FOUND, "/loop/a")),
        "/big.html" => {
            let chunk =
                "<p>big big big big big big big big big big big big big big big</p>\n".repeat(1024);
            return Some(Reply {
                status: StatusCode::OK,
                headers: vec![(header::CONTENT_TYPE, HeaderValue::from_static("text/html"))],
                payload: Payload::Repeat {
                    chunk: Bytes::from(chunk),
                    remaining: h.opts.big_body,
                },
            });
        }
        "/trickle.html" => return Some(trickle(h)),
        // Not linked from the site (a crawl of it stays small): tests and measurements seed them.
        "/distinct.html" => return Some(html(distinct_words_page(DISTINCT_WORDS))),
        "/long-title.html" => return Some(html(long_title_page(LONG_TITLE_BYTES))),
        "/stall.html" => {
            tokio::select! {
                () = tokio::time::sleep(h.opts.stall) => {}
                () = h.shutdown.cancelled() => {}
            }
            return Some(html("<html><body><p>finally</p></body></html>\n".into()));
        }
        "/bomb.html" => {
            let unpacked = h.opts.bomb_unpacked;
            let bomb = h
                .bomb
                .get_or_init(|| async move {
                    tokio::task::spawn_blocking(move || gzip_bomb(unpacked))
                        .await
                        .unwrap_or_default()
                })
                .await
                .clone();
            return Some(
                Reply::new(StatusCode::OK, "text/html", bomb)
                    .header(header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
            );
        }
        "/retry/429.html" if h.refuse(path) => {
            return Some(
                Reply::text(StatusCode::TOO_MANY_REQUESTS, "slow down")
                    .header(header::RETRY_AFTER, HeaderValue::from_static("1")),
            );
        }
        "/retry/503.html" if h.refuse(path) => {
            // The site's own clock, not a crawler's.
            #[allow(clippy::disallowed_methods)]
            let when = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
            let mut reply = Reply::text(StatusCode::SERVICE_UNAVAILABLE, "come back later");
            if let Ok(v) = HeaderValue::from_str(&when) {
                reply = reply.header(header::RETRY_AFTER, v);
            }
            return Some(reply);
        }
        _ => {}
    }
    if let Some(n) = path.strip_prefix("/chain/") {
        let n: u32 = n.parse().ok()?;
        return match n {
            n if n < CHAIN_END => Some(Reply::redirect(
                StatusCode::FOUND,
                &format!("/chain/{}", n + 1),
            )),
            CHAIN_END => Some(html(format!(
                "<html><head><title>End of the chain</title></head><body>\
                 <p>{CHAIN_END} redirects later.</p><a href=\"/\">home</a></body></html>\n"
            ))),
            _ => None,
        };
    }
    if let Some(date) = path
        .strip_prefix("/calendar/")
        .and_then(|p| p.strip_suffix(".html"))
    {
        let (y, m, d) = parse_date(date)?;
        let (ny, nm, nd) = next_day(y, m, d);
        return Some(html(format!(
            "<html><head><title>Calendar {y:04}-{m:02}-{d:02}</title></head><body>\n\
             <h1>{y:04}-{m:02}-{d:02}</h1><p>Nothing happens today either.</p>\n\
             <a href=\"{ny:04}-{nm:02}-{nd:02}.html\">next day</a> <a href=\"/\">home</a>\n\
             </body></html>\n"
        )));
    }
    None
}

/// Distinct words on `/distinct.html`: more than the index takes of one page
/// ([`crate::index::MAX_DISTINCT_WORDS`]), so the page is indexed cut.
pub const DISTINCT_WORDS: usize = 100_500;

/// The size of `/long-title.html`'s title: thousands of times what a title may keep
/// ([`crate::parse::MAX_TITLE_BYTES`]).
pub const LONG_TITLE_BYTES: usize = 5_000_000;

/// A page of `words` distinct words (`w0 w1 ...`), eight to a paragraph: about 7 bytes a word.
fn distinct_words_page(words: usize) -> String {
    let mut body = String::with_capacity(words * 8 + 128);
    body.push_str("<html><head><title>Distinct words</title></head><body>\n");
    for i in 0..words {
        if i % 8 == 0 {
            body.push_str("<p>");
        }
        let _ = write!(body, "w{i} ");
        if i % 8 == 7 {
            body.push_str("</p>\n");
        }
    }
    body.push_str("</body></html>\n");
    body
}

/// A page whose title is `bytes` bytes of `tïtle ` (7 bytes a word, so a cut at a round number
/// of bytes can fall inside the `ï`), with the word `needle` in its text.
fn long_title_page(bytes: usize) -> String {
    let word = "tïtle ";
    let title = word.repeat(bytes / word.len());
    format!(
        "<html><head><title>{title}</title></head><body><p>A needle in a long title.</p>\
         </body></html>\n"
    )
}

fn trickle(h: &Hostile) -> Reply {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
    let interval = h.opts.trickle_interval;
    let stop = h.shutdown.clone();
    tokio::spawn(async move {
        let mut n = 0u64;
        loop {
            let chunk = Bytes::from(format!("<p>drop {n}</p>\n"));
            tokio::select! {
                sent = tx.send(chunk) => if sent.is_err() { return },
                () = stop.cancelled() => return,
            }
            n += 1;
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stop.cancelled() => return,
                () = tx.closed() => return,
            }
        }
    });
    Reply {
        status: StatusCode::OK,
        headers: vec![(header::CONTENT_TYPE, HeaderValue::from_static("text/html"))],
        payload: Payload::Channel(rx),
    }
}

fn parse_date(s: &str) -> Option<(u32, u32, u32)> {
    let mut parts = s.split('-');
    let y: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some((y, m, d))
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn next_day(y: u32, m: u32, d: u32) -> (u32, u32, u32) {
    if d < days_in_month(y, m) {
        (y, m, d + 1)
    } else if m < 12 {
        (y, m + 1, 1)
    } else {
        (y + 1, 1, 1)
    }
}

/// A gzip member of `unpacked` zero bytes (rounded up to whole MiB), about a thousand times
/// smaller on the wire. Built from one compressed MiB repeated: a full flush ends each copy on a
/// byte boundary with no back-references, so the copies chain into one valid deflate stream.
pub(crate) fn gzip_bomb(unpacked: u64) -> Bytes {
    use flate2::{Compress, Compression, FlushCompress};
    const BLOCK: usize = 1 << 20;
    let zeros = vec![0u8; BLOCK];
    let mut deflate = Compress::new(Compression::best(), false);
    let mut block = Vec::with_capacity(64 * 1024);
    // 64 KiB is far more than a MiB of zeros needs; a short write would fail the CRC check
    // of every client, which the tests would see.
    let _ = deflate.compress_vec(&zeros, &mut block, FlushCompress::Full);
    let copies = unpacked.div_ceil(BLOCK as u64).max(1);
    let mut crc_block = crc32fast::Hasher::new();
    crc_block.update(&zeros);
    let mut crc = crc32fast::Hasher::new();
    let mut out = Vec::with_capacity(block.len() * copies as usize + 32);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    for _ in 0..copies {
        out.extend_from_slice(&block);
        crc.combine(&crc_block);
    }
    // A final, empty block with fixed Huffman codes ends the deflate stream.
    out.extend_from_slice(&[0x03, 0x00]);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&((copies * BLOCK as u64) as u32).to_le_bytes());
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn gzip_bomb_is_valid_and_small() {
        let unpacked = 16u64 << 20;
        let bomb = gzip_bomb(unpacked);
        assert!(bomb.len() < 64 * 1024, "{} bytes on the wire", bomb.len());
        let mut dec = flate2::read::GzDecoder::new(&bomb[..]);
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            let n = dec
                .read(&mut buf)
                .expect("valid gzip, CRC and size included");
            if n == 0 {
                break;
            }
            assert!(buf[..n].iter().all(|&b| b == 0));
            total += n as u64;
        }
        assert_eq!(total, unpacked);
    }

    #[test]
    fn the_hostile_routes_never_import_the_server() {
        let imports: Vec<&str> = include_str!("hostile.rs")
            .lines()
            .filter(|l| l.trim_start().starts_with("use "))
            .filter(|l| l.contains("serve"))
            .collect();
        assert!(imports.is_empty(), "{imports:?}");
    }

    #[test]
    fn calendar_days_roll_over() {
        assert_eq!(next_day(2026, 1, 31), (2026, 2, 1));
        assert_eq!(next_day(2024, 2, 28), (2024, 2, 29));
        assert_eq!(next_day(2025, 2, 28), (2025, 3, 1));
        assert_eq!(next_day(2026, 12, 31), (2027, 1, 1));
        assert_eq!(parse_date("2026-02-30"), None);
        assert_eq!(parse_date("2026-13-01"), None);
        assert_eq!(parse_date("x"), None);
        assert_eq!(parse_date("2026-01-01-01"), None);
    }
}
