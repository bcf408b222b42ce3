//! GitHub issues as the tracker (`tracker = "github"`): a step's task is
//! `#N`, done when issue N is closed; what an issue waits for is read from
//! its body ("Blocked by #3", "Depends on #4, #5"). The repository is the
//! one `origin` names; the token and API base are the push/PR ones
//! (`GH_TOKEN`/`GITHUB_TOKEN`/`gh`, `GITHUB_API_URL`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{Caps, Health, Issue, Snapshot, Status, TrackerError, Waits};
use crate::github::{self, Client, Error, IssueFilter, Repo};
use crate::work::spec::issue_number;

/// The label that marks the issues ralph works, unless told another.
pub const DEFAULT_LABEL: &str = "ralph";
/// The most issues asked for one at a time (those outside the label's
/// listing) in one look: more is a spec ralph will not hammer GitHub for.
/// What the spec names, said in a refusal.
const SPECS: &str = "the spec's issues";
const MAX_SINGLE: usize = 200;

/// GitHub's issue (the API's wire type) as the tracker's: the one place
/// its `state` is read.
impl From<&github::Issue> for Issue {
    fn from(i: &github::Issue) -> Issue {
        Issue {
            id: task_id(i.number),
            status: Status::parse(&i.state),
            title: i.title.clone(),
            parent: None,
        }
    }
}

/// A step's task for issue `n`.
pub fn task_id(n: u64) -> String {
    format!("#{n}")
}

/// The issues a body says its issue waits for: each `#N` after "blocked
/// by" or "depends on" (any case, a colon or emphasis allowed between),
/// several in a row joined by commas, spaces or "and"; in order, once
/// each. `owner/repo#N` and links are another repository's: not read.
pub fn blockers_in(body: &str) -> Vec<u64> {
    let lower = body.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut out: Vec<u64> = Vec::new();
    for phrase in ["blocked by", "depends on"] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(phrase).map(|i| i + from) {
            from = at + phrase.len();
            if at > 0 && b[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let mut i = from;
            while i < b.len() && matches!(b[i], b' ' | b'\t' | b':' | b'*' | b'_') {
                i += 1;
            }
            while i < b.len() && b[i] == b'#' {
                let start = i + 1;
                let mut end = start;
                while end < b.len() && b[end].is_ascii_digit() {
                    end += 1;
                }
                let followed_by_word = end < b.len() && b[end].is_ascii_alphabetic();
                match lower[start..end].parse::<u64>() {
                    Ok(n) if n > 0 && !followed_by_word => {
                        if !out.contains(&n) {
                            out.push(n);
                        }
                    }
                    _ => break,
                }
                i = end;
                // `, #4`, ` and #5`, `& #6`
                loop {
                    while i < b.len() && matches!(b[i], b' ' | b'\t' | b',' | b';' | b'&') {
                        i += 1;
                    }
                    if lower[i..].starts_with("and ") {
                        i += 4;
                    } else {
                        break;
                    }
                }
            }
        }
    }
    out
}

/// A GitHub refusal said for issues: a 403 names the issue permissions
/// (the client's own words are about pushing and pull requests).
pub fn said(e: Error) -> TrackerError {
    match e {
        Error::Forbidden { call, message } => TrackerError::Failed(format!(
            "GitHub forbade {call} (403: {message}): the token needs to read and write the repository's issues (a fine-grained token: \"Issues\" read and write; a classic one: the `repo` scope, or `public_repo` for a public repository; in GitHub Actions: `permissions: issues: write`)"
        )),
        Error::NoToken { host, explicit } => TrackerError::Missing(format!(
            "{}; it must be allowed to read and write the repository's issues",
            crate::github::token::no_token(&host, explicit)
        )),
        other => TrackerError::Failed(other.to_string()),
    }
}

/// The repository `origin` names, read from the config as written (not
/// `get-url`, which rewrites it through `insteadOf`).
pub fn origin_repo(root: &Path) -> Result<Repo, TrackerError> {
    let url = crate::git::at(root)
        .run(&["config", "--get", "remote.origin.url"], &[])
        .map_err(|_| {
            TrackerError::Missing(
                "tracker github: this repository has no `origin` remote naming its GitHub repository (`git remote add origin https://github.com/OWNER/REPO.git`)".into(),
            )
        })?;
    github::remote::parse(&url).ok_or_else(|| {
        TrackerError::Missing(format!(
            "tracker github: `origin` ({}) names no GitHub repository",
            crate::output::visible_line(&url)
        ))
    })
}

/// GitHub's issues as a row of the trackers.
pub(super) struct GitHub;

pub(super) static GITHUB: GitHub = GitHub;

static CAPS: Caps = Caps {
    ralph_closes: true,
    issue_tasks: true,
    unblock: "an edit of its issue's \"Blocked by\" / \"Depends on\" line",
};

impl super::Backend for GitHub {
    fn caps(&self) -> &'static Caps {
        &CAPS
    }

    fn open(&self, root: &Path) -> Result<super::Tracker, TrackerError> {
        Ok(Box::new(Issues::open(root)?))
    }

    fn maker(&self, _root: &Path) -> Result<super::Beads, TrackerError> {
        Err(TrackerError::Missing(
            "tracker github makes no tasks of its own: open an issue on GitHub (labelled `ralph`), then `ralph add --issue N` or `ralph import github`".into(),
        ))
    }

    /// `origin` names the repository, and a token is there (looked for in
    /// the environment only: doctor runs nothing, not even `gh`, and sends
    /// nothing).
    fn health(&self, project: &crate::work::project::Project) -> Health {
        let repo = match origin_repo(&project.root) {
            Ok(r) => r,
            Err(e) => {
                return Health::Fail(
                    e.to_string(),
                    "git remote add origin https://github.com/OWNER/REPO.git".into(),
                );
            }
        };
        let env = crate::secrets::var;
        let explicit = std::env::var_os("GITHUB_API_URL").is_some();
        let names = crate::github::token::vars_for(&repo.host, explicit);
        match crate::github::token::find_with(names, env, || None) {
            Some((_, from)) => Health::Pass(format!(
                "GitHub issues of {repo} (labelled `{DEFAULT_LABEL}`), token from {}",
                from.name()
            )),
            None if which::which("gh").is_ok() => Health::Pass(format!(
                "GitHub issues of {repo}; no GH_TOKEN or GITHUB_TOKEN: ralph asks `gh auth token`"
            )),
            None => Health::Fail(
                format!("tracker github ({repo}): no GH_TOKEN or GITHUB_TOKEN, and no `gh`"),
                "set GH_TOKEN to a token that may read and write the repository's issues, or `gh auth login`".into(),
            ),
        }
    }

    /// Only the issues that were steps when the run began (`at_start`):
    /// one a session names later is left to you, and said.
    fn close_done(
        &self,
        root: &Path,
        closes_on_merge: bool,
        done: &[String],
        at_start: Option<&[String]>,
    ) -> Vec<String> {
        let (done, later) = match at_start {
            Some(at_start) => closable(done, at_start),
            None => (done.to_vec(), Vec::new()),
        };
        let mut said = Vec::new();
        if !later.is_empty() {
            said.push(format!(
                "left open on GitHub: {} (not steps when the run began; close them yourself if they are done)",
                later.join(", ")
            ));
        }
        said.extend(close_done(closes_on_merge, root, &done));
        said
    }
}

/// The issues of `origin`'s repository, as the tracker.
pub struct Issues {
    client: Client,
    repo: Repo,
    label: String,
}

impl Issues {
    /// The tracker for the project at `root`: its `origin`, the token.
    pub fn open(root: &Path) -> Result<Issues, TrackerError> {
        let repo = origin_repo(root)?;
        let client = Client::from_env(&repo.default_api_base(), &repo.host).map_err(said)?;
        Ok(Issues {
            client,
            repo,
            label: DEFAULT_LABEL.into(),
        })
    }

    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// The open issues labelled `label`, oldest first (pull requests left
    /// out).
    pub fn open_labelled(&self, label: &str) -> Result<Vec<github::Issue>, TrackerError> {
        let labels = [label];
        let filter = IssueFilter {
            labels: &labels,
            state: "open",
        };
        self.client.list_issues(&self.repo, &filter).map_err(said)
    }

    /// One issue (a pull request is none).
    pub fn issue(&self, n: u64) -> Result<github::Issue, TrackerError> {
        let i = self.client.issue(&self.repo, n).map_err(said)?;
        if i.pull_request.is_some() {
            return Err(TrackerError::Failed(format!(
                "#{n} of {} is a pull request, not an issue",
                self.repo
            )));
        }
        Ok(i)
    }

    /// The labelled issues in any state, and each of `wanted` (`what` they
    /// are, for a refusal) not among them, one call each (a missing one is
    /// left out: unknown).
    fn fetch(&self, wanted: &[u64], what: &str) -> Result<Vec<github::Issue>, TrackerError> {
        let labels = [self.label.as_str()];
        let filter = IssueFilter {
            labels: &labels,
            state: "all",
        };
        let mut all = self.client.list_issues(&self.repo, &filter).map_err(said)?;
        let have: BTreeSet<u64> = all.iter().map(|i| i.number).collect();
        let missing: BTreeSet<u64> = wanted
            .iter()
            .copied()
            .filter(|n| !have.contains(n))
            .collect();
        if missing.len() > MAX_SINGLE {
            return Err(TrackerError::Failed(format!(
                "tracker github: {} of {what} are not labelled `{}`; ralph asks for at most {MAX_SINGLE} one by one: label them",
                missing.len(),
                self.label
            )));
        }
        for n in missing {
            match self.client.issue(&self.repo, n) {
                Ok(i) if i.pull_request.is_none() => all.push(i),
                Ok(_) | Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(said(e)),
            }
        }
        Ok(all)
    }

    /// What the comparison needs: the issues the tasks name (and the
    /// labelled ones). GitHub has no epics: a named one is unknown.
    fn read(&self, epic: Option<&str>, tasks: &[String]) -> Result<Snapshot, TrackerError> {
        let wanted: Vec<u64> = tasks.iter().filter_map(|t| issue_number(t)).collect();
        let issues = self
            .fetch(&wanted, SPECS)?
            .iter()
            .map(Issue::from)
            .collect();
        Ok(Snapshot {
            issues,
            epic_children: epic.map(|_| Vec::new()),
            epic_missing: epic.is_some(),
        })
    }

    /// The issues each task waits for (from its body), and which of the
    /// tasks and their blockers are closed.
    fn waits(&self, tasks: &[String]) -> Result<Waits, TrackerError> {
        let wanted: Vec<u64> = tasks.iter().filter_map(|t| issue_number(t)).collect();
        let first = self.fetch(&wanted, SPECS)?;
        let mut blockers = BTreeMap::new();
        let mut named: Vec<u64> = wanted.clone();
        for i in first.iter().filter(|i| wanted.contains(&i.number)) {
            let waits = blockers_in(i.body.as_deref().unwrap_or_default());
            named.extend(&waits);
            if !waits.is_empty() {
                blockers.insert(task_id(i.number), waits.into_iter().map(task_id).collect());
            }
        }
        // Blockers outside the label's listing: asked for too.
        let known: BTreeSet<u64> = first.iter().map(|i| i.number).collect();
        let more: Vec<u64> = named.into_iter().filter(|n| !known.contains(n)).collect();
        let extra = if more.is_empty() {
            Vec::new()
        } else {
            self.fetch(
                &more,
                "the issues the steps wait for (`Blocked by #N` in their bodies)",
            )?
        };
        let closed = first
            .iter()
            .chain(&extra)
            .map(Issue::from)
            .filter(Issue::is_closed)
            .map(|i| i.id)
            .collect();
        Ok((blockers, closed))
    }

    /// Close the issues of `tasks` that are open; those it closed.
    pub fn close(&self, tasks: &[String]) -> Result<Vec<String>, TrackerError> {
        let wanted: Vec<u64> = tasks.iter().filter_map(|t| issue_number(t)).collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let open: Vec<u64> = self
            .fetch(&wanted, SPECS)?
            .into_iter()
            .filter(|i| wanted.contains(&i.number) && !Issue::from(i).is_closed())
            .map(|i| i.number)
            .collect();
        let mut closed = Vec::new();
        for n in open {
            self.client.close_issue(&self.repo, n).map_err(said)?;
            closed.push(task_id(n));
        }
        Ok(closed)
    }
}

impl super::Reader for Issues {
    fn name(&self) -> &'static str {
        "GitHub issues"
    }

    fn snapshot(&self, epic: Option<&str>, tasks: &[String]) -> Result<Snapshot, TrackerError> {
        self.read(epic, tasks)
    }

    fn order(&self, ids: &[String]) -> Result<Waits, TrackerError> {
        self.waits(ids)
    }
}

/// Of the done steps' `tasks`, those ralph may close on GitHub: the issues
/// that were steps when the run began (`at_start`). A session that adds a
/// step naming another issue and checks it does not get that issue closed
/// with your token; those are the second list, to be said.
fn closable(tasks: &[String], at_start: &[String]) -> (Vec<String>, Vec<String>) {
    tasks
        .iter()
        .filter(|t| issue_number(t).is_some())
        .cloned()
        .partition(|t| at_start.contains(t))
}

/// A done step's issues closed (unless a pull request closes them): what
/// to say, if anything.
///
/// `closes_on_merge`: the run's pull request closes them (`--pr`: `Closes
/// #N` in its body, closed by GitHub on merge), not ralph.
fn close_done(closes_on_merge: bool, root: &Path, tasks: &[String]) -> Option<String> {
    let tasks: Vec<String> = tasks
        .iter()
        .filter(|t| issue_number(t).is_some())
        .cloned()
        .collect();
    if tasks.is_empty() || closes_on_merge {
        return None;
    }
    match Issues::open(root).and_then(|i| i.close(&tasks)) {
        Ok(closed) if closed.is_empty() => None,
        Ok(closed) => Some(format!("closed on GitHub: {}", closed.join(", "))),
        Err(e) => Some(format!(
            "could not close {} on GitHub: {e}",
            tasks.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_issue_is_the_trackers_with_its_state_read_once() {
        let wire = |state: &str| -> github::Issue {
            serde_json::from_value(serde_json::json!({
                "number": 12, "title": "T", "state": state,
                "html_url": "https://example.invalid/12",
            }))
            .unwrap()
        };
        let open = Issue::from(&wire("open"));
        assert_eq!(
            open,
            Issue {
                id: "#12".into(),
                status: Status::Open,
                title: "T".into(),
                parent: None,
            }
        );
        assert!(Issue::from(&wire("closed")).is_closed());
        assert_eq!(
            Issue::from(&wire("locked")).status,
            Status::Other("locked".into())
        );
    }

    #[test]
    fn only_issues_that_were_steps_when_the_run_began_are_closed() {
        let v = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            closable(&v("#1 #42 bd-3 #2"), &v("#1 #2 #3 bd-3")),
            (v("#1 #2"), v("#42"))
        );
        assert_eq!(closable(&v("#1"), &[]), (vec![], v("#1")));
    }

    #[test]
    fn an_issue_named_after_the_run_began_is_said_and_left_open() {
        use crate::work::tracker::Backend;
        let v = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        // Nothing of the run's own to close: GitHub is not asked.
        let said = GITHUB.close_done(Path::new("/nonexistent"), false, &v("#42"), Some(&v("#1")));
        assert_eq!(
            said,
            [
                "left open on GitHub: #42 (not steps when the run began; close them yourself if they are done)"
            ]
        );
        assert!(
            GITHUB
                .close_done(Path::new("/nonexistent"), true, &v("#1"), None)
                .is_empty()
        );
    }

    #[test]
    fn blockers_are_read_from_the_body() {
        assert_eq!(blockers_in("Blocked by #3"), [3]);
        assert_eq!(blockers_in("blocked BY #3\nDepends on: #4"), [3, 4]);
        assert_eq!(
            blockers_in("**Depends on** #4, #5 and #6; also depends on #4"),
            [4, 5, 6]
        );
        assert_eq!(
            blockers_in("- Blocked by: #10 & #11\n- depends on #12"),
            [10, 11, 12]
        );
        assert_eq!(blockers_in("Fixes #3. Blocked by #7 #8"), [7, 8]);
        // Not blockers: another repository's, a link, a mention, no number.
        assert!(blockers_in("Blocked by octo/other#5").is_empty());
        assert!(blockers_in("Depends on https://github.com/o/r/issues/5").is_empty());
        assert!(blockers_in("Related to #5; closes #6").is_empty());
        assert!(blockers_in("blocked by #").is_empty());
        assert!(blockers_in("blocked by #0 and #2").is_empty());
        assert!(blockers_in("unblocked by #4").is_empty());
        assert!(blockers_in("blocked by #4abc").is_empty());
        assert!(blockers_in("").is_empty());
    }

    #[test]
    fn a_403_names_the_issue_permissions() {
        let e = said(Error::Forbidden {
            call: "PATCH /repos/o/r/issues/3".into(),
            message: "Resource not accessible by integration".into(),
        });
        let m = e.to_string();
        assert!(
            m.contains("403") && m.contains("\"Issues\" read and write"),
            "{m}"
        );
        assert!(m.contains("issues: write"), "{m}");
        assert!(
            said(Error::NoToken {
                host: "github.com".into(),
                explicit: false
            })
            .to_string()
            .contains("GH_TOKEN")
        );
    }
}
