//! The parts of `src/` import downward only. Each part is a rank in
//! `LAYERS`, top first; a file may name its own part and the parts below
//! it, never one above (read from its `crate::` paths, tests and comments
//! left out). README.md's code map draws the same layers.

use std::path::{Path, PathBuf};

/// Top first: (part, the files and folders of `src/` it is made of). A
/// longer prefix wins (`run/engine` is not `run`).
const LAYERS: &[(&str, &[&str])] = &[
    ("face", &["main.rs", "cli.rs", "cmd", "mcp", "serve"]),
    ("watch", &["watch"]),
    ("loop", &["run"]),
    ("parallel", &["parallel"]),
    ("ship", &["ship"]),
    ("history", &["history"]),
    ("control", &["control"]),
    ("engine", &["run/engine"]),
    ("session", &["session"]),
    ("work", &["work"]),
    ("hook", &["hook"]),
    ("trust", &["trust"]),
    ("notify", &["notify"]),
    ("config", &["config.rs", "config"]),
    ("sandbox", &["sandbox"]),
    ("agents", &["agent"]),
    ("github", &["github"]),
    ("settings", &["settings"]),
    (
        "base",
        &[
            "lib.rs",
            "procs",
            "git",
            "fsutil.rs",
            "output.rs",
            "exit.rs",
            "handoff.rs",
            "timefmt.rs",
            "secrets.rs",
            "confinement.rs",
            "ralph_setup.rs",
            "templates",
        ],
    ),
];

/// The rank of the part a path of `src/` (`run/engine/round.rs`) or a
/// module path (`run/engine/Round`) belongs to: the longest prefix.
fn rank(path: &str) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (r, (_, prefixes)) in LAYERS.iter().enumerate() {
        for p in *prefixes {
            let stem = p.strip_suffix(".rs").unwrap_or(p);
            let hit = path == *p
                || path == stem
                || path.starts_with(&format!("{stem}/"))
                || path.starts_with(&format!("{stem}.rs"));
            if hit && best.is_none_or(|(len, _)| stem.len() > len) {
                best = Some((stem.len(), r));
            }
        }
    }
    best.map(|(_, r)| r)
}

/// The code of a file without what is not compiled into ralph: comments
/// and the test module at its end.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path a file's code names through `crate::`, use trees
/// (`crate::{a::b, c::{d, e}}`) expanded, as `a/b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let tail = &rest[i + "crate::".len()..];
        let used = expand("", tail, &mut out);
        rest = &tail[used..];
    }
    out
}

/// Reads one use tree at the start of `s` under `prefix`, pushing each path
/// it names; returns how much of `s` it read.
fn expand(prefix: &str, s: &str, out: &mut Vec<String>) -> usize {
    let space = |s: &str| s.len() - s.trim_start().len();
    let mut at = 0;
    let mut path = prefix.to_string();
    loop {
        let len = s[at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len() - at);
        if len > 0 {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(&s[at..at + len]);
            at += len;
        }
        if s[at..].starts_with("::{") {
            at += 3;
            loop {
                at += space(&s[at..]);
                if s[at..].starts_with('}') {
                    return at + 1;
                }
                at += expand(&path, &s[at..], out);
                at += space(&s[at..]);
                match s[at..].chars().next() {
                    Some(',') => at += 1,
                    Some('}') => return at + 1,
                    _ => return at,
                }
            }
        } else if s[at..].starts_with("::") {
            at += 2;
        } else {
            if path != prefix {
                out.push(path);
            }
            return at;
        }
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("src/ is readable").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each upward import: `file -> path (part above part)`.
fn upward() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut said = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let Some(me) = rank(&rel) else {
            said.push(format!("{rel}: on no layer (add it to LAYERS)"));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for path in crate_paths(&code(&text)) {
            if let Some(to) = rank(&path)
                && to < me
            {
                said.push(format!(
                    "{rel} -> crate::{} ({} imports {}, above it)",
                    path.replace('/', "::"),
                    LAYERS[me].0,
                    LAYERS[to].0
                ));
            }
        }
    }
    said.dedup();
    said
}

#[test]
fn every_part_of_src_imports_only_the_parts_below_it() {
    let up = upward();
    assert!(
        up.is_empty(),
        "{} upward imports (LAYERS in tests/it/layers.rs is the order):\n{}",
        up.len(),
        up.join("\n")
    );
}

#[test]
fn the_reader_of_imports_sees_use_trees_paths_and_parts() {
    let text = "use crate::run::{engine::{Outcome, Round}, shell};\n\
                // crate::cmd in a comment is not an import\n\
                fn f() { crate::work::gate::Gate::handed(None); }\n\
                #[cfg(test)]\nmod tests { use crate::cmd::x; }\n";
    let paths = crate_paths(&code(text));
    assert_eq!(
        paths,
        [
            "run/engine/Outcome",
            "run/engine/Round",
            "run/shell",
            "work/gate/Gate/handed"
        ]
    );
    let names: Vec<&str> = paths.iter().map(|p| LAYERS[rank(p).unwrap()].0).collect();
    assert_eq!(names, ["engine", "engine", "loop", "work"]);
    assert_eq!(rank("config.rs").map(|r| LAYERS[r].0), Some("config"));
    assert_eq!(rank("config/kinds.rs").map(|r| LAYERS[r].0), Some("config"));
    assert_eq!(rank("nowhere.rs"), None);
}
