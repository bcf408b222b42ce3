//! `.ralph/config.toml`: the loop's settings for a project. The command
//! line overrides it; it overrides the defaults.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::fsutil;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub prompt: Option<PathBuf>,
    pub max_iterations: Option<u32>,
    pub timeout: Option<String>,
    pub max_cost: Option<f64>,
    pub no_progress_limit: Option<u32>,
    pub max_failures: Option<u32>,
    pub interactive: Option<bool>,
    pub claude: Option<PathBuf>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub claude_args: Option<Vec<String>>,
    pub limit_backoff: Option<String>,
    pub max_limit_wait: Option<String>,
    /// Run sessions confined by Claude Code's sandbox (`--confined`).
    pub confined: Option<bool>,
    /// Confined: paths writable besides the project (`~` expands).
    pub allow_write: Option<Vec<String>>,
    /// Confined: domains the session's tools may reach.
    pub allow_domains: Option<Vec<String>>,
    #[serde(default)]
    pub hooks: Hooks,
    #[serde(default)]
    pub gate: GateConfig,
}

/// `[gate]`: the project's own checks, which decide whether COMPLETE holds.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    /// Shell commands, run in order in the project with `sh -c`; all must exit 0.
    pub commands: Option<Vec<String>>,
    /// Longest one command may run [default: 20m].
    pub timeout: Option<String>,
    /// `complete` (when COMPLETE appears) or `each` (also after every
    /// session that changed something).
    pub when: Option<String>,
    /// Gate failures in a row before the loop gives up (exit 1) [default: 3].
    pub max_failures: Option<u32>,
}

/// Shell commands run at points of the loop's life, with the facts in
/// `RALPH_*` environment variables. A failing one is reported, never fatal.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hooks {
    pub on_loop_start: Option<String>,
    pub on_session_start: Option<String>,
    pub on_session_end: Option<String>,
    pub on_complete: Option<String>,
    pub on_waiting: Option<String>,
    pub on_limit: Option<String>,
}

pub fn load(path: &Path) -> Result<Config> {
    let Some(text) = fsutil::read_optional(path)? else {
        return Ok(Config::default());
    };
    toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))
        .context("invalid loop configuration")
}

/// `30m`, `90s`, `1h30m`, `2h`, `1d`, or plain seconds. Overflow is an
/// error, never a wrap or a panic; each option checks its own bounds.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let bad = || format!("invalid duration {s:?}: expected e.g. 30m, 90s, 1h30m");
    let too_long = || format!("invalid duration {s:?}: too long");
    if let Ok(n) = s.parse::<u64>() {
        return Ok(std::time::Duration::from_secs(n));
    }
    if s.chars().all(|c| c.is_ascii_digit()) && !s.is_empty() {
        return Err(too_long());
    }
    let mut total = 0u64;
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        if num.is_empty() {
            return Err(bad());
        }
        let n: u64 = num.parse().map_err(|_| too_long())?;
        let unit = match c {
            'd' => 86_400,
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => {
                return Err(format!(
                    "invalid duration {s:?}: unknown unit {c:?} (use d, h, m, s)"
                ));
            }
        };
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(too_long)?;
        num.clear();
    }
    if !num.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("45").unwrap().as_secs(), 45);
        assert!(parse_duration("5x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("10m5").is_err());
        assert_eq!(parse_duration("2d").unwrap().as_secs(), 172_800);
        for huge in [
            "99999999999999999999",
            "9999999999999999h",
            "18446744073709551615s1s",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("too long"), "{huge}: {e}");
        }
        // Representable, if absurd: each option's own bounds refuse it.
        assert_eq!(
            parse_duration("18446744073709551615").unwrap().as_secs(),
            u64::MAX
        );
        assert!(
            parse_duration("9999999999999999h")
                .unwrap_err()
                .contains("too long")
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "max_iterations = 5\ntimeout = \"10m\"\n[hooks]\non_complete = \"echo done\"\n",
        )
        .unwrap();
        let c = load(&p).unwrap();
        assert_eq!(
            (c.max_iterations, c.hooks.on_complete.as_deref()),
            (Some(5), Some("echo done"))
        );
        std::fs::write(&p, "max_iteration = 5\n").unwrap();
        let e = format!("{:#}", load(&p).unwrap_err());
        assert!(
            e.contains("config.toml") && e.contains("max_iteration"),
            "{e}"
        );
    }
}
