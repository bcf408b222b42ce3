//! The two halves of a parallel run as commands any job runner can run,
//! each on a machine of its own (`ralph steps`, `ralph worker`, `ralph
//! merge`). What they share is branches on the remote and the tracker,
//! nothing else: the integration branch (`ralph/<spec's name>`) holds the
//! spec, a box checked as each step is merged; a step is worked on
//! `ralph/step-<slug>`, made from it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::parallel::claims::{self, Claim};
use crate::parallel::plan::{self, Item};
use crate::parallel::texts;
use crate::ship::push::Target;
use crate::work::spec::{self, Step};

/// Where each step's branch begins.
pub const STEP_PREFIX: &str = "ralph/step-";

/// A step's name in its branch: its task, label or text, lowercased to
/// letters, digits and dashes, then a hash of its key (two steps never
/// share one). Pure.
pub fn slug(step: &Step) -> String {
    let name = step
        .task
        .clone()
        .or(step.label.clone())
        .unwrap_or(step.title.clone());
    let mut s = String::new();
    for c in name.chars() {
        if s.len() >= 24 {
            break;
        }
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_end_matches('-');
    let h = crate::fsutil::fnv1a(step.key().as_bytes()) & 0xff_ffff;
    if s.is_empty() {
        format!("{h:06x}")
    } else {
        format!("{s}-{h:06x}")
    }
}

pub fn step_branch(slug: &str) -> String {
    format!("{STEP_PREFIX}{slug}")
}

/// The integration branch of a spec file: `ralph/` and its name
/// (`.ralph/spec.md`: `ralph/spec`). Pure.
pub fn integration_branch(spec: &Path) -> String {
    let stem = spec
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut s = String::new();
    for c in stem.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_matches('-');
    format!("ralph/{}", if s.is_empty() { "spec" } else { s })
}

/// A step as the commands say it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepInfo {
    /// Its name in its branch, and what `ralph worker` takes.
    pub slug: String,
    /// Who it is across edits of the spec (its task, label or text).
    pub key: String,
    /// Its line in the spec, as shown.
    pub title: String,
    pub branch: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

impl StepInfo {
    pub fn of(step: &Step) -> StepInfo {
        let slug = slug(step);
        StepInfo {
            branch: step_branch(&slug),
            slug,
            key: step.key(),
            title: crate::output::visible_line(&step.describe()),
            task: step.task.clone(),
        }
    }
}

/// The remote the commands use (`origin`), for `branch`, with a GitHub
/// token for its host when there is one (a job's checkout keeps no
/// credentials).
pub fn origin(root: &Path, branch: &str) -> Result<Target, String> {
    let t = crate::ship::push::target_for(root, "origin", branch)?;
    let token = crate::github::remote::parse(&t.url).and_then(|r| {
        let explicit = std::env::var_os("GITHUB_API_URL").is_some();
        crate::github::token::find(&r.host, explicit).map(|(t, _)| t)
    });
    Ok(t.with_token(token))
}

/// The integration branch as the commands start from it.
#[derive(Debug, Clone)]
pub struct Base {
    pub branch: String,
    pub commit: String,
    /// The remote has it (else it begins at HEAD, the spec given).
    pub on_remote: bool,
}

/// The integration branch's commit: the remote's, fetched; else HEAD,
/// with `spec` (when given and not the same) as its `.ralph/spec.md` in a
/// commit every job makes the same (same tree, parent, author and date).
pub fn base(root: &Path, remote: &Target, spec: Option<&Path>) -> Result<Base> {
    let branch = remote.branch.clone();
    let heads = remote
        .heads(root, &branch)
        .map_err(|e| anyhow::anyhow!("cannot list the remote's branches: {e}"))?;
    if let Some((_, sha)) = heads.iter().find(|(b, _)| *b == branch) {
        let into = format!("refs/ralph/base/{branch}");
        remote
            .fetch(root, &branch, &into)
            .map_err(|e| anyhow::anyhow!("cannot fetch {branch}: {e}"))?;
        return Ok(Base {
            branch,
            commit: sha.clone(),
            on_remote: true,
        });
    }
    let g = crate::git::at(root);
    let head = g.run(&["rev-parse", "HEAD"], &[])?;
    let commit = match spec {
        Some(path) => {
            let text = crate::fsutil::read_optional_capped(path, 4 << 20)?
                .with_context(|| format!("--spec {} does not exist", path.display()))?;
            let now = show(root, &head, ".ralph/spec.md");
            if now == text {
                head
            } else {
                with_spec(root, &head, &text)?
            }
        }
        None => head,
    };
    Ok(Base {
        branch,
        commit,
        on_remote: false,
    })
}

/// The most of a file at a commit that is read (a branch's spec is
/// another machine's, or a session's, writing).
const SHOWN_CAP: usize = 4 << 20;

/// A file at a commit (empty when it has none, or is larger than a spec
/// may be).
pub fn show(root: &Path, rev: &str, path: &str) -> String {
    crate::git::at(root)
        .bytes(&["show", &format!("{rev}:{path}")])
        .filter(|b| b.len() <= SHOWN_CAP)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// `head` with `.ralph/spec.md` as `text`, committed by ralph at `head`'s
/// own time: the same commit wherever it is made.
fn with_spec(root: &Path, head: &str, text: &str) -> Result<String> {
    let g = crate::git::at(root);
    let blob = g.run_with_input(&["hash-object", "-w", "--stdin"], text.as_bytes())?;
    let ralph = g
        .bytes(&["ls-tree", "-z", &format!("{head}:.ralph")])
        .unwrap_or_default();
    let mut ralph: Vec<u8> = crate::parallel::queue::entries(&ralph)
        .filter(|e| !e.ends_with(b"\tspec.md"))
        .flat_map(|e| e.iter().copied().chain([0]))
        .collect();
    ralph.extend(format!("100644 blob {blob}\tspec.md\0").as_bytes());
    let ralph_tree = g.run_with_input(&["mktree", "-z"], &ralph)?;
    let top = g.bytes(&["ls-tree", "-z", head]).unwrap_or_default();
    let mut top: Vec<u8> = crate::parallel::queue::entries(&top)
        .filter(|e| !e.ends_with(b"\t.ralph"))
        .flat_map(|e| e.iter().copied().chain([0]))
        .collect();
    top.extend(format!("040000 tree {ralph_tree}\t.ralph\0").as_bytes());
    let tree = g.run_with_input(&["mktree", "-z"], &top)?;
    let date = format!(
        "{} +0000",
        g.run(&["show", "-s", "--format=%ct", head], &[])?
    );
    let env = by_ralph_at(&date);
    g.with_env(&env).run(
        &[
            "commit-tree",
            "--no-gpg-sign",
            &tree,
            "-p",
            head,
            "-m",
            "ralph: the spec of this run",
        ],
        &[],
    )
}

/// Refuse to move a checkout with changes to tracked files.
pub fn refuse_changes(root: &Path, what: &str) -> Result<()> {
    let changed =
        crate::git::at(root).run(&["status", "--porcelain", "--untracked-files=no"], &[])?;
    if !changed.trim().is_empty() {
        bail!(
            "{what} works in a clean checkout (a job's fresh clone), and {} has changes that are not committed:\n{}",
            root.display(),
            crate::output::visible(changed.trim_end())
        );
    }
    Ok(())
}

/// The checkout on `branch` at `commit`: made there, or moved on to it
/// when it is behind; kept when it is ahead (work of ralph's not pushed
/// yet); refused when the two have parted.
pub fn switch(root: &Path, branch: &str, commit: &str) -> Result<()> {
    let g = crate::git::at(root);
    let local = format!("refs/heads/{branch}");
    let Ok(at) = g.run(&["rev-parse", "--verify", "--quiet", &local], &[]) else {
        g.run(
            &["switch", "--quiet", "--no-track", "-c", branch, commit],
            &[],
        )?;
        return Ok(());
    };
    if g.ok(&["merge-base", "--is-ancestor"], &[&at, commit]) {
        g.run(
            &["switch", "--quiet", "--no-track", "-C", branch, commit],
            &[],
        )?;
    } else if g.ok(&["merge-base", "--is-ancestor"], &[commit, &at]) {
        g.run(&["switch", "--quiet", branch], &[])?;
    } else {
        bail!(
            "branch {branch} here and the remote's have parted ({} and {}): push or remove the local one first",
            &at[..12.min(at.len())],
            &commit[..12.min(commit.len())]
        );
    }
    Ok(())
}

/// Where each step of the integration branch's spec is.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Steps {
    /// The integration branch, and whether the remote has it yet.
    pub branch: String,
    pub on_remote: bool,
    /// Steps a worker may start now.
    pub ready: Vec<StepInfo>,
    /// Done on their branches, for `ralph merge`.
    pub finished: Vec<StepInfo>,
    /// Open, not ready: they wait for others (and why, where they never can).
    pub waiting: Vec<StepInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub never: Vec<Never>,
    pub merged: usize,
    pub total: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Never {
    pub step: String,
    pub why: String,
}

/// A step branch on the remote: its commit, and whether its step is done
/// there (its box checked in its spec).
#[derive(Debug, Clone)]
pub struct StepBranch {
    pub sha: String,
    pub done: bool,
}

/// The remote's step branches of `steps`' open ones, fetched (to
/// `refs/ralph/steps/<slug>`), each with whether its step is done there.
pub fn pushed_steps(
    root: &Path,
    remote: &Target,
    steps: &[Step],
) -> Result<BTreeMap<String, StepBranch>> {
    let heads = step_heads(root, remote)?;
    pushed_steps_from(root, remote, steps, &heads)
}

/// The remote's step branches and their commits.
pub fn step_heads(root: &Path, remote: &Target) -> Result<Vec<(String, String)>> {
    remote
        .heads(root, STEP_PREFIX)
        .map_err(|e| anyhow::anyhow!("cannot list the remote's step branches: {e}"))
}

/// `pushed_steps` from step branches listed before (`step_heads`).
pub fn pushed_steps_from(
    root: &Path,
    remote: &Target,
    steps: &[Step],
    heads: &[(String, String)],
) -> Result<BTreeMap<String, StepBranch>> {
    let mut out = BTreeMap::new();
    for step in steps.iter().filter(|s| !s.checked) {
        let slug = slug(step);
        let branch = step_branch(&slug);
        let Some((_, sha)) = heads.iter().find(|(b, _)| *b == branch) else {
            continue;
        };
        let into = format!("refs/ralph/steps/{slug}");
        remote
            .fetch(root, &branch, &into)
            .map_err(|e| anyhow::anyhow!("cannot fetch {branch}: {e}"))?;
        let done = texts::checked(&show(root, sha, ".ralph/spec.md"), &step.key());
        out.insert(
            slug,
            StepBranch {
                sha: sha.clone(),
                done,
            },
        );
    }
    Ok(out)
}

/// The board of the integration branch's spec (`text`): ready by the same
/// scheduler as `--parallel` (`plan::next`), a step done on its branch
/// being busy (for the merge). Pure.
pub fn board(
    text: &str,
    order: &plan::Order,
    pushed: &BTreeMap<String, StepBranch>,
    base: &Base,
) -> Steps {
    let parsed = spec::parse(text);
    let items = items_of(text);
    let busy: BTreeSet<String> = parsed
        .steps
        .iter()
        .filter(|s| pushed.get(&slug(s)).is_some_and(|p| p.done))
        .map(Step::key)
        .collect();
    let next = plan::next(&items, order, &busy, usize::MAX);
    let mut out = Steps {
        branch: base.branch.clone(),
        on_remote: base.on_remote,
        total: parsed.steps.len(),
        merged: parsed.steps.iter().filter(|s| s.checked).count(),
        never: next
            .never
            .iter()
            .map(|(k, why)| Never {
                step: crate::output::visible_line(k),
                why: crate::output::visible_line(why),
            })
            .collect(),
        ..Steps::default()
    };
    for s in parsed.steps.iter().filter(|s| !s.checked) {
        let info = StepInfo::of(s);
        if busy.contains(&s.key()) {
            out.finished.push(info);
        } else if next.start.contains(&s.key()) {
            out.ready.push(info);
        } else {
            out.waiting.push(info);
        }
    }
    out
}

/// The scheduler's view of a spec's steps.
pub fn items_of(text: &str) -> Vec<Item> {
    spec::parse(text)
        .steps
        .iter()
        .zip(texts::phases(text))
        .map(|(s, phase)| Item {
            key: s.key(),
            task: s.task.clone(),
            merged: s.checked,
            phase,
        })
        .collect()
}

/// The step a worker is given: by its slug, else its key.
pub fn find<'a>(steps: &'a [Step], given: &str) -> Option<&'a Step> {
    steps
        .iter()
        .find(|s| slug(s) == given)
        .or_else(|| texts::find(steps, given))
}

/// Where this clone keeps the remote's claims it fetched.
const CLAIMS_SEEN: &str = "refs/ralph/remote-claims/";

/// The remote's claims (by step slug): each one's commit, and what it says
/// when it reads as a claim (capped: anyone who can push writes these).
pub fn claims(root: &Path, remote: &Target) -> Result<BTreeMap<String, (String, Option<Claim>)>> {
    remote
        .fetch_pruned(root, &format!("+{}*:{CLAIMS_SEEN}*", claims::NAMESPACE))
        .map_err(|e| anyhow::anyhow!("cannot fetch the remote's claims: {e}"))?;
    let g = crate::git::at(root);
    let listed = g.run(
        &[
            "for-each-ref",
            "--format=%(objectname) %(objecttype) %(refname)",
        ],
        &[CLAIMS_SEEN],
    )?;
    let mut out = BTreeMap::new();
    for line in listed.lines() {
        let mut words = line.splitn(3, ' ');
        let (Some(sha), Some(kind), Some(name)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let Some(slug) = name.strip_prefix(CLAIMS_SEEN) else {
            continue;
        };
        // A step's slug is letters, digits and dashes; another name is no
        // step's claim.
        if slug.is_empty() || !slug.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let size: usize = g
            .run(&["cat-file", "-s", sha], &[])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(usize::MAX);
        let claim = (kind == "commit" && size <= claims::CAP)
            .then(|| g.bytes(&["cat-file", "commit", sha]))
            .flatten()
            .and_then(|b| claims::parse(&b));
        out.insert(slug.to_string(), (sha.to_string(), claim));
    }
    Ok(out)
}

/// The environment of a commit ralph makes itself, dated `date`: the
/// same bytes on every machine for the same content.
fn by_ralph_at(date: &str) -> Vec<(String, String)> {
    [
        ("GIT_AUTHOR_NAME", "ralph"),
        ("GIT_AUTHOR_EMAIL", "ralph@localhost"),
        ("GIT_COMMITTER_NAME", "ralph"),
        ("GIT_COMMITTER_EMAIL", "ralph@localhost"),
        ("GIT_AUTHOR_DATE", date),
        ("GIT_COMMITTER_DATE", date),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A claim's commit, made here (on git's empty tree, by ralph): what is
/// pushed to the step's claim ref.
pub fn claim_commit(root: &Path, claim: &Claim) -> Result<String> {
    let g = crate::git::at(root);
    let tree = g.run_with_input(&["hash-object", "-t", "tree", "-w", "--stdin"], b"")?;
    let date = format!("{} +0000", claim.renewed);
    let env = by_ralph_at(&date);
    g.with_env(&env).run_with_input(
        &["commit-tree", "--no-gpg-sign", &tree],
        claim.message().as_bytes(),
    )
}

/// The step's claim on the remote set to `commit` (`None`: released), if
/// it is at `expect` now (`None`: if there is none): `Ok(false)` when
/// another machine was first.
pub fn swap_claim(
    root: &Path,
    remote: &Target,
    slug: &str,
    commit: Option<&str>,
    expect: Option<&str>,
) -> Result<bool> {
    remote
        .swap_ref(
            root,
            &format!("{}{slug}", claims::NAMESPACE),
            commit,
            expect,
        )
        .map_err(|e| anyhow::anyhow!("cannot push the claim on {slug}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# Spec\n\n- [x] **1** One\n- [ ] **2** Two: the API!\n- [ ] Three [bd-7x]\n\n## Later\n\n- [ ] Four\n";

    #[test]
    fn a_steps_branch_is_its_name_and_a_hash_of_its_key() {
        let steps = spec::parse(SPEC).steps;
        let slugs: Vec<String> = steps.iter().map(slug).collect();
        assert!(slugs[1].starts_with("2-"), "{slugs:?}");
        assert!(slugs[2].starts_with("bd-7x-"), "{slugs:?}");
        assert!(slugs[3].starts_with("four-"), "{slugs:?}");
        for s in &slugs {
            assert!(
                crate::git::check_worktree_name(&format!("step-{s}")).is_ok(),
                "{s}"
            );
            assert!(
                s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "{s}"
            );
        }
        let unique: BTreeSet<&String> = slugs.iter().collect();
        assert_eq!(unique.len(), slugs.len());
        // The same step, wherever its line is.
        let moved = spec::parse(&texts::first_open(SPEC, "Four")).steps;
        assert_eq!(slug(find(&moved, "Four").unwrap()), slugs[3]);
        assert_eq!(find(&steps, &slugs[2]).unwrap().key(), "bd-7x");
        assert_eq!(step_branch("a-1"), "ralph/step-a-1");
    }

    #[test]
    fn the_integration_branch_is_named_after_the_spec() {
        assert_eq!(
            integration_branch(Path::new(".ralph/spec.md")),
            "ralph/spec"
        );
        assert_eq!(
            integration_branch(Path::new("docs/Auth Rework.md")),
            "ralph/auth-rework"
        );
        assert_eq!(integration_branch(Path::new("--.md")), "ralph/spec");
    }

    #[test]
    fn ready_is_the_schedulers_and_a_step_done_on_its_branch_waits_for_the_merge() {
        let base = Base {
            branch: "ralph/spec".into(),
            commit: "c".into(),
            on_remote: true,
        };
        let steps = spec::parse(SPEC).steps;
        let none = BTreeMap::new();
        let b = board(SPEC, &plan::Order::Phases, &none, &base);
        let keys = |v: &[StepInfo]| v.iter().map(|s| s.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&b.ready), ["**2** Two: the API!", "bd-7x"]);
        assert_eq!(keys(&b.waiting), ["Four"], "the next section waits");
        assert_eq!((b.merged, b.total), (1, 4));
        let mut pushed = BTreeMap::new();
        pushed.insert(
            slug(&steps[1]),
            StepBranch {
                sha: "s".into(),
                done: true,
            },
        );
        pushed.insert(
            slug(&steps[2]),
            StepBranch {
                sha: "t".into(),
                done: false,
            },
        );
        let b = board(SPEC, &plan::Order::Phases, &pushed, &base);
        assert_eq!(keys(&b.finished), ["**2** Two: the API!"]);
        assert_eq!(keys(&b.ready), ["bd-7x"], "begun, not done: worked on");
    }
}
