//! The user's own settings, for every loop on the machine: a budget for
//! all of them together, in `~/.config/ralph/config.toml`. Never the
//! project's config, which a clone controls.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// `[budget]`: what every loop on this machine may spend together, over
/// the last 24 hours and the last 7 days, in dollars or in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineBudget {
    /// US dollars in the last 24 hours.
    pub per_day: Option<f64>,
    /// US dollars in the last 7 days.
    pub per_week: Option<f64>,
    /// Tokens (input, output and cache) in the last 24 hours.
    pub per_day_tokens: Option<u64>,
    /// Tokens in the last 7 days.
    pub per_week_tokens: Option<u64>,
}

/// What every loop on the machine spent, as the ledger says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub usd_day: f64,
    pub usd_week: f64,
    pub tokens_day: u64,
    pub tokens_week: u64,
    /// Sessions whose cost was not known (tokens only, no price): their
    /// dollars are not counted.
    pub unknown_week: u32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    budget: Option<MachineBudget>,
}

impl MachineBudget {
    /// Whether it holds anything.
    pub fn is_set(&self) -> bool {
        *self != MachineBudget::default()
    }

    /// What is wrong with it, if anything: each amount positive.
    fn check(&self) -> Result<(), String> {
        for (key, v) in [("per_day", self.per_day), ("per_week", self.per_week)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0 && v <= 1e6)
            {
                return Err(format!(
                    "[budget] {key} = {v}: a budget is US dollars, more than 0 and at most 1000000"
                ));
            }
        }
        for (key, v) in [
            ("per_day_tokens", self.per_day_tokens),
            ("per_week_tokens", self.per_week_tokens),
        ] {
            if v == Some(0) {
                return Err(format!("[budget] {key} = 0: a budget is more than nothing"));
            }
        }
        Ok(())
    }

    /// Why the next session would go past it, if it would: the first of
    /// its amounts that `spent` reached. Pure.
    pub fn over(&self, spent: &Spent) -> Option<String> {
        let usd = |v: f64| crate::output::usd(v);
        let dollars = [
            ("last 24 hours", self.per_day, spent.usd_day, "per_day"),
            ("last 7 days", self.per_week, spent.usd_week, "per_week"),
        ];
        for (when, cap, spent, key) in dollars {
            if let Some(cap) = cap.filter(|c| spent >= *c) {
                return Some(format!(
                    "every loop on this machine has spent {} of {} in the {when} ([budget] {key})",
                    usd(spent),
                    usd(cap)
                ));
            }
        }
        let tokens = [
            (
                "last 24 hours",
                self.per_day_tokens,
                spent.tokens_day,
                "per_day_tokens",
            ),
            (
                "last 7 days",
                self.per_week_tokens,
                spent.tokens_week,
                "per_week_tokens",
            ),
        ];
        for (when, cap, spent, key) in tokens {
            if let Some(cap) = cap.filter(|c| spent >= *c) {
                return Some(format!(
                    "every loop on this machine has used {spent} of {cap} tokens in the {when} ([budget] {key})"
                ));
            }
        }
        None
    }
}

/// Where the user's settings are.
pub fn path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "ralph").map(|d| d.config_dir().join("config.toml"))
}

/// The machine's budget in the user's settings at `path` (none: no file,
/// or no `[budget]`); a file that says something wrong is refused, naming
/// it.
pub fn budget_at(path: &Path) -> Result<Option<MachineBudget>> {
    let Some(text) = crate::fsutil::read_optional(path)? else {
        return Ok(None);
    };
    let file: File = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), super::said(&e, &text)))
        .context("invalid user settings")?;
    let budget = file.budget.filter(MachineBudget::is_set);
    if let Some(b) = &budget {
        b.check()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
            .context("invalid user settings")?;
    }
    Ok(budget)
}

/// The machine's budget in the user's settings.
pub fn budget() -> Result<Option<MachineBudget>> {
    match path() {
        Some(p) => budget_at(&p),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_amount_reached_is_said_and_none_under_it() {
        let b = MachineBudget {
            per_day: Some(5.0),
            per_week: Some(20.0),
            per_day_tokens: None,
            per_week_tokens: Some(1000),
        };
        let mut s = Spent {
            usd_day: 4.99,
            usd_week: 19.0,
            tokens_day: 10,
            tokens_week: 999,
            unknown_week: 0,
        };
        assert_eq!(b.over(&s), None);
        s.tokens_week = 1000;
        assert_eq!(
            b.over(&s).as_deref(),
            Some(
                "every loop on this machine has used 1000 of 1000 tokens in the last 7 days ([budget] per_week_tokens)"
            )
        );
        s.usd_day = 5.0;
        assert_eq!(
            b.over(&s).as_deref(),
            Some(
                "every loop on this machine has spent $5.00 of $5.00 in the last 24 hours ([budget] per_day)"
            )
        );
    }

    #[test]
    fn a_budget_file_is_read_strictly_naming_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        assert_eq!(budget_at(&p).unwrap(), None, "no file, no budget");
        std::fs::write(&p, "[budget]\nper_day = 20\nper_week_tokens = 5000000\n").unwrap();
        assert_eq!(
            budget_at(&p).unwrap(),
            Some(MachineBudget {
                per_day: Some(20.0),
                per_week: None,
                per_day_tokens: None,
                per_week_tokens: Some(5_000_000),
            })
        );
        std::fs::write(&p, "[budget]\nper_dya = 20\n").unwrap();
        let e = format!("{:#}", budget_at(&p).unwrap_err());
        assert!(e.contains("per_dya") && e.contains("config.toml"), "{e}");
        for (bad, said) in [
            (
                "per_day = -1",
                "[budget] per_day = -1: a budget is US dollars",
            ),
            (
                "per_week = 0",
                "[budget] per_week = 0: a budget is US dollars",
            ),
            (
                "per_day = 1000001",
                "[budget] per_day = 1000001: a budget is US dollars",
            ),
            (
                "per_day_tokens = 0",
                "[budget] per_day_tokens = 0: a budget is more than nothing",
            ),
            (
                "per_week_tokens = 0",
                "[budget] per_week_tokens = 0: a budget is more than nothing",
            ),
        ] {
            std::fs::write(&p, format!("[budget]\n{bad}\n")).unwrap();
            let e = format!("{:#}", budget_at(&p).unwrap_err());
            assert!(e.contains(said), "{bad}: {e}");
        }
        std::fs::write(&p, "[budget]\n").unwrap();
        assert_eq!(budget_at(&p).unwrap(), None, "an empty table is no budget");
    }
}
