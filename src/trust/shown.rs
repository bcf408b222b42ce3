//! The parts to approve as the user is shown them: the config's as TOML,
//! the way they are written in `.ralph/config.toml` (`[review]`, then its
//! keys; what is not set left out), and the other files' as JSON, as those
//! are written. Pure; the digest is of the parts themselves, not of this.

use serde_json::Value;

use super::approval::Part;

/// A part of `.ralph/config.toml`: named by its key (`agent`) or its table
/// (`[review]`, `[gate] commands`); the other files' parts are named by a
/// path, which always has a dot (`.mcp.json`, `.claude/settings.json env`).
fn of_config(name: &str) -> bool {
    !name.contains('.')
}

/// The config's parts in groups, as TOML: each top-level key a group of
/// its own line first (TOML reads a key after a `[table]` as the table's),
/// then each table's header and keys; then each other part as one line.
pub fn groups(parts: &[Part]) -> Vec<Vec<String>> {
    let mut top: Vec<Vec<String>> = Vec::new();
    let mut tables: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
    let mut files: Vec<Vec<String>> = Vec::new();
    for (name, v) in parts {
        if !of_config(name) {
            files.push(file_lines(name, v));
            continue;
        }
        let Some(rest) = name.strip_prefix('[') else {
            top.extend(line(name, v).map(|l| vec![l]));
            continue;
        };
        let (table, key) = rest.split_once(']').unwrap_or((rest, ""));
        let i = match tables.iter().position(|(t, _)| t == table) {
            Some(i) => i,
            None => {
                tables.push((table.to_string(), serde_json::Map::new()));
                tables.len() - 1
            }
        };
        match (key.trim(), v) {
            ("", Value::Object(o)) => tables[i].1.extend(o.clone()),
            ("", _) => {}
            (k, v) => {
                tables[i].1.insert(k.to_string(), v.clone());
            }
        }
    }
    for (name, keys) in tables {
        top.extend(table(&name, &keys));
    }
    top.extend(files);
    top
}

/// Another file's part: its value as JSON on one line; a text of several
/// lines (a plugin's code, a command file) line by line under its name,
/// each after `|`, so that it can be read before it is approved (control
/// characters shown, not sent).
fn file_lines(name: &str, v: &Value) -> Vec<String> {
    match v.as_str().map(str::trim_end) {
        Some(t) if t.lines().count() > 1 => {
            let mut out = vec![format!("{name}, {} lines:", t.lines().count())];
            out.extend(
                t.lines()
                    .map(|l| format!("  | {}", crate::output::visible_line(l))),
            );
            out
        }
        _ => vec![format!("{name} = {v}")],
    }
}

/// `[name]` (a dotted path of keys as TOML writes them) and its keys, then its subtables (`[prices.MODEL]`), each a
/// group; a header with nothing of its own under it is left out, unless
/// the table is empty (`[review]` alone asks for a review).
fn table(name: &str, keys: &serde_json::Map<String, Value>) -> Vec<Vec<String>> {
    let mut own = vec![format!("[{name}]")];
    let mut subtables = Vec::new();
    for (k, v) in keys {
        match v {
            Value::Object(o) => subtables.extend(table(&format!("{name}.{}", key(k)), o)),
            v => own.extend(line(k, v)),
        }
    }
    let mut out = Vec::new();
    if own.len() > 1 || subtables.is_empty() {
        out.push(own);
    }
    out.extend(subtables);
    out
}

/// `key = value`; nothing for a value not set.
fn line(k: &str, v: &Value) -> Option<String> {
    Some(format!("{} = {}", key(k), value(v)?))
}

/// A key bare where TOML allows it, else quoted.
fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { k.to_string() } else { string(k) }
}

/// A TOML value; `None` for null (TOML has none: the key is not set).
fn value(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().filter_map(value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{ {} }}",
            o.iter()
                .filter_map(|(k, v)| line(k, v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// A TOML basic string: quotes, backslashes and control characters
/// escaped, so what is shown is one line that reads back as the value.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(parts: &[(&str, Value)]) -> String {
        let parts: Vec<Part> = parts
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        groups(&parts)
            .into_iter()
            .map(|g| g.join("\n"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A file of several lines is shown line by line, to be read; one
    /// line stays one line.
    #[test]
    fn a_files_lines_are_shown_as_lines() {
        assert_eq!(
            shown(&[
                (
                    ".opencode/plugins/y.ts",
                    json!("export const Y = 1\n\x1b]0;x\x07\n")
                ),
                (".pi/extensions/x.ts", json!("run()\n")),
            ]),
            ".opencode/plugins/y.ts, 2 lines:\n  | export const Y = 1\n  | ^[]0;x^G\n.pi/extensions/x.ts = \"run()\\n\""
        );
    }

    #[test]
    fn the_configs_parts_read_as_toml_with_what_is_not_set_left_out() {
        let text = shown(&[
            ("agent", json!("codex")),
            ("[prices]", json!({"m-1": {"input": 1.25, "output": 10.0}})),
            ("claude_args", json!(["--x", "a \"b\""])),
            ("[gate] commands", json!(["make"])),
            ("[gate] protect", json!(["tests/**"])),
            ("[hooks] on_complete", json!("echo \u{1b}[31m\ndone")),
            (
                "[review]",
                json!({"when": "step", "agent": null, "model": null, "prompt": null, "max_rounds": 3}),
            ),
            (".mcp.json", json!({"mcpServers": {}})),
        ]);
        assert_eq!(
            text,
            "agent = \"codex\"\n\
             claude_args = [\"--x\", \"a \\\"b\\\"\"]\n\
             [prices.m-1]\ninput = 1.25\noutput = 10.0\n\
             [gate]\ncommands = [\"make\"]\nprotect = [\"tests/**\"]\n\
             [hooks]\non_complete = \"echo \\u001B[31m\\ndone\"\n\
             [review]\nwhen = \"step\"\nmax_rounds = 3\n\
             .mcp.json = {\"mcpServers\":{}}"
        );
        // What it shows reads back as what the config says.
        let toml_part: String = text.lines().take(13).map(|l| format!("{l}\n")).collect();
        let back: toml::Table = toml_part.parse().unwrap();
        assert_eq!(back["review"]["when"].as_str(), Some("step"));
        assert_eq!(
            back["hooks"]["on_complete"].as_str(),
            Some("echo \u{1b}[31m\ndone")
        );
    }

    #[test]
    fn a_table_alone_is_its_header() {
        let all_unset = json!({"when": null, "agent": null});
        assert_eq!(shown(&[("[review]", all_unset)]), "[review]");
        assert_eq!(
            shown(&[("[notify]", json!({"command": "x", "slack": null}))]),
            "[notify]\ncommand = \"x\""
        );
        assert_eq!(
            key("a b"),
            "\"a b\"",
            "a key TOML cannot read bare is quoted"
        );
    }
}
