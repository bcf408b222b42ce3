//! The token budget of the files every session reads: prompt, readme, spec.
//! Small core context leaves the context window for the work.

use serde::Serialize;

/// (file, budget in tokens)
pub const BUDGETS: [(&str, usize); 3] = [("prompt.md", 450), ("readme.md", 550), ("spec.md", 4000)];
pub const TOTAL_BUDGET: usize = 5000;

/// How the estimate is made, for the user.
pub const METHOD: &str = "estimated as characters / 4 (rounded up): Claude's tokenizer averages \
3.5-4.5 characters per token on English and code, so treat figures within ~10% of a budget as at it";

pub fn estimate(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[derive(Debug, Serialize)]
pub struct Line {
    pub file: String,
    pub tokens: Option<usize>,
    pub budget: usize,
}

impl Line {
    pub fn over(&self) -> bool {
        self.tokens.is_some_and(|t| t > self.budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_round_up_by_characters_not_bytes() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("日本語です"), 2);
    }
}
