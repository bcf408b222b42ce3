//! The one way ralph runs git: in a given folder, ralph's own fixed words
//! first, then every value that came from a user, a file or git itself after
//! `--end-of-options`, so that no such value is ever read as an option
//! (`--base=--orphan`, a saved head of `--output=/path`).
//!
//! A session can write the project's `.git/config` and `.git/hooks` (a
//! confined Codex's sandbox leaves `.git` writable), and git runs programs
//! named there. ralph's own git acts for the user, not for the session, so
//! it runs none of them: see `overrides` for each key and why the list is
//! whole. It fetches and pushes only for `--push` (`ship::push`), to a
//! URL read as the run began and with `--upload-pack`/`--receive-pack`
//! given (remote.*.uploadpack and receivepack, which `-c` cannot
//! override, then do not apply).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

mod merge;
mod overrides;

pub use merge::{Merged, changed, merge_into_head};

/// What no repository's config may make ralph's own git run, whatever it
/// says: its fsmonitor, submodules' own configs, its hooks (unless asked for), the `ext::`
/// transport, signature checks while reading the log, automatic gc (whose
/// `gc.recentObjectsHook` is a program). `--no-pager`: output is a pipe,
/// but `pager.<cmd>` is a program too.
const HARDENED: [&str; 17] = [
    "--no-pager",
    // A submodule's (or a nested repository's) own config is a project
    // file like any other: git reads it when it looks inside one.
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "submodule.recurse=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "log.showSignature=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "core.hooksPath=/dev/null",
];

/// The environment of ralph's git: no editor, no prompt (its stdin is
/// nothing), no lazy fetch of a partial clone's objects (which would run
/// the promisor remote's programs).
const ENV: [(&str, &str); 4] = [
    ("GIT_EDITOR", "true"),
    ("GIT_SEQUENCE_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
];

/// Where git's own options end and the subcommand's begin: just past the
/// first word that is neither an option nor the value of `-c`/`-C`.
fn subcommand_end(words: &[&str]) -> usize {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        match *w {
            "-c" | "-C" => i += 2,
            w if w.starts_with('-') => i += 1,
            _ => return i + 1,
        }
    }
    0
}

/// The listing of git's config, every scope and where each key comes from,
/// that `overrides` reads (and keeps while its files are unchanged).
pub const CONFIG_LIST: [&str; 6] = [
    "config",
    "--list",
    "--show-scope",
    "--show-origin",
    "--includes",
    "-z",
];

/// git in `dir`.
#[derive(Debug, Clone, Copy)]
pub struct Git<'a> {
    dir: &'a Path,
    /// Run the repository's hooks (for a commit made for the user, where
    /// skipping them would be a silent `--no-verify`).
    hooks: bool,
    /// More environment for this git only (a remote's credentials, kept
    /// out of its arguments).
    env: &'a [(String, String)],
}

pub fn at(dir: &Path) -> Git<'_> {
    Git {
        dir,
        hooks: false,
        env: &[],
    }
}

impl<'a> Git<'a> {
    /// The same git, with this environment too.
    pub fn with_env(self, env: &'a [(String, String)]) -> Self {
        Git { env, ..self }
    }

    /// The same git, with the repository's hooks run (still no fsmonitor).
    pub fn with_hooks(self) -> Self {
        Git {
            hooks: true,
            ..self
        }
    }

    /// git with the hardening and the repository's program keys
    /// overridden (`Err` for a repository ralph runs no git in).
    fn command(&self, words: &[&str], values: &[&str]) -> Result<Command> {
        let mut c = self.base();
        let set = overrides::of(self.dir, || {
            // An unreadable config fails the command itself, said by git.
            self.base()
                .args(CONFIG_LIST)
                .stderr(Stdio::null())
                .output()
                .map(|o| o.stdout)
                .unwrap_or_default()
        })
        .map_err(|e| anyhow::anyhow!(e))?;
        let first = std::env::var("GIT_CONFIG_COUNT")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        for (i, (k, v)) in set.iter().enumerate() {
            c.env(format!("GIT_CONFIG_KEY_{}", first + i), k)
                .env(format!("GIT_CONFIG_VALUE_{}", first + i), v);
        }
        if !set.is_empty() {
            c.env("GIT_CONFIG_COUNT", (first + set.len()).to_string());
        }
        let (sub, rest) = words.split_at(subcommand_end(words));
        c.args(sub);
        // No external diff and no textconv: programs a driver names.
        if sub
            .last()
            .is_some_and(|w| matches!(*w, "diff" | "log" | "show"))
        {
            c.args(["--no-ext-diff", "--no-textconv"]);
        }
        c.args(rest);
        // After a `--`, values are paths already, never options.
        if !values.is_empty() && words.last() != Some(&"--") {
            c.arg("--end-of-options");
        }
        c.args(values);
        Ok(c)
    }

    /// git in the folder, hardened, before any word of the command.
    fn base(&self) -> Command {
        let mut c = Command::new("git");
        let n = HARDENED.len();
        c.args(if self.hooks {
            &HARDENED[..n - 2]
        } else {
            &HARDENED[..]
        });
        c.envs(ENV)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.dir)
            .stdin(Stdio::null());
        c
    }

    /// Its standard output (the end trimmed); an error with git's own
    /// message when it fails.
    pub fn run(&self, words: &[&str], values: &[&str]) -> Result<String> {
        let out = self
            .command(words, values)?
            .output()
            .context("cannot run git")?;
        if !out.status.success() {
            let end: &[&str] = if values.is_empty() {
                &[]
            } else {
                &["--end-of-options"]
            };
            let shown: Vec<&str> = words.iter().chain(end).chain(values).copied().collect();
            bail!(
                "git {} failed: {}",
                shown.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// Whether it succeeded, with its standard output and error, for the
    /// commands whose failure is an answer (a merge that stops on conflicts).
    pub fn attempt(&self, words: &[&str], values: &[&str]) -> Result<(bool, String, String)> {
        let out = self
            .command(words, values)?
            .output()
            .context("cannot run git")?;
        let [o, e] = [out.stdout, out.stderr].map(|b| String::from_utf8_lossy(&b).into_owned());
        Ok((out.status.success(), o, e.trim_end().to_string()))
    }

    /// Its standard output (the end trimmed), given `input` on stdin.
    pub fn run_with_input(&self, words: &[&str], input: &[u8]) -> Result<String> {
        use std::io::Write;
        let mut child = self
            .command(words, &[])?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run git")?;
        let mut stdin = child.stdin.take().context("git's stdin")?;
        let input = input.to_vec();
        let feed = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().context("cannot run git")?;
        let _ = feed.join();
        if !out.status.success() {
            bail!(
                "git {} failed: {}",
                words.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// Paths from a `-z` listing (`diff --name-only -z`), empty on failure.
    pub fn paths(&self, words: &[&str]) -> Vec<String> {
        self.bytes(words)
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// Its raw standard output when it succeeds (for `-z` formats).
    pub fn bytes(&self, words: &[&str]) -> Option<Vec<u8>> {
        let out = self
            .command(words, &[])
            .ok()?
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    }

    /// The objects `names` name (`HEAD:.ralph/spec.md`, `<branch>:path`),
    /// read by one `git cat-file --batch` instead of a `git show` each (a
    /// merge of the parallel run reads seven, one after another, while the
    /// next worker waits): for each, its type and raw content, `None` when
    /// there is no such object (or git failed). A name is one line of
    /// git's input: one with a line break is `None`, never sent.
    pub fn objects(&self, names: &[&str]) -> Vec<Option<Object>> {
        let sent: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !n.is_empty() && !n.contains(['\n', '\r']))
            .collect();
        let mut found = if sent.is_empty() {
            Vec::new()
        } else {
            let input: String = sent.iter().map(|n| format!("{n}\n")).collect();
            self.bytes_with_input(&["cat-file", "--batch"], input.as_bytes())
                .map(|out| parse_batch(&out, sent.len()))
                .unwrap_or_default()
        };
        found.resize(sent.len(), None);
        let mut found = found.into_iter();
        names
            .iter()
            .map(|n| {
                if n.is_empty() || n.contains(['\n', '\r']) {
                    None
                } else {
                    found.next().flatten()
                }
            })
            .collect()
    }

    /// Its raw standard output when it succeeds, given `input` on stdin.
    fn bytes_with_input(&self, words: &[&str], input: &[u8]) -> Option<Vec<u8>> {
        use std::io::Write;
        let mut child = self
            .command(words, &[])
            .ok()?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut stdin = child.stdin.take()?;
        let input = input.to_vec();
        // Fed from a thread: git writes while it reads, and a full pipe
        // either way would stop both.
        let feed = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().ok()?;
        let _ = feed.join();
        out.status.success().then_some(out.stdout)
    }

    /// Did it succeed?
    pub fn ok(&self, words: &[&str], values: &[&str]) -> bool {
        self.command(words, values).is_ok_and(|mut c| {
            c.stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    }
}

/// An object as `git cat-file --batch` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Its id, in hex.
    pub id: String,
    /// `blob`, `tree`, `commit`, `tag`.
    pub kind: String,
    /// Its raw content (a tree's in git's own binary form).
    pub content: Vec<u8>,
}

/// `git cat-file --batch`'s answer to `n` names: for each, `<oid> <type>
/// <size>\n<content>\n`, or `<name> missing\n` (or `ambiguous`) for no
/// object; each object, `None` for the others (and for whatever follows
/// output that does not read as git's). Pure.
fn parse_batch(out: &[u8], n: usize) -> Vec<Option<Object>> {
    let mut objects = Vec::with_capacity(n);
    let mut rest = out;
    while objects.len() < n {
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            break;
        };
        let header = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 1..];
        let fields: Vec<&str> = header.split(' ').collect();
        let object = match fields.as_slice() {
            [oid, kind, size] if oid.bytes().all(|b| b.is_ascii_hexdigit()) => size
                .parse::<usize>()
                .ok()
                .map(|s| (oid.to_string(), kind.to_string(), s)),
            _ => None,
        };
        match object {
            Some((id, kind, size)) if rest.len() > size && rest[size] == b'\n' => {
                objects.push(Some(Object {
                    id,
                    kind,
                    content: rest[..size].to_vec(),
                }));
                rest = &rest[size + 1..];
            }
            // Content cut short: nothing after it can be placed.
            Some(_) => break,
            None => objects.push(None),
        }
    }
    objects
}

/// A tree object's raw content (`git cat-file --batch`'s, for a tree
/// whose id has `id_len` hex digits) as `git ls-tree -z` lists it: `<mode>
/// <type> <id>\t<name>\0` for each entry, its mode as git reads it
/// (`canon_mode`: a file 100644 or 100755, a link 120000, a folder 040000,
/// else a submodule's 160000) and its type told by it. `None` for content
/// that does not read as a tree. Pure.
pub fn tree_listing(raw: &[u8], id_len: usize) -> Option<Vec<u8>> {
    let hash = id_len / 2;
    let mut out = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ')?;
        let mode = u32::from_str_radix(std::str::from_utf8(&rest[..space]).ok()?, 8).ok()?;
        rest = &rest[space + 1..];
        let nul = rest.iter().position(|b| *b == 0)?;
        let name = &rest[..nul];
        rest = &rest[nul + 1..];
        let id = rest.get(..hash)?;
        rest = &rest[hash..];
        let (mode, kind) = match mode & 0o170000 {
            0o100000 if mode & 0o100 != 0 => (0o100755, "blob"),
            0o100000 => (0o100644, "blob"),
            0o120000 => (0o120000, "blob"),
            0o040000 => (0o040000, "tree"),
            _ => (0o160000, "commit"),
        };
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        out.extend(format!("{mode:06o} {kind} {hex}\t").as_bytes());
        out.extend(name);
        out.push(0);
    }
    Some(out)
}

/// The branch checked out at `root`, if any.
pub fn branch(root: &Path) -> Option<String> {
    at(root)
        .run(&["symbolic-ref", "--quiet", "--short", "HEAD"], &[])
        .ok()
        .map(|b| b.trim().to_string())
}

/// A worktree NAME: letters, digits, `.`, `_`, `-`; it names a folder and a
/// branch, so nothing that git or a shell would read otherwise.
pub fn check_worktree_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['-', '.'])
        && !name.contains("..")
        && !name.ends_with(".lock")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--worktree {name:?}: use letters, digits, '.', '_' and '-' (not first), at most 64"
        ))
    }
}

/// For tests: `git commit ARGS` as a tester (no identity needed on the
/// machine); what git printed.
#[cfg(test)]
impl Git<'_> {
    pub(crate) fn commit_as_tester(&self, args: &[&str]) -> String {
        let id = ["-c", "user.name=t", "-c", "user.email=t@t", "commit"];
        self.run(&[&id[..], args].concat(), &[]).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_never_options() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        g.run(&["init", "-q"], &[]).unwrap();
        let out = d.path().join("written");
        let e = g
            .run(
                &["rev-parse", "--verify", "--quiet"],
                &[&format!("--output={}", out.display())],
            )
            .unwrap_err();
        assert!(format!("{e}").contains("--end-of-options"), "{e}");
        assert!(!out.exists());
        assert!(!g.ok(&["rev-parse", "--verify", "--quiet"], &["--orphan"]));
        // After `--`, a value is a path, even one that looks like an option.
        std::fs::write(d.path().join("--force"), "x").unwrap();
        g.run(&["add", "--"], &["--force"]).unwrap();
        assert_eq!(
            g.paths(&["diff", "--cached", "--name-only", "-z"]),
            ["--force"]
        );
        let (ok, _, said) = g
            .attempt(&["rm", "--cached", "--quiet", "--"], &["--nothing"])
            .unwrap();
        assert!(!ok && said.contains("--nothing"), "{said}");
    }

    #[test]
    fn a_repositorys_config_runs_nothing_through_ralphs_git() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        g.run(&["init", "-q"], &[]).unwrap();
        let marker = d.path().join("pwned");
        let evil = format!("touch {}; false", marker.display());
        // (`git config` takes no `--end-of-options`: the value as a word.)
        g.run(&["config", "core.fsmonitor", &evil], &[]).unwrap();
        std::fs::create_dir_all(d.path().join(".git/hooks")).unwrap();
        let hook = d.path().join(".git/hooks/post-checkout");
        std::fs::write(&hook, format!("#!/bin/sh\n{evil}\n")).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        g.commit_as_tester(&["-q", "--allow-empty", "-m", "x"]);
        g.bytes(&["status", "--porcelain=v2", "-z"]).unwrap();
        g.run(&["checkout", "-q", "-b", "other"], &[]).unwrap();
        assert!(
            !marker.exists(),
            "ralph's git ran what the repository's config names"
        );
        // (The same config does run it for a plain git: the test tests something.)
        std::process::Command::new("git")
            .arg("status")
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(marker.exists(), "a plain `git status` runs core.fsmonitor");
    }

    /// Each program key a session could set, with `.gitattributes` naming
    /// the drivers: none runs through any git ralph runs for a loop.
    #[test]
    fn no_program_the_repository_names_runs_through_ralphs_git() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let g = at(&root);
        g.run(&["init", "-q", "-b", "main"], &[]).unwrap();
        let marks = d.path().join("marks");
        std::fs::create_dir_all(&marks).unwrap();
        let evil = |name: &str| format!("touch {}/{name}; cat", marks.display());
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        std::fs::write(
            root.join(".gitattributes"),
            "*.txt diff=drv filter=flt merge=mrg\n",
        )
        .unwrap();
        g.run(&[&id[..], &["add", "--all"]].concat(), &[]).unwrap();
        g.run(&[&id[..], &["commit", "-qm", "one"]].concat(), &[])
            .unwrap();
        g.run(&["branch", "side"], &[]).unwrap();
        for (key, value) in [
            ("diff.external", evil("diff-external")),
            ("diff.drv.command", evil("diff-command")),
            ("diff.drv.textconv", evil("textconv")),
            ("filter.flt.clean", evil("clean")),
            ("filter.flt.smudge", evil("smudge")),
            ("filter.flt.required", "true".into()),
            ("merge.mrg.driver", evil("merge-driver")),
            ("commit.gpgSign", "true".into()),
            ("gpg.program", format!("{}/gpg", marks.display())),
            ("log.showSignature", "true".into()),
            ("core.fsmonitor", evil("fsmonitor")),
            ("core.pager", evil("pager")),
            ("pager.log", evil("pager-log")),
            ("core.editor", evil("editor")),
            ("gc.auto", "1".into()),
        ] {
            // (`git config` takes no `--end-of-options`: the value as a word.)
            g.run(&["config", key, &value], &[]).unwrap();
        }
        let gpg = marks.join("gpg");
        std::fs::write(
            &gpg,
            format!("#!/bin/sh\ntouch {}/gpg-ran\n", marks.display()),
        )
        .unwrap();
        std::fs::set_permissions(&gpg, std::fs::Permissions::from_mode(0o755)).unwrap();
        let hook = root.join(".git/hooks/pre-commit");
        std::fs::write(&hook, format!("#!/bin/sh\n{}\n", evil("hook"))).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        // What the loop, the reviewer and `worktree merge` run.
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        g.bytes(&["status", "--porcelain=v2", "-z"]).unwrap();
        g.run(&["diff", "HEAD"], &[]).unwrap();
        g.run(&["diff", "--stat", "HEAD"], &[]).unwrap();
        g.run(&[&id[..], &["add", "--all", "--", "."]].concat(), &[])
            .unwrap();
        g.run(
            &[&id[..], &["commit", "--quiet", "-m", "two"]].concat(),
            &[],
        )
        .unwrap();
        g.run(&["log", "-p", "--format=%h %s"], &[]).unwrap();
        g.run(&["checkout", "-q", "side"], &[]).unwrap();
        std::fs::write(root.join("a.txt"), "three\n").unwrap();
        g.run(&[&id[..], &["commit", "-qam", "three"]].concat(), &[])
            .unwrap();
        let (merged, _, said) = g
            .attempt(
                &[&id[..], &["merge", "--no-ff", "--no-commit", "--quiet"]].concat(),
                &["main"],
            )
            .unwrap();
        assert!(!merged, "a merge driver replaced by a conflict: {said}");
        g.run(&["merge", "--abort"], &[]).unwrap();
        g.run(&["checkout", "HEAD", "--"], &["a.txt"]).unwrap();
        let wt = d.path().join("wt");
        g.run(
            &["worktree", "add", "--quiet"],
            &[wt.to_str().unwrap(), "main"],
        )
        .unwrap();
        // And with the project's hooks, as `--commit auto` runs them: the
        // hook runs (you approved that), no program of the config does.
        std::fs::write(root.join("b.txt"), "b\n").unwrap();
        let h = g.with_hooks();
        h.run(&[&id[..], &["add", "--all", "--", "."]].concat(), &[])
            .unwrap();
        h.run(&[&id[..], &["commit", "--quiet", "-m", "b"]].concat(), &[])
            .unwrap();
        let ran: Vec<String> = std::fs::read_dir(&marks)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "gpg")
            .collect();
        assert_eq!(ran, ["hook"], "ran through ralph's git");
        // The same config does run them for a plain git: the test tests something.
        let plain = std::process::Command::new("git")
            .args(["diff", "main~1", "main"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(marks.join("diff-command").exists(), "{plain:?}");
    }

    /// A nested repository's own config is read when git looks inside it:
    /// ralph's git does not look.
    #[test]
    fn a_nested_repositorys_config_runs_nothing_either() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        let sub = root.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        let (g, s) = (at(&root), at(&sub));
        g.run(&["init", "-q"], &[]).unwrap();
        s.run(&["init", "-q"], &[]).unwrap();
        std::fs::write(sub.join("a.txt"), "one\n").unwrap();
        std::fs::write(sub.join(".gitattributes"), "* filter=flt\n").unwrap();
        s.run(&[&id[..], &["add", "--all"]].concat(), &[]).unwrap();
        s.run(&[&id[..], &["commit", "-qm", "one"]].concat(), &[])
            .unwrap();
        let mark = d.path().join("ran");
        let evil = format!("touch {}; cat", mark.display());
        s.run(&["config", "filter.flt.clean", &evil], &[]).unwrap();
        g.run(&[&id[..], &["add", "--all"]].concat(), &[]).unwrap();
        g.run(&[&id[..], &["commit", "-qm", "sub"]].concat(), &[])
            .unwrap();
        // The same size: git must read the file (through its filter) to
        // tell whether it changed.
        std::fs::write(sub.join("a.txt"), "two\n").unwrap();
        g.bytes(&["status", "--porcelain=v2", "-z"]).unwrap();
        g.run(&["diff", "HEAD"], &[]).unwrap();
        g.run(&["diff", "--name-only", "HEAD"], &[]).unwrap();
        // (`git add --all`, which `--commit auto` runs, still asks a `git
        // status` of the nested repository, which reads its config: the
        // README says so.)
        assert!(
            !mark.exists(),
            "ralph's git ran the nested repository's filter"
        );
        std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            mark.exists(),
            "a plain `git status` runs it: the test tests something"
        );
    }

    #[test]
    fn the_subcommand_is_found_past_gits_own_options() {
        assert_eq!(
            subcommand_end(&["-c", "a=b", "--literal-pathspecs", "diff", "-x"]),
            4
        );
        assert_eq!(subcommand_end(&["--version"]), 0);
    }

    #[test]
    fn gits_batch_answer_is_read_object_by_object() {
        let out = b"aa blob 3\nx\ny\nHEAD:nope missing\nbb tree 0\n\nx y z missing\ncc blob 5\nabc";
        let o = |id: &str, kind: &str, content: &[u8]| {
            Some(Object {
                id: id.into(),
                kind: kind.into(),
                content: content.to_vec(),
            })
        };
        assert_eq!(
            parse_batch(out, 6),
            vec![
                o("aa", "blob", b"x\ny"),
                None,
                o("bb", "tree", b""),
                None,
                // Cut short: neither it nor anything after it.
            ]
        );
        assert_eq!(parse_batch(b"", 2), Vec::new());
    }

    #[test]
    fn objects_are_read_as_git_show_reads_them() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        g.run(&["init", "-q"], &[]).unwrap();
        std::fs::create_dir(d.path().join("f")).unwrap();
        std::fs::write(d.path().join("f/a.md"), "one\n\ntwo").unwrap();
        std::fs::write(d.path().join("b.md"), "").unwrap();
        g.run(&["add", "-A"], &[]).unwrap();
        g.commit_as_tester(&["-qm", "c"]);
        let got = g.objects(&[
            "HEAD:f/a.md",
            "HEAD:gone",
            "",
            "HEAD:b.md",
            "a\nb",
            "HEAD:f",
        ]);
        assert_eq!(got.len(), 6);
        let a = got[0].clone().unwrap();
        assert_eq!(
            (a.kind.as_str(), a.content.as_slice()),
            ("blob", &b"one\n\ntwo"[..])
        );
        assert_eq!(a.id, g.run(&["rev-parse", "HEAD:f/a.md"], &[]).unwrap());
        assert_eq!(
            Some(a.content),
            g.bytes(&["show", "HEAD:f/a.md"]),
            "the same bytes as git show"
        );
        assert_eq!((got[1].clone(), got[2].clone()), (None, None));
        let b = got[3].clone().unwrap();
        assert_eq!((b.kind.as_str(), b.content.len()), ("blob", 0));
        assert_eq!(got[4], None, "a name with a line break is never sent");
        assert_eq!(got[5].as_ref().map(|o| o.kind.as_str()), Some("tree"));
    }

    #[test]
    fn a_trees_raw_content_is_listed_as_ls_tree_lists_it() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        g.run(&["init", "-q"], &[]).unwrap();
        std::fs::create_dir_all(d.path().join("t/sub")).unwrap();
        std::fs::write(d.path().join("t/sub/x"), "x").unwrap();
        std::fs::write(d.path().join("t/a b.md"), "a").unwrap();
        std::fs::write(d.path().join("t/run"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("a b.md", d.path().join("t/link")).unwrap();
        g.run(&["add", "-A"], &[]).unwrap();
        g.run(&["update-index", "--chmod=+x", "--", "t/run"], &[])
            .unwrap();
        // A submodule's commit, as a tree entry.
        let head = g.run(&["write-tree"], &[]).unwrap();
        let info = format!("160000,{head},t/mod");
        g.run(&["update-index", "--add", "--cacheinfo", &info], &[])
            .unwrap();
        g.commit_as_tester(&["-qm", "c"]);
        let raw = g.objects(&["HEAD:t"]).remove(0).unwrap();
        assert_eq!(raw.kind, "tree");
        let listed = tree_listing(&raw.content, raw.id.len()).unwrap();
        assert_eq!(Some(listed), g.bytes(&["ls-tree", "-z", "HEAD:t"]));
        assert_eq!(tree_listing(b"100644 x", 40), None);
        assert_eq!(tree_listing(b"", 40), Some(Vec::new()));
    }

    #[test]
    fn output_raw_or_trimmed_and_success_as_asked() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        assert_eq!(g.bytes(&["rev-parse", "--is-inside-work-tree"]), None);
        assert!(!g.ok(&["rev-parse", "--git-dir"], &[]));
        g.run(&["init", "-q"], &[]).unwrap();
        assert_eq!(
            g.bytes(&["rev-parse", "--is-inside-work-tree"]).as_deref(),
            Some(&b"true\n"[..])
        );
        assert!(g.ok(&["rev-parse", "--git-dir"], &[]));
        // No values, no `--end-of-options`: git prints just what was asked.
        assert_eq!(g.run(&["rev-parse", "--git-dir"], &[]).unwrap(), ".git");
        assert_eq!(
            g.run(&["rev-parse", "--verify", "--quiet"], &["HEAD"]).ok(),
            None,
            "no commit yet"
        );
    }
}
