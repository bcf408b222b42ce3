//! The machine's ledger: what every session of every loop on this machine
//! cost, one line each, appended as its record is written, in ralph's state
//! folder (out of the project, and of a confined session's reach). What
//! the user's budget (`config::user`) is held against, and what `ralph
//! budget --spent` shows. Appended whole under a lock; a line cut by a
//! crash is skipped; lines older than 8 days are dropped as it grows.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::config::user::Spent;

/// The most bytes read of the ledger.
const READ_CAP: u64 = 16 << 20;
/// Past this size, an append drops what is older than `KEEP_S`.
const PRUNE_AT: u64 = 4 << 20;
const KEEP_S: u64 = 8 * 86_400;
const DAY_S: u64 = 86_400;
const WEEK_S: u64 = 7 * DAY_S;

/// One session, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Seconds since the epoch, as it ended.
    pub at: u64,
    /// The project's folder.
    pub project: String,
    pub run: String,
    pub usd: f64,
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_unknown: bool,
}

/// The ledger's file.
pub fn path() -> PathBuf {
    crate::trust::store::state_dir().join("ledger.jsonl")
}

/// Add `entry` to the ledger at `path`.
pub fn append(path: &Path, entry: &Entry) -> Result<()> {
    if let Some(dir) = path.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    // Its folder is ralph's own: locked whole, nothing left beside it.
    let _held = crate::fsutil::lock_dir(path.parent().unwrap_or(Path::new(".")))?;
    let size = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
    if size > PRUNE_AT {
        let kept: String = entries(path)
            .iter()
            .filter(|e| entry.at.saturating_sub(e.at) < KEEP_S)
            .filter_map(|e| serde_json::to_string(e).ok())
            .map(|l| l + "\n")
            .collect();
        crate::fsutil::atomic_write(path, kept.as_bytes(), 0o600)?;
    }
    let mut line = serde_json::to_string(entry)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // One write of the whole line: a crash leaves it whole or cut, and a
    // cut line is skipped as it is read.
    f.write_all(line.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Every whole line of the ledger at `path`, oldest first.
pub fn entries(path: &Path) -> Vec<Entry> {
    let text = crate::fsutil::read_head(path, READ_CAP)
        .ok()
        .flatten()
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
        .filter(|e| e.usd.is_finite() && e.usd >= 0.0)
        .collect()
}

/// What `entries` came to, as of `now`: the last 24 hours and 7 days.
/// Pure.
pub fn spent(entries: &[Entry], now: u64) -> Spent {
    let mut s = Spent::default();
    for e in entries {
        let age = now.saturating_sub(e.at);
        if age < WEEK_S {
            s.usd_week += e.usd;
            s.tokens_week = s.tokens_week.saturating_add(e.tokens);
            s.unknown_week += u32::from(e.cost_unknown);
            if age < DAY_S {
                s.usd_day += e.usd;
                s.tokens_day = s.tokens_day.saturating_add(e.tokens);
            }
        }
    }
    s
}

/// One row of `ralph budget --spent`: a project's day (UTC).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub day: String,
    pub project: String,
    pub sessions: u32,
    pub usd: f64,
    pub tokens: u64,
}

/// The last 7 days of `entries` by day (UTC) and project, newest day
/// first. Pure.
pub fn by_day(entries: &[Entry], now: u64) -> Vec<Row> {
    let mut rows: std::collections::BTreeMap<(String, String), Row> = Default::default();
    for e in entries.iter().filter(|e| now.saturating_sub(e.at) < WEEK_S) {
        let day =
            crate::timefmt::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(e.at))
                .chars()
                .take(10)
                .collect::<String>();
        let r = rows
            .entry((day.clone(), e.project.clone()))
            .or_insert_with(|| Row {
                day,
                project: e.project.clone(),
                sessions: 0,
                usd: 0.0,
                tokens: 0,
            });
        r.sessions += 1;
        r.usd += e.usd;
        r.tokens = r.tokens.saturating_add(e.tokens);
    }
    let mut rows: Vec<Row> = rows.into_values().collect();
    rows.sort_by(|a, b| b.day.cmp(&a.day).then(a.project.cmp(&b.project)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(at: u64, project: &str, usd: f64, tokens: u64) -> Entry {
        Entry {
            at,
            project: project.into(),
            run: "r".into(),
            usd,
            tokens,
            cost_unknown: false,
        }
    }

    #[test]
    fn what_was_spent_is_summed_over_the_last_day_and_week() {
        let now = 30 * DAY_S;
        let entries = [
            e(now - 8 * DAY_S, "a", 100.0, 1000),
            e(now - 3 * DAY_S, "a", 2.0, 20),
            e(now - 3600, "b", 1.5, 15),
            e(now, "a", 0.5, 5),
        ];
        let s = spent(&entries, now);
        assert_eq!((s.usd_day, s.tokens_day), (2.0, 20));
        assert_eq!((s.usd_week, s.tokens_week), (4.0, 40));
        // The edges: a week old and a day old to the second are out of
        // each; a session of unknown cost is counted as such.
        let mut unknown = e(now - 5, "c", 0.0, 7);
        unknown.cost_unknown = true;
        let edges = [
            e(now - WEEK_S, "a", 100.0, 1000),
            e(now - DAY_S, "a", 3.0, 30),
            unknown.clone(),
            unknown,
        ];
        let s = spent(&edges, now);
        assert_eq!((s.usd_day, s.tokens_day), (0.0, 14));
        assert_eq!((s.usd_week, s.tokens_week, s.unknown_week), (3.0, 44, 2));
        let rows = by_day(&edges, now);
        let rows: Vec<(&str, u32, f64, u64)> = rows
            .iter()
            .map(|r| (r.project.as_str(), r.sessions, r.usd, r.tokens))
            .collect();
        assert_eq!(
            rows,
            [("a", 1, 3.0, 30), ("c", 2, 0.0, 14)],
            "one day, by project; a week old is not shown"
        );
        let rows = by_day(&entries, now);
        let shown: Vec<(&str, &str, u32)> = rows
            .iter()
            .map(|r| (r.day.as_str(), r.project.as_str(), r.sessions))
            .collect();
        assert_eq!(
            shown,
            [
                ("1970-01-31", "a", 1),
                ("1970-01-30", "b", 1),
                ("1970-01-28", "a", 1)
            ]
        );
    }

    #[test]
    fn lines_are_appended_whole_and_a_cut_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state/ledger.jsonl");
        append(&p, &e(10, "a", 1.0, 1)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"at\":11,\"proj")
            .unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"\n")
            .unwrap();
        append(&p, &e(12, "b", 2.0, 2)).unwrap();
        let got = entries(&p);
        assert_eq!(got, [e(10, "a", 1.0, 1), e(12, "b", 2.0, 2)]);
    }
}
