//! A step over its budget (`--max-cost-per-step`) pauses, its work kept:
//! the answers its question offers, and what an answer comes to. No I/O.

use crate::work::question::Answer;

/// What a human's answer to a paused step comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The step gets its budget again; words reach its next session.
    More,
    /// The step is left open, its work kept, and the run goes on with the
    /// others.
    Skip,
    /// The run stops, resumable, as `ralph stop` stops it.
    Stop,
}

/// The answers offered, in order: what each comes to, and how it reads
/// (`{cap}`: the step's budget).
const OFFERED: [(Choice, &str); 3] = [
    (
        Choice::More,
        "give the step {cap} more and go on (an answer in words does too, and reaches its next session)",
    ),
    (
        Choice::Skip,
        "skip the step: leave it open, its work kept, and go on with the other steps",
    ),
    (
        Choice::Stop,
        "stop the run; its work is kept and `ralph loop --resume` goes on",
    ),
];

/// The question's options, in order, for a step whose budget is `cap`.
pub fn options(cap: f64) -> Vec<String> {
    OFFERED
        .iter()
        .map(|(_, text)| text.replace("{cap}", &crate::output::usd(cap)))
        .collect()
}

/// Whether `options` are those a paused step's question offers (for any
/// budget; two of them in a run of ralph before skip was offered): how a run tells its own budget question from a
/// session's, whose answer is the session's and never skips or stops.
pub fn asked_about(options: &[String]) -> bool {
    let text = |c: Choice| OFFERED.iter().find(|(o, _)| *o == c).map(|(_, t)| *t);
    let (head, rest) = text(Choice::More)
        .and_then(|t| t.split_once("{cap}"))
        .unwrap_or_default();
    let more = |o: &String| o.starts_with(head) && o.ends_with(rest);
    match options {
        [m, s] => more(m) && text(Choice::Stop) == Some(s.as_str()),
        [m, k, s] => {
            more(m)
                && text(Choice::Skip) == Some(k.as_str())
                && text(Choice::Stop) == Some(s.as_str())
        }
        _ => false,
    }
}

/// What `answer` comes to: an option picked by its number is read by its
/// words (the loop that reads the answer may not be the one that asked: a
/// resumed run, a newer ralph); words of the user's own give the step
/// more.
pub fn choice(answer: &Answer) -> Choice {
    let fixed = |c: Choice| OFFERED.iter().find(|(o, _)| *o == c).map(|(_, t)| *t);
    match answer.option {
        Some(_) if Some(answer.text.as_str()) == fixed(Choice::Skip) => Choice::Skip,
        Some(_) if Some(answer.text.as_str()) == fixed(Choice::Stop) => Choice::Stop,
        _ => Choice::More,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Option `n` of `options`, picked as the question picks it.
    fn picked(n: u32) -> Answer {
        let q = crate::work::question::Question::new("over", None, &options(0.5)).unwrap();
        q.pick(n).unwrap()
    }

    #[test]
    fn each_option_is_read_by_its_number_and_words_give_the_step_more() {
        let offered = options(0.5);
        assert_eq!(offered.len(), 3);
        assert!(
            offered[0].starts_with("give the step $0.50 more"),
            "{offered:?}"
        );
        assert!(offered[1].starts_with("skip the step"), "{offered:?}");
        assert!(offered[2].starts_with("stop the run"), "{offered:?}");
        for (n, want) in [(1, Choice::More), (2, Choice::Skip), (3, Choice::Stop)] {
            assert_eq!(choice(&picked(n)), want, "option {n}");
        }
        // Another question's option (a session's) that reads otherwise.
        let theirs = Answer {
            text: "stop the run".into(),
            option: Some(2),
        };
        assert_eq!(choice(&theirs), Choice::More);
        let words = Answer::text("try the smaller way").unwrap();
        assert_eq!(choice(&words), Choice::More);
        // The run knows its own question, whatever the budget; a session's
        // that borrows one option's words is not it.
        let many = offered.clone();
        // (A run before skip was offered asked with two options.)
        let one = vec![many[0].clone(), many[2].clone()];
        assert!(asked_about(&many) && asked_about(&one));
        assert!(asked_about(&options(1_000_000.0)));
        let borrowed = vec!["Postgres".to_string(), many[2].clone()];
        assert!(!asked_about(&borrowed));
        assert!(!asked_about(&[many[2].clone()]));
        assert!(!asked_about(&[
            many[0].clone(),
            many[2].clone(),
            many[1].clone()
        ]));
        assert!(!asked_about(&[]));
        // Each option fits a question's.
        assert!(
            options(1_000_000.0)
                .iter()
                .all(|o| o.chars().count() <= crate::work::question::OPTION_MAX)
        );
    }
}
