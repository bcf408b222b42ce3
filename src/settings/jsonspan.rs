//! A JSON reader that remembers where every value sits in the text.
//!
//! Settings edits splice new text into the user's file instead of
//! re-serialising the document: that is the only way to keep their key order,
//! number spellings, escapes, inline arrays and blank lines exactly as written.
//! The input has already been validated by `serde_json` (which gives the user
//! good line/column errors); this reader only needs to find spans.

use std::ops::Range;

use anyhow::{Result, bail};

#[derive(Debug, Clone)]
pub enum Node {
    Object {
        span: Range<usize>,
        members: Vec<Member>,
    },
    Array {
        span: Range<usize>,
        items: Vec<Node>,
    },
    Scalar {
        span: Range<usize>,
    },
}

#[derive(Debug, Clone)]
pub struct Member {
    pub key: String,
    pub key_span: Range<usize>,
    pub value: Node,
}

impl Node {
    pub fn span(&self) -> Range<usize> {
        match self {
            Node::Object { span, .. } | Node::Array { span, .. } | Node::Scalar { span } => {
                span.clone()
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&Member> {
        match self {
            // Duplicate keys: serde_json keeps the last one, so do we.
            Node::Object { members, .. } => members.iter().rev().find(|m| m.key == key),
            _ => None,
        }
    }

    /// Spans of the container's children: whole members for objects.
    pub fn child_spans(&self) -> Vec<Range<usize>> {
        match self {
            Node::Object { members, .. } => members
                .iter()
                .map(|m| m.key_span.start..m.value.span().end)
                .collect(),
            Node::Array { items, .. } => items.iter().map(Node::span).collect(),
            Node::Scalar { .. } => Vec::new(),
        }
    }
}

pub fn parse(text: &str) -> Result<Node> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    p.ws();
    let node = p.value()?;
    p.ws();
    if p.i != p.b.len() {
        bail!("trailing characters at byte {}", p.i);
    }
    Ok(node)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.b.get(self.i) != Some(&c) {
            bail!("expected '{}' at byte {}", c as char, self.i);
        }
        self.i += 1;
        Ok(())
    }

    fn value(&mut self) -> Result<Node> {
        match self.b.get(self.i) {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => {
                let span = self.string()?;
                Ok(Node::Scalar { span })
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                if start == self.i {
                    bail!("expected a value at byte {start}");
                }
                Ok(Node::Scalar {
                    span: start..self.i,
                })
            }
            None => bail!("unexpected end of input"),
        }
    }

    fn string(&mut self) -> Result<Range<usize>> {
        let start = self.i;
        self.expect(b'"')?;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Ok(start..self.i);
                }
                _ => self.i += 1,
            }
        }
        bail!("unterminated string at byte {start}")
    }

    fn object(&mut self) -> Result<Node> {
        let start = self.i;
        self.expect(b'{')?;
        let mut members = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Node::Object {
                span: start..self.i,
                members,
            });
        }
        loop {
            self.ws();
            let key_span = self.string()?;
            let key: String =
                serde_json::from_str(&String::from_utf8_lossy(&self.b[key_span.clone()]))?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let value = self.value()?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Node::Object {
                        span: start..self.i,
                        members,
                    });
                }
                _ => bail!("expected ',' or '}}' at byte {}", self.i),
            }
        }
    }

    fn array(&mut self) -> Result<Node> {
        let start = self.i;
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Node::Array {
                span: start..self.i,
                items,
            });
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Node::Array {
                        span: start..self.i,
                        items,
                    });
                }
                _ => bail!("expected ',' or ']' at byte {}", self.i),
            }
        }
    }
}

/// 1-based line and column of a byte offset, columns counted in characters.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_members_and_items() {
        let text = r#"{ "a": [1, {"b": "x\"y"}], "c": null }"#;
        let root = parse(text).unwrap();
        let a = root.get("a").unwrap();
        assert_eq!(&text[a.value.span()], r#"[1, {"b": "x\"y"}]"#);
        let spans = root.child_spans();
        assert_eq!(&text[spans[1].clone()], r#""c": null"#);
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn duplicate_keys_resolve_to_last_like_serde() {
        let root = parse(r#"{"k": 1, "k": 2}"#).unwrap();
        assert_eq!(root.get("k").unwrap().value.span(), 14..15);
    }
}
