//! A step over its budget (`--max-cost-per-step`) pauses, its work kept:
//! the answers its question offers, and what an answer comes to. No I/O.

use crate::work::question::Answer;

/// What a human's answer to a paused step comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The step gets its budget again; words reach its next session.
    More,
    /// The step is left open, its work kept, and the run goes on with the
    /// others (a run of many steps only).
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
        "skip the step: leave it open, its work kept in its worktree, and go on with the other steps",
    ),
    (
        Choice::Stop,
        "stop the run; its work is kept and `ralph loop --resume` goes on",
    ),
];

/// The choices a run can carry out: a run of one session at a time
/// (`skip`: false) has no other step to go on with.
fn offered(skip: bool) -> impl Iterator<Item = &'static (Choice, &'static str)> {
    OFFERED
        .iter()
        .filter(move |(c, _)| skip || *c != Choice::Skip)
}

/// The question's options, in order, for a step whose budget is `cap`.
pub fn options(cap: f64, skip: bool) -> Vec<String> {
    offered(skip)
        .map(|(_, text)| text.replace("{cap}", &crate::output::usd(cap)))
        .collect()
}

/// Whether `options` are those a paused step's question offers (for any
/// budget, skip or not): how a run tells its own budget question from a
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
/// words (whichever options the question offered, skip or not, and
/// whether the loop that reads the answer is the one that asked); words
/// of the user's own give the step more.
pub fn choice(answer: &Answer) -> Choice {
    let picked = |c: &Choice| offered(true).find(|(o, _)| o == c).map(|(_, t)| *t);
    match answer.option {
        Some(_) if Some(answer.text.as_str()) == picked(&Choice::Skip) => Choice::Skip,
        Some(_) if Some(answer.text.as_str()) == picked(&Choice::Stop) => Choice::Stop,
        _ => Choice::More,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Option `n` of `options(_, skip)`, picked as the question picks it.
    fn picked(n: u32, skip: bool) -> Answer {
        let q = crate::work::question::Question::new("over", None, &options(0.5, skip)).unwrap();
        q.pick(n).unwrap()
    }

    #[test]
    fn each_option_is_read_by_its_number_and_words_give_the_step_more() {
        let many = options(0.5, true);
        assert_eq!(many.len(), 3);
        assert!(many[0].starts_with("give the step $0.50 more"), "{many:?}");
        assert!(many[1].starts_with("skip the step"), "{many:?}");
        assert!(many[2].starts_with("stop the run"), "{many:?}");
        let one = options(0.5, false);
        assert_eq!(one, vec![many[0].clone(), many[2].clone()]);
        for (skip, n, want) in [
            (true, 1, Choice::More),
            (true, 2, Choice::Skip),
            (true, 3, Choice::Stop),
            (false, 1, Choice::More),
            (false, 2, Choice::Stop),
        ] {
            assert_eq!(choice(&picked(n, skip)), want, "skip {skip}, option {n}");
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
        assert!(asked_about(&many) && asked_about(&one));
        assert!(asked_about(&options(1_000_000.0, false)));
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
            options(1_000_000.0, true)
                .iter()
                .all(|o| o.chars().count() <= crate::work::question::OPTION_MAX)
        );
    }
}
