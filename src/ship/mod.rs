//! Shipping a run's work: `--push` (its branch to its upstream, after each
//! session that committed and at the end) and `--pr` (a pull request for it).

pub mod body;
pub mod push;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::github::{Client, NewPull, PullUpdate, Repo};
use crate::history::events::{Event, PrChange};
use crate::history::records::PullShown;

/// The line the terminal shows of `event` (what `ship.jsonl` keeps too).
fn said(event: &Event) -> String {
    crate::history::said::said(event, None).unwrap_or_default()
}

/// Where a run's work goes: the shipping part of the settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shipping {
    /// Push the run's branch (`--push`; `--pr` pushes too).
    pub push: bool,
    /// Open or update a pull request for it (`--pr`); its body's `Closes
    /// #N` closes the steps' issues when it merges.
    pub pr: bool,
}

/// Where the pull request goes.
struct PrTo {
    client: Client,
    repo: Repo,
    base: String,
}

/// What the run ships, set up as it starts.
pub struct Ship {
    pub target: push::Target,
    pr: Option<PrTo>,
    /// `ship.jsonl` in the run folder.
    log: Option<PathBuf>,
}

/// One line of `ship.jsonl`.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    what: &'a str,
    ok: bool,
    detail: &'a str,
}

/// The run's end, as the pull request tells it.
pub struct End<'a> {
    pub facts: body::Facts<'a>,
}

impl Ship {
    /// Set up for `--push` (and `--pr`, which pushes too): the branch and
    /// its remote; for a pull request the token, the repository and its
    /// default branch, which the run's branch may not be. `Err` says what
    /// to fix, before any session runs.
    pub fn start(root: &Path, push: bool, pr: bool) -> Result<Option<Ship>, String> {
        if !(push || pr) {
            return Ok(None);
        }
        let target = push::target(root)?;
        let pr = if pr {
            Some(pr_for(root, &target)?)
        } else {
            None
        };
        Ok(Some(Ship {
            target,
            pr,
            log: None,
        }))
    }

    /// What `start` would refuse for a loop on `branch` (a worktree's, not
    /// made yet) of the checkout at `root`, pushing to `origin`: said
    /// before anything is made for it.
    pub fn check_for(root: &Path, branch: &str, pr: bool) -> Result<(), String> {
        let target = push::target_for(root, "origin", branch)?;
        if pr {
            pr_for(root, &target)?;
        }
        Ok(())
    }

    /// With `--pr`: the pull request's client and repository, and the
    /// run's branch (where a question is asked while the run waits).
    pub fn pull_request_to(&self) -> Option<(&Client, &Repo, &str)> {
        self.pr
            .as_ref()
            .map(|p| (&p.client, &p.repo, self.target.branch.as_str()))
    }

    /// Keep what is done in `log` (the run folder's `ship.jsonl`).
    pub fn log_to(&mut self, log: Option<PathBuf>) {
        self.log = log;
    }

    fn record(&self, what: &str, ok: bool, detail: &str) {
        let Some(log) = &self.log else { return };
        let line = Line {
            time: crate::timefmt::now(),
            what,
            ok,
            detail,
        };
        if let Ok(mut text) = serde_json::to_string(&line) {
            text.push('\n');
            let _ = crate::fsutil::append(log, text.as_bytes());
        }
    }

    /// Push the run's branch; told (`tell`: the run's one reporter, which
    /// journals it and says it) and recorded. `Err`: why a human must step
    /// in (the loop waits).
    pub fn push(&self, root: &Path, tell: &dyn Fn(Event)) -> Result<(), String> {
        let t = &self.target;
        let (branch, remote) = (t.branch.clone(), t.remote.clone());
        let (event, ok) = match t.push(root) {
            Ok(push::Pushed::Done) => {
                self.record("push", true, &format!("{branch} to {remote}"));
                let event = Event::Pushed {
                    branch,
                    remote,
                    rebased: false,
                    rejected: None,
                };
                (event, Ok(()))
            }
            Ok(push::Pushed::Rebased { rejected }) => {
                let event = Event::Pushed {
                    branch,
                    remote,
                    rebased: true,
                    rejected: Some(rejected),
                };
                self.record("rejected", true, &said(&event));
                (event, Ok(()))
            }
            Err(e) => {
                let why = e.to_string();
                self.record("push", false, &why);
                let event = Event::PushRefused {
                    branch,
                    remote,
                    why: why.clone(),
                };
                (event, Err(why))
            }
        };
        tell(event);
        ok
    }

    /// The run's end: its branch pushed, and its pull request opened or
    /// updated (a draft unless complete), each told. The push's refusal is
    /// `Err` (the loop waits); a pull request's refusal is said, with what
    /// to fix, and the pushed work stays.
    pub fn at_end(
        &self,
        root: &Path,
        tell: &dyn Fn(Event),
        end: &End,
    ) -> Result<Option<PullShown>, String> {
        self.push(root, tell)?;
        let Some(pr) = &self.pr else { return Ok(None) };
        match self.open_or_update(pr, end) {
            Ok((shown, made)) => {
                let change = if made {
                    PrChange::Opened
                } else {
                    PrChange::Updated
                };
                let event = Event::PullRequest {
                    number: shown.number,
                    url: shown.url.clone(),
                    draft: shown.draft,
                    change,
                };
                self.record("pull request", true, &said(&event));
                tell(event);
                Ok(Some(shown))
            }
            Err(e) => {
                let event = Event::PullRequestRefused {
                    why: e.to_string(),
                    branch: self.target.branch.clone(),
                };
                self.record("pull request", false, &said(&event));
                tell(event);
                Ok(None)
            }
        }
    }

    fn open_or_update(
        &self,
        pr: &PrTo,
        end: &End,
    ) -> Result<(PullShown, bool), crate::github::Error> {
        let branch = &self.target.branch;
        let title = body::title(end.facts.spec, branch);
        let facts = body::Facts {
            spec_url: Some(body::blob_url(
                &pr.repo.host,
                &pr.repo.owner,
                &pr.repo.name,
                branch,
                ".ralph/spec.md",
            )),
            ..end.facts.clone()
        };
        let text = body::body(&facts);
        let draft = !end.facts.complete;
        let (pull, made) = match pr.client.find_pull(&pr.repo, branch)? {
            Some(p) => {
                let change = PullUpdate {
                    title: Some(&title),
                    body: Some(&text),
                    base: None,
                };
                (pr.client.update_pull(&pr.repo, p.number, &change)?, false)
            }
            None => {
                let new = NewPull {
                    title: &title,
                    head: branch,
                    base: &pr.base,
                    body: &text,
                    draft,
                };
                match pr.client.create_pull(&pr.repo, &new) {
                    // A private repository on a plan without drafts: an
                    // open pull request rather than none.
                    Err(crate::github::Error::Unprocessable { message, .. })
                        if draft && message.to_lowercase().contains("draft") =>
                    {
                        let ready = NewPull {
                            draft: false,
                            ..new
                        };
                        let p = pr.client.create_pull(&pr.repo, &ready)?;
                        return Ok((
                            PullShown {
                                number: p.number,
                                url: crate::output::visible_line(&p.html_url),
                                draft: false,
                            },
                            true,
                        ));
                    }
                    r => (r?, true),
                }
            }
        };
        pr.client.set_draft(&pull, draft)?;
        Ok((
            PullShown {
                number: pull.number,
                url: crate::output::visible_line(&pull.html_url),
                draft,
            },
            made,
        ))
    }
}

/// The pull request's repository (from the remote's URL), client (token,
/// API base) and base branch (the repository's default, which the run's
/// branch may not be).
/// Where `target`'s pull request goes: refused on the default branch the
/// clone knows before anything asks GitHub, then as GitHub answers.
fn pr_for(root: &Path, target: &push::Target) -> Result<PrTo, String> {
    on_a_branch_of_its_own(root, target)?;
    pr_to(target)
}

/// The default branch as the clone knows it (`<remote>/HEAD`), checked
/// before anything asks GitHub: a run on it is refused for that, not for a
/// token it would not need yet. (`pr_to` asks GitHub too, for clones that
/// do not know it.)
fn on_a_branch_of_its_own(root: &Path, target: &push::Target) -> Result<(), String> {
    let head = format!("refs/remotes/{}/HEAD", target.remote);
    let known = crate::git::at(root)
        .run(&["symbolic-ref", "--quiet", "--short", &head], &[])
        .ok();
    let default = known.as_deref().and_then(|r| {
        r.trim()
            .strip_prefix(&format!("{}/", target.remote))
            .map(str::to_string)
    });
    match default {
        Some(base) if base == target.branch => Err(default_branch_refusal(&base)),
        _ => Ok(()),
    }
}

fn default_branch_refusal(base: &str) -> String {
    format!(
        "--pr: the run is on {base}, the repository's default branch, and a pull request needs a branch of its own: run it in a worktree (`ralph loop --worktree NAME --pr`, on branch ralph/NAME) or on a new branch (`git switch -c NAME`)"
    )
}

fn pr_to(target: &push::Target) -> Result<PrTo, String> {
    let repo = crate::github::remote::parse(&target.url).ok_or_else(|| {
        format!(
            "--pr: remote {}'s URL {:?} names no GitHub repository (https://HOST/OWNER/REPO or git@HOST:OWNER/REPO)",
            target.remote,
            crate::output::visible_line(&shown_url(&target.url))
        )
    })?;
    let client =
        Client::from_env(&repo.default_api_base(), &repo.host).map_err(|e| format!("--pr: {e}"))?;
    let base = client
        .repository(&repo)
        .map_err(|e| format!("--pr: {e}"))?
        .default_branch;
    if base == target.branch {
        return Err(default_branch_refusal(&base));
    }
    Ok(PrTo { client, repo, base })
}

/// A URL as said: no user or secret in it.
fn shown_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host))
                if !rest.split('/').next().unwrap_or("").is_empty()
                    && rest.find('@') < rest.find('/') =>
            {
                format!("{scheme}://{host}")
            }
            _ => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_a_remote_url_is_not_said() {
        assert_eq!(
            shown_url("https://x:ghp_s@github.com/a/b"),
            "https://github.com/a/b"
        );
        assert_eq!(
            shown_url("https://github.com/a@b"),
            "https://github.com/a@b"
        );
        assert_eq!(shown_url("git@github.com:a/b"), "git@github.com:a/b");
    }
}
