//! pi's and opencode's project files that run or allow something (Codex's
//! are in `codex_files`, of the second kind below). Neither
//! agent asks before acting on them, and a session can write them as a
//! cloned repository can ship them, so they are parts to approve (see
//! `approval`), of two kinds:
//!
//! - pi's `.pi/settings.json` and opencode's `.opencode/plugin(s)`, which
//!   no switch turns off: approved like `.gemini/settings.json`, and the
//!   loop refuses until then;
//! - the files a switch turns off (pi's `.pi/extensions`, opencode's
//!   config and the rest of `.opencode`, Codex's `.codex`): the loop runs,
//!   and until they are approved the agent starts with them off
//!   (`--no-extensions`, `OPENCODE_DISABLE_PROJECT_CONFIG=1`, Codex's
//!   folders marked untrusted).
//!
//! Read as the agents read them (through links), each file at most `CAP`,
//! each folder at most `MAX_FILES` files; what cannot be read is a part
//! all the same, approved as it is.

use std::path::Path;

use serde_json::{Value, json};

use super::approval::Part;

/// pi's project settings, merged over the user's with nothing to switch
/// them off: `shellCommandPrefix` runs before every bash call, `shellPath`
/// picks the shell, `packages` has pi run `npm install` at start-up (and
/// load what it installs). Whole, as nearly every key changes what pi does.
pub const PI_SETTINGS: &str = ".pi/settings.json";

/// pi's project extensions: TypeScript it runs at start-up, which can hook
/// every event. `--no-extensions` stops them.
pub const PI_EXTENSIONS: &str = ".pi/extensions";

/// opencode's project config files, in the session's folder and each one
/// above it up to the worktree's root: they can loosen `permission`, start
/// `mcp` servers, add `instructions`, and change providers and their URLs.
pub const OPENCODE_CONFIGS: [&str; 2] = ["opencode.json", "opencode.jsonc"];

/// opencode's project folder, found as its config is: its own
/// `opencode.json(c)`, plugins it runs at start-up (which hook every tool
/// call), tools, commands, agents, and the `package.json` it installs.
pub const OPENCODE_DIR: &str = ".opencode";

/// The folders of `.opencode` whose plugins opencode 1.18.33 loads at
/// start-up even with `OPENCODE_DISABLE_PROJECT_CONFIG=1` and `--pure`
/// (seen: a plugin there wrote its file with both): no switch turns them
/// off, so they refuse the loop until approved, as pi's settings do.
pub const OPENCODE_PLUGINS: [&str; 2] = ["plugin", "plugins"];

/// Files read at most in one folder (a clone may ship many).
pub const MAX_FILES: usize = 200;
/// One file is read no further than this.
pub const CAP: u64 = 256 * 1024;

/// A file as read: its text, bytes that are not text, or why it could not
/// be read.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    Text(String),
    Bytes(Vec<u8>),
    Unreadable(String),
}

/// A file's part: its text; bytes that are no text by their size and
/// digest (never shown); what could not be read, saying so.
pub fn file_value(r: Read) -> Value {
    match r {
        Read::Text(t) => json!(t),
        Read::Bytes(b) => {
            let d = super::store::sha256_hex(&b);
            json!(format!("not text: {} bytes, sha256 {}", b.len(), &d[..16]))
        }
        Read::Unreadable(why) => json!(format!("unreadable: {why}")),
    }
}

/// A JSON config's part: its value (a text that is no JSON, such as JSONC
/// with comments, as it is); `None` when it says nothing (blank, `{}`).
pub fn config_value(r: Read) -> Option<Value> {
    let Read::Text(t) = r else {
        return Some(file_value(r));
    };
    if t.trim().is_empty() {
        return None;
    }
    let v = serde_json::from_str::<Value>(&t).unwrap_or(json!(t));
    (v != json!({})).then_some(v)
}

/// The files in `.opencode` that opencode writes itself at every start
/// (the package of its plugin API, installed there): left out, or an
/// approval would last one session. `rel` is the path inside `.opencode`.
/// The lock files follow from the `package.json` approved.
pub fn opencode_writes(rel: &Path) -> bool {
    let mut parts = rel.components();
    let first = parts.next().map(|c| c.as_os_str());
    let top = parts.next().is_none();
    first == Some("node_modules".as_ref())
        || (top
            && [".gitignore", "bun.lock", "bun.lockb", "package-lock.json"]
                .iter()
                .any(|n| first == Some(n.as_ref())))
}

/// `.opencode/package.json`'s part: what it asks to install, less the one
/// dependency opencode adds itself; `None` when that is all there is.
pub fn opencode_package(r: Read) -> Option<Value> {
    let v = config_value(r)?;
    let Value::Object(mut doc) = v else {
        return Some(v);
    };
    if let Some(Value::Object(deps)) = doc.get_mut("dependencies") {
        deps.remove("@opencode-ai/plugin");
        if deps.is_empty() {
            doc.remove("dependencies");
        }
    }
    (!doc.is_empty()).then_some(Value::Object(doc))
}

/// A name as shown: a path, with anything that could drive a terminal or
/// break the line escaped.
fn shown_name(name: &str) -> String {
    if name.chars().any(char::is_control) {
        format!("{name:?}")
    } else {
        name.to_string()
    }
}

/// A file's content through links, as the agent reads it, at most `CAP`;
/// `None` when it is not there. Messages name the file from `root`: the
/// digest is the content's, wherever the project is.
fn read(root: &Path, path: &Path) -> Option<Read> {
    let here = |e: &anyhow::Error| format!("{e:#}").replace(&format!("{}/", root.display()), "");
    if let Ok(m) = std::fs::metadata(path)
        && m.is_file()
        && m.len() > CAP
    {
        return Some(Read::Unreadable(format!(
            "{} bytes, more than ralph reads ({} KiB)",
            m.len(),
            CAP >> 10
        )));
    }
    match crate::fsutil::read_bytes_capped(path, CAP) {
        Ok(None) => None,
        Ok(Some(b)) => Some(match String::from_utf8(b) {
            Ok(t) => Read::Text(t),
            Err(e) => Read::Bytes(e.into_bytes()),
        }),
        Err(e) => Some(Read::Unreadable(here(&e))),
    }
}

/// The parts of the files under `root/dir` (through links, as the agents
/// read them; a loop of links ends the walk), in name order, named
/// `prefix` + their path from `root`; `value` makes each part from its
/// path inside `dir` (`None`: nothing asked). At most `MAX_FILES`; more is
/// a part saying so.
pub(super) fn walk(
    root: &Path,
    dir: &str,
    prefix: &str,
    skip: impl Fn(&Path) -> bool,
    value: impl Fn(&Path, Read) -> Option<Value>,
) -> Vec<Part> {
    let top = root.join(dir);
    let mut files: Vec<std::path::PathBuf> = walkdir::WalkDir::new(&top)
        .follow_links(true)
        .max_depth(16)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !skip(e.path().strip_prefix(&top).unwrap_or(e.path())))
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.into_path())
        .take(MAX_FILES + 1)
        .collect();
    let mut p = Vec::new();
    if files.len() > MAX_FILES {
        p.push((
            shown_name(&format!("{prefix}{dir}")),
            json!(format!(
                "more than {MAX_FILES} files: remove what you do not use"
            )),
        ));
        files.truncate(MAX_FILES);
    }
    for f in files {
        let rel = f.strip_prefix(&top).unwrap_or(&f);
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        if let Some(v) = read(root, &f).and_then(|r| value(rel, r)) {
            p.push((shown_name(&format!("{prefix}{name}")), v));
        }
    }
    p
}

/// pi's `.pi/settings.json` as a part (see `PI_SETTINGS`); `None` when
/// there is none or it says nothing.
pub fn pi_settings_part(root: &Path) -> Option<Part> {
    let v = config_value(read(root, &root.join(PI_SETTINGS))?)?;
    Some((PI_SETTINGS.to_string(), v))
}

/// Is `rel` (a path inside `.opencode`) in one of its plugin folders?
fn in_plugins(rel: &Path) -> bool {
    rel.components()
        .next()
        .is_some_and(|c| OPENCODE_PLUGINS.iter().any(|p| c.as_os_str() == *p))
}

/// The parts no switch turns off, which refuse the loop until approved:
/// pi's settings, then opencode's plugin folders in the project's folder
/// and each one above it up to the repository's root.
pub fn unswitchable_parts(root: &Path) -> Vec<Part> {
    let mut p: Vec<Part> = pi_settings_part(root).into_iter().collect();
    for (dir, prefix) in super::approval::env_folders(root) {
        for plugins in OPENCODE_PLUGINS {
            p.extend(walk(
                &dir,
                &format!("{OPENCODE_DIR}/{plugins}"),
                &prefix,
                |_| false,
                |_, r| Some(file_value(r)),
            ));
        }
    }
    p
}

/// The parts an agent can be started without: pi's extensions, then
/// opencode's config and folder in the project's folder and each one above
/// it up to the repository's root (named `../opencode.json`, ...), then
/// Codex's (`codex_files`; last, so that an approval from before them
/// stays good where there are none).
pub fn switchable_parts(root: &Path) -> Vec<Part> {
    let mut p = walk(
        root,
        PI_EXTENSIONS,
        "",
        |_| false,
        |_, r| Some(file_value(r)),
    );
    for (dir, prefix) in super::approval::env_folders(root) {
        for name in OPENCODE_CONFIGS {
            if let Some(v) = read(&dir, &dir.join(name)).and_then(config_value) {
                p.push((format!("{prefix}{name}"), v));
            }
        }
        p.extend(walk(
            &dir,
            OPENCODE_DIR,
            &prefix,
            |rel| opencode_writes(rel) || in_plugins(rel),
            |rel, r| {
                let name = rel.to_str().unwrap_or_default();
                if name == "package.json" {
                    opencode_package(r)
                } else if OPENCODE_CONFIGS.contains(&name) {
                    config_value(r)
                } else {
                    Some(file_value(r))
                }
            },
        ));
    }
    p.extend(super::codex_files::parts(root));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &[Part]) -> Vec<&str> {
        p.iter().map(|(k, _)| k.as_str()).collect()
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn which_files_count() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        assert!(switchable_parts(root).is_empty());
        assert_eq!(pi_settings_part(root), None);
        write(&root.join(".pi/settings.json"), "{}");
        assert_eq!(pi_settings_part(root), None, "an empty object asks nothing");
        write(
            &root.join(".pi/settings.json"),
            r#"{"shellCommandPrefix": "touch pwned;"}"#,
        );
        assert_eq!(
            pi_settings_part(root),
            Some((
                ".pi/settings.json".into(),
                json!({"shellCommandPrefix": "touch pwned;"})
            ))
        );
        write(&root.join(".pi/extensions/x.ts"), "export default () => {}");
        write(&root.join(".pi/extensions/y/index.ts"), "run()");
        // Other pi files are not extensions (prompts, skills: text for the model).
        write(&root.join(".pi/APPEND_SYSTEM.md"), "be nice");
        write(
            &root.join("opencode.json"),
            r#"{"mcp": {"x": {"command": ["sh"]}}}"#,
        );
        write(&root.join("opencode.jsonc"), "{ // a comment\n}");
        write(&root.join(".opencode/plugins/p.ts"), "export const P = 1");
        write(&root.join(".opencode/opencode.json"), "{}");
        // What opencode writes itself at start-up is left out.
        write(&root.join(".opencode/.gitignore"), "node_modules\n");
        write(&root.join(".opencode/bun.lock"), "{}");
        write(
            &root.join(".opencode/node_modules/@opencode-ai/plugin/index.js"),
            "x",
        );
        write(
            &root.join(".opencode/package.json"),
            r#"{"dependencies": {"@opencode-ai/plugin": "1.18.33"}}"#,
        );
        let p = switchable_parts(root);
        assert_eq!(
            names(&p),
            [
                ".pi/extensions/x.ts",
                ".pi/extensions/y/index.ts",
                "opencode.json",
                "opencode.jsonc",
            ]
        );
        // Its plugins no switch turns off: they refuse until approved.
        write(&root.join(".opencode/plugin/q.ts"), "export const Q = 1");
        assert_eq!(
            names(&unswitchable_parts(root)),
            [
                ".pi/settings.json",
                ".opencode/plugin/q.ts",
                ".opencode/plugins/p.ts"
            ]
        );
        assert_eq!(
            p[3].1,
            json!("{ // a comment\n}"),
            "JSONC is shown as written"
        );
        // A package.json a clone ships is a part.
        write(
            &root.join(".opencode/package.json"),
            r#"{"dependencies": {"@opencode-ai/plugin": "1", "evil": "1"}}"#,
        );
        let p = switchable_parts(root);
        assert_eq!(
            p.iter()
                .find(|(k, _)| k == ".opencode/package.json")
                .unwrap()
                .1,
            json!({"dependencies": {"evil": "1"}})
        );
    }

    #[test]
    fn opencodes_files_are_found_up_to_the_repositorys_root() {
        let d = tempfile::tempdir().unwrap();
        let clone = d.path().join("clone");
        let app = clone.join("app");
        std::fs::create_dir_all(clone.join(".git")).unwrap();
        std::fs::create_dir_all(&app).unwrap();
        // Above the repository: not the clone's, and opencode stops below it.
        write(&d.path().join("opencode.json"), r#"{"x": 1}"#);
        write(&clone.join("opencode.json"), r#"{"mcp": {}}"#);
        write(&clone.join(".opencode/plugins/p.ts"), "p");
        write(&app.join(".opencode/opencode.jsonc"), "{\"plugin\": []}");
        assert_eq!(
            names(&switchable_parts(&app)),
            [".opencode/opencode.jsonc", "../opencode.json"]
        );
        assert_eq!(
            names(&unswitchable_parts(&app)),
            ["../.opencode/plugins/p.ts"]
        );
        // Not in a repository: the project's own folder only.
        let lone = d.path().join("lone");
        write(&lone.join("opencode.json"), r#"{"y": 2}"#);
        assert_eq!(names(&switchable_parts(&lone)), ["opencode.json"]);
    }

    #[test]
    fn reads_are_bounded_and_what_cannot_be_read_is_a_part_still() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let ext = root.join(".pi/extensions");
        std::fs::create_dir_all(&ext).unwrap();
        std::fs::write(ext.join("big.ts"), vec![b'/'; CAP as usize + 1]).unwrap();
        std::fs::write(ext.join("bin.node"), b"\x7fELF\xff\xfe").unwrap();
        std::os::unix::fs::symlink("/dev/zero", ext.join("zero.ts")).unwrap();
        std::os::unix::fs::symlink(&ext, ext.join("loop")).unwrap();
        write(&root.join("elsewhere/real.ts"), "through a link");
        std::os::unix::fs::symlink(root.join("elsewhere/real.ts"), ext.join("linked.ts")).unwrap();
        write(&ext.join("esc\u{1b}[2J.ts"), "x");
        let p = switchable_parts(root);
        let shown: Vec<String> = p.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        assert_eq!(
            shown,
            [
                format!(".pi/extensions/big.ts = \"unreadable: {} bytes, more than ralph reads (256 KiB)\"", CAP + 1),
                ".pi/extensions/bin.node = \"not text: 6 bytes, sha256 bfcc560d599a4e0d\"".to_string(),
                "\".pi/extensions/esc\\u{1b}[2J.ts\" = \"x\"".to_string(),
                ".pi/extensions/linked.ts = \"through a link\"".to_string(),
                ".pi/extensions/zero.ts = \"unreadable: .pi/extensions/zero.ts is a device, not a regular file; ralph reads only regular files there\"".to_string(),
            ],
            "{shown:#?}"
        );
        // A folder of many files: the first ones, and a part saying so.
        for i in 0..MAX_FILES + 5 {
            write(&root.join(format!(".opencode/tools/t{i:03}.ts")), "t");
        }
        let p = switchable_parts(root);
        let many = p.iter().filter(|(k, _)| k.starts_with(".opencode")).count();
        assert_eq!(many, MAX_FILES + 1);
        assert!(p.iter().any(
            |(k, v)| k == ".opencode" && v.as_str().unwrap().starts_with("more than 200 files")
        ));
    }

    /// The bounds themselves are within: a file of exactly `CAP` bytes is
    /// read, and a folder of exactly `MAX_FILES` files says no "more than".
    #[test]
    fn what_is_at_a_bound_is_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            &root.join(".pi/extensions/full.ts"),
            &"/".repeat(CAP as usize),
        );
        let p = switchable_parts(root);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].1.as_str().map(str::len), Some(CAP as usize));
        for i in 0..MAX_FILES {
            write(&root.join(format!(".opencode/tools/t{i:03}.ts")), "t");
        }
        let p = switchable_parts(root);
        assert_eq!(
            p.iter().filter(|(k, _)| k.starts_with(".opencode")).count(),
            MAX_FILES
        );
        assert!(!p.iter().any(|(k, _)| k == ".opencode"));
    }
}
