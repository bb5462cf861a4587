//! TRUST-7 for `verify --against`, `verify --tiles` and `checkpoint
//! verify`: the auditor's state file (where it is, its lock, its bounded
//! read and atomic write) and, for each checkpoint a verb accepted, the
//! facts `method::auditor` judges: the remembered checkpoint and a
//! consistency proof from it computed from the tree being verified (the
//! ledger's, or a tiles log's hash tiles). The decision is
//! `method::auditor::judge`; this gathers and prints.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::Error;
use crate::limits::{AUDITOR_STATE_BYTES_MAX, LOCK_POLL_MS};
use crate::log::tlog::{prove_consistency, Checkpoint, Hash, NodeSource};
use crate::method::auditor::{judge, proof_needed, AuditorState, Judgement, Remembered};

/// The environment variable that names the state file when `--state`
/// does not.
pub(crate) const STATE_ENV: &str = "BENCHLEDGER_AUDITOR_STATE";
/// The state file's name in the configuration directory.
const STATE_FILE_NAME: &str = "auditor-state.json";
/// The staging tag of a state file being written.
const PARTIAL_TAG: &str = "partial";

/// The state file: `given` (`--state`, or `BENCHLEDGER_AUDITOR_STATE`
/// through clap), else `$XDG_CONFIG_HOME/benchledger/auditor-state.json`,
/// else `$HOME/.config/benchledger/auditor-state.json` (the XDG base
/// directory convention; a relative `XDG_CONFIG_HOME` is ignored, as the
/// convention says).
pub(crate) fn state_path(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .and_then(absolute)
        .or_else(|| std::env::var_os("HOME").and_then(absolute).map(|h| h.join(".config")))
        .ok_or_else(|| {
            crate::cli::common::BadUsage(format!(
                "no configuration directory for the auditor state (TRUST-7): neither XDG_CONFIG_HOME nor HOME is an absolute path; name a file with --state or {STATE_ENV}"
            ))
        })?;
    Ok(config.join("benchledger").join(STATE_FILE_NAME))
}

/// The auditor's memory, read under its lock; the lock is held until it
/// is dropped, so two verbs never interleave a read and a write.
pub(crate) struct Memory {
    path: PathBuf,
    state: AuditorState,
    _lock: File,
}

impl Memory {
    /// Takes the state file's lock (waiting up to `wait`) and reads it: a
    /// missing file remembers nothing; a file that cannot be read or does
    /// not parse fails naming it, and is never reset.
    pub(crate) fn open(given: Option<&Path>, wait: Duration) -> anyhow::Result<Memory> {
        let path = state_path(given)?;
        let dir = parent_of(&path);
        std::fs::DirBuilder::new()
            .recursive(true)
            .create(dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        let lock = lock(&path, wait)?;
        let state = read_state(&path)?;
        Ok(Memory {
            path,
            state,
            _lock: lock,
        })
    }

    /// The state file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Judges a checkpoint this verb accepted (its signature verified, and
    /// `nodes`, the ledger's tree or the tiles', holds its root at its
    /// size) against the one remembered for its origin. A proof that cannot
    /// be read from `nodes` (a tile no longer served) does not hold.
    pub(crate) fn judge<S: NodeSource + ?Sized>(
        &self,
        nodes: &S,
        checkpoint: &Checkpoint,
        note: &str,
    ) -> anyhow::Result<Judged> {
        let remembered = self.state.get(checkpoint.origin());
        let proof = match proof_needed(remembered, checkpoint.size()) {
            Some((old, new)) => prove_consistency(nodes, old, new).map_err(|e| match e {
                crate::log::tlog::TlogError::NodeSource(m) => Error::NotHeld(m),
                other => Error::input(other.to_string()),
            })?,
            None => Vec::new(),
        };
        let judgement = judge(remembered, checkpoint.size(), checkpoint.root(), &proof);
        Ok(Judged {
            origin: checkpoint.origin().to_string(),
            size: checkpoint.size(),
            root: *checkpoint.root(),
            note: note.to_string(),
            remembered: remembered.map(|r| r.size),
            judgement,
            file: self.path.clone(),
        })
    }

    /// Remembers the accepted checkpoints of `judged` that are larger
    /// than what is remembered and writes the file (atomically) when
    /// anything changed; returns whether it did. Call only when the whole
    /// verb succeeded.
    pub(crate) fn commit(mut self, judged: &[&Judged]) -> anyhow::Result<bool> {
        let mut changed = false;
        for j in judged {
            let r = Remembered {
                size: j.size,
                root: j.root,
                note: j.note.clone(),
            };
            changed |= self.state.advance(&j.origin, &j.judgement, r);
        }
        if changed {
            write_state(&self.path, &self.state.encode())?;
        }
        Ok(changed)
    }
}

/// One accepted checkpoint judged against the auditor's memory.
#[derive(Debug, Clone)]
pub(crate) struct Judged {
    origin: String,
    size: u64,
    root: Hash,
    note: String,
    /// The size remembered before (`None`: nothing for this origin).
    remembered: Option<u64>,
    pub(crate) judgement: Judgement,
    file: PathBuf,
}

impl Judged {
    /// Why it is refused, citing TRUST-7 and naming the file (`None`
    /// when accepted).
    pub(crate) fn refusal(&self) -> Option<String> {
        let why = self
            .judgement
            .refusal(&self.origin, self.size, &self.root)?;
        Some(format!(
            "{why}; refused, and {} is unchanged (nothing is reset; its signed note is the earlier checkpoint)",
            self.file.display()
        ))
    }

    /// The JSON `auditor` object.
    pub(crate) fn json(&self) -> Value {
        json!({
            "state_file": self.file.display().to_string(),
            "judgement": self.judgement.name(),
            "remembered_size": self.remembered,
            "tree_size": self.size,
            "refusal": self.refusal(),
        })
    }

    /// One line of text.
    pub(crate) fn line(&self) -> String {
        let file = self.file.display();
        match &self.judgement {
            Judgement::First => format!(
                "auditor (TRUST-7): nothing remembered for {:?} in {file}: size {} is the first checkpoint accepted",
                self.origin, self.size
            ),
            Judgement::Same => format!(
                "auditor (TRUST-7): the checkpoint remembered for {:?} in {file} (size {})",
                self.origin, self.size
            ),
            Judgement::Extends { from } => format!(
                "auditor (TRUST-7): extends the size-{from} checkpoint remembered for {:?} in {file} (consistency proof verified)",
                self.origin
            ),
            Judgement::Rollback { .. } | Judgement::Fork { .. } => {
                self.refusal().unwrap_or_default()
            }
        }
    }
}

/// The line that says whether the memory moved.
pub(crate) fn committed_line(path: &Path, written: bool) -> String {
    if written {
        format!(
            "auditor (TRUST-7): {} remembers the largest checkpoint accepted",
            path.display()
        )
    } else {
        format!("auditor (TRUST-7): {} unchanged", path.display())
    }
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The lock beside the state file (`FILE.lock`; the state file itself is
/// replaced by a rename, so it cannot carry the lock).
fn lock(path: &Path, wait: Duration) -> anyhow::Result<File> {
    let mut name = path.as_os_str().to_os_string();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(format!("open {}", lock_path.display()), e))?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("lock {}", lock_path.display()), e).into())
            }
        }
        let waited = start.elapsed();
        if waited >= wait {
            let busy = std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!(
                    "another verify holds it; waited {} ms (raise --lock-timeout to wait longer)",
                    waited.as_millis()
                ),
            );
            return Err(Error::io(format!("lock {}", lock_path.display()), busy).into());
        }
        std::thread::sleep(Duration::from_millis(LOCK_POLL_MS).min(wait - waited));
    }
}

/// Reads the state file within `AUDITOR_STATE_BYTES_MAX`; a missing file
/// remembers nothing.
fn read_state(path: &Path) -> anyhow::Result<AuditorState> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AuditorState::default()),
        _ => {}
    }
    let bytes = crate::error::read_regular(path, AUDITOR_STATE_BYTES_MAX)?;
    let corrupt = |why: String| {
        Error::input(format!(
            "{}: the auditor state (TRUST-7) cannot be used: {why}; it is never reset: restore it, or name another file with --state",
            path.display()
        ))
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| corrupt(format!("not UTF-8: {e}")))?;
    Ok(AuditorState::parse(text).map_err(corrupt)?)
}

/// Writes the state file atomically: a temporary file beside it, synced,
/// renamed over it, and the directory synced.
fn write_state(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    crate::log::staging::remove_stale(path, PARTIAL_TAG);
    let tmp = crate::log::staging::temp_beside(path, PARTIAL_TAG)?;
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        File::open(parent_of(path))?.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(format!("write {}", path.display()), e).into());
    }
    Ok(())
}
