//! The wall clock, read in one place: [`wall`].
//!
//! It owns the one call to `SystemTime::now` in the crawler (clippy's `disallowed-methods`
//! refuses it anywhere else) and a test hook that moves this process's wall clock by a fixed
//! offset ([`OFFSET_ENV`]), so a test can run a member of a shared crawl whose clock is off by
//! minutes. The wall clock may only stamp what a user reads (WARC dates, stats file names,
//! a checkpoint's next-contact times for a resume of the same folder) and the age of a
//! robots.txt answer (a day: members' clocks minutes apart ask again minutes apart, which no
//! rule depends on): it must never decide
//! anything another member of a shared crawl relies on (leases, heartbeats and next contacts
//! use Redis's clock) and never measure an interval (that is `Instant`'s job).

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// Set in the environment to a number of milliseconds (negative for the past), this process's
/// wall clock is that far off: how the tests prove that a shared crawl does not depend on its
/// members' clocks agreeing.
pub const OFFSET_ENV: &str = "CRAWLTOP_TEST_CLOCK_OFFSET_MS";

/// Now, by this machine's wall clock (moved by [`OFFSET_ENV`] when it is set).
pub fn wall() -> SystemTime {
    #[allow(clippy::disallowed_methods)] // the one place that reads it
    let now = SystemTime::now();
    match offset_ms() {
        0 => now,
        ms if ms > 0 => now + Duration::from_millis(ms.unsigned_abs()),
        ms => now
            .checked_sub(Duration::from_millis(ms.unsigned_abs()))
            .unwrap_or(SystemTime::UNIX_EPOCH),
    }
}

/// `time` in whole milliseconds since the Unix epoch (0 before it).
pub fn ms_since_epoch(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn offset_ms() -> i64 {
    static OFFSET: OnceLock<i64> = OnceLock::new();
    *OFFSET.get_or_init(|| parse_offset(std::env::var(OFFSET_ENV).ok().as_deref()))
}

/// The offset a value of [`OFFSET_ENV`] asks for; anything but a whole number of milliseconds
/// is no offset.
fn parse_offset(value: Option<&str>) -> i64 {
    value.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_is_whole_milliseconds_either_way_and_anything_else_is_none() {
        assert_eq!(parse_offset(Some("600000")), 600_000);
        assert_eq!(parse_offset(Some(" -600000 ")), -600_000);
        assert_eq!(parse_offset(Some("ten minutes")), 0);
        assert_eq!(parse_offset(Some("1.5")), 0);
        assert_eq!(parse_offset(None), 0);
    }
}
