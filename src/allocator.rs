//! The process's two settings for its memory allocator (glibc's malloc), made once by `cli` for
//! a crawl that writes an index (`crawl --out`, `demo`), before any of its threads start. It owns
//! nothing else; it must never be called once threads run, and it never overrides a user's own
//! malloc settings.
//!
//! Why (measured, README "The eleventh session"): a crawl with `--out` peaked about 25 MB higher
//! without these settings. tantivy's indexing thread takes its arena in 1 MiB blocks and frees
//! them at every commit. glibc maps a block that large on its own at first, but its mmap
//! threshold then rises to the size of the first such block freed, so from the second commit on
//! the blocks come from the thread's heap, and a heap is only given back down to its highest
//! block still in use; and glibc gives up to eight heaps a core to the threads that contend for
//! one. A fixed threshold of 1 MiB keeps every arena block mapped on its own (returned when
//! freed), and two arenas bound what the heaps keep. Other verbs and crawls without an index
//! keep glibc's defaults: nothing measured there asks for a change.

/// Blocks of at least this many bytes are mapped on their own and unmapped when freed.
pub const MMAP_THRESHOLD: i32 = 1 << 20;

/// How many heaps (arenas) glibc may keep for the process's threads.
pub const ARENAS: i32 = 2;

/// What [`tune`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tuned {
    /// Both settings made.
    Set,
    /// The environment sets malloc options (`GLIBC_TUNABLES`, `MALLOC_ARENA_MAX`,
    /// `MALLOC_MMAP_THRESHOLD_`, even empty): the user's choice stands.
    UserChoice,
    /// Not glibc, or glibc refused a setting: the allocator's defaults stand.
    Unsupported,
}

impl std::fmt::Display for Tuned {
    /// The line a crawl's log (`--log`) gets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tuned::Set => write!(
                f,
                "malloc: mmap threshold {} KiB, {ARENAS} arenas",
                MMAP_THRESHOLD >> 10
            ),
            Tuned::UserChoice => write!(f, "malloc: left as the environment sets it"),
            Tuned::Unsupported => write!(
                f,
                "malloc: the allocator's defaults (not glibc, or glibc refused a setting)"
            ),
        }
    }
}

/// The environment variables through which a user sets glibc's malloc options.
const USER_SETTINGS: [&str; 3] = [
    "GLIBC_TUNABLES",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_THRESHOLD_",
];

/// Whether the user set any malloc option, given a lookup of the environment.
fn user_chose(is_set: impl Fn(&str) -> bool) -> bool {
    USER_SETTINGS.iter().any(|name| is_set(name))
}

/// Sets [`MMAP_THRESHOLD`] and [`ARENAS`], unless the user set malloc options. Call it before
/// any thread but the main one exists: glibc applies the arena bound to arenas made later.
pub fn tune() -> Tuned {
    if user_chose(|name| std::env::var_os(name).is_some()) {
        return Tuned::UserChoice;
    }
    set()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set() -> Tuned {
    // SAFETY: `mallopt` only changes glibc's allocator parameters under its own lock; it takes
    // no pointer and no memory is handed over. It returns 1 on success.
    #[allow(unsafe_code)]
    let set = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            && libc::mallopt(libc::M_ARENA_MAX, ARENAS) == 1
    };
    if set { Tuned::Set } else { Tuned::Unsupported }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set() -> Tuned {
    Tuned::Unsupported
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_malloc_setting_in_the_environment_is_the_users_choice() {
        for name in USER_SETTINGS {
            assert!(user_chose(|n| n == name), "{name}");
        }
        assert!(!user_chose(|n| n == "MALLOC_CHECK_"));
        assert!(!user_chose(|_| false));
    }
}
