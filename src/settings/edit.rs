//! Pure edits of a Claude Code settings document: add, find and remove
//! ralph's Stop handler.
//!
//! Every edit is a splice into the original text (see `jsonspan`), so all
//! bytes outside the inserted or removed piece stay exactly as the user wrote
//! them: key order, indentation, escapes, number spellings, the final newline.

use std::fmt;

use serde_json::{Value, json};

use super::jsonspan::{self, Node, line_col};

/// What `install` had to create, so that `uninstall` can take away exactly
/// that and leave a `"hooks": {}` the user had.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Created {
    pub hooks: bool,
    pub stop: bool,
    /// The file install started from had no document at all: uninstall gives
    /// that back (the same blank text, or no file) instead of `{}`.
    #[serde(default)]
    pub file: Option<EmptyFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EmptyFile {
    Missing,
    Blank(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallOutcome {
    Installed { created: Created },
    AlreadyInstalled,
    Updated { previous: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub text: String,
    pub outcome: InstallOutcome,
    /// Extra ralph handlers (from old manual edits) that were removed.
    pub duplicates_removed: usize,
}

/// The document cannot be edited; names the place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for Invalid {}

/// The handler ralph writes for a given binary path.
pub fn hook_command(ralph_binary: &str) -> String {
    format!("{} hook stop", shell_quote(ralph_binary))
}

/// Quote for `/bin/sh -c`, leaving ordinary paths readable.
pub fn shell_quote(s: &str) -> String {
    shell_words::quote(s).into_owned()
}

/// Split a command line the way `/bin/sh` would for plain words and quotes.
/// `None` when the quoting is unbalanced or the line uses what shell-words
/// takes as plain text but a shell would not (expansions, `;`, pipes,
/// redirections, subshells): such a line is not a plain command.
pub fn shell_words(s: &str) -> Option<Vec<String>> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in s.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '$' | '`' if !single => return None,
            ';' | '&' | '|' | '<' | '>' | '(' | ')' if !single && !double => return None,
            _ => {}
        }
    }
    shell_words::split(s).ok()
}

/// Is this handler command ralph's Stop hook, from whatever path it was
/// installed? Recognising old paths is what lets a reinstall after moving the
/// binary update the handler instead of adding a second one.
pub fn is_ralph_command(command: &str) -> bool {
    match shell_words(command).as_deref() {
        Some([bin, hook, stop]) => {
            let name = bin.rsplit('/').next().unwrap_or(bin);
            name == "ralph" && hook == "hook" && stop == "stop"
        }
        _ => false,
    }
}

struct Doc {
    root: Node,
}

/// Where a ralph handler sits: Stop group index, handler index, its command.
#[derive(Debug)]
struct Found {
    group: usize,
    handler: usize,
    command: String,
    command_span: std::ops::Range<usize>,
}

fn at(text: &str, offset: usize, message: String) -> Invalid {
    let (line, column) = line_col(text, offset);
    Invalid {
        line,
        column,
        message,
    }
}

fn load(text: &str) -> Result<Doc, Invalid> {
    if text.starts_with('\u{feff}') {
        return Err(Invalid {
            line: 1,
            column: 1,
            message:
                "the file starts with a UTF-8 byte-order mark (BOM), which JSON does not allow; \
                      save it without one (UTF-8, no BOM)"
                    .into(),
        });
    }
    if let Err(e) = serde_json::from_str::<Value>(text) {
        let offset = offset_of(text, e.line(), e.column());
        let here = text.get(offset..).unwrap_or("");
        let comment = here.starts_with("//") || here.starts_with("/*");
        return Err(Invalid {
            line: e.line(),
            column: e.column(),
            message: if comment {
                "a comment: settings files are plain JSON and cannot hold comments; remove it"
                    .into()
            } else {
                format!("invalid JSON: {}", strip_position(&e.to_string()))
            },
        });
    }
    let root = jsonspan::parse(text).map_err(|e| at(text, 0, e.to_string()))?;
    let Node::Object { .. } = root else {
        return Err(at(
            text,
            root.span().start,
            "the top level must be a JSON object".into(),
        ));
    };
    if let Some(hooks) = root.get("hooks") {
        let Node::Object { .. } = hooks.value else {
            return Err(at(
                text,
                hooks.value.span().start,
                "\"hooks\" must be an object".into(),
            ));
        };
        if let Some(stop) = hooks.value.get("Stop") {
            let Node::Array { .. } = stop.value else {
                return Err(at(
                    text,
                    stop.value.span().start,
                    "\"hooks.Stop\" must be an array".into(),
                ));
            };
        }
    }
    Ok(Doc { root })
}

/// The byte offset of serde_json's 1-based line and column (the column
/// points at the offending character or just past it).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let line_text = text[start..].split('\n').next().unwrap_or("");
    // serde_json reports the column of the last character it read.
    let col = column.saturating_sub(1).min(line_text.len());
    let mut at = start + col;
    // Step back to the comment's start when the column is its second char.
    if at > start && text[..at].ends_with('/') {
        at -= 1;
    }
    at
}

fn strip_position(msg: &str) -> &str {
    msg.split(" at line ").next().unwrap_or(msg)
}

impl Doc {
    fn hooks(&self) -> Option<&Node> {
        self.root.get("hooks").map(|m| &m.value)
    }

    fn stop(&self) -> Option<&Node> {
        self.hooks()?.get("Stop").map(|m| &m.value)
    }

    fn groups(&self) -> &[Node] {
        match self.stop() {
            Some(Node::Array { items, .. }) => items,
            _ => &[],
        }
    }

    fn find(&self, text: &str) -> Vec<Found> {
        let mut found = Vec::new();
        for (g, group) in self.groups().iter().enumerate() {
            let Some(Node::Array { items, .. }) = group.get("hooks").map(|m| &m.value) else {
                continue;
            };
            for (h, handler) in items.iter().enumerate() {
                let Some(cmd) = handler.get("command") else {
                    continue;
                };
                let Ok(command) = serde_json::from_str::<String>(&text[cmd.value.span()]) else {
                    continue;
                };
                if is_ralph_command(&command) {
                    found.push(Found {
                        group: g,
                        handler: h,
                        command,
                        command_span: cmd.value.span(),
                    });
                }
            }
        }
        found
    }
}

/// The ralph handler commands present in a settings document.
/// Are all of the text's line breaks CRLF? Then edits are made on LF text
/// and turned back, so no LF-only line is inserted into a CRLF file. (JSON
/// strings cannot hold raw line breaks: every one is whitespace.)
fn all_crlf(text: &str) -> bool {
    text.contains("\r\n") && !text.replace("\r\n", "").contains('\n')
}

pub fn ralph_handlers(text: &str) -> Result<Vec<String>, Invalid> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let doc = load(text)?;
    Ok(doc.find(text).into_iter().map(|f| f.command).collect())
}

/// Add (or update in place) ralph's Stop handler.
pub fn install(text: &str, command: &str) -> Result<Installed, Invalid> {
    if all_crlf(text) {
        let mut r = install(&text.replace("\r\n", "\n"), command)?;
        r.text = r.text.replace('\n', "\r\n");
        if let InstallOutcome::Installed { created } = &mut r.outcome
            && let Some(EmptyFile::Blank(t)) = &mut created.file
        {
            *t = t.replace('\n', "\r\n");
        }
        return Ok(r);
    }
    // A new or `touch`ed settings file is an empty document, not an error.
    if text.trim().is_empty() {
        let mut r = install("{}", command)?;
        r.text.push('\n');
        if let InstallOutcome::Installed { created } = &mut r.outcome {
            created.file = Some(EmptyFile::Blank(text.to_string()));
        }
        return Ok(r);
    }
    let mut text = text.to_string();
    let doc = load(&text)?;
    let Some(first) = doc.find(&text).into_iter().next() else {
        return Ok(add_handler(&text, &doc, command));
    };
    let outcome = if first.command == command {
        InstallOutcome::AlreadyInstalled
    } else {
        let quoted = serde_json::to_string(command).expect("a string serialises");
        text.replace_range(first.command_span.clone(), &quoted);
        InstallOutcome::Updated {
            previous: first.command,
        }
    };
    // Keep the first handler, drop any others: exactly one must remain.
    let mut duplicates_removed = 0;
    loop {
        let doc = load(&text)?;
        let found = doc.find(&text);
        let Some(dup) = found.get(1) else { break };
        text = remove_handler(&text, &doc, dup);
        duplicates_removed += 1;
    }
    Ok(Installed {
        text,
        outcome,
        duplicates_removed,
    })
}

/// A new handler, in a new group at the end of `Stop` (made, with `hooks`,
/// where missing).
fn add_handler(text: &str, doc: &Doc, command: &str) -> Installed {
    let unit = indent_unit(text);
    let handler = json!({"type": "command", "command": command});
    let group = json!({"hooks": [handler]});
    let mut created = Created::default();
    let new = match (doc.hooks(), doc.stop()) {
        (None, _) => {
            created.hooks = true;
            created.stop = true;
            let hooks = json!({"Stop": [group]});
            append_child(text, &doc.root, Some("hooks"), &hooks, &unit)
        }
        (Some(hooks), None) => {
            created.stop = true;
            append_child(text, hooks, Some("Stop"), &json!([group]), &unit)
        }
        (Some(_), Some(stop)) => append_child(text, stop, None, &group, &unit),
    };
    Installed {
        text: new,
        outcome: InstallOutcome::Installed { created },
        duplicates_removed: 0,
    }
}

/// Remove every ralph Stop handler, and the containers install created if
/// they are left empty. Returns the new text and how many were removed.
pub fn uninstall(text: &str, created: &Created) -> Result<(String, usize), Invalid> {
    if text.trim().is_empty() {
        return Ok((text.to_string(), 0));
    }
    if all_crlf(text) {
        let mut lf = created.clone();
        if let Some(EmptyFile::Blank(t)) = &mut lf.file {
            *t = t.replace("\r\n", "\n");
        }
        let (t, n) = uninstall(&text.replace("\r\n", "\n"), &lf)?;
        return Ok((t.replace('\n', "\r\n"), n));
    }
    let mut text = text.to_string();
    let mut removed = 0;
    loop {
        let doc = load(&text)?;
        let Some(f) = doc.find(&text).into_iter().next() else {
            break;
        };
        text = remove_handler(&text, &doc, &f);
        removed += 1;
    }
    if removed == 0 {
        return Ok((text, 0));
    }
    let doc = load(&text)?;
    if created.stop
        && let (Some(hooks), Some(Node::Array { items, .. })) = (doc.hooks(), doc.stop())
        && items.is_empty()
    {
        let idx = member_index(hooks, "Stop");
        text = remove_child(&text, hooks, idx);
    }
    let doc = load(&text)?;
    if created.hooks
        && let Some(Node::Object { members, .. }) = doc.hooks()
        && members.is_empty()
    {
        let idx = member_index(&doc.root, "hooks");
        text = remove_child(&text, &doc.root, idx);
    }
    // Install started from no document: give that back, if nothing else
    // was added to the file since.
    if let Some(origin) = &created.file
        && let Node::Object { members, .. } = &load(&text)?.root
        && members.is_empty()
    {
        text = match origin {
            EmptyFile::Blank(t) => t.clone(),
            EmptyFile::Missing => String::new(),
        };
    }
    Ok((text, removed))
}

fn member_index(obj: &Node, key: &str) -> usize {
    match obj {
        Node::Object { members, .. } => members
            .iter()
            .rposition(|m| m.key == key)
            .expect("key present"),
        _ => unreachable!("member_index on a non-object"),
    }
}

fn remove_handler(text: &str, doc: &Doc, f: &Found) -> String {
    let stop = doc.stop().expect("found handlers live in Stop");
    let group = &doc.groups()[f.group];
    let handlers = &group
        .get("hooks")
        .expect("found handlers live in a group")
        .value;
    let group_is_ours_alone = match (group, handlers) {
        (Node::Object { members, .. }, Node::Array { items, .. }) => {
            items.len() == 1
                && members
                    .iter()
                    .all(|m| m.key == "hooks" || m.key == "matcher")
        }
        _ => false,
    };
    if group_is_ours_alone {
        remove_child(text, stop, f.group)
    } else {
        remove_child(text, handlers, f.handler)
    }
}

/// The file's indentation unit (two spaces, four, a tab...), guessed from the
/// first indented line; two spaces, Claude Code's own style, by default.
pub fn indent_unit(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|ws| !ws.is_empty())
        .map_or_else(
            || "  ".to_string(),
            |ws| {
                if ws.starts_with('\t') {
                    "\t".to_string()
                } else {
                    ws.to_string()
                }
            },
        )
}

fn line_indent(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..pos];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn render(value: &Value, unit: &str, indent: &str) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    value
        .serialize(&mut ser)
        .expect("serialising a Value cannot fail");
    let s = String::from_utf8(out).expect("serde_json writes UTF-8");
    s.replace('\n', &format!("\n{indent}"))
}

fn child_text(key: Option<&str>, body: String) -> String {
    match key {
        Some(k) => format!(
            "{}: {body}",
            serde_json::to_string(k).expect("a string serialises")
        ),
        None => body,
    }
}

/// Append a member (`key` given) or an item to a container, in the style the
/// container already has: one per line, or inline.
fn append_child(
    text: &str,
    container: &Node,
    key: Option<&str>,
    value: &Value,
    unit: &str,
) -> String {
    let span = container.span();
    let children = container.child_spans();
    let mut out = text.to_string();
    match children.last() {
        None => {
            let base = line_indent(text, span.start);
            let inner = format!("{base}{unit}");
            let body = child_text(key, render(value, unit, &inner));
            out.replace_range(
                span.start + 1..span.end - 1,
                &format!("\n{inner}{body}\n{base}"),
            );
        }
        Some(last) if text[span.start + 1..children[0].start].contains('\n') => {
            let inner = line_indent(text, last.start).to_string();
            let body = child_text(key, render(value, unit, &inner));
            out.insert_str(last.end, &format!(",\n{inner}{body}"));
        }
        Some(last) => {
            let body = child_text(
                key,
                serde_json::to_string(value).expect("a Value serialises"),
            );
            out.insert_str(last.end, &format!(", {body}"));
        }
    }
    out
}

/// Remove one child of a container with its separator, leaving the others'
/// text alone. Removing the only child leaves an empty `{}` / `[]`.
fn remove_child(text: &str, container: &Node, idx: usize) -> String {
    let span = container.span();
    let children = container.child_spans();
    let range = if children.len() == 1 {
        span.start + 1..span.end - 1
    } else if idx + 1 < children.len() {
        children[idx].start..children[idx + 1].start
    } else {
        children[idx - 1].end..children[idx].end
    };
    let mut out = text.to_string();
    out.replace_range(range, "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/local/bin/ralph hook stop";

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn quoting_round_trips_through_shell_words() {
        for p in [
            "/usr/bin/ralph",
            "/home/a b/ralph",
            "/tmp/it's/ralph",
            "/x/\"q\"/ralph",
            "/ü/ralph",
            "/opt/a (b)/$x;/ralph",
        ] {
            let cmd = hook_command(p);
            assert_eq!(
                shell_words(&cmd).unwrap(),
                vec![p.to_string(), "hook".into(), "stop".into()]
            );
            assert!(is_ralph_command(&cmd), "{cmd}");
        }
        assert_eq!(hook_command("/usr/bin/ralph"), "/usr/bin/ralph hook stop");
    }

    #[test]
    fn recognises_only_ralph_stop_hooks() {
        assert!(is_ralph_command("ralph hook stop"));
        assert!(is_ralph_command("'/old path/ralph' hook stop"));
        assert!(!is_ralph_command("ralph hook stop && rm -rf /"));
        assert!(!is_ralph_command("/bin/ralphie hook stop"));
        assert!(!is_ralph_command(
            "notify-send 'Claude Code' 'Turn finished'"
        ));
        assert!(!is_ralph_command("ralph hook stop extra"));
        for not_plain in [
            "ralph hook stop; rm x",
            "ralph hook stop | tee",
            "\"$(evil)\"/ralph hook stop",
            "`evil`/ralph hook stop",
            "ralph hook stop > out",
            "'unbalanced hook stop",
        ] {
            assert_eq!(shell_words(not_plain), None, "{not_plain}");
        }
        assert_eq!(
            shell_words(r#"a 'b c' "d\"e" f\ g '$x;' ";|""#).unwrap(),
            ["a", "b c", "d\"e", "f g", "$x;", ";|"]
        );
    }

    #[test]
    fn install_into_empty_object_is_pretty_two_space() {
        let r = install("{}", CMD).unwrap();
        assert_eq!(
            r.text,
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"/usr/local/bin/ralph hook stop\"\n          }\n        ]\n      }\n    ]\n  }\n}"
        );
        assert_eq!(
            r.outcome,
            InstallOutcome::Installed {
                created: Created {
                    hooks: true,
                    stop: true,
                    file: None
                }
            }
        );
        let (back, n) = uninstall(
            &r.text,
            &Created {
                hooks: true,
                stop: true,
                file: None,
            },
        )
        .unwrap();
        assert_eq!((back.as_str(), n), ("{}", 1));
    }

    #[test]
    fn install_keeps_tabs_and_user_empty_hooks() {
        let orig = "{\n\t\"hooks\": {},\n\t\"x\": 1\n}\n";
        let r = install(orig, CMD).unwrap();
        assert!(
            r.text.contains("\n\t\t\"Stop\": [\n\t\t\t{\n"),
            "{}",
            r.text
        );
        assert!(r.text.ends_with("\t\"x\": 1\n}\n"));
        let created = match r.outcome {
            InstallOutcome::Installed { created } => created,
            o => panic!("{o:?}"),
        };
        assert_eq!(
            created,
            Created {
                hooks: false,
                stop: true,
                file: None
            }
        );
        let (back, _) = uninstall(&r.text, &created).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn appends_after_other_stop_groups_and_keeps_them() {
        let orig =
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}"#;
        let r = install(orig, CMD).unwrap();
        let doc = v(&r.text);
        assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "notify");
        assert_eq!(doc["hooks"]["Stop"][1]["hooks"][0]["command"], CMD);
        let (back, _) = uninstall(&r.text, &Created::default()).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn idempotent_and_updates_old_path_in_place() {
        let once = install("{}", CMD).unwrap().text;
        let twice = install(&once, CMD).unwrap();
        assert_eq!(twice.outcome, InstallOutcome::AlreadyInstalled);
        assert_eq!(twice.text, once);
        let moved = install(&once, "'/opt/new place/ralph' hook stop").unwrap();
        assert_eq!(
            moved.outcome,
            InstallOutcome::Updated {
                previous: CMD.into()
            }
        );
        assert_eq!(
            ralph_handlers(&moved.text).unwrap(),
            vec!["'/opt/new place/ralph' hook stop"]
        );
        assert_eq!(
            moved.text.len(),
            once.len() + "'/opt/new place/ralph'".len() - "/usr/local/bin/ralph".len()
        );
    }

    #[test]
    fn duplicate_handlers_collapse_to_one() {
        let orig = r#"{"hooks": {"Stop": [
  {"hooks": [{"type": "command", "command": "ralph hook stop"}]},
  {"hooks": [{"type": "command", "command": "other"}, {"type": "command", "command": "/x/ralph hook stop"}]}
]}}"#;
        let r = install(orig, CMD).unwrap();
        assert_eq!(r.duplicates_removed, 1);
        let doc = v(&r.text);
        assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], CMD);
        assert_eq!(
            doc["hooks"]["Stop"][1]["hooks"],
            json!([{"type": "command", "command": "other"}])
        );
    }

    #[test]
    fn keeps_non_ascii_escapes_numbers_as_written() {
        let orig = "{\n  \"a\": \"日本語 \\u00e9\",\n  \"n\": 1.50e3,\n  \"arr\": [1,2, 3]\n}";
        let r = install(orig, CMD).unwrap();
        assert!(r.text.starts_with(
            "{\n  \"a\": \"日本語 \\u00e9\",\n  \"n\": 1.50e3,\n  \"arr\": [1,2, 3],\n  \"hooks\""
        ));
        assert!(!r.text.ends_with('\n'));
    }

    #[test]
    fn inline_containers_get_inline_additions() {
        let r = install(r#"{"hooks": {"PreToolUse": []}}"#, CMD).unwrap();
        assert_eq!(
            r.text,
            r#"{"hooks": {"PreToolUse": [], "Stop": [{"hooks":[{"type":"command","command":"/usr/local/bin/ralph hook stop"}]}]}}"#
        );
    }

    #[test]
    fn refuses_wrong_shapes_with_positions() {
        let e = install("{\n  \"a\": 1,\n}", CMD).unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
        assert!(e.message.contains("trailing comma"), "{e}");
        let e = install("[1]", CMD).unwrap_err();
        assert_eq!(
            (e.line, e.column, e.message.as_str()),
            (1, 1, "the top level must be a JSON object")
        );
        let e = install("{\n  \"hooks\": []\n}", CMD).unwrap_err();
        assert_eq!((e.line, e.column), (2, 12));
        let e = install("{\"hooks\": {\"Stop\": {}}}", CMD).unwrap_err();
        assert!(e.message.contains("hooks.Stop"));
    }

    #[test]
    fn uninstall_keeps_group_with_other_handlers_and_extra_keys() {
        let orig = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}, {"type": "command", "command": "ralph hook stop"}]}]}}"#;
        let (t, n) = uninstall(
            orig,
            &Created {
                hooks: true,
                stop: true,
                file: None,
            },
        )
        .unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            v(&t),
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]}})
        );
    }

    #[test]
    fn empty_file_counts_as_empty_object() {
        let r = install("", CMD).unwrap();
        assert_eq!(ralph_handlers(&r.text).unwrap(), vec![CMD]);
    }

    fn created(r: &Installed) -> Created {
        match &r.outcome {
            InstallOutcome::Installed { created } => created.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn blank_files_and_crlf_files_round_trip() {
        for orig in ["", "\n", "  \n\n", "{\r\n  \"a\": 1\r\n}\r\n", "\r\n"] {
            let r = install(orig, CMD).unwrap();
            if orig.contains("\r\n") {
                assert!(
                    !r.text.replace("\r\n", "").contains('\n'),
                    "only CRLF line breaks in {:?}",
                    r.text
                );
            }
            let (back, n) = uninstall(&r.text, &created(&r)).unwrap();
            assert_eq!((back.as_str(), n), (orig, 1), "{orig:?} via {:?}", r.text);
        }
        // A file that was missing comes back as nothing to write.
        let r = install("", CMD).unwrap();
        let mut c = created(&r);
        c.file = Some(EmptyFile::Missing);
        assert_eq!(uninstall(&r.text, &c).unwrap().0, "");
        // Unless the user added something meanwhile.
        let edited = r.text.replacen('{', "{\n  \"model\": \"opus\",", 1);
        assert!(uninstall(&edited, &c).unwrap().0.contains("\"model\""));
    }

    #[test]
    fn bom_and_comments_get_their_own_messages() {
        let e = install("\u{feff}{}\n", CMD).unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        assert!(e.message.contains("byte-order mark"), "{e}");
        for text in [
            "{\n  // my hooks\n  \"a\": 1\n}\n",
            "{\n  \"a\": 1, /* why */\n  \"b\": 2\n}\n",
        ] {
            let e = install(text, CMD).unwrap_err();
            assert!(e.message.contains("cannot hold comments"), "{text:?}: {e}");
            assert_eq!(e.line, 2, "{text:?}");
        }
        let e = install("{\n  \"a\": 1,\n}", CMD).unwrap_err();
        assert!(e.message.starts_with("invalid JSON"), "{e}");
    }

    #[test]
    fn indent_detection() {
        assert_eq!(indent_unit("{\n    \"a\": 1\n}"), "    ");
        assert_eq!(indent_unit("{\n\t\"a\": 1\n}"), "\t");
        assert_eq!(indent_unit("{}"), "  ");
    }
}

#[cfg(test)]
mod round_trip {
    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::{Map, Value, json};

    use super::*;

    const CMD: &str = "/opt/ralph/bin/ralph hook stop";

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(|f| json!(f)),
            "\\PC{0,12}".prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-zA-Z_ .]{1,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// What a settings file may already hold under `hooks`.
    fn hooks() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            Just(None),
            Just(Some(json!({}))),
            Just(Some(json!({"Stop": []}))),
            Just(Some(
                json!({"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]})
            )),
            Just(Some(
                json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]})
            )),
        ]
    }

    fn render(v: &Value, indent: &[u8]) -> String {
        if indent.is_empty() {
            return serde_json::to_string(v).unwrap();
        }
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        v.serialize(&mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// install then uninstall gives back any settings document byte for
        /// byte, whatever its indentation, line endings and final newline.
        #[test]
        fn install_then_uninstall_is_the_identity(
            members in proptest::collection::btree_map("[a-zA-Z]{1,10}", value(), 0..5),
            hooks in hooks(),
            indent in prop_oneof![Just(&b""[..]), Just(&b"  "[..]), Just(&b"    "[..]), Just(&b"\t"[..])],
            crlf in any::<bool>(),
            newline in any::<bool>(),
        ) {
            let mut doc: Map<String, Value> = members.into_iter().filter(|(k, _)| k != "hooks").collect();
            if let Some(h) = hooks {
                doc.insert("hooks".into(), h);
            }
            let mut text = render(&Value::Object(doc), indent);
            if newline {
                text.push('\n');
            }
            if crlf {
                text = text.replace('\n', "\r\n");
            }
            let r = install(&text, CMD).unwrap();
            prop_assert_eq!(ralph_handlers(&r.text).unwrap(), vec![CMD.to_string()]);
            let created = match &r.outcome {
                InstallOutcome::Installed { created } => created.clone(),
                other => panic!("{other:?}"),
            };
            let (back, removed) = uninstall(&r.text, &created).unwrap();
            prop_assert_eq!(removed, 1);
            prop_assert_eq!(back, text);
        }
    }
}
