//! Claims on a parallel run's steps, as leases on the remote (`refs/ralph/claims/<slug>`):
//! what a claim commit says, parsed pure and bounded, and when this machine judges one run out.

use std::collections::BTreeMap;

/// Where claims live on the remote, a ref per step (its slug).
pub const NAMESPACE: &str = "refs/ralph/claims/";

/// The longest lease a claim may have, in seconds (`--lease`'s bound, and
/// what `ralph status --remote` honours of a claim).
pub const MAX_LEASE: u64 = 3600;

/// The claim a `ralph merge --follow` holds while it follows the run of
/// `branch` (the integration branch): workers wait for its merges only
/// while it is live. No step's slug is ever this (a step's ends in a hash).
pub fn merger_slot(branch: &str) -> String {
    let mut s = String::from("merger");
    for c in branch.chars() {
        s.push(if c.is_ascii_alphanumeric() { c } else { '-' });
    }
    s
}

/// The first line of every claim's message.
const TITLE: &str = "ralph claim";

/// The most of a claim commit that is read: anyone who can push may write
/// one, and a claim says a few short lines.
pub const CAP: usize = 4096;

/// The longest value kept of a claim's field (a machine's name, say).
const FIELD_CAP: usize = 80;

/// What a claim commit's message says. Nothing in it is trusted beyond
/// what `expiry` allows: any clone (or a session in it) can push one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The step's slug (its ref's name says it too).
    pub step: String,
    pub machine: String,
    pub run: String,
    /// When it was first claimed, and last renewed (seconds since the epoch).
    pub since: u64,
    pub renewed: u64,
    /// For how long each renewal holds, in seconds.
    pub lease: u64,
}

/// One line, printable, capped: a field as it goes into and comes out of a claim.
fn field(s: &str) -> String {
    let line = crate::output::visible_line(s.trim());
    match line.char_indices().nth(FIELD_CAP) {
        Some((at, _)) => line[..at].to_string(),
        None => line,
    }
}

impl Claim {
    /// The commit message that says it.
    pub fn message(&self) -> String {
        format!(
            "{TITLE}\n\nstep: {}\nmachine: {}\nrun: {}\nsince: {}\nrenewed: {}\nlease: {}\n",
            field(&self.step),
            field(&self.machine),
            field(&self.run),
            self.since,
            self.renewed,
            self.lease
        )
    }
}

/// A claim from its commit object as `git cat-file commit` prints it
/// (headers, a blank line, the message): `None` when it is longer than
/// `CAP`, is not a claim, or lacks a field. Pure.
pub fn parse(commit: &[u8]) -> Option<Claim> {
    if commit.len() > CAP {
        return None;
    }
    let text = String::from_utf8_lossy(commit);
    let (_, message) = text.split_once("\n\n")?;
    let mut lines = message.lines();
    if lines.next()?.trim() != TITLE {
        return None;
    }
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            // The first of each wins: a field said twice is not a second say.
            fields.entry(k.trim()).or_insert(v);
        }
    }
    let num = |k: &str| fields.get(k)?.trim().parse::<u64>().ok();
    Some(Claim {
        step: field(fields.get("step")?),
        machine: field(fields.get("machine")?),
        run: field(fields.get("run")?),
        since: num("since")?,
        renewed: num("renewed")?,
        lease: num("lease")?,
    })
}

/// When a claim runs out by this observer's clock. `first_seen`: when this
/// observer first saw the claim's commit (a renewal is a new one); `limit`:
/// the longest lease this run honours. A claim's own word counts only as
/// far as it is believable: its renewal no later than now, its lease no
/// longer than `limit`; and however it reads (unreadable: `None`), it runs
/// out at the latest `limit` after it was first seen here, so a forged
/// claim with a far-future lease holds no longer than a real one. Pure.
pub fn expiry(claim: Option<&Claim>, first_seen: u64, now: u64, limit: u64) -> u64 {
    let seen_bound = first_seen.saturating_add(limit);
    match claim {
        Some(c) => {
            let renewed = c.renewed.min(now);
            renewed.saturating_add(c.lease.min(limit)).min(seen_bound)
        }
        None => seen_bound,
    }
}

/// A claim on the remote as this observer judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// The claim commit (what a takeover or a release expects).
    pub sha: String,
    /// What it says, if it reads as a claim.
    pub claim: Option<Claim>,
    /// When it runs out here (seconds since the epoch).
    pub expires: u64,
}

impl Judged {
    pub fn live(&self, now: u64) -> bool {
        now < self.expires
    }
}

/// When this observer first saw each claim commit: the clock a claim's
/// lease is judged by (a claim's own times are another machine's word).
#[derive(Debug, Default)]
pub struct Seen {
    first: BTreeMap<String, u64>,
}

impl Seen {
    /// The remote's claims (slug: commit and what it says), judged at
    /// `now` with `limit`; commits no longer on the remote are forgotten.
    pub fn judge(
        &mut self,
        on_remote: BTreeMap<String, (String, Option<Claim>)>,
        now: u64,
        limit: u64,
    ) -> BTreeMap<String, Judged> {
        self.first
            .retain(|sha, _| on_remote.values().any(|(s, _)| s == sha));
        on_remote
            .into_iter()
            .map(|(slug, (sha, claim))| {
                let first = *self.first.entry(sha.clone()).or_insert(now);
                let expires = expiry(claim.as_ref(), first, now, limit);
                (
                    slug,
                    Judged {
                        sha,
                        claim,
                        expires,
                    },
                )
            })
            .collect()
    }
}

/// What a worker does about the next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// Claim this step: nobody has (`expect: None`), or its claim ran out
    /// (`expect`: that claim's commit, which the takeover replaces).
    Claim {
        slug: String,
        expect: Option<String>,
    },
    /// Every ready step is claimed by a live claim, or none is ready.
    Nothing,
}

/// The first of `ready` (slugs, in the spec's order) with no live claim. Pure.
pub fn pick(ready: &[String], claims: &BTreeMap<String, Judged>, now: u64) -> Pick {
    for slug in ready {
        match claims.get(slug) {
            None => {
                return Pick::Claim {
                    slug: slug.clone(),
                    expect: None,
                };
            }
            Some(j) if !j.live(now) => {
                return Pick::Claim {
                    slug: slug.clone(),
                    expect: Some(j.sha.clone()),
                };
            }
            Some(_) => {}
        }
    }
    Pick::Nothing
}

/// What a `ralph merge --follow` that starts does about the merger's claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// Take it: there is none (`expect: None`), or it ran out.
    Take { expect: Option<String> },
    /// Another merger holds it: it reads as a claim renewed no later than
    /// now, or it was renewed while watched.
    Held,
    /// Watch it: a claim stated in the future, or that does not read as
    /// one, is live for a first look whatever its age, so only watching
    /// tells a merger that renews it from a claim pushed once (forged, or
    /// left by a machine whose clock ran ahead) that runs out unrenewed.
    Watch,
}

/// The merger's claim (`judged`, by a `Seen` kept while watching) as a
/// starting merger judges it; `first`: its commit at the first look. Pure.
pub fn merger_slot_now(judged: Option<&Judged>, first: Option<&str>, now: u64) -> Slot {
    let Some(j) = judged else {
        return Slot::Take { expect: None };
    };
    if !j.live(now) {
        return Slot::Take {
            expect: Some(j.sha.clone()),
        };
    }
    let renewed_since = first.is_some_and(|f| f != j.sha);
    let believable = j.claim.as_ref().is_some_and(|c| c.renewed <= now);
    if renewed_since || believable {
        Slot::Held
    } else {
        Slot::Watch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> Claim {
        Claim {
            step: "auth-1a2b3c".into(),
            machine: "laptop".into(),
            run: "r1".into(),
            since: 1000,
            renewed: 1100,
            lease: 60,
        }
    }

    fn commit(message: &str) -> Vec<u8> {
        format!("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor ralph <ralph@localhost> 1 +0000\ncommitter ralph <ralph@localhost> 1 +0000\n\n{message}").into_bytes()
    }

    #[test]
    fn a_claim_reads_back_as_it_was_written() {
        assert_eq!(parse(&commit(&claim().message())), Some(claim()));
    }

    #[test]
    fn what_is_not_a_claim_reads_as_none_row_by_row() {
        let good = claim().message();
        let rows: Vec<(&str, String)> = vec![
            ("another title", good.replace("ralph claim", "a claim")),
            ("no lease", good.replace("lease: 60\n", "")),
            (
                "a lease not a number",
                good.replace("lease: 60", "lease: soon"),
            ),
            (
                "a negative time",
                good.replace("renewed: 1100", "renewed: -5"),
            ),
            ("too long", format!("{good}{}", "x".repeat(CAP))),
            ("no message", String::new()),
        ];
        for (why, message) in rows {
            let bytes = if message.is_empty() {
                b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n".to_vec()
            } else {
                commit(&message)
            };
            assert_eq!(parse(&bytes), None, "{why}");
        }
    }

    #[test]
    fn fields_are_one_printable_capped_line_and_the_first_said_wins() {
        let c = Claim {
            machine: "evil\nlease: 999999999\u{1b}[2J".into(),
            run: "r".repeat(500),
            ..claim()
        };
        let back = parse(&commit(&c.message())).unwrap();
        assert_eq!(back.lease, 60, "a field cannot add a line");
        assert!(!back.machine.contains('\n') && !back.machine.contains('\u{1b}'));
        assert_eq!(back.run.chars().count(), FIELD_CAP);
        let twice = claim()
            .message()
            .replace("lease: 60\n", "lease: 60\nlease: 99999\n");
        assert_eq!(parse(&commit(&twice)).unwrap().lease, 60);
    }

    #[test]
    fn a_claim_runs_out_by_the_observers_clock_row_by_row() {
        let limit = 60;
        let c = |renewed: u64, lease: u64| Claim {
            renewed,
            lease,
            ..claim()
        };
        // (why, claim, first seen here, now, expiry)
        let rows: Vec<(&str, Option<Claim>, u64, u64, u64)> = vec![
            ("as it says", Some(c(1000, 30)), 1005, 1010, 1030),
            (
                "a lease longer than the limit is cut to it",
                Some(c(1000, 9_999_999)),
                1000,
                1010,
                1060,
            ),
            (
                "a renewal in the future is read as now, and bounded by when it was seen",
                Some(c(u64::MAX, u64::MAX)),
                1000,
                1010,
                1060,
            ),
            (
                "an old claim first seen late ends by its own word",
                Some(c(500, 60)),
                1000,
                1000,
                560,
            ),
            (
                "clocks apart: no longer than the limit after it was seen",
                Some(c(5000, 60)),
                1000,
                1000,
                1060,
            ),
            (
                "unreadable: the limit after it was seen",
                None,
                1000,
                1200,
                1060,
            ),
        ];
        for (why, claim, first, now, want) in rows {
            assert_eq!(expiry(claim.as_ref(), first, now, limit), want, "{why}");
        }
    }

    #[test]
    fn a_forged_far_future_claim_runs_out_within_the_limit_of_being_seen() {
        let forged = Claim {
            renewed: u64::MAX / 2,
            lease: u64::MAX / 2,
            ..claim()
        };
        let mut seen = Seen::default();
        let remote = |sha: &str| {
            BTreeMap::from([("s".to_string(), (sha.to_string(), Some(forged.clone())))])
        };
        let j = seen.judge(remote("f1"), 100, 30);
        assert!(j["s"].live(129));
        // Seen again later: still judged from when it was first seen.
        let j = seen.judge(remote("f1"), 125, 30);
        assert!(!j["s"].live(130), "{j:?}");
        // A new commit (a renewal) is a new sighting.
        let j = seen.judge(remote("f2"), 130, 30);
        assert_eq!(j["s"].expires, 160);
        // Gone from the remote: forgotten.
        seen.judge(BTreeMap::new(), 131, 30);
        assert!(seen.first.is_empty());
    }

    #[test]
    fn a_starting_merger_watches_a_claim_it_cannot_judge_at_a_look_row_by_row() {
        let limit = 60;
        let stated = |renewed: u64| Some(Claim { renewed, ..claim() });
        // (why, claim's commit, what it says, first seen, now, what the
        // merger does; its first look saw commit "a")
        type Row = (&'static str, &'static str, Option<Claim>, u64, u64, Slot);
        let rows: Vec<Row> = vec![
            (
                "a merger's claim renewed just now",
                "a",
                stated(1000),
                1000,
                1000,
                Slot::Held,
            ),
            (
                "stated far in the future, first look",
                "a",
                stated(u64::MAX / 2),
                1000,
                1000,
                Slot::Watch,
            ),
            (
                "stated far in the future, not renewed for the limit",
                "a",
                stated(u64::MAX / 2),
                1000,
                1060,
                Slot::Take {
                    expect: Some("a".into()),
                },
            ),
            ("unreadable, first look", "a", None, 1000, 1000, Slot::Watch),
            (
                "stated far in the future and renewed while watched",
                "b",
                stated(u64::MAX / 2),
                1020,
                1030,
                Slot::Held,
            ),
            (
                "ran out by its own word",
                "a",
                stated(500),
                1000,
                1000,
                Slot::Take {
                    expect: Some("a".into()),
                },
            ),
        ];
        for (why, sha, said, first_seen, now, want) in rows {
            let mut seen = Seen::default();
            seen.first.insert(sha.to_string(), first_seen);
            let on_remote = BTreeMap::from([("m".to_string(), (sha.to_string(), said))]);
            let judged = seen.judge(on_remote, now, limit);
            assert_eq!(
                merger_slot_now(judged.get("m"), Some("a"), now),
                want,
                "{why}"
            );
        }
        assert_eq!(
            merger_slot_now(None, None, 1000),
            Slot::Take { expect: None }
        );
    }

    #[test]
    fn a_worker_picks_the_first_ready_step_without_a_live_claim() {
        let ready: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let judged = |sha: &str, expires: u64| Judged {
            sha: sha.into(),
            claim: None,
            expires,
        };
        let mut claims = BTreeMap::new();
        assert_eq!(
            pick(&ready, &claims, 10),
            Pick::Claim {
                slug: "a".into(),
                expect: None
            }
        );
        claims.insert("a".to_string(), judged("x", 20));
        assert_eq!(
            pick(&ready, &claims, 10),
            Pick::Claim {
                slug: "b".into(),
                expect: None
            }
        );
        claims.insert("b".to_string(), judged("y", 5));
        assert_eq!(
            pick(&ready, &claims, 10),
            Pick::Claim {
                slug: "b".into(),
                expect: Some("y".into())
            },
            "an expired claim is taken over"
        );
        claims.insert("b".to_string(), judged("y", 20));
        claims.insert("c".to_string(), judged("z", 20));
        assert_eq!(pick(&ready, &claims, 10), Pick::Nothing);
        assert_eq!(pick(&[], &BTreeMap::new(), 10), Pick::Nothing);
    }
}
