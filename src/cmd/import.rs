use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use super::init::TEMPLATES;
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::output::{counted, visible_line};
use crate::work::import::{self, Format, Plan, fix_plan, prd};
use crate::work::project::Project;
use crate::work::tracker::{self, Beads};

/// The most ralph reads of each file it imports.
const CAP: u64 = 1 << 20;
/// The longest task description given to the tracker (its command line).
const MAX_DESCRIPTION: usize = 64 << 10;

/// The names looked for in a folder given as PATH.
const NAMES: [&str; 5] = [
    "prd.json",
    "fix_plan.md",
    "@fix_plan.md",
    "scripts/ralph/prd.json",
    ".ralph/fix_plan.md",
];

/// Import another Ralph's plan: a snarktank prd.json or a
/// ralph-claude-code fix_plan.md; or, with `github`, the repository's open
/// GitHub issues.
///
/// `ralph import github` makes a step of each open issue labelled `ralph`
/// (--label) of the repository `origin` names, oldest first, its task the
/// issue (`- [ ] **1** Title [#12]`); pull requests are left out. It needs
/// a token that may read the issues (GH_TOKEN, GITHUB_TOKEN, or `gh auth
/// token`; GITHUB_API_URL for GitHub Enterprise), and, to have the loop
/// check and close them, `tracker = "github"` in .ralph/config.toml. (A
/// folder named github is `./github`.)
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
    /// The prd.json or fix_plan.md (or the folder holding it), or `github`
    path: PathBuf,

    /// With `github`: the label of the issues to import
    #[arg(long, value_name = "LABEL", default_value = crate::work::tracker::github::DEFAULT_LABEL)]
    label: String,

    /// Write without asking
    #[arg(long)]
    yes: bool,

    /// Replace ralph's files even where they are your own, not templates
    #[arg(long)]
    force: bool,

    /// Which tracker to use [default: br if installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<crate::config::Kind>,
}

fn usage(m: impl Into<String>) -> anyhow::Error {
    Stop::with(ExitStatus::Usage, m)
}

fn refuse(m: impl Into<String>) -> anyhow::Error {
    Stop::with(ExitStatus::Failure, m)
}

/// A file beside the plan, read whole or refused; never through a link (a
/// clone's `progress.txt` pointing at your secrets would be copied into
/// `.ralph/`, for you to commit).
fn read(path: &Path) -> Result<Option<String>> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refuse(format!(
            "{} is a link: ralph reads no link beside a plan; nothing imported",
            visible_line(&path.display().to_string())
        )));
    }
    crate::fsutil::read_regular_capped(path, CAP).map_err(|e| {
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

/// The plan, and where its parts came from.
struct Read {
    plan: Plan,
    /// The plan's file, as the readme and spec name it.
    source: String,
    rules_from: Vec<String>,
    progress_from: Option<String>,
    /// Why the documents beside the plan were left out, if they were.
    skipped: Option<String>,
}

impl Read {
    fn rules_from(&self) -> String {
        self.rules_from.join(", ")
    }

    fn progress_from(&self) -> &str {
        self.progress_from.as_deref().unwrap_or("progress.txt")
    }

    /// Whether the readme gets rows of its own: the rules', the documents'.
    fn with_rules(&self) -> bool {
        self.plan.rules.is_some() || !self.plan.references.is_empty()
    }
}

/// A plan the parser refused, as the command says it.
fn nothing_imported(e: import::Refused) -> anyhow::Error {
    refuse(format!(
        "{}; nothing imported",
        visible_line(&e.to_string())
    ))
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
    // Each part of the rules with the file it came from, in the readme's order.
    let mut rules: Vec<(String, String)> = Vec::new();
    let (mut plan, progress_from) = match format {
        Format::Prd => read_prd(&name, &text, dir, root)?,
        Format::FixPlan => {
            let plan = fix_plan::parse(&name, &text).map_err(nothing_imported)?;
            rules.extend(prompt_rules(dir, root)?);
            (plan, None)
        }
        // Told by content, a file is never GitHub's issues.
        Format::GitHub => unreachable!("`recognise` reads files only"),
    };
    rules.extend(agent_rules(dir, root)?);
    if let Some(notes) = plan.rules.take() {
        rules.push((shown(file, root), notes));
    }
    let (rules_from, rules): (Vec<String>, Vec<String>) = rules.into_iter().unzip();
    plan.rules = (!rules.is_empty()).then(|| rules.join("\n\n"));
    let mut skipped = None;
    if format == Format::FixPlan {
        let specs = dir.join("specs");
        match specs_folder(&specs, root) {
            Ok(()) => plan.references = specs_in(&specs, root),
            Err(why) => skipped = Some(why),
        }
    }
    Ok(Read {
        plan,
        source: shown(file, root),
        rules_from,
        progress_from,
        skipped,
    })
}

/// A prd.json's plan with the progress.txt beside it, and that file's name.
fn read_prd(name: &str, text: &str, dir: &Path, root: &Path) -> Result<(Plan, Option<String>)> {
    let p = dir.join("progress.txt");
    let progress = read(&p)?;
    let from = progress.as_ref().map(|_| shown(&p, root));
    let plan = prd::parse(name, text, progress.as_deref()).map_err(nothing_imported)?;
    Ok((plan, from))
}

/// The project's own part of the PROMPT.md beside a fix plan, and its name.
fn prompt_rules(dir: &Path, root: &Path) -> Result<Option<(String, String)>> {
    let p = dir.join("PROMPT.md");
    let Some(prompt) = read(&p)? else {
        return Ok(None);
    };
    let rules = fix_plan::rules_of_prompt(&prompt);
    Ok((!rules.is_empty()).then(|| (shown(&p, root), rules)))
}

/// The first agent file beside the plan, headings one level down, and its name.
fn agent_rules(dir: &Path, root: &Path) -> Result<Option<(String, String)>> {
    for agent in ["AGENT.md", "@AGENT.md"] {
        let p = dir.join(agent);
        if let Some(a) = read(&p)? {
            return Ok(Some((shown(&p, root), fix_plan::demote(a.trim()))));
        }
    }
    Ok(None)
}

/// Whether the documents in `specs` may be listed: not when it is a link,
/// nor when its real path leaves the project (a linked folder above it): a
/// clone's link names what is outside it, and the readme would send every
/// session there. `Err`: the line that says so.
fn specs_folder(specs: &Path, root: &Path) -> std::result::Result<(), String> {
    let Ok(m) = std::fs::symlink_metadata(specs) else {
        return Ok(());
    };
    let name = visible_line(&specs.display().to_string());
    let left_out = "its files are not listed as reference documents";
    if m.file_type().is_symlink() {
        return Err(format!(
            "{name} is a link: {left_out} (ralph lists nothing through a link)"
        ));
    }
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let at = real(specs);
    if !at.starts_with(real(root)) {
        return Err(format!(
            "{name} lies outside the project (at {}): {left_out}",
            visible_line(&at.display().to_string())
        ));
    }
    Ok(())
}

/// The documents in `specs/` (two levels, at most 50), sorted.
fn specs_in(dir: &Path, root: &Path) -> Vec<String> {
    let mut out: Vec<PathBuf> = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // Links are left out: a clone's link names what is outside it.
    let real = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| !m.file_type().is_symlink())
    };
    for e in entries.flatten() {
        let p = e.path();
        match real(&p) {
            Some(m) if m.is_dir() => {
                if let Ok(inner) = std::fs::read_dir(&p) {
                    out.extend(
                        inner
                            .flatten()
                            .map(|e| e.path())
                            .filter(|p| real(p).is_some_and(|m| m.is_file())),
                    );
                }
            }
            Some(m) if m.is_file() => out.push(p),
            _ => {}
        }
    }
    let mut out: Vec<String> = out.iter().map(|p| shown(p, root)).collect();
    out.sort();
    out.truncate(50);
    out
}

/// Read back before anything is made: with stand-in task ids, the spec
/// must read as exactly these steps.
fn check_reads_back(read: &Read, with_tasks: bool) -> Result<()> {
    let stand_ins: Vec<String> = (1..=read.plan.total())
        .map(|n| format!("imp-{n}"))
        .collect();
    let tasks = with_tasks.then_some(stand_ins.as_slice());
    import::render_spec(&read.plan, &read.source, tasks).map_err(nothing_imported)?;
    Ok(())
}

/// What is at a ralph file now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum There {
    Nothing,
    Template,
    Yours,
}

impl There {
    /// An empty file or init's template loses nothing when replaced.
    pub(crate) fn of(now: Option<&str>, template: Option<&str>) -> There {
        match now {
            None => There::Nothing,
            Some(t) if t.trim().is_empty() || template.is_some_and(|x| x.trim() == t.trim()) => {
                There::Template
            }
            Some(_) => There::Yours,
        }
    }

    fn verb(self) -> &'static str {
        match self {
            There::Nothing => "new",
            There::Template => "replaces ralph init's template",
            There::Yours => "replaces your own",
        }
    }
}

pub(crate) fn template(name: &str) -> &'static str {
    TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("a template of init's")
}

/// What the import puts in a file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Holds {
    Spec,
    Readme,
    Rules,
    Progress,
    Learnings,
    /// Init's template of this name, which a loop needs and the plan does
    /// not give: written only where there is no file.
    Template(&'static str),
}

impl Holds {
    /// The template ralph init wrote there, which the import may replace.
    fn init_template(self) -> Option<&'static str> {
        match self {
            Holds::Spec => Some(template("spec.md")),
            Holds::Readme => Some(template("readme.md")),
            Holds::Learnings => Some(template("learnings.md")),
            Holds::Rules | Holds::Progress | Holds::Template(_) => None,
        }
    }
}

/// A file the import would write: where, what it holds, said in a line.
#[derive(Debug, PartialEq)]
struct Target {
    path: PathBuf,
    holds: Holds,
    what: String,
}

/// The files the import would write, in the order it shows and writes
/// them (the spec shown first, written last).
fn targets(read: &Read, project: &Project) -> Vec<Target> {
    let plan = &read.plan;
    let dir = project.ralph_dir();
    let target = |path: PathBuf, holds, what: String| Target { path, holds, what };
    let mut out = vec![target(project.spec(), Holds::Spec, spec_what(plan))];
    if read.with_rules() {
        out.push(target(
            dir.join("readme.md"),
            Holds::Readme,
            readme_what(read),
        ));
    }
    if plan.rules.is_some() {
        let what = format!("the project's rules from {}", read.rules_from());
        out.push(target(dir.join("rules.md"), Holds::Rules, what));
    }
    let from = read.progress_from();
    if let Some(p) = &plan.progress {
        let what = format!("{} lines from {from}", p.lines().count());
        out.push(target(project.progress_log(), Holds::Progress, what));
    }
    if let Some(l) = &plan.learnings {
        let what = format!("{} lines from {from} (its patterns)", l.lines().count());
        out.push(target(project.learnings(), Holds::Learnings, what));
    }
    for name in ["prompt.md", "readme.md"] {
        if name != "readme.md" || !read.with_rules() {
            let what = "ralph's template".to_string();
            out.push(target(dir.join(name), Holds::Template(name), what));
        }
    }
    out
}

fn spec_what(plan: &Plan) -> String {
    let under = match plan.headings() {
        0 => String::new(),
        n => format!(" under {}", counted(n as u64, "heading", "headings")),
    };
    format!(
        "{}, {} checked{under}",
        counted(plan.total() as u64, "step", "steps"),
        plan.done()
    )
}

fn readme_what(read: &Read) -> String {
    let mut what = Vec::new();
    if !read.rules_from.is_empty() {
        what.push(format!("the project's rules from {}", read.rules_from()));
    }
    let documents = read.plan.references.len();
    if documents > 0 {
        what.push(counted(
            documents as u64,
            "reference document",
            "reference documents",
        ));
    }
    what.join("; ")
}

/// What is at each target now; init's templates are dropped where a file is.
fn look(targets: Vec<Target>) -> Result<Vec<(Target, There)>> {
    let mut out = Vec::new();
    for t in targets {
        let there = match t.holds {
            Holds::Template(_) if t.path.exists() => continue,
            Holds::Template(_) => There::Nothing,
            holds => There::of(
                crate::fsutil::read_optional(&t.path)?.as_deref(),
                holds.init_template(),
            ),
        };
        out.push((t, there));
    }
    Ok(out)
}

/// What is read from where, and each file it would write (and how).
fn show_targets(read: &Read, targets: &[(Target, There)]) {
    outln!(
        "Import {} ({}):",
        visible_line(&read.source),
        read.plan.format.describe()
    );
    if let Some(why) = &read.skipped {
        outln!("  {why}");
    }
    for r in &read.plan.remarks {
        outln!("  {}", visible_line(r));
    }
    for (t, there) in targets {
        outln!(
            "  {}: {} ({})",
            t.path.display(),
            visible_line(&t.what),
            there.verb()
        );
    }
}

fn show(read: &Read, targets: &[(Target, There)], beads: Option<(&Beads, &Found)>) {
    show_targets(read, targets);
    match beads {
        Some((b, found)) => outln!("  {}: {}", b.name(), tasks_preview(&read.plan, found)),
        None => outln!(
            "  no tracker set up here (no .beads): the steps are checked by their boxes alone, their details kept under them"
        ),
    }
}

/// What the import will do in the tracker, as it will do it: the tasks
/// there already (an import before this one) are not made again, and a
/// preview that counted them as to make would promise what is not done.
fn tasks_preview(plan: &Plan, found: &Found) -> String {
    let reused = found.reused();
    let make = counted((plan.total() - reused) as u64, "task", "tasks");
    if reused == 0 {
        return format!("{make} to make, {} of them closed", plan.done());
    }
    format!(
        "{make} to make, {reused} there already under their titles (not made again), {} to close",
        found.to_close(plan)
    )
}

/// What every session reads that the import made larger than its token
/// budget (a large plan's spec, often): said, as `ralph budget` would.
pub(crate) fn say_over_budget(project: &Project) {
    use crate::work::budget::{BUDGETS, tokens_within};
    let learnings = [("learnings.md", crate::work::progress_log::LEARNINGS_BUDGET)];
    for (name, budget) in BUDGETS.iter().chain(&learnings) {
        let tokens = tokens_within(&project.ralph_dir().join(name), *budget);
        if tokens > *budget {
            outln!(
                "note: .ralph/{name} is ~{tokens} tokens, over its budget of {budget}: every session reads it (`ralph budget` shows the figures); shorten it before a long run"
            );
        }
    }
}

/// Why nothing may be written: files of the user's own, without --force.
fn refusal(targets: &[(Target, There)], force: bool) -> Option<String> {
    let yours: Vec<String> = targets
        .iter()
        .filter(|(_, there)| *there == There::Yours)
        .map(|(t, _)| t.path.display().to_string())
        .collect();
    if yours.is_empty() || force {
        return None;
    }
    Some(format!(
        "nothing written: {} {} your own, not ralph init's template (--force replaces {})",
        yours.join(", "),
        if yours.len() == 1 { "is" } else { "are" },
        if yours.len() == 1 { "it" } else { "them" }
    ))
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

/// The tasks already there for the plan's steps (an import before this
/// one), read before anything is shown: the preview says what the import
/// will do, and a task there is not made again.
struct Found {
    /// Per step, in order: its task there, if one is.
    ids: Vec<Option<String>>,
    /// The tasks the spec being replaced names, as the tracker has them.
    there: Vec<tracker::Issue>,
}

impl Found {
    fn reused(&self) -> usize {
        self.ids.iter().flatten().count()
    }

    /// Whether the task a step has there is open (closed ones stay closed).
    fn open(&self, id: &str) -> bool {
        !self.there.iter().any(|i| i.id == id && i.is_closed())
    }

    /// How many tasks the import will close: the done steps' tasks, made
    /// now or there and open.
    fn to_close(&self, plan: &Plan) -> usize {
        plan.steps()
            .zip(&self.ids)
            .filter(|(s, id)| s.done && id.as_deref().is_none_or(|id| self.open(id)))
            .count()
    }
}

fn find_tasks(beads: &Beads, plan: &Plan, named: &[String]) -> Result<Found> {
    tracker_takes(beads, plan)?;
    // A task there already under a step's title (an import before this
    // one) is that step's: made again, it would be there twice.
    let mut there = beads.snapshot(None).map(|s| s.issues).map_err(|e| {
        refuse(format!(
            "cannot read {}: {e}; nothing imported",
            beads.name()
        ))
    })?;
    // Only a task the spec being replaced names is a step's (an earlier
    // import's): one of your own, or one a clone planted, with a step's
    // title is neither reused nor closed.
    there.retain(|i| named.contains(&i.id));
    let titles: Vec<String> = plan.steps().map(|s| s.title()).collect();
    let ids = already_there(&titles, &there);
    Ok(Found { ids, there })
}

/// A task for each step that has none there, the done ones closed; their
/// ids, in step order.
fn make_tasks(beads: &Beads, plan: &Plan, source: &str, found: &Found) -> Result<Tasks> {
    let mut ids: Vec<String> = Vec::new();
    let mut made: Vec<String> = Vec::new();
    for (step, found) in plan.steps().zip(&found.ids) {
        if let Some(id) = found {
            ids.push(id.clone());
            continue;
        }
        let description = step.details.join("\n");
        let description = (!description.trim().is_empty()).then_some(description);
        let id = beads
            .create(&step.title(), None, description.as_deref())
            .map_err(|e| {
                refuse(format!(
                    "making the task of {} failed: {e}; no file written{}",
                    visible_line(&step.place),
                    made_before(&made)
                ))
            })?;
        made.push(id.clone());
        ids.push(id);
    }
    let done: Vec<String> = plan
        .steps()
        .zip(&ids)
        .filter(|(s, id)| s.done && found.open(id))
        .map(|(_, id)| id.clone())
        .collect();
    beads
        .close(&done, &format!("done before the import from {source}"))
        .map_err(|e| {
            refuse(format!(
                "{e}; no file written (tasks made: {})",
                made.join(" ")
            ))
        })?;
    Ok(Tasks {
        reused: ids.len() - made.len(),
        ids,
    })
}

/// Whether the tracker takes every step's text: checked before the first
/// task is made, so that none is left half-way.
fn tracker_takes(beads: &Beads, plan: &Plan) -> Result<()> {
    for step in plan.steps() {
        let (title, details) = (step.title(), step.details.join("\n"));
        if title.contains('\0') || details.contains('\0') || details.len() > MAX_DESCRIPTION {
            return Err(refuse(format!(
                "{}: its text holds a NUL, or its details pass {} KiB, which {} does not take; nothing imported",
                visible_line(&step.place),
                MAX_DESCRIPTION >> 10,
                beads.name()
            )));
        }
    }
    Ok(())
}

/// The tasks of the steps, in order, and how many of them were there
/// already.
struct Tasks {
    ids: Vec<String>,
    reused: usize,
}

/// The task ids the spec at `path` names (none where there is none).
fn named_tasks(path: &Path) -> Vec<String> {
    crate::fsutil::read_regular_capped(path, CAP)
        .ok()
        .flatten()
        .map(|t| {
            crate::work::spec::parse(&t)
                .steps
                .iter()
                .filter_map(|s| s.task.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// For each title, the id of a task `there` with that very title, each
/// task given to one step at most.
fn already_there(titles: &[String], there: &[tracker::Issue]) -> Vec<Option<String>> {
    let mut taken: Vec<&str> = Vec::new();
    titles
        .iter()
        .map(|t| {
            let i = there
                .iter()
                .find(|i| i.title == *t && !taken.contains(&i.id.as_str()))?;
            taken.push(&i.id);
            Some(i.id.clone())
        })
        .collect()
}

/// The tasks a failed create leaves behind, for the user to clean up.
fn made_before(made: &[String]) -> String {
    if made.is_empty() {
        String::new()
    } else {
        format!(" (tasks made before it: {})", made.join(" "))
    }
}

/// The text of a target other than the spec, if the plan gives one.
fn text_of(holds: Holds, read: &Read) -> Option<String> {
    let plan = &read.plan;
    match holds {
        // Rendered with the tasks' ids, by `write`.
        Holds::Spec => None,
        Holds::Readme => Some(import::render_readme(
            plan,
            template("readme.md"),
            &read.rules_from(),
        )),
        Holds::Rules => import::render_rules(plan, &read.rules_from()),
        Holds::Progress => import::render_progress(plan, read.progress_from()),
        Holds::Learnings => {
            import::render_learnings(plan, template("learnings.md"), read.progress_from())
        }
        Holds::Template(name) => Some(template(name).to_string()),
    }
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    crate::fsutil::atomic_write(path, text.as_bytes(), 0o644)
        .with_context(|| format!("cannot write {}", path.display()))?;
    outln!("wrote {}", path.display());
    Ok(())
}

/// The targets, then the .gitignore, the spec (with the tasks' ids) last.
fn write(
    project: &Project,
    read: &Read,
    targets: &[(Target, There)],
    tasks: Option<&[String]>,
) -> Result<()> {
    let spec = import::render_spec(&read.plan, &read.source, tasks)
        .map_err(|e| refuse(visible_line(&e.to_string())))?;
    let dir = project.ralph_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (t, _) in targets {
        if let Some(text) = text_of(t.holds, read) {
            write_file(&t.path, &text)?;
        }
    }
    super::init::ensure_gitignore(project)?;
    write_file(&project.spec(), &spec)
}

impl Import {
    /// The project's tracker, where it has one (.beads).
    fn beads(&self, project: &Project) -> Result<Option<Beads>> {
        project_tracker(project, self.tracker, "nothing imported")
    }
}

/// Whether `.beads` (there) is another project's tracker: a link, or a
/// folder with a `redirect` (a clone's, or one a session planted) would
/// send the tasks there, and have ralph close or delete that project's.
pub(crate) fn beads_elsewhere(dot_beads: &Path) -> bool {
    std::fs::symlink_metadata(dot_beads).is_ok_and(|m| !m.is_dir())
        || std::fs::symlink_metadata(dot_beads.join("redirect")).is_ok()
}

/// The project's tracker, where it has one (.beads); `nothing` ends a
/// refusal (what the command did not do).
pub(crate) fn project_tracker(
    project: &Project,
    kind: Option<crate::config::Kind>,
    nothing: &str,
) -> Result<Option<Beads>> {
    let dot_beads = project.root.join(".beads");
    if std::fs::symlink_metadata(&dot_beads).is_err() {
        return Ok(None);
    }
    if beads_elsewhere(&dot_beads) {
        return Err(refuse(format!(
            "{} is a link, or redirects elsewhere: the tasks would go to another project's tracker; {nothing}",
            dot_beads.display()
        )));
    }
    let kind = kind.or_else(|| {
        crate::config::load(&project.config())
            .ok()
            .and_then(|c| c.tracker)
    });
    let beads = tracker::detect(kind, &project.root).map_err(|e| {
        refuse(format!(
            "the project has a tracker (.beads), but {e}; {nothing}"
        ))
    })?;
    Ok(Some(beads))
}

/// The open issues labelled `label` of `origin`'s repository, as a plan,
/// and their tasks.
fn read_issues(project: &Project, label: &str) -> Result<(Read, Vec<String>)> {
    let failed = |e: tracker::TrackerError| refuse(format!("{e}; nothing imported"));
    let issues = crate::work::tracker::github::Issues::open(&project.root).map_err(failed)?;
    let repo = issues.repo().to_string();
    let open = issues.open_labelled(label).map_err(failed)?;
    if open.is_empty() {
        return Err(refuse(format!(
            "no open issue of {repo} is labelled `{}`; nothing imported",
            visible_line(label)
        )));
    }
    let (plan, tasks) = import::github::plan(&repo, label, &open);
    let read = Read {
        plan,
        source: format!("{repo}, labelled {label}"),
        rules_from: Vec::new(),
        progress_from: None,
        skipped: None,
    };
    Ok((read, tasks))
}

fn show_issues(read: &Read, targets: &[(Target, There)], tasks: &[String]) {
    show_targets(read, targets);
    let (first, last) = (&tasks[0], &tasks[tasks.len() - 1]);
    outln!(
        "  GitHub: {} ({first} … {last}), each a step's task, closed by ralph once its step is done",
        counted(tasks.len() as u64, "issue", "issues")
    );
}

impl Import {
    /// `ralph import github`: the same show, ask and write as a file's.
    fn run_github(&self, project: &Project) -> Result<ExitStatus> {
        let (read, tasks) = read_issues(project, &self.label)?;
        import::render_spec(&read.plan, &read.source, Some(&tasks)).map_err(nothing_imported)?;
        writable(project)?;
        let targets = look(targets(&read, project))?;
        show_issues(&read, &targets, &tasks);
        if let Some(why) = refusal(&targets, self.force) {
            return Err(refuse(why));
        }
        if !self.yes && !ask(&self.path)? {
            return Err(refuse("nothing written"));
        }
        write(project, &read, &targets, Some(&tasks))?;
        outln!(
            "imported {} as steps",
            counted(tasks.len() as u64, "issue", "issues")
        );
        let tracker = crate::config::load(&project.config())
            .ok()
            .and_then(|c| c.tracker);
        if !tracker::caps(tracker).issue_tasks {
            outln!(
                "Next: set `tracker = \"github\"` in .ralph/config.toml (then `ralph trust`), so that the loop checks the issues and closes each once its step is done; commit .ralph/, then `ralph loop`."
            );
        } else {
            outln!("Next: `ralph doctor`, commit .ralph/, then `ralph loop`.");
        }
        Ok(ExitStatus::Success)
    }
}

impl Run for Import {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        if self.path == Path::new("github") {
            return self.run_github(&project);
        }
        let read = read_plan(&the_file(&self.path)?, &project.root)?;
        let beads = self.beads(&project)?;
        check_reads_back(&read, beads.is_some())?;
        writable(&project)?;
        let targets = look(targets(&read, &project))?;
        let found = match &beads {
            Some(b) => Some(find_tasks(b, &read.plan, &named_tasks(&project.spec()))?),
            None => None,
        };
        show(&read, &targets, beads.as_ref().zip(found.as_ref()));
        if let Some(why) = refusal(&targets, self.force) {
            return Err(refuse(why));
        }
        if !self.yes && !ask(&self.path)? {
            return Err(refuse("nothing written"));
        }
        let tasks = match (&beads, &found) {
            (Some(b), Some(found)) => Some(make_tasks(b, &read.plan, &read.source, found)?),
            _ => None,
        };
        write(
            &project,
            &read,
            &targets,
            tasks.as_ref().map(|t| t.ids.as_slice()),
        )?;
        if let Some(t) = &tasks {
            say_tasks(
                t,
                beads.as_ref().map_or("the tracker", |b| b.name()),
                read.plan.done(),
            );
        }
        say_over_budget(&project);
        // The tracker's files changed too (its tasks): left uncommitted,
        // the spec names tasks a clone of the project does not have.
        let commit = if beads.is_some() {
            ".ralph/ and .beads/"
        } else {
            ".ralph/"
        };
        outln!(
            "Next: `ralph doctor` (can a loop here finish?), commit {commit}, then `ralph loop`."
        );
        Ok(ExitStatus::Success)
    }
}

/// `.ralph/` as ralph will write it: a real folder (no link planted in its
/// place), and no folder where a file of ralph's is to go, which would stop
/// the write half-way; refused before anything is made.
fn writable(project: &Project) -> Result<()> {
    let dir = project.ralph_dir();
    if std::fs::symlink_metadata(&dir).is_ok() {
        crate::fsutil::real_dir(&dir)?;
    }
    let gitignore = dir.join(".gitignore");
    if std::fs::symlink_metadata(&gitignore).is_ok_and(|m| m.is_dir()) {
        return Err(refuse(format!(
            "{} is a folder, where ralph keeps a file; nothing imported",
            gitignore.display()
        )));
    }
    Ok(())
}

/// The tasks made in the tracker, and those found there already.
fn say_tasks(t: &Tasks, tracker: &str, closed: usize) {
    let found = match t.reused {
        0 => String::new(),
        1 => ", 1 task there already under its title".to_string(),
        n => format!(", {n} tasks there already under their titles"),
    };
    outln!(
        "made {} in {tracker}{found} ({closed} closed)",
        counted((t.ids.len() - t.reused) as u64, "task", "tasks"),
    );
}

#[cfg(test)]
mod tests {

    /// A step takes the task with its very title, each task one step.
    #[test]
    fn a_step_takes_a_task_there_under_its_title_once() {
        let issue = |id: &str, title: &str| tracker::Issue {
            id: id.into(),
            status: tracker::Status::Open,
            title: title.into(),
            parent: None,
        };
        let there = [
            issue("a-1", "US-001 Login"),
            issue("a-2", "US-001 Login"),
            issue("a-3", "Other"),
        ];
        let titles = ["US-001 Login", "US-001 Login", "US-001 Login", "New"].map(String::from);
        assert_eq!(
            already_there(&titles, &there),
            [Some("a-1".into()), Some("a-2".into()), None, None]
        );
    }
    use super::*;
    use crate::work::import::{Section, Step};

    fn read(rules: Option<&str>, references: &[&str], progress: Option<&str>) -> Read {
        let step = |done| Step {
            id: None,
            text: "a".into(),
            done,
            details: vec![],
            place: "p:1".into(),
        };
        Read {
            plan: Plan {
                format: Format::Prd,
                intro: vec![],
                sections: vec![Section {
                    heading: Some((2, "H".into())),
                    steps: vec![step(true), step(false)],
                }],
                rules: rules.map(String::from),
                references: references.iter().map(|r| r.to_string()).collect(),
                progress: progress.map(String::from),
                learnings: progress.map(|_| "- a pattern".into()),
                remarks: vec![],
            },
            source: "prd.json".into(),
            rules_from: rules.map(|_| "AGENT.md".into()).into_iter().collect(),
            progress_from: None,
            skipped: None,
        }
    }

    fn shown(targets: &[Target]) -> Vec<(&str, Holds, &str)> {
        targets
            .iter()
            .map(|t| {
                let name = t.path.file_name().and_then(|n| n.to_str()).unwrap();
                (name, t.holds, t.what.as_str())
            })
            .collect()
    }

    #[test]
    fn a_bare_plan_gets_the_spec_and_inits_templates() {
        let t = targets(&read(None, &[], None), &Project::at(Path::new("/p")));
        assert_eq!(
            shown(&t),
            [
                ("spec.md", Holds::Spec, "2 steps, 1 checked under 1 heading"),
                (
                    "prompt.md",
                    Holds::Template("prompt.md"),
                    "ralph's template"
                ),
                (
                    "readme.md",
                    Holds::Template("readme.md"),
                    "ralph's template"
                ),
            ]
        );
        assert_eq!(t[0].path, Path::new("/p/.ralph/spec.md"));
    }

    #[test]
    fn rules_documents_and_progress_get_files_of_their_own() {
        let r = read(Some("Never push."), &["specs/a.md"], Some("l1\nl2"));
        let t = targets(&r, &Project::at(Path::new("/p")));
        assert_eq!(
            shown(&t)[1..],
            [
                (
                    "readme.md",
                    Holds::Readme,
                    "the project's rules from AGENT.md; 1 reference document"
                ),
                (
                    "rules.md",
                    Holds::Rules,
                    "the project's rules from AGENT.md"
                ),
                ("progress.md", Holds::Progress, "2 lines from progress.txt"),
                (
                    "learnings.md",
                    Holds::Learnings,
                    "1 lines from progress.txt (its patterns)"
                ),
                (
                    "prompt.md",
                    Holds::Template("prompt.md"),
                    "ralph's template"
                ),
            ]
        );
        let only_documents = read(None, &["specs/a.md"], None);
        assert_eq!(readme_what(&only_documents), "1 reference document");
    }

    #[test]
    fn only_an_empty_file_or_inits_template_may_be_replaced() {
        let tpl = Some("# Spec\n");
        assert_eq!(There::of(None, tpl), There::Nothing);
        assert_eq!(There::of(Some(" \n"), None), There::Template);
        assert_eq!(There::of(Some("# Spec"), tpl), There::Template);
        assert_eq!(There::of(Some("# Spec\n- [ ] mine\n"), tpl), There::Yours);
        assert_eq!(There::of(Some("log"), None), There::Yours);
    }

    #[test]
    fn the_users_own_files_stop_the_import_unless_forced() {
        let at = |name: &str, there| {
            let path = PathBuf::from(name);
            let t = Target {
                path,
                holds: Holds::Spec,
                what: String::new(),
            };
            (t, there)
        };
        let none = [at("a", There::Nothing), at("b", There::Template)];
        assert_eq!(refusal(&none, false), None);
        let one = [at("a", There::Yours), at("b", There::Template)];
        assert_eq!(
            refusal(&one, false).unwrap(),
            "nothing written: a is your own, not ralph init's template (--force replaces it)"
        );
        assert_eq!(refusal(&one, true), None);
        let two = [at("a", There::Yours), at("b", There::Yours)];
        assert!(
            refusal(&two, false)
                .unwrap()
                .ends_with("b are your own, not ralph init's template (--force replaces them)")
        );
    }

    #[test]
    fn a_failed_task_names_those_made_before_it() {
        assert_eq!(made_before(&[]), "");
        assert_eq!(
            made_before(&["br-1".into(), "br-2".into()]),
            " (tasks made before it: br-1 br-2)"
        );
    }

    #[test]
    fn a_specs_folder_is_listed_only_where_it_really_is_in_the_project() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("p");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(root.join("plan/specs")).unwrap();
        std::fs::create_dir_all(outside.join("specs")).unwrap();
        assert_eq!(specs_folder(&root.join("plan/specs"), &root), Ok(()));
        assert_eq!(specs_folder(&root.join("none/specs"), &root), Ok(()));
        std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("specs"), root.join("specs")).unwrap();
        let link = specs_folder(&root.join("specs"), &root).unwrap_err();
        assert!(link.ends_with("/p/specs is a link: its files are not listed as reference documents (ralph lists nothing through a link)"), "{link}");
        let away = specs_folder(&root.join("linked/specs"), &root).unwrap_err();
        assert!(
            away.contains("/p/linked/specs lies outside the project (at "),
            "{away}"
        );
    }
}
