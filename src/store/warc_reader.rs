//! Reading back what the WARC writer wrote: the response records of a crawl folder's
//! `warc/*.warc.gz`, in the order they were committed, for verbs that work on a crawl folder
//! (`crawltop extract DIR`). The robots.txt responses among them say so
//! ([`StoredResponse::robots_for`]): a verb about pages passes them over.
//!
//! It reads what the folder's checkpoint holds ([`held_parts`]), of the crawl's own files only
//! (`crawltop-NNNNN.warc.gz`, numbered from 0 without a gap: a missing one is named). A killed
//! crawl's files go on past its last mark, with records a resume cuts away and fetches again,
//! maybe under other sequence numbers; so reading stops at the mark, where a resume's cut
//! would be. The bytes below a mark never change (a resume cuts the marked file there and
//! writes on in a new file), so a crawl resumed while the files are read changes nothing that
//! is read.
//!
//! It reads only the format `warc.rs` writes (one gzip member per record, `WARC/1.1`, a
//! `Content-Length` on every record, responses as `application/http` with the body stored
//! decoded) and says clearly where a file is not that. It holds one record in memory at a time
//! (a record is at most the crawl's body cap plus its headers), never writes, and never trusts
//! a length it has not checked against what is there.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::checkpoint::{Held, Mark, WarcMark, warc_held};
use super::warc::{COMMITTED_FIELD, CountingReader, ROBOTS_FIELD, SEQ_FIELD, Truncation};

/// The most bytes of one decoded record that are read: a record says its own length, and a
/// corrupt length must not make the reader allocate gigabytes.
const MAX_RECORD_BYTES: u64 = 1 << 30;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WarcReadError {
    // No `source`: the message says it, and `{:#}` (main) would print it a second time.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    #[error("{} holds no WARC files (has this folder been crawled with --store warc?)", .0.display())]
    NoWarc(PathBuf),
    #[error("{}: the record at byte {offset} is not one crawltop wrote: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error("{}: the folder's checkpoint {reason}", path.display())]
    NotAsMarked { path: PathBuf, reason: String },
    /// A crawl file below the mark is not as the crawl left it ([`damaged_before`]).
    #[error("{} {what}: the pages stored there would be lost", path.display())]
    Damaged { path: PathBuf, what: String },
}

/// One response record: the page as the crawl stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub target_uri: String,
    /// The fetch's place in the commit order (`Crawltop-Seq`; absent in files written before
    /// crawltop recorded it).
    pub seq: Option<u64>,
    /// `WARC-Date`: when the request was sent ([`super::warc::parse_warc_date`] reads it).
    pub date: Option<String>,
    /// When the page was committed, in milliseconds since the Unix epoch (`Crawltop-Committed-Ms`;
    /// absent in files written before crawltop recorded it).
    pub committed_ms: Option<u64>,
    /// A robots.txt response (or a redirect on the way to it), which is not a page: the
    /// origin whose robots.txt it answers ([`ROBOTS_FIELD`]).
    pub robots_for: Option<String>,
    pub status: u16,
    /// The response headers as stored (the body is decoded unless a Content-Encoding is left:
    /// see `warc.rs`).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// `WARC-Truncated`: why the body is shorter than what the server sent, if it is.
    pub truncated: Option<Truncation>,
    /// The `User-Agent` the request was sent with: that of the request record written just
    /// before the response and named by its `WARC-Concurrent-To` (the WARC writer writes each
    /// exchange so); `None` when there is no such record or it has no such header.
    pub user_agent: Option<String>,
}

impl StoredResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A page the crawl parsed: a 2xx answer that is no robots.txt response, whose fetch did
    /// not fail mid-body ([`Truncation::failed`]; one cut at the body cap is a page), and that
    /// the parse's [`crate::parse::verdict`] takes for HTML, as the crawl did when it fetched
    /// it.
    pub fn is_html_page(&self) -> bool {
        let coding = crate::fetch::unsupported_coding(self.header("content-encoding"));
        self.robots_for.is_none()
            && (200..300).contains(&self.status)
            && !self.truncated.is_some_and(Truncation::failed)
            && crate::parse::verdict(self.header("content-type"), coding.as_deref(), &self.body)
                == crate::parse::Verdict::Html
    }
}

/// The `.warc.gz` files of `dir` (a crawl folder's `warc/`), in the order they were written.
pub fn warc_files(dir: &Path) -> Result<Vec<PathBuf>, WarcReadError> {
    let io_err = |error| WarcReadError::Io {
        path: dir.to_path_buf(),
        error,
    };
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".warc.gz"))
        {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(WarcReadError::NoWarc(dir.to_path_buf()));
    }
    // Names are PREFIX-NNNNN.warc.gz, at least five digits: the number is the write order
    // (`crawltop-100000` comes after `crawltop-99999`); other names after, by name.
    files.sort_by_cached_key(|path| {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let numbered = crate::store::warc::file_number(name);
        (
            numbered.is_none(),
            numbered.map(|(prefix, n)| (prefix.to_owned(), n)),
            name.to_owned(),
        )
    });
    Ok(files)
}

/// The first of the crawl's WARC files written before the marked one that is not in `dir` as
/// the crawl left it, if any: its name, and what is wrong, said after the file's path
/// (`is missing, ...`). A crawl numbers its files from 0 without a gap, and a resume keeps
/// every file below the mark, so a missing one is committed pages lost, never a file the crawl
/// did not write; a file whose length differs from the one the mark keeps for it was cut (pages
/// lost) or written to since.
pub fn damaged_before(dir: &Path, mark: &WarcMark) -> Option<(String, String)> {
    let (prefix, marked) = crate::store::warc::file_number(&mark.file)?;
    (0..marked).find_map(|n| {
        let name = crate::store::warc::file_name(prefix, n);
        let kept = mark.before.as_ref().and_then(|b| b.get(n as usize));
        let what = match (fs::metadata(dir.join(&name)), kept) {
            (Ok(meta), _) if !meta.is_file() => "is not a file".to_owned(),
            (Ok(meta), Some(&len)) if meta.len() != len => format!(
                "has {} bytes, where it had {len} when the crawl closed it",
                meta.len()
            ),
            (Ok(_), _) => return None,
            (Err(_), _) => format!(
                "is missing, though the checkpoint counts it among the WARC files written \
                 before {}",
                mark.file
            ),
        };
        Some((name, what))
    })
}

/// A crawl file's name when it is one of the crawl's files (`crawltop-NNNNN.warc.gz`).
fn crawls_own(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    crate::store::warc::file_number(name)
        .is_some_and(|(prefix, _)| prefix == crate::store::committer::WARC_PREFIX)
}

/// One WARC file to read, whole or up to a byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarcPart {
    pub path: PathBuf,
    /// Where reading stops (a record boundary: a mark's position); `None` for the whole file.
    pub end: Option<u64>,
}

/// What of the `.warc.gz` files in `dir` (a crawl folder's `warc/`) the checkpoint's mark
/// holds, in write order ([`warc_held`]: what a resume from it keeps). Without a checkpoint
/// every file is read whole; a mark that names no WARC file (the crawl had written no record
/// at its checkpoint) holds none of the crawl's files.
pub fn held_parts(dir: &Path, mark: Option<&Mark>) -> Result<Vec<WarcPart>, WarcReadError> {
    let files = match warc_files(dir) {
        // The mark holds no file, and a resume removed every file it did not hold: nothing
        // to read is the right answer, not an error.
        Err(WarcReadError::NoWarc(_)) if mark.is_some_and(|m| m.warc.is_none()) => Vec::new(),
        other => other?,
    };
    let whole = |path| WarcPart { path, end: None };
    let Some(mark) = mark else {
        return Ok(files.into_iter().map(whole).collect());
    };
    // A crawl's checkpoint speaks of the crawl's own files: any other (a copy, a backup put
    // there) is not read, or its pages would count twice, or out of order.
    let files = files.into_iter().filter(|path| crawls_own(path));
    let Some(mark) = &mark.warc else {
        return Ok(files
            .filter(|path| {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                warc_held(None, name) != Some(Held::Nothing)
            })
            .map(whole)
            .collect());
    };
    let marked = dir.join(&mark.file);
    if mark.holds(&mark.file).is_none() {
        return Err(WarcReadError::NotAsMarked {
            path: dir.to_path_buf(),
            reason: format!("names {:?}, not a WARC file of a crawl", mark.file),
        });
    }
    let len = fs::metadata(&marked)
        .map_err(|error| WarcReadError::Io {
            path: marked.clone(),
            error,
        })?
        .len();
    if len < mark.position {
        return Err(short_of_the_mark(marked, mark.position, len));
    }
    if let Some((name, what)) = damaged_before(dir, mark) {
        return Err(WarcReadError::Damaged {
            path: dir.join(name),
            what,
        });
    }
    let mut parts = Vec::new();
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        match mark.holds(name) {
            Some(Held::Whole) | None => parts.push(WarcPart { path, end: None }),
            Some(Held::UpTo(end)) => parts.push(WarcPart {
                path,
                end: Some(end),
            }),
            Some(Held::Nothing) => {}
        }
    }
    Ok(parts)
}

fn short_of_the_mark(path: PathBuf, position: u64, len: u64) -> WarcReadError {
    WarcReadError::NotAsMarked {
        path,
        reason: format!("says {position} bytes of it were durable, the file has {len}"),
    }
}

/// A decoded record: its file, its offset there, its bytes.
type Record = (PathBuf, u64, Vec<u8>);

/// The file being read: its part, its reader (stopping at the part's end), the offset reached.
type Current = (WarcPart, BufReader<io::Take<File>>, u64);

/// Every response record of the parts given, in order; other records are passed over.
pub struct Responses {
    parts: std::vec::IntoIter<WarcPart>,
    current: Option<Current>,
    /// The last request record read: its `WARC-Record-ID` and its `User-Agent`, for the
    /// response that follows it ([`StoredResponse::user_agent`]).
    request: Option<(String, Option<String>)>,
}

impl Responses {
    /// The response records of `files`, each read whole.
    pub fn new(files: Vec<PathBuf>) -> Responses {
        Responses::of(
            files
                .into_iter()
                .map(|path| WarcPart { path, end: None })
                .collect(),
        )
    }

    /// The response records of `parts`, each read up to its end.
    pub fn of(parts: Vec<WarcPart>) -> Responses {
        Responses {
            parts: parts.into_iter(),
            current: None,
            request: None,
        }
    }

    /// The next record of the current file, or of the next file when this one ends.
    fn next_record(&mut self) -> Option<Result<Record, WarcReadError>> {
        loop {
            if self.current.is_none() {
                let part = self.parts.next()?;
                match File::open(&part.path) {
                    Ok(file) => {
                        let file = file.take(part.end.unwrap_or(u64::MAX));
                        self.current = Some((part, BufReader::new(file), 0));
                    }
                    Err(error) => {
                        let path = part.path;
                        return Some(Err(WarcReadError::Io { path, error }));
                    }
                }
            }
            let (part, reader, offset) = self.current.as_mut()?;
            let path = &part.path;
            match reader.fill_buf() {
                Ok([]) => {
                    // A file cut below the mark since it was listed ends early: said, not
                    // taken for the whole.
                    let short = part.end.filter(|end| *offset < *end);
                    let error = short.map(|end| short_of_the_mark(path.clone(), end, *offset));
                    self.current = None;
                    match error {
                        Some(e) => return Some(Err(e)),
                        None => continue,
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    let path = path.clone();
                    self.current = None;
                    return Some(Err(WarcReadError::Io { path, error }));
                }
            }
            let start = *offset;
            let mut counted = CountingReader {
                inner: &mut *reader,
                consumed: 0,
                read_error: None,
            };
            let mut record = Vec::new();
            let read = flate2::bufread::GzDecoder::new(&mut counted)
                .take(MAX_RECORD_BYTES)
                .read_to_end(&mut record);
            *offset += counted.consumed;
            let path = path.clone();
            if let Err(e) = read {
                self.current = None;
                return Some(Err(WarcReadError::Corrupt {
                    path,
                    offset: start,
                    reason: format!("not a complete gzip member ({e})"),
                }));
            }
            return Some(Ok((path, start, record)));
        }
    }
}

impl Iterator for Responses {
    type Item = Result<StoredResponse, WarcReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (path, offset, record) = match self.next_record()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            let corrupt = |reason: &str| WarcReadError::Corrupt {
                path: path.clone(),
                offset,
                reason: reason.to_string(),
            };
            match response(&record, &mut self.request) {
                Ok(Some(r)) => return Some(Ok(r)),
                Ok(None) => {}
                Err(reason) => {
                    // The rest of this file cannot be trusted; go on with the next one.
                    self.current = None;
                    return Some(Err(corrupt(reason)));
                }
            }
        }
    }
}

/// Splits `bytes` at its first blank line (`\r\n\r\n`): the head's lines and what follows.
fn head_and_rest(bytes: &[u8]) -> Option<(Vec<&str>, &[u8])> {
    let at = memchr::memmem::find(bytes, b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..at]).ok()?;
    Some((head.split("\r\n").collect(), &bytes[at + 4..]))
}

fn fields<'a>(lines: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    lines
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim(), v.trim()))
        .collect()
}

fn field<'a>(fields: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// One decoded record: `Ok(None)` for a record that is not a response. A request record is
/// kept in `request` (its id and `User-Agent`), for the response it is concurrent to.
fn response(
    record: &[u8],
    request: &mut Option<(String, Option<String>)>,
) -> Result<Option<StoredResponse>, &'static str> {
    let (lines, rest) = head_and_rest(record).ok_or("no end of the WARC header")?;
    if !lines.first().is_some_and(|l| l.starts_with("WARC/")) {
        return Err("no WARC version line");
    }
    let warc = fields(&lines[1..]);
    let length: usize = field(&warc, "Content-Length")
        .and_then(|v| v.parse().ok())
        .ok_or("no Content-Length")?;
    let block = rest
        .get(..length)
        .ok_or("shorter than its Content-Length")?;
    match field(&warc, "WARC-Type") {
        Some("response") => {}
        Some("request") => {
            *request = field(&warc, "WARC-Record-ID").map(|id| {
                let user_agent = head_and_rest(block)
                    .and_then(|(http, _)| field(&fields(&http[1..]), "User-Agent"))
                    .map(str::to_string);
                (id.to_string(), user_agent)
            });
            return Ok(None);
        }
        _ => return Ok(None),
    }
    let user_agent = match (request.take(), field(&warc, "WARC-Concurrent-To")) {
        (Some((id, user_agent)), Some(to)) if id == to => user_agent,
        _ => None,
    };
    let target_uri = field(&warc, "WARC-Target-URI")
        .ok_or("a response without WARC-Target-URI")?
        .to_string();
    let seq = field(&warc, SEQ_FIELD).and_then(|v| v.parse().ok());
    let date = field(&warc, "WARC-Date").map(str::to_string);
    let committed_ms = field(&warc, COMMITTED_FIELD).and_then(|v| v.parse().ok());
    let robots_for = field(&warc, ROBOTS_FIELD).map(str::to_string);
    let truncated = field(&warc, "WARC-Truncated").map(Truncation::from_warc_value);
    let (http, body) = head_and_rest(block).ok_or("no end of the HTTP header")?;
    let status = http
        .first()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status line")?;
    let headers = fields(&http[1..])
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    Ok(Some(StoredResponse {
        target_uri,
        seq,
        date,
        committed_ms,
        robots_for,
        status,
        headers,
        body: body.to_vec(),
        truncated,
        user_agent,
    }))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::store::checkpoint::WarcMark;
    use crate::store::warc::{Exchange, WarcWriter};

    fn exchange<'a>(
        uri: &'a str,
        seq: u64,
        body: &'a [u8],
        headers: &'a [(String, String)],
    ) -> Exchange<'a> {
        Exchange {
            target_uri: uri,
            seq: Some(seq),
            committed_ms: None,
            robots_for: None,
            date: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            ip: None,
            request_line_and_headers: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            version: "HTTP/1.1",
            status: 200,
            reason: "OK",
            response_headers: headers,
            body,
            truncated: None,
        }
    }

    /// A checkpoint's mark with the WARC mark given.
    fn checkpoint(warc: Option<WarcMark>) -> Mark {
        Mark {
            seq: 7,
            warc,
            finished: false,
            runs: 1,
            extract: None,
            text_cut: 0,
            index: true,
            store: Some(crate::store::committer::StoreKind::Warc),
            settings: None,
            mirror_names: crate::store::mirror::NAMES,
            crawl: None,
            indexed: None,
        }
    }

    #[test]
    fn reads_back_every_response_in_order_across_rotated_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let headers = vec![("Content-Type".to_string(), "text/html".to_string())];
        let mut w = WarcWriter::new(dir.path(), "crawltop", 600).expect("new");
        let bodies: Vec<Vec<u8>> = (0..12u8)
            .map(|i| vec![b'a' + i; 100 * usize::from(i)])
            .collect();
        for (i, body) in bodies.iter().enumerate() {
            let uri = format!("http://127.0.0.1:1/p{i}.html");
            w.write_exchange(&exchange(&uri, i as u64 + 5, body, &headers))
                .expect("write");
        }
        w.sync().expect("sync");
        let files = warc_files(dir.path()).expect("files");
        assert!(files.len() > 2, "rotated: {files:?}");
        let got: Vec<StoredResponse> = Responses::new(files)
            .collect::<Result<_, _>>()
            .expect("readable");
        assert_eq!(got.len(), bodies.len());
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.target_uri, format!("http://127.0.0.1:1/p{i}.html"));
            assert_eq!(r.seq, Some(i as u64 + 5));
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), Some("text/html"));
            assert_eq!(r.body, bodies[i]);
        }
    }

    /// Each response reads back with the User-Agent its own request record was sent with
    /// (`crawltop index` parses a page for that agent's robots `<meta>`); none without one.
    #[test]
    fn a_response_carries_the_user_agent_of_its_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let headers = vec![("Content-Type".to_string(), "text/html".to_string())];
        let mut w = WarcWriter::new(dir.path(), "crawltop", 1 << 20).expect("new");
        let requests: [&[u8]; 3] = [
            b"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: auditbot/1.0 (+mailto:a@example.invalid)\r\n\r\n",
            b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /c HTTP/1.1\r\nHost: x\r\nuser-agent: crawltop/9\r\n\r\n",
        ];
        for (i, request) in requests.iter().enumerate() {
            let mut ex = exchange("http://127.0.0.1:1/p", i as u64, b"<p>hi", &headers);
            ex.request_line_and_headers = request;
            w.write_exchange(&ex).expect("write");
        }
        w.sync().expect("sync");
        let got: Vec<Option<String>> = Responses::new(warc_files(dir.path()).expect("files"))
            .map(|r| r.expect("readable").user_agent)
            .collect();
        assert_eq!(
            got,
            [
                Some("auditbot/1.0 (+mailto:a@example.invalid)".to_string()),
                None,
                Some("crawltop/9".to_string()),
            ]
        );
    }

    /// A robots.txt response reads back as one, whatever type its server gave it, so a verb
    /// about pages can pass it over; a page has no such mark.
    #[test]
    fn a_robots_txt_response_says_whose_robots_txt_it_answers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let headers = vec![("Content-Type".to_string(), "text/html".to_string())];
        let mut w = WarcWriter::new(dir.path(), "crawltop", 1 << 20).expect("new");
        let mut robots = exchange("http://127.0.0.1:1/robots.txt", 0, b"<p>hi", &headers);
        robots.seq = None;
        robots.robots_for = Some("http://127.0.0.1:1/");
        w.write_exchange(&robots).expect("write");
        w.write_exchange(&exchange("http://127.0.0.1:1/a.html", 0, b"<p>a", &headers))
            .expect("write");
        w.sync().expect("sync");
        let got: Vec<StoredResponse> = Responses::new(warc_files(dir.path()).expect("files"))
            .collect::<Result<_, _>>()
            .expect("readable");
        let marks: Vec<_> = got
            .iter()
            .map(|r| (r.robots_for.as_deref(), r.seq))
            .collect();
        assert_eq!(
            marks,
            [(Some("http://127.0.0.1:1/"), None), (None, Some(0))]
        );
    }

    /// A response whose fetch failed mid-body (`time`, `disconnect`) reads back marked so, and
    /// is no page for a verb about pages; one cut at the body cap (`length`) still is.
    #[test]
    fn a_response_cut_by_time_or_disconnect_is_no_page_and_one_cut_at_the_cap_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let headers = vec![("Content-Type".to_string(), "text/html".to_string())];
        let mut w = WarcWriter::new(dir.path(), "crawltop", 1 << 20).expect("new");
        let cuts = [
            None,
            Some(Truncation::Length),
            Some(Truncation::Time),
            Some(Truncation::Disconnect),
        ];
        for (i, cut) in cuts.iter().enumerate() {
            let uri = format!("http://127.0.0.1:1/p{i}.html");
            let mut ex = exchange(&uri, i as u64, b"<p>some words", &headers);
            ex.truncated = *cut;
            w.write_exchange(&ex).expect("write");
        }
        w.sync().expect("sync");
        let got: Vec<StoredResponse> = Responses::new(warc_files(dir.path()).expect("files"))
            .collect::<Result<_, _>>()
            .expect("readable");
        let read: Vec<_> = got
            .iter()
            .map(|r| (r.truncated, r.is_html_page()))
            .collect();
        assert_eq!(
            read,
            [
                (None, true),
                (Some(Truncation::Length), true),
                (Some(Truncation::Time), false),
                (Some(Truncation::Disconnect), false),
            ]
        );
    }

    /// Reading up to a mark: the files before the marked one whole, the marked one up to the
    /// position (records written after it in the same file left out), no later file; a file
    /// shorter than the mark says is named, whether cut before or while it is read.
    #[test]
    fn reading_stops_at_a_checkpoints_mark_across_rotated_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let headers = vec![("Content-Type".to_string(), "text/html".to_string())];
        let mut w = WarcWriter::new(dir.path(), "crawltop", 6000).expect("new");
        let here = |w: &WarcWriter| WarcMark {
            file: w
                .current_file()
                .and_then(|f| f.file_name())
                .and_then(|n| n.to_str())
                .expect("a name")
                .to_string(),
            position: w.position().expect("a file"),
            before: None,
        };
        let mut marks = Vec::new();
        for i in 0..12u8 {
            let uri = format!("http://127.0.0.1:1/p{i}.html");
            let body = vec![b'a' + i; 400];
            w.write_exchange(&exchange(&uri, u64::from(i), &body, &headers))
                .expect("write");
            marks.push(here(&w));
        }
        w.sync().expect("sync");
        // A mark with a record before it and one after it in its file, and a later file.
        let at = (1..marks.len() - 1)
            .find(|&i| {
                marks[i - 1].file == marks[i].file
                    && marks[i + 1].file == marks[i].file
                    && marks[i].file != marks[marks.len() - 1].file
            })
            .expect("such a mark");
        let (before, mark) = (marks[at - 1].clone(), marks[at].clone());
        let marked = dir.path().join(&mark.file);
        let marked_len = std::fs::metadata(&marked).expect("metadata").len();
        assert!(
            marked_len > mark.position,
            "records follow the mark in its file"
        );
        assert!(
            warc_files(dir.path()).expect("files").last() != Some(&marked),
            "files follow the marked one"
        );

        let seqs = |parts| -> Vec<Option<u64>> {
            Responses::of(parts)
                .map(|r| r.expect("readable").seq)
                .collect()
        };
        let held = held_parts(dir.path(), Some(&checkpoint(Some(mark.clone())))).expect("parts");
        assert_eq!(
            seqs(held.clone()),
            (0..=at as u64).map(Some).collect::<Vec<_>>()
        );
        let all = held_parts(dir.path(), None).expect("parts");
        assert_eq!(seqs(all), (0..12).map(Some).collect::<Vec<_>>());
        // A checkpoint taken before the crawl's first record holds none of its files; a file
        // of another name is not the crawl's, and not read either (a copy would count twice).
        std::fs::copy(&marked, dir.path().join("other-00000.warc.gz")).expect("copy");
        let none = held_parts(dir.path(), Some(&checkpoint(None))).expect("parts");
        assert_eq!(none, vec![]);
        let with_mark = held_parts(dir.path(), Some(&checkpoint(Some(mark.clone()))));
        assert_eq!(with_mark.expect("parts"), held);
        std::fs::remove_file(dir.path().join("other-00000.warc.gz")).expect("remove");

        // Cut below the mark, at a record's end, while it is read (the parts were listed
        // before): named, not taken for the whole.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&marked)
            .expect("open");
        file.set_len(before.position).expect("cut");
        let last = Responses::of(held).last().expect("something");
        let err = last.expect_err("the file ends before the mark");
        assert!(err.to_string().contains("were durable"), "{err}");
        // And when it is listed.
        let err = held_parts(dir.path(), Some(&checkpoint(Some(mark)))).expect_err("short");
        assert!(
            matches!(&err, WarcReadError::NotAsMarked { path, .. } if path == &marked),
            "{err}"
        );
    }

    /// A crawl killed before its first checkpoint held a record, then resumed (which removes
    /// the files its mark does not hold), reads as holding nothing.
    #[test]
    fn a_mark_that_holds_no_file_reads_an_empty_folder_as_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let parts = held_parts(dir.path(), Some(&checkpoint(None))).expect("nothing held");
        assert!(parts.is_empty());
        // Without a mark, or with one naming a file, no WARC file is an error still.
        assert!(matches!(
            held_parts(dir.path(), None),
            Err(WarcReadError::NoWarc(_))
        ));
    }

    /// Write order is the file number, past five digits too; other names come last.
    #[test]
    fn files_are_read_in_the_order_of_their_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "crawltop-100000.warc.gz",
            "copy.warc.gz",
            "crawltop-99999.warc.gz",
            "crawltop-00002.warc.gz",
            "crawltop-3.warc.gz",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").expect("write");
        }
        let files = warc_files(dir.path()).expect("files");
        let names: Vec<_> = files
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "crawltop-00002.warc.gz",
                "crawltop-99999.warc.gz",
                "crawltop-100000.warc.gz",
                "copy.warc.gz",
                "crawltop-3.warc.gz"
            ]
        );
        // Only the spelling the writer uses is a crawl file: `-3` is not file 3.
        assert_eq!(
            crate::store::warc::file_number("crawltop-00003.warc.gz"),
            Some(("crawltop", 3))
        );
        for other in [
            "crawltop-3.warc.gz",
            "crawltop-000003.warc.gz",
            "crawltop-0100000.warc.gz",
        ] {
            assert_eq!(crate::store::warc::file_number(other), None, "{other}");
        }
    }

    #[test]
    fn a_folder_without_warc_files_and_a_corrupt_file_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            warc_files(dir.path()),
            Err(WarcReadError::NoWarc(_))
        ));
        let bad = dir.path().join("crawltop-00000.warc.gz");
        std::fs::write(&bad, b"this is not gzip at all").expect("write");
        let files = warc_files(dir.path()).expect("one file");
        let got: Vec<_> = Responses::new(files).collect();
        assert_eq!(got.len(), 1);
        let err = got.into_iter().next().expect("one").expect_err("corrupt");
        assert!(
            matches!(err, WarcReadError::Corrupt { offset: 0, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("crawltop-00000.warc.gz"), "{err}");
    }

    #[test]
    fn a_record_that_lies_about_its_length_is_corrupt_not_a_crash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let record =
            b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 999999\r\n\r\nshort\r\n\r\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, record).expect("gzip");
        let path = dir.path().join("crawltop-00000.warc.gz");
        std::fs::write(&path, gz.finish().expect("gzip")).expect("write");
        let got: Vec<_> = Responses::new(vec![path]).collect();
        let err = got.into_iter().next().expect("one").expect_err("corrupt");
        assert!(
            err.to_string().contains("shorter than its Content-Length"),
            "{err}"
        );
    }
}
