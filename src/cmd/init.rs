use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::work::project::Project;
use crate::{errln, outln};

pub const TEMPLATES: [(&str, &str); 4] = [
    ("spec.md", include_str!("../templates/spec.md")),
    ("readme.md", include_str!("../templates/readme.md")),
    ("prompt.md", include_str!("../templates/prompt.md")),
    ("learnings.md", include_str!("../templates/learnings.md")),
];

const CONFIG: &str = include_str!("../templates/config.toml");

/// The GitHub Actions workflow (`--github-actions`), before where its jobs
/// install ralph from is filled in.
const WORKFLOW: &str = include_str!("../templates/github/ralph.yml");

/// Where `--github-actions` writes it.
pub const WORKFLOW_PATH: &str = ".github/workflows/ralph.yml";

/// Where the workflow's jobs install ralph from (`--ralph-from`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RalphFrom {
    /// A git repository and a tag of it (`cargo install --git --tag`).
    Git { url: String, tag: String },
    /// A folder of this repository with ralph's source (`cargo install --path`).
    Path(String),
}

/// Characters a source may have: it goes into the workflow's YAML and an
/// expression as it is, so nothing that could end a quote or start one.
fn plain(s: &str, extra: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c) || extra.contains(c))
}

/// `--ralph-from` (and `--ralph-tag`) read: a git URL with its tag, or a
/// relative path inside the repository. Pure.
pub fn ralph_from(from: &str, tag: Option<&str>) -> Result<RalphFrom, String> {
    let url = from.contains("://") || from.starts_with("git@");
    if url {
        // A user or password in the URL would go into the workflow, a
        // committed file (an https URL's user is where a token goes too;
        // ssh's `git@` is no secret). Not said back: it may be a token.
        let authority = from
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or_default())
            .unwrap_or_default();
        let userinfo = authority.rsplit_once('@').map(|(u, _)| u);
        if userinfo.is_some_and(|u| from.starts_with("https://") || u.contains(':')) {
            return Err(
                "--ralph-from: a git URL with a user or password in it would be written into the workflow, which is committed: give the repository's URL without them"
                    .to_string(),
            );
        }
        let scheme_ok = ["https://", "ssh://", "git@"]
            .iter()
            .any(|p| from.starts_with(p));
        if !scheme_ok || !plain(from, ":@~+") {
            return Err(format!(
                "--ralph-from {:?} is not a git URL the workflow can use: give https://..., ssh://... or git@host:path, with letters, digits and ./_-~:@+ only",
                crate::output::visible_line(from)
            ));
        }
        let Some(tag) = tag else {
            return Err(format!(
                "--ralph-from {from} is a git URL: say which release with --ralph-tag TAG (a tag of that repository, e.g. v{})",
                env!("CARGO_PKG_VERSION")
            ));
        };
        if !plain(tag, "+") || tag.contains("..") {
            return Err(format!(
                "--ralph-tag {:?} is not a tag name the workflow can use (letters, digits and ./_-+)",
                crate::output::visible_line(tag)
            ));
        }
        return Ok(RalphFrom::Git {
            url: from.to_string(),
            tag: tag.to_string(),
        });
    }
    if tag.is_some() {
        return Err(format!(
            "--ralph-tag goes with a git URL; --ralph-from {:?} is a path in the repository",
            crate::output::visible_line(from)
        ));
    }
    let path = from.trim_start_matches("./").trim_end_matches('/');
    if !plain(path, "")
        || path.starts_with('/')
        || path.split('/').any(|p| p == ".." || p.is_empty())
    {
        return Err(format!(
            "--ralph-from {:?} is neither a git URL nor a relative path inside the repository (letters, digits and ./_- only, no ..)",
            crate::output::visible_line(from)
        ));
    }
    Ok(RalphFrom::Path(path.to_string()))
}

/// The workflow as written, installing ralph from `from`. Pure.
pub fn workflow(from: &RalphFrom) -> String {
    let (git, tag, path, key) = match from {
        RalphFrom::Git { url, tag } => (
            url.as_str(),
            tag.as_str(),
            "",
            "${{ env.RALPH_GIT }}-${{ env.RALPH_REF }}".to_string(),
        ),
        RalphFrom::Path(p) => (
            "",
            "",
            p.as_str(),
            format!("${{{{ hashFiles('{p}/**') }}}}"),
        ),
    };
    WORKFLOW
        .replace("@RALPH_GIT@", git)
        .replace("@RALPH_REF@", tag)
        .replace("@RALPH_PATH@", path)
        .replace("@RALPH_KEY@", &key)
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    crate::exit::Stop::with(ExitStatus::Usage, msg.to_string())
}

/// Write the project's ralph files from built-in templates.
///
/// Writes .ralph/spec.md, .ralph/readme.md, .ralph/prompt.md,
/// .ralph/learnings.md (what sessions learn, kept short; the loop itself
/// keeps .ralph/progress.md, each session's entry),
/// .ralph/.gitignore and (if there is none) .ralph/config.toml, whose [gate]
/// example names the project's own checks that must pass for COMPLETE.
/// The non-interactive way to what /ralph-setup writes. Existing files are
/// kept unless --force is given; then edit the spec's steps. Says how to set
/// up the task tracker (br), and offers to run `br init` where br is
/// installed and the project has none (asked at a terminal only).
#[derive(Debug, Args)]
pub struct Init {
    /// Overwrite existing spec, readme and prompt (never the learnings).
    #[arg(long)]
    force: bool,

    /// Also write .github/workflows/ralph.yml: the spec's steps worked on
    /// GitHub Actions, a machine per step, merged into one pull request
    /// (README: "Many machines: GitHub Actions"). Kept if it exists, unless
    /// --force
    #[arg(long)]
    github_actions: bool,

    /// With --github-actions: where its jobs install ralph from: a git URL
    /// (with --ralph-tag), or a folder of this repository with ralph's
    /// source
    #[arg(long, value_name = "URL|PATH", requires = "github_actions")]
    ralph_from: Option<String>,

    /// With --ralph-from URL: the tag of that repository to build
    #[arg(long, value_name = "TAG", requires = "ralph_from")]
    ralph_tag: Option<String>,
}

/// What of `.ralph/` stays out of git: the run's own state (its records,
/// the sentinels, the gate's hand-over, the draft a `ralph plan` session
/// writes before it is checked), which a commit would carry into every
/// later checkout and worktree. The spec, prompt, readme and config
/// are the project's and belong in git.
pub const IGNORED: [&str; 9] = [
    "runs/",
    "COMPLETE",
    "WAITING",
    "answer.md",
    "gate-failed.md",
    "review-failed.md",
    "review-verdict.json",
    "loop.lock",
    "plan-draft/",
];

/// The lines of `IGNORED` missing from `.ralph/.gitignore` added; returns
/// whether it changed the file.
pub fn ensure_gitignore(project: &Project) -> Result<bool> {
    let path = project.ralph_dir().join(".gitignore");
    // A link (a clone's, to your secrets) is replaced, never read: its
    // target's text would land in the repository.
    let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    let text = if link {
        String::new()
    } else {
        crate::fsutil::read_regular_capped(&path, 64 << 10)?.unwrap_or_default()
    };
    let missing: Vec<&str> = IGNORED
        .into_iter()
        .filter(|l| !text.lines().any(|x| x.trim() == *l))
        .collect();
    if missing.is_empty() && !link {
        return Ok(false);
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    for l in missing {
        new.push_str(l);
        new.push('\n');
    }
    std::fs::create_dir_all(project.ralph_dir())?;
    crate::fsutil::atomic_write(&path, new.as_bytes(), 0o644)?;
    Ok(true)
}

impl Run for Init {
    fn run(&self) -> Result<ExitStatus> {
        let project =
            Project::at(&std::env::current_dir().context("cannot read the current folder")?);
        // Checked before anything is written.
        let from = match (&self.ralph_from, self.github_actions) {
            (_, false) => None,
            (None, true) => {
                return Err(usage(format!(
                    "--github-actions needs --ralph-from: where the workflow's jobs install ralph from, a git URL and its tag (--ralph-from https://github.com/OWNER/ralph.git --ralph-tag v{}) or a folder of this repository with ralph's source (--ralph-from tools/ralph)",
                    env!("CARGO_PKG_VERSION")
                )));
            }
            (Some(f), true) => {
                let from = ralph_from(f, self.ralph_tag.as_deref()).map_err(usage)?;
                if let RalphFrom::Path(p) = &from
                    && !project.root.join(p).join("Cargo.toml").is_file()
                {
                    return Err(usage(format!(
                        "--ralph-from {p}: there is no Cargo.toml in {}, so the jobs could not build ralph from it",
                        project.root.join(p).display()
                    )));
                }
                Some(from)
            }
        };
        let dir = project.ralph_dir();
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut kept = Vec::new();
        for (name, text) in TEMPLATES {
            let path = dir.join(name);
            // The learnings are the sessions' own: never replaced.
            if path.exists() && self.force && name == "learnings.md" {
                outln!(
                    "kept {} (the sessions' own: --force does not replace it)",
                    path.display()
                );
                continue;
            }
            if path.exists() && !self.force {
                kept.push(name);
                continue;
            }
            let verb = if path.exists() { "overwrote" } else { "wrote" };
            crate::fsutil::atomic_write(&path, text.as_bytes(), 0o644)?;
            outln!("{verb} {}", path.display());
        }
        write_config(&project)?;
        if ensure_gitignore(&project)? {
            outln!(
                "updated {} ({})",
                dir.join(".gitignore").display(),
                IGNORED.join(", ")
            );
        }
        if let Some(from) = &from
            && !self.write_workflow(&project, from)?
        {
            kept.push(WORKFLOW_PATH);
        }
        if !kept.is_empty() {
            outln!(
                "kept the existing {} (use --force to overwrite)",
                kept.join(", ")
            );
        }
        // Not a failure: the files are written all the same, and `git init`
        // can come after. But a loop refuses to start outside git, so it is
        // said now, with the fix, rather than at the first `ralph loop`.
        let in_git = crate::run::progress::in_git(&project.root);
        if !in_git {
            errln!(
                "ralph init: warning: {} is not in a git repository, and a loop needs one (sessions commit, and ralph measures their progress with git): run `git init` here",
                project.root.display()
            );
        }
        let tracker = tracker_step(&project)?;
        let mut next = Vec::new();
        if !in_git {
            next.push(
                "`git init` here, then commit what is here (`git add -A && git commit -m start`)."
                    .to_string(),
            );
        }
        // A spec with steps already (`ralph plan`, an import, your own) is
        // there to read, not to write.
        let steps = crate::fsutil::read_optional(&project.spec())
            .ok()
            .flatten()
            .map_or(0, |t| {
                let steps = crate::work::spec::parse(&t).steps;
                // The template's placeholders are steps to write, not to read.
                match steps
                    .iter()
                    .any(|s| crate::work::readiness::is_placeholder(&s.title))
                {
                    true => 0,
                    false => steps.len(),
                }
            });
        next.push(match steps {
            0 => "Write the steps in .ralph/spec.md (or run /ralph-setup in Claude Code).".into(),
            n => format!(
                "Read the {} in .ralph/spec.md: is it the work?",
                crate::output::counted(n as u64, "step", "steps")
            ),
        });
        next.push(tracker);
        next.push("`ralph doctor` checks that a loop here can finish; then `ralph loop`.".into());
        outln!("Next:");
        for (i, step) in next.iter().enumerate() {
            outln!("  {}. {step}", i + 1);
        }
        Ok(ExitStatus::Success)
    }
}

impl Init {
    /// `--github-actions`: the workflow, written unless one is there (or
    /// with `--force`); `false` when it was kept.
    fn write_workflow(&self, project: &Project, from: &RalphFrom) -> Result<bool> {
        let path = project.root.join(WORKFLOW_PATH);
        if path.exists() && !self.force {
            return Ok(false);
        }
        let verb = if path.exists() { "overwrote" } else { "wrote" };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        crate::fsutil::atomic_write(&path, workflow(from).as_bytes(), 0o644)?;
        outln!(
            "{verb} {}: commit and push it, add the secret ANTHROPIC_API_KEY, then run it from the Actions tab",
            path.display()
        );
        Ok(true)
    }
}

/// Loop settings, with the gate as a commented example: written only where
/// there is none (never replaced, even with --force).
fn write_config(project: &Project) -> Result<()> {
    let config = project.config();
    if config.exists() {
        return Ok(());
    }
    crate::fsutil::atomic_write(&config, CONFIG.as_bytes(), 0o644)?;
    // Written by ralph at the user's word: approved as written, unless the
    // project's Claude Code files ask for something too (those the user
    // approves with `ralph trust`, having read them).
    let cfg = crate::config::load(&config)?;
    let approval = crate::trust::approval::project_parts(&project.root, &cfg);
    // (Codex's, pi's and opencode's files that can be disabled are left for the user
    // to read and approve too.)
    if approval.len() == crate::trust::approval::parts(&cfg).len() {
        crate::trust::approval::approve_config(&project.root, &cfg)?;
    }
    outln!("wrote {}", config.display());
    Ok(())
}

/// The tracker's part of the set-up, said (and `br init` run, where br is
/// there, the project has no tracker yet and the user says yes).
fn tracker_step(project: &Project) -> Result<String> {
    const TASKS: &str = "`br create \"<step>\" --type task` for each step, and write the id it prints at the end of the step's line (`- [ ] **1** Add the parser [proj-a1b]`), so each step is checked against its task";
    if project.root.join(".beads").is_dir() {
        return Ok(format!("The tracker (.beads) is set up: {TASKS}."));
    }
    let Ok(br) = which::which("br") else {
        return Ok(format!(
            "Optional, recommended: a tracker, br. {}; then `br init` here and {TASKS}.",
            crate::work::tracker::INSTALL_HINT
        ));
    };
    if ask("br is installed but not set up here. Run `br init` now? [y/N] ")? {
        let status = std::process::Command::new(&br)
            .arg("init")
            .current_dir(&project.root)
            .status()
            .context("cannot run br init")?;
        if status.success() {
            return Ok(format!("br is set up here: {TASKS}."));
        }
        return Ok(format!(
            "`br init` failed ({status}): run it yourself, then {TASKS}."
        ));
    }
    Ok(format!("Set up the tracker: `br init` here, then {TASKS}."))
}

/// A yes from the user at the terminal; no terminal, no yes.
fn ask(question: &str) -> Result<bool> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(false);
    }
    crate::output::out(format_args!("{question}"));
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ralph_is_installed_from_a_git_url_and_tag_or_a_folder_of_the_repository() {
        let git = |u: &str, t: &str| RalphFrom::Git {
            url: u.into(),
            tag: t.into(),
        };
        // (from, tag, what it reads as, or the start of its error)
        let rows: Vec<(&str, Option<&str>, Result<RalphFrom, &str>)> = vec![
            (
                "https://github.com/me/ralph.git",
                Some("v1.2.0"),
                Ok(git("https://github.com/me/ralph.git", "v1.2.0")),
            ),
            (
                "git@github.com:me/ralph.git",
                Some("v1"),
                Ok(git("git@github.com:me/ralph.git", "v1")),
            ),
            (
                "tools/ralph",
                None,
                Ok(RalphFrom::Path("tools/ralph".into())),
            ),
            (
                "./tools/ralph/",
                None,
                Ok(RalphFrom::Path("tools/ralph".into())),
            ),
            (
                "https://github.com/me/ralph.git",
                None,
                Err(
                    "--ralph-from https://github.com/me/ralph.git is a git URL: say which release with --ralph-tag",
                ),
            ),
            (
                "http://example.com/r.git",
                Some("v1"),
                Err("--ralph-from \"http://example.com/r.git\" is not a git URL"),
            ),
            (
                "https://x/r.git\"; rm -rf /",
                Some("v1"),
                Err("--ralph-from"),
            ),
            ("https://x/r.git", Some("v1'}}"), Err("--ralph-tag")),
            (
                "tools/ralph",
                Some("v1"),
                Err("--ralph-tag goes with a git URL"),
            ),
            (
                "../elsewhere",
                None,
                Err("--ralph-from \"../elsewhere\" is neither"),
            ),
            (
                "/abs/path",
                None,
                Err("--ralph-from \"/abs/path\" is neither"),
            ),
            ("a') }}", None, Err("--ralph-from")),
            (
                "ssh://git@github.com/me/ralph.git",
                Some("v1"),
                Ok(git("ssh://git@github.com/me/ralph.git", "v1")),
            ),
            (
                "https://me:ghp_s3cret@github.com/me/ralph.git",
                Some("v1"),
                Err("--ralph-from: a git URL with a user or password"),
            ),
            (
                "https://ghp_s3cret@github.com/me/ralph.git",
                None,
                Err("--ralph-from: a git URL with a user or password"),
            ),
            (
                "ssh://git:ghp_s3cret@github.com/me/ralph.git",
                Some("v1"),
                Err("--ralph-from: a git URL with a user or password"),
            ),
        ];
        for (from, tag, want) in rows {
            match (ralph_from(from, tag), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{from}"),
                (Err(e), Err(start)) => {
                    assert!(e.starts_with(start), "{from}: {e}");
                    // The workflow is committed, and errors end up in logs.
                    assert!(!e.contains("s3cret"), "{e}");
                }
                (got, want) => panic!("{from}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn the_workflow_names_the_source_it_was_given_and_no_other() {
        let w = workflow(&RalphFrom::Git {
            url: "https://github.com/me/ralph.git".into(),
            tag: "v9".into(),
        });
        assert!(
            w.contains("RALPH_GIT: \"https://github.com/me/ralph.git\""),
            "{w}"
        );
        assert!(w.contains("RALPH_REF: \"v9\""));
        assert!(w.contains("RALPH_PATH: \"\""));
        assert!(!w.contains("@RALPH_"), "every placeholder filled");
        let w = workflow(&RalphFrom::Path("tools/ralph".into()));
        assert!(w.contains("RALPH_PATH: \"tools/ralph\""));
        assert!(
            w.contains("key: ralph-${{ runner.os }}-${{ hashFiles('tools/ralph/**') }}"),
            "{w}"
        );
        assert!(!w.contains(env!("CARGO_PKG_REPOSITORY")));
    }
}
