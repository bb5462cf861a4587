//! Expectations as data (issue 33 items 5 and 9): a hand-written file of
//! what a recorded ledger must project to, checked against what it does
//! project to. The file is TOML: per group the verdict status, passed over
//! N, each verdict row's holds or fails (optionally a text its evidence must
//! contain, such as the rule), each case's status and reward and the
//! settlement series in micro-USD; the records refused or refuted at given
//! seqs; the lineage's stop. Only what the file says is compared, and every
//! difference is reported as `expected ... / got ...`.
//!
//! `benchledger expect LEDGER EXPECT.toml` runs this on a ledger or an
//! export; a Rust test can call it on a recorded export:
//!
//! ```
//! use benchledger::expect;
//! let dir = tempfile::tempdir().unwrap();
//! let export = concat!(env!("CARGO_MANIFEST_DIR"), "/replay-tests/ledgers/short13-accepted.jsonl");
//! let ledger = benchledger::log::export::import_file(
//!     std::path::Path::new(export),
//!     &dir.path().join("l"),
//!     std::time::Duration::from_secs(5),
//! )
//! .unwrap();
//! let file = r#"
//!     [groups.control]
//!     status = "accepted"
//!     passed = "10/13"
//!     rows = { requests = "holds", settlement = "holds" }
//!     cases = { "fix-git/t1" = { status = "terminal_valid", reward = "1" } }
//! "#;
//! let want = expect::parse(file, "inline").unwrap();
//! let got = expect::observe(&ledger).unwrap();
//! assert!(expect::check(&got, &want).unwrap().is_empty());
//! // A wrong expectation is a readable difference.
//! let wrong = expect::parse("[groups.control]\npassed = \"13/13\"\n", "inline").unwrap();
//! let diff = expect::check(&got, &wrong).unwrap();
//! assert_eq!(diff[0].to_string(), "control passed: expected 13/13 / got 10/13");
//! ```

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::ledger::Ledger;
use crate::method::projections::{At, LineageState, State};
use crate::method::verdict::{group_verdict, Verdict};
use crate::schema::events::Event;

/// What a ledger must project to.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// The lineage (default: the ledger's only one).
    #[serde(default)]
    pub lineage: Option<String>,
    /// Per group, by name.
    #[serde(default)]
    pub groups: BTreeMap<String, GroupExpect>,
    /// Records a rule refused or refuted, at their seqs (BIND-6, BIND-7,
    /// BIND-12): every one listed, and no other.
    #[serde(default)]
    pub refusals: Option<Vec<RefusalExpect>>,
    /// The lineage's hard stop; `false` for none.
    #[serde(default)]
    pub stopped: Option<StopExpect>,
}

/// One group's expected verdict.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupExpect {
    /// Its status now (`accepted`, `rejected_join`, `not_opened`, ...).
    #[serde(default)]
    pub status: Option<String>,
    /// Passed over N, `P/N`.
    #[serde(default)]
    pub passed: Option<String>,
    /// Verdict rows by name: `holds`, `fails`, or `fails: TEXT` (its
    /// evidence contains TEXT, e.g. the rule).
    #[serde(default)]
    pub rows: BTreeMap<String, String>,
    /// Cases by `TASK/TRIAL` (a replacement `TASK/TRIAL/rN`).
    #[serde(default)]
    pub cases: BTreeMap<String, CaseExpect>,
    /// Settlement series in micro-USD by name (`actual`, `notional`, ...);
    /// 0 for a series that must be absent.
    #[serde(default)]
    pub settlement_micro_usd: BTreeMap<String, u64>,
}

/// One case's expected state.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseExpect {
    /// `terminal_valid`, `terminal_invalid`, `started`, `skipped`, ...
    pub status: String,
    /// Its reward, as recorded, where it must have one.
    #[serde(default)]
    pub reward: Option<String>,
}

/// A record refused or refuted by a rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusalExpect {
    /// Its seq; without one, only the rule is compared (in log order).
    #[serde(default)]
    pub seq: Option<u64>,
    pub rule: String,
}

/// The lineage's stop: none, or at a seq by a rule.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum StopExpect {
    /// `stopped = false`: it must not have stopped; `stopped = true`: it
    /// must have, by any rule at any seq.
    Flag(bool),
    /// `stopped = { seq = N, rule = "..." }`.
    At(RefusalExpect),
}

/// One difference between the file and the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What was compared (`control row settlement`).
    pub at: String,
    /// What the file says.
    pub expected: String,
    /// What the ledger projects to.
    pub got: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: expected {} / got {}",
            self.at, self.expected, self.got
        )
    }
}

/// Reads an expectation file's text (`source` names it in errors).
pub fn parse(text: &str, source: &str) -> Result<Expectation> {
    let e: Expectation =
        toml::from_str(text).map_err(|e| Error::input(format!("{source}: {e}")))?;
    for (group, g) in &e.groups {
        for (row, want) in &g.rows {
            if RowExpect::parse(want).is_none() {
                return Err(Error::input(format!(
                    "{source}: groups.{group}.rows.{row}: {want:?} is not `holds`, `fails` or `fails: TEXT`"
                )));
            }
        }
    }
    Ok(e)
}

/// A row's expectation.
enum RowExpect<'a> {
    Holds,
    Fails(Option<&'a str>),
}

impl<'a> RowExpect<'a> {
    fn parse(text: &'a str) -> Option<RowExpect<'a>> {
        match text.trim() {
            "holds" => Some(RowExpect::Holds),
            "fails" => Some(RowExpect::Fails(None)),
            other => other
                .strip_prefix("fails:")
                .map(|t| RowExpect::Fails(Some(t.trim()))),
        }
    }
}

/// What a ledger projects to, with the records a rule refused or refuted
/// on the way (the state keeps only each gate's latest observation).
#[derive(Debug, Clone)]
pub struct Observed {
    /// The folded state.
    pub state: State,
    /// `(seq, rule)` of every refused or refuted record, in log order.
    pub refusals: Vec<(u64, String)>,
}

/// Folds a verified ledger, noting each record a rule refused (BIND-12)
/// or refuted when folded (BIND-6, BIND-7).
pub fn observe(ledger: &Ledger) -> Result<Observed> {
    let mut state = State::scanning();
    let mut refusals = Vec::new();
    for v in ledger.records()? {
        let v = v?;
        let (seq, event) = (v.decoded.record.seq, &v.decoded.event);
        if let Some(rule) = refusal_of(&state, event) {
            refusals.push((seq, rule));
        }
        state.apply(
            At {
                seq,
                utc_ns: v.decoded.record.recorded_at_utc_ns,
            },
            event,
        );
    }
    Ok(Observed { state, refusals })
}

/// The rule `event` is refused or refuted by, judged as the fold will.
fn refusal_of(state: &State, event: &Event) -> Option<String> {
    let lineage = match event {
        Event::EvidenceRefused(e) => return Some(e.rule.clone()),
        Event::IdentityChecked(e) => &e.lineage,
        Event::QuotaChecked(e) => &e.lineage,
        Event::CheckRecorded(e) => &e.lineage,
        _ => return None,
    };
    let l = state.lineages.get(lineage)?;
    crate::method::observations::refute(l, event).map(|r| r.rule.as_str().to_string())
}

/// Every difference between `want` and what `got` projects to; an error
/// when the file names no lineage and the ledger holds several, or names
/// one it does not hold.
pub fn check(got: &Observed, want: &Expectation) -> Result<Vec<Mismatch>> {
    let l = got.state.lineage(want.lineage.as_deref())?;
    let mut out = Vec::new();
    for (group, g) in &want.groups {
        let v = group_verdict(&got.state, l, group);
        check_group(group, g, &v, &mut out);
    }
    if let Some(expected) = &want.refusals {
        // Each seen refusal as the file words it: with its seq where the
        // file gives the one at that place a seq.
        let seen: Vec<RefusalExpect> = got
            .refusals
            .iter()
            .enumerate()
            .map(|(i, (seq, rule))| RefusalExpect {
                seq: match expected.get(i) {
                    Some(e) => e.seq.map(|_| *seq),
                    None => Some(*seq),
                },
                rule: rule.clone(),
            })
            .collect();
        if *expected != seen {
            out.push(Mismatch {
                at: "refusals".into(),
                expected: refusal_list(expected),
                got: refusal_list(&seen),
            });
        }
    }
    if let Some(stop) = &want.stopped {
        check_stop(l, stop, &mut out);
    }
    Ok(out)
}

fn refusal_list(list: &[RefusalExpect]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(|r| match r.seq {
            Some(seq) => format!("{} at seq {seq}", r.rule),
            None => r.rule.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_stop(l: &LineageState, want: &StopExpect, out: &mut Vec<Mismatch>) {
    let got = l.stopped.as_ref().map(|(at, s)| (at.seq, s.rule.as_str()));
    let shown = |seq: Option<u64>, rule: &str| match seq {
        Some(seq) => format!("stopped at seq {seq} by {rule}"),
        None => format!("stopped by {rule}"),
    };
    let got_text = got.map_or("not stopped".to_string(), |(seq, rule)| {
        shown(Some(seq), rule)
    });
    let (agrees, expected) = match want {
        StopExpect::Flag(false) => (got.is_none(), "not stopped".to_string()),
        StopExpect::Flag(true) => (got.is_some(), "stopped".to_string()),
        StopExpect::At(r) => (
            got.is_some_and(|(seq, rule)| rule == r.rule && r.seq.is_none_or(|s| s == seq)),
            shown(r.seq, &r.rule),
        ),
    };
    if !agrees {
        out.push(Mismatch {
            at: "stopped".into(),
            expected,
            got: got_text,
        });
    }
}

fn differs(out: &mut Vec<Mismatch>, at: String, expected: &str, got: &str) {
    if expected != got {
        out.push(Mismatch {
            at,
            expected: expected.to_string(),
            got: got.to_string(),
        });
    }
}

fn check_group(group: &str, want: &GroupExpect, v: &Verdict, out: &mut Vec<Mismatch>) {
    if let Some(status) = &want.status {
        differs(out, format!("{group} status"), status, v.status.as_str());
    }
    if let Some(passed) = &want.passed {
        let got = format!("{}/{}", v.passed, v.total);
        differs(out, format!("{group} passed"), passed, &got);
    }
    for (row, text) in &want.rows {
        let at = format!("{group} row {row}");
        let Some(got) = v.rows.iter().find(|r| r.gate == *row) else {
            differs(out, at, text, "no such row");
            continue;
        };
        let shown = if got.holds { "holds" } else { "fails" };
        match RowExpect::parse(text) {
            Some(RowExpect::Holds) => differs(out, at, "holds", shown),
            Some(RowExpect::Fails(needle)) => {
                let named = needle.is_none_or(|n| got.evidence.contains(n));
                if got.holds || !named {
                    differs(out, at, text, &format!("{shown}: {}", got.evidence));
                }
            }
            None => differs(out, at, text, "an expectation this file cannot hold"),
        }
    }
    check_cases(group, want, v, out);
    for (series, amount) in &want.settlement_micro_usd {
        let got = v
            .settlement
            .series_micro_usd
            .iter()
            .find(|(s, _)| s.as_str() == series)
            .map_or(0, |(_, a)| *a);
        let at = format!("{group} settlement {series} micro-USD");
        differs(out, at, &amount.to_string(), &got.to_string());
    }
}

fn check_cases(group: &str, want: &GroupExpect, v: &Verdict, out: &mut Vec<Mismatch>) {
    for (case, c) in &want.cases {
        let at = format!("{group} case {case}");
        let Some(line) = v.cases.iter().find(|l| case_label(&l.case) == *case) else {
            differs(out, at, &c.status, "no such case");
            continue;
        };
        differs(out, format!("{at} status"), &c.status, line.status.as_str());
        if let Some(reward) = &c.reward {
            let got = line.reward.as_deref().unwrap_or("none");
            differs(out, format!("{at} reward"), reward, got);
        }
    }
}

/// `TASK/TRIAL`, or `TASK/TRIAL/rN` for a replacement.
fn case_label(c: &crate::schema::events::CaseRef) -> String {
    if c.replacement == 0 {
        format!("{}/{}", c.task, c.trial)
    } else {
        format!("{}/{}/r{}", c.task, c.trial, c.replacement)
    }
}

#[cfg(test)]
#[path = "expect_tests.rs"]
mod tests;
