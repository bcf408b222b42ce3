//! A thread's comments (an issue's or a pull request's): post one, read
//! the new ones with conditional requests, and tell which is an answer to
//! a question ralph posted there. Who may answer is asked of GitHub (the
//! author's permission on the repository, the token's own user), never
//! read from the comment.

use serde::Deserialize;
use serde_json::json;

use super::api::{Client, Error, next_link};
use super::pulls::query_escape;
use super::remote::Repo;

/// The command a comment must begin with.
pub const COMMAND: &str = "/ralph answer";

/// A comment as GitHub's REST API answers it (the parts ralph reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    /// `None`: a deleted account ("ghost").
    #[serde(default)]
    pub user: Option<User>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default)]
    pub html_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
}

impl Comment {
    pub fn login(&self) -> Option<&str> {
        self.user.as_ref().map(|u| u.login.as_str())
    }
}

/// A listing read: the comments (oldest first), the `ETag` of a listing
/// that fit one page (GitHub tags each page: an unchanged first page says
/// nothing of the next), and whether pages were left unread (the bound).
#[derive(Debug, Clone)]
pub struct Listed {
    pub comments: Vec<Comment>,
    pub etag: Option<String>,
    pub more: bool,
}

/// What a comment's text says to ralph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// Nothing: a comment among people.
    Nothing,
    /// `/ralph answer` somewhere, but not beginning the first line (quoted,
    /// in a code block, further down): not a command.
    Misplaced,
    /// `/ralph answer <words>`: the words, and the lines after.
    Words(String),
    /// `/ralph answer --option N`.
    Pick(u32),
    /// `/ralph answer --option` with no number, or another word.
    BadPick(String),
}

/// What the command in `body` says: pure. The command is the comment's
/// first line, as written (up to three spaces before it, as Markdown
/// reads a paragraph; a `>` quote, a code fence or an indented block is
/// no command).
pub fn said_in(body: &str) -> Said {
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let first = first.strip_suffix('\r').unwrap_or(first);
    let indent = first.len() - first.trim_start_matches(' ').len();
    let after = (indent <= 3)
        .then(|| first[indent..].strip_prefix(COMMAND))
        .flatten()
        .filter(|a| a.is_empty() || a.starts_with([' ', '\t']));
    let Some(after) = after else {
        return if body.contains(COMMAND) {
            Said::Misplaced
        } else {
            Said::Nothing
        };
    };
    let head = after.trim();
    if let Some(n) = head.strip_prefix("--option") {
        let n = n.trim_start_matches(['=', ' ', '\t']).trim();
        return match n.parse::<u32>() {
            Ok(n) => Said::Pick(n),
            Err(_) => Said::BadPick(n.chars().take(20).collect()),
        };
    }
    let rest = rest.replace("\r\n", "\n");
    Said::Words(format!("{head}\n{rest}").trim().to_string())
}

/// Where ralph's question was posted: what an answer must come after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub id: u64,
    pub created_at: String,
    pub html_url: String,
}

/// What a comment is to a question posted at `posted`, ralph's token
/// being `me`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not an answer, and nothing to say of it (before the question, a
    /// comment among people, ralph's own question).
    Skip,
    /// Meant as an answer, not taken: why.
    Refused(String),
    /// An answer, if its author may give one (asked of GitHub next).
    Candidate { login: String, said: Said },
}

/// Judge one comment: pure. The author's permission is asked after.
pub fn judge(c: &Comment, posted: &Posted, me: &str) -> Verdict {
    // Comment ids grow with time; the time guards against a wrapped id.
    if c.id <= posted.id || c.created_at.as_str() < posted.created_at.as_str() {
        return Verdict::Skip;
    }
    let said = said_in(c.body.as_deref().unwrap_or_default());
    match said {
        Said::Nothing => return Verdict::Skip,
        Said::Misplaced => {
            return Verdict::Refused(format!(
                "`{COMMAND}` does not begin its first line (a quote or a code block is not an answer)"
            ));
        }
        _ => {}
    }
    let Some(login) = c.login() else {
        return Verdict::Refused("its author's account is gone".into());
    };
    if login.eq_ignore_ascii_case(me) {
        return Verdict::Refused(format!(
            "{login} is the user of ralph's own token, whose comments are never answers (answer from another account, or with `ralph answer`)"
        ));
    }
    if c.updated_at != c.created_at {
        return Verdict::Refused("it was edited after it was posted".into());
    }
    Verdict::Candidate {
        login: login.to_string(),
        said,
    }
}

/// A collaborator's permission as GitHub answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Permission {
    /// `admin`, `write`, `read` or `none` (maintain reads as write,
    /// triage as read).
    pub permission: String,
    #[serde(default)]
    pub role_name: Option<String>,
}

impl Permission {
    /// May its holder answer: write or above. Pure.
    pub fn may_answer(&self) -> bool {
        matches!(
            self.permission.to_ascii_lowercase().as_str(),
            "admin" | "maintain" | "write"
        )
    }

    /// As said: the role's name where GitHub gives one.
    pub fn word(&self) -> &str {
        match (self.role_name.as_deref(), self.permission.as_str()) {
            (Some(role), _) => role,
            (None, "none") => "no",
            (None, p) => p,
        }
    }
}

/// `text` in a code fence longer than any run of backticks in it, so that
/// nothing in it renders, links or mentions anyone: pure.
pub fn fenced(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{text}\n{fence}")
}

fn comments_path(repo: &Repo, number: u64) -> String {
    format!(
        "/repos/{}/{}/issues/{number}/comments",
        repo.owner, repo.name
    )
}

impl Client {
    /// Post a comment on issue (or pull request) `number`; as GitHub keeps it.
    pub fn post_comment(&self, repo: &Repo, number: u64, text: &str) -> Result<Comment, Error> {
        self.json(
            "POST",
            &comments_path(repo, number),
            Some(&json!({"body": text})),
        )
    }

    /// The comments of `number` changed at or after `since`, unless the
    /// first page is still `etag` (`None`: nothing changed); at most
    /// `max_pages` pages of 100.
    pub fn comments_since(
        &self,
        repo: &Repo,
        number: u64,
        since: &str,
        etag: Option<&str>,
        max_pages: usize,
    ) -> Result<Option<Listed>, Error> {
        let url = format!(
            "{}?since={}&per_page=100",
            comments_path(repo, number),
            query_escape(since)
        );
        let Some(first) = self.get_if_changed(&url, etag)? else {
            return Ok(None);
        };
        let parse = |url: &str, body: &str| {
            serde_json::from_str::<Vec<Comment>>(body).map_err(|e| Error::BadAnswer {
                call: format!("GET {}", url.split('?').next().unwrap_or(url)),
                message: e.to_string(),
            })
        };
        let mut comments = parse(&url, &first.body)?;
        let mut next = first.link.as_deref().and_then(next_link);
        let mut pages = 1;
        while let Some(u) = next.take() {
            if pages >= max_pages {
                return Ok(Some(Listed {
                    comments,
                    etag: None,
                    more: true,
                }));
            }
            let a = self.call("GET", &u, None)?;
            comments.extend(parse(&u, &a.body)?);
            next = a.link.as_deref().and_then(next_link);
            pages += 1;
        }
        Ok(Some(Listed {
            comments,
            etag: first.etag.filter(|_| pages == 1),
            more: false,
        }))
    }

    /// `login`'s permission on `repo`; a user GitHub does not know as one
    /// of its collaborators has none.
    pub fn permission(&self, repo: &Repo, login: &str) -> Result<Permission, Error> {
        let url = format!(
            "/repos/{}/{}/collaborators/{}/permission",
            repo.owner,
            repo.name,
            query_escape(login)
        );
        match self.json("GET", &url, None) {
            Err(Error::NotFound { .. }) => Ok(Permission {
                permission: "none".into(),
                role_name: None,
            }),
            r => r,
        }
    }

    /// The login of the token's own user.
    pub fn me(&self) -> Result<String, Error> {
        self.json::<User>("GET", "/user", None).map(|u| u.login)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(id: u64, login: &str, body: &str, created: &str, updated: &str) -> Comment {
        Comment {
            id,
            body: Some(body.into()),
            user: Some(User {
                login: login.into(),
            }),
            created_at: created.into(),
            updated_at: updated.into(),
            html_url: String::new(),
        }
    }

    const T0: &str = "2025-01-01T10:00:00Z";
    const T1: &str = "2025-01-01T10:05:00Z";
    const T2: &str = "2025-01-01T10:06:00Z";

    fn posted() -> Posted {
        Posted {
            id: 100,
            created_at: T0.into(),
            html_url: String::new(),
        }
    }

    #[test]
    fn the_command_is_the_first_line_as_written() {
        assert_eq!(
            said_in("/ralph answer Postgres"),
            Said::Words("Postgres".into())
        );
        assert_eq!(
            said_in("/ralph answer Postgres,\r\nand say why.\r\n"),
            Said::Words("Postgres,\nand say why.".into())
        );
        assert_eq!(said_in("  /ralph answer --option 2"), Said::Pick(2));
        assert_eq!(said_in("/ralph answer --option=1\nthanks"), Said::Pick(1));
        assert_eq!(
            said_in("/ralph answer --option two"),
            Said::BadPick("two".into())
        );
        assert_eq!(said_in("/ralph answer"), Said::Words(String::new()));
        for not in [
            "> /ralph answer --option 1",
            "```\n/ralph answer --option 1\n```",
            "    /ralph answer --option 1",
            "\n/ralph answer yes",
            "I think\n/ralph answer yes",
            "/ralph answered yes",
        ] {
            assert_eq!(said_in(not), Said::Misplaced, "{not:?}");
        }
        assert_eq!(said_in("LGTM, /ralph later"), Said::Nothing);
    }

    #[test]
    fn only_a_new_unedited_command_by_someone_else_is_a_candidate() {
        let p = posted();
        let ok = comment(101, "octocat", "/ralph answer --option 1", T1, T1);
        assert_eq!(
            judge(&ok, &p, "ralph-bot"),
            Verdict::Candidate {
                login: "octocat".into(),
                said: Said::Pick(1)
            }
        );
        // Before the question: an old answer, or an old comment edited since.
        let old = comment(99, "octocat", "/ralph answer --option 1", T1, T1);
        assert_eq!(judge(&old, &p, "ralph-bot"), Verdict::Skip);
        let early = comment(
            101,
            "octocat",
            "/ralph answer --option 1",
            "2024-12-31T00:00:00Z",
            T1,
        );
        assert_eq!(judge(&early, &p, "ralph-bot"), Verdict::Skip);
        // ralph's own question names the command: never an answer.
        let own = comment(
            100,
            "ralph-bot",
            "... `/ralph answer --option N` ...",
            T0,
            T0,
        );
        assert_eq!(judge(&own, &p, "ralph-bot"), Verdict::Skip);
        let mine = comment(102, "Ralph-Bot", "/ralph answer yes", T1, T1);
        assert!(
            matches!(judge(&mine, &p, "ralph-bot"), Verdict::Refused(w) if w.contains("ralph's own token"))
        );
        let edited = comment(103, "octocat", "/ralph answer yes", T1, T2);
        assert_eq!(
            judge(&edited, &p, "ralph-bot"),
            Verdict::Refused("it was edited after it was posted".into())
        );
        let quoted = comment(104, "octocat", "> /ralph answer yes\n\nhm", T1, T1);
        assert!(
            matches!(judge(&quoted, &p, "ralph-bot"), Verdict::Refused(w) if w.contains("first line"))
        );
        let chat = comment(105, "octocat", "Looks good", T1, T1);
        assert_eq!(judge(&chat, &p, "ralph-bot"), Verdict::Skip);
        let ghost = Comment {
            user: None,
            ..ok.clone()
        };
        assert!(matches!(
            judge(&ghost, &p, "ralph-bot"),
            Verdict::Refused(_)
        ));
    }

    #[test]
    fn write_or_above_may_answer() {
        let p = |perm: &str, role: Option<&str>| Permission {
            permission: perm.into(),
            role_name: role.map(String::from),
        };
        assert!(p("admin", Some("admin")).may_answer());
        assert!(p("write", Some("maintain")).may_answer());
        assert!(p("write", None).may_answer());
        assert!(!p("read", Some("triage")).may_answer());
        assert!(
            !p("read", Some("write")).may_answer(),
            "the permission decides"
        );
        assert!(!p("none", None).may_answer());
        assert_eq!(p("read", Some("triage")).word(), "triage");
        let wire: Permission = serde_json::from_str(
            r#"{"permission":"write","role_name":"write","user":{"login":"x"}}"#,
        )
        .unwrap();
        assert!(wire.may_answer());
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(fenced("a @team"), "```text\na @team\n```");
        assert_eq!(fenced("x ```` y"), "`````text\nx ```` y\n`````");
    }
}
