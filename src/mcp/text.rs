//! What `ralph mcp` hands a client is read from files a session can
//! write (its spec, its questions, its journal's texts): every string
//! bounded and without control characters (no escape reaches the client's
//! terminal or model as one), the whole answer bounded. What a client sends
//! is bounded too. Pure.

use serde_json::Value;

/// The most characters of one string in an answer (a spec's step, a
/// reason, a question).
pub const STRING_MAX: usize = 2000;
/// The most bytes of one answer's text.
pub const ANSWER_MAX: usize = 128 << 10;
/// The most bytes of a call's arguments: more is refused, not cut (an
/// answer is at most `work::question::TEXT_MAX` characters anyway).
pub const ARGUMENTS_MAX: usize = 256 << 10;

/// A character that is not shown as it is: C0 and C1 controls (ESC, BEL,
/// NUL...) but newline and tab, DEL, and the Unicode direction overrides.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `s` without hidden characters, cut to `max` characters (`…` saying so).
pub fn clean_str(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    for (n, c) in s.chars().filter(|&c| !hidden(c)).enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

/// Every string of `v` (keys too) cleaned and bounded.
pub fn clean(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(clean_str(&s, STRING_MAX)),
        Value::Array(a) => Value::Array(a.into_iter().map(clean).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (clean_str(&k, STRING_MAX), clean(v)))
                .collect(),
        ),
        other => other,
    }
}

/// A text answer cleaned and cut to `ANSWER_MAX` bytes, saying so.
pub fn bounded(s: &str) -> String {
    let s = clean_str(s, usize::MAX);
    if s.len() <= ANSWER_MAX {
        return s;
    }
    let mut end = ANSWER_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (cut: {} bytes more)", &s[..end], s.len() - end)
}

/// A call's arguments, refused when too big or holding a NUL (which no
/// command line can carry: what `ralph answer` could not be sent, `ralph
/// mcp` does not take either).
pub fn check_arguments(args: &serde_json::Map<String, Value>) -> Result<(), String> {
    let size = serde_json::to_vec(args).map_or(usize::MAX, |v| v.len());
    if size > ARGUMENTS_MAX {
        return Err(format!(
            "refused: the arguments are {size} bytes, more than the {ARGUMENTS_MAX} ralph takes"
        ));
    }
    fn has_nul(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains('\0'),
            Value::Array(a) => a.iter().any(has_nul),
            Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
            _ => false,
        }
    }
    if args.values().any(has_nul) || args.keys().any(|k| k.contains('\0')) {
        return Err("refused: an argument holds a NUL byte".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_lose_their_escapes_and_are_cut() {
        assert_eq!(
            clean_str("a\u{1b}]0;PWNED\u{7}b\u{1b}[2J\0c\u{202E}d\n\te", 100),
            "a]0;PWNEDb[2Jcd\n\te"
        );
        assert_eq!(clean_str("héllo", 2), "hé…");
        let v = clean(json!({"k\u{1b}": ["x".repeat(STRING_MAX + 50), 3, null]}));
        let s = v["k"][0].as_str().unwrap();
        assert_eq!(s.chars().count(), STRING_MAX + 1);
        assert_eq!(v["k"][1], 3);
    }

    #[test]
    fn an_answer_is_cut_to_its_bound_saying_so() {
        let big = "é".repeat(ANSWER_MAX);
        let out = bounded(&big);
        assert!(out.len() < ANSWER_MAX + 64, "{}", out.len());
        assert!(out.ends_with(&format!("(cut: {} bytes more)", big.len() - ANSWER_MAX)));
        assert_eq!(bounded("ok\u{1b}[31m"), "ok[31m");
    }

    #[test]
    fn huge_arguments_or_a_nul_are_refused() {
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(check_arguments(&args(json!({"text": "fine"}))).is_ok());
        let e = check_arguments(&args(json!({"text": "x".repeat(10 << 20)}))).unwrap_err();
        assert!(e.contains("bytes, more than"), "{e}");
        let e = check_arguments(&args(json!({"a": ["b\0"]}))).unwrap_err();
        assert!(e.contains("NUL"), "{e}");
    }
}
