//! ralph's GitHub client against the scripted GitHub: pull requests
//! created, found, updated, drafted and made ready; issues a page at a
//! time; each refusal said with what to fix; the token only in the
//! Authorization header.

use ralph::github::{Client, Error, IssueFilter, NewPull, PullUpdate, Repo, Token};

use crate::support::github::{GitHub, Refusal};

const TOKEN: &str = "ghp_scriptedSECRET0123456789";

fn client(gh: &GitHub) -> Client {
    Client::new(
        &gh.url,
        &format!("{}/graphql", gh.url),
        Token::new(TOKEN).unwrap(),
    )
}

fn repo() -> Repo {
    ralph::github::remote::parse("git@github.com:octo/hello.git").unwrap()
}

#[test]
fn a_pull_request_is_opened_found_updated_and_flipped() {
    let gh = GitHub::start("octo", "hello");
    let c = client(&gh);
    let r = repo();
    assert_eq!(c.repository(&r).unwrap().default_branch, "main");
    assert_eq!(c.find_pull(&r, "ralph/x").unwrap(), None);
    let p = c
        .create_pull(
            &r,
            &NewPull {
                title: "T",
                head: "ralph/x",
                base: "main",
                body: "B",
                draft: true,
            },
        )
        .unwrap();
    assert!(p.draft);
    // Someone else's branch with a like name is not this one.
    gh.add_pull("ralph/x-other", "main", "other");
    let found = c.find_pull(&r, "ralph/x").unwrap().unwrap();
    assert_eq!(found.number, p.number);
    let again = c.create_pull(
        &r,
        &NewPull {
            title: "T",
            head: "ralph/x",
            base: "main",
            body: "B",
            draft: true,
        },
    );
    let Err(e @ Error::Unprocessable { .. }) = again else {
        panic!("{again:?}")
    };
    assert!(e.to_string().contains("already exists"), "{e}");
    let u = c
        .update_pull(
            &r,
            p.number,
            &PullUpdate {
                body: Some("B2"),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!((u.body.as_deref(), u.title.as_str()), (Some("B2"), "T"));
    c.set_draft(&u, false).unwrap();
    let ready = c.find_pull(&r, "ralph/x").unwrap().unwrap();
    assert!(!ready.draft);
    c.set_draft(&ready, true).unwrap();
    assert_eq!(gh.pulls()[0]["draft"], true);
    // Every request carried the token, and only in its header.
    for q in gh.requests() {
        assert_eq!(
            q.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}"))
        );
        assert!(!q.url.contains(TOKEN) && !q.body.to_string().contains(TOKEN));
    }
}

#[test]
fn issues_come_a_page_at_a_time_without_pull_requests() {
    let gh = GitHub::start("octo", "hello");
    gh.max_per_page(2);
    let mine: Vec<u64> = (1..=5)
        .map(|i| gh.add_issue(&format!("issue {i}"), "b", &["ralph", "x"]))
        .collect();
    gh.add_issue("unlabelled", "b", &[]);
    gh.add_pull("feature", "main", "a PR");
    let c = client(&gh);
    let r = repo();
    let got = c
        .list_issues(
            &r,
            &IssueFilter {
                labels: &["ralph"],
                state: "open",
            },
        )
        .unwrap();
    assert_eq!(got.iter().map(|i| i.number).collect::<Vec<_>>(), mine);
    let lists = gh
        .requests()
        .iter()
        .filter(|q| q.path().ends_with("/issues"))
        .count();
    assert_eq!(lists, 3, "5 issues, 2 a page");
    let all = c
        .list_issues(
            &r,
            &IssueFilter {
                labels: &[],
                state: "all",
            },
        )
        .unwrap();
    assert_eq!(all.len(), 6, "no pull request among issues");
    c.close_issue(&r, mine[0]).unwrap();
    assert_eq!(gh.issues()[0]["state"], "closed");
    c.comment(&r, mine[1], "done in abc").unwrap();
}

#[test]
fn each_refusal_says_what_to_fix_and_never_the_token() {
    let gh = GitHub::start("octo", "hello");
    let c = client(&gh);
    let r = repo();
    let path = "/repos/octo/hello/pulls";
    gh.refuse(Refusal::new(None, path, 401, "Bad credentials"))
        .refuse(Refusal::new(
            None,
            path,
            403,
            "Resource not accessible by personal access token",
        ))
        .refuse(Refusal::rate_limited(None, path))
        .refuse(Refusal::new(None, path, 429, "slow down").header("retry-after", "30"));
    let said: Vec<String> = (0..4)
        .map(|_| c.find_pull(&r, "b").unwrap_err().to_string())
        .collect();
    assert!(
        said[0].contains("401") && said[0].contains("GH_TOKEN"),
        "{said:?}"
    );
    assert!(said[1].contains("Pull requests"), "{said:?}");
    assert!(
        said[2].contains("no calls left until 2030-01-01T00:00:00Z"),
        "{said:?}"
    );
    assert!(said[3].contains("retry after 30s"), "{said:?}");
    let other = Repo {
        name: "nope".into(),
        ..repo()
    };
    let e = c.find_pull(&other, "b").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    assert!(e.to_string().contains("private repository"), "{e}");
    for s in said.iter().chain([&e.to_string()]) {
        assert!(!s.contains(TOKEN), "{s}");
    }
}

#[test]
fn a_remote_that_reads_as_githubs_reaches_a_local_bare_repository() {
    let env = crate::support::TestEnv::new();
    env.git_init();
    std::fs::write(env.project.join("a"), "a\n").unwrap();
    env.commit_all("a");
    let origin = crate::support::github::Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    // As configured it reads as GitHub's (`get-url` would say where
    // insteadOf sends it).
    assert_eq!(
        env.git(&["config", "--get", "remote.origin.url"]).trim(),
        "https://github.com/octo/hello.git"
    );
    assert!(env.git(&["remote", "get-url", "origin"]).contains(".git"));
    assert_eq!(
        origin.head_of(&env, "main").unwrap(),
        env.git(&["rev-parse", "HEAD"]).trim()
    );
    assert_eq!(origin.head_of(&env, "nothing"), None);
}
