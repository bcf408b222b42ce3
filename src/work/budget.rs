//! The token budget of the files every session reads: prompt, readme, spec.
//! Small core context leaves the context window for the work.

use serde::Serialize;

/// (file, budget in tokens). The prompt `ralph init` writes takes about
/// 450: its budget leaves room for the project's own rules.
pub const BUDGETS: [(&str, usize); 3] = [("prompt.md", 600), ("readme.md", 550), ("spec.md", 4000)];
/// What sessions also read, where it exists: the learnings, and the tail
/// of the progress log (its last entries only, whatever its size).
pub const ALSO_READ: [(&str, usize); 2] = [
    ("learnings.md", crate::work::progress_log::LEARNINGS_BUDGET),
    ("progress.md", crate::work::progress_log::TAIL_BUDGET),
];
/// All of them together.
pub const TOTAL_BUDGET: usize = {
    let (mut i, mut t) = (0, 0);
    while i < BUDGETS.len() {
        t += BUDGETS[i].1;
        i += 1;
    }
    let mut j = 0;
    while j < ALSO_READ.len() {
        t += ALSO_READ[j].1;
        j += 1;
    }
    t
};

/// How the estimate is made, for the user.
pub const METHOD: &str = "estimated per script, rounded up: ASCII (English, code) 4 characters a \
token; Chinese, Japanese and Korean characters 1 token each; other scripts (Cyrillic, Greek, Arabic, \
Hebrew, Indic, Thai, accented letters, symbols) 2 characters a token. Claude's tokenizer is not \
public: these are rules of thumb that err high for non-English text, so treat figures within ~10% \
of a budget as at it";

/// Cost of one character in quarter tokens.
fn quarters(c: char) -> usize {
    match c as u32 {
        0..=0x7f => 1,
        // Hangul Jamo, CJK radicals to Yi (kana, CJK ideographs, ...), Hangul
        // syllables, CJK compatibility, half/full-width forms, CJK extensions.
        0x1100..=0x11ff
        | 0x2e80..=0xa4cf
        | 0xac00..=0xd7af
        | 0xf900..=0xfaff
        | 0xff00..=0xffef
        | 0x20000..=0x3ffff => 4,
        _ => 2,
    }
}

pub fn estimate(text: &str) -> usize {
    text.chars().map(quarters).sum::<usize>().div_ceil(4)
}

/// A file's tokens, counted no further than needed to tell whether it is
/// over `budget`: a file of more than 16 bytes a token (a character is at
/// most 4 bytes, a token at most 4 characters) is over it unread, and so is
/// one that cannot be read as text; a missing one has none.
pub fn tokens_within(path: &std::path::Path, budget: usize) -> usize {
    let cap = (budget as u64 + 1) * 16;
    match crate::fsutil::read_optional_capped(path, cap) {
        Ok(Some(t)) => estimate(&t),
        Ok(None) => 0,
        Err(_) => budget + 1,
    }
}

#[derive(Debug, Serialize)]
pub struct Line {
    pub file: String,
    pub tokens: Option<usize>,
    pub budget: usize,
    /// Read where it exists: none is fine.
    #[serde(skip)]
    pub optional: bool,
}

impl Line {
    pub fn over(&self) -> bool {
        self.tokens.is_some_and(|t| t > self.budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prompt `ralph init` writes leaves room for a project's own
    /// rules (a quarter of its budget at least), and the total is the sum.
    #[test]
    fn the_init_prompt_leaves_room_and_the_total_adds_up() {
        let template = include_str!("../templates/prompt.md");
        let used = estimate(template);
        let budget = BUDGETS[0].1;
        assert!(used * 4 <= budget * 3, "{used} of {budget}");
        assert_eq!(TOTAL_BUDGET, 600 + 550 + 4000 + 800 + 1500);
    }

    #[test]
    fn a_file_is_counted_only_as_far_as_its_budget() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("learnings.md");
        assert_eq!(tokens_within(&p, 10), 0);
        std::fs::write(&p, "abcd".repeat(10)).unwrap();
        assert_eq!(tokens_within(&p, 10), 10);
        std::fs::write(&p, "x".repeat(10_000_000)).unwrap();
        assert_eq!(tokens_within(&p, 10), 11, "too big to read: over");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert_eq!(tokens_within(&p, 10), 11, "not text: over");
    }

    #[test]
    fn estimates_hold_for_every_script() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("日本語です"), 5);
        assert_eq!(estimate("Привет"), 3);
        // A Korean prompt of 4,795 characters, as in the report that found
        // characters / 4 saying ~1,199: mostly syllables, a space every few.
        let korean: String = "각 단계를 끝내면 테스트를 실행하고 커밋하세요. "
            .chars()
            .cycle()
            .take(4795)
            .collect();
        let n = estimate(&korean);
        assert!((3500..=4200).contains(&n), "{n}");
    }
}
