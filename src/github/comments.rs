//! A thread's comments (an issue's or a pull request's): post one, read
//! the new ones with conditional requests, and tell whose may carry a
//! command to ralph. Who may is asked of GitHub (the author's permission
//! on the repository, the token's own user), never read from the comment.

use serde::Deserialize;
use serde_json::json;

use super::api::{Client, Error, next_link};
use super::pulls::query_escape;
use super::remote::Repo;

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

/// Where ralph's question was posted: what an answer must come after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub id: u64,
    pub created_at: String,
    pub html_url: String,
}

/// Who wrote a command in comment `c`, if the comment may carry one,
/// ralph's token being `me`'s: pure. Never ralph's own user (its token
/// writes the question, which shows the commands), never a comment edited
/// after it was posted (what was read is not what stands). The author's
/// permission is asked of GitHub after.
pub fn author<'c>(c: &'c Comment, me: &str) -> Result<&'c str, String> {
    let Some(login) = c.login() else {
        return Err("its author's account is gone".into());
    };
    if login.eq_ignore_ascii_case(me) {
        return Err(format!(
            "{login} is the user of ralph's own token, whose comments are never commands (write from another account, or use `ralph answer` and `ralph stop`)"
        ));
    }
    if c.updated_at != c.created_at {
        return Err("it was edited after it was posted".into());
    }
    Ok(login)
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

/// `text` as one inline code span, delimited by more backticks than any
/// run of them in it, so that it renders as written: pure.
pub fn code_span(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A space inside keeps a backtick at either end from joining the fence.
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
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

    const T1: &str = "2025-01-01T10:05:00Z";
    const T2: &str = "2025-01-01T10:06:00Z";

    #[test]
    fn only_someone_elses_unedited_comment_carries_a_command() {
        let ok = comment(101, "octocat", "/ralph stop", T1, T1);
        assert_eq!(author(&ok, "ralph-bot"), Ok("octocat"));
        let mine = comment(102, "Ralph-Bot", "/ralph answer yes", T1, T1);
        assert!(matches!(author(&mine, "ralph-bot"), Err(w) if w.contains("ralph's own token")));
        let edited = comment(103, "octocat", "/ralph answer yes", T1, T2);
        assert_eq!(
            author(&edited, "ralph-bot"),
            Err("it was edited after it was posted".into())
        );
        let ghost = Comment { user: None, ..ok };
        assert_eq!(
            author(&ghost, "ralph-bot"),
            Err("its author's account is gone".into())
        );
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
    fn a_code_span_outlasts_the_backticks_inside() {
        assert_eq!(
            code_span("add a step: ping @team"),
            "`add a step: ping @team`"
        );
        assert_eq!(code_span("a `b` c"), "``a `b` c``");
        assert_eq!(code_span("`x``"), "``` `x`` ```");
        assert_eq!(code_span("two\nlines"), "`two lines`");
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(fenced("a @team"), "```text\na @team\n```");
        assert_eq!(fenced("x ```` y"), "`````text\nx ```` y\n`````");
    }
}
