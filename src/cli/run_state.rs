//! What one `run` process keeps in memory: the ledger folded once and then
//! only what was appended since (RUN-7), and its lease on the group with
//! the fencing of its appends (RUN-2).
//!
//! The fold is a catch-up subscription: the head witness's bytes change
//! with every acknowledged append, so while nothing changed `run` opens
//! nothing; when they changed it opens the ledger (the writer lock, held
//! only for the read), checks that the record it folded last is still the
//! one there, and folds the records after it through the verified walk.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::proc::{self, Liveness};
use crate::cli::Cli;
use crate::error::Error;
use crate::limits::{RUN_LEASE_RENEW_SEC, RUN_LEASE_SEC};
use crate::log::chain::Hash;
use crate::log::ledger::Ledger;
use crate::method::projections::{At, State};

use crate::method::run_plan::RunHistory;
use crate::schema::events::{Event, GroupRef};
use crate::schema::time::now_utc_ns;

/// The replayed state and the group's history, as of `head`.
#[derive(Default)]
pub(crate) struct Fold {
    /// The replayed state (no secret scan: what deciding needs).
    pub(crate) state: State,
    /// The group's run history (evidence after close, receipt polls).
    pub(crate) history: RunHistory,
    /// The last record folded: seq and hash.
    head: Option<(u64, Hash)>,
    /// The head witness's bytes when the fold caught up.
    stamp: Option<Vec<u8>>,
    /// Records folded since the process started (progress, benchmarks).
    pub(crate) folded: u64,
}

impl Fold {
    /// Folds the whole verified log once: the state and the history in one
    /// walk.
    pub(crate) fn new(dir: &Path, wait: Duration, group: Option<GroupRef>) -> anyhow::Result<Fold> {
        let mut fold = Fold {
            history: group.map(RunHistory::new).unwrap_or_default(),
            ..Fold::default()
        };
        fold.catch_up(dir, wait)?;
        Ok(fold)
    }

    /// The history of `group`, folded from genesis (once the group is
    /// known: the fold starts before the lineage is).
    pub(crate) fn set_group(
        &mut self,
        dir: &Path,
        wait: Duration,
        group: GroupRef,
    ) -> anyhow::Result<()> {
        if self.history.group.as_ref() == Some(&group) {
            return Ok(());
        }
        *self = Fold::new(dir, wait, Some(group))?;
        Ok(())
    }

    /// Folds what was appended since the last catch-up; whether anything
    /// was. Opens nothing while the head witness is unchanged.
    pub(crate) fn catch_up(&mut self, dir: &Path, wait: Duration) -> anyhow::Result<bool> {
        let stamp = Ledger::head_stamp(dir);
        if stamp.is_some() && stamp == self.stamp {
            return Ok(false);
        }
        let ledger = crate::cli::common::open_reading(dir, wait)?;
        let from = self.head.map_or(0, |(seq, _)| seq + 1);
        if let Some((seq, hash)) = self.head {
            // The record folded last must still be the one in the log.
            let there = ledger.read(seq)?;
            if there.hash != hash {
                return Err(Error::Damage(format!(
                    "seq {seq}: the record `run` folded is no longer the one in the log: run verify"
                ))
                .into());
            }
        }
        let head = ledger.head()?;
        let mut any = false;
        if head.seq >= from {
            for rec in ledger.records_from(from)? {
                let rec = rec?;
                let r = &rec.decoded.record;
                let at = At {
                    seq: r.seq,
                    utc_ns: r.recorded_at_utc_ns,
                };
                self.state.apply(at, &rec.decoded.event);
                self.history.apply(r.seq, &rec.decoded.event);
                self.head = Some((r.seq, rec.hash));
                self.folded += 1;
                any = true;
            }
        }
        drop(ledger);
        self.stamp = stamp;
        Ok(any)
    }
}

/// This `run` process's lease on its group (RUN-2).
pub(crate) struct Lease {
    group: GroupRef,
    /// The lineage label as the operator named it.
    lineage: Option<String>,
    /// This driver's random id.
    pub(crate) holder: String,
    /// When it was last renewed.
    renewed: Instant,
    /// Set once this process learnt that its lease was taken over.
    lost: Arc<Mutex<Option<String>>>,
}

impl Lease {
    /// Takes the group's lease (refused while another live driver holds
    /// it), then fences every later open of the ledger by this process: an
    /// append after a takeover is refused.
    pub(crate) fn take(
        cli: &Cli,
        wait: Duration,
        lineage: Option<&str>,
        group: GroupRef,
    ) -> anyhow::Result<Lease> {
        let mut holder = [0u8; 16];
        getrandom::fill(&mut holder)
            .map_err(|e| Error::input(format!("no randomness for the lease holder id: {e}")))?;
        let lease = Lease {
            group,
            lineage: lineage.map(str::to_string),
            holder: hex::encode(holder),
            renewed: Instant::now(),
            lost: Arc::new(Mutex::new(None)),
        };
        let seq = lease.append(cli, wait, RUN_LEASE_SEC)?;
        lease.fence(seq);
        Ok(lease)
    }

    /// Renews the lease once a third of it has passed.
    pub(crate) fn renew_if_due(&mut self, cli: &Cli, wait: Duration) -> anyhow::Result<()> {
        if self.renewed.elapsed() < Duration::from_secs(RUN_LEASE_RENEW_SEC) {
            return Ok(());
        }
        self.append(cli, wait, RUN_LEASE_SEC)?;
        self.renewed = Instant::now();
        Ok(())
    }

    /// Renews the lease to outlast a step that may block for `secs` on
    /// frozen command deadlines (`run_plan::lease_cover_sec`; RUN-2, RUN-4).
    pub(crate) fn cover(&mut self, cli: &Cli, wait: Duration, secs: u64) -> anyhow::Result<()> {
        if secs == 0 {
            return self.renew_if_due(cli, wait);
        }
        self.append(cli, wait, RUN_LEASE_SEC.saturating_add(secs))?;
        self.renewed = Instant::now();
        Ok(())
    }

    /// Releases the lease (an expiry of now) and ends the fencing; a lease
    /// already taken over is left as it is.
    pub(crate) fn release(self, cli: &Cli, wait: Duration) {
        Ledger::set_fence(None);
        let lost = self.lost.lock().map(|l| l.is_some()).unwrap_or(true);
        if !lost {
            // Best effort: an expired lease ends on its own.
            let _ = self.append(cli, wait, 0);
        }
    }

    /// Decides and appends this driver's lease lasting `secs` (0 releases
    /// it), under the writer lock; its seq.
    fn append(&self, cli: &Cli, wait: Duration, secs: u64) -> anyhow::Result<u64> {
        let ledger = Ledger::open(&cli.ledger, wait)?;
        let done =
            crate::cli::common::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |state| {
                let current = state
                    .lineage(self.lineage.as_deref())
                    .ok()
                    .and_then(|l| l.groups.get(&self.group.group))
                    .and_then(|g| g.lease.as_ref())
                    .map(|(_, lease)| lease.process.clone());
                let holder_gone = current.is_some_and(|p| proc::liveness(&p) == Liveness::Gone);
                crate::method::decide::run_lease(
                    state,
                    crate::method::decide::LeaseRequest {
                        lineage: self.lineage.as_deref(),
                        group: &self.group.group,
                        holder: &self.holder,
                        process: proc::this_process(),
                        now_utc_ns: now_utc_ns(),
                        lasts_ns: secs.saturating_mul(1_000_000_000),
                        holder_gone,
                    },
                )
            })?;
        Ok(done[0].seq)
    }

    /// Every later `Ledger::open` of this process checks the records
    /// appended after `taken_at` (this lease's own record), and since the
    /// last check, for a takeover of this lease.
    fn fence(&self, taken_at: u64) {
        let group = self.group.clone();
        let holder = self.holder.clone();
        let lost = Arc::clone(&self.lost);
        let checked = Mutex::new(Some(taken_at));
        Ledger::set_fence(Some(Box::new(move |ledger: &Ledger| {
            let head = ledger.head()?;
            let mut checked = checked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let from = checked.map_or(0, |c| c + 1);
            if head.seq >= from {
                for rec in ledger.records_from(from)? {
                    let rec = rec?;
                    let event: &Event = &rec.decoded.event;
                    if let Some(by) = crate::method::decide::fenced_by(event, &group, &holder) {
                        let seq = rec.decoded.record.seq;
                        if let Ok(mut l) = lost.lock() {
                            *l = Some(by.to_string());
                        }
                        return Err(crate::method::decide::fenced(&group, &holder, by, seq));
                    }
                }
            }
            *checked = Some(head.seq);
            Ok(())
        })));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::ledger::Draft;
    use crate::schema::events::OperatorNoted;

    fn note(ledger: &Ledger, text: &str) {
        ledger
            .append(
                &[Draft {
                    actor: "t".into(),
                    event: Event::OperatorNoted(OperatorNoted {
                        lineage: None,
                        text: text.into(),
                    }),
                    idempotency_key: None,
                }],
                now_utc_ns(),
            )
            .unwrap();
    }

    #[test]
    fn the_fold_opens_nothing_while_the_head_is_unchanged_and_then_folds_only_what_is_new() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let ledger = Ledger::create(&path, Duration::from_secs(5), [7; 16], "t", now_utc_ns())
            .unwrap()
            .0;
        note(&ledger, "one");
        drop(ledger);
        let mut fold = Fold::new(&path, Duration::from_secs(5), None).unwrap();
        assert_eq!(fold.folded, 2);
        // Another process holds the writer lock: a catch-up with nothing new
        // returns at once without taking it (RUN-7).
        let holder = Ledger::open(&path, Duration::from_secs(5)).unwrap();
        let t0 = Instant::now();
        assert!(
            !fold.catch_up(&path, Duration::from_millis(0)).unwrap(),
            "RUN-7"
        );
        assert!(t0.elapsed() < Duration::from_secs(1));
        note(&holder, "two");
        note(&holder, "three");
        drop(holder);
        // Only the two new records are folded.
        assert!(fold.catch_up(&path, Duration::from_secs(5)).unwrap());
        assert_eq!(fold.folded, 4, "RUN-7: the fold reads only what is new");
        assert_eq!(fold.state.head_seq, Some(3));
        assert!(!fold.catch_up(&path, Duration::from_secs(5)).unwrap());
    }
}
