//! The merge queue's git: a finished step's branch merged into the
//! integration branch in git's object store (`git merge-tree`), its spec,
//! progress log and tracker files merged by ralph (the step's box checked
//! in the integration branch's spec, the branch's new log lines added),
//! then the checkout moved to it; and a merge undone when the gate fails.

use std::path::Path;

use anyhow::{Result, bail};

use crate::git::{Git, Merged};
use crate::parallel::texts;

/// ralph's files of a merge: taken from the integration branch, never
/// merged as text by git (the tracker's files are br's, written from every
/// worktree into the checkout's database).
const OWN: [&str; 2] = [".ralph", ".beads"];
/// Logs the branch adds to: its new lines follow ours.
const LOGS: [&str; 2] = ["progress.md", "learnings.md"];

/// Merge `branch` (its step `key`) into the checkout at `root`: ralph's
/// own files are the integration branch's, with the step's box checked and
/// the branch's new log lines added.
pub fn merge(root: &Path, branch: &str, key: &str, message: &str) -> Result<Merged> {
    let g = crate::git::at(root);
    if g.ok(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], &[]) {
        bail!(
            "a merge is in progress in {}: finish it (`git commit`) or abort it (`git merge --abort`), then `ralph loop --resume`",
            root.display()
        );
    }
    crate::git::merge_into_head(&g, branch, message, &OWN, |tree| {
        ralph_merged(&g, tree, branch, key)
    })
}

/// Does `branch`'s own spec (as committed) have the step `key` checked?
pub fn step_checked_on(root: &Path, branch: &str, key: &str) -> bool {
    committed_spec(root, branch).is_some_and(|text| texts::checked(&text, key))
}

/// The spec as committed at `rev` (a branch, `HEAD`), if it has one.
pub fn committed_spec(root: &Path, rev: &str) -> Option<String> {
    crate::git::at(root)
        .bytes(&["show", &format!("{rev}:.ralph/spec.md")])
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Undo a merge the gate failed: the checkout back at `before`, keeping
/// changes of yours to files the merge did not touch (`reset --keep`
/// refuses rather than lose any).
pub fn undo(root: &Path, before: &str) -> Result<()> {
    crate::git::at(root).run(&["reset", "--keep", "--quiet"], &[before])?;
    Ok(())
}

/// `tree` with ralph's own files as HEAD has them, the step's box checked
/// in the spec and the branch's new log lines added.
fn ralph_merged(g: &Git, tree: &str, branch: &str, key: &str) -> Result<String> {
    let base = g
        .run(&["merge-base", "HEAD"], &[branch])
        .unwrap_or_default();
    let (shown, listed) = texts_of(g, &base, branch);
    let show = |rev: &str, path: &str| -> String {
        if rev.is_empty() {
            return String::new();
        }
        shown
            .get(&(rev.to_string(), path.to_string()))
            .cloned()
            .unwrap_or_default()
    };
    let mut ralph: Vec<u8> = match listed {
        Some(listing) => listing,
        None => g
            .bytes(&["ls-tree", "-z", "HEAD:.ralph"])
            .unwrap_or_default(),
    };
    let mut replace = |name: &str, text: &str| -> Result<()> {
        let blob = g.run_with_input(&["hash-object", "-w", "--stdin"], text.as_bytes())?;
        ralph = entries(&ralph)
            .filter(|e| !e.ends_with(format!("\t{name}").as_bytes()))
            .flat_map(|e| e.iter().copied().chain([0]))
            .collect();
        ralph.extend(format!("100644 blob {blob}\t{name}\0").as_bytes());
        Ok(())
    };
    let spec = show("HEAD", ".ralph/spec.md");
    match texts::check(&spec, key) {
        Some(checked) => replace("spec.md", &checked)?,
        None => bail!("the integration branch's spec has no step {key} to check"),
    }
    for log in LOGS {
        let path = format!(".ralph/{log}");
        let (ours, theirs) = (show("HEAD", &path), show(branch, &path));
        let merged = texts::merge_log(&show(&base, &path), &ours, &theirs);
        if merged != ours {
            replace(log, &merged)?;
        }
    }
    let ralph_tree = g.run_with_input(&["mktree", "-z"], &ralph)?;
    let mut top: Vec<u8> = entries(&g.bytes(&["ls-tree", "-z", tree]).unwrap_or_default())
        .filter(|e| !OWN.iter().any(|o| e.ends_with(format!("\t{o}").as_bytes())))
        .flat_map(|e| e.iter().copied().chain([0]))
        .collect();
    top.extend(format!("040000 tree {ralph_tree}\t.ralph\0").as_bytes());
    if let Some(beads) = g.bytes(&["ls-tree", "-z", "HEAD", "--", ".beads"]) {
        top.extend(beads);
    }
    g.run_with_input(&["mktree", "-z"], &top)
}

/// What a merge reads of ralph's files, by one git process (a merge holds
/// up the next worker's start; a `git show` and an `ls-tree` each were
/// eight processes): the spec as HEAD has it, each log as HEAD, the
/// branch and their merge base have it, each as `git show <rev>:<path>`
/// gives it ("" for none); and HEAD's `.ralph` folder as `git ls-tree -z
/// HEAD:.ralph` lists it, when it is a folder (`None`: asked of git as
/// before).
type Read = (
    std::collections::HashMap<(String, String), String>,
    Option<Vec<u8>>,
);

fn texts_of(g: &Git, base: &str, branch: &str) -> Read {
    let mut wanted = vec![("HEAD".to_string(), ".ralph/spec.md".to_string())];
    for log in LOGS {
        for rev in ["HEAD", branch, base] {
            if !rev.is_empty() {
                wanted.push((rev.to_string(), format!(".ralph/{log}")));
            }
        }
    }
    let mut names: Vec<String> = wanted.iter().map(|(r, p)| format!("{r}:{p}")).collect();
    names.push("HEAD:.ralph".into());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut found = g.objects(&names);
    let folder = found.pop().flatten();
    let listed = folder
        .filter(|o| o.kind == "tree")
        .and_then(|o| crate::git::tree_listing(&o.content, o.id.len()));
    let texts = wanted
        .into_iter()
        .zip(names)
        .zip(found)
        .map(|((key, name), object)| {
            let bytes = match object {
                Some(o) if o.kind == "blob" => Some(o.content),
                // What `git show` prints of anything else (a folder
                // there): asked of it as before.
                Some(_) => g.bytes(&["show", name]),
                None => None,
            };
            let text = bytes
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            (key, text)
        })
        .collect();
    (texts, listed)
}

pub(crate) fn entries(listing: &[u8]) -> impl Iterator<Item = &[u8]> {
    listing.split(|b| *b == 0).filter(|e| !e.is_empty())
}

/// Files of the merge in progress in `root` that still hold a conflict
/// marker (a line that starts `<<<<<<< `, `>>>>>>> ` or is `=======`
/// between them).
pub fn with_markers(root: &Path, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            crate::fsutil::read_optional_capped(&root.join(f), 8 << 20)
                .ok()
                .flatten()
                .is_some_and(|t| has_markers(&t))
        })
        .cloned()
        .collect()
}

fn has_markers(text: &str) -> bool {
    let mut open = false;
    for l in text.lines() {
        if l.starts_with("<<<<<<< ") || l == "<<<<<<<" {
            open = true;
        } else if open && (l.starts_with(">>>>>>> ") || l == ">>>>>>>") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_markers_are_an_opening_and_a_closing_line() {
        assert!(has_markers(
            "a\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> other\n"
        ));
        assert!(!has_markers("<<<<<<< alone\n"));
        assert!(!has_markers("a <<<<<<< b\n>>>>>>> c\n"));
    }
}
