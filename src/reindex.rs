//! Building a crawl folder's full-text index again from its WARC files (`crawltop index DIR`):
//! for a folder crawled with `--no-index` that is to be searched after all, or one whose
//! `index/` was lost (a resume refuses such a folder, since the pages committed before would be
//! missing from search).
//!
//! It owns that one job: it holds the folder's lock while it works, reads the response records
//! the checkpoint holds (as `extract` does: a killed crawl's files up to its last mark), parses
//! each HTML page as the crawl does (its robots `<meta>` and `X-Robots-Tag` for the product
//! token of the User-Agent its request record was sent with) and adds it under its own
//! sequence number, builds the new index beside the old one and puts it in place only when it
//! is whole and durable, then marks
//! the folder as indexed, with the pages whose text the index cut. So a search of the rebuilt
//! folder answers as a search of the same crawl made with the index would (the commit times are
//! the fetch times of the WARC records, to the second), and a resume goes on indexing. It must
//! never touch a folder a crawl is writing, never write anything but `index/` and the
//! checkpoint's mark and cut list, and never leave `index/` half built.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::{PRODUCT_TOKEN, product_token};
use crate::index::feed::CutPage;
use crate::index::{Added, IndexError, IndexWriter, OwnedPage};
use crate::parse::{MetaRobots, Options, Text};
use crate::store::checkpoint::{Checkpoint, CheckpointError, Mark};
use crate::store::committer::{FolderLock, StoreError};
use crate::store::warc::parse_warc_date;
use crate::store::warc_reader::{Responses, WarcReadError, held_parts};

/// Where the new index is built, inside the crawl folder (so the final rename stays on one
/// disk); a leftover of an interrupted rebuild is removed first.
pub const BUILDING: &str = "index.building";
/// Where the index a rebuild replaces waits while the new one moves in.
pub const OLD: &str = "index.old";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReindexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Warc(#[from] WarcReadError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(
        "{} holds no checkpoint (state.redb): index reads the pages a crawl's checkpoint holds",
        .0.display()
    )]
    NoCheckpoint(PathBuf),
    #[error(
        "{} keeps no WARC files (its crawl stored with --store {store}): the index is built \
         from them",
        dir.display()
    )]
    NoWarcStore { dir: PathBuf, store: String },
    #[error(
        "{} already has an index ({pages} pages); --replace builds it again from the WARC files",
        dir.display()
    )]
    Exists { dir: PathBuf, pages: u64 },
    #[error(
        "the response record of {uri} has no Crawltop-Seq: it was written by a crawltop that \
         did not record each page's place in the commit order, which the index needs"
    )]
    NoSeq { uri: String },
    #[error("cannot use {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// What a rebuild did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reindexed {
    /// Response records read (every status and type, robots.txt answers too).
    pub responses: u64,
    /// HTML pages with a 2xx answer and no `noindex` that went to the index.
    pub pages: u64,
    /// Of those, pages whose text the index cut ([`crate::index::MAX_DISTINCT_WORDS`]).
    pub cut: u64,
}

/// Builds `dir`'s index from its WARC files up to its checkpoint, with `memory_mb` for
/// tantivy's indexing buffer; an index already there is refused unless `replace`. `progress`
/// is called now and then with the pages indexed so far.
pub fn reindex(
    dir: &Path,
    memory_mb: usize,
    replace: bool,
    mut progress: impl FnMut(&Reindexed),
) -> Result<Reindexed, ReindexError> {
    if !dir.is_dir() {
        return Err(ReindexError::Io {
            path: dir.into(),
            error: std::io::ErrorKind::NotFound.into(),
        });
    }
    // Before the lock, whose file is made in the folder: a folder that never held a crawl is
    // left as it was.
    if !dir.join(crate::store::checkpoint::STATE_FILE).is_file() {
        return Err(ReindexError::NoCheckpoint(dir.into()));
    }
    // Held to the end: no crawl starts on the folder while its index is rebuilt.
    let _lock = FolderLock::take(dir)?;
    let mark = Checkpoint::find_mark(dir)?.ok_or_else(|| ReindexError::NoCheckpoint(dir.into()))?;
    if let Some(store) = mark.store
        && !store.warc()
    {
        return Err(ReindexError::NoWarcStore {
            dir: dir.into(),
            store: store.name(),
        });
    }
    let index = dir.join("index");
    if !replace && index.join("meta.json").is_file() {
        let pages = crate::index::IndexReader::open(&index).map_or(0, |r| r.pages());
        return Err(ReindexError::Exists {
            dir: dir.into(),
            pages,
        });
    }
    let parts = held_parts(&dir.join("warc"), Some(&mark))?;
    let building = dir.join(BUILDING);
    remove_dir(&building)?;
    let mut writer = IndexWriter::open_with_memory(&building, memory_mb)?;
    // The crawl's name on the index, so that its resume takes it (a state written before
    // crawls were named gets one at its resume, which stamps the index then).
    if let Some(crawl) = &mark.crawl {
        writer.stamp(crawl);
    }
    let (done, cuts) = add_pages(&mut writer, Responses::of(parts), &mut progress)?;
    writer.commit()?;
    let indexed = writer.pages();
    writer.close()?;
    put_in_place(dir, &building, &index)?;
    Checkpoint::mark_indexed(
        dir,
        &Mark {
            index: true,
            text_cut: done.cut,
            indexed: Some(indexed),
            ..mark
        },
        &cuts,
    )?;
    Ok(done)
}

/// Adds every HTML page of `responses` with a 2xx answer and no `noindex` to `writer`, as the
/// crawl would have: what was done, and the pages whose text was cut.
fn add_pages(
    writer: &mut IndexWriter,
    responses: Responses,
    progress: &mut impl FnMut(&Reindexed),
) -> Result<(Reindexed, Vec<CutPage>), ReindexError> {
    let mut done = Reindexed::default();
    let mut cuts = Vec::new();
    let mut shown = Instant::now();
    for response in responses {
        let response = response?;
        done.responses += 1;
        let ctype = response.header("content-type");
        // A robots.txt answer is not a page, whatever type it says it is.
        if !response.is_html_page() {
            continue;
        }
        let Some(seq) = response.seq else {
            return Err(ReindexError::NoSeq {
                uri: response.target_uri,
            });
        };
        // The crawl parses against the URL it fetched; a URL it could not parse was never
        // fetched, so never stored.
        let Ok(url) = url::Url::parse(&response.target_uri) else {
            continue;
        };
        // The robots `<meta>` and `X-Robots-Tag` the crawl obeyed are those of its product
        // token, read here from the User-Agent each page was requested with (its WARC request
        // record), not from the folder's state: the settings kept there leave the User-Agent
        // out (a resume may change it, so each run's pages were parsed under its own), and
        // states written before they were kept hold none. A record without one (none that
        // crawltop wrote) is read as the default User-Agent's (`crawltop`).
        let agent = response
            .user_agent
            .as_deref()
            .map_or(PRODUCT_TOKEN, product_token);
        let options = Options {
            text: Text::Extract,
            agent,
        };
        let mut page = crate::parse::parse_html_with(&response.body, ctype, &url, options);
        // The response's `X-Robots-Tag` too, as the crawl obeyed it.
        page.obey(MetaRobots::from_headers(
            response.headers.iter().map(|(k, v)| (&**k, &**v)),
            agent,
        ));
        if page.meta_robots.noindex {
            continue;
        }
        let owned = OwnedPage {
            seq,
            url: response.target_uri,
            title: page.title.unwrap_or_default(),
            text: page.text,
            // The crawl's own commit time where the record keeps it; in files written before
            // it did, the request's date (to the second); none at all, after every dated page.
            committed_ms: (response.committed_ms)
                .or_else(|| response.date.as_deref().and_then(parse_warc_date))
                .unwrap_or(u64::MAX),
        };
        match writer.add(&owned.as_indexed())? {
            Added::Refused => continue,
            Added::Whole => {}
            Added::Cut(cut) => {
                done.cut += 1;
                cuts.push(CutPage {
                    seq,
                    url: owned.url,
                    cut,
                });
            }
        }
        done.pages += 1;
        if shown.elapsed().as_secs() >= 2 {
            progress(&done);
            shown = Instant::now();
        }
    }
    Ok((done, cuts))
}

/// Puts the index built in `building` at `index`, replacing the one there.
fn put_in_place(dir: &Path, building: &Path, index: &Path) -> Result<(), ReindexError> {
    // In place only when whole: the old index (if any) goes first, so a failure between the
    // two renames leaves no index (the next rebuild makes it) rather than a wrong one.
    let old = dir.join(OLD);
    remove_dir(&old)?;
    if index.exists() {
        rename(index, &old)?;
    }
    rename(building, index)?;
    sync_dir(dir)?;
    remove_dir(&old)?;
    Ok(())
}

fn remove_dir(path: &Path) -> Result<(), ReindexError> {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(ReindexError::Io {
            path: path.into(),
            error,
        }),
        _ => Ok(()),
    }
}

/// Makes the renames in `dir` durable.
fn sync_dir(dir: &Path) -> Result<(), ReindexError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|error| ReindexError::Io {
            path: dir.into(),
            error,
        })
}

fn rename(from: &Path, to: &Path) -> Result<(), ReindexError> {
    std::fs::rename(from, to).map_err(|error| ReindexError::Io {
        path: from.into(),
        error,
    })
}
