//! `ralph install-command --mcp`: `ralph mcp` named in an agent's user
//! config (where and how: the agent's `mcp_server`), and taken out again,
//! the rest of the file as it was: the user's other servers and settings
//! kept, a TOML file's comments and layout too. Pure: text in, text out.

use serde_json::{Map, Value};

/// The server's name in every agent's config.
pub const NAME: &str = "ralph";

/// What an edit comes to: the file's new text, or nothing to do (and why).
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    Write(String),
    Nothing(&'static str),
}

fn refused_other(force: bool) -> Result<(), String> {
    if force {
        Ok(())
    } else {
        Err(format!(
            "it names an MCP server {NAME:?} already, with other settings (yours, or another ralph's); kept. --force replaces it"
        ))
    }
}

/// A JSON config (`None`: no file yet) with entry `NAME` = `entry` in its
/// object `key`.
pub fn json_add(text: Option<&str>, key: &str, entry: &Value, force: bool) -> Result<Edit, String> {
    let mut doc = json_doc(text)?;
    let servers = doc
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(format!("its {key:?} is not an object; add it yourself"))?;
    match servers.get(NAME) {
        Some(v) if v == entry => return Ok(Edit::Nothing("already there")),
        Some(_) => refused_other(force)?,
        None => {}
    }
    servers.insert(NAME.into(), entry.clone());
    Ok(Edit::Write(json_text(&doc)))
}

/// A JSON config without entry `NAME` in `key`: only ours (`entry`),
/// unless `force`.
pub fn json_remove(
    text: Option<&str>,
    key: &str,
    entry: &Value,
    force: bool,
) -> Result<Edit, String> {
    if text.is_none() {
        return Ok(Edit::Nothing("no such file"));
    }
    let mut doc = json_doc(text)?;
    let Some(servers) = doc.get_mut(key).and_then(Value::as_object_mut) else {
        return Ok(Edit::Nothing("not there"));
    };
    match servers.get(NAME) {
        None => return Ok(Edit::Nothing("not there")),
        Some(v) if v != entry && !force => {
            return Err(format!(
                "its MCP server {NAME:?} has other settings than ralph's (yours, or another ralph's); kept. --force removes it"
            ));
        }
        Some(_) => {}
    }
    servers.shift_remove(NAME);
    Ok(Edit::Write(json_text(&doc)))
}

fn json_doc(text: Option<&str>) -> Result<Map<String, Value>, String> {
    match text.map(str::trim) {
        None | Some("") => Ok(Map::new()),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err("it is not a JSON object; add it yourself".into()),
            Err(e) => Err(format!(
                "it is not plain JSON ({e}; comments?): add it yourself"
            )),
        },
    }
}

fn json_text(doc: &Map<String, Value>) -> String {
    let mut t = serde_json::to_string_pretty(doc).expect("JSON serialises");
    t.push('\n');
    t
}

/// A TOML config with table `[<table>.NAME]` = `entry` (strings and
/// arrays of strings), appended as `codex mcp add` writes it; the rest of
/// the text as it was.
pub fn toml_add(
    text: Option<&str>,
    table: &str,
    entry: &Value,
    force: bool,
) -> Result<Edit, String> {
    let text = text.unwrap_or("");
    let doc = toml_doc(text)?;
    let mut base = text.to_string();
    match ours_in(&doc, table) {
        Some(v) if v == *entry => return Ok(Edit::Nothing("already there")),
        Some(_) => {
            refused_other(force)?;
            base = toml_cut(text, table)?;
        }
        None => {}
    }
    let mut block = format!("[{table}.{NAME}]\n");
    for (k, v) in entry.as_object().into_iter().flatten() {
        // A JSON string (or array of them) is a TOML value as it is.
        block.push_str(&format!("{k} = {v}\n"));
    }
    if !base.is_empty() && !base.ends_with('\n') {
        base.push('\n');
    }
    if !base.trim().is_empty() {
        base.push('\n');
    }
    base.push_str(&block);
    let after = toml_doc(&base)?;
    if ours_in(&after, table).as_ref() != Some(entry) {
        return Err(format!(
            "ralph could not add [{table}.{NAME}] to it as it is written; add it yourself"
        ));
    }
    Ok(Edit::Write(base))
}

/// A TOML config without table `[<table>.NAME]`: only ours, unless
/// `force`; the rest of the text as it was.
pub fn toml_remove(
    text: Option<&str>,
    table: &str,
    entry: &Value,
    force: bool,
) -> Result<Edit, String> {
    let Some(text) = text else {
        return Ok(Edit::Nothing("no such file"));
    };
    let doc = toml_doc(text)?;
    match ours_in(&doc, table) {
        None => Ok(Edit::Nothing("not there")),
        Some(v) if v != *entry && !force => Err(format!(
            "its [{table}.{NAME}] has other settings than ralph's (yours, or another ralph's); kept. --force removes it"
        )),
        Some(_) => toml_cut(text, table).map(Edit::Write),
    }
}

fn toml_doc(text: &str) -> Result<toml::Table, String> {
    text.parse::<toml::Table>()
        .map_err(|e| format!("it is not valid TOML ({}); fix it first", e.message()))
}

/// The entry `[<table>.NAME]` as JSON, if there.
fn ours_in(doc: &toml::Table, table: &str) -> Option<Value> {
    let v = doc.get(table)?.get(NAME)?;
    serde_json::to_value(v).ok()
}

/// `text` without the lines of `[<table>.NAME]` (and its sub-tables), if
/// that leaves the rest as it was; else refused.
fn toml_cut(text: &str, table: &str) -> Result<String, String> {
    let header = format!("[{table}.{NAME}]");
    let sub = format!("[{table}.{NAME}.");
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == header || t.starts_with(&sub);
        }
        if !inside {
            out.push(line);
        }
    }
    let cut = out.concat();
    let (mut before, after) = (toml_doc(text)?, toml_doc(&cut)?);
    if let Some(t) = before.get_mut(table).and_then(|t| t.as_table_mut()) {
        t.remove(NAME);
        // `[table.NAME]` alone made `table`: it goes with it.
        if t.is_empty() && !after.contains_key(table) {
            before.remove(table);
        }
    }
    if before != after {
        return Err(format!(
            "its [{table}.{NAME}] is written in a way ralph does not edit; remove it yourself"
        ));
    }
    Ok(cut.trim_end().to_string() + if cut.trim().is_empty() { "" } else { "\n" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(e: Result<Edit, String>) -> String {
        match e {
            Ok(Edit::Write(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_json_config_gets_the_entry_beside_the_users_and_gives_it_back() {
        let entry = json!({"command": "/bin/ralph", "args": ["mcp"]});
        let mine = r#"{"theme": "dark", "mcpServers": {"db": {"command": "db-mcp"}}}"#;
        let added = written(json_add(Some(mine), "mcpServers", &entry, false));
        let v: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(v["mcpServers"]["db"]["command"], "db-mcp");
        assert_eq!(v["mcpServers"]["ralph"], entry);
        assert_eq!(v["theme"], "dark");
        assert_eq!(
            json_add(Some(&added), "mcpServers", &entry, false),
            Ok(Edit::Nothing("already there"))
        );
        let removed = written(json_remove(Some(&added), "mcpServers", &entry, false));
        let v: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(v, serde_json::from_str::<Value>(mine).unwrap());
        // Another server of that name is the user's: kept unless --force.
        let other = json!({"command": "elsewhere"});
        assert!(json_add(Some(&added), "mcpServers", &other, false).is_err());
        assert!(json_remove(Some(&added), "mcpServers", &other, false).is_err());
        assert!(json_add(Some(&added), "mcpServers", &other, true).is_ok());
        // None yet; a file that is no plain JSON is left alone.
        let v: Value =
            serde_json::from_str(&written(json_add(None, "mcp", &entry, false))).unwrap();
        assert_eq!(v, json!({"mcp": {"ralph": entry}}));
        assert!(json_add(Some("// c\n{}"), "mcp", &entry, false).is_err());
    }

    #[test]
    fn a_toml_config_keeps_its_comments_and_other_tables() {
        let entry = json!({"command": "/bin/ralph", "args": ["mcp"]});
        let mine = "# mine\nmodel = \"o3\"\n\n[mcp_servers.db]\ncommand = \"db\" # a db\n";
        let added = written(toml_add(Some(mine), "mcp_servers", &entry, false));
        assert_eq!(
            added,
            format!("{mine}\n[mcp_servers.ralph]\ncommand = \"/bin/ralph\"\nargs = [\"mcp\"]\n")
        );
        assert_eq!(
            toml_add(Some(&added), "mcp_servers", &entry, false),
            Ok(Edit::Nothing("already there"))
        );
        assert_eq!(
            written(toml_remove(Some(&added), "mcp_servers", &entry, false)),
            mine
        );
        // A table after ours stays; its sub-tables go with it.
        let more =
            format!("{added}[mcp_servers.ralph.env]\nX = \"1\"\n\n[profiles.a]\nmodel = \"x\"\n");
        let other = json!({"command": "/bin/ralph", "args": ["mcp"], "env": {"X": "1"}});
        assert!(toml_remove(Some(&more), "mcp_servers", &entry, false).is_err());
        let cut = written(toml_remove(Some(&more), "mcp_servers", &other, false));
        assert_eq!(cut, format!("{mine}\n[profiles.a]\nmodel = \"x\"\n"));
        assert_eq!(
            written(toml_add(None, "mcp_servers", &entry, false)),
            "[mcp_servers.ralph]\ncommand = \"/bin/ralph\"\nargs = [\"mcp\"]\n"
        );
        // Written inline: not ralph's to edit.
        let inline = "[mcp_servers]\nralph = { command = \"x\" }\n";
        assert!(toml_remove(Some(inline), "mcp_servers", &entry, true).is_err());
    }
}
