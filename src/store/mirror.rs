//! The page mirror: where a fetched page lives on disk, one file per page under
//! `DIR/pages/<host>_<port>/<path>`.
//!
//! [`mirror_path`] is a pure function of the URL: the committer, the index and a resumed crawl
//! all compute the same place for a page without looking at the disk, and the order in which
//! pages arrive never changes where they go. [`Mirror`] is the one small writer on top; it also
//! keeps the pages folder's list of the site folders crawls made ([`SITES_LIST`]), which is what
//! `--fresh` removes there. It also keeps the files it created since the crawl's last
//! checkpoint ([`CREATED_LIST`]), which a resume removes: the other stores are cut back to the
//! checkpoint, and so is the mirror.
//! This module must never produce a path that leaves the pages folder, whatever the URL, and
//! never let one page's file stand where another page needs a folder.
//!
//! The rules, each closing one hole:
//! - **Site folder** `<host>_<port>`: the host lowercased (IDNA hosts are already punycode),
//!   the port always written (80 and 443 filled in). An IPv6 host `[::1]` becomes
//!   `ipv6~0000-0000-0000-0000-0000-0000-0000-0001`: no colons or brackets, and the `~`
//!   keeps it apart from any domain name (a domain's `~` is escaped, see below).
//! - **Escaping**: each path segment is read in its canonical form (`crate::canonical`: the
//!   spellings the crawl takes for one URL share a file) and percent-decoded, then every byte
//!   or character that could be special anywhere is written back as `%XX` (upper-case hex):
//!   `/`, `\`, NUL and all control characters, `%` itself, the Windows-reserved `<>:"|?*`,
//!   space, `#`, `` ` `` and `~` (reserved below for this module's own marks), bytes that are
//!   not UTF-8, a leading `.` (so no name is `.`, `..` or hidden) and a trailing `.` (Windows
//!   drops it). A segment named like a Windows device (`CON`, `aux.html`, `COM1`) gets its
//!   first letter escaped. Other Unicode is kept as is; NFC and NFD spellings stay distinct
//!   files.
//! - **Spellings a URL keeps apart**: a delimiter of RFC 3986 (`!$&'()*+,:;=@[]`, and `^` `|`,
//!   which the URL parser leaves raw too) may stand in a path as is or as its escape, and the
//!   two are different URLs to the crawl and to a server (`/C++` is not `/C%2B%2B`). Decoding
//!   both would give them one file, so the escape is written as the URL spells it: `%2B` where
//!   the raw character is kept in names (`+` stays `+`), and `%%3A` where the raw character is
//!   itself escaped (`:` is `%3A`, so the URL's `%3A` needs a spelling of its own). A `%` that
//!   starts no escape (`/a%zz`, not `/a%25zz`) is `%%25`. Raw characters keep the names they
//!   always had: only URLs spelling such an escape (or a stray `%`) were moved when this rule
//!   came, and they were the ones sharing a file with another URL.
//! - **Files and folders never clash**: `/a`, `/a/` and `/a/b` must all fit in one tree. A
//!   file name always contains a `.` or a `~` and never ends in `~dir`; a folder name is
//!   either plain (no `.`, no `~`) or ends in `~dir`. So `/a` is the file `a~file` (no
//!   extension, no query), `/a/` is `a/index.html`, `/v1.2/x.html` is `v1.2~dir/x.html`,
//!   `/p7.html` stays `p7.html`. The rule does not depend on letter case, so it holds on
//!   case-insensitive disks too.
//! - **Folder pages**: a path ending in `/` is stored as `index.html` in that folder. The one
//!   deliberate alias: `/a/` and `/a/index.html` share a file (nearly every server serves the
//!   same page for both).
//! - **Query**: `p.html?ref=1` becomes `p~<8 hex>.html`, the hex being xxh3 of the query as
//!   the URL spells it: stable across runs, and `?a=1&b=2` differs from `?b=2&a=1`.
//! - **Long names**: a name over [`MAX_NAME`] bytes is cut on a character boundary (never
//!   inside a `%XX`) and gets `~<8 hex>` of the whole name before its marks and extension.
//! - **Deep paths**: the relative path stays within [`MAX_PATH`] bytes, leaving room for the
//!   root below Linux's 4096: folders past the budget are folded into one
//!   `~deep~<16 hex>~dir` folder named by a hash of the folded part. The decision depends on
//!   the folders only, so all pages of one deep folder land in the same place.
//!
//! Apart from the folder-page alias, two URLs share a file only when the crawl takes them
//! for one URL anyway (`%61` and `a`, see `crate::canonical`), on an http/https pair for one
//! host and port, or on a hash collision (32 bits for queries: worth knowing for a page with
//! many thousands of query variants; the WARC keeps every response regardless).

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use url::{Host, Url};
use xxhash_rust::xxh3::xxh3_64;

// Canonical URLs hold an escape of an unreserved character only where decoding it would form
// a new escape with a stray `%` before it.
use crate::canonical::is_unreserved;

/// Longest name this module writes, in bytes (most file systems allow 255).
pub const MAX_NAME: usize = 200;
/// The version of these naming rules a crawl folder's mirror was written with (its checkpoint's
/// mark keeps it). 2: an escaped reserved character keeps its escape (`/p%2B` and `/p+` are
/// two files). A mirror of an older version (1) named both `/p+`, so a resume under these
/// rules would write one page over another: it is refused.
pub const NAMES: u32 = 2;

/// Longest relative path this module returns, in bytes, so that the root may take up to
/// about a thousand bytes before Linux's `PATH_MAX` of 4096.
pub const MAX_PATH: usize = 3000;

/// Longest extension kept apart from the stem when a mark or a hash is added to a name.
const MAX_EXTENSION: usize = 16;

const FILE_MARK: &str = "~file";
const DIR_MARK: &str = "~dir";
const FOLDER_PAGE: &str = "index.html";

/// Every `~deep~<16 hex>~dir` folder has this length.
const FOLD_NAME_LEN: usize = "~deep~".len() + 16 + DIR_MARK.len();

/// ASCII punctuation kept as is in names: harmless on Linux, macOS and Windows.
const KEPT_PUNCTUATION: &str = "-_.!$&'()+,;=@[]{}^";

/// The ASCII characters other than unreserved ones that a parsed URL's path may hold raw, so
/// that each has two spellings the crawl keeps apart (pinned against the `url` crate by
/// `raw_in_paths_is_what_the_url_parser_leaves_raw`).
const RAW_IN_PATHS: &str = "!$&'()*+,:;=@[]^|";

/// Device names Windows reserves, with or without an extension.
const WINDOWS_DEVICES: [&str; 24] = [
    "CON", "PRN", "AUX", "NUL", "COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7",
    "COM8", "COM9", "LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("{url} has no place in the mirror: only http and https URLs with a host do")]
    Unmappable { url: Url },
    #[error("cannot write the mirror file {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read the mirror's list of site folders {}", .path.display())]
    List {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "cannot read the mirror's list of the files it made since the last checkpoint {}",
        .path.display()
    )]
    Created {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "cannot remove {}, mirrored after the last checkpoint (its page is fetched again)",
        .path.display()
    )]
    Remove {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Where `url` is stored, relative to the pages folder, e.g. `127.0.0.1_8080/guide/p7.html`.
///
/// `None` for a URL that is not http or https, or has no host. Every component of the result
/// is a plain name (never empty, `.`, `..`, hidden, or holding a separator), so joined to any
/// root the path stays inside it.
pub fn mirror_path(url: &Url) -> Option<PathBuf> {
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let site = site_name(&url.host()?, url.port_or_known_default()?);
    let canonical = crate::canonical::canonical(url);
    let segments: Vec<&str> = canonical.path_segments()?.collect();
    let (last, folders) = segments.split_last()?;
    let folders = fold_deep(&site, folders.iter().map(|f| folder_name(f)).collect());
    let mut path = PathBuf::from(site);
    path.extend(folders);
    path.push(file_name(last, url.query()));
    Some(path)
}

/// Makes every page written under `root` so far durable, names and bytes: one `syncfs` of the
/// file system that holds the pages folder, which the checkpoint calls before it records the
/// mark ([`Mirror::write_page`] syncs nothing itself).
pub fn sync(root: &Path) -> io::Result<()> {
    let folder = fs::File::open(root)?;
    rustix::fs::syncfs(&folder).map_err(io::Error::from)
}

/// The pages folder's list of the site folders that crawls made in it, one name a line, each
/// written before its folder is made: what `--fresh` removes there ([`made_by_crawls`]), so that
/// a folder of the user's that is named like one (`photos_2023`) stays. Its name starts with `.`,
/// which no site folder's does.
pub const SITES_LIST: &str = ".crawltop-sites";

/// The pages folder's list of the files the mirror created since the crawl's last checkpoint,
/// one `SEQ<tab>PATH` line each (the page's sequence number, the file's path in the pages
/// folder), written before the file is: what a resume removes ([`Mirror::open`]). A killed
/// crawl's WARC files, index and extract lines are cut back to its last checkpoint; its mirror
/// would otherwise keep the files of the pages after it, which are fetched again, and keep them
/// when the second answer is an error or a page no longer there. A file that was there before
/// its page's write (a page of an alias, `/a/` and `/a/index.html`) is not listed: it holds a page
/// of the checkpoint's. Its name starts with `.`, which no site folder's does.
pub const CREATED_LIST: &str = ".crawltop-created";

/// The pages folder's folder of temporary files: a page's bytes are written there, then renamed
/// into place ([`Mirror::write_page`]). A killed crawl can leave one behind (written, not yet
/// renamed); [`Mirror::open`] empties the folder, so none stays as litter beside the pages. The
/// crawl folder's lock keeps any other crawl from writing there meanwhile. Its name starts with
/// `.`, which no site folder's does.
pub const TEMP_FOLDER: &str = ".crawltop-tmp";

/// The mirror a crawl writes: its pages folder, the site folders [`SITES_LIST`] holds, and the
/// files it made since the last checkpoint ([`CREATED_LIST`]).
#[derive(Debug)]
pub struct Mirror {
    root: PathBuf,
    listed: HashSet<String>,
    /// [`CREATED_LIST`], open for appending.
    created: fs::File,
}

/// Where a crawl's mirror starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// A new crawl (or one started over): the mirror holds no page of its.
    Fresh,
    /// A resume from the checkpoint whose mark is this sequence number: every page at or above
    /// it is fetched again, so the files made for them are removed.
    Resume(u64),
}

impl Mirror {
    /// Opens the pages folder `root`, made if missing, and reads its list of site folders. A
    /// mirror written before crawltop kept a list gets one as it goes: each site this crawl
    /// writes is listed then. Its other folders are not: named like site folders, they may be
    /// the user's (`photos_2023`), so `--fresh` keeps them.
    ///
    /// A resume ([`Opening::Resume`]) first removes the files [`CREATED_LIST`] names for the
    /// pages at or above the mark (with the folders that leaves empty), syncs the removals,
    /// and returns how many files it removed. Either way, the temporary files a killed run
    /// left in [`TEMP_FOLDER`] are removed.
    pub fn open(root: &Path, from: Opening) -> Result<(Mirror, usize), MirrorError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| MirrorError::Io { path, source }
        };
        fs::create_dir_all(root).map_err(io(root))?;
        let list = root.join(SITES_LIST);
        let mut listed = HashSet::new();
        if fs::symlink_metadata(&list).is_ok() {
            let names = self::listed(&list).map_err(|source| MirrorError::List {
                path: list.clone(),
                source,
            })?;
            listed = names.into_iter().collect();
        }
        clear_temp(&root.join(TEMP_FOLDER))?;
        let created = root.join(CREATED_LIST);
        let removed = match from {
            Opening::Resume(mark) if fs::symlink_metadata(&created).is_ok() => {
                let paths = created_since(&created, mark, &listed).map_err(|source| {
                    MirrorError::Created {
                        path: created.clone(),
                        source,
                    }
                })?;
                remove_created(root, &paths)?
            }
            Opening::Resume(_) | Opening::Fresh => 0,
        };
        let file = append_only(&created).map_err(io(&created))?;
        // Every file the list named is gone, durably: the list may be emptied.
        file.set_len(0).map_err(io(&created))?;
        Ok((
            Mirror {
                root: root.to_path_buf(),
                listed,
                created: file,
            },
            removed,
        ))
    }

    /// The pages folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Stores `body` as the page of `url`, the page numbered `seq` in commit order, and returns
    /// the file's path.
    ///
    /// The bytes go to a temporary file in [`TEMP_FOLDER`], which is then renamed over the
    /// page: a reader sees the old page or the new one, never a part. The file is not synced (one fsync per page would cap
    /// the crawl rate): the rename is atomic, but after a power loss a page may be missing or
    /// empty, so a durable checkpoint syncs the pages folder ([`sync`]) before it records the
    /// mark. A site folder's name goes to the list before the folder is made, and a file new to
    /// the folder to [`CREATED_LIST`] before it is there.
    pub fn write_page(&mut self, url: &Url, body: &[u8], seq: u64) -> Result<PathBuf, MirrorError> {
        let relative =
            mirror_path(url).ok_or_else(|| MirrorError::Unmappable { url: url.clone() })?;
        let site = relative
            .components()
            .next()
            .map(|site| site.as_os_str().to_string_lossy())
            .expect("a mirror path starts with its site folder");
        if !self.listed.contains(site.as_ref()) {
            self.list(&site)?;
        }
        let created = &mut self.created;
        let root = &self.root;
        write_at(root, &relative, body, |path| {
            match fs::symlink_metadata(path) {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // One write of a whole line: a line cut by a crash has no newline, and
                    // [`created_since`] skips it (its file was not renamed into place yet).
                    let line = format!("{seq}\t{}\n", relative.to_string_lossy());
                    created.write_all(line.as_bytes())
                }
                Err(e) => Err(e),
            }
        })
    }

    /// A checkpoint holds every page written so far: the files made for them are the
    /// checkpoint's, never removed by a resume. Called once the mark is durable (a crash before
    /// leaves the lines, whose pages are below the new mark, so a resume keeps their files).
    pub fn checkpointed(&mut self) -> Result<(), MirrorError> {
        self.created.set_len(0).map_err(|source| MirrorError::Io {
            path: self.root.join(CREATED_LIST),
            source,
        })
    }

    /// Appends `site` to the list, in one write of a whole line (a line cut by a crash has no
    /// newline, and [`listed`] skips it).
    fn list(&mut self, site: &str) -> Result<(), MirrorError> {
        let path = self.root.join(SITES_LIST);
        append_only(&path)
            .and_then(|mut file| file.write_all(format!("{site}\n").as_bytes()))
            .map_err(|source| MirrorError::Io { path, source })?;
        self.listed.insert(site.to_owned());
        Ok(())
    }
}

/// Makes [`TEMP_FOLDER`] at `temp`, or empties it of the temporary files a killed run left
/// there. Only names [`write_at`] gives are removed, and never through a planted symlink: a
/// `temp` that is not a plain folder is refused.
fn clear_temp(temp: &Path) -> Result<(), MirrorError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MirrorError::Io { path, source }
    };
    match fs::symlink_metadata(temp) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return fs::create_dir(temp).map_err(io(temp));
        }
        Err(e) => return Err(io(temp)(e)),
        Ok(meta) if !meta.is_dir() => {
            return Err(io(temp)(io::Error::other(
                "the mirror's folder of temporary files is not a plain folder (a symlink, a \
                 file); remove it",
            )));
        }
        Ok(_) => {}
    }
    for entry in fs::read_dir(temp).map_err(io(temp))? {
        let entry = entry.map_err(io(temp))?;
        let name = entry.file_name();
        // `.~PID-N.tmp`, as `write_at` names them.
        let ours = name
            .to_str()
            .and_then(|name| {
                name.strip_prefix(".~")?
                    .strip_suffix(".tmp")?
                    .split_once('-')
            })
            .is_some_and(|(pid, n)| {
                [pid, n]
                    .iter()
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            });
        if ours && entry.file_type().map_err(io(temp))?.is_file() {
            fs::remove_file(entry.path()).map_err(io(&entry.path()))?;
        }
    }
    Ok(())
}

/// A list of the pages folder, opened for appending, made if missing; never through a planted
/// symlink: the lists are written inside the pages folder only.
fn append_only(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let no_follow = i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0);
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(no_follow)
        .open(path)
}

/// The files [`CREATED_LIST`] (at `list`) names for pages at or above `mark`: whole lines only,
/// each a path a page of the mirror could have (plain names under a site folder of `listed`),
/// however the file was edited.
fn created_since(list: &Path, mark: u64, listed: &HashSet<String>) -> io::Result<Vec<PathBuf>> {
    let bytes = read_plain(list, "the mirror's list of the files it made")?;
    let mut paths = Vec::new();
    let mut lines = bytes.split(|&b| b == b'\n');
    // The last piece follows the last newline: empty, or a line cut short.
    lines.next_back();
    for line in lines {
        let Some((seq, path)) = std::str::from_utf8(line)
            .ok()
            .and_then(|line| line.split_once('\t'))
        else {
            continue;
        };
        let Ok(seq) = seq.parse::<u64>() else {
            continue;
        };
        let path = Path::new(path);
        let mut names = path.components().map(|c| match c {
            std::path::Component::Normal(name) => name.to_str(),
            _ => None,
        });
        let in_a_site = names
            .next()
            .flatten()
            .is_some_and(|site| listed.contains(site));
        let plain = names.all(|name| name.is_some_and(|n| !n.starts_with('.')));
        if seq >= mark && in_a_site && plain && path.components().count() >= 2 {
            paths.push(path.to_path_buf());
        }
    }
    Ok(paths)
}

/// Removes the files at `paths` (relative to `root`; one already gone is fine) and the folders
/// that leaves empty below their site folder, then syncs the pages folder if anything went.
fn remove_created(root: &Path, paths: &[PathBuf]) -> Result<usize, MirrorError> {
    let mut removed = 0;
    for relative in paths {
        let path = root.join(relative);
        match fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(MirrorError::Remove { path, source }),
        }
        // Emptied folders go, up to the site folder (kept: the list names it); one that still
        // holds something stops the climb.
        let mut folder = path.parent();
        while let Some(at) = folder.filter(|at| at.parent() != Some(root)) {
            if fs::remove_dir(at).is_err() {
                break;
            }
            folder = at.parent();
        }
    }
    if removed > 0 {
        sync(root).map_err(|source| MirrorError::Io {
            path: root.to_path_buf(),
            source,
        })?;
    }
    Ok(removed)
}

/// The site folders of the pages folder `root` that crawls made, as `--fresh` removes them: the
/// names its [`SITES_LIST`] holds (the list itself is not among them). Without a list, none: a
/// folder named like a site folder may be the user's, and one of a mirror written before the
/// list stays rather than risk that.
pub fn made_by_crawls(root: &Path) -> io::Result<Vec<String>> {
    let list = root.join(SITES_LIST);
    if fs::symlink_metadata(&list).is_ok() {
        listed(&list)
    } else {
        Ok(Vec::new())
    }
}

/// The names a list holds: whole lines only, each one a site folder's name and nothing that
/// could reach outside the pages folder, however the file was edited.
fn listed(list: &Path) -> io::Result<Vec<String>> {
    let bytes = read_plain(list, "the mirror's list of site folders")?;
    let (mut names, mut seen) = (Vec::new(), HashSet::new());
    let mut lines = bytes.split(|&b| b == b'\n');
    // The last piece follows the last newline: empty, or a line cut short.
    lines.next_back();
    for line in lines {
        if let Ok(name) = std::str::from_utf8(line)
            && is_site_folder(name)
            && !name.starts_with('.')
            && !name.contains(['/', '\\'])
            && seen.insert(name)
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// One of the pages folder's lists, read only as a plain file of that folder: a symlink would
/// let a file elsewhere say what `--fresh` or a resume deletes.
fn read_plain(list: &Path, what: &str) -> io::Result<Vec<u8>> {
    if !fs::symlink_metadata(list)?.is_file() {
        return Err(io::Error::other(format!(
            "{what} is not a plain file (a symlink, a folder); remove it, or put the list back"
        )));
    }
    fs::read(list)
}

/// Writes `body` at `relative` under `root` ([`Mirror::write_page`]); `before_rename` is given
/// the page's path once its bytes are in the temporary file, before they take its place.
fn write_at(
    root: &Path,
    relative: &Path,
    body: &[u8],
    before_rename: impl FnOnce(&Path) -> io::Result<()>,
) -> Result<PathBuf, MirrorError> {
    static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

    let path = root.join(relative);
    let folder = path
        .parent()
        .expect("a mirror path has a site folder above its file");
    fs::create_dir_all(folder).map_err(|source| MirrorError::Io {
        path: folder.to_path_buf(),
        source,
    })?;
    let temp = root.join(TEMP_FOLDER).join(format!(
        ".~{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = write_new(&temp, body)
        .and_then(|()| before_rename(&path))
        .and_then(|()| fs::rename(&temp, &path));
    if let Err(source) = written {
        // The write already failed and is reported; a temporary file left behind is only
        // litter (the name starts with `.`), so a failed clean-up adds nothing to report.
        let _ = fs::remove_file(&temp);
        return Err(MirrorError::Io { path, source });
    }
    Ok(path)
}

/// `create_new` refuses an existing name, so a planted file or symlink is never written through.
fn write_new(path: &Path, body: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(body)
}

/// Whether `name` (an entry of the pages folder) is a site folder as the mirror names them,
/// `<host>_<port>`. A user's folder can be named so too (`photos_2023`): the list
/// ([`SITES_LIST`]) tells which ones a crawl made.
pub fn is_site_folder(name: &str) -> bool {
    name.rsplit_once('_').is_some_and(|(host, port)| {
        !host.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok()
    })
}

fn site_name(host: &Host<&str>, port: u16) -> String {
    let host = match host {
        Host::Domain(domain) => defuse_dots(escape_bytes(domain.to_ascii_lowercase().as_bytes())),
        Host::Ipv4(address) => address.to_string(),
        Host::Ipv6(address) => {
            let groups: Vec<String> = address
                .segments()
                .iter()
                .map(|group| format!("{group:04x}"))
                .collect();
            format!("ipv6~{}", groups.join("-"))
        }
    };
    fit(&host, &format!("_{port}"))
}

fn folder_name(segment: &str) -> String {
    let literal = defuse_device(escape(segment));
    if !literal.is_empty() && !literal.contains('.') && literal.len() <= MAX_NAME {
        literal
    } else {
        fit(&literal, DIR_MARK)
    }
}

fn file_name(segment: &str, query: Option<&str>) -> String {
    let literal = if segment.is_empty() {
        FOLDER_PAGE.to_owned()
    } else {
        defuse_device(escape(segment))
    };
    let (stem, extension) = split_extension(&literal);
    let mut suffix = match query {
        Some(query) => format!("~{}", hash8(query.as_bytes())),
        None if extension.is_none() => FILE_MARK.to_owned(),
        None => String::new(),
    };
    if let Some(extension) = extension {
        suffix.push('.');
        suffix.push_str(extension);
    }
    fit(stem, &suffix)
}

/// Splits `name` at its last `.` when what follows looks like an extension (short, ASCII
/// letters and digits), so marks and hashes go before it and the file still opens by type.
fn split_extension(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once('.') {
        Some((stem, extension))
            if !stem.is_empty()
                && !extension.is_empty()
                && extension.len() <= MAX_EXTENSION
                && extension.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (stem, Some(extension))
        }
        _ => (name, None),
    }
}

/// `stem` + `suffix`, with `stem` cut and tagged by a hash of the whole name when the result
/// would be longer than [`MAX_NAME`]. The suffix (marks, extension, port) always survives.
fn fit(stem: &str, suffix: &str) -> String {
    if stem.len() + suffix.len() <= MAX_NAME {
        return format!("{stem}{suffix}");
    }
    let tag = format!("~{}", hash8(format!("{stem}{suffix}").as_bytes()));
    let room = MAX_NAME.saturating_sub(tag.len() + suffix.len());
    format!("{}{tag}{suffix}", cut(stem, room))
}

/// The longest prefix of `text` within `max` bytes that ends neither inside a character nor
/// inside a `%XX` or `%%XX` escape (so the cut name still reads as escapes plus plain text).
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let bytes = text.as_bytes();
    if let Some(percent) = bytes[end.saturating_sub(2)..end]
        .iter()
        .position(|&b| b == b'%')
    {
        end = end.saturating_sub(2) + percent;
    }
    // A `%` just before the cut starts a `%%XX`: escapes end in hex digits, never in `%`.
    if end > 0 && bytes[end - 1] == b'%' {
        end -= 1;
    }
    &text[..end]
}

/// The name of a path segment, `segment` as the URL spells it (percent-encoded): decoded and
/// escaped again, except for the spellings the decoding would merge (module doc).
fn escape(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = String::with_capacity(segment.len());
    // Bytes named as their decoded value, escaped together (a character may span escapes).
    let mut decoded = Vec::with_capacity(segment.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes[i] {
            b'%' => bytes.get(i + 1..i + 3).and_then(hex_byte),
            _ => None,
        };
        let byte = escaped.unwrap_or(bytes[i]);
        i += if escaped.is_some() { 3 } else { 1 };
        let raw_in_paths = RAW_IN_PATHS.contains(char::from(byte));
        // `%%XX` where `%XX` already names the raw character, or names nothing else yet.
        let doubled = match escaped {
            Some(_) if raw_in_paths && is_kept(char::from(byte)) => false,
            Some(_) if raw_in_paths || is_unreserved(byte) => true,
            None if byte == b'%' => true,
            _ => {
                decoded.push(byte);
                continue;
            }
        };
        out.push_str(&escape_bytes(&decoded));
        decoded.clear();
        if doubled {
            out.push('%');
        }
        push_escaped(&mut out, byte);
    }
    out.push_str(&escape_bytes(&decoded));
    defuse_dots(out)
}

/// The value of a `%XX` escape's two hex digits.
fn hex_byte(digits: &[u8]) -> Option<u8> {
    let digit = |d: &u8| char::from(*d).to_digit(16);
    match digits {
        [hi, lo] => u8::try_from(digit(hi)? << 4 | digit(lo)?).ok(),
        _ => None,
    }
}

/// `raw` with every byte or character that is not kept in names written as `%XX`.
fn escape_bytes(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            if is_kept(c) {
                out.push(c);
            } else {
                let mut buffer = [0; 4];
                for &b in c.encode_utf8(&mut buffer).as_bytes() {
                    push_escaped(&mut out, b);
                }
            }
        }
        for &b in chunk.invalid() {
            push_escaped(&mut out, b);
        }
    }
    out
}

/// No name is hidden, `.` or `..`, or loses a trailing dot on Windows.
fn defuse_dots(mut out: String) -> String {
    if out.starts_with('.') {
        out.replace_range(..1, "%2E");
    }
    if out.ends_with('.') {
        let last = out.len() - 1;
        out.replace_range(last.., "%2E");
    }
    out
}

fn is_kept(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || KEPT_PUNCTUATION.contains(c)
    } else {
        !c.is_control()
    }
}

fn push_escaped(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(char::from(HEX[usize::from(byte >> 4)]));
    out.push(char::from(HEX[usize::from(byte & 0x0F)]));
}

/// Windows opens a device instead of a file for `CON`, `aux.html` and the like (the part before
/// the first dot decides). Escaping the first letter keeps the name and makes it harmless.
fn defuse_device(name: String) -> String {
    let stem = name.split('.').next().unwrap_or_default();
    let is_device = WINDOWS_DEVICES
        .iter()
        .any(|device| stem.eq_ignore_ascii_case(device));
    match name.as_bytes().first() {
        Some(&first) if is_device => {
            let mut out = String::with_capacity(name.len() + 2);
            push_escaped(&mut out, first);
            out.push_str(&name[1..]);
            out
        }
        _ => name,
    }
}

/// Keeps the folders that fit the budget and folds the rest into one hashed folder. The budget
/// assumes the longest possible file name, so whether a folder is folded never depends on the
/// page inside it.
fn fold_deep(site: &str, mut folders: Vec<String>) -> Vec<String> {
    let budget = MAX_PATH - (site.len() + 1) - MAX_NAME;
    let total: usize = folders.iter().map(|f| f.len() + 1).sum();
    if total <= budget {
        return folders;
    }
    let keep_budget = budget - (FOLD_NAME_LEN + 1);
    let mut used = 0;
    let keep = folders
        .iter()
        .take_while(|folder| {
            used += folder.len() + 1;
            used <= keep_budget
        })
        .count();
    let folded = folders.split_off(keep).join("/");
    folders.push(format!(
        "~deep~{:016x}{DIR_MARK}",
        xxh3_64(folded.as_bytes())
    ));
    folders
}

fn hash8(bytes: &[u8]) -> String {
    format!("{:08x}", xxh3_64(bytes) as u32)
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::path::Component;

    use super::*;

    /// Every site folder the mirror makes reads as one (what `--fresh` removes); a folder a
    /// user made beside them does not.
    #[test]
    fn site_folders_are_told_from_other_folders() {
        for url in [
            "http://127.0.0.1:8080/a.html",
            "https://Example.COM/",
            "http://[::1]:9/x",
            "http://under_score.example/",
            &format!("http://{}.example/", "l".repeat(63)),
        ] {
            let path = mirror_path(&Url::parse(url).expect("url")).expect("a path");
            let site = path.components().next().expect("a site folder");
            let name = site.as_os_str().to_string_lossy();
            assert!(is_site_folder(&name), "{url}: {name}");
        }
        for name in ["extra", "backup", "a_b", "x_99999", "_80", "notes.txt"] {
            assert!(!is_site_folder(name), "{name}");
        }
    }

    fn path_of(url: &str) -> String {
        let url = Url::parse(url).expect("test URL parses");
        mirror_path(&url)
            .expect("http URL maps")
            .to_str()
            .expect("mirror paths are UTF-8")
            .to_owned()
    }

    fn assert_contained(path: &Path) {
        assert!(path.is_relative(), "{path:?} is not relative");
        assert!(
            path.components().all(|c| matches!(c, Component::Normal(_))),
            "{path:?} has a special component"
        );
        assert!(path.as_os_str().len() <= MAX_PATH, "{path:?} is too long");
        for component in path.components() {
            let name = component.as_os_str().to_str().expect("UTF-8 name");
            assert!(!name.is_empty() && name.len() <= MAX_NAME, "{name:?}");
            assert!(!name.starts_with('.') && !name.ends_with('.'), "{name:?}");
            assert!(
                !name.contains(['/', '\\', '\0', '<', '>', ':', '"', '|', '?', '*', ' ']),
                "{name:?} holds a reserved character"
            );
            assert!(!name.chars().any(char::is_control), "{name:?}");
        }
    }

    // --- the common case -------------------------------------------------------------

    #[test]
    fn plain_page_keeps_its_path() {
        assert_eq!(
            path_of("http://127.0.0.1:8080/guide/p7.html"),
            "127.0.0.1_8080/guide/p7.html"
        );
    }

    #[test]
    fn default_ports_are_written_out() {
        assert_eq!(
            path_of("http://example.com/a.html"),
            "example.com_80/a.html"
        );
        assert_eq!(
            path_of("https://example.com/a.html"),
            "example.com_443/a.html"
        );
        assert_eq!(
            path_of("http://example.com:80/a.html"),
            "example.com_80/a.html"
        );
    }

    #[test]
    fn host_is_lowercased_and_path_case_kept() {
        assert_eq!(
            path_of("HTTP://ExAmple.COM/Guide/P.HTML"),
            "example.com_80/Guide/P.HTML"
        );
    }

    #[test]
    fn site_root_and_folders_get_index_html() {
        assert_eq!(path_of("http://h/"), "h_80/index.html");
        assert_eq!(path_of("http://h"), "h_80/index.html");
        assert_eq!(path_of("http://h/a/b/"), "h_80/a/b/index.html");
    }

    #[test]
    fn folder_page_and_explicit_index_share_a_file() {
        assert_eq!(path_of("http://h/a/"), path_of("http://h/a/index.html"));
    }

    #[test]
    fn fragment_is_ignored() {
        assert_eq!(path_of("http://h/p.html#top"), "h_80/p.html");
    }

    #[test]
    fn non_http_urls_have_no_place() {
        for url in [
            "ftp://h/a",
            "file:///etc/passwd",
            "mailto:a@b.c",
            "data:text/html,hi",
            "javascript:alert(1)",
            "ws://h/a",
        ] {
            let url = Url::parse(url).expect("test URL parses");
            assert_eq!(mirror_path(&url), None, "{url}");
        }
    }

    // --- files and folders -----------------------------------------------------------

    #[test]
    fn extensionless_file_is_marked_so_its_folder_can_exist() {
        assert_eq!(path_of("http://h/a"), "h_80/a~file");
        assert_eq!(path_of("http://h/a/b"), "h_80/a/b~file");
        assert_eq!(path_of("http://h/a/"), "h_80/a/index.html");
    }

    #[test]
    fn folder_with_a_dot_is_marked_so_the_file_can_exist() {
        assert_eq!(path_of("http://h/v1.2/x.html"), "h_80/v1.2~dir/x.html");
        assert_eq!(path_of("http://h/v1.2"), "h_80/v1.2");
        assert_eq!(path_of("http://h/p.html/x"), "h_80/p.html~dir/x~file");
        assert_eq!(path_of("http://h/p.html"), "h_80/p.html");
    }

    #[test]
    fn dotted_name_without_a_real_extension_is_marked_as_file() {
        assert_eq!(path_of("http://h/a.b-c"), "h_80/a.b-c~file");
    }

    // --- query -----------------------------------------------------------------------

    #[test]
    fn query_becomes_a_stable_hash_before_the_extension() {
        // Pinned: a change of hash function would move every stored page with a query.
        assert_eq!(path_of("http://h/p.html?ref=1"), "h_80/p~fe5de1a2.html");
        assert_eq!(hash8(b"ref=1"), "fe5de1a2");
    }

    #[test]
    fn query_order_variants_are_different_files() {
        assert_ne!(
            path_of("http://h/p.html?a=1&b=2"),
            path_of("http://h/p.html?b=2&a=1")
        );
    }

    #[test]
    fn empty_query_differs_from_no_query() {
        assert_ne!(path_of("http://h/p.html?"), path_of("http://h/p.html"));
    }

    #[test]
    fn query_on_extensionless_page_and_on_folder_page() {
        let hash = hash8(b"q=x");
        assert_eq!(
            path_of("http://h/search?q=x"),
            format!("h_80/search~{hash}")
        );
        assert_eq!(
            path_of("http://h/a/?q=x"),
            format!("h_80/a/index~{hash}.html")
        );
    }

    #[test]
    fn query_cannot_be_forged_by_a_literal_name() {
        let with_query = path_of("http://h/p.html?ref=1");
        let literal = format!("http://h/p~{}.html", hash8(b"ref=1"));
        assert_ne!(path_of(&literal), with_query);
        assert_eq!(
            path_of(&literal),
            format!("h_80/p%7E{}.html", hash8(b"ref=1"))
        );
    }

    // --- hostile segments ------------------------------------------------------------

    #[test]
    fn dot_dot_segments_are_resolved_by_the_url_and_stay_inside() {
        assert_eq!(
            path_of("http://h/a/../../etc/passwd"),
            "h_80/etc/passwd~file"
        );
        assert_eq!(path_of("http://h/%2e%2e/%2E%2e/x.html"), "h_80/x.html");
    }

    #[test]
    fn decoded_dot_dot_with_encoded_slash_is_one_escaped_name() {
        assert_eq!(
            path_of("http://h/%2e%2e%2fetc%2fpasswd"),
            "h_80/%2E.%2Fetc%2Fpasswd~file"
        );
        assert_eq!(path_of("http://h/..%2f..%2fx"), "h_80/%2E.%2F..%2Fx~file");
    }

    #[test]
    fn encoded_dot_dot_alone_never_becomes_a_parent_reference() {
        // A URL built by hand (not parsed) can still carry a raw `..`: escaping is the second wall.
        assert_eq!(folder_name(".."), "%2E%2E");
        assert_eq!(folder_name("."), "%2E");
        assert_eq!(file_name("..", None), "%2E%2E~file");
        assert_eq!(file_name(".", None), "%2E~file");
    }

    #[test]
    fn backslashes_are_escaped() {
        assert_eq!(
            path_of("http://h/a%5cb%5C..%5cc"),
            "h_80/a%5Cb%5C..%5Cc~file"
        );
        // A raw backslash is a separator in http URLs.
        assert_eq!(path_of("http://h/a\\b.html"), "h_80/a/b.html");
    }

    #[test]
    fn nul_and_control_characters_are_escaped() {
        assert_eq!(path_of("http://h/a%00b.html"), "h_80/a%00b.html");
        assert_eq!(
            path_of("http://h/a%0A%0D%09%7Fb"),
            "h_80/a%0A%0D%09%7Fb~file"
        );
        assert_eq!(path_of("http://h/a%C2%85b"), "h_80/a%C2%85b~file");
    }

    #[test]
    fn windows_reserved_characters_are_escaped() {
        assert_eq!(
            path_of("http://h/a%3C%3E:%22|%3F*.html"),
            "h_80/a%3C%3E%3A%22%7C%3F%2A.html"
        );
    }

    #[test]
    fn absolute_looking_segments_become_plain_names() {
        assert_eq!(path_of("http://h//etc/passwd"), "h_80/~dir/etc/passwd~file");
        assert_eq!(path_of("http://h/C:/x.html"), "h_80/C%3A/x.html");
        assert_eq!(
            path_of("http://h/%2Fetc%2Fpasswd"),
            "h_80/%2Fetc%2Fpasswd~file"
        );
        assert_eq!(
            path_of("http://h/%5C%5Cserver%5Cshare"),
            "h_80/%5C%5Cserver%5Cshare~file"
        );
    }

    #[test]
    fn hidden_names_and_trailing_dots_are_escaped() {
        assert_eq!(path_of("http://h/.htaccess"), "h_80/%2Ehtaccess~file");
        assert_eq!(path_of("http://h/.git/config"), "h_80/%2Egit/config~file");
        assert_eq!(path_of("http://h/a./b"), "h_80/a%2E/b~file");
    }

    #[test]
    fn percent_and_tilde_are_escaped_so_marks_cannot_be_forged() {
        assert_eq!(
            path_of("http://h/~user/a%25b~file"),
            "h_80/%7Euser/a%25b%7Efile~file"
        );
        assert_eq!(path_of("http://h/x~dir/y.html"), "h_80/x%7Edir/y.html");
    }

    // --- spellings of one character that are two URLs ------------------------------

    #[test]
    fn raw_in_paths_is_what_the_url_parser_leaves_raw() {
        for b in 0x21..0x7F_u8 {
            let c = char::from(b);
            if is_unreserved(b) || matches!(c, '%' | '/' | '\\') {
                continue;
            }
            let url = Url::parse(&format!("http://h/a{c}b")).expect("test URL parses");
            let left_raw = url.path() == format!("/a{c}b");
            assert_eq!(left_raw, RAW_IN_PATHS.contains(c), "{c:?} in {url}");
        }
    }

    #[test]
    fn a_reserved_character_and_its_escape_are_two_files() {
        assert_eq!(
            path_of("http://h/n/plus+sign.html"),
            "h_80/n/plus+sign.html"
        );
        assert_eq!(
            path_of("http://h/n/plus%2Bsign.html"),
            "h_80/n/plus%2Bsign.html"
        );
        assert_eq!(
            path_of("http://h/n/plus%2bsign.html"),
            "h_80/n/plus%2Bsign.html"
        );
        assert_eq!(path_of("http://h/wiki/Talk:X"), "h_80/wiki/Talk%3AX~file");
        assert_eq!(
            path_of("http://h/wiki/Talk%3AX"),
            "h_80/wiki/Talk%%3AX~file"
        );
        assert_eq!(path_of("http://h/a%zz.html"), "h_80/a%%25zz.html");
        assert_eq!(path_of("http://h/a%25zz.html"), "h_80/a%25zz.html");
        assert_eq!(path_of("http://h/C%2B%2B/x.html"), "h_80/C%2B%2B/x.html");
    }

    /// Every character a path may spell both ways, in every place of a name: the two spellings
    /// never share a file, the raw one keeps the name it had before escapes were kept apart,
    /// and both stay plain names.
    #[test]
    fn every_pair_of_spellings_maps_to_two_files_and_the_raw_one_is_unchanged() {
        let mut pairs: Vec<(String, String)> = RAW_IN_PATHS
            .chars()
            .map(|c| (c.to_string(), format!("%{:02X}", u32::from(c))))
            .collect();
        pairs.push(("%".to_owned(), "%25".to_owned()));
        let places = [
            ("http://h/", ".html"),
            ("http://h/", ""),
            ("http://h/", "/x.html"),
            ("http://h/a", "b.html"),
            ("http://h/a.", "/"),
            ("http://h/CON", ".html"),
            ("http://h/", "zz.html"),
            ("http://h/%C3", "%A9.html"),
            ("http://h/x/", "?q=1"),
        ];
        let mut rng = SplitMix::new(0x5EED);
        for (raw, escaped) in &pairs {
            for (before, after) in places {
                let long = "y".repeat(rng.index(3) * 120);
                let url = |c: &str| format!("{before}{long}{c}{after}");
                let (raw_url, escaped_url) = (url(raw), url(escaped));
                let raw_path = path_of(&raw_url);
                let escaped_path = path_of(&escaped_url);
                assert_ne!(raw_path, escaped_path, "{raw_url} and {escaped_url}");
                assert_contained(Path::new(&raw_path));
                assert_contained(Path::new(&escaped_path));
                // A stray `%` is the one raw spelling that moved.
                if raw == "%" {
                    continue;
                }
                let parsed = Url::parse(&raw_url).expect("test URL parses");
                for segment in parsed.path_segments().expect("http URL has a path") {
                    let decoded: Vec<u8> = percent_encoding::percent_decode_str(segment).collect();
                    assert_eq!(
                        escape(segment),
                        defuse_dots(escape_bytes(&decoded)),
                        "{segment} in {raw_url} changed its name"
                    );
                }
            }
        }
    }

    #[test]
    fn invalid_utf8_is_escaped_bytewise() {
        assert_eq!(path_of("http://h/a%FF%C3.html"), "h_80/a%FF%C3.html");
    }

    #[test]
    fn unicode_is_kept_and_nfc_nfd_stay_distinct() {
        let nfc = path_of("http://h/caf%C3%A9.html");
        let nfd = path_of("http://h/cafe%CC%81.html");
        assert_eq!(nfc, "h_80/café.html");
        assert_eq!(nfd, "h_80/cafe\u{301}.html");
        assert_ne!(nfc, nfd);
    }

    #[test]
    fn windows_device_names_are_defused() {
        assert_eq!(path_of("http://h/CON/x.html"), "h_80/%43ON/x.html");
        assert_eq!(path_of("http://h/aux.html"), "h_80/%61ux.html");
        assert_eq!(path_of("http://h/com1"), "h_80/%63om1~file");
        assert_eq!(path_of("http://h/console.html"), "h_80/console.html");
    }

    // --- hosts -----------------------------------------------------------------------

    #[test]
    fn ipv6_host_becomes_a_plain_name() {
        assert_eq!(
            path_of("http://[::1]:8080/a.html"),
            "ipv6~0000-0000-0000-0000-0000-0000-0000-0001_8080/a.html"
        );
        assert_eq!(
            path_of("https://[2001:DB8::FF]/"),
            "ipv6~2001-0db8-0000-0000-0000-0000-0000-00ff_443/index.html"
        );
    }

    #[test]
    fn idn_host_is_punycode() {
        assert_eq!(
            path_of("http://bücher.de/"),
            "xn--bcher-kva.de_80/index.html"
        );
    }

    #[test]
    fn different_ports_are_different_sites() {
        assert_ne!(
            path_of("http://h:8001/a.html"),
            path_of("http://h:8002/a.html")
        );
    }

    // --- lengths ---------------------------------------------------------------------

    #[test]
    fn long_segment_is_cut_with_a_hash_and_keeps_its_extension() {
        let long = "x".repeat(1000);
        let path = path_of(&format!("http://h/{long}.html"));
        let name = path.strip_prefix("h_80/").expect("site folder first");
        assert_eq!(name.len(), MAX_NAME);
        let hash = hash8(format!("{long}.html").as_bytes());
        assert!(name.ends_with(&format!("~{hash}.html")), "{name}");
    }

    #[test]
    fn long_names_with_a_common_prefix_stay_distinct() {
        let a = path_of(&format!("http://h/{}a.html", "x".repeat(500)));
        let b = path_of(&format!("http://h/{}b.html", "x".repeat(500)));
        assert_ne!(a, b);
    }

    #[test]
    fn long_unicode_segment_is_cut_on_a_char_boundary() {
        let long = "é".repeat(300);
        let path = path_of(&format!("http://h/{long}/x.html"));
        let folder = path.split('/').nth(1).expect("folder");
        assert!(folder.len() <= MAX_NAME);
        assert!(folder.ends_with(DIR_MARK));
        assert!(folder.starts_with("éé"));
    }

    #[test]
    fn cut_never_splits_an_escape() {
        assert_eq!(cut("ab%2F", 4), "ab");
        assert_eq!(cut("ab%2F", 3), "ab");
        assert_eq!(cut("ab%2Fc", 5), "ab%2F");
        assert_eq!(cut("ab%%3A", 4), "ab");
        assert_eq!(cut("ab%%3A", 5), "ab");
        assert_eq!(cut("ab%%3Ac", 6), "ab%%3A");
        let name = file_name(&"%2F".repeat(300), None);
        assert!(name.len() <= MAX_NAME);
        let stem = name.split('~').next().expect("stem");
        assert!(
            stem.len().is_multiple_of(3) && stem.chars().step_by(3).all(|c| c == '%'),
            "{name}"
        );
    }

    #[test]
    fn long_query_hash_and_extension_survive_cutting() {
        let path = path_of(&format!("http://h/{}.html?q=1", "y".repeat(400)));
        assert!(
            path.ends_with(&format!("~{}.html", hash8(b"q=1"))),
            "{path}"
        );
    }

    #[test]
    fn long_host_is_cut_but_keeps_its_port() {
        let host = [
            "a".repeat(60),
            "b".repeat(60),
            "c".repeat(60),
            "d".repeat(60),
        ]
        .join(".");
        let path = path_of(&format!("http://{host}:8080/x.html"));
        let site = path.split('/').next().expect("site");
        assert!(site.len() <= MAX_NAME);
        assert!(site.ends_with("_8080"));
    }

    #[test]
    fn deep_path_is_folded_under_the_limit() {
        let deep = "segment/".repeat(2000);
        let path = path_of(&format!("http://h/{deep}p.html"));
        assert!(path.len() <= MAX_PATH, "{}", path.len());
        assert!(path.contains("/~deep~"));
        assert!(path.ends_with("~dir/p.html"));
        assert_contained(Path::new(&path));
    }

    #[test]
    fn pages_of_one_deep_folder_share_the_fold() {
        let deep = "s/".repeat(3000);
        let a = path_of(&format!("http://h/{deep}a.html"));
        let b = path_of(&format!("http://h/{deep}{}.html", "b".repeat(150)));
        let folder = |p: &str| p.rsplit_once('/').expect("has a folder").0.to_owned();
        assert_eq!(folder(&a), folder(&b));
    }

    #[test]
    fn different_deep_paths_fold_to_different_folders() {
        let a = path_of(&format!("http://h/{}x/p.html", "s/".repeat(3000)));
        let b = path_of(&format!("http://h/{}y/p.html", "s/".repeat(3000)));
        assert_ne!(a, b);
    }

    #[test]
    fn path_just_under_the_budget_is_not_folded() {
        let path = path_of(&format!("http://h/{}p.html", "s/".repeat(1000)));
        assert!(!path.contains("~deep~"));
    }

    // --- property test over generated hostile URLs ----------------------------------

    use crate::testweb::SplitMix64 as SplitMix;

    const HOSTILE_PIECES: &[&str] = &[
        "",
        ".",
        "..",
        "%2e",
        "%2E%2e",
        "%2f",
        "%2F",
        "%5c",
        "\\",
        "%00",
        "%0a",
        "%7f",
        "%C2%85",
        "~",
        "%7E",
        "%25",
        "%",
        "%zz",
        "a",
        "b",
        "A",
        "x.html",
        ".html",
        "html",
        "dir",
        "~dir",
        "~file",
        "file",
        ".git",
        "CON",
        "aux",
        "nul.txt",
        "C:",
        ":",
        "%3A",
        "<",
        ">",
        "%22",
        "|",
        "%7C",
        "?",
        "*",
        " ",
        "%20",
        "é",
        "e%CC%81",
        "%FF",
        "%C3",
        "日本",
        "index.html",
        "index",
        "v1.2",
        "a.",
        "a%2E",
        "#",
        "%23",
        ";",
        "=",
        "&",
        "+",
        "%2B",
        "%2b",
        "%3D",
        "*",
        "%2A",
        "%3a",
        "'",
        "%27",
        "[",
        "%5B",
        "^",
        "%5E",
        "@",
        "%40",
        "41",
        "2B",
        "%41",
        "%%41",
    ];

    fn hostile_url(rng: &mut SplitMix) -> String {
        let hosts = [
            "h",
            "H.example",
            "[::1]",
            "127.0.0.1",
            "xn--bcher-kva.de",
            "a-b.c",
        ];
        let scheme = if rng.index(2) == 0 { "http" } else { "https" };
        let mut url = format!("{scheme}://{}", hosts[rng.index(hosts.len())]);
        if rng.index(2) == 0 {
            url = format!("{url}:{}", rng.index(3) + 8000);
        }
        let depth = match rng.index(20) {
            0 => 1500 + rng.index(1500),
            _ => rng.index(6),
        };
        for _ in 0..depth {
            url.push('/');
            for _ in 0..=rng.index(3) {
                url.push_str(HOSTILE_PIECES[rng.index(HOSTILE_PIECES.len())]);
            }
            if rng.index(40) == 0 {
                url.push_str(&"z%2F".repeat(rng.index(200)));
            }
        }
        if rng.index(3) == 0 {
            url.push('/');
        }
        if rng.index(3) == 0 {
            url.push('?');
            url.push_str(HOSTILE_PIECES[rng.index(HOSTILE_PIECES.len())]);
        }
        url
    }

    type PageKey = (String, Vec<String>, Option<String>);

    /// What makes two URLs the same page for the mirror: the site, each segment of the
    /// canonical path (the crawl's own test of sameness; a trailing slash meaning
    /// `index.html`) and the query.
    fn page_key(url: &Url) -> PageKey {
        let canonical = crate::canonical::canonical(url);
        let mut segments: Vec<String> = canonical
            .path_segments()
            .expect("http URL has a path")
            .map(str::to_owned)
            .collect();
        if let Some(last) = segments.last_mut().filter(|last| last.is_empty()) {
            *last = FOLDER_PAGE.to_owned();
        }
        let site = format!(
            "{}:{}",
            url.host_str().unwrap_or_default(),
            url.port_or_known_default().unwrap_or_default()
        );
        (site, segments, url.query().map(str::to_owned))
    }

    #[test]
    fn generated_hostile_urls_all_map_inside_and_never_clash() {
        let mut rng = SplitMix::new(0x00C0_FFEE);
        let root = Path::new("/srv/crawl/pages");
        let mut owner: HashMap<String, PageKey> = HashMap::new();
        let mut files: HashSet<String> = HashSet::new();
        let mut folders: HashSet<String> = HashSet::new();
        let mut mapped = 0;
        for _ in 0..5000 {
            let text = hostile_url(&mut rng);
            let Ok(url) = Url::parse(&text) else { continue };
            let path = mirror_path(&url).unwrap_or_else(|| panic!("{text} maps"));
            assert_contained(&path);
            let joined = root.join(&path);
            assert!(joined.starts_with(root), "{text}");
            assert_eq!(
                joined.components().count(),
                root.components().count() + path.components().count()
            );
            let path = path.to_str().expect("UTF-8").to_owned();
            let lower = path.to_lowercase();
            let mut prefix = String::new();
            for part in lower.split('/').take(lower.split('/').count() - 1) {
                prefix.push_str(part);
                folders.insert(prefix.clone());
                prefix.push('/');
            }
            files.insert(lower);
            let key = page_key(&url);
            if let Some(previous) = owner.insert(path.clone(), key.clone()) {
                assert_eq!(previous, key, "two pages share {path}");
            }
            mapped += 1;
        }
        assert!(mapped > 4000, "only {mapped} generated URLs parsed");
        let clashes: Vec<_> = files.intersection(&folders).collect();
        assert!(
            clashes.is_empty(),
            "file and folder share a name: {clashes:?}"
        );
    }

    // --- write_page ------------------------------------------------------------------

    fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(folder) = stack.pop() {
            for entry in fs::read_dir(&folder).expect("readable test folder") {
                let entry = entry.expect("readable entry");
                let kind = entry.file_type().expect("file type");
                if kind.is_dir() {
                    stack.push(entry.path());
                } else {
                    found.push(entry.path());
                }
            }
        }
        found
    }

    #[test]
    fn write_page_round_trips_bytes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = Url::parse("http://127.0.0.1:8080/guide/p7.html").expect("URL");
        let body = b"<html>\x00\xFF bytes as received</html>";
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        let path = mirror.write_page(&url, body, 0).expect("write");
        assert_eq!(path, dir.path().join("127.0.0.1_8080/guide/p7.html"));
        assert_eq!(fs::read(&path).expect("read back"), body);
    }

    #[test]
    fn write_page_replaces_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = Url::parse("http://h/a.html").expect("URL");
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        mirror.write_page(&url, b"first", 0).expect("write");
        let path = mirror.write_page(&url, b"second", 0).expect("rewrite");
        assert_eq!(fs::read(&path).expect("read back"), b"second");
        let mut files = files_under(dir.path());
        files.sort();
        let mut expected = vec![
            dir.path().join(CREATED_LIST),
            dir.path().join(SITES_LIST),
            path,
        ];
        expected.sort();
        assert_eq!(files, expected);
    }

    /// A run killed between a page's write and its rename leaves the temporary file; the next
    /// opening of the mirror (a resume, or a new crawl in the folder) removes it, and only it.
    #[test]
    fn opening_removes_the_temporary_files_a_killed_run_left() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = Url::parse("http://h/a.html").expect("URL");
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        let path = mirror.write_page(&url, b"page", 0).expect("write");
        mirror.checkpointed().expect("checkpointed");
        drop(mirror);
        let temp = dir.path().join(TEMP_FOLDER);
        let litter = temp.join(".~4242-7.tmp");
        fs::write(&litter, b"half a page").expect("litter");
        let other = temp.join("notes.txt");
        fs::write(&other, b"not a name the mirror gives").expect("other");
        for from in [Opening::Resume(1), Opening::Fresh] {
            fs::write(&litter, b"half a page").expect("litter");
            Mirror::open(dir.path(), from).expect("open");
            assert!(!litter.exists(), "{from:?}");
            assert!(other.exists(), "{from:?}");
            assert_eq!(fs::read(&path).expect("the page stays"), b"page");
        }
    }

    /// The folder of temporary files is used only as a plain folder: a symlink planted there
    /// is refused before anything is written or removed through it.
    #[test]
    fn a_temporary_folder_that_is_a_symlink_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("elsewhere");
        let victim = elsewhere.path().join(".~1-1.tmp");
        fs::write(&victim, b"someone's").expect("victim");
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(TEMP_FOLDER)).expect("link");
        let error = Mirror::open(dir.path(), Opening::Fresh).expect_err("refused");
        assert!(error.to_string().contains(TEMP_FOLDER), "{error}");
        assert!(victim.exists());
    }

    /// The list names each site folder once, written before the folder, and reopening it (a
    /// resume) adds nothing for a site it holds.
    #[test]
    fn the_list_names_each_site_folder_a_crawl_made() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::create_dir(dir.path().join("photos_2023")).expect("a folder of the user's");
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        for url in [
            "http://h/a.html",
            "http://h/b.html",
            "https://[::1]/",
            "http://h:81/",
        ] {
            mirror
                .write_page(&Url::parse(url).expect("URL"), b"x", 0)
                .expect("write");
        }
        let mut again = Mirror::open(dir.path(), Opening::Resume(1))
            .expect("reopen")
            .0;
        again
            .write_page(&Url::parse("http://h/c.html").expect("URL"), b"x", 0)
            .expect("write");
        let list = fs::read_to_string(dir.path().join(SITES_LIST)).expect("the list");
        assert_eq!(
            list,
            "h_80\nipv6~0000-0000-0000-0000-0000-0000-0000-0001_443\nh_81\n"
        );
        assert_eq!(
            made_by_crawls(dir.path()).expect("read"),
            [
                "h_80",
                "ipv6~0000-0000-0000-0000-0000-0000-0000-0001_443",
                "h_81"
            ]
        );
    }

    /// A list cut by a crash mid-line, or edited to point elsewhere, names only whole lines that
    /// are site folders' names: nothing outside the pages folder, never the list itself.
    #[test]
    fn a_list_names_only_site_folders_inside_the_pages_folder() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::write(
            dir.path().join(SITES_LIST),
            b"h_80\n../../etc_80\n/tmp_80\n.crawltop-sites\nnotes\nh_80\na\\b_80\n\xff_80\nk_8",
        )
        .expect("a list");
        assert_eq!(made_by_crawls(dir.path()).expect("read"), ["h_80"]);
    }

    /// A list that is a symlink is neither read nor written through: a file elsewhere never
    /// says what `--fresh` deletes, and the mirror refuses to open, naming the list.
    #[test]
    fn a_list_planted_as_a_symlink_is_neither_read_nor_written_through() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("pages");
        fs::create_dir_all(root.join("user_9")).expect("a folder of the user's");
        let target = dir.path().join("elsewhere.txt");
        fs::write(&target, b"user_9\n").expect("target");
        std::os::unix::fs::symlink(&target, root.join(SITES_LIST)).expect("symlink");
        let error = made_by_crawls(&root).expect_err("not read");
        assert!(error.to_string().contains("not a plain file"), "{error}");
        let error = Mirror::open(&root, Opening::Fresh).expect_err("not opened");
        assert!(matches!(error, MirrorError::List { .. }), "{error:?}");
        assert_eq!(fs::read(&target).expect("target"), b"user_9\n");
    }

    /// A symlink planted as the list after the mirror opened (no list then) is not written
    /// through either: the page's write fails, the file elsewhere is unchanged.
    #[test]
    fn a_list_planted_after_the_open_is_not_written_through() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("pages");
        let mut mirror = Mirror::open(&root, Opening::Fresh).expect("open").0;
        let target = dir.path().join("elsewhere.txt");
        fs::write(&target, b"kept\n").expect("target");
        std::os::unix::fs::symlink(&target, root.join(SITES_LIST)).expect("symlink");
        let url = Url::parse("http://h/a.html").expect("URL");
        let error = mirror.write_page(&url, b"x", 0).expect_err("refused");
        assert!(matches!(error, MirrorError::Io { .. }), "{error:?}");
        assert_eq!(fs::read(&target).expect("target"), b"kept\n");
    }

    /// Without a list (a mirror of a crawltop before it, or a folder of the user's), no folder
    /// counts as a crawl's; a crawl lists the sites it writes, and nothing else, even on a
    /// resume of such a mirror.
    #[test]
    fn a_mirror_without_a_list_lists_only_the_sites_it_writes() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["old_8080", "photos_2023", "notes"] {
            fs::create_dir(dir.path().join(name)).expect("folders");
        }
        assert!(made_by_crawls(dir.path()).expect("read").is_empty());
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        assert!(!dir.path().join(SITES_LIST).exists());
        let url = Url::parse("http://old:8080/a.html").expect("URL");
        mirror.write_page(&url, b"x", 0).expect("write");
        assert_eq!(made_by_crawls(dir.path()).expect("read"), ["old_8080"]);
    }

    #[test]
    fn file_folder_and_folder_page_coexist_in_either_order() {
        let urls = [
            "http://h/a",
            "http://h/a/",
            "http://h/a/b",
            "http://h/a.html",
            "http://h/a.html/b",
        ];
        for order in [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3]] {
            let dir = tempfile::tempdir().expect("temp dir");
            for &i in &order {
                let url = Url::parse(urls[i]).expect("URL");
                let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
                mirror
                    .write_page(&url, urls[i].as_bytes(), 0)
                    .expect("every page is storable");
            }
            for text in urls {
                let url = Url::parse(text).expect("URL");
                let path = dir.path().join(mirror_path(&url).expect("maps"));
                assert_eq!(fs::read(path).expect("read back"), text.as_bytes());
            }
        }
    }

    #[test]
    fn hostile_urls_never_write_outside_the_root() {
        let outer = tempfile::tempdir().expect("temp dir");
        let root = outer.path().join("pages");
        let mut rng = SplitMix::new(7);
        let mut urls: Vec<String> = [
            "http://h/../../../../escape.html",
            "http://h/%2e%2e/%2e%2e/escape.html",
            "http://h/%2e%2e%2f%2e%2e%2fescape.html",
            "http://h/..%5c..%5cescape.html",
            "http://h//etc/passwd",
            "http://h/%00",
            "http://[::1]/.git/config",
        ]
        .map(str::to_owned)
        .to_vec();
        urls.extend((0..300).map(|_| hostile_url(&mut rng)));
        let mut mirror = Mirror::open(&root, Opening::Fresh).expect("open").0;
        for text in &urls {
            let Ok(url) = Url::parse(text) else { continue };
            let path = mirror
                .write_page(&url, text.as_bytes(), 0)
                .expect("hostile page is storable");
            assert!(path.starts_with(&root));
            assert_eq!(fs::read(&path).expect("read back"), text.as_bytes());
        }
        let outside: Vec<_> = files_under(outer.path())
            .into_iter()
            .filter(|p| !p.starts_with(&root))
            .collect();
        assert!(outside.is_empty(), "written outside: {outside:?}");
        let names: Vec<_> = fs::read_dir(outer.path())
            .expect("outer")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("pages")]);
    }

    #[test]
    fn write_page_refuses_a_non_http_url() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = Url::parse("file:///etc/passwd").expect("URL");
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        let error = mirror.write_page(&url, b"x", 0).expect_err("not mappable");
        assert!(matches!(error, MirrorError::Unmappable { .. }));
        assert_eq!(files_under(dir.path()), [dir.path().join(CREATED_LIST)]);
        assert_eq!(fs::read(dir.path().join(CREATED_LIST)).expect("list"), b"");
    }

    #[test]
    fn a_pages_folder_that_cannot_be_made_is_an_io_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("pages");
        fs::write(&root, b"a file where the pages folder should be").expect("setup");
        let error = Mirror::open(&root, Opening::Fresh).expect_err("root is a file");
        assert!(matches!(error, MirrorError::Io { .. }));
    }

    #[test]
    fn write_page_reports_io_failure_as_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut mirror = Mirror::open(dir.path(), Opening::Fresh).expect("open").0;
        fs::write(
            dir.path().join("h_80"),
            b"a file where a site folder should be",
        )
        .expect("setup");
        let url = Url::parse("http://h/a.html").expect("URL");
        let error = mirror
            .write_page(&url, b"x", 0)
            .expect_err("the site folder is a file");
        assert!(matches!(error, MirrorError::Io { .. }));
    }

    // --- the files made since the last checkpoint ------------------------------------------

    fn page(mirror: &mut Mirror, url: &str, body: &str, seq: u64) -> PathBuf {
        mirror
            .write_page(&Url::parse(url).expect("URL"), body.as_bytes(), seq)
            .expect("write")
    }

    /// A resume removes the files made for pages at or above its mark, and the folders that
    /// leaves empty; files of pages below the mark, a file that was there before a page above
    /// the mark wrote over it (an alias of a page below), and the site folder stay.
    #[test]
    fn a_resume_removes_the_files_made_for_pages_above_its_mark() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut mirror, removed) = Mirror::open(dir.path(), Opening::Fresh).expect("open");
        assert_eq!(removed, 0);
        let kept = page(&mut mirror, "http://h/a/", "below", 4);
        let below = page(&mut mirror, "http://h/b.html", "below", 5);
        // The alias of seq 4's page, written again above the mark: the file was there.
        let alias = page(&mut mirror, "http://h/a/index.html", "alias", 6);
        assert_eq!(alias, kept);
        let above = page(&mut mirror, "http://h/c.html", "above", 6);
        let deep = page(&mut mirror, "http://h/x/y/z.html", "above", 7);
        let other_site = page(&mut mirror, "http://k/", "above", 8);
        drop(mirror);

        let (mut mirror, removed) = Mirror::open(dir.path(), Opening::Resume(6)).expect("resume");
        assert_eq!(removed, 3);
        assert_eq!(fs::read_to_string(&below).expect("kept"), "below");
        assert_eq!(fs::read_to_string(&kept).expect("kept"), "alias");
        for gone in [&above, &deep, &other_site] {
            assert!(!gone.exists(), "{} removed", gone.display());
        }
        assert!(!dir.path().join("h_80/x").exists(), "emptied folders go");
        assert!(dir.path().join("k_80").is_dir(), "the site folder stays");
        assert_eq!(fs::read(dir.path().join(CREATED_LIST)).expect("list"), b"");

        // Written again, listed again; a checkpoint's mark makes them the checkpoint's.
        let again = page(&mut mirror, "http://h/c.html", "again", 6);
        mirror.checkpointed().expect("checkpointed");
        drop(mirror);
        let (_, removed) = Mirror::open(dir.path(), Opening::Resume(7)).expect("resume");
        assert_eq!(removed, 0);
        assert_eq!(fs::read_to_string(&again).expect("kept"), "again");
    }

    /// A crash between a checkpoint's mark and the emptying of the list leaves lines of pages
    /// below the new mark: their files are the checkpoint's, and stay.
    #[test]
    fn lines_of_pages_below_the_mark_leave_their_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut mirror, _) = Mirror::open(dir.path(), Opening::Fresh).expect("open");
        let first = page(&mut mirror, "http://h/a.html", "a", 0);
        let second = page(&mut mirror, "http://h/b.html", "b", 1);
        drop(mirror);
        let (_, removed) = Mirror::open(dir.path(), Opening::Resume(2)).expect("resume");
        assert_eq!(removed, 0);
        assert!(first.is_file() && second.is_file());
    }

    /// A list cut by a crash mid-line, or edited, removes only files of pages the mirror could
    /// have written: under a listed site folder, plain names, at or above the mark. A line of a
    /// page whose file never took its place (a crash before the rename) removes nothing.
    #[test]
    fn a_list_removes_nothing_outside_the_site_folders_it_lists() {
        let outer = tempfile::tempdir().expect("temp dir");
        let root = outer.path().join("pages");
        let (mut mirror, _) = Mirror::open(&root, Opening::Fresh).expect("open");
        page(&mut mirror, "http://h/a.html", "a", 0);
        drop(mirror);
        let outside = outer.path().join("outside.html");
        fs::write(&outside, "the user's").expect("outside");
        fs::create_dir_all(root.join("photos_2023")).expect("a folder of the user's");
        fs::write(root.join("photos_2023/cat.jpg"), "cat").expect("the user's file");
        fs::write(root.join("h_80/.keep"), "hidden").expect("a hidden file");
        let lines = [
            "9\t../outside.html\n",
            "9\th_80/../../outside.html\n",
            &format!("9\t{}\n", outside.display()),
            "9\tphotos_2023/cat.jpg\n",
            "9\th_80/.keep\n",
            "9\th_80\n",
            "nine\th_80/a.html\n",
            "9\th_80/never-renamed.html\n",
            "9\th_80/a.html",
        ]
        .concat();
        fs::write(root.join(CREATED_LIST), lines).expect("an edited list");
        let (_, removed) = Mirror::open(&root, Opening::Resume(1)).expect("resume");
        assert_eq!(removed, 0);
        assert_eq!(fs::read_to_string(&outside).expect("kept"), "the user's");
        assert!(root.join("photos_2023/cat.jpg").is_file());
        assert!(root.join("h_80/.keep").is_file());
        assert!(
            root.join("h_80/a.html").is_file(),
            "a line cut short removes nothing"
        );
    }

    /// A list of created files planted as a symlink is not read: the mirror refuses to open,
    /// naming it, and the file it points at is untouched.
    #[test]
    fn a_created_list_planted_as_a_symlink_is_not_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("pages");
        let (mut mirror, _) = Mirror::open(&root, Opening::Fresh).expect("open");
        let kept = page(&mut mirror, "http://h/a.html", "a", 3);
        drop(mirror);
        let target = dir.path().join("elsewhere.txt");
        fs::write(&target, b"3\th_80/a.html\n").expect("target");
        fs::remove_file(root.join(CREATED_LIST)).expect("remove");
        std::os::unix::fs::symlink(&target, root.join(CREATED_LIST)).expect("symlink");
        let error = Mirror::open(&root, Opening::Resume(0)).expect_err("refused");
        assert!(matches!(error, MirrorError::Created { .. }), "{error:?}");
        assert!(
            format!("{:#}", anyhow::Error::from(error)).contains("not a plain file"),
            "says why"
        );
        assert!(kept.is_file());
        assert_eq!(fs::read(&target).expect("target"), b"3\th_80/a.html\n");
    }
}
