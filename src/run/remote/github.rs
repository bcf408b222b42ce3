//! The run's GitHub threads: its pull request's (`--pr`, once open) and
//! the issue its step is (`tracker = "github"`), read with conditional
//! requests for `/ralph` commands by someone whose permission, asked of
//! GitHub, is write or above; never ralph's own token's user, never an
//! edited comment. What was there when the run began reading is not read.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::Ctx;
use crate::control::Command;
use crate::control::written::{self, Verb, Written};
use crate::github::comments::{Comment, Permission, author};
use crate::github::{Client, Repo};

/// How often the threads are read while a question waits, and otherwise.
/// Each read is conditional: an unchanged thread answers 304, which
/// GitHub does not count against the token's limit.
const EVERY_WAITING: Duration = Duration::from_secs(5);
const EVERY: Duration = Duration::from_secs(15);
/// How often the run's pull request is looked for, until it is open.
const PULL_EVERY: Duration = Duration::from_secs(60);
/// How long an author's permission, as GitHub said it, is taken as it was.
const PERMISSION_KEPT: Duration = Duration::from_secs(300);
/// The most pages of 100 new comments read in one look.
const PAGES: usize = 3;
/// How far before the run's start a listing reaches (clocks differ); what
/// it lists at the first read is the thread as it was, not read.
const SLACK: Duration = Duration::from_secs(600);

/// The threads a run reads.
pub struct Threads {
    client: Client,
    repo: Repo,
    /// The token's user, once asked: their comments are never commands.
    me: Option<String>,
    /// `--pr`: the run's branch, and its pull request once found.
    branch: Option<String>,
    pull: Option<u64>,
    pull_looked: Option<Instant>,
    /// `tracker = "github"`: the spec, whose next open step names its issue.
    spec: Option<PathBuf>,
    read: HashMap<u64, Thread>,
    /// Each author's permission as GitHub said it, and when: asked again
    /// once `PERMISSION_KEPT` has passed (a writer removed loses the run).
    permissions: HashMap<String, (Permission, Instant)>,
    since: String,
    last: Option<Instant>,
    said_error: bool,
}

/// One thread as read so far.
struct Thread {
    /// `pull request #7`, `issue #3`.
    name: String,
    /// The newest comment of the thread as it was first read: those up to
    /// it are not read.
    after: u64,
    etag: Option<String>,
    /// Each comment judged, as it was (an edit makes it another).
    seen: HashSet<(u64, String)>,
    said_more: bool,
}

impl Threads {
    /// The run's threads, where it has any: the pull request's client, or
    /// one for `origin` with the user's token (none to be had: nothing is
    /// read, and asking says why).
    pub fn of(
        settings: &crate::run::options::Settings,
        project: &crate::work::project::Project,
        ship: Option<&crate::ship::Ship>,
    ) -> Option<Threads> {
        let pull = ship.and_then(|s| s.pull_request_to());
        let issues = settings.tracker == Some(crate::config::Kind::Github);
        let (client, repo) = match pull {
            Some((c, r, _)) => (c.clone(), r.clone()),
            None if issues => {
                let repo = crate::work::tracker::github::origin_repo(&project.root).ok()?;
                (
                    Client::from_env(&repo.default_api_base(), &repo.host).ok()?,
                    repo,
                )
            }
            None => return None,
        };
        let since = std::time::SystemTime::now()
            .checked_sub(SLACK)
            .unwrap_or(std::time::UNIX_EPOCH);
        Some(Threads {
            client,
            repo,
            me: None,
            branch: pull.map(|p| p.2.to_string()),
            pull: None,
            pull_looked: None,
            spec: issues.then(|| project.spec()),
            read: HashMap::new(),
            permissions: HashMap::new(),
            since: crate::timefmt::rfc3339(since),
            last: None,
            said_error: false,
        })
    }

    pub fn due(&self, waiting: bool) -> bool {
        let every = if waiting { EVERY_WAITING } else { EVERY };
        self.last.is_none_or(|l| l.elapsed() >= every)
    }

    /// An error talking to GitHub, said the first time only: the reading
    /// goes on.
    fn failed(&mut self, ctx: &Ctx, e: &crate::github::Error) {
        if !std::mem::replace(&mut self.said_error, true) {
            ctx.ui.note(&format!(
                "GitHub: {e}; read again in a while (`ralph answer` and `ralph stop` work meanwhile)"
            ));
        }
    }

    /// The threads to read now: the pull request (looked for until found)
    /// and the issue of the step the run is on.
    fn places(&mut self, ctx: &Ctx) -> Vec<(u64, String)> {
        let mut places = Vec::new();
        if let Some(branch) = &self.branch {
            if self.pull.is_none() && self.pull_looked.is_none_or(|l| l.elapsed() >= PULL_EVERY) {
                self.pull_looked = Some(Instant::now());
                match self.client.find_pull(&self.repo, branch) {
                    Ok(p) => self.pull = p.map(|p| p.number),
                    Err(e) => self.failed(ctx, &e),
                }
            }
            if let Some(n) = self.pull {
                places.push((n, format!("pull request #{n}")));
            }
        }
        let step_issue = self.spec.as_ref().and_then(|spec| {
            let text = crate::fsutil::read_optional(spec).ok()??;
            crate::work::spec::parse(&text)
                .next_open()?
                .task
                .as_deref()
                .and_then(crate::work::spec::issue_number)
        });
        if let Some(n) = step_issue.filter(|n| Some(*n) != self.pull) {
            places.push((n, format!("issue #{n}")));
        }
        places
    }

    /// Read each thread's new comments; each command in them sent to the
    /// loop, or said why not.
    pub(super) fn look(&mut self, ctx: &Ctx) {
        self.last = Some(Instant::now());
        if self.me.is_none() {
            match self.client.me() {
                Ok(me) => self.me = Some(me),
                Err(e) => return self.failed(ctx, &e),
            }
        }
        for (number, name) in self.places(ctx) {
            self.look_at(ctx, number, name);
        }
    }

    fn look_at(&mut self, ctx: &Ctx, number: u64, name: String) {
        let etag = self.read.get(&number).and_then(|t| t.etag.clone());
        let listed = match self.client.comments_since(
            &self.repo,
            number,
            &self.since,
            etag.as_deref(),
            PAGES,
        ) {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(e) => return self.failed(ctx, &e),
        };
        let Some(thread) = self.read.get_mut(&number) else {
            // The thread as it was: not read, but where a question was
            // posted on it, what came after the question is.
            let newest = listed.comments.iter().map(|c| c.id).max().unwrap_or(0);
            let posted = ctx
                .asking
                .get()
                .and_then(|a| a.posted)
                .filter(|p| p.0 == number)
                .map(|p| p.1);
            let after = posted.map_or(newest, |p| p.min(newest));
            self.read.insert(
                number,
                Thread {
                    name,
                    after,
                    etag: None,
                    seen: HashSet::new(),
                    said_more: false,
                },
            );
            if posted.is_some_and(|p| p < newest) {
                return self.look_at(ctx, number, self.read[&number].name.clone());
            }
            self.read.get_mut(&number).expect("inserted").etag = listed.etag;
            return;
        };
        if listed.more && !std::mem::replace(&mut thread.said_more, true) {
            ctx.ui.note(&format!(
                "GitHub: more than {} new comments on {}; the newest are not read",
                PAGES * 100,
                thread.name
            ));
        }
        let mut tag = listed.etag;
        let name = thread.name.clone();
        let fresh: Vec<Comment> = listed
            .comments
            .into_iter()
            .filter(|c| c.id > thread.after && thread.seen.insert((c.id, c.updated_at.clone())))
            .collect();
        for c in fresh {
            if let Err(Retry) = self.judge(ctx, number, &name, &c) {
                // Asked again next time: the listing is read anew.
                if let Some(t) = self.read.get_mut(&number) {
                    t.seen.remove(&(c.id, c.updated_at.clone()));
                }
                tag = None;
            }
        }
        if let Some(t) = self.read.get_mut(&number) {
            t.etag = tag;
        }
    }

    /// One new comment on thread `number`: a command sent, or said why not.
    fn judge(&mut self, ctx: &Ctx, number: u64, name: &str, c: &Comment) -> Result<(), Retry> {
        let me = self.me.clone().unwrap_or_default();
        let by_me = c.login().is_some_and(|l| l.eq_ignore_ascii_case(&me));
        let not_taken = |noun: &str, why: &str| {
            ctx.ui.note(&format!(
                "a comment by {} on {name} is not taken as {noun}: {why}",
                crate::output::visible_line(c.login().unwrap_or("a deleted account")),
            ))
        };
        let (verb, said) = match written::read(c.body.as_deref().unwrap_or_default()) {
            Written::Nothing => return Ok(()),
            // ralph's own comments name the commands: they are not meant.
            Written::Misplaced(_) | Written::Unknown(_) if by_me => return Ok(()),
            Written::Misplaced(v) => {
                not_taken(
                    v.noun(),
                    &format!(
                        "`{} {}` does not begin its first line (a quote or a code block is not {})",
                        written::PREFIX,
                        v.word(),
                        v.noun()
                    ),
                );
                return Ok(());
            }
            Written::Unknown(why) => {
                not_taken("a command", &why);
                return Ok(());
            }
            Written::Said(v, said) => (v, said),
        };
        let login = match author(c, &me) {
            Ok(l) => l.to_string(),
            Err(why) => {
                not_taken(verb.noun(), &why);
                return Ok(());
            }
        };
        let kept = self
            .permissions
            .get(&login)
            .filter(|(_, at)| at.elapsed() < PERMISSION_KEPT);
        let permission = match kept {
            Some((p, _)) => p.clone(),
            None => match self.client.permission(&self.repo, &login) {
                Ok(p) => {
                    self.permissions
                        .insert(login.clone(), (p.clone(), Instant::now()));
                    p
                }
                Err(e) => {
                    self.failed(ctx, &e);
                    return Err(Retry);
                }
            },
        };
        if !permission.may_answer() {
            not_taken(
                verb.noun(),
                &format!(
                    "{} has {} access to {}; {} needs write access or above",
                    crate::output::visible_line(&login),
                    crate::output::visible_line(permission.word()),
                    self.repo,
                    verb.noun()
                ),
            );
            return Ok(());
        }
        let asked = ctx.asking.get();
        if verb == Verb::Answer
            && let Some((thread, question)) = asked.as_ref().and_then(|a| a.posted)
            && thread == number
            && c.id <= question
        {
            not_taken(verb.noun(), "it came before the question");
            return Ok(());
        }
        let sent = super::forward(said, asked.as_ref()).and_then(|f| {
            let command = f.0.clone();
            let by = format!("github:{login}");
            ctx.send(&by, Some(&c.html_url), f).map(|_| command)
        });
        match sent {
            // An answer is told on the thread by the run that takes it.
            Ok(Command::Answer(_)) => {}
            Ok(command) => {
                // The command's words are the author's: in a code span, so
                // no mention or link is posted from the token's account.
                let told = format!(
                    "ralph took the command of `{login}` ({}): {}.",
                    c.html_url,
                    crate::github::comments::code_span(&command.describe())
                );
                if let Err(e) = self.client.post_comment(&self.repo, number, &told) {
                    self.failed(ctx, &e);
                }
            }
            Err(why) => not_taken(verb.noun(), &why),
        }
        Ok(())
    }
}

/// A comment to judge again: GitHub did not say who may.
struct Retry;
