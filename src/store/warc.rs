//! The WARC 1.1 archive of what the crawl fetched: one request and one response record per fetch
//! (a page's, or a robots.txt response's, marked [`ROBOTS_FIELD`]), each record its own gzip
//! member, in files `PREFIX-00000.warc.gz`, `-00001`, ... that rotate at a size. The record bytes
//! are built and compressed in memory and written with one `write_all`, so a killed process
//! leaves at worst one partial gzip member at the end of a file, which [`truncate_partial_tail`]
//! cuts off.
//!
//! It must never overwrite or append to a file it did not create (a resumed crawl starts a new
//! file), never split an exchange across files, never read a clock (every date is passed in) and
//! never touch the network. It opens its first file with its first exchange, so a run that
//! writes nothing (a resume killed while it starts, say) leaves no file holding only a warcinfo
//! record. It does blocking file I/O: call it from the committer's blocking thread, not from an
//! async task.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use sha1::{Digest, Sha1};

/// What went wrong writing or repairing a WARC file. Any of these means the archive cannot be
/// trusted to grow further, so the crawl should stop rather than skip.
#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    #[error("WARC file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("WARC file prefix {0:?} must be non-empty and must not contain a path separator")]
    InvalidPrefix(String),
    /// A target URI with whitespace or control characters would corrupt the WARC header; a parsed
    /// `url::Url` never has them, so this is a caller bug, not a hostile page.
    #[error("target URI {0:?} contains whitespace or control characters")]
    InvalidTargetUri(String),
}

impl WarcError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> WarcError + '_ {
        move |source| WarcError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Why a stored body is shorter than what the server sent: the values of `WARC-Truncated`
/// (WARC 1.1 section 5.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    /// The body reached the size cap.
    Length,
    /// The fetch ran out of time.
    Time,
    /// The connection dropped.
    Disconnect,
    Unspecified,
}

impl Truncation {
    /// Whether the fetch of a body cut this way failed (`time`, `disconnect`): its record is
    /// kept because the server answered, but it holds no page the crawl stands behind, so a
    /// 2xx of it is never parsed, indexed, mirrored or extracted, at the crawl or by the verbs
    /// that read the WARC files later. A body cut at the cap (`length`) is a page: what came
    /// before the cut is parsed and indexed.
    pub fn failed(self) -> bool {
        matches!(self, Truncation::Time | Truncation::Disconnect)
    }

    /// The value of a `WARC-Truncated` field; one WARC 1.1 does not name is `unspecified`.
    pub fn from_warc_value(value: &str) -> Truncation {
        match value.trim().to_ascii_lowercase().as_str() {
            "length" => Truncation::Length,
            "time" => Truncation::Time,
            "disconnect" => Truncation::Disconnect,
            _ => Truncation::Unspecified,
        }
    }

    fn as_warc_value(self) -> &'static str {
        match self {
            Truncation::Length => "length",
            Truncation::Time => "time",
            Truncation::Disconnect => "disconnect",
            Truncation::Unspecified => "unspecified",
        }
    }
}

/// One fetch as the engine saw it. The body is the decoded body (the fetch module removes any
/// Content-Encoding it decodes; a body in a coding it does not decode is as it came, see
/// [`crate::fetch::unsupported_coding`]); `response_headers` are the server's headers as
/// received.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    pub target_uri: &'a str,
    /// The fetch's place in the commit order, written as [`SEQ_FIELD`] on the response record
    /// so that a reader of the files alone can name it.
    pub seq: Option<u64>,
    /// When the committer stored the page (milliseconds since the Unix epoch, its wall clock),
    /// written as [`COMMITTED_FIELD`]: the commit time the index keeps for ties across crawl
    /// folders, so that an index rebuilt from the files breaks them as the crawl's did.
    pub committed_ms: Option<u64>,
    /// For a robots.txt fetch (and each redirect on the way to the file), which is not a page:
    /// the origin whose robots.txt it answers, written as [`ROBOTS_FIELD`] on the response record
    /// so that a reader of the files does not take it for a page.
    pub robots_for: Option<&'a str>,
    /// When the request was sent; becomes `WARC-Date` of both records.
    pub date: SystemTime,
    pub ip: Option<IpAddr>,
    /// The HTTP request as sent, e.g. `b"GET /p.html HTTP/1.1\r\nHost: a\r\n\r\n"`.
    pub request_line_and_headers: &'a [u8],
    /// The version of the response's status line, as the server answered (`HTTP/1.0`).
    pub version: &'a str,
    pub status: u16,
    pub reason: &'a str,
    pub response_headers: &'a [(String, String)],
    pub body: &'a [u8],
    pub truncated: Option<Truncation>,
}

/// Where an exchange landed: enough to find the response record again (a CDX line needs file
/// and offset) and to link other records to it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordIds {
    /// `<urn:uuid:...>` of the request record.
    pub request: String,
    /// `<urn:uuid:...>` of the response record.
    pub response: String,
    pub file: PathBuf,
    /// Byte offset of the response record's gzip member in `file`.
    pub offset: u64,
}

/// The response header that tells a reader which Content-Encoding the server used on a body that
/// is stored decoded.
pub const ORIGINAL_CONTENT_ENCODING: &str = "X-Crawltop-Original-Content-Encoding";

/// The response record's field holding the fetch's sequence number (an extension field: WARC
/// 1.1 section 5 lets writers add named fields, and readers ignore those they do not know).
pub const SEQ_FIELD: &str = "Crawltop-Seq";

/// The response record's field holding when the page was committed, in milliseconds since the
/// Unix epoch ([`Exchange::committed_ms`]; an extension field like [`SEQ_FIELD`]).
pub const COMMITTED_FIELD: &str = "Crawltop-Committed-Ms";

/// The response record's field naming the origin whose robots.txt the record answers (an
/// extension field like [`SEQ_FIELD`]): robots.txt responses are stored like any fetch, as
/// web archives expect, but they are not pages of the crawl, and carry no sequence number.
pub const ROBOTS_FIELD: &str = "Crawltop-Robots-For";

const SOFTWARE: &str = concat!("crawltop/", env!("CARGO_PKG_VERSION"));
const FILE_SUFFIX: &str = ".warc.gz";

/// Writes exchanges to the current file and rotates to a new one when the next exchange would
/// take the file past `max_file_bytes`. It does not fsync per record: [`WarcWriter::sync`] is the
/// committer's checkpoint.
#[derive(Debug)]
pub struct WarcWriter {
    dir: PathBuf,
    prefix: String,
    max_file_bytes: u64,
    /// The number the next file gets; found (after the highest existing file of the prefix)
    /// when the first file is opened.
    next_number: Option<u64>,
    /// `None` until the first exchange: a run that writes nothing leaves no file.
    current: Option<OpenWarc>,
    members: MemberEncoder,
}

#[derive(Debug)]
struct OpenWarc {
    path: PathBuf,
    file: File,
    /// End of the last complete record: the file's length while no write has failed.
    len: u64,
    warcinfo_id: String,
    content: FileContent,
    dir_entry: DirEntry,
}

/// A file holding only its warcinfo record takes the next exchange whatever its size, so an
/// exchange larger than `max_file_bytes` still gets written (alone) instead of rotating forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileContent {
    WarcinfoOnly,
    Exchanges,
}

/// A new file's name survives a power loss only once its directory is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirEntry {
    Unsynced,
    Synced,
}

impl WarcWriter {
    /// A writer of files `dir/PREFIX-NNNNN.warc.gz`. Nothing is touched yet: the first file
    /// (numbered after the highest existing file of that prefix, `dir` created if missing) is
    /// opened with the first exchange, its warcinfo record dated as that exchange.
    pub fn new(dir: &Path, prefix: &str, max_file_bytes: u64) -> Result<WarcWriter, WarcError> {
        if prefix.is_empty() || prefix.contains(['/', '\\']) {
            return Err(WarcError::InvalidPrefix(prefix.to_owned()));
        }
        Ok(WarcWriter {
            dir: dir.to_path_buf(),
            prefix: prefix.to_owned(),
            max_file_bytes,
            next_number: None,
            current: None,
            members: MemberEncoder::new(),
        })
    }

    /// Appends a request record and a response record (two gzip members, linked both ways by
    /// `WARC-Concurrent-To`) to the current file, opening the first file or rotating first if
    /// they would not fit. An `Err` other than `InvalidTargetUri` means the crawl should stop:
    /// the file was cut back to its last record where the system allowed, and
    /// [`truncate_partial_tail`] finishes the job.
    pub fn write_exchange(&mut self, ex: &Exchange<'_>) -> Result<RecordIds, WarcError> {
        if ex.target_uri.is_empty()
            || ex
                .target_uri
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(WarcError::InvalidTargetUri(ex.target_uri.to_owned()));
        }
        let request_id = new_record_id();
        let response_id = new_record_id();
        let current = match self.current.take() {
            Some(current) => current,
            None => self.open_next(ex.date)?,
        };
        let mut members =
            exchange_members(ex, &request_id, &response_id, &current, &mut self.members);
        let current = if current.content == FileContent::Exchanges
            && current.len + members.bytes.len() as u64 > self.max_file_bytes
        {
            let next = self.rotate(current, ex.date)?;
            // The records name their file's warcinfo record, so they are rebuilt for the new file.
            members = exchange_members(ex, &request_id, &response_id, &next, &mut self.members);
            next
        } else {
            current
        };
        let current = self.current.insert(current);
        if let Err(source) = current.file.write_all(&members.bytes) {
            // Cut a partial write back so the file still ends on a record boundary. If even that
            // fails, truncate_partial_tail repairs the file on the next start.
            let _ = current.file.set_len(current.len);
            return Err(WarcError::Io {
                path: current.path.clone(),
                source,
            });
        }
        let offset = current.len + members.request_len;
        current.len += members.bytes.len() as u64;
        current.content = FileContent::Exchanges;
        Ok(RecordIds {
            request: request_id,
            response: response_id,
            file: current.path.clone(),
            offset,
        })
    }

    /// Makes everything written so far durable: flushes and fsyncs the current file, and its
    /// directory the first time so the file's name is durable too. Nothing to do before the
    /// first file.
    pub fn sync(&mut self) -> Result<(), WarcError> {
        self.current.as_mut().map_or(Ok(()), sync_file)
    }

    /// The file being written, once the first exchange has opened one.
    pub fn current_file(&self) -> Option<&Path> {
        self.current.as_ref().map(|c| c.path.as_path())
    }

    /// Where the last complete record of the current file ends, once there is one; a checkpoint
    /// stores it with [`WarcWriter::current_file`].
    pub fn position(&self) -> Option<u64> {
        self.current.as_ref().map(|c| c.len)
    }

    /// Opens the next file, its warcinfo record dated `now`.
    fn open_next(&mut self, now: SystemTime) -> Result<OpenWarc, WarcError> {
        let number = if let Some(n) = self.next_number {
            n
        } else {
            fs::create_dir_all(&self.dir).map_err(WarcError::io(&self.dir))?;
            highest_existing_number(&self.dir, &self.prefix)?.map_or(0, |n| n + 1)
        };
        let file = open_new_file(&self.dir, &self.prefix, number, now, &mut self.members)?;
        self.next_number = Some(number + 1);
        Ok(file)
    }

    fn rotate(&mut self, mut full: OpenWarc, now: SystemTime) -> Result<OpenWarc, WarcError> {
        // A checkpoint after the rotation names only the new file, so the old one must be durable
        // before the writer forgets it.
        if let Err(e) = sync_file(&mut full) {
            self.current = Some(full);
            return Err(e);
        }
        match self.open_next(now) {
            Ok(next) => Ok(next),
            Err(e) => {
                self.current = Some(full);
                Err(e)
            }
        }
    }
}

fn sync_file(current: &mut OpenWarc) -> Result<(), WarcError> {
    current
        .file
        .flush()
        .and_then(|()| current.file.sync_all())
        .map_err(WarcError::io(&current.path))?;
    if current.dir_entry == DirEntry::Unsynced {
        if let Some(dir) = current.path.parent() {
            sync_dir(dir).map_err(WarcError::io(dir))?;
        }
        current.dir_entry = DirEntry::Synced;
    }
    Ok(())
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Other systems do not let a directory be opened for fsync; the file's own fsync is all there is.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The name of the crawl's file `number`: `PREFIX-NNNNN.warc.gz`, at least five digits.
pub fn file_name(prefix: &str, number: u64) -> String {
    format!("{prefix}-{number:05}{FILE_SUFFIX}")
}

/// The prefix and number of a file named as [`WarcWriter`] names them (`PREFIX-NNNNN.warc.gz`);
/// `None` for any other name.
pub fn file_number(name: &str) -> Option<(&str, u64)> {
    let (prefix, digits) = name.strip_suffix(FILE_SUFFIX)?.rsplit_once('-')?;
    if prefix.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = digits.parse().ok()?;
    // Only the spelling [`file_name`] writes: `crawltop-3.warc.gz` (a copy, renamed) is not
    // file 3, which is `crawltop-00003.warc.gz`.
    (format!("{number:05}") == digits).then_some((prefix, number))
}

fn highest_existing_number(dir: &Path, prefix: &str) -> Result<Option<u64>, WarcError> {
    let mut highest = None;
    for entry in fs::read_dir(dir).map_err(WarcError::io(dir))? {
        let entry = entry.map_err(WarcError::io(dir))?;
        let name = entry.file_name();
        let Some(number) = name
            .to_str()
            .and_then(file_number)
            .and_then(|(p, number)| (p == prefix).then_some(number))
        else {
            continue;
        };
        highest = highest.max(Some(number));
    }
    Ok(highest)
}

fn open_new_file(
    dir: &Path,
    prefix: &str,
    number: u64,
    now: SystemTime,
    members: &mut MemberEncoder,
) -> Result<OpenWarc, WarcError> {
    let name = file_name(prefix, number);
    let path = dir.join(&name);
    // create_new: a file that appeared since the directory scan belongs to someone else.
    let mut file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(&path)
        .map_err(WarcError::io(&path))?;
    let warcinfo_id = new_record_id();
    let member = warcinfo_member(&warcinfo_id, &name, now, members);
    file.write_all(&member).map_err(WarcError::io(&path))?;
    Ok(OpenWarc {
        path,
        file,
        len: member.len() as u64,
        warcinfo_id,
        content: FileContent::WarcinfoOnly,
        dir_entry: DirEntry::Unsynced,
    })
}

fn new_record_id() -> String {
    format!("<{}>", uuid::Uuid::new_v4().urn())
}

fn warcinfo_member(
    record_id: &str,
    file_name: &str,
    now: SystemTime,
    members: &mut MemberEncoder,
) -> Vec<u8> {
    let block = format!(
        "software: {SOFTWARE}\r\n\
         format: WARC File Format 1.1\r\n\
         conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n\
         robots: obey\r\n"
    );
    let date = warc_date(now);
    let block_digest = sha1_label(&[block.as_bytes()]);
    let mut member = Vec::new();
    members.append(
        &mut member,
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", record_id),
            ("WARC-Date", &date),
            ("WARC-Filename", file_name),
            ("WARC-Block-Digest", &block_digest),
            ("Content-Type", "application/warc-fields"),
        ],
        &[block.as_bytes()],
    );
    member
}

struct ExchangeMembers {
    /// The request member followed by the response member.
    bytes: Vec<u8>,
    request_len: u64,
}

fn exchange_members(
    ex: &Exchange<'_>,
    request_id: &str,
    response_id: &str,
    file: &OpenWarc,
    members: &mut MemberEncoder,
) -> ExchangeMembers {
    let date = warc_date(ex.date);
    let ip = ex.ip.map(|ip| ip.to_string());

    let request_block = ex.request_line_and_headers;
    let request_payload = http_payload(request_block);
    let request_block_digest = sha1_label(&[request_block]);
    let request_payload_digest = sha1_label(&[request_payload]);
    let mut fields = exchange_fields(
        ("request", request_id, response_id),
        (date.as_str(), ex.target_uri, ip.as_deref()),
        file.warcinfo_id.as_str(),
        (&request_block_digest, &request_payload_digest),
    );
    fields.push(("Content-Type", "application/http;msgtype=request"));
    let response_head = response_head(ex);
    // Both members, compressed at about half the size (a bound, not a promise: it grows).
    let mut bytes =
        Vec::with_capacity((request_block.len() + response_head.len() + ex.body.len()) / 2 + 1024);
    members.append(&mut bytes, &fields, &[request_block]);
    let request_len = bytes.len() as u64;

    // The block is the head and the body: hashed and compressed in two parts, never copied
    // into one buffer. The body is hashed twice (block and payload digests); SHA-1 states
    // cannot be shared between the two.
    let response_block = [response_head.as_slice(), ex.body];
    let response_block_digest = sha1_label(&response_block);
    let response_payload_digest = sha1_label(&[ex.body]);
    let mut fields = exchange_fields(
        ("response", response_id, request_id),
        (date.as_str(), ex.target_uri, ip.as_deref()),
        file.warcinfo_id.as_str(),
        (&response_block_digest, &response_payload_digest),
    );
    if let Some(truncation) = ex.truncated {
        fields.push(("WARC-Truncated", truncation.as_warc_value()));
    }
    let seq = ex.seq.map(|s| s.to_string());
    if let Some(seq) = &seq {
        fields.push((SEQ_FIELD, seq.as_str()));
    }
    let committed = ex.committed_ms.map(|ms| ms.to_string());
    if let Some(ms) = &committed {
        fields.push((COMMITTED_FIELD, ms.as_str()));
    }
    let robots_for = ex.robots_for.map(one_line);
    if let Some(origin) = &robots_for {
        fields.push((ROBOTS_FIELD, origin.as_str()));
    }
    fields.push(("Content-Type", "application/http;msgtype=response"));
    members.append(&mut bytes, &fields, &response_block);

    ExchangeMembers { bytes, request_len }
}

/// The head of the response, with the server's status line version, whose headers describe the body as stored
/// (the response block is this head followed by the body): the body is decoded and
/// de-chunked, so Content-Encoding and Transfer-Encoding would make readers decode it again.
/// The removed Content-Encoding is kept under [`ORIGINAL_CONTENT_ENCODING`], and
/// Content-Length is the stored length (a truncated body says so in `WARC-Truncated`). A body
/// the fetch module could not decode is stored as it came, so its Content-Encoding stays.
fn response_head(ex: &Exchange<'_>) -> Vec<u8> {
    let mut head = format!(
        "{} {} {}\r\n",
        one_line(ex.version),
        ex.status,
        one_line(ex.reason)
    );
    let codings: Vec<&str> = ex
        .response_headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("content-encoding"))
        .map(|(_, value)| value.as_str())
        .collect();
    let decoded = crate::fetch::unsupported_coding(Some(&codings.join(", "))).is_none();
    let mut original_encodings = Vec::new();
    for (name, value) in ex.response_headers {
        if decoded && name.eq_ignore_ascii_case("content-encoding") {
            original_encodings.push(one_line(value));
        } else if !name.eq_ignore_ascii_case("transfer-encoding")
            && !name.eq_ignore_ascii_case("content-length")
        {
            push_field(&mut head, &one_line(name), &one_line(value));
        }
    }
    if !original_encodings.is_empty() {
        push_field(
            &mut head,
            ORIGINAL_CONTENT_ENCODING,
            &original_encodings.join(", "),
        );
    }
    push_field(&mut head, "Content-Length", &ex.body.len().to_string());
    head.push_str("\r\n");
    head.into_bytes()
}

/// A CR or LF inside a header would end it early and let the rest pose as headers; HTTP clients
/// reject them, so this only guards against a caller passing unchecked strings.
fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

fn push_field(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push_str(": ");
    out.push_str(value);
    out.push_str("\r\n");
}

/// The payload of an HTTP message: what follows its first blank line. A message without a blank
/// line is all head, so its payload is empty.
fn http_payload(message: &[u8]) -> &[u8] {
    message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(&[][..], |at| &message[at + 4..])
}

/// The SHA-1 of `parts` one after the other, as `sha1:BASE32`.
fn sha1_label(parts: &[&[u8]]) -> String {
    let mut sha1 = Sha1::new();
    for part in parts {
        sha1.update(part);
    }
    format!(
        "sha1:{}",
        data_encoding::BASE32.encode(sha1.finalize().as_slice())
    )
}

/// The named fields a request or response record share, in the order they are written:
/// (type, its id, the other record's id), (date, target URI, IP), warcinfo id, digests.
fn exchange_fields<'a>(
    (kind, id, other): (&'a str, &'a str, &'a str),
    (date, uri, ip): (&'a str, &'a str, Option<&'a str>),
    warcinfo: &'a str,
    (block_digest, payload_digest): (&'a str, &'a str),
) -> Vec<(&'static str, &'a str)> {
    let mut fields = vec![
        ("WARC-Type", kind),
        ("WARC-Record-ID", id),
        ("WARC-Date", date),
        ("WARC-Target-URI", uri),
    ];
    if let Some(ip) = ip {
        fields.push(("WARC-IP-Address", ip));
    }
    fields.extend([
        ("WARC-Warcinfo-ID", warcinfo),
        ("WARC-Concurrent-To", other),
        ("WARC-Block-Digest", block_digest),
        ("WARC-Payload-Digest", payload_digest),
    ]);
    fields
}

/// The gzip header every member starts with, as flate2's `GzEncoder` writes it at
/// `Compression::fast()`: no name, no mtime, XFL 4 (fastest), OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff];

/// Compresses records into gzip members (each record its own member, so a reader can start at
/// any record's offset) with one deflate state for the writer's life. A new compressor per
/// record allocated and initialised zlib's window and hash tables (about 256 KiB) for a few KiB
/// of page; a reset clears only what a new stream needs.
struct MemberEncoder {
    deflate: Compress,
}

impl std::fmt::Debug for MemberEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberEncoder").finish_non_exhaustive()
    }
}

impl MemberEncoder {
    fn new() -> MemberEncoder {
        MemberEncoder {
            // Raw deflate: the gzip header and trailer are written here.
            deflate: Compress::new(Compression::fast(), false),
        }
    }

    /// Appends to `out` one complete record, `WARC/1.1` header through the closing
    /// `\r\n\r\n`, as one gzip member: the record of `fields` and the block made of `block`'s
    /// parts one after the other.
    fn append(&mut self, out: &mut Vec<u8>, fields: &[(&str, &str)], block: &[&[u8]]) {
        let block_len: usize = block.iter().map(|part| part.len()).sum();
        let mut head = String::from("WARC/1.1\r\n");
        for (name, value) in fields {
            push_field(&mut head, name, value);
        }
        push_field(&mut head, "Content-Length", &block_len.to_string());
        head.push_str("\r\n");

        self.deflate.reset();
        let mut crc = Crc::new();
        out.extend_from_slice(&GZIP_HEADER);
        let parts = std::iter::once(head.as_bytes())
            .chain(block.iter().copied())
            .chain(std::iter::once(&b"\r\n\r\n"[..]));
        for part in parts {
            crc.update(part);
            self.deflate_into(out, part, FlushCompress::None);
        }
        self.deflate_into(out, &[], FlushCompress::Finish);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE: the uncompressed length modulo 2^32 (RFC 1952).
        out.extend_from_slice(&crc.amount().to_le_bytes());
    }

    /// Feeds all of `input` to the deflate stream, growing `out` as the output needs; with
    /// `Finish`, until the stream has ended.
    fn deflate_into(&mut self, out: &mut Vec<u8>, mut input: &[u8], flush: FlushCompress) {
        loop {
            if out.capacity() - out.len() < 4096 {
                out.reserve(input.len() / 2 + 4096);
            }
            let (before_in, before_out) = (self.deflate.total_in(), self.deflate.total_out());
            let status = self
                .deflate
                .compress_vec(input, out, flush)
                .expect("deflating into memory cannot fail: the stream is reset per member");
            let consumed = usize::try_from(self.deflate.total_in() - before_in)
                .expect("consumed at most the input's length");
            input = &input[consumed..];
            let done = match flush {
                FlushCompress::Finish => status == Status::StreamEnd,
                _ => input.is_empty(),
            };
            if done {
                return;
            }
            // With room in `out`, a stream that takes nothing and gives nothing has ended
            // without a reset: a bug here, not a condition to spin on.
            assert!(
                consumed > 0 || self.deflate.total_out() > before_out,
                "deflate made no progress: the member was not reset"
            );
        }
    }
}

/// `WARC-Date` as `YYYY-MM-DDThh:mm:ssZ` in UTC. A time before 1970 (a broken clock) is written
/// as the epoch rather than failing the record.
pub fn warc_date(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_from_days(secs / 86_400);
    let of_day = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// A `WARC-Date` as [`warc_date`] writes it (`YYYY-MM-DDThh:mm:ssZ`, fractions of a second
/// allowed and dropped), in milliseconds since the Unix epoch; `None` for anything else.
pub fn parse_warc_date(date: &str) -> Option<u64> {
    let b = date.as_bytes();
    let digits = |at: std::ops::Range<usize>| -> Option<u64> {
        let part = b.get(at)?;
        part.iter().all(u8::is_ascii_digit).then_some(())?;
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(at, c)| b.get(at) != Some(&c)) || b.last() != Some(&b'Z') {
        return None;
    }
    let tail = &b[19..b.len() - 1];
    let fraction = tail.is_empty()
        || (tail.len() > 1 && tail[0] == b'.' && tail[1..].iter().all(u8::is_ascii_digit));
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !fraction
        || year < 1970
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(secs * 1000)
}

/// A proleptic Gregorian date from 1970 on to days since 1970-01-01 (Howard Hinnant's
/// `days_from_civil`): the inverse of [`civil_from_days`].
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let yoe = year % 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`,
/// for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// After a crash: cuts `path` back to the end of its last complete gzip member and returns the
/// new length. A member that does not decompress to its end with a valid trailer, and everything
/// after it, is the partial tail. A read error fails the call instead of being taken for a tail.
pub fn truncate_partial_tail(path: &Path) -> Result<u64, WarcError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(WarcError::io(path))?;
    let total = file.metadata().map_err(WarcError::io(path))?.len();
    let mut reader = CountingReader {
        inner: BufReader::new(&file),
        consumed: 0,
        read_error: None,
    };
    let mut complete_end = 0;
    loop {
        match reader.fill_buf() {
            Ok([]) => break,
            Ok(_) => {}
            Err(source) => return Err(WarcError::io(path)(source)),
        }
        let mut member = flate2::bufread::GzDecoder::new(&mut reader);
        let decoded = io::copy(&mut member, &mut io::sink());
        if let Some(source) = reader.read_error.take() {
            return Err(WarcError::io(path)(source));
        }
        if decoded.is_err() {
            break;
        }
        complete_end = reader.consumed;
    }
    drop(reader);
    if complete_end < total {
        file.set_len(complete_end)
            .and_then(|()| file.sync_all())
            .map_err(WarcError::io(path))?;
    }
    Ok(complete_end)
}

/// Counts the bytes the gzip decoder consumes, so a member's end is known exactly, and keeps read
/// errors apart from corrupt data.
pub(super) struct CountingReader<R> {
    pub(super) inner: R,
    pub(super) consumed: u64,
    pub(super) read_error: Option<io::Error>,
}

impl<R: BufRead> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for CountingReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self.inner.fill_buf() {
            Ok(buf) => Ok(buf),
            Err(e) => {
                self.read_error = Some(io::Error::new(e.kind(), e.to_string()));
                Err(e)
            }
        }
    }

    fn consume(&mut self, amount: usize) {
        self.consumed += amount as u64;
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Duration;

    /// Seconds since the epoch of [`DATE`].
    const DATE_SECS: u64 = 1_795_242_600;

    fn date() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(DATE_SECS)
    }

    const DATE: &str = "2026-11-21T06:30:00Z";
    const REQUEST: &[u8] =
        b"GET /p.html HTTP/1.1\r\nHost: example.test\r\nUser-Agent: crawltop/0.1\r\n\r\n";

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn exchange<'a>(
        uri: &'a str,
        response_headers: &'a [(String, String)],
        body: &'a [u8],
    ) -> Exchange<'a> {
        Exchange {
            target_uri: uri,
            seq: None,
            committed_ms: None,
            robots_for: None,
            date: date(),
            ip: Some(IpAddr::from([127, 0, 0, 1])),
            request_line_and_headers: REQUEST,
            version: "HTTP/1.1",
            status: 200,
            reason: "OK",
            response_headers,
            body,
            truncated: None,
        }
    }

    fn b32_sha1(bytes: &[u8]) -> String {
        format!(
            "sha1:{}",
            data_encoding::BASE32.encode(&Sha1::digest(bytes)[..])
        )
    }

    /// A record as the independent `warc` crate reads it: lowercased header names.
    struct ReadRecord {
        version: String,
        headers: HashMap<String, String>,
        block: Vec<u8>,
    }

    impl ReadRecord {
        fn header(&self, name: &str) -> &str {
            self.headers
                .get(name)
                .map_or_else(|| panic!("record has no {name} header"), String::as_str)
        }
    }

    fn read_with_warc_crate(path: &Path) -> Vec<ReadRecord> {
        warc::WarcReader::from_path_gzip(path)
            .expect("test file opens")
            .iter_raw_records()
            .map(|record| {
                let (head, block) = record.expect("the warc crate parses every record");
                ReadRecord {
                    version: head.version,
                    headers: head
                        .headers
                        .into_iter()
                        .map(|(name, value)| {
                            (
                                name.to_string(),
                                String::from_utf8(value).expect("header values are UTF-8"),
                            )
                        })
                        .collect(),
                    block,
                }
            })
            .collect()
    }

    /// Splits a file into its gzip members, decompressed, with the offset each starts at.
    fn members(path: &Path) -> Vec<(u64, Vec<u8>)> {
        let bytes = fs::read(path).expect("test file reads");
        let mut reader = CountingReader {
            inner: &bytes[..],
            consumed: 0,
            read_error: None,
        };
        let mut out = Vec::new();
        while !reader.fill_buf().expect("slice reads").is_empty() {
            let start = reader.consumed;
            let mut data = Vec::new();
            flate2::bufread::GzDecoder::new(&mut reader)
                .read_to_end(&mut data)
                .expect("every member decompresses");
            out.push((start, data));
        }
        out
    }

    fn http_head(block: &[u8]) -> String {
        let body_len = http_payload(block).len();
        String::from_utf8(block[..block.len() - body_len].to_vec()).expect("HTTP head is UTF-8")
    }

    fn warc_files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(dir)
            .expect("dir lists")
            .map(|e| e.expect("entry").path())
            .collect();
        files.sort();
        files
    }

    #[test]
    fn every_header_and_body_reads_back_with_the_warc_crate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Length", "999"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ]);
        let body = b"<html><title>p</title>hello</html>";
        let ids = writer
            .write_exchange(&exchange(
                "http://example.test/p.html",
                &response_headers,
                body,
            ))
            .expect("write");
        let path = writer.current_file().expect("a file").to_path_buf();
        assert_eq!(path, dir.path().join("crawl-00000.warc.gz"));
        assert_eq!(ids.file, path);

        let records = read_with_warc_crate(&path);
        assert_eq!(records.len(), 3);
        let [info, request, response] = &records[..] else {
            unreachable!()
        };
        let warcinfo_id = info.header("warc-record-id").to_owned();

        let expected_request: HashMap<String, String> = [
            ("warc-type", "request"),
            ("warc-record-id", ids.request.as_str()),
            ("warc-date", DATE),
            ("warc-target-uri", "http://example.test/p.html"),
            ("warc-ip-address", "127.0.0.1"),
            ("warc-warcinfo-id", warcinfo_id.as_str()),
            ("warc-concurrent-to", ids.response.as_str()),
            ("warc-block-digest", b32_sha1(REQUEST).as_str()),
            ("warc-payload-digest", b32_sha1(b"").as_str()),
            ("content-type", "application/http;msgtype=request"),
            ("content-length", REQUEST.len().to_string().as_str()),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(request.version, "1.1");
        assert_eq!(request.headers, expected_request);
        assert_eq!(request.block, REQUEST);

        let expected_block = [
            &b"HTTP/1.1 200 OK\r\n\
               Content-Type: text/html; charset=utf-8\r\n\
               Set-Cookie: a=1\r\n\
               Set-Cookie: b=2\r\n\
               X-Crawltop-Original-Content-Encoding: gzip\r\n\
               Content-Length: 34\r\n\
               \r\n"[..],
            body,
        ]
        .concat();
        let expected_response: HashMap<String, String> = [
            ("warc-type", "response"),
            ("warc-record-id", ids.response.as_str()),
            ("warc-date", DATE),
            ("warc-target-uri", "http://example.test/p.html"),
            ("warc-ip-address", "127.0.0.1"),
            ("warc-warcinfo-id", warcinfo_id.as_str()),
            ("warc-concurrent-to", ids.request.as_str()),
            ("warc-block-digest", b32_sha1(&expected_block).as_str()),
            ("warc-payload-digest", b32_sha1(body).as_str()),
            ("content-type", "application/http;msgtype=response"),
            ("content-length", expected_block.len().to_string().as_str()),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(response.version, "1.1");
        assert_eq!(response.headers, expected_response);
        assert_eq!(response.block, expected_block);
    }

    #[test]
    fn warcinfo_opens_each_file_and_every_record_names_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        writer
            .write_exchange(&exchange("http://a.test/", &no_headers, b"x"))
            .expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        let info = &records[0];
        assert_eq!(info.header("warc-type"), "warcinfo");
        assert_eq!(info.header("warc-filename"), "crawl-00000.warc.gz");
        assert_eq!(info.header("warc-date"), DATE);
        assert_eq!(info.header("content-type"), "application/warc-fields");
        assert_eq!(info.header("warc-block-digest"), b32_sha1(&info.block));
        let fields = String::from_utf8(info.block.clone()).expect("warcinfo is text");
        assert!(fields.contains(&format!(
            "software: crawltop/{}\r\n",
            env!("CARGO_PKG_VERSION")
        )));
        assert!(fields.contains("format: WARC File Format 1.1\r\n"));
        for record in &records[1..] {
            assert_eq!(
                record.header("warc-warcinfo-id"),
                info.header("warc-record-id")
            );
        }
    }

    #[test]
    fn record_ids_are_urn_uuid_v4_and_distinct() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        let a = writer
            .write_exchange(&exchange("http://a.test/", &no_headers, b""))
            .expect("write");
        let b = writer
            .write_exchange(&exchange("http://a.test/", &no_headers, b""))
            .expect("write");
        let all = [&a.request, &a.response, &b.request, &b.response];
        for id in all {
            let inner = id
                .strip_prefix("<urn:uuid:")
                .and_then(|s| s.strip_suffix('>'))
                .expect("id is <urn:uuid:...>");
            let uuid = uuid::Uuid::parse_str(inner).expect("a UUID");
            assert_eq!(uuid.get_version_num(), 4);
        }
        let distinct: std::collections::HashSet<_> = all.into_iter().collect();
        assert_eq!(distinct.len(), 4);
    }

    #[test]
    fn each_record_is_its_own_gzip_member_and_offsets_point_at_responses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        let mut written = Vec::new();
        for i in 0..3 {
            let uri = format!("http://a.test/{i}");
            let body = format!("body {i}");
            written.push(
                writer
                    .write_exchange(&exchange(&uri, &no_headers, body.as_bytes()))
                    .expect("write"),
            );
        }
        let members = members(writer.current_file().expect("a file"));
        assert_eq!(members.len(), 1 + 2 * 3);
        for (_, data) in &members {
            assert!(data.starts_with(b"WARC/1.1\r\n"));
            assert!(data.ends_with(b"\r\n\r\n"));
            // One record per member: the version line appears once.
            assert_eq!(data.windows(10).filter(|w| w == b"WARC/1.1\r\n").count(), 1);
        }
        for (i, ids) in written.iter().enumerate() {
            let (offset, data) = &members[2 + 2 * i];
            assert_eq!(*offset, ids.offset);
            let text = String::from_utf8_lossy(data);
            assert!(text.contains("WARC-Type: response\r\n"));
            assert!(text.contains(&format!("WARC-Record-ID: {}\r\n", ids.response)));
        }
        let file_len = fs::metadata(writer.current_file().expect("a file"))
            .expect("meta")
            .len();
        assert_eq!(writer.position().expect("a file"), file_len);
    }

    /// One encoder, reset per member, writes each record as a complete gzip member of its own
    /// (flate2's header, the record, CRC and length) however many came before it: small, empty,
    /// and a block larger than the output grows by at once (random bytes do not compress).
    #[test]
    fn a_reused_encoder_writes_each_record_as_its_own_gzip_member() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..300_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        let rabbits = b"rabbit ".repeat(10_000);
        let blocks: [&[&[u8]]; 5] = [
            &[b"HTTP/1.1 200 OK\r\n\r\n", b"a small body"],
            &[],
            &[b"head\r\n\r\n", &noise],
            &[&rabbits],
            &[b"HTTP/1.1 200 OK\r\n\r\n", b"a small body"],
        ];
        let fresh_header = flate2::write::GzEncoder::new(Vec::new(), Compression::fast())
            .finish()
            .expect("compress")[..10]
            .to_vec();
        let mut encoder = MemberEncoder::new();
        let fields = [("WARC-Type", "response")];
        let mut first_small = Vec::new();
        for (i, parts) in blocks.into_iter().enumerate() {
            let mut member = Vec::new();
            encoder.append(&mut member, &fields, parts);
            assert_eq!(member[..10], fresh_header[..]);

            let mut decoder = flate2::bufread::GzDecoder::new(&member[..]);
            let mut record = Vec::new();
            decoder.read_to_end(&mut record).expect("one valid member");
            assert!(decoder.into_inner().is_empty(), "nothing after the member");
            let block = parts.concat();
            let mut expected = format!(
                "WARC/1.1\r\nWARC-Type: response\r\nContent-Length: {}\r\n\r\n",
                block.len()
            )
            .into_bytes();
            expected.extend_from_slice(&block);
            expected.extend_from_slice(b"\r\n\r\n");
            assert!(record == expected, "block {i} of {} bytes", block.len());
            // The same record after a large one compresses to the same bytes: nothing of the
            // earlier stream is left in the state.
            match i {
                0 => first_small = member,
                4 => assert_eq!(member, first_small),
                _ => {}
            }
        }
    }

    #[test]
    fn digests_match_a_recomputation_over_block_and_payload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[("Content-Type", "application/octet-stream")]);
        let post = b"POST /form HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\na=1";
        let mut ex = exchange("http://a.test/form", &response_headers, b"\x00\x01binary");
        ex.request_line_and_headers = post;
        writer.write_exchange(&ex).expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        for record in &records[1..] {
            assert_eq!(record.header("warc-block-digest"), b32_sha1(&record.block));
            assert_eq!(
                record.header("warc-payload-digest"),
                b32_sha1(http_payload(&record.block))
            );
        }
        assert_eq!(http_payload(&records[1].block), b"a=1");
        assert_eq!(http_payload(&records[2].block), b"\x00\x01binary");
    }

    #[test]
    fn invalid_utf8_and_nul_bytes_round_trip_byte_for_byte() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        let body: Vec<u8> = (0..=255u8)
            .chain([0xff, 0xfe, 0x00, 0xc3, 0x28, b'\r', b'\n', b'\r', b'\n'])
            .collect();
        writer
            .write_exchange(&exchange("http://a.test/bin", &no_headers, &body))
            .expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        assert_eq!(http_payload(&records[2].block), &body[..]);
        assert_eq!(records[2].header("warc-payload-digest"), b32_sha1(&body));
    }

    #[test]
    fn a_truncated_body_carries_warc_truncated_length() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[("Content-Length", "1000000")]);
        let mut cut = exchange("http://a.test/big", &response_headers, b"first bytes");
        cut.truncated = Some(Truncation::Length);
        writer.write_exchange(&cut).expect("write");
        writer
            .write_exchange(&exchange("http://a.test/small", &response_headers, b"all"))
            .expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        assert_eq!(records[2].header("warc-truncated"), "length");
        assert!(http_head(&records[2].block).contains("Content-Length: 11\r\n"));
        assert!(!records[1].headers.contains_key("warc-truncated"));
        assert!(!records[4].headers.contains_key("warc-truncated"));
    }

    #[test]
    fn no_original_encoding_header_when_the_server_sent_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[("content-type", "text/plain"), ("content-length", "2")]);
        writer
            .write_exchange(&exchange("http://a.test/", &response_headers, b"hi"))
            .expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        assert_eq!(
            http_head(&records[2].block),
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nContent-Length: 2\r\n\r\n"
        );
    }

    #[test]
    fn a_body_in_a_coding_the_fetch_does_not_decode_keeps_its_content_encoding() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[
            ("content-type", "text/html"),
            ("Content-Encoding", "gzip"),
            ("content-encoding", "zstd"),
        ]);
        let body = b"\x28\xb5\x2f\xfd as it came";
        writer
            .write_exchange(&exchange("http://a.test/", &response_headers, body))
            .expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        assert_eq!(
            http_head(&records[2].block),
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nContent-Encoding: gzip\r\n\
             content-encoding: zstd\r\nContent-Length: 15\r\n\r\n"
        );
        assert!(records[2].block.ends_with(body));
    }

    #[test]
    fn several_content_encodings_are_all_recorded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[("Content-Encoding", "gzip"), ("content-encoding", "br")]);
        writer
            .write_exchange(&exchange("http://a.test/", &response_headers, b"hi"))
            .expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        let head = http_head(&records[2].block);
        assert!(head.contains("X-Crawltop-Original-Content-Encoding: gzip, br\r\n"));
        assert!(!head.to_ascii_lowercase().contains("\ncontent-encoding:"));
    }

    #[test]
    fn crlf_in_response_headers_cannot_inject_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let response_headers = headers(&[("X-Evil", "a\r\nContent-Length: 0\r\n\r\nfake")]);
        let mut ex = exchange("http://a.test/", &response_headers, b"real");
        ex.reason = "OK\r\nX-Injected: 1";
        writer.write_exchange(&ex).expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        let block = &records[2].block;
        assert_eq!(http_payload(block), b"real");
        assert_eq!(
            http_head(block),
            "HTTP/1.1 200 OK  X-Injected: 1\r\nX-Evil: a  Content-Length: 0    fake\r\n\
             Content-Length: 4\r\n\r\n"
        );
    }

    #[test]
    fn a_target_uri_with_whitespace_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        let refuse_all = |writer: &mut WarcWriter| {
            for uri in [
                "http://a.test/\r\nWARC-Type: metadata",
                "http://a.test/a b",
                "",
            ] {
                let err = writer
                    .write_exchange(&exchange(uri, &no_headers, b"x"))
                    .expect_err("refused");
                assert!(matches!(err, WarcError::InvalidTargetUri(_)));
            }
        };
        refuse_all(&mut writer);
        assert_eq!(
            writer.current_file(),
            None,
            "a refused exchange opens no file"
        );
        assert!(warc_files(dir.path()).is_empty());
        writer
            .write_exchange(&exchange("http://a.test/", &no_headers, b"x"))
            .expect("write");
        let before = writer.position().expect("a file");
        refuse_all(&mut writer);
        assert_eq!(writer.position().expect("a file"), before);
        assert_eq!(
            fs::metadata(writer.current_file().expect("a file"))
                .expect("meta")
                .len(),
            before
        );
    }

    #[test]
    fn a_writer_that_writes_nothing_leaves_no_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let warc = dir.path().join("warc");
        let mut writer = WarcWriter::new(&warc, "crawl", 1 << 30).expect("new");
        writer.sync().expect("sync");
        assert_eq!((writer.current_file(), writer.position()), (None, None));
        drop(writer);
        assert!(!warc.exists(), "the folder is made with the first file");
    }

    #[test]
    fn a_missing_ip_leaves_out_warc_ip_address() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        let mut ex = exchange("http://a.test/", &no_headers, b"x");
        ex.ip = Some("::1".parse().expect("ipv6"));
        writer.write_exchange(&ex).expect("write");
        ex.ip = None;
        writer.write_exchange(&ex).expect("write");
        let records = read_with_warc_crate(writer.current_file().expect("a file"));
        assert_eq!(records[1].header("warc-ip-address"), "::1");
        assert_eq!(records[2].header("warc-ip-address"), "::1");
        assert!(!records[3].headers.contains_key("warc-ip-address"));
        assert!(!records[4].headers.contains_key("warc-ip-address"));
    }

    #[test]
    fn rotation_gives_several_files_with_whole_exchanges_in_each() {
        let dir = tempfile::tempdir().expect("tempdir");
        let max = 2_000;
        let mut writer = WarcWriter::new(dir.path(), "crawl", max).expect("new");
        let no_headers = headers(&[]);
        let mut written = Vec::new();
        for i in 0..20 {
            let uri = format!("http://a.test/{i}");
            // Incompressible-ish bodies so a few exchanges fill a file.
            let body: Vec<u8> = (0..300u32)
                .map(|j| (j.wrapping_mul(2_654_435_761).wrapping_add(i) >> 13) as u8)
                .collect();
            written.push(
                writer
                    .write_exchange(&exchange(&uri, &no_headers, &body))
                    .expect("write"),
            );
        }
        writer.sync().expect("sync");
        let files = warc_files(dir.path());
        assert!(files.len() >= 3, "only {} files", files.len());
        for (n, file) in files.iter().enumerate() {
            assert_eq!(file, &dir.path().join(format!("crawl-{n:05}.warc.gz")));
        }
        let mut responses = 0;
        for file in &files {
            let records = read_with_warc_crate(file);
            assert_eq!(records[0].header("warc-type"), "warcinfo");
            let exchanges = (records.len() - 1) / 2;
            assert_eq!(records.len(), 1 + 2 * exchanges);
            assert!(exchanges >= 1);
            let size = fs::metadata(file).expect("meta").len();
            assert!(
                size <= max || exchanges == 1,
                "{} is {size} bytes",
                file.display()
            );
            for pair in records[1..].chunks(2) {
                assert_eq!(pair[0].header("warc-type"), "request");
                assert_eq!(pair[1].header("warc-type"), "response");
                assert_eq!(
                    pair[1].header("warc-concurrent-to"),
                    pair[0].header("warc-record-id")
                );
                assert_eq!(
                    pair[0].header("warc-warcinfo-id"),
                    records[0].header("warc-record-id")
                );
                let ids = written
                    .iter()
                    .find(|ids| ids.response == pair[1].header("warc-record-id"))
                    .expect("a written response");
                assert_eq!(&ids.file, file);
                responses += 1;
            }
        }
        assert_eq!(responses, 20);
    }

    #[test]
    fn an_exchange_larger_than_the_limit_gets_a_file_of_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 10).expect("new");
        let no_headers = headers(&[]);
        for i in 0..3 {
            writer
                .write_exchange(&exchange(&format!("http://a.test/{i}"), &no_headers, b"x"))
                .expect("write");
        }
        let files = warc_files(dir.path());
        assert_eq!(files.len(), 3);
        for file in &files {
            assert_eq!(read_with_warc_crate(file).len(), 3);
        }
    }

    #[test]
    fn a_new_writer_continues_numbering_and_never_overwrites() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "crawl-00000.warc.gz",
            "crawl-00003.warc.gz",
            "other-00009.warc.gz",
            "crawl-x-00007.warc.gz",
            "crawl-00005.warc",
            "crawl-.warc.gz",
        ] {
            fs::write(dir.path().join(name), name).expect("seed file");
        }
        let no_headers = headers(&[]);
        let ex = exchange("http://a.test/", &no_headers, b"x");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        writer.write_exchange(&ex).expect("write");
        assert_eq!(
            writer.current_file().expect("a file"),
            dir.path().join("crawl-00004.warc.gz")
        );
        assert_eq!(
            fs::read(dir.path().join("crawl-00003.warc.gz")).expect("read"),
            b"crawl-00003.warc.gz"
        );
        drop(writer);
        let mut again = WarcWriter::new(dir.path(), "crawl", 1 << 30).expect("new");
        again.write_exchange(&ex).expect("write");
        assert_eq!(
            again.current_file().expect("a file"),
            dir.path().join("crawl-00005.warc.gz")
        );
    }

    #[test]
    fn a_prefix_with_a_path_separator_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        for prefix in ["", "a/b", "..\\x"] {
            assert!(matches!(
                WarcWriter::new(dir.path(), prefix, 1 << 30),
                Err(WarcError::InvalidPrefix(_))
            ));
        }
    }

    /// A file of two exchanges, and its length.
    fn complete_file(dir: &Path) -> (PathBuf, u64) {
        let mut writer = WarcWriter::new(dir, "crawl", 1 << 30).expect("new");
        let no_headers = headers(&[]);
        for i in 0..2 {
            writer
                .write_exchange(&exchange(&format!("http://a.test/{i}"), &no_headers, b"x"))
                .expect("write");
        }
        writer.sync().expect("sync");
        (
            writer.current_file().expect("a file").to_path_buf(),
            writer.position().expect("a file"),
        )
    }

    fn append(path: &Path, bytes: &[u8]) {
        OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .expect("append");
    }

    fn one_member() -> Vec<u8> {
        let no_headers = headers(&[]);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "m", 1 << 30).expect("new");
        let body: Vec<u8> = (0..2_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let ids = writer
            .write_exchange(&exchange("http://a.test/big", &no_headers, &body))
            .expect("write");
        let bytes = fs::read(&ids.file).expect("read");
        bytes[ids.offset as usize..].to_vec()
    }

    #[test]
    fn truncate_cuts_half_a_member_back_to_the_last_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, complete) = complete_file(dir.path());
        let member = one_member();
        append(&path, &member[..member.len() / 2]);
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), complete);
        assert_eq!(fs::metadata(&path).expect("meta").len(), complete);
        assert_eq!(read_with_warc_crate(&path).len(), 5);
    }

    #[test]
    fn truncate_cuts_a_member_missing_only_its_trailer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, complete) = complete_file(dir.path());
        let member = one_member();
        append(&path, &member[..member.len() - 4]);
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), complete);
        assert_eq!(read_with_warc_crate(&path).len(), 5);
    }

    #[test]
    fn truncate_cuts_random_garbage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, complete) = complete_file(dir.path());
        let garbage: Vec<u8> = (0..1_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        append(&path, &garbage);
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), complete);
        assert_eq!(read_with_warc_crate(&path).len(), 5);
        // A lone gzip magic number is a partial member too.
        append(&path, &[0x1f, 0x8b]);
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), complete);
    }

    #[test]
    fn truncate_keeps_a_clean_file_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, complete) = complete_file(dir.path());
        let before = fs::read(&path).expect("read");
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), complete);
        assert_eq!(fs::read(&path).expect("read"), before);
    }

    #[test]
    fn truncate_empties_a_file_of_garbage_and_keeps_an_empty_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("crawl-00000.warc.gz");
        fs::write(&path, b"not gzip at all").expect("write");
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), 0);
        assert_eq!(truncate_partial_tail(&path).expect("truncate"), 0);
        assert_eq!(fs::metadata(&path).expect("meta").len(), 0);
    }

    #[test]
    fn truncate_of_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            truncate_partial_tail(&dir.path().join("absent.warc.gz")),
            Err(WarcError::Io { .. })
        ));
    }

    #[test]
    fn warc_date_formats_utc_with_seconds() {
        let at = |secs| warc_date(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(warc_date(date()), DATE);
        assert_eq!(
            warc_date(date() + Duration::from_millis(999)),
            DATE,
            "sub-seconds are cut, not rounded"
        );
    }

    #[test]
    fn a_warc_date_reads_back_to_its_second() {
        // Every day of 1970-2100 (leap years, century rules), at a second of the day.
        for day in 0..47_482u64 {
            let secs = day * 86_400 + (day * 7_919) % 86_400;
            let date = warc_date(UNIX_EPOCH + Duration::from_secs(secs));
            assert_eq!(parse_warc_date(&date), Some(secs * 1000), "{date}");
        }
        assert_eq!(
            parse_warc_date("2023-11-14T22:13:20.123456Z"),
            Some(1_700_000_000_000),
            "fractions are dropped"
        );
        for bad in [
            "",
            "2023-11-14",
            "2023-11-14T22:13:20",
            "2023-11-14 22:13:20Z",
            "2023-13-14T22:13:20Z",
            "2023-11-14T24:13:20Z",
            "1969-12-31T23:59:59Z",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:2xZ",
            "+023-11-14T22:13:20Z",
            "2023-11-14T22:13:20+01:00",
        ] {
            assert_eq!(parse_warc_date(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn warc_date_before_1970_is_the_epoch() {
        assert_eq!(
            warc_date(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00Z"
        );
    }

    /// warcio is the reference reader of the web-archiving community; it rejects files that are
    /// one gzip stream. Runs only where `python3` with warcio is installed.
    #[test]
    fn warcio_reads_every_record_and_verifies_digests() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/warcio_check.py");
        let probe = std::process::Command::new("python3")
            .args(["-c", "import warcio"])
            .output();
        match probe {
            Ok(out) if out.status.success() => {}
            Ok(_) => {
                println!("skipped: python3 has no warcio (pip install warcio)");
                return;
            }
            Err(e) => {
                println!("skipped: python3 not runnable: {e}");
                return;
            }
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = WarcWriter::new(dir.path(), "crawl", 3_000).expect("new");
        let response_headers = headers(&[
            ("Content-Type", "text/html"),
            ("Content-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
        ]);
        let mut expected = Vec::new();
        for i in 0..8u32 {
            let uri = format!("http://a.test/{i}");
            let body: Vec<u8> = (0..400u32 * i)
                .map(|j| (j.wrapping_mul(2_654_435_761) >> 9) as u8)
                .chain([0, 0xff, 0xfe])
                .collect();
            let mut ex = exchange(&uri, &response_headers, &body);
            if i == 3 {
                ex.truncated = Some(Truncation::Length);
            }
            let ids = writer.write_exchange(&ex).expect("write");
            expected.push(format!(
                "{}\t{}\tresponse\t{}\t{uri}\t200\t{}\t{}",
                ids.file.display(),
                ids.offset,
                ids.response,
                body.len(),
                &b32_sha1(&body)["sha1:".len()..]
            ));
        }
        writer.sync().expect("sync");
        let files = warc_files(dir.path());
        assert!(files.len() > 1);
        let out = std::process::Command::new("python3")
            .arg(script)
            .args(&files)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "warcio failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), files.len() + 2 * 8);
        let responses: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.split('\t').nth(2) == Some("response"))
            .collect();
        assert_eq!(responses, expected);
    }
}
