//! Pushing the run's branch: where to (its upstream, read once as the run
//! starts), the push itself (never forced), and after a rejection a fetch
//! and a rebase that must apply cleanly. Every git call is ralph's
//! hardened one; the repository's config that steers transport is read as
//! the run starts and must be the same at each push (a session can write
//! `.git/config`: it may not choose where ralph pushes, nor what runs).

use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;

/// Where the run's branch goes, as it was when the run started.
#[derive(Debug, Clone)]
pub struct Target {
    pub branch: String,
    pub remote: String,
    /// The remote's URL as configured (GitHub's, for the pull request).
    pub url: String,
    /// Where git pushes it (after `insteadOf`/`pushInsteadOf`).
    pushes_to: String,
    /// The repository's transport keys at the start.
    steering: Vec<(String, String)>,
    /// A GitHub token git sends to the remote's host (`ralph worker`,
    /// `ralph merge`: a job's checkout keeps no credentials), given to
    /// git in its environment, never in its arguments.
    auth: Option<crate::github::Token>,
}

/// What a push came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The remote's branch is at the run's head.
    Done,
    /// It was rejected (the remote moved); the run's commits were rebased
    /// onto the remote's and pushed.
    Rebased { rejected: String },
}

/// Why a push did not happen; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The repository's push setup changed since the run started.
    Changed(Vec<String>),
    /// Rejected, and the remote's work does not rebase cleanly under the
    /// run's.
    Conflict { rejected: String, why: String },
    /// git failed (no access, no network...).
    Failed(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Changed(keys) => write!(
                f,
                "the repository's git config for pushing changed during the run ({}): a session may have changed it, and ralph pushes only where it would when the run began; check .git/config, then start the loop again",
                keys.join(", ")
            ),
            Refused::Conflict { rejected, why } => write!(
                f,
                "the push was rejected ({rejected}): the remote's branch has commits the run's do not rebase onto cleanly ({why}); merge or rebase it by hand, push, then resume the loop"
            ),
            Refused::Failed(why) => write!(f, "git push failed: {why}"),
        }
    }
}

/// The keys of the repository's own config (`local`, `worktree`) that
/// steer where and how git reaches a remote, from `git config --list
/// --show-scope --includes -z`. Pure.
pub fn steering(listing: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = listing.split(|b| *b == 0);
    while let (Some(scope), Some(kv)) = (it.next(), it.next()) {
        if !matches!(scope, b"local" | b"worktree") {
            continue;
        }
        let text = String::from_utf8_lossy(kv);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        let key = key.to_lowercase();
        let section = key.split('.').next().unwrap_or_default();
        let var = key.rsplit('.').next().unwrap_or_default();
        let steers = matches!(
            section,
            "remote" | "url" | "http" | "protocol" | "credential" | "push" | "fetch" | "transfer"
        ) || (section == "core"
            && matches!(var, "sshcommand" | "gitproxy" | "askpass" | "hookspath"));
        if steers {
            out.push((key, value.to_string()));
        }
    }
    out
}

/// Which keys differ between two `steering` lists.
fn changed(then: &[(String, String)], now: &[(String, String)]) -> Vec<String> {
    let mut keys: Vec<String> = then
        .iter()
        .filter(|e| !now.contains(e))
        .chain(now.iter().filter(|e| !then.contains(e)))
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A remote's name as git allows it here: nothing an option could be.
fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn read_steering(root: &Path) -> Vec<(String, String)> {
    let listing = crate::git::at(root)
        .bytes(&["config", "--list", "--show-scope", "--includes", "-z"])
        .unwrap_or_default();
    steering(&listing)
}

fn pushes_to(root: &Path, remote: &str) -> Result<String, String> {
    crate::git::at(root)
        .run(&["remote", "get-url", "--push"], &[remote])
        .map(|u| u.trim().to_string())
        .map_err(|e| format!("{e:#}"))
}

/// The run's branch and where it goes: its upstream's remote, else
/// `origin`. `Err` says what to fix.
pub fn target(root: &Path) -> Result<Target, String> {
    let git = crate::git::at(root);
    let Some(branch) = crate::git::branch(root) else {
        return Err("--push pushes the run's branch, and HEAD is on none (detached): check a branch out (`git switch -c NAME`)".into());
    };
    let remote = git
        .run(
            &["config", "--get", &format!("branch.{branch}.remote")],
            &[],
        )
        .ok()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty() && r != ".")
        .unwrap_or_else(|| "origin".into());
    if !plain_name(&remote) {
        return Err(format!(
            "--push: branch {branch}'s remote {:?} is not a name ralph pushes to",
            crate::output::visible_line(&remote)
        ));
    }
    target_for(root, &remote, &branch)
}

/// Where `branch` goes on `remote`, whichever branch HEAD is on.
pub fn target_for(root: &Path, remote: &str, branch: &str) -> Result<Target, String> {
    if !plain_name(remote) {
        return Err(format!(
            "--push: remote {:?} is not a name ralph pushes to",
            crate::output::visible_line(remote)
        ));
    }
    let url = crate::git::at(root)
        .run(&["config", "--get", &format!("remote.{remote}.url")], &[])
        .map(|u| u.trim().to_string())
        .map_err(|_| {
            format!("--push: there is no remote {remote:?} to push branch {branch} to (`git remote add {remote} URL`, or set the branch's upstream)")
        })?;
    Ok(Target {
        pushes_to: pushes_to(root, remote)?,
        steering: read_steering(root),
        branch: branch.to_string(),
        remote: remote.to_string(),
        url,
        auth: None,
    })
}

/// What git is given to send `token` to `url`'s host (an `https` URL's
/// only): the header GitHub takes a token in, as `-c` in git's own
/// environment variable for it (`GIT_CONFIG_PARAMETERS`), never an
/// argument. Pure.
pub fn auth_env(url: &str, token: &str, inherited: Option<&str>) -> Vec<(String, String)> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Vec::new();
    };
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() || host.contains(['\'', '@']) {
        return Vec::new();
    }
    let basic = base64(format!("x-access-token:{token}").as_bytes());
    let pair = format!("'http.https://{host}/.extraheader'='AUTHORIZATION: basic {basic}'");
    let value = match inherited.filter(|v| !v.trim().is_empty()) {
        Some(v) => format!("{v} {pair}"),
        None => pair,
    };
    vec![("GIT_CONFIG_PARAMETERS".to_string(), value)]
}

/// Standard base64, with padding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The words of a push of HEAD to the branch: never forced, no hooks, no
/// signing, no submodules, git's own receive-pack whatever the config says.
const PUSH: [&str; 6] = [
    "push",
    "--porcelain",
    "--no-signed",
    "--no-verify",
    "--recurse-submodules=no",
    "--receive-pack=git-receive-pack",
];

/// Was a failed push rejected by the remote (not fast-forward, fetch
/// first), rather than failing? Its reason, from `--porcelain`'s output.
pub fn rejection(stdout: &str, stderr: &str) -> Option<String> {
    stdout
        .lines()
        .find(|l| l.starts_with('!') && l.contains("[rejected]"))
        .map(|l| {
            let why = l.rsplit('\t').next().unwrap_or(l);
            crate::output::visible_line(why.trim())
        })
        .or_else(|| {
            (stderr.contains("[rejected]") || stderr.contains("non-fast-forward"))
                .then(|| "non-fast-forward".to_string())
        })
}

fn last_lines(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    crate::output::visible_line(&tail.join(" / "))
}

impl Target {
    fn refspec(&self) -> String {
        format!("HEAD:refs/heads/{}", self.branch)
    }

    /// Send `token` to the remote's host with each fetch and push.
    pub fn with_token(mut self, token: Option<crate::github::Token>) -> Target {
        self.auth = token;
        self
    }

    /// The same target for another branch of the same remote.
    pub fn for_branch(&self, branch: &str) -> Target {
        Target {
            branch: branch.to_string(),
            ..self.clone()
        }
    }

    fn auth_env(&self) -> Vec<(String, String)> {
        match &self.auth {
            Some(t) => auth_env(
                &self.url,
                t.expose(),
                std::env::var("GIT_CONFIG_PARAMETERS").ok().as_deref(),
            ),
            None => Vec::new(),
        }
    }

    /// A failure said without the token, should git echo it.
    fn said(&self, text: &str) -> String {
        match &self.auth {
            Some(t) => t.redact(text),
            None => text.to_string(),
        }
    }

    /// The remote's branches under `prefix` (`refs/heads/` left out), and
    /// their commits.
    pub fn heads(&self, root: &Path, prefix: &str) -> Result<Vec<(String, String)>, String> {
        let refs = self.refs(root, &format!("refs/heads/{prefix}*"))?;
        Ok(refs
            .into_iter()
            .filter_map(|(name, sha)| Some((name.strip_prefix("refs/heads/")?.to_string(), sha)))
            .collect())
    }

    /// Fetch the remote's `branch` into `into` (a ref of ralph's own).
    pub fn fetch(&self, root: &Path, branch: &str, into: &str) -> Result<(), String> {
        self.fetch_with(root, &[], &format!("+refs/heads/{branch}:{into}"))
    }

    /// Fetch `refspec` from the remote, with `more` options: nothing but
    /// the refs asked for (no tags, no submodules, the remote's own upload
    /// program whatever the repository's config says).
    fn fetch_with(&self, root: &Path, more: &[&str], refspec: &str) -> Result<(), String> {
        self.unchanged(root).map_err(|e| e.to_string())?;
        let env = self.auth_env();
        let mut args = vec!["fetch", "--quiet"];
        args.extend(more);
        args.extend([
            "--no-tags",
            "--no-write-fetch-head",
            "--recurse-submodules=no",
            "--upload-pack=git-upload-pack",
        ]);
        crate::git::at(root)
            .with_env(&env)
            .run(&args, &[&self.pushes_to, refspec])
            .map(|_| ())
            .map_err(|e| self.said(&last_lines(&format!("{e:#}"))))
    }

    /// Delete the remote's `branch` if it is still at `at` (a lease: never
    /// work pushed since); `Ok(false)` when it has moved.
    pub fn delete_if_at(&self, root: &Path, branch: &str, at: &str) -> Result<bool, String> {
        self.unchanged(root).map_err(|e| e.to_string())?;
        let env = self.auth_env();
        let lease = format!("--force-with-lease=refs/heads/{branch}:{at}");
        let (ok, out, err) = crate::git::at(root)
            .with_env(&env)
            .attempt(
                &[
                    "push",
                    "--porcelain",
                    "--no-verify",
                    "--receive-pack=git-receive-pack",
                    &lease,
                ],
                &[&self.pushes_to, &format!(":refs/heads/{branch}")],
            )
            .map_err(|e| self.said(&format!("{e:#}")))?;
        if ok {
            return Ok(true);
        }
        if rejection(&out, &err).is_some() || err.contains("stale info") {
            return Ok(false);
        }
        Err(self.said(&last_lines(&err)))
    }

    /// The remote's refs matching `pattern` (`refs/ralph/claims/*`), full
    /// names, and their objects.
    pub fn refs(&self, root: &Path, pattern: &str) -> Result<Vec<(String, String)>, String> {
        self.unchanged(root).map_err(|e| e.to_string())?;
        let env = self.auth_env();
        let out = crate::git::at(root)
            .with_env(&env)
            .run(
                &["ls-remote", "--upload-pack=git-upload-pack"],
                &[&self.pushes_to, pattern],
            )
            .map_err(|e| self.said(&last_lines(&format!("{e:#}"))))?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let (sha, name) = l.split_once('\t')?;
                crate::history::records::is_object_id(sha)
                    .then(|| (name.to_string(), sha.to_string()))
            })
            .collect())
    }

    /// Fetch `refspec` (`+refs/ralph/claims/*:refs/ralph/...`) from the
    /// remote, the local refs it no longer has removed.
    pub fn fetch_pruned(&self, root: &Path, refspec: &str) -> Result<(), String> {
        self.fetch_with(root, &["--prune"], refspec)
    }

    /// Set the remote's ref `name` (a full name) to `object`, or delete it
    /// (`object: None`), only if it is at `expect` now (`None`: only if it
    /// does not exist): git's compare-and-swap, so of two machines that
    /// race, one wins. `Ok(false)`: it was not as expected.
    pub fn swap_ref(
        &self,
        root: &Path,
        name: &str,
        object: Option<&str>,
        expect: Option<&str>,
    ) -> Result<bool, String> {
        self.unchanged(root).map_err(|e| e.to_string())?;
        let env = self.auth_env();
        let lease = format!("--force-with-lease={name}:{}", expect.unwrap_or(""));
        let spec = format!("{}:{name}", object.unwrap_or(""));
        let (ok, out, err) = crate::git::at(root)
            .with_env(&env)
            .attempt(
                &[
                    "push",
                    "--porcelain",
                    "--no-signed",
                    "--no-verify",
                    "--recurse-submodules=no",
                    "--receive-pack=git-receive-pack",
                    &lease,
                ],
                &[&self.pushes_to, &spec],
            )
            .map_err(|e| self.said(&format!("{e:#}")))?;
        if ok {
            // git counts a ref at the object already as pushed, whatever the
            // lease: there, not by this push, unless it was expected there.
            let there_already = out.lines().any(|l| l.starts_with("=\t"));
            return Ok(!there_already || expect == object);
        }
        // A ref below the name (`NAME/x`) keeps it from being made: no race
        // lost, and never won by looking again.
        if err.contains("exists; cannot create") {
            return Err(self.said(&last_lines(&err)));
        }
        // Not as expected: here (stale info), or at the remote, which
        // compares and swaps under its lock (another push got there first).
        let lost = ["stale info", "cannot lock ref", "reference already exists"];
        if rejection(&out, &err).is_some()
            || lost.iter().any(|l| out.contains(l) || err.contains(l))
        {
            return Ok(false);
        }
        Err(self.said(&last_lines(&err)))
    }

    /// Is the repository's push setup as it was when the run started?
    fn unchanged(&self, root: &Path) -> Result<(), Refused> {
        let mut keys = changed(&self.steering, &read_steering(root));
        if pushes_to(root, &self.remote).ok().as_deref() != Some(self.pushes_to.as_str()) {
            keys.push(format!("remote {}'s push URL", self.remote));
        }
        if keys.is_empty() {
            Ok(())
        } else {
            Err(Refused::Changed(keys))
        }
    }

    fn try_push(&self, root: &Path) -> Result<(bool, String, String), Refused> {
        let env = self.auth_env();
        crate::git::at(root)
            .with_env(&env)
            .attempt(&PUSH, &[&self.pushes_to, &self.refspec()])
            .map(|(ok, out, err)| (ok, out, self.said(&err)))
            .map_err(|e| Refused::Failed(self.said(&format!("{e:#}"))))
    }

    /// Push the run's head to its branch on the remote; rejected, fetch the
    /// remote's branch and rebase onto it when that applies cleanly, then
    /// push again. Never forced.
    pub fn push(&self, root: &Path) -> Result<Pushed, Refused> {
        self.unchanged(root)?;
        let (ok, out, err) = self.try_push(root)?;
        if ok {
            return Ok(Pushed::Done);
        }
        let Some(rejected) = rejection(&out, &err) else {
            return Err(Refused::Failed(last_lines(&err)));
        };
        self.rebase_onto_remote(root)
            .map_err(|why| Refused::Conflict {
                rejected: rejected.clone(),
                why,
            })?;
        let (ok, _, err) = self.try_push(root)?;
        if !ok {
            return Err(Refused::Failed(last_lines(&err)));
        }
        Ok(Pushed::Rebased { rejected })
    }

    /// The remote's branch fetched (to a ref of ralph's own) and the run's
    /// commits rebased onto it; undone if it does not apply cleanly.
    fn rebase_onto_remote(&self, root: &Path) -> Result<(), String> {
        let git = crate::git::at(root);
        let theirs = format!("refs/ralph/upstream/{}", self.branch);
        self.fetch(root, &self.branch, &theirs)?;
        let (ok, _, err) = git
            .attempt(
                &[
                    "rebase",
                    "--quiet",
                    "--no-autostash",
                    "--no-autosquash",
                    "--no-update-refs",
                ],
                &[&theirs],
            )
            .map_err(|e| format!("{e:#}"))?;
        if ok {
            return Ok(());
        }
        let _ = git.attempt(&["rebase", "--abort"], &[]);
        Err(last_lines(&err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_goes_to_git_as_githubs_header_in_its_environment() {
        assert_eq!(base64(b"x-access-token:abc"), "eC1hY2Nlc3MtdG9rZW46YWJj");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
        let env = auth_env("https://github.com/o/r.git", "abc", None);
        assert_eq!(
            env,
            vec![(
                "GIT_CONFIG_PARAMETERS".to_string(),
                "'http.https://github.com/.extraheader'='AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46YWJj'".to_string()
            )]
        );
        let kept = auth_env("https://ghe.example/o/r", "abc", Some("'a.b'='c'"));
        assert!(
            kept[0]
                .1
                .starts_with("'a.b'='c' 'http.https://ghe.example/.extraheader'")
        );
        // Not over ssh, nor to a host that reads oddly.
        assert!(auth_env("git@github.com:o/r.git", "abc", None).is_empty());
        assert!(auth_env("https://x'y/o/r", "abc", None).is_empty());
        assert!(auth_env("https://u@github.com/o/r", "abc", None).is_empty());
    }

    #[test]
    fn the_keys_that_steer_a_push_are_the_repositorys_own() {
        let l = b"global\0url.x.insteadof\ny\0local\0remote.origin.url\nhttps://github.com/a/b\0local\0user.name\nme\0worktree\0URL./tmp/evil.insteadOf\nhttps://github.com/a/b\0local\0core.sshCommand\nevil\0local\0core.editor\nvim\0";
        assert_eq!(
            steering(l),
            vec![
                ("remote.origin.url".into(), "https://github.com/a/b".into()),
                (
                    "url./tmp/evil.insteadof".into(),
                    "https://github.com/a/b".into()
                ),
                ("core.sshcommand".into(), "evil".into()),
            ]
        );
        let then = steering(b"local\0remote.origin.url\na\0");
        let now = steering(b"local\0remote.origin.url\nb\0local\0remote.origin.vcs\nx\0");
        assert_eq!(
            changed(&then, &now),
            ["remote.origin.url", "remote.origin.vcs"]
        );
        assert!(changed(&now, &now).is_empty());
    }

    /// git with an identity, outside ralph's hardening (as a user or a
    /// session runs it).
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgSign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A repository on branch `work` whose `origin` is a bare repository
    /// that has it; a second clone to move the remote with.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (bare, repo, other) = (
            d.path().join("o.git"),
            d.path().join("r"),
            d.path().join("x"),
        );
        git(
            d.path(),
            &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
        );
        git(
            d.path(),
            &["init", "-q", "-b", "main", repo.to_str().unwrap()],
        );
        for (f, t) in [("a.txt", "a\n"), ("b.txt", "b\n")] {
            std::fs::write(repo.join(f), t).unwrap();
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "start"]);
        git(&repo, &["remote", "add", "origin", bare.to_str().unwrap()]);
        git(&repo, &["push", "-q", "origin", "main"]);
        git(&repo, &["switch", "-q", "-c", "work"]);
        git(
            d.path(),
            &[
                "clone",
                "-q",
                bare.to_str().unwrap(),
                other.to_str().unwrap(),
            ],
        );
        (d, bare, repo, other)
    }

    fn commit(dir: &Path, file: &str, text: &str) {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", file]);
    }

    #[test]
    fn a_push_goes_where_it_did_at_the_start_and_runs_nothing_planted() {
        use std::os::unix::fs::PermissionsExt;
        let (d, bare, repo, _) = setup();
        let t = target(&repo).unwrap();
        assert_eq!((t.branch.as_str(), t.remote.as_str()), ("work", "origin"));
        commit(&repo, "c.txt", "c\n");
        // What a session could plant in .git: a pre-push hook, git's
        // receive-pack swapped, a signing program.
        let mark = d.path().join("ran");
        let evil = format!("touch {}; exec git-receive-pack \"$@\"", mark.display());
        let hook = repo.join(".git/hooks/pre-push");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", mark.display())).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        git(
            &repo,
            &[
                "config",
                "sequence.editor",
                &format!("touch {}", mark.display()),
            ],
        );
        git(&repo, &["config", "push.gpgSign", "true"]);
        git(
            &repo,
            &[
                "config",
                "gpg.program",
                &format!("touch {}", mark.display()),
            ],
        );
        // (Read once as the run starts; a key added since refuses the push.)
        let t = target(&repo).unwrap();
        git(&repo, &["config", "remote.origin.receivepack", &evil]);
        let e = t.push(&repo).unwrap_err();
        assert_eq!(
            e,
            Refused::Changed(vec!["remote.origin.receivepack".into()])
        );
        assert!(e.to_string().contains("changed during the run"), "{e}");
        // Present from the start (the user's), it is still not run.
        let t = target(&repo).unwrap();
        assert_eq!(t.push(&repo), Ok(Pushed::Done));
        assert!(!mark.exists(), "a program the repository names ran");
        assert_eq!(
            git(&bare, &["rev-parse", "work"]),
            git(&repo, &["rev-parse", "HEAD"])
        );
        // A planted insteadOf that would send the push elsewhere.
        let elsewhere = d.path().join("elsewhere.git");
        git(
            d.path(),
            &["init", "-q", "--bare", elsewhere.to_str().unwrap()],
        );
        git(
            &repo,
            &[
                "config",
                &format!("url.{}.pushInsteadOf", elsewhere.display()),
                bare.to_str().unwrap(),
            ],
        );
        let e = t.push(&repo).unwrap_err();
        assert!(
            matches!(&e, Refused::Changed(k) if k.iter().any(|k| k.starts_with("url."))),
            "{e}"
        );
    }

    #[test]
    fn a_rejected_push_is_rebased_when_it_applies_cleanly_else_left_for_a_human() {
        let (_d, bare, repo, other) = setup();
        let t = target(&repo).unwrap();
        commit(&repo, "c.txt", "c\n");
        assert_eq!(t.push(&repo), Ok(Pushed::Done));
        // Someone else pushes to the branch: the next push is rejected.
        git(&other, &["fetch", "-q", "origin"]);
        git(&other, &["switch", "-q", "work"]);
        commit(&other, "theirs.txt", "t\n");
        git(&other, &["push", "-q", "origin", "work"]);
        commit(&repo, "d.txt", "d\n");
        let Ok(Pushed::Rebased { rejected }) = t.push(&repo) else {
            panic!("not rebased")
        };
        assert!(rejected.contains("rejected"), "{rejected}");
        assert!(repo.join("theirs.txt").exists());
        assert_eq!(
            git(&bare, &["rev-parse", "work"]),
            git(&repo, &["rev-parse", "HEAD"])
        );
        // Now a change that conflicts: nothing is forced, nothing is lost.
        git(&other, &["pull", "-q", "--rebase", "origin", "work"]);
        commit(&other, "a.txt", "theirs\n");
        git(&other, &["push", "-q", "origin", "work"]);
        commit(&repo, "a.txt", "mine\n");
        let mine = git(&repo, &["rev-parse", "HEAD"]);
        let e = t.push(&repo).unwrap_err();
        assert!(matches!(e, Refused::Conflict { .. }), "{e}");
        assert!(e.to_string().contains("by hand"), "{e}");
        assert_eq!(
            git(&repo, &["rev-parse", "HEAD"]),
            mine,
            "the rebase is undone"
        );
        assert!(!repo.join(".git/rebase-merge").exists());
        assert_eq!(
            git(&bare, &["rev-parse", "work"]),
            git(&other, &["rev-parse", "HEAD"])
        );
    }

    #[test]
    fn a_swap_to_what_another_push_put_there_already_is_lost_not_won() {
        // git counts a push of the object a ref holds already as done,
        // whatever its lease says: two machines that make the same claim
        // commit (same step, name, run and second) must not both win it.
        let (_d, bare, repo, other) = setup();
        let t = target(&repo).unwrap();
        let name = "refs/ralph/claims/s";
        let c = git(&repo, &["rev-parse", "HEAD"]);
        git(&other, &["push", "-q", "origin", &format!("{c}:{name}")]);
        assert_eq!(
            t.swap_ref(&repo, name, Some(&c), None),
            Ok(false),
            "create-only"
        );
        assert_eq!(
            t.swap_ref(&repo, name, Some(&c), Some(&"1".repeat(40))),
            Ok(false),
            "expected elsewhere"
        );
        // The holder's own renewal to the same commit is still its own.
        assert_eq!(t.swap_ref(&repo, name, Some(&c), Some(&c)), Ok(true));
        assert_eq!(git(&bare, &["rev-parse", name]), c);
    }

    #[test]
    fn a_ref_that_cannot_be_made_for_one_below_it_is_a_failure_not_a_lost_race() {
        // `refs/ralph/claims/s/x` on the remote (anyone who can push may
        // push it) keeps `refs/ralph/claims/s` from ever being made: read
        // as a race lost, a worker would look again and lose again, at
        // once and for ever.
        let (_d, _bare, repo, other) = setup();
        let t = target(&repo).unwrap();
        let c = git(&repo, &["rev-parse", "HEAD"]);
        git(
            &other,
            &[
                "push",
                "-q",
                "origin",
                &format!("{c}:refs/ralph/claims/s/x"),
            ],
        );
        let e = t
            .swap_ref(&repo, "refs/ralph/claims/s", Some(&c), None)
            .unwrap_err();
        assert!(e.contains("refs/ralph/claims/s/x"), "{e}");
    }

    #[test]
    fn a_rejection_is_told_from_a_failure() {
        let out = "To /tmp/o.git\n!\tHEAD:refs/heads/b\t[rejected] (fetch first)\nDone\n";
        assert_eq!(
            rejection(out, "error: failed to push").as_deref(),
            Some("[rejected] (fetch first)")
        );
        assert_eq!(rejection("", "fatal: could not read Username"), None);
        assert!(!plain_name("--upload-pack=x") && plain_name("origin") && !plain_name(""));
    }
}
