//! Which sites may keep a connection open between their fetches. A kept connection saves the
//! next contact its handshake, but it is an open file and about 27 KB of buffers for as long as
//! it idles; one per site contacted in the last minute or so took every file the process may
//! open on a crawl of 20,000 sites (audit 32: robots.txt then failed as "unreachable" and the
//! stats could not be written). So at most a budget of sites keep one: a site keeps its place
//! while it is contacted at least every [`IDLE`], and a place idle that long goes to the next
//! site that asks; a request to any other site asks the server to close the connection after
//! the answer (`Connection: close`).
//!
//! It owns that count and the process's open-file limit; it never chooses which site is
//! contacted (the frontier does).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a connection may idle in the pool before it is closed: beyond most servers' own
/// keep-alive (Apache 5 s, nginx 75 s), a site contacted less often than this gains little.
pub const IDLE: Duration = Duration::from_secs(30);

/// Kept connections at most, whatever the open-file limit allows: 1,024 idle connections are
/// about 28 MB.
pub const MAX_KEPT: usize = 1024;

/// Open files left for everything but kept connections: the store's files, the index's
/// segments, the control API's clients, the runtime.
const RESERVED_FILES: u64 = 256;

/// The sites that keep a connection, with when each was last contacted.
#[derive(Debug)]
pub struct KeptSites {
    budget: usize,
    sites: Mutex<HashMap<String, Instant>>,
}

impl KeptSites {
    /// At most `budget` sites keep a connection at once.
    pub fn new(budget: usize) -> KeptSites {
        KeptSites {
            budget,
            sites: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a request to `origin` now may leave its connection open: it already keeps one,
    /// or there is room (the sites idle past [`IDLE`] have let theirs go).
    pub fn admit(&self, origin: &str, now: Instant) -> bool {
        if self.budget == 0 {
            return false;
        }
        let mut sites = self
            .sites
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = sites.get_mut(origin) {
            *at = now;
            return true;
        }
        if sites.len() >= self.budget {
            sites.retain(|_, at| now.saturating_duration_since(*at) < IDLE);
            if sites.len() >= self.budget {
                return false;
            }
        }
        sites.insert(origin.to_owned(), now);
        true
    }

    /// `origin`'s server closed the connection (`Connection: close`): it keeps none.
    pub fn closed(&self, origin: &str) {
        let mut sites = self
            .sites
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sites.remove(origin);
    }
}

/// The process's limit of open files, raised to the most it may be (the soft limit is often
/// 1,024 where the hard one is 524,288, as Go's runtime and many servers raise it): `None` when
/// it cannot be read.
pub fn raise_open_files() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current?;
    match limit.maximum {
        Some(max) if max > current => {
            let raised = Rlimit {
                current: Some(max),
                maximum: Some(max),
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => Some(max),
                Err(_) => Some(current),
            }
        }
        // Already at the maximum, or no maximum (unlimited).
        Some(_) | None => Some(current),
    }
}

/// How many sites may keep a connection: half the open files left once `workers` fetches (each
/// a connection, and one more while a stale one is replaced) and the reserve are counted,
/// `per_site` connections a site, at most [`MAX_KEPT`] connections.
pub fn budget(open_files: Option<u64>, workers: usize, per_site: usize) -> usize {
    let Some(files) = open_files else {
        return MAX_KEPT / per_site.max(1);
    };
    let busy = 2 * workers as u64 + RESERVED_FILES;
    let kept = usize::try_from(files.saturating_sub(busy) / 2).unwrap_or(MAX_KEPT);
    kept.min(MAX_KEPT) / per_site.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_admitted_while_there_is_room_or_once_another_idled_past_the_limit() {
        let kept = KeptSites::new(2);
        let t0 = Instant::now();
        assert!(kept.admit("http://a", t0));
        assert!(kept.admit("http://b", t0));
        assert!(!kept.admit("http://c", t0), "no room");
        assert!(kept.admit("http://a", t0 + IDLE), "a keeps its own");
        // b idled past the limit: its connection is gone, c takes its place.
        assert!(kept.admit("http://c", t0 + IDLE + Duration::from_millis(1)));
        assert!(!kept.admit("http://d", t0 + IDLE + Duration::from_millis(1)));
        kept.closed("http://c");
        assert!(kept.admit("http://d", t0 + IDLE + Duration::from_millis(2)));
        assert!(!KeptSites::new(0).admit("http://a", t0));
    }

    #[test]
    fn the_budget_leaves_the_reserve_and_the_workers_their_files() {
        assert_eq!(budget(Some(1024), 64, 1), (1024 - 128 - 256) / 2);
        assert_eq!(budget(Some(1024), 64, 4), (1024 - 128 - 256) / 2 / 4);
        assert_eq!(budget(Some(256), 16, 1), 0, "no file to spare");
        assert_eq!(budget(Some(1 << 20), 64, 1), MAX_KEPT);
        assert_eq!(budget(None, 64, 2), MAX_KEPT / 2);
    }
}
