//! Pull requests: find the open one for a branch, open one, change its
//! title, body or base, and flip it between draft and ready (GraphQL: REST
//! cannot).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::api::{Client, Error};
use super::remote::Repo;

/// A pull request as GitHub answers it (the parts ralph reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Pull {
    pub number: u64,
    /// For the GraphQL draft flip.
    pub node_id: String,
    pub html_url: String,
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub head: Ref,
    pub base: Ref,
}

/// A pull request's head or base.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Ref {
    #[serde(rename = "ref")]
    pub branch: String,
}

/// What a new pull request is.
#[derive(Debug, Clone, Serialize)]
pub struct NewPull<'a> {
    pub title: &'a str,
    /// The branch with the work (`owner:branch` from a fork).
    pub head: &'a str,
    pub base: &'a str,
    pub body: &'a str,
    pub draft: bool,
}

/// What to change in one (`None`: leave it).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PullUpdate<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<&'a str>,
}

/// `s` as one part of a URL's query (GitHub's branch names may hold `/`,
/// `#`, `&`...).
pub fn query_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn pulls_path(repo: &Repo) -> String {
    format!("/repos/{}/{}/pulls", repo.owner, repo.name)
}

/// A repository as GitHub answers it (the parts ralph reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepoInfo {
    pub default_branch: String,
}

impl Client {
    /// The repository's default branch and such.
    pub fn repository(&self, repo: &Repo) -> Result<RepoInfo, Error> {
        self.json("GET", &format!("/repos/{}/{}", repo.owner, repo.name), None)
    }

    /// The open pull request from `repo`'s branch `branch`, if there is one.
    pub fn find_pull(&self, repo: &Repo, branch: &str) -> Result<Option<Pull>, Error> {
        let head = query_escape(&format!("{}:{branch}", repo.owner));
        let url = format!("{}?head={head}&state=open&per_page=100", pulls_path(repo));
        let pulls: Vec<Pull> = self.pages(&url)?;
        Ok(pulls.into_iter().find(|p| p.head.branch == branch))
    }

    /// Open a pull request.
    pub fn create_pull(&self, repo: &Repo, new: &NewPull) -> Result<Pull, Error> {
        let body = serde_json::to_value(new).expect("a pull request serialises");
        self.json("POST", &pulls_path(repo), Some(&body))
    }

    /// Change pull request `number`'s title, body or base.
    pub fn update_pull(
        &self,
        repo: &Repo,
        number: u64,
        change: &PullUpdate,
    ) -> Result<Pull, Error> {
        let body = serde_json::to_value(change).expect("an update serialises");
        let url = format!("{}/{number}", pulls_path(repo));
        self.json("PATCH", &url, Some(&body))
    }

    /// Make `pull` a draft, or ready for review; nothing when it already is.
    pub fn set_draft(&self, pull: &Pull, draft: bool) -> Result<(), Error> {
        if pull.draft == draft {
            return Ok(());
        }
        let query = if draft {
            "mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { isDraft } } }"
        } else {
            "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }"
        };
        self.graphql(query, json!({"id": pull.node_id})).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_are_escaped_in_a_query() {
        assert_eq!(
            query_escape("octo:ralph/a b&c#1"),
            "octo%3Aralph%2Fa%20b%26c%231"
        );
        assert_eq!(query_escape("main"), "main");
    }

    #[test]
    fn an_update_sends_only_what_changes() {
        let u = PullUpdate {
            body: Some("b"),
            ..Default::default()
        };
        assert_eq!(serde_json::to_string(&u).unwrap(), r#"{"body":"b"}"#);
    }
}
