use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use super::Run;
use crate::exit::ExitStatus;
use crate::hook::target::{self as hook_target, user_settings_path};
use crate::outln;
use crate::work::budget::{self, BUDGETS, TOTAL_BUDGET};
use crate::work::project::Project;
use crate::work::spec;
use crate::{fsutil, settings};

/// Check that ralph can run here, and say how to fix what is off.
///
/// Checks: claude is installed (and its version); the Stop hook is installed
/// (in which settings file) and points at an existing ralph; the /ralph-setup
/// command is installed; a task tracker (br or bd) is available; RALPH_LOOP is
/// not exported in your shell (it would end every interactive session); the
/// project is in a git repository (the loop measures progress with git); the
/// project's ralph files are present and within their token budget; what
/// the project's files would run is approved (`ralph trust`; a configured
/// claude is named, and run for its version only once approved).
/// Exits 1 if any check fails.
#[derive(Debug, Args)]
pub struct Doctor {
    /// Print the checks as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
    /// The command (or action) that fixes a failed check.
    fix: Option<String>,
}

fn check(name: &'static str, ok: bool, detail: impl Into<String>, fix: Option<&str>) -> Check {
    Check {
        name,
        ok,
        detail: detail.into(),
        fix: if ok { None } else { fix.map(String::from) },
    }
}

fn claude_version(bin: &Path) -> Option<String> {
    let mut child = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if child.try_wait().ok()?.is_some() {
            let out = child.wait_with_output().ok()?;
            return Some(String::from_utf8_lossy(&out.stdout).trim().to_string());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

impl Run for Doctor {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let mut checks = Vec::new();

        // The config's own settings: only an approved config counts, and an
        // unapproved claude is named, never run (doctor runs nothing a
        // repository chose).
        let cfg = crate::config::load(&project.config());
        let standing = cfg
            .as_ref()
            .ok()
            .map(|c| crate::trust::approval::standing(&project.root, c));
        let approved = matches!(standing, Some(crate::trust::approval::Standing::Approved));
        let configured = cfg.as_ref().ok().and_then(|c| c.claude.clone());
        let claude = match &configured {
            Some(p) if p.components().count() > 1 => Some(project.root.join(p)),
            Some(p) => which::which(p).ok(),
            None => which::which("claude").ok(),
        };
        let version = match (&configured, approved) {
            (Some(_), false) => None,
            _ => claude.as_deref().and_then(claude_version),
        };
        checks.push(match (&claude, &version) {
            (Some(p), None) if configured.is_some() && !approved => check(
                "claude",
                false,
                format!(
                    "{} (named by .ralph/config.toml, not approved: not run)",
                    p.display()
                ),
                Some("read .ralph/config.toml, then `ralph trust`"),
            ),
            (Some(p), Some(v)) => check("claude", true, format!("{v} at {}", p.display()), None),
            (Some(p), None) => check(
                "claude",
                false,
                format!("{} does not answer --version", p.display()),
                Some("npm install -g @anthropic-ai/claude-code"),
            ),
            (None, _) => check(
                "claude",
                false,
                "claude is not on PATH",
                Some("npm install -g @anthropic-ai/claude-code"),
            ),
        });

        let (hooks, via_plugin) = hook_target::installed_hooks(&project.root);
        let hook_check = match hooks.first() {
            Some((role, path, cmd)) => {
                let bin = settings::shell_words(cmd)
                    .and_then(|w| w.into_iter().next())
                    .unwrap_or_default();
                let exists = if bin.contains('/') {
                    Path::new(&bin).is_file()
                } else {
                    which::which(&bin).is_ok()
                };
                if exists {
                    check(
                        "hook",
                        true,
                        format!("in the {role} settings {}: {cmd}", path.display()),
                        None,
                    )
                } else {
                    check(
                        "hook",
                        false,
                        format!(
                            "the hook in {} runs {bin}, which does not exist",
                            path.display()
                        ),
                        Some("ralph install-hook"),
                    )
                }
            }
            None if via_plugin && which::which("ralph").is_ok() => check(
                "hook",
                true,
                "through the ralph plugin (ralph is on PATH)",
                None,
            ),
            None if via_plugin => check(
                "hook",
                false,
                "the ralph plugin is enabled but `ralph` is not on PATH",
                Some("put the ralph binary on PATH: ./install.sh in the ralph source folder"),
            ),
            None => check(
                "hook",
                false,
                "no ralph Stop hook in the user, project or local settings",
                Some("ralph install-hook"),
            ),
        };
        checks.push(hook_check);

        let claude_dir = user_settings_path()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        let command = claude_dir
            .map(|d| d.join("commands/ralph-setup.md"))
            .filter(|p| p.is_file());
        checks.push(match (command, via_plugin) {
            (Some(p), _) => check(
                "slash-command",
                true,
                format!("/ralph-setup from {}", p.display()),
                None,
            ),
            (None, true) => check(
                "slash-command",
                true,
                "/ralph:ralph-setup from the ralph plugin",
                None,
            ),
            (None, false) => check(
                "slash-command",
                false,
                "/ralph-setup is not installed",
                Some("ralph install-command"),
            ),
        });

        let tracker = ["br", "bd"]
            .into_iter()
            .find_map(|t| which::which(t).ok().map(|p| (t, p)));
        checks.push(match tracker {
            Some((t, p)) => check("tracker", true, format!("{t} at {}", p.display()), None),
            None => check(
                "tracker",
                false,
                "neither br nor bd is on PATH (verify-sync cannot check tasks)",
                Some(crate::work::tracker::INSTALL_HINT),
            ),
        });

        let exported = std::env::var("RALPH_LOOP").is_ok_and(|v| v == "1");
        checks.push(check(
            "environment",
            !exported,
            if exported { "RALPH_LOOP=1 is set in your shell: every claude you start would end after its first turn" } else { "RALPH_LOOP is not set in your shell" },
            Some("unset RALPH_LOOP, and remove its export from your shell profile"),
        ));

        let git = crate::run::progress::in_git(&project.root);
        checks.push(check(
            "git",
            git,
            if git {
                format!("{} is in a git repository", project.root.display())
            } else {
                format!(
                    "{} is not in a git repository: `ralph loop` measures progress with git and refuses to start",
                    project.root.display()
                )
            },
            Some("git init && git add -A && git commit -m start"),
        ));

        // Confined sessions: can Claude Code's sandbox run here? A failure
        // only when the project asks for confinement.
        let wants = crate::config::load(&project.config())
            .ok()
            .and_then(|c| c.confined)
            .unwrap_or(false);
        checks.push(
            match crate::run::confine::unavailable(|p| which::which(p).is_ok()) {
                None => check(
                    "confined",
                    true,
                    "Claude Code's sandbox can run here: `ralph loop --confined` works",
                    None,
                ),
                Some(why) => check(
                    "confined",
                    !wants,
                    format!(
                        "`ralph loop --confined` cannot run here{}: {why}",
                        if wants {
                            " (and .ralph/config.toml asks for it)"
                        } else {
                            ""
                        }
                    ),
                    Some("apt-get install bubblewrap socat (or your system's packages of them)"),
                ),
            },
        );

        checks.push(match (&cfg, &standing) {
            (Err(e), _) => check(
                "config",
                false,
                format!("{e:#}"),
                Some("fix .ralph/config.toml"),
            ),
            (Ok(c), Some(s)) => {
                let parts = crate::trust::approval::describe(
                    &crate::trust::approval::project_parts(&project.root, c),
                );
                let ok = !matches!(s, crate::trust::approval::Standing::NotApproved { .. });
                check(
                    "config",
                    ok,
                    if parts.is_empty() {
                        format!(
                            "{}: nothing in it runs programs or allows more",
                            project.config().display()
                        )
                    } else {
                        format!(
                            "{} {}: {}{}",
                            project.config().display(),
                            s.text(),
                            parts.join("; "),
                            if ok {
                                ""
                            } else {
                                " (`ralph loop` refuses to run until approved)"
                            }
                        )
                    },
                    Some("read it, then `ralph trust`"),
                )
            }
            (Ok(_), None) => unreachable!("a loaded config has a standing"),
        });
        // Shown, never run: doctor is read-only.
        checks.push(match crate::work::gate::Gate::of(&project) {
            Err(e) => check(
                "gate",
                false,
                format!("{e:#}"),
                Some("fix [gate] in .ralph/config.toml"),
            ),
            Ok(None) => check(
                "gate",
                true,
                "no [gate] commands: COMPLETE rests on the spec and tracker alone (add `[gate] commands = [\"...\"]` to .ralph/config.toml)",
                None,
            ),
            Ok(Some(g)) => {
                let missing = crate::work::gate::missing_programs(&g, &project.root);
                let list = g
                    .commands
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if missing.is_empty() {
                    check("gate", true, format!("COMPLETE must pass {list}"), None)
                } else {
                    check(
                        "gate",
                        false,
                        format!("{list}: not found: {}", missing.join(", ")),
                        Some("install them, or change [gate] commands in .ralph/config.toml"),
                    )
                }
            }
        });

        let mut missing = Vec::new();
        let mut over = Vec::new();
        let mut unreadable = Vec::new();
        let mut total = 0;
        let mut spec_text = None;
        for (name, limit) in BUDGETS {
            // A file that cannot be read is a failed check, not an abort.
            match fsutil::read_optional(&project.ralph_dir().join(name)) {
                Err(e) => unreadable.push(format!("{e:#}")),
                Ok(None) => missing.push(name),
                Ok(Some(t)) => {
                    if name == "spec.md" {
                        spec_text = Some(t.clone());
                    }
                    let n = budget::estimate(&t);
                    total += n;
                    if n > limit {
                        over.push(format!("{name} ~{n}/{limit}"));
                    }
                }
            }
        }
        if total > TOTAL_BUDGET {
            over.push(format!("total ~{total}/{TOTAL_BUDGET}"));
        }
        let problems = spec_text
            .map(|t| spec::parse(&t).problems.len())
            .unwrap_or(0);
        checks.push(if !unreadable.is_empty() {
            check(
                "project",
                false,
                unreadable.join("; "),
                Some("make them plain UTF-8 text files (`ralph init --force` writes fresh ones)"),
            )
        } else if !missing.is_empty() {
            check(
                "project",
                false,
                format!(
                    "missing in {}: {}",
                    project.ralph_dir().display(),
                    missing.join(", ")
                ),
                Some("ralph init (or /ralph-setup in Claude Code)"),
            )
        } else if !over.is_empty() {
            check(
                "project",
                false,
                format!("over the token budget: {}", over.join(", ")),
                Some("shorten them; `ralph budget` shows the figures"),
            )
        } else if problems > 0 {
            check(
                "project",
                false,
                format!("{problems} broken checkbox line(s) in the spec"),
                Some("ralph status (lists them with line numbers)"),
            )
        } else {
            check(
                "project",
                true,
                format!(
                    "spec, readme and prompt in {} (~{total} tokens)",
                    project.ralph_dir().display()
                ),
                None,
            )
        });

        let failed = checks.iter().filter(|c| !c.ok).count();
        if self.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({"ok": failed == 0, "checks": checks})
                )?
            );
        } else {
            for c in &checks {
                outln!(
                    "{} {:<14} {}",
                    if c.ok { "ok  " } else { "FAIL" },
                    c.name,
                    crate::output::visible_line(&c.detail)
                );
                if let Some(f) = &c.fix {
                    outln!("     {:<14} fix: {f}", "");
                }
            }
            outln!(
                "{}",
                if failed == 0 {
                    "All checks passed.".to_string()
                } else {
                    format!("{failed} check(s) failed.")
                }
            );
        }
        if failed == 0 {
            Ok(ExitStatus::Success)
        } else {
            Ok(ExitStatus::from(1))
        }
    }
}
