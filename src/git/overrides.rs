//! What ralph's git sets over a repository's config so that no program it
//! names runs (pure: the keys, the listing read, the overrides made), and
//! the listing kept while none of the files it came from changed.

use std::path::{Path, PathBuf};

/// Which keys, when the repository's own config (`local` or `worktree`
/// scope, includes too) sets them, name a program git runs, and what ralph
/// sets instead when your own config (system, global, command line) has no
/// value for them: `(section, subsection?, variable, neutral)`, `*` for any
/// subsection or variable. Taken from git 2.47's `Documentation/config/`
/// and `gitattributes`, each key checked against what ralph's git runs
/// (status, diff, log, add, commit, merge, checkout, worktree add):
/// - filters (clean on add, diff, merge; smudge on checkout, merge,
///   worktree add): emptied, and not `required`, so nothing runs;
/// - merge drivers: `false`, a conflict ralph's merge stops on and says;
/// - signing (on with `commit.gpgSign`), its programs, and the commands git runs for ssh, proxies,
///   credentials, passwords, alternates, pagers and editors: git's own
///   defaults or nothing;
/// - `submodule.recurse`: git in a submodule would read the submodule's
///   own config.
///
/// `diff.external` and `diff.<driver>.command`/`textconv` are off by the
/// flags every diff, log and show gets (`--no-ext-diff --no-textconv`);
/// `core.fsmonitor` and hooks by `HARDENED`; `credential.*helper` is reset
/// and your own helpers given again. Left out, as ralph runs none of the
/// commands that read them: difftool, mergetool, web--browse, help,
/// send-email, imap-send, archive, interpret-trailers, submodule update.
/// `--push`'s push, fetch and rebase (`ship::push`) go to the URL the
/// remote had as the run began, so no `remote.*` key (receivepack,
/// uploadpack, vcs, mirror) applies, with `--no-signed --no-verify
/// --recurse-submodules=no` and git's own receive-pack and upload-pack;
/// the repository's keys that steer transport (`remote.*`, `url.*`,
/// `http.*`, `credential.*`...) must be as they were then.
const PROGRAM_KEYS: [(&str, Option<&str>, &str, &str); 20] = [
    ("filter", Some("*"), "clean", ""),
    ("filter", Some("*"), "smudge", ""),
    ("filter", Some("*"), "process", ""),
    ("merge", Some("*"), "driver", "false"),
    // Signing runs the signing program with your key: your choice only.
    ("commit", None, "gpgsign", "false"),
    ("tag", None, "gpgsign", "false"),
    ("gpg", None, "program", "gpg"),
    ("gpg", Some("openpgp"), "program", "gpg"),
    ("gpg", Some("x509"), "program", "gpgsm"),
    ("gpg", Some("ssh"), "program", "ssh-keygen"),
    ("gpg", Some("ssh"), "defaultkeycommand", ""),
    ("core", None, "sshcommand", "ssh"),
    ("core", None, "gitproxy", ""),
    ("core", None, "askpass", ""),
    ("core", None, "alternaterefscommand", ""),
    ("core", None, "pager", "cat"),
    ("core", None, "editor", "true"),
    // `--push`'s rebase after a rejected push (never interactive).
    ("sequence", None, "editor", "true"),
    ("pager", None, "*", "false"),
    ("submodule", None, "recurse", "false"),
];

/// One entry of `git config --list --show-scope --show-origin --includes -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    scope: String,
    /// Where it was read: `file:<path>` (relative paths are the
    /// repository's), `command line:`, `blob:...`, `standard input:`.
    origin: String,
    key: String,
    value: String,
}

/// `scope\0origin\0key\nvalue\0` records (a key without a value has no
/// `\n`).
fn entries(listing: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut it = listing.split(|b| *b == 0);
    while let (Some(scope), Some(origin), Some(kv)) = (it.next(), it.next(), it.next()) {
        let text = String::from_utf8_lossy(kv);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        out.push(Entry {
            scope: String::from_utf8_lossy(scope).into_owned(),
            origin: String::from_utf8_lossy(origin).into_owned(),
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    out
}

/// A key's section, subsection and variable (section and variable in
/// lower case, as git lists them; the subsection as it is).
fn parts(key: &str) -> (String, Option<&str>, String) {
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    match rest.rsplit_once('.') {
        Some((sub, var)) => (section.to_lowercase(), Some(sub), var.to_lowercase()),
        None => (section.to_lowercase(), None, rest.to_lowercase()),
    }
}

fn is_repositorys(scope: &str) -> bool {
    matches!(scope, "local" | "worktree")
}

/// The neutral value of `key` if it names a program.
fn program_key(key: &str) -> Option<&'static str> {
    let (section, sub, var) = parts(key);
    PROGRAM_KEYS.iter().find_map(|&(s, want_sub, v, neutral)| {
        let sub_fits = match (want_sub, sub) {
            (None, None) => true,
            (Some("*"), Some(_)) => true,
            (Some(w), Some(have)) => w == have.to_lowercase(),
            _ => false,
        };
        (s == section && sub_fits && (v == "*" || v == var)).then_some(neutral)
    })
}

fn is_credential_helper(key: &str) -> bool {
    let (section, _, var) = parts(key);
    section == "credential" && var == "helper"
}

/// What ralph's git sets over the repository's config, as `(key, value)`
/// pairs (given through `GIT_CONFIG_KEY_n`, where a key may hold any
/// character): each program key the repository sets gets your own value,
/// else a neutral one. Pure: `listing` is `git config --list --show-scope
/// --show-origin --includes -z`. `Err` when the repository moves the work
/// tree elsewhere (`core.worktree`, which no override undoes).
fn overrides(listing: &[u8]) -> Result<Vec<(String, String)>, String> {
    let all = entries(listing);
    let (repo, yours): (Vec<&Entry>, Vec<&Entry>) =
        all.iter().partition(|e| is_repositorys(&e.scope));
    if let Some(e) = repo
        .iter()
        .find(|e| e.key.eq_ignore_ascii_case("core.worktree"))
    {
        return Err(format!(
            "the repository's config sets core.worktree = {:?}: ralph runs no git on a work tree moved elsewhere (`git config --unset core.worktree` if you did not mean it)",
            crate::output::visible_line(&e.value)
        ));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    for e in &repo {
        if done.contains(&e.key.as_str()) {
            continue;
        }
        done.push(&e.key);
        if is_credential_helper(&e.key) {
            if !out.iter().any(|(k, _)| k == "credential.helper") {
                // An empty helper resets the list; then yours, in order.
                out.push(("credential.helper".into(), String::new()));
                out.extend(
                    yours
                        .iter()
                        .filter(|y| is_credential_helper(&y.key))
                        .map(|y| (y.key.clone(), y.value.clone())),
                );
            }
            continue;
        }
        let Some(neutral) = program_key(&e.key) else {
            continue;
        };
        let own = yours.iter().rev().find(|y| y.key == e.key);
        let value = own.map_or(neutral, |y| y.value.as_str());
        out.push((e.key.clone(), value.to_string()));
        let (section, sub, _) = parts(&e.key);
        if section == "filter" && own.is_none() {
            let sub = sub.unwrap_or_default();
            out.push((format!("filter.{sub}.required"), "false".into()));
        }
    }
    Ok(out)
}

/// What a file was, for telling whether it changed: `None` if it was not
/// there. Its change time moves with any write to it, and no one can set it.
type Stamp = Option<(u64, u64, u64, i64, i64)>;

/// Seconds and nanoseconds as nanoseconds.
fn ns(s: i64, n: i64) -> i64 {
    s * 1_000_000_000 + n
}

fn stamp(p: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| {
        (
            m.dev(),
            m.ino(),
            m.size(),
            ns(m.mtime(), m.mtime_nsec()),
            ns(m.ctime(), m.ctime_nsec()),
        )
    })
}

/// The files a listing in `dir` came from, and those it could come from
/// next (each include's target, there or not; the repository's config
/// files; yours): while none of them changed, the same listing holds.
/// `None` when that cannot be told from files (a conditional include, a
/// config from elsewhere than a file).
fn watched(all: &[Entry], dir: &Path) -> Option<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = always_watched(dir)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for e in all {
        if e.key.starts_with("includeif.") {
            return None;
        }
        let from = match e.origin.strip_prefix("file:") {
            Some(f) => dir.join(f),
            None if e.scope == "command" => continue,
            None => return None,
        };
        if e.key == "include.path" {
            // `~user/...` is another user's home: not told from here.
            if e.value.starts_with('~') && !e.value.starts_with("~/") {
                return None;
            }
            let target = match (e.value.strip_prefix("~/"), &home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ => from.parent().unwrap_or(dir).join(&e.value),
            };
            files.push(target);
        }
        files.push(from);
    }
    files.sort();
    files.dedup();
    Some(files)
}

/// The files every listing in `dir` is watched by, whatever it holds: the
/// repository's config files (`git_files`), yours and the system's.
fn always_watched(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut files = git_files(dir)?;
    if let Some(h) = std::env::var_os("HOME").map(PathBuf::from) {
        files.extend([h.join(".gitconfig"), h.join(".config/git/config")]);
    }
    files.push(PathBuf::from("/etc/gitconfig"));
    Some(files)
}

/// Was the file at `path`, stamped `now` after a listing, as it was before
/// it (`before`: stamps taken before the listing)? The same path with the
/// same stamp; or, for a file that is there, the same stamp (device,
/// inode, size and times) under another name (git names the common config
/// of a linked worktree by its own path, `git_files` through
/// `commondir`). A file that is not there now was not there before under
/// that name.
fn unchanged_since(before: &[(PathBuf, Stamp)], path: &Path, now: &Stamp) -> bool {
    before
        .iter()
        .any(|(p, s)| s == now && (p == path || now.is_some()))
}

/// The repository's config files git reads in `dir` (there or not), and
/// what says where they are: `.git/config`, `.git/config.worktree` and
/// `.git/commondir` (not `.git` itself: git changes that folder on every
/// call); in a linked worktree (a `.git` file naming its git folder, as
/// the parallel run's workers have), that file, its git folder's
/// `config.worktree` and `commondir`, and the common folder's `config` and
/// `config.worktree`. `None` when that cannot be told (a `.git` that is a
/// link, a git file or `commondir` that cannot be read).
fn git_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let dotgit = dir.join(".git");
    let meta = std::fs::symlink_metadata(&dotgit).ok()?;
    let (gitdir, mut files) = if meta.is_dir() {
        (dotgit, Vec::new())
    } else if meta.is_file() {
        let text = std::fs::read_to_string(&dotgit).ok()?;
        let named = gitdir_named(&text)?;
        (dir.join(named), vec![dotgit])
    } else {
        return None;
    };
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim_end_matches(['\n', '\r'])),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => gitdir.clone(),
        Err(_) => return None,
    };
    files.extend([
        gitdir.join("config"),
        gitdir.join("config.worktree"),
        gitdir.join("commondir"),
        common.join("config"),
        common.join("config.worktree"),
    ]);
    Some(files)
}

/// The git folder a `.git` file names (`gitdir: <path>`, as git reads it:
/// the line's end stripped), if it names one.
fn gitdir_named(text: &str) -> Option<&str> {
    let path = text
        .strip_prefix("gitdir: ")?
        .trim_end_matches(['\n', '\r']);
    (!path.is_empty() && !path.contains('\n')).then_some(path)
}

/// The last listing's overrides in one folder, and what its files were.
struct Kept {
    dir: PathBuf,
    files: Vec<(PathBuf, Stamp)>,
    set: Result<Vec<(String, String)>, String>,
}

thread_local! {
    /// Per thread (the loop's git runs on one): no lock, and no thread's
    /// listing stands in for another's.
    static KEPT: std::cell::RefCell<Vec<Kept>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The overrides for git in `dir`: `list` (the config's listing) is run
/// only when a file the last listing there came from has changed since.
pub(super) fn of(dir: &Path, list: impl Fn() -> Vec<u8>) -> Result<Vec<(String, String)>, String> {
    KEPT.with_borrow_mut(|kept| of_in(kept, dir, list))
}

fn of_in(
    kept: &mut Vec<Kept>,
    dir: &Path,
    list: impl Fn() -> Vec<u8>,
) -> Result<Vec<(String, String)>, String> {
    if let Some(k) = kept.iter().find(|k| k.dir == dir)
        && k.files.iter().all(|(p, s)| stamp(p) == *s)
    {
        return k.set.clone();
    }
    // Stamped before the listing too: a file with the same stamp before
    // and after it was the same all through it, and its listing is not
    // asked of git a second time (a `git config --list` less for each
    // folder a process first runs git in: a parallel run's worker and its
    // new worktree each, as the next wave waits for them).
    let before: Option<Vec<(PathBuf, Stamp)>> = always_watched(dir).map(|files| {
        files
            .into_iter()
            .map(|p| {
                let s = stamp(&p);
                (p, s)
            })
            .collect()
    });
    let listing = list();
    let all = entries(&listing);
    let set = overrides(&listing);
    kept.retain(|k| k.dir != dir);
    if let Some(files) = watched(&all, dir) {
        let files: Vec<(PathBuf, Stamp)> = files
            .into_iter()
            .map(|p| {
                let s = stamp(&p);
                (p, s)
            })
            .collect();
        let steady =
            before.is_some_and(|before| files.iter().all(|(p, s)| unchanged_since(&before, p, s)));
        // Kept only if nothing changed between the listing and the stamps:
        // each file as it was before the listing, or the files as stamped
        // give the same listing again.
        if !steady && list() != listing {
            return set;
        }
        kept.push(Kept {
            dir: dir.to_path_buf(),
            files,
            set: set.clone(),
        });
        // A handful of folders a process uses; never many.
        if kept.len() > 16 {
            kept.remove(0);
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(entries: &[(&str, &str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (scope, key, value) in entries {
            let origin = if *scope == "command" {
                "command line:".to_string()
            } else {
                format!("file:{scope}.cfg")
            };
            out.extend_from_slice(format!("{scope}\0{origin}\0{key}\n{value}\0").as_bytes());
        }
        out
    }

    #[test]
    fn the_repositorys_program_keys_get_yours_or_nothing() {
        let l = listing(&[
            ("global", "filter.lfs.clean", "git-lfs clean -- %f"),
            ("global", "credential.helper", "store"),
            ("global", "credential.https://a.example.helper", "cache"),
            ("local", "filter.lfs.clean", "evil"),
            ("local", "filter.My=Drv.smudge", "evil"),
            ("local", "merge.npm.driver", "evil %A"),
            ("local", "gpg.x509.program", "evil"),
            ("worktree", "core.sshCommand", "evil"),
            ("local", "credential.helper", "!evil"),
            ("local", "credential.https://b.example.helper", "!evil"),
            ("local", "pager.status", "evil"),
            ("local", "user.name", "someone"),
            ("local", "diff.x.textconv", "evil"),
            ("command", "core.editor", "vim"),
            ("local", "core.editor", "evil"),
        ]);
        let got = overrides(&l).unwrap();
        let want: Vec<(String, String)> = [
            ("filter.lfs.clean", "git-lfs clean -- %f"),
            ("filter.My=Drv.smudge", ""),
            ("filter.My=Drv.required", "false"),
            ("merge.npm.driver", "false"),
            ("gpg.x509.program", "gpgsm"),
            ("core.sshCommand", "ssh"),
            ("credential.helper", ""),
            ("credential.helper", "store"),
            ("credential.https://a.example.helper", "cache"),
            ("pager.status", "false"),
            ("core.editor", "vim"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        // Your own config alone overrides nothing.
        assert!(
            overrides(&listing(&[("global", "core.sshCommand", "ssh -i k")]))
                .unwrap()
                .is_empty()
        );
        let e = overrides(&listing(&[("local", "core.worktree", "/home/u")])).unwrap_err();
        assert!(e.contains("core.worktree = \"/home/u\""), "{e}");
    }

    #[test]
    fn what_a_listing_came_from_is_told_from_its_origins() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        let l = |s: &str| entries(s.as_bytes());
        // Your command line's settings come from no file: still kept.
        let files = watched(&l("command\0command line:\0user.name\nx\0"), dir).unwrap();
        assert!(files.contains(&dir.join(".git/config")), "{files:?}");
        // A config from no file of ours (a blob): never kept.
        assert_eq!(watched(&l("local\0blob:abc\0user.name\nx\0"), dir), None);
        // `~/` is your home; `~user/` is another's: never kept.
        let home = PathBuf::from(std::env::var("HOME").unwrap());
        let files = watched(
            &l("local\0file:.git/config\0include.path\n~/inc.cfg\0"),
            dir,
        )
        .unwrap();
        assert!(files.contains(&home.join("inc.cfg")), "{files:?}");
        assert_eq!(
            watched(
                &l("local\0file:.git/config\0include.path\n~root/inc.cfg\0"),
                dir
            ),
            None
        );
        // A linked worktree: its `.git` file, its git folder's files and
        // the common folder's config (its `commondir`, relative to it).
        let wt = dir.join("wt");
        let gitdir = dir.join(".git/worktrees/wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\r\n", gitdir.display())).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        let files = watched(&l("command\0command line:\0a.b\nx\0"), &wt).unwrap();
        for f in [
            wt.join(".git"),
            gitdir.join("config.worktree"),
            gitdir.join("commondir"),
            gitdir.join("../../config"),
            gitdir.join("../../config.worktree"),
        ] {
            assert!(files.contains(&f), "{f:?} in {files:?}");
        }
        // A `.git` file that names no folder, or a link: never kept.
        std::fs::write(wt.join(".git"), "gitdir: \n").unwrap();
        assert_eq!(watched(&l("command\0command line:\0a.b\nx\0"), &wt), None);
        std::fs::write(wt.join(".git"), "nothing\n").unwrap();
        assert_eq!(watched(&l("command\0command line:\0a.b\nx\0"), &wt), None);
        std::fs::remove_file(wt.join(".git")).unwrap();
        std::os::unix::fs::symlink(dir.join(".git"), wt.join(".git")).unwrap();
        assert_eq!(watched(&l("command\0command line:\0a.b\nx\0"), &wt), None);
        // Times to the nanosecond: a second is not a nanosecond.
        assert_eq!(ns(1, 5), 1_000_000_005);
        // Only `helper` under `credential` is a credential helper.
        assert!(is_credential_helper("credential.https://a.example.helper"));
        assert!(!is_credential_helper(
            "credential.https://a.example.username"
        ));
        assert!(!is_credential_helper("remote.helper"));
    }

    #[test]
    fn a_linked_worktrees_listing_is_kept_until_the_repositorys_config_changes() {
        let d = tempfile::tempdir().unwrap();
        let (main, wt) = (d.path().join("main"), d.path().join("wt"));
        let git = |dir: &Path, args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
            out.stdout
        };
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.name=a",
                "-c",
                "user.email=a@a",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "a",
            ],
        );
        git(&main, &["worktree", "add", "-q", wt.to_str().unwrap()]);
        let listed = std::cell::Cell::new(0);
        let list = || {
            listed.set(listed.get() + 1);
            git(&wt, &crate::git::CONFIG_LIST)
        };
        let first = of(&wt, list).unwrap();
        assert!(
            !first.iter().any(|(k, _)| k == "filter.x.clean"),
            "{first:?}"
        );
        let n = listed.get();
        assert_eq!(of(&wt, list).unwrap(), first);
        assert_eq!(listed.get(), n, "kept: nothing changed");
        // The repository's config, changed from its main checkout.
        git(&main, &["config", "--local", "filter.x.clean", "evil"]);
        let set = of(&wt, list).unwrap();
        assert!(
            set.iter()
                .any(|(k, v)| k == "filter.x.clean" && v.is_empty()),
            "{set:?}"
        );
    }

    #[test]
    fn a_listing_is_asked_once_unless_a_file_changes_while_git_lists() {
        let d = tempfile::tempdir().unwrap();
        let listing = |dir: &Path| {
            let cfg = std::fs::read_to_string(dir.join(".git/config")).unwrap_or_default();
            format!("local\0file:.git/config\0filter.a.clean\n{cfg}\0").into_bytes()
        };
        let (steady, moving) = (d.path().join("steady"), d.path().join("moving"));
        for dir in [&steady, &moving] {
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            std::fs::write(dir.join(".git/config"), "x").unwrap();
        }
        let listed = std::cell::Cell::new(0);
        let mut kept = Vec::new();
        of_in(&mut kept, &steady, || {
            listed.set(listed.get() + 1);
            listing(&steady)
        })
        .unwrap();
        assert_eq!(listed.get(), 1, "its files were the same before and after");
        // The config written while git lists it: listed again, not kept.
        listed.set(0);
        let list = || {
            listed.set(listed.get() + 1);
            let l = listing(&moving);
            if listed.get() == 1 {
                std::fs::write(moving.join(".git/config"), "evil!").unwrap();
            }
            l
        };
        let first = of_in(&mut kept, &moving, list).unwrap();
        assert!(
            first.iter().any(|(k, _)| k == "filter.a.clean"),
            "{first:?}"
        );
        assert_eq!(listed.get(), 2, "asked again");
        of_in(&mut kept, &moving, list).unwrap();
        assert_eq!(listed.get(), 3, "not kept: listed anew, once");
        of_in(&mut kept, &moving, list).unwrap();
        assert_eq!(listed.get(), 3, "kept now");
    }

    #[test]
    fn a_listing_is_kept_until_a_file_it_came_from_changes() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        // An include is read beside the file that names it.
        let inc = dir.join(".git/inc.cfg");
        let listed = std::cell::Cell::new(0);
        let body = || {
            let (cfg, inc) = (
                std::fs::read_to_string(dir.join(".git/config")).unwrap_or_default(),
                std::fs::read_to_string(dir.join(".git/inc.cfg")).unwrap_or_default(),
            );
            let mut l = format!("local\0file:.git/config\0include.path\n{}\0", "inc.cfg");
            if !cfg.is_empty() {
                l.push_str(&format!("local\0file:.git/config\0filter.a.clean\n{cfg}\0"));
            }
            if !inc.is_empty() {
                l.push_str(&format!(
                    "local\0file:.git/inc.cfg\0filter.b.clean\n{inc}\0"
                ));
            }
            l.into_bytes()
        };
        let list = || {
            listed.set(listed.get() + 1);
            body()
        };
        let first = of(dir, list).unwrap();
        assert!(first.is_empty());
        let n = listed.get();
        assert_eq!(of(dir, list).unwrap(), first);
        assert_eq!(listed.get(), n, "kept: nothing changed");
        // A change to the config, then to an include that was not there.
        std::fs::write(dir.join(".git/config"), "evil").unwrap();
        let set = of(dir, list).unwrap();
        assert!(set.iter().any(|(k, _)| k == "filter.a.clean"), "{set:?}");
        std::fs::write(&inc, "evil").unwrap();
        let set = of(dir, list).unwrap();
        assert!(set.iter().any(|(k, _)| k == "filter.b.clean"), "{set:?}");
        // Another folder's listing is its own; this one's stays kept.
        let other = d.path().join("other");
        std::fs::create_dir_all(other.join(".git")).unwrap();
        let n = listed.get();
        of(&other, list).unwrap();
        assert!(listed.get() > n);
        let n = listed.get();
        of(dir, list).unwrap();
        assert_eq!(listed.get(), n, "still kept beside another folder's");
        // At most 16 folders are kept: the oldest goes first.
        let many: Vec<PathBuf> = (0..16).map(|i| d.path().join(format!("m{i}"))).collect();
        for m in &many {
            std::fs::create_dir_all(m.join(".git")).unwrap();
            of(m, list).unwrap();
        }
        let n = listed.get();
        of(&many[15], list).unwrap();
        assert_eq!(listed.get(), n, "the newest is kept");
        of(dir, list).unwrap();
        assert!(listed.get() > n, "the oldest was let go");
        // A conditional include cannot be told from files: never kept.
        let l = b"local\0file:.git/config\0includeif.onbranch:x.path\ny\0".to_vec();
        assert_eq!(watched(&entries(&l), dir), None);
    }
}
