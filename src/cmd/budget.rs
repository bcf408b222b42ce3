use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::fsutil;
use crate::outln;
use crate::work::budget::{self, BUDGETS, Line, TOTAL_BUDGET};
use crate::work::project::Project;

/// Check the token budget of what every session reads.
///
/// .ralph/prompt.md (600), .ralph/readme.md (550) and .ralph/spec.md (4,000),
/// and where they exist .ralph/learnings.md (800) and the last 60 lines of
/// .ralph/progress.md (1,500), all a session reads; 7,450 together. A small core context leaves the context window for the work. Exits 1 when
/// a file or the total is over budget.
#[derive(Debug, Args)]
pub struct Budget {
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
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
