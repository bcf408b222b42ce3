//! The sentinel files `.ralph/COMPLETE` and `.ralph/WAITING`: small text
//! files, a few `key: value` lines, a blank line, then free text (the reason
//! or message). A file a person or agent wrote by hand with just a sentence
//! in it is read as that sentence.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::fsutil;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sentinel {
    pub fields: Vec<(String, String)>,
    pub text: String,
}

impl Sentinel {
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.fields {
            out.push_str(&format!("{k}: {v}\n"));
        }
        out.push('\n');
        out.push_str(self.text.trim_end());
        out.push('\n');
        out
    }
}

fn is_header(line: &str) -> Option<(String, String)> {
    let (k, v) = line.split_once(": ")?;
    (!k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .then(|| (k.to_string(), v.trim().to_string()))
}

pub fn parse(text: &str) -> Sentinel {
    if let Some((head, body)) = text.split_once("\n\n") {
        let fields: Option<Vec<_>> = head.lines().map(is_header).collect();
        if let Some(fields) = fields.filter(|f| !f.is_empty()) {
            return Sentinel {
                fields,
                text: body.trim().to_string(),
            };
        }
    }
    Sentinel {
        fields: Vec::new(),
        text: text.trim().to_string(),
    }
}

pub fn read(path: &Path) -> Result<Option<Sentinel>> {
    Ok(fsutil::read_optional(path)?.map(|t| parse(&t)))
}

pub fn write(path: &Path, s: &Sentinel) -> Result<()> {
    let dir = path.parent().context("a sentinel lives in .ralph/")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    fsutil::atomic_write(path, s.render().as_bytes(), 0o644)
}

/// The most bytes of a WAITING that are read.
const WAITING_READ: u64 = 64 << 10;

/// Remove a sentinel; `Ok(None)` if there was none.
pub fn remove(path: &Path) -> Result<Option<Sentinel>> {
    let s = read(path)?;
    if s.is_some() {
        std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(s)
}

/// `.ralph/COMPLETE`: the work is done (as `ralph complete` or a hand saw it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Complete {
    /// When, if the file says (a hand-written one may not).
    pub completed: Option<String>,
    /// Written with `--force`, past the check's objections.
    pub forced: bool,
    pub spec: Option<String>,
    pub tracker: Option<String>,
    pub message: String,
    /// For a file without its time (written by hand or another tool): when
    /// the file itself was last written.
    #[serde(skip)]
    pub file_time: Option<String>,
}

impl Complete {
    pub fn read(path: &Path) -> Result<Option<Complete>> {
        Ok(read(path)?.map(|s| {
            let completed = s.field("completed").map(String::from);
            let file_time = if completed.is_none() {
                std::fs::metadata(path)
                    .and_then(|m| m.modified())
                    .ok()
                    .map(crate::timefmt::rfc3339)
            } else {
                None
            };
            Complete {
                completed,
                forced: s.field("forced") == Some("yes"),
                spec: s.field("spec").map(String::from),
                tracker: s.field("tracker").map(String::from),
                message: s.text,
                file_time,
            }
        }))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        write(path, &self.sentinel())
    }

    /// Its text, as `write` writes it.
    pub fn render(&self) -> String {
        self.sentinel().render()
    }

    fn sentinel(&self) -> Sentinel {
        let mut fields = vec![(
            "completed".to_string(),
            self.completed.clone().unwrap_or_else(crate::timefmt::now),
        )];
        fields.push((
            "forced".into(),
            if self.forced { "yes" } else { "no" }.into(),
        ));
        fields.extend(self.spec.clone().map(|v| ("spec".to_string(), v)));
        fields.extend(self.tracker.clone().map(|v| ("tracker".to_string(), v)));
        Sentinel {
            fields,
            text: self.message.clone(),
        }
    }

    /// ` since 2026-…`, or for a file that does not say when, the time the
    /// file was written.
    pub fn since(&self) -> String {
        match (&self.completed, &self.file_time) {
            (Some(t), _) => format!(" since {t}"),
            (None, Some(t)) => format!(" (file written {t})"),
            (None, None) => String::new(),
        }
    }
}

/// `.ralph/WAITING`: a human is needed, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Waiting {
    pub since: Option<String>,
    /// What a human has to do: the question, when a session asked one.
    pub reason: String,
    /// `ralph waiting --blocker`: what kind of blocker it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocker: Option<crate::work::question::Blocker>,
    /// `ralph waiting --option`: the answers it offers, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Waiting {
    pub fn new(reason: impl Into<String>) -> Waiting {
        Waiting {
            since: Some(crate::timefmt::now()),
            reason: reason.into(),
            blocker: None,
            options: Vec::new(),
        }
    }

    /// A session's question, as `ralph waiting --question` writes it.
    pub fn asking(q: &crate::work::question::Question) -> Waiting {
        Waiting {
            blocker: q.blocker,
            options: q.options.clone(),
            ..Waiting::new(q.text.clone())
        }
    }

    /// What it asks, made safe to show and to send (the file is a
    /// session's): the reason as a question, with its blocker and options
    /// where they read as such; `None` if there is nothing to ask.
    pub fn question(&self) -> Option<crate::work::question::Question> {
        use crate::work::question::{OPTIONS_MAX, Question};
        let options: Vec<String> = self.options.iter().take(OPTIONS_MAX).cloned().collect();
        Question::new(&self.reason, self.blocker, &options)
            .or_else(|_| Question::new(&self.reason, self.blocker, &[]))
            .ok()
    }

    pub fn read(path: &Path) -> Result<Option<Waiting>> {
        // Its head only: a question is at most `TEXT_MAX` characters.
        let text = fsutil::read_head(path, WAITING_READ)?;
        Ok(text.map(|t| parse(&t)).map(|s| Waiting {
            since: s.field("since").map(String::from),
            blocker: s
                .field("blocker")
                .and_then(crate::work::question::Blocker::parse),
            options: s
                .fields
                .iter()
                .filter(|(k, _)| k == "option")
                .map(|(_, v)| v.clone())
                .collect(),
            // A session writes it: kept as long as a question may be, its
            // control characters left for each place to show as it does.
            reason: match s.text.char_indices().nth(crate::work::question::TEXT_MAX) {
                Some((i, _)) => format!("{}…", &s.text[..i]),
                None => s.text,
            },
        }))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let mut fields: Vec<(String, String)> = self
            .since
            .clone()
            .map(|t| ("since".to_string(), t))
            .into_iter()
            .collect();
        fields.extend(self.blocker.map(|b| ("blocker".into(), b.word().into())));
        fields.extend(self.options.iter().map(|o| {
            (
                "option".to_string(),
                crate::work::question::one_line(o, crate::work::question::OPTION_MAX),
            )
        }));
        write(
            path,
            &Sentinel {
                fields,
                text: self.reason.clone(),
            },
        )
    }

    /// ` since 2026-…`, or nothing when the file does not say.
    pub fn since(&self) -> String {
        self.since
            .as_deref()
            .map(|t| format!(" since {t}"))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_hand_written_files() {
        let s = Sentinel {
            fields: vec![("since".into(), "2026-11-22T21:00:00Z".into())],
            text: "Need the DB password.\nSecond line.".into(),
        };
        assert_eq!(parse(&s.render()), s);
        let hand = parse("Waiting for review: see PR #4\n");
        assert_eq!(
            (hand.fields.len(), hand.text.as_str()),
            (0, "Waiting for review: see PR #4")
        );
        let prose = parse("Note: this is prose\n\nand more prose");
        assert_eq!(
            (prose.fields.len(), prose.text.as_str()),
            (0, "Note: this is prose\n\nand more prose")
        );
    }

    #[test]
    fn typed_sentinels_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("COMPLETE");
        let c = Complete {
            completed: Some("2026-11-23T00:00:00Z".into()),
            forced: true,
            spec: Some("3/3 steps done".into()),
            tracker: None,
            message: "all done".into(),
            file_time: None,
        };
        c.write(&p).unwrap();
        assert_eq!(Complete::read(&p).unwrap(), Some(c));
        std::fs::write(&p, "done by hand\n").unwrap();
        let hand = Complete::read(&p).unwrap().unwrap();
        assert!(
            hand.since().starts_with(" (file written 20"),
            "{}",
            hand.since()
        );
        assert_eq!(
            (hand.forced, hand.message.as_str()),
            (false, "done by hand")
        );
        let w = Waiting::new("need a key");
        w.write(&dir.path().join("WAITING")).unwrap();
        assert_eq!(Waiting::read(&dir.path().join("WAITING")).unwrap(), Some(w));
        use crate::work::question::{Blocker, Question};
        let q = Question::new(
            "Which database?",
            Some(Blocker::Decision),
            &["Postgres".into(), "SQLite, for now".into()],
        )
        .unwrap();
        let w = Waiting::asking(&q);
        w.write(&dir.path().join("WAITING")).unwrap();
        let back = Waiting::read(&dir.path().join("WAITING")).unwrap().unwrap();
        assert_eq!(back, w);
        assert_eq!(back.question(), Some(q));
        // A hand-written file is a question of its text, with no options.
        std::fs::write(dir.path().join("WAITING"), "need the \u{1b}[2J key\n").unwrap();
        let hand = Waiting::read(&dir.path().join("WAITING")).unwrap().unwrap();
        assert_eq!(hand.question().unwrap().text, "need the [2J key");
        assert!(hand.question().unwrap().options.is_empty());
    }
}
