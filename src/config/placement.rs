//! Where a key of `.ralph/config.toml` belongs. A key written under the
//! wrong table (`max_iterations` after `[gate]`) is a common slip, and
//! serde's "unknown field" names only the keys of the table it landed in:
//! this says where it landed and where it belongs.

use serde::de::{self, Deserialize, Visitor};

use super::{GateConfig, Hooks, NotifyConfig, Options, ReviewConfig};
use crate::agent::prices::Price;

/// The keys serde reads for `T`, from its derive's own list: never out of
/// step with the structs.
fn keys_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut keys: &'static [&'static str] = &[];
    let _ = T::deserialize(KeysOf(&mut keys));
    keys
}

/// A deserializer that only asks a struct for its field names.
struct KeysOf<'a>(&'a mut &'static [&'static str]);

#[derive(Debug)]
struct Asked;

impl std::fmt::Display for Asked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("keys asked for")
    }
}

impl std::error::Error for Asked {}

impl de::Error for Asked {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Asked
    }
}

impl<'de> de::Deserializer<'de> for KeysOf<'_> {
    type Error = Asked;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Asked> {
        Err(Asked)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Asked> {
        *self.0 = fields;
        Err(Asked)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Each place a key can be, as the user writes it, with its keys: the top
/// of the file (`""`), then the tables.
fn places() -> [(&'static str, &'static [&'static str]); 6] {
    [
        ("", keys_of::<Options>()),
        ("gate", keys_of::<GateConfig>()),
        ("review", keys_of::<ReviewConfig>()),
        ("notify", keys_of::<NotifyConfig>()),
        ("hooks", keys_of::<Hooks>()),
        ("prices.<model>", keys_of::<Price>()),
    ]
}

/// Where a key of `places` goes, as the user is told.
fn belongs(places: &[&str]) -> Option<String> {
    let tables: Vec<String> = places
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| format!("[{p}]"))
        .collect();
    let under = (!tables.is_empty()).then(|| format!("under {}", tables.join(" or ")));
    let top = "at the top of .ralph/config.toml";
    match (places.contains(&""), under) {
        (true, None) => Some(format!("{top}, before any [table]")),
        (true, Some(u)) => Some(format!("{top} (before any [table]) or {u}")),
        (false, u) => u,
    }
}

/// The tables of `doc` a key can be misplaced in, by their names as
/// written (`[prices.gpt-x]` for a model's price), with their keys.
fn tables_in(doc: &toml::Table) -> Vec<(String, &toml::Table, &'static [&'static str])> {
    let mut out = Vec::new();
    for (place, keys) in places() {
        match place {
            "" => out.push((String::new(), doc, keys)),
            "prices.<model>" => {
                let models = doc.get("prices").and_then(toml::Value::as_table);
                for (model, t) in models.into_iter().flatten() {
                    if let Some(t) = t.as_table() {
                        out.push((format!("prices.{model}"), t, keys));
                    }
                }
            }
            table => {
                if let Some(t) = doc.get(table).and_then(toml::Value::as_table) {
                    out.push((table.to_string(), t, keys));
                }
            }
        }
    }
    out
}

/// What to say of `key`, unknown where it was written in `doc`: the table
/// it is under and where it belongs; for a typo in a table (it belongs
/// nowhere), that table's keys. `None` for a typo at the top: serde's own
/// list of the keys there says as much.
pub fn misplaced(key: &str, doc: &toml::Table) -> Option<String> {
    let (landed, _, here_keys) = tables_in(doc)
        .into_iter()
        .find(|(_, t, keys)| t.contains_key(key) && !keys.contains(&key))?;
    let places = places();
    let homes: Vec<&str> = places
        .iter()
        .filter(|(_, keys)| keys.contains(&key))
        .map(|(place, _)| *place)
        .collect();
    let here = if landed.is_empty() {
        "is at the top of .ralph/config.toml, where it is not a key".to_string()
    } else {
        format!("is under [{landed}], where it is not a key")
    };
    match belongs(&homes) {
        Some(belongs) => Some(format!("`{key}` {here}; it belongs {belongs}")),
        None if landed.is_empty() => None,
        None => Some(format!(
            "`{key}` {here}, nor anywhere else in .ralph/config.toml; [{landed}] has `{}`",
            here_keys.join("`, `")
        )),
    }
}

/// The key serde's "unknown field `KEY`, expected ..." names.
pub fn unknown_key(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    let end = rest.rfind("`, expected").or_else(|| rest.rfind('`'))?;
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(key: &str, text: &str) -> Option<String> {
        misplaced(key, &text.parse::<toml::Table>().unwrap())
    }

    #[test]
    fn each_place_knows_its_keys() {
        let [top, gate, review, notify, hooks, price] = places().map(|(_, k)| k);
        assert!(top.contains(&"max_iterations") && top.contains(&"gate"));
        assert!(gate.contains(&"commands") && !gate.contains(&"max_iterations"));
        assert!(review.contains(&"when") && review.contains(&"enabled"));
        // `to` is the command line's only (`--notify`), never a key.
        assert!(notify.contains(&"events") && !notify.contains(&"to"));
        assert!(hooks.contains(&"on_limit"));
        assert_eq!(price, ["input", "cached_input", "output"]);
    }

    #[test]
    fn a_key_under_the_wrong_table_is_told_where_it_belongs() {
        assert_eq!(
            said("max_iterations", "[gate]\nmax_iterations = 5\n").unwrap(),
            "`max_iterations` is under [gate], where it is not a key; it belongs at the top of .ralph/config.toml, before any [table]"
        );
        assert_eq!(
            said("when", "[notify]\nwhen = \"step\"\n").unwrap(),
            "`when` is under [notify], where it is not a key; it belongs under [gate] or [review]"
        );
        assert_eq!(
            said("on_complete", "on_complete = \"x\"\n").unwrap(),
            "`on_complete` is at the top of .ralph/config.toml, where it is not a key; it belongs under [hooks]"
        );
        // At the top and in a table both.
        assert_eq!(
            said("timeout", "[review]\ntimeout = \"5m\"\n").unwrap(),
            "`timeout` is under [review], where it is not a key; it belongs at the top of .ralph/config.toml (before any [table]) or under [gate]"
        );
        assert_eq!(
            said("commands", "[prices.m]\ncommands = []\n").unwrap(),
            "`commands` is under [prices.m], where it is not a key; it belongs under [gate]"
        );
        assert_eq!(
            said("output", "[hooks]\noutput = 1.0\n").unwrap(),
            "`output` is under [hooks], where it is not a key; it belongs under [prices.<model>]"
        );
        // A typo belongs nowhere: in a table, its keys are named; at the
        // top, serde's own message says as much.
        assert_eq!(
            said("whne", "[review]\nwhne = \"step\"\n").unwrap(),
            "`whne` is under [review], where it is not a key, nor anywhere else in .ralph/config.toml; [review] has `when`, `agent`, `model`, `prompt`, `max_rounds`, `enabled`"
        );
        assert_eq!(said("max_iteration", "max_iteration = 5\n"), None);
    }

    #[test]
    fn the_unknown_key_is_read_from_serdes_message() {
        assert_eq!(
            unknown_key("unknown field `when`, expected one of `a`, `b`"),
            Some("when")
        );
        assert_eq!(
            unknown_key("unknown field `a`b`, expected `c`"),
            Some("a`b")
        );
        assert_eq!(unknown_key("invalid type: integer"), None);
    }
}
