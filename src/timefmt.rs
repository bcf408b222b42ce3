//! Times as ralph shows and records them (humantime does the work).

use std::time::{Duration, SystemTime};

/// `2026-11-22T21:30:05Z`
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

pub fn now() -> String {
    rfc3339(SystemTime::now())
}

/// "1h 2m 3s", "4m 5s", "6s": whole seconds.
pub fn human_duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// Seconds since the epoch, now (0 on a clock set before 1970).
pub fn now_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_381_623);
        assert_eq!(rfc3339(t), "2026-11-22T21:07:03Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn durations_read_in_whole_seconds() {
        assert_eq!(human_duration(Duration::from_millis(6_700)), "6s");
        assert_eq!(human_duration(Duration::from_secs(245)), "4m 5s");
        assert_eq!(human_duration(Duration::from_secs(3723)), "1h 2m 3s");
        assert_eq!(human_duration(Duration::ZERO), "0s");
    }
}
