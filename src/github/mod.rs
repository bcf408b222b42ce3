//! GitHub: its REST API (pull requests, issues, their comments) and its GraphQL draft flip,
//! the token that reaches them, and the repository a remote's URL names.

pub mod api;
pub mod comments;
pub mod issues;
pub mod pulls;
pub mod remote;
pub mod token;

pub use api::{Client, Error};
pub use issues::{Issue, IssueFilter};
pub use pulls::{NewPull, Pull, PullUpdate, RepoInfo};
pub use remote::Repo;
pub use token::Token;
