use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use super::init::TEMPLATES;
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::output::visible_line;
use crate::work::import::{self, Format, Plan, fix_plan, prd};
use crate::work::project::Project;
use crate::work::tracker;

/// The most ralph reads of each file it imports.
const CAP: u64 = 1 << 20;

/// The names looked for in a folder given as PATH.
const NAMES: [&str; 5] = [
    "prd.json",
    "fix_plan.md",
    "@fix_plan.md",
    "scripts/ralph/prd.json",
    ".ralph/fix_plan.md",
];

/// Import another Ralph's plan: a snarktank prd.json or a
/// ralph-claude-code fix_plan.md.
///
/// PATH is the file (or a folder holding one: prd.json, fix_plan.md,
/// @fix_plan.md, scripts/ralph/prd.json, .ralph/fix_plan.md); which format
/// it is, ralph tells by its content. It writes .ralph/spec.md (one step per
/// user story or plan item, in their order, numbered, the story's or item's
/// own id first in its text; passing stories and checked items checked;
/// the plan's headings kept), and from the files beside it .ralph/readme.md
/// (the project's rules from PROMPT.md and AGENT.md / @AGENT.md, and the
/// documents in specs/), .ralph/progress.md (progress.txt) and
/// .ralph/learnings.md (progress.txt's "Codebase Patterns"). Where the
/// project has a tracker (.beads), each step gets its task (its title; the
/// acceptance criteria or the item's sub-bullets as description), done ones
/// closed, and the task ids end the steps' lines. It shows what it will
/// write and asks first (--yes: no question). It replaces ralph init's
/// templates, never your own files (--force does). A file it cannot read
/// whole is refused, naming the place, and nothing is written.
#[derive(Debug, Args)]
pub struct Import {
    /// The prd.json or fix_plan.md (or the folder holding it)
    path: PathBuf,

    /// Write without asking
    #[arg(long)]
    yes: bool,

    /// Replace ralph's files even where they are your own, not templates
    #[arg(long)]
    force: bool,

    /// Which tracker to use [default: br if installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<tracker::Kind>,
}

fn usage(m: impl Into<String>) -> anyhow::Error {
    Stop::with(ExitStatus::Usage, m)
}

fn refuse(m: impl Into<String>) -> anyhow::Error {
    Stop::with(ExitStatus::Failure, m)
}

/// A file beside the plan, read whole or refused.
fn read(path: &Path) -> Result<Option<String>> {
    crate::fsutil::read_optional_capped(path, CAP).map_err(|e| {
        refuse(format!(
            "{}: nothing imported",
            visible_line(&format!("{e:#}"))
        ))
    })
}

/// The file PATH names: itself, or the one plan in the folder it names.
fn the_file(path: &Path) -> Result<PathBuf> {
    if !path.exists() {
        return Err(usage(format!("{}: no such file or folder", path.display())));
    }
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let found: Vec<PathBuf> = NAMES
        .iter()
        .map(|n| path.join(n))
        .filter(|p| p.is_file())
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(usage(format!(
            "{}: no {} there; name the file",
            path.display(),
            NAMES.join(", ")
        ))),
        many => Err(usage(format!(
            "{} holds more than one plan ({}); name the one to import",
            path.display(),
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A path as the readme should name it: from the project's root if inside.
fn shown(path: &Path, root: &Path) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    abs.strip_prefix(&root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// The plan, and the names of the files its parts came from.
struct Read {
    plan: Plan,
    rules_from: Vec<String>,
    progress_from: Option<String>,
}

fn read_plan(file: &Path, root: &Path) -> Result<Read> {
    let name = file.display().to_string();
    let text = read(file)?.ok_or_else(|| usage(format!("{name}: no such file")))?;
    let format = import::recognise(&text).ok_or_else(|| {
        usage(format!(
            "{name} is neither a snarktank prd.json (a JSON object with userStories) nor a ralph-claude-code fix plan (Markdown with `- [ ]` items)"
        ))
    })?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let refused = |e: import::Refused| {
        refuse(format!(
            "{}; nothing imported",
            visible_line(&e.to_string())
        ))
    };
    let mut rules_from = Vec::new();
    let mut rules = Vec::new();
    let (mut plan, progress_from) = match format {
        Format::Prd => {
            let p = dir.join("progress.txt");
            let progress = read(&p)?;
            let from = progress.as_ref().map(|_| shown(&p, root));
            (
                prd::parse(&name, &text, progress.as_deref()).map_err(refused)?,
                from,
            )
        }
        Format::FixPlan => {
            let plan = fix_plan::parse(&name, &text).map_err(refused)?;
            let p = dir.join("PROMPT.md");
            if let Some(prompt) = read(&p)? {
                let r = fix_plan::rules_of_prompt(&prompt);
                if !r.is_empty() {
                    rules_from.push(shown(&p, root));
                    rules.push(r);
                }
            }
            (plan, None)
        }
    };
    for agent in ["AGENT.md", "@AGENT.md"] {
        let p = dir.join(agent);
        if let Some(a) = read(&p)? {
            rules_from.push(shown(&p, root));
            rules.push(fix_plan::demote(a.trim()));
            break;
        }
    }
    if let Some(notes) = plan.rules.take() {
        rules_from.push(shown(file, root));
        rules.push(notes);
    }
    plan.rules = (!rules.is_empty()).then(|| rules.join("\n\n"));
    if format == Format::FixPlan {
        plan.references = specs_in(&dir.join("specs"), root);
    }
    Ok(Read {
        plan,
        rules_from,
        progress_from,
    })
}

/// The documents in `specs/` (two levels, at most 50), sorted.
fn specs_in(dir: &Path, root: &Path) -> Vec<String> {
    let mut out: Vec<PathBuf> = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Ok(inner) = std::fs::read_dir(&p) {
                out.extend(inner.flatten().map(|e| e.path()).filter(|p| p.is_file()));
            }
        } else if p.is_file() {
            out.push(p);
        }
    }
    let mut out: Vec<String> = out.iter().map(|p| shown(p, root)).collect();
    out.sort();
    out.truncate(50);
    out
}

/// What is at a ralph file now.
#[derive(PartialEq)]
enum There {
    Nothing,
    Template,
    Yours,
}

fn what_is_at(path: &Path, template: Option<&str>) -> Result<There> {
    Ok(match crate::fsutil::read_optional(path)? {
        None => There::Nothing,
        Some(t) if t.trim().is_empty() || template.is_some_and(|x| x.trim() == t.trim()) => {
            There::Template
        }
        Some(_) => There::Yours,
    })
}

fn template(name: &str) -> &'static str {
    TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("a template of init's")
}

/// A yes at the terminal; with no terminal, nobody to ask.
fn ask(path: &Path) -> Result<bool> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(usage(format!(
            "nothing written: nobody to ask here (no terminal); read the plan above and run `ralph import {} --yes`",
            path.display()
        )));
    }
    crate::output::out(format_args!("Write these? [y/N] "));
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

impl Run for Import {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let file = the_file(&self.path)?;
        let Read {
            plan,
            rules_from,
            progress_from,
        } = read_plan(&file, &project.root)?;
        let source = shown(&file, &project.root);
        let beads = if project.root.join(".beads").is_dir() {
            let kind = self.tracker.or_else(|| {
                crate::config::load(&project.config())
                    .ok()
                    .and_then(|c| c.tracker)
            });
            Some(tracker::detect(kind, &project.root).map_err(|e| {
                refuse(format!(
                    "the project has a tracker (.beads), but {e}; nothing imported"
                ))
            })?)
        } else {
            None
        };
        // Read back before anything is made: with stand-in task ids, the
        // spec must read as exactly these steps.
        let stand_ins: Vec<String> = (1..=plan.total()).map(|n| format!("imp-{n}")).collect();
        let check = beads.as_ref().map(|_| stand_ins.as_slice());
        import::render_spec(&plan, &source, check).map_err(|e| {
            refuse(format!(
                "{}; nothing imported",
                visible_line(&e.to_string())
            ))
        })?;

        let dir = project.ralph_dir();
        if dir.exists() {
            crate::fsutil::real_dir(&dir)?;
        }
        let readme_from: Vec<String> = rules_from.clone();
        let mut targets: Vec<(PathBuf, Option<&str>, String)> = vec![(
            project.spec(),
            Some(template("spec.md")),
            format!(
                "{}, {} checked{}",
                crate::output::counted(plan.total() as u64, "step", "steps"),
                plan.done(),
                match plan.headings() {
                    0 => String::new(),
                    n => format!(
                        " under {}",
                        crate::output::counted(n as u64, "heading", "headings")
                    ),
                }
            ),
        )];
        if plan.rules.is_some() || !plan.references.is_empty() {
            let mut what = Vec::new();
            if !readme_from.is_empty() {
                what.push(format!(
                    "the project's rules from {}",
                    readme_from.join(", ")
                ));
            }
            if !plan.references.is_empty() {
                what.push(crate::output::counted(
                    plan.references.len() as u64,
                    "reference document",
                    "reference documents",
                ));
            }
            targets.push((
                dir.join("readme.md"),
                Some(template("readme.md")),
                what.join("; "),
            ));
        }
        if plan.rules.is_some() {
            targets.push((
                dir.join("rules.md"),
                None,
                format!("the project's rules from {}", readme_from.join(", ")),
            ));
        }
        let from = progress_from.as_deref().unwrap_or("progress.txt");
        if let Some(p) = &plan.progress {
            targets.push((
                project.progress_log(),
                None,
                format!("{} lines from {from}", p.lines().count()),
            ));
        }
        if let Some(l) = &plan.learnings {
            targets.push((
                project.learnings(),
                Some(template("learnings.md")),
                format!("{} lines from {from} (its patterns)", l.lines().count()),
            ));
        }
        outln!(
            "Import {} ({}):",
            visible_line(&source),
            plan.format.describe()
        );
        let mut yours = Vec::new();
        for (path, tpl, what) in &targets {
            let there = what_is_at(path, *tpl)?;
            let verb = match there {
                There::Nothing => "new",
                There::Template => "replaces ralph init's template",
                There::Yours => {
                    yours.push(path.display().to_string());
                    "replaces your own"
                }
            };
            outln!("  {}: {} ({verb})", path.display(), visible_line(what));
        }
        // What a loop needs that the plan does not give: init's templates.
        let with_rules = plan.rules.is_some() || !plan.references.is_empty();
        let fill: Vec<PathBuf> = ["prompt.md", "readme.md"]
            .iter()
            .filter(|n| **n != "readme.md" || !with_rules)
            .map(|n| dir.join(n))
            .filter(|p| !p.exists())
            .collect();
        for p in &fill {
            outln!("  {}: ralph's template (new)", p.display());
        }
        match &beads {
            Some(b) => outln!(
                "  {}: {} to make, {} of them closed",
                b.name(),
                crate::output::counted(plan.total() as u64, "task", "tasks"),
                plan.done()
            ),
            None => outln!(
                "  no tracker set up here (no .beads): the steps are checked by their boxes alone, their details kept under them"
            ),
        }
        if !yours.is_empty() && !self.force {
            return Err(refuse(format!(
                "nothing written: {} your own, not ralph init's template (--force replaces {})",
                yours.join(", "),
                if yours.len() == 1 { "it" } else { "them" }
            )));
        }
        if !self.yes && !ask(&self.path)? {
            return Err(refuse("nothing written"));
        }

        let tasks = match &beads {
            None => None,
            Some(b) => {
                let mut made: Vec<String> = Vec::new();
                for step in plan.steps() {
                    let description = step.details.join("\n");
                    let description = (!description.trim().is_empty()).then_some(description);
                    let id = b
                        .create(&step.title(), None, description.as_deref())
                        .map_err(|e| {
                            refuse(format!(
                                "making the task of {} failed: {e}; no file written{}",
                                visible_line(&step.place),
                                if made.is_empty() {
                                    String::new()
                                } else {
                                    format!(" (tasks made before it: {})", made.join(" "))
                                }
                            ))
                        })?;
                    made.push(id);
                }
                let done: Vec<String> = plan
                    .steps()
                    .zip(&made)
                    .filter(|(s, _)| s.done)
                    .map(|(_, id)| id.clone())
                    .collect();
                b.close(&done, &format!("done before the import from {source}"))
                    .map_err(|e| {
                        refuse(format!(
                            "{e}; no file written (tasks made: {})",
                            made.join(" ")
                        ))
                    })?;
                Some(made)
            }
        };
        let spec = import::render_spec(&plan, &source, tasks.as_deref())
            .map_err(|e| refuse(visible_line(&e.to_string())))?;
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let write = |path: &Path, text: &str| -> Result<()> {
            crate::fsutil::atomic_write(path, text.as_bytes(), 0o644)
                .with_context(|| format!("cannot write {}", path.display()))?;
            outln!("wrote {}", path.display());
            Ok(())
        };
        if with_rules {
            let text = import::render_readme(&plan, template("readme.md"), &readme_from.join(", "));
            write(&dir.join("readme.md"), &text)?;
        }
        if let Some(text) = import::render_rules(&plan, &readme_from.join(", ")) {
            write(&dir.join("rules.md"), &text)?;
        }
        if let Some(text) = import::render_progress(&plan, from) {
            write(&project.progress_log(), &text)?;
        }
        if let Some(text) = import::render_learnings(&plan, template("learnings.md"), from) {
            write(&project.learnings(), &text)?;
        }
        for p in &fill {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            write(p, template(name))?;
        }
        super::init::ensure_gitignore(&project)?;
        write(&project.spec(), &spec)?;
        if let Some(t) = &tasks {
            outln!(
                "made {} in {} ({} closed)",
                crate::output::counted(t.len() as u64, "task", "tasks"),
                beads.as_ref().map_or("the tracker", |b| b.name()),
                plan.done()
            );
        }
        outln!(
            "Next: `ralph doctor` (can a loop here finish?), commit .ralph/, then `ralph loop`."
        );
        Ok(ExitStatus::Success)
    }
}
