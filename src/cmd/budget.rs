use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::fsutil;
use crate::outln;
use crate::work::budget::{self, BUDGETS, Line, TOTAL_BUDGET};
use crate::work::project::Project;

/// Check the token budget of what every session reads; with --spent, what
/// every loop on this machine spent, against your budget.
///
/// .ralph/prompt.md (600), .ralph/readme.md (550) and .ralph/spec.md (4,000),
/// and where they exist .ralph/learnings.md (800) and the last 60 lines of
/// .ralph/progress.md (1,500), all a session reads; 7,450 together. A small core context leaves the context window for the work. Exits 1 when
/// a file or the total is over budget.
///
/// --spent: the machine's ledger (every session of every loop, in ralph's
/// state folder) by day (UTC) and project over the last 7 days, and what is
/// left of the budget in `[budget]` of ~/.config/ralph/config.toml
/// (per_day, per_week in US dollars; per_day_tokens, per_week_tokens).
/// Exits 1 when the budget is spent.
#[derive(Debug, Args)]
pub struct Budget {
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,

    /// What every loop on this machine spent, against your budget
    #[arg(long)]
    spent: bool,
}

/// `--spent`: the ledger by day and project, and the budget's standing.
fn spent(json: bool) -> Result<ExitStatus> {
    use crate::history::ledger;
    let budget = crate::config::user::budget()?;
    let entries = ledger::entries(&ledger::path());
    let now = crate::timefmt::now_epoch();
    let rows = ledger::by_day(&entries, now);
    let spent = ledger::spent(&entries, now);
    let over = budget.and_then(|b| b.over(&spent));
    if json {
        let v = serde_json::json!({
            "days": rows,
            "spent": spent,
            "budget": budget,
            "over": over,
            "ledger": ledger::path(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        outln!(
            "Spent by every loop on this machine, the last 7 days ({}):",
            ledger::path().display()
        );
        if rows.is_empty() {
            outln!("  nothing yet");
        }
        for r in &rows {
            outln!(
                "  {}  {}  {}  {}  {} tokens",
                r.day,
                crate::output::visible_line(&r.project),
                crate::output::counted(r.sessions, "session", "sessions"),
                crate::output::usd(r.usd),
                r.tokens
            );
        }
        let usd = crate::output::usd;
        let left = |spent: f64, cap: Option<f64>| match cap {
            Some(c) => format!(
                "{} of {} ({} left)",
                usd(spent),
                usd(c),
                usd((c - spent).max(0.0))
            ),
            None => format!("{} (no budget)", usd(spent)),
        };
        let left_tokens = |spent: u64, cap: Option<u64>| match cap {
            Some(c) => format!("{spent} of {c} tokens ({} left)", c.saturating_sub(spent)),
            None => format!("{spent} tokens"),
        };
        let b = budget.unwrap_or_default();
        outln!(
            "last 24 hours: {}, {}",
            left(spent.usd_day, b.per_day),
            left_tokens(spent.tokens_day, b.per_day_tokens)
        );
        outln!(
            "last 7 days:   {}, {}",
            left(spent.usd_week, b.per_week),
            left_tokens(spent.tokens_week, b.per_week_tokens)
        );
        if spent.unknown_week > 0 {
            outln!(
                "({} of the last 7 days' cost no dollars the agent could report: counted in tokens only)",
                crate::output::counted(spent.unknown_week, "session", "sessions")
            );
        }
        match (&over, budget) {
            (Some(why), _) => outln!("The budget is spent: {why}; no loop starts another session."),
            (None, None) => outln!(
                "No budget: set one in [budget] of {} (per_day, per_week in US dollars; per_day_tokens, per_week_tokens).",
                crate::config::user::path().map_or("~/.config/ralph/config.toml".into(), |p| p
                    .display()
                    .to_string())
            ),
            (None, Some(_)) => {}
        }
    }
    Ok(if over.is_some() {
        ExitStatus::from(1)
    } else {
        ExitStatus::Success
    })
}

/// What each file a session reads costs it.
fn read_lines(project: &Project) -> Result<Vec<Line>> {
    let mut lines = Vec::new();
    for (name, limit) in BUDGETS {
        let text = fsutil::read_optional(&project.ralph_dir().join(name))?;
        lines.push(Line {
            file: format!(".ralph/{name}"),
            tokens: text.map(|t| budget::estimate(&t)),
            budget: limit,
            optional: false,
        });
    }
    for (name, limit) in budget::ALSO_READ {
        let path = project.ralph_dir().join(name);
        let text = if name == "progress.md" {
            // A session reads its last entries only.
            fsutil::read_tail(&path, crate::work::progress_log::TAIL_BYTES).map(|t| {
                crate::work::progress_log::tail(&t, crate::work::progress_log::TAIL_LINES)
                    .to_string()
            })
        } else {
            fsutil::read_optional(&path)?
        };
        let shown = if name == "progress.md" {
            ".ralph/progress.md (tail)"
        } else {
            ".ralph/learnings.md"
        };
        lines.push(Line {
            file: shown.to_string(),
            tokens: text.map(|t| budget::estimate(&t)),
            budget: limit,
            optional: true,
        });
    }
    Ok(lines)
}

impl Run for Budget {
    fn run(&self) -> Result<ExitStatus> {
        if self.spent {
            return spent(self.json);
        }
        let lines = read_lines(&Project::find()?)?;
        let total: usize = lines.iter().filter_map(|l| l.tokens).sum();
        let over = lines.iter().any(Line::over) || total > TOTAL_BUDGET;
        if self.json {
            let v = serde_json::json!({"files": lines, "total": total, "total_budget": TOTAL_BUDGET, "over": over, "method": budget::METHOD});
            outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            for l in &lines {
                let (tokens, mark) = match l.tokens {
                    None if l.optional => ("none yet".to_string(), ""),
                    None => ("missing".to_string(), ""),
                    Some(t) => (format!("~{t}"), if l.over() { "  OVER BUDGET" } else { "" }),
                };
                outln!(
                    "{:<26} {:>8} / {:>5} tokens{mark}",
                    l.file,
                    tokens,
                    l.budget
                );
            }
            let mark = if total > TOTAL_BUDGET {
                "  OVER BUDGET"
            } else {
                ""
            };
            outln!(
                "{:<26} {:>8} / {:>5} tokens{mark}",
                "total",
                format!("~{total}"),
                TOTAL_BUDGET
            );
            outln!("({})", budget::METHOD);
        }
        if over {
            Ok(ExitStatus::from(1))
        } else {
            Ok(ExitStatus::Success)
        }
    }
}
