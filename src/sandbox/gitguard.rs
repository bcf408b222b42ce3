//! What a confined session may not change of the repository's git setup:
//! its config, hooks and where it points. Codex's sandbox leaves `.git`
//! writable (ralph names it so, for the session's commits), and git runs
//! what they name: Codex's own git at the next session's start, outside its
//! sandbox, and yours later. Claude Code's sandbox keeps `.git/config` and
//! `.git/hooks` read-only, but a session that renames `.git` and makes a new
//! one takes the read-only binds along. So for every confined session ralph
//! keeps a copy before it and puts back what it changed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The most ralph keeps of one file (a config or a hook is far smaller).
const CAP: u64 = 1 << 20;

/// One file as it was.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum State {
    Missing,
    File(Vec<u8>, u32),
    /// A link, a folder, something else or too big: not ralph's to copy;
    /// anything else there after the session is said, not put back.
    Other,
}

fn state(path: &Path) -> State {
    match fs::symlink_metadata(path) {
        Err(_) => State::Missing,
        Ok(m) if m.is_file() && m.len() <= CAP => match crate::fsutil::read_bytes_capped(path, CAP)
        {
            Ok(Some(b)) => State::File(b, m.permissions().mode() & 0o7777),
            Ok(None) => State::Missing,
            Err(_) => State::Other,
        },
        Ok(_) => State::Other,
    }
}

/// The repository's config, worktree config, attributes and hooks, as they
/// were.
#[derive(Debug)]
pub struct Kept {
    files: Vec<(PathBuf, State)>,
    /// The other worktrees' pointers and config: put back only while their
    /// folder is there (ralph removes a worker's worktree as it ends).
    others: Vec<(PathBuf, State)>,
    hooks: PathBuf,
    shown: PathBuf,
    root: PathBuf,
    /// What `.git` was: a session that swapped it (a folder for a file
    /// that points elsewhere) is not put right by putting files back.
    dot_git: Option<std::fs::FileType>,
    /// The gitlinks (nested repositories) the index held.
    links: Vec<String>,
    /// A parallel run's worker's: the shared folder (`Baseline::common`),
    /// where sibling workers' sessions run as this one's ends.
    siblings: Option<PathBuf>,
}

/// The paths the index holds as gitlinks (mode 160000): nested
/// repositories, whose own config and hooks git runs when it looks into
/// them (`git status` in the project does).
fn gitlinks(root: &Path) -> Vec<String> {
    crate::git::at(root)
        .run(&["ls-files", "--stage", "-z"], &[])
        .map(|out| {
            out.split('\0')
                .filter_map(|e| e.strip_prefix("160000 "))
                .filter_map(|e| e.split_once('\t').map(|(_, p)| p.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// What `dir` holds, by name (hooks; submodules' folders).
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Keep a copy of `root`'s git setup; `None` outside a repository.
pub fn keep(root: &Path) -> Option<Kept> {
    let g = crate::git::at(root);
    let path = |word: &str| -> Option<PathBuf> {
        let p = g.run(&["rev-parse", word], &[]).ok()?;
        Some(root.join(p))
    };
    let (common, own) = (path("--git-common-dir")?, path("--git-dir")?);
    let hooks = common.join("hooks");
    let mut names = vec![
        common.join("config"),
        common.join("config.worktree"),
        common.join("commondir"),
        common.join("info/attributes"),
        common.join("objects/info/alternates"),
    ];
    if own != common {
        names.extend(["config.worktree", "commondir", "gitdir"].map(|f| own.join(f)));
    }
    names.extend(files_in(&hooks));
    // Submodules' git folders: their configs run programs too.
    names.extend(
        files_in(&common.join("modules"))
            .into_iter()
            .map(|m| m.join("config")),
    );
    // Another worktree's pointers lead its git (and ralph's, merging a
    // worker's step) to a config of the session's making.
    let others: Vec<PathBuf> = files_in(&common.join("worktrees"))
        .into_iter()
        .filter(|w| fs::canonicalize(w).ok() != fs::canonicalize(&own).ok())
        .flat_map(|w| ["config.worktree", "commondir", "gitdir"].map(|f| w.join(f)))
        .collect();
    let states = |v: Vec<PathBuf>| v.into_iter().map(|p| (p.clone(), state(&p))).collect();
    Some(Kept {
        files: states(names),
        others: states(others),
        hooks,
        shown: root.to_path_buf(),
        dot_git: kind(&root.join(".git")),
        root: root.to_path_buf(),
        links: gitlinks(root),
        siblings: None,
    })
}

/// The shared part of a repository's git setup as a parallel run began
/// (the common config, hooks, attributes and submodules' configs, which
/// every worktree's sessions share), kept by its coordinator in ralph's
/// state folder. Each worker's guard puts those back to *this*, not to a
/// copy of its own: a copy taken while a sibling's session had planted a
/// hook would put the plant back after the sibling's guard removed it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Baseline {
    common: PathBuf,
    files: Vec<(PathBuf, State)>,
}

impl Baseline {
    /// The shared part of `root`'s setup now.
    pub fn take(root: &Path) -> Option<Baseline> {
        let common = common_dir(root)?;
        let kept = keep(root)?;
        let files = kept
            .files
            .into_iter()
            .filter(|(p, _)| shared(&common, p))
            .collect();
        Some(Baseline { common, files })
    }

    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        crate::fsutil::atomic_write(path, &serde_json::to_vec(self)?, 0o600)
    }

    pub fn load(path: &Path) -> Option<Baseline> {
        let text = crate::fsutil::read_regular_capped(path, 64 << 20).ok()??;
        serde_json::from_str(&text).ok()
    }

    /// Once no worker's session runs: remove the sandboxes' placeholders
    /// the workers' guards left in the shared folder (`Kept::restore`).
    pub fn sweep(&self) {
        for (p, was) in &self.files {
            if is_placeholder(p, was) {
                let _ = fs::remove_file(p);
            }
        }
    }
}

/// A sandbox's own placeholder for a path it keeps read-only: an empty
/// file or a device where there was nothing. Claude Code 2.1.330 makes an
/// empty `config.worktree` in every git folder it guards and leaves it;
/// bubblewrap leaves an empty file as the mount point of each `/dev/null`
/// it binds where nothing was.
fn is_placeholder(p: &Path, was: &State) -> bool {
    use std::os::unix::fs::FileTypeExt;
    *was == State::Missing
        && fs::symlink_metadata(p)
            .is_ok_and(|m| (m.is_file() && m.len() == 0) || m.file_type().is_char_device())
}

/// Is `p` one of the files every worktree shares (not under the common
/// folder's `worktrees/`)?
fn shared(common: &Path, p: &Path) -> bool {
    p.starts_with(common) && !p.starts_with(common.join("worktrees"))
}

fn common_dir(root: &Path) -> Option<PathBuf> {
    let p = crate::git::at(root)
        .run(&["rev-parse", "--git-common-dir"], &[])
        .ok()?;
    Some(root.join(p))
}

/// As `keep`, with the shared files as `base` has them: what a worker's
/// session changed of them, or a sibling's did meanwhile, goes back to
/// how the run found them.
pub fn keep_from(root: &Path, base: &Baseline) -> Option<Kept> {
    let mut kept = keep(root)?;
    let same = |a: &Path, b: &Path| match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    if !same(&common_dir(root)?, &base.common) {
        return Some(kept);
    }
    let common = common_dir(root)?;
    kept.files.retain(|(p, _)| !shared(&common, p));
    kept.siblings = Some(common.clone());
    kept.files.extend(base.files.iter().map(|(p, st)| {
        (
            common.join(p.strip_prefix(&base.common).unwrap_or(p)),
            st.clone(),
        )
    }));
    Some(kept)
}

/// What kind of thing is at `p` (a folder, a file, a link, nothing).
fn kind(p: &Path) -> Option<std::fs::FileType> {
    fs::symlink_metadata(p).ok().map(|m| m.file_type())
}

impl Kept {
    /// Put back what the session changed; what was put back (or could not
    /// be), each as a phrase.
    pub fn restore(self) -> Result<Vec<String>, String> {
        if kind(&self.root.join(".git")) != self.dot_git {
            return Err(format!(
                "the session replaced {} (it was a {}): git would read what it points to now; ralph stops here, for you to put it back",
                self.root.join(".git").display(),
                match self.dot_git {
                    Some(k) if k.is_dir() => "folder",
                    Some(_) => "file",
                    None => "missing",
                }
            ));
        }
        let mut said = self.restore_hooks_folder();
        let others = self
            .others
            .iter()
            .filter(|(p, _)| p.parent().is_some_and(Path::is_dir));
        for (p, was) in self.files.iter().chain(others) {
            // A sibling worker's session may hold a placeholder in the
            // shared folder or its own this moment: its sandbox binds it,
            // and fails if it goes (`Baseline::sweep` removes it later).
            let siblings = self
                .siblings
                .as_ref()
                .is_some_and(|common| shared(common, p) || self.others.iter().any(|(o, _)| o == p));
            // Not an empty `commondir` or `gitdir`: no sandbox makes one,
            // and git stops at it ("failed to read .git/commondir").
            let harmless = !p.ends_with("commondir") && !p.ends_with("gitdir");
            if siblings && harmless && is_placeholder(p, was) {
                continue;
            }
            if let Some(s) = self.restore_file(p, was) {
                said.push(s);
            }
        }
        said.extend(self.quarantine_new_links());
        Ok(said)
    }

    /// A nested repository the session added to the index: git would run
    /// what its own config and hooks name (`core.fsmonitor` on your next
    /// `git status`), which no sandbox held. Its `.git` is renamed
    /// (`.git.ralph-quarantined`): nothing is lost, and git no longer
    /// looks into it.
    fn quarantine_new_links(&self) -> Vec<String> {
        let mut said = Vec::new();
        for link in gitlinks(&self.root) {
            if self.links.contains(&link) {
                continue;
            }
            let git = self.root.join(&link).join(".git");
            if fs::symlink_metadata(&git).is_err() {
                continue;
            }
            let mut to = git.with_file_name(".git.ralph-quarantined");
            for n in 2.. {
                if fs::symlink_metadata(&to).is_err() {
                    break;
                }
                to = git.with_file_name(format!(".git.ralph-quarantined-{n}"));
            }
            said.push(match fs::rename(&git, &to) {
                Ok(()) => format!(
                    "renamed {} to {} (a repository it added inside the project: git would run what its config names)",
                    self.show(&git),
                    self.show(&to)
                ),
                Err(e) => format!("could not rename {}: {e}", self.show(&git)),
            });
        }
        said
    }

    fn show(&self, p: &Path) -> String {
        p.strip_prefix(&self.shown)
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// A hooks folder swapped for a link (or a file) goes, as do hooks it
    /// did not hold (a new one is made when a hook is put back).
    fn restore_hooks_folder(&self) -> Vec<String> {
        let mut said = Vec::new();
        if fs::symlink_metadata(&self.hooks).is_ok_and(|m| !m.is_dir()) {
            let _ = fs::remove_file(&self.hooks);
            said.push(format!("removed {}", self.show(&self.hooks)));
        }
        let new_hooks: Vec<PathBuf> = files_in(&self.hooks)
            .into_iter()
            .filter(|h| !self.files.iter().any(|(p, _)| p == h))
            .collect();
        for h in new_hooks {
            said.push(match remove_any(&h) {
                Ok(()) => format!("removed {}", self.show(&h)),
                Err(e) => format!("could not remove {}: {e}", self.show(&h)),
            });
        }
        said
    }

    /// Put one file back as it `was`; what was done, if anything.
    fn restore_file(&self, p: &Path, was: &State) -> Option<String> {
        // A second name for the file (a hard link in the project) lets
        // whatever runs later write it: the file gets a name of its own.
        let linked = fs::symlink_metadata(p).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_file() && m.nlink() > 1
        });
        if state(p) == *was && !linked {
            return None;
        }
        // A sandbox's own placeholder goes, unsaid.
        if is_placeholder(p, was) {
            let _ = fs::remove_file(p);
            return None;
        }
        let done = match was {
            State::File(bytes, mode) => {
                if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
                    let _ = fs::remove_dir_all(p);
                }
                if let Some(dir) = p.parent() {
                    let _ = fs::create_dir_all(dir);
                }
                crate::fsutil::atomic_write(p, bytes, *mode)
                    .map(|()| format!("put back {}", self.show(p)))
            }
            State::Missing => remove_any(p)
                .map(|()| format!("removed {}", self.show(p)))
                .map_err(anyhow::Error::from),
            State::Other => Ok(format!(
                "{} changed and was not ralph's to put back",
                self.show(p)
            )),
        };
        Some(done.unwrap_or_else(|e| format!("could not put back {}: {e:#}", self.show(p))))
    }
}

/// Remove a file, a link or a folder.
fn remove_any(p: &Path) -> std::io::Result<()> {
    if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(p)
    } else {
        fs::remove_file(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository `m` in `dir` with a commit, and a linked worktree each
    /// of `names` beside it (branch of the same name).
    fn with_worktrees(dir: &Path, names: &[&str]) -> PathBuf {
        let main = dir.join("m");
        fs::create_dir_all(&main).unwrap();
        let g = crate::git::at(&main);
        g.run(&["init", "-q"], &[]).unwrap();
        g.commit_as_tester(&["-q", "--allow-empty", "-m", "s"]);
        for w in names {
            let at = dir.join(w).display().to_string();
            g.run(&["worktree", "add", "-q", "-b", w, &at], &[])
                .unwrap();
        }
        main
    }

    #[test]
    fn a_sessions_changes_to_config_and_hooks_are_put_back() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("r");
        fs::create_dir_all(&root).unwrap();
        let g = crate::git::at(&root);
        g.run(&["init", "-q"], &[]).unwrap();
        let git = root.join(".git");
        fs::create_dir_all(git.join("hooks")).unwrap();
        fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\nmake lint\n").unwrap();
        fs::set_permissions(
            git.join("hooks/pre-commit"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let config = fs::read(git.join("config")).unwrap();
        let kept = keep(&root).unwrap();
        // The session: a program in the config, a new hook, a changed one,
        // attributes, and the config swapped for a link.
        g.run(&["config", "filter.x.clean", "touch pwned"], &[])
            .unwrap();
        fs::write(git.join("hooks/post-checkout"), "evil").unwrap();
        fs::write(git.join("hooks/pre-commit"), "evil").unwrap();
        fs::create_dir_all(git.join("info")).unwrap();
        fs::write(git.join("info/attributes"), "* filter=x\n").unwrap();
        let elsewhere = d.path().join("elsewhere");
        fs::write(&elsewhere, "mine").unwrap();
        fs::rename(git.join("config"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, git.join("config")).unwrap();
        fs::write(git.join("commondir"), "/home/u/other/.git\n").unwrap();
        // A sandbox's empty placeholder goes, unsaid.
        fs::write(git.join("config.worktree"), "").unwrap();
        let mut said = kept.restore().unwrap();
        said.sort();
        assert_eq!(
            said,
            [
                "put back .git/config",
                "put back .git/hooks/pre-commit",
                "removed .git/commondir",
                "removed .git/hooks/post-checkout",
                "removed .git/info/attributes",
            ]
        );
        assert!(!git.join("config.worktree").exists() && !git.join("commondir").exists());
        assert_eq!(fs::read(git.join("config")).unwrap(), config);
        assert_eq!(
            fs::read_to_string(&elsewhere).unwrap(),
            "mine",
            "written through the link"
        );
        assert_eq!(
            fs::read_to_string(git.join("hooks/pre-commit")).unwrap(),
            "#!/bin/sh\nmake lint\n"
        );
        let mode = fs::metadata(git.join("hooks/pre-commit"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // What is kept of a file: its bytes and permission bits; a folder
        // or a file too big to copy is not copied.
        assert_eq!(
            state(&git.join("hooks/pre-commit")),
            State::File(b"#!/bin/sh\nmake lint\n".to_vec(), 0o755)
        );
        assert_eq!(state(&git.join("hooks")), State::Other);
        let big = d.path().join("big");
        fs::write(&big, vec![0u8; CAP as usize + 1]).unwrap();
        assert_eq!(state(&big), State::Other);
        assert_eq!(state(&d.path().join("none")), State::Missing);
        // Nothing changed: nothing said.
        assert!(keep(&root).unwrap().restore().unwrap().is_empty());
        // A hard link in the project to the config: the config gets a
        // name of its own again.
        let kept = keep(&root).unwrap();
        fs::hard_link(git.join("config"), root.join("linked")).unwrap();
        assert_eq!(kept.restore().unwrap(), ["put back .git/config"]);
        fs::write(root.join("linked"), "evil").unwrap();
        assert_eq!(fs::read(git.join("config")).unwrap(), config);
        // `.git` swapped for a file that points elsewhere: ralph stops.
        let kept = keep(&root).unwrap();
        fs::rename(&git, d.path().join("moved-git")).unwrap();
        fs::write(root.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let e = kept.restore().unwrap_err();
        assert!(
            e.contains("replaced") && e.contains("it was a folder"),
            "{e}"
        );
    }

    #[test]
    fn in_a_linked_worktree_the_shared_setup_and_every_worktrees_pointers_are_put_back() {
        let d = tempfile::tempdir().unwrap();
        let main = with_worktrees(d.path(), &["a", "b", "c"]);
        let g = crate::git::at(&main);
        let (common, a) = (main.join(".git"), d.path().join("a"));
        let wt = |w: &str, f: &str| common.join("worktrees").join(w).join(f);
        let commondir = fs::read(wt("b", "commondir")).unwrap();
        let gitdir = fs::read(wt("a", "gitdir")).unwrap();
        let kept = keep(&a).unwrap();
        // Worktree c ends meanwhile (before the session breaks the repository) (a worker's, removed by ralph).
        g.run(
            &[
                "worktree",
                "remove",
                "--force",
                &d.path().join("c").display().to_string(),
            ],
            &[],
        )
        .unwrap();
        // The session, in worktree a: another worktree's pointer and
        // config, its own, the main checkout's, the alternates.
        fs::write(wt("b", "commondir"), "/tmp/evil.git\n").unwrap();
        fs::write(wt("b", "config.worktree"), "[core]\n\tfsmonitor = x\n").unwrap();
        fs::write(wt("a", "gitdir"), "/elsewhere/.git\n").unwrap();
        fs::write(wt("a", "config.worktree"), "[core]\n\tfsmonitor = x\n").unwrap();
        fs::write(common.join("commondir"), "/tmp/evil.git\n").unwrap();
        fs::write(common.join("config.worktree"), "[core]\n\tfsmonitor = x\n").unwrap();
        fs::write(
            common.join("objects/info/alternates"),
            "/tmp/evil.git/objects\n",
        )
        .unwrap();
        let mut said = kept.restore().unwrap();
        said.sort();
        let shown = |p: PathBuf| p.display().to_string();
        let mut expected = vec![
            format!("put back {}", shown(wt("a", "gitdir"))),
            format!("put back {}", shown(wt("b", "commondir"))),
            format!("removed {}", shown(common.join("commondir"))),
            format!("removed {}", shown(common.join("config.worktree"))),
            format!("removed {}", shown(common.join("objects/info/alternates"))),
            format!("removed {}", shown(wt("a", "config.worktree"))),
            format!("removed {}", shown(wt("b", "config.worktree"))),
        ];
        expected.sort();
        assert_eq!(said, expected);
        assert_eq!(fs::read(wt("b", "commondir")).unwrap(), commondir);
        assert_eq!(fs::read(wt("a", "gitdir")).unwrap(), gitdir);
        assert!(
            !common.join("worktrees/c").exists(),
            "an ended worktree is not made again"
        );
        assert!(keep(&a).unwrap().restore().unwrap().is_empty());
    }

    /// Two workers' sessions at once: Claude Code's sandbox makes an empty
    /// `config.worktree` in the shared folder and in each worktree's, and
    /// binds it read-only for every command; the worker whose session
    /// ends first leaves those (its sibling's next command would fail on
    /// a bind whose file went), and the run's end sweeps them.
    #[test]
    fn a_workers_guard_leaves_its_siblings_placeholders_for_the_run_to_sweep() {
        let d = tempfile::tempdir().unwrap();
        let main = with_worktrees(d.path(), &["a", "b"]);
        let common = main.join(".git");
        let wt = |w: &str, f: &str| common.join("worktrees").join(w).join(f);
        let base = Baseline::take(&main).unwrap();
        let kept = keep_from(&d.path().join("a"), &base).unwrap();
        // Worker b's session's placeholders, its own and the shared one;
        // worker a's own; and a config worker a's session planted.
        for p in [
            common.join("config.worktree"),
            wt("b", "config.worktree"),
            wt("a", "config.worktree"),
        ] {
            fs::write(p, "").unwrap();
        }
        // An empty `commondir` is no placeholder: git stops at it.
        fs::write(common.join("commondir"), "").unwrap();
        fs::create_dir_all(common.join("info")).unwrap();
        fs::write(common.join("info/attributes"), "* filter=x\n").unwrap();
        let mut said = kept.restore().unwrap();
        said.sort();
        let shown = |p: PathBuf| p.display().to_string();
        assert_eq!(
            said,
            [format!("removed {}", shown(common.join("info/attributes")))]
        );
        assert!(!common.join("commondir").exists());
        assert!(common.join("config.worktree").exists());
        assert!(wt("b", "config.worktree").exists());
        assert!(!wt("a", "config.worktree").exists(), "its own goes");
        base.sweep();
        assert!(!common.join("config.worktree").exists());
        // A config a session wrote is no placeholder: a sweep leaves what
        // a guard would say.
        fs::write(common.join("config.worktree"), "[core]\n").unwrap();
        base.sweep();
        assert!(common.join("config.worktree").exists());
    }
}
