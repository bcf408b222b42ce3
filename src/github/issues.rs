//! Issues: list a repository's (by labels and state, every page; pull
//! requests left out), and close one.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::api::{Client, Error};
use super::pulls::query_escape;
use super::remote::Repo;

/// An issue as GitHub's REST API answers it (the parts ralph reads): the
/// wire type, its `state` GitHub's word. The tracker reads it as its own
/// `work::tracker::Issue` (a parsed status) in one place,
/// `work::tracker::github`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub state: String,
    pub html_url: String,
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Present on a pull request (the issues listing has both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Label {
    pub name: String,
}

/// Which issues: `labels` all on each (none: any), `state` `open`,
/// `closed` or `all`.
#[derive(Debug, Clone)]
pub struct IssueFilter<'a> {
    pub labels: &'a [&'a str],
    pub state: &'a str,
}

impl Client {
    /// Every issue that fits `filter`, oldest first; pull requests are not
    /// issues here.
    pub fn list_issues(&self, repo: &Repo, filter: &IssueFilter) -> Result<Vec<Issue>, Error> {
        let mut url = format!(
            "/repos/{}/{}/issues?state={}&sort=created&direction=asc&per_page=100",
            repo.owner,
            repo.name,
            query_escape(filter.state)
        );
        if !filter.labels.is_empty() {
            let labels: Vec<String> = filter.labels.iter().map(|l| query_escape(l)).collect();
            url.push_str(&format!("&labels={}", labels.join(",")));
        }
        let all: Vec<Issue> = self.pages(&url)?;
        Ok(all
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .collect())
    }

    /// One issue.
    pub fn issue(&self, repo: &Repo, number: u64) -> Result<Issue, Error> {
        let url = format!("/repos/{}/{}/issues/{number}", repo.owner, repo.name);
        self.json("GET", &url, None)
    }

    /// Close issue `number` (as completed).
    pub fn close_issue(&self, repo: &Repo, number: u64) -> Result<Issue, Error> {
        let url = format!("/repos/{}/{}/issues/{number}", repo.owner, repo.name);
        let body = json!({"state": "closed", "state_reason": "completed"});
        self.json("PATCH", &url, Some(&body))
    }

    /// Add a comment to issue (or pull request) `number`.
    pub fn comment(&self, repo: &Repo, number: u64, text: &str) -> Result<(), Error> {
        let url = format!(
            "/repos/{}/{}/issues/{number}/comments",
            repo.owner, repo.name
        );
        self.call("POST", &url, Some(&json!({"body": text})))
            .map(|_| ())
    }
}
