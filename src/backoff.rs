//! How long to leave a server alone after it pushed back (5xx, 429, unreachable): exponential
//! backoff, and the `Retry-After` header of RFC 9110, section 10.2.3.
//!
//! Pure arithmetic on values: it never reads a clock (the caller passes `now`) and never
//! sleeps. Every result is capped, so no attempt count or header value can overflow or make
//! the crawl wait for years.

use std::time::{Duration, SystemTime};

/// Exponential backoff: attempt 1 waits `base`, each later attempt `factor` times longer,
/// never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
    pub factor: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            max: Duration::from_secs(5 * 60),
            factor: 2,
        }
    }
}

impl Backoff {
    /// The wait before retry number `attempt` (1-based: attempt 1 waits `base`).
    /// Attempt 0 is taken as attempt 1, and a factor of 0 as 1, so the wait never shrinks as
    /// failures pile up.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1);
        let factor = self.factor.max(1);
        // Any overflow means "far more than max": the cap is the answer.
        factor
            .checked_pow(exponent)
            .and_then(|multiplier| self.base.checked_mul(multiplier))
            .map_or(self.max, |delay| delay.min(self.max))
    }

    /// The wait before retry number `attempt` when the server may have sent `Retry-After`:
    /// the server's wish wins over our own schedule (even when shorter), but never beyond
    /// `max`, so a hostile header cannot park a site for days.
    pub fn with_retry_after(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(wait) => wait.min(self.max),
            None => self.delay(attempt),
        }
    }
}

/// Parses a `Retry-After` header value (RFC 9110, section 10.2.3): either `delay-seconds`
/// (one or more ASCII digits) or an HTTP-date, taken relative to `now`.
///
/// A date at or before `now` gives `Some(Duration::ZERO)`: the server says "retry now".
/// A number too large for `u64` saturates to the longest `Duration` of whole seconds (the
/// caller caps it, see [`Backoff::with_retry_after`]). Anything else, including negative
/// or fractional numbers, gives `None`, and the caller falls back to its own backoff.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    // `u64::from_str` would also take a leading `+`, which delay-seconds does not allow.
    if value.bytes().all(|byte| byte.is_ascii_digit()) {
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// 2015-10-21 07:28:00 UTC, the instant of RFC 9110's own example dates.
    fn rfc_now() -> SystemTime {
        SystemTime::UNIX_EPOCH + secs(1_445_412_480)
    }

    #[test]
    fn default_is_one_second_doubling_up_to_five_minutes() {
        let backoff = Backoff::default();
        assert_eq!(backoff.base, secs(1));
        assert_eq!(backoff.max, secs(300));
        assert_eq!(backoff.factor, 2);
    }

    #[test]
    fn delay_grows_by_the_factor_from_base() {
        let backoff = Backoff::default();
        let delays: Vec<_> = (1..=5).map(|attempt| backoff.delay(attempt)).collect();
        assert_eq!(delays, [secs(1), secs(2), secs(4), secs(8), secs(16)]);
    }

    #[test]
    fn delay_is_capped_at_max() {
        let backoff = Backoff::default();
        assert_eq!(backoff.delay(9), secs(256));
        assert_eq!(backoff.delay(10), secs(300));
        assert_eq!(backoff.delay(11), secs(300));
    }

    #[test]
    fn delay_for_huge_attempts_does_not_overflow() {
        let backoff = Backoff::default();
        assert_eq!(backoff.delay(33), secs(300));
        assert_eq!(backoff.delay(u32::MAX), secs(300));
        let wide = Backoff {
            base: Duration::MAX,
            max: Duration::MAX,
            factor: u32::MAX,
        };
        assert_eq!(wide.delay(2), Duration::MAX);
        assert_eq!(wide.delay(u32::MAX), Duration::MAX);
    }

    #[test]
    fn attempt_zero_counts_as_the_first() {
        assert_eq!(Backoff::default().delay(0), secs(1));
    }

    #[test]
    fn factor_zero_or_one_keeps_the_base() {
        for factor in [0, 1] {
            let backoff = Backoff {
                factor,
                ..Backoff::default()
            };
            assert_eq!(backoff.delay(7), secs(1), "factor {factor}");
        }
    }

    #[test]
    fn base_above_max_is_capped() {
        let backoff = Backoff {
            base: secs(600),
            ..Backoff::default()
        };
        assert_eq!(backoff.delay(1), secs(300));
    }

    #[test]
    fn retry_after_wins_over_the_schedule() {
        let backoff = Backoff::default();
        assert_eq!(backoff.with_retry_after(5, Some(secs(3))), secs(3));
        assert_eq!(backoff.with_retry_after(1, Some(secs(120))), secs(120));
        assert_eq!(
            backoff.with_retry_after(1, Some(Duration::ZERO)),
            Duration::ZERO
        );
    }

    #[test]
    fn retry_after_is_capped_at_max() {
        let backoff = Backoff::default();
        assert_eq!(backoff.with_retry_after(1, Some(secs(86_400))), secs(300));
        assert_eq!(backoff.with_retry_after(1, Some(Duration::MAX)), secs(300));
    }

    #[test]
    fn without_retry_after_the_schedule_applies() {
        assert_eq!(Backoff::default().with_retry_after(3, None), secs(4));
    }

    #[test]
    fn parses_delay_seconds() {
        assert_eq!(parse_retry_after("120", rfc_now()), Some(secs(120)));
        assert_eq!(parse_retry_after("0", rfc_now()), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("  7 \t", rfc_now()), Some(secs(7)));
    }

    #[test]
    fn parses_an_imf_fixdate_in_the_future() {
        let value = "Wed, 21 Oct 2015 07:30:00 GMT";
        assert_eq!(parse_retry_after(value, rfc_now()), Some(secs(120)));
    }

    #[test]
    fn parses_the_obsolete_date_forms_of_rfc_9110() {
        // RFC 9110, section 5.6.7: recipients must accept rfc850-date and asctime-date too.
        let rfc850 = "Wednesday, 21-Oct-15 07:30:00 GMT";
        let asctime = "Wed Oct 21 07:30:00 2015";
        assert_eq!(parse_retry_after(rfc850, rfc_now()), Some(secs(120)));
        assert_eq!(parse_retry_after(asctime, rfc_now()), Some(secs(120)));
    }

    #[test]
    fn a_date_in_the_past_means_now() {
        let value = "Wed, 21 Oct 2015 07:00:00 GMT";
        assert_eq!(parse_retry_after(value, rfc_now()), Some(Duration::ZERO));
        let exactly_now = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            parse_retry_after(exactly_now, rfc_now()),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn garbage_is_none() {
        for value in [
            "",
            "   ",
            "soon",
            "1.5",
            "-5",
            "+5",
            "5s",
            "0x10",
            "Wed, 32 Oct 2015 07:30:00 GMT",
            "Wed, 21 Oct 2015 07:30:00",
            "\u{0}\u{7f}ÿ",
        ] {
            assert_eq!(parse_retry_after(value, rfc_now()), None, "{value:?}");
        }
    }

    #[test]
    fn huge_delay_seconds_saturate_and_are_then_capped() {
        let huge = "99999999999999999999999999999";
        let parsed = parse_retry_after(huge, rfc_now());
        assert_eq!(parsed, Some(Duration::from_secs(u64::MAX)));
        assert_eq!(Backoff::default().with_retry_after(1, parsed), secs(300));
        let max_u64 = u64::MAX.to_string();
        assert_eq!(
            parse_retry_after(&max_u64, rfc_now()),
            Some(Duration::from_secs(u64::MAX))
        );
    }
}
