//! What the open steps will likely cost and take, from what past steps
//! cost and took: each past step's sessions, dollars and time read from
//! its run's records, and the open steps drawn from them many times over.
//! Pure: the samples come from `history::costs`.

use serde::{Deserialize, Serialize};

use super::records::Record;

/// One step done in the past: what the sessions that did it came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Dollars (0 where the agent reported none: `cost_known` says).
    pub usd: f64,
    pub sessions: f64,
    pub secs: f64,
}

/// The steps a run's records say were done, oldest first: each counted
/// session's cost, sessions and time run up until a session checks boxes,
/// then shared among the boxes it checked. Work towards a step not done
/// by the end is no sample. Pure.
pub fn steps_of(records: &[Record]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut run_up = Step {
        usd: 0.0,
        sessions: 0.0,
        secs: 0.0,
    };
    for r in records {
        run_up.usd += r.cost_usd;
        run_up.secs += r.duration_s;
        if r.counted {
            run_up.sessions += 1.0;
        }
        let done = |s: &str| -> Option<u32> { s.split('/').next()?.parse().ok() };
        let checked = match (done(&r.spec_before), done(&r.spec_after)) {
            (Some(b), Some(a)) if a > b => a - b,
            _ => continue,
        };
        let n = f64::from(checked);
        for _ in 0..checked {
            out.push(Step {
                usd: run_up.usd / n,
                sessions: run_up.sessions / n,
                secs: run_up.secs / n,
            });
        }
        run_up = Step {
            usd: 0.0,
            sessions: 0.0,
            secs: 0.0,
        };
    }
    out
}

/// A median and the 90th percentile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub p90: f64,
}

/// Where the past steps came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// This project's runs with the same agent and model.
    Project,
    /// Other projects' runs on this machine with the same agent and model.
    Machine,
}

/// What the open steps will likely come to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub steps: u32,
    pub from: Source,
    /// How many past steps it is drawn from.
    pub past_steps: usize,
    pub usd: Spread,
    pub sessions: Spread,
    pub secs: Spread,
    /// A session's cost, and the sessions a step took, as they were.
    pub usd_per_session: Spread,
    pub sessions_per_step: Spread,
    /// Whether every past step's cost was known (else dollars are not
    /// estimated: `usd` is of the known ones only).
    pub cost_known: bool,
}

/// The draws of the open steps: enough for a stable median and 90th
/// percentile, few enough to cost nothing.
const DRAWS: usize = 2000;
const DRAWS_FEWEST: usize = 200;
/// The most steps drawn in all, for one estimate.
const WORK: usize = 2_000_000;
/// The fewest past steps an estimate is drawn from.
pub const FEWEST: usize = 3;

/// A small fixed-seed generator: the same history gives the same
/// estimate, every time.
struct Draw(u64);

impl Draw {
    fn next(&mut self, n: usize) -> usize {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

/// The median and 90th percentile of `v` (sorted here).
fn spread(v: &mut [f64]) -> Spread {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if v.is_empty() {
            0.0
        } else {
            v[((v.len() - 1) as f64 * q).round() as usize]
        }
    };
    Spread {
        median: at(0.5),
        p90: at(0.9),
    }
}

/// The estimate of `open` steps from `past` (the project's own, else the
/// machine's: `from`), or `None` with fewer than `FEWEST` past steps or no
/// open step. `cost_known`: whether the past steps' costs were all known.
/// Pure.
pub fn estimate(open: u32, past: &[Step], from: Source, cost_known: bool) -> Option<Estimate> {
    if open == 0 || past.len() < FEWEST {
        return None;
    }
    let mut g = Draw(0x9E37_79B9_7F4A_7C15 ^ past.len() as u64);
    // Fewer draws for a spec of thousands of steps: the work stays bounded
    // (a sum of so many steps varies little anyway).
    let draws = (WORK / open as usize).clamp(DRAWS_FEWEST, DRAWS);
    let (mut usd, mut sessions, mut secs) = (
        Vec::with_capacity(draws),
        Vec::with_capacity(draws),
        Vec::with_capacity(draws),
    );
    for _ in 0..draws {
        let (mut u, mut n, mut t) = (0.0, 0.0, 0.0);
        for _ in 0..open {
            let s = past[g.next(past.len())];
            u += s.usd;
            n += s.sessions;
            t += s.secs;
        }
        usd.push(u);
        sessions.push(n);
        secs.push(t);
    }
    let mut per_session: Vec<f64> = past
        .iter()
        .filter(|s| s.sessions > 0.0)
        .map(|s| s.usd / s.sessions)
        .collect();
    let mut per_step: Vec<f64> = past.iter().map(|s| s.sessions).collect();
    Some(Estimate {
        steps: open,
        from,
        past_steps: past.len(),
        usd: spread(&mut usd),
        sessions: spread(&mut sessions),
        secs: spread(&mut secs),
        usd_per_session: spread(&mut per_session),
        sessions_per_step: spread(&mut per_step),
        cost_known,
    })
}

/// How many of the open steps a cap of `usd` likely covers: the most
/// steps whose median cost is within it. Pure.
pub fn covered(e: &Estimate, usd: f64, past: &[Step]) -> u32 {
    let within =
        |k: u32| estimate(k, past, e.from, e.cost_known).is_some_and(|k| k.usd.median <= usd);
    // The cost of k steps grows with k: the most within, by halves.
    let (mut lo, mut hi) = (0, e.steps);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if within(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(counted: bool, usd: f64, secs: f64, before: &str, after: &str) -> Record {
        let mut r = Record::sample();
        r.counted = counted;
        r.cost_usd = usd;
        r.duration_s = secs;
        r.spec_before = before.into();
        r.spec_after = after.into();
        r
    }

    #[test]
    fn a_step_is_what_the_sessions_up_to_its_box_came_to() {
        let records = [
            record(true, 1.0, 10.0, "0/3", "0/3"),
            record(false, 0.5, 5.0, "0/3", "0/3"),
            record(true, 1.5, 15.0, "0/3", "1/3"),
            record(true, 2.0, 20.0, "1/3", "3/3"),
            record(true, 9.0, 90.0, "3/4", "3/4"),
        ];
        let steps = steps_of(&records);
        let s = |usd, sessions, secs| Step {
            usd,
            sessions,
            secs,
        };
        assert_eq!(
            steps,
            [s(3.0, 2.0, 30.0), s(1.0, 0.5, 10.0), s(1.0, 0.5, 10.0)],
            "a limited retry costs but does not count; unfinished work is no step"
        );
    }

    #[test]
    fn the_open_steps_are_drawn_from_the_past_ones() {
        let past: Vec<Step> = (1..=10)
            .map(|i| Step {
                usd: f64::from(i) * 0.1,
                sessions: 1.0 + f64::from(i % 2),
                secs: 60.0,
            })
            .collect();
        assert_eq!(estimate(0, &past, Source::Project, true), None);
        assert_eq!(estimate(2, &past[..2], Source::Project, true), None);
        let e = estimate(4, &past, Source::Project, true).unwrap();
        // A step's mean is $0.55: four come to about $2.20.
        assert!((e.usd.median - 2.2).abs() < 0.15, "{e:?}");
        assert!(e.usd.p90 > e.usd.median && e.usd.p90 < 4.0, "{e:?}");
        assert_eq!(e.secs.median, 240.0);
        assert_eq!(e.sessions_per_step.median, 2.0);
        assert_eq!(
            e,
            estimate(4, &past, Source::Project, true).unwrap(),
            "stable"
        );
        assert_eq!(covered(&e, 1.2, &past), 2);
        assert_eq!(covered(&e, 100.0, &past), 4);
        assert_eq!(covered(&e, 0.01, &past), 0);
        // A spec of a hundred thousand steps: still estimated, in bounded work.
        let many = estimate(100_000, &past, Source::Project, true).unwrap();
        assert!((many.usd.median - 55_000.0).abs() < 550.0, "{many:?}");
        let k = covered(&many, 5_500.0, &past);
        assert!((9_900..=10_100).contains(&k), "{k}");
    }
}
