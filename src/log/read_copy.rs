//! Reading a ledger its reader cannot write: an auditor's read-only mount,
//! an archive owned by someone else. sled 0.34.7 opens read-write only (it
//! takes a file lock, runs its recovery and writes a snapshot), so a read
//! verb on such a directory opens a private snapshot copy of it instead:
//! every file of the ledger directory copied, under the writer lock when
//! the lock file can be opened for reading (so no append is half-copied),
//! into a unique owner-only directory of the caller's scratch directory
//! (`.benchledger.read-copy-{pid}-{random}`), bounded by
//! `READ_COPY_BYTES_MAX` and by the free space there. The copy is removed
//! when the ledger is dropped, by the CLI on Ctrl-C, and by the next read
//! copy once its process is gone (`log::staging`). Reading the copy gives
//! exactly what reading the directory would: the same bytes, the same
//! recovery.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::limits::{LOCK_POLL_MS, READ_COPY_BYTES_MAX, READ_COPY_DEPTH_MAX};

/// The name the copies are made beside (in the scratch directory).
const COPY_TARGET: &str = "benchledger";
/// The staging tag of a copy.
const COPY_TAG: &str = "read-copy";

/// Why `dir` (a ledger directory) cannot be written by this process, if it
/// cannot: the first of its store's paths the kernel says this process may
/// not write (a read-only file system, no write permission). `None` when
/// every one is writable (or absent).
pub fn not_writable(dir: &Path, store_paths: &[&str]) -> Option<(PathBuf, std::io::Error)> {
    use rustix::fs::{access, Access};
    std::iter::once(dir.to_path_buf())
        .chain(store_paths.iter().map(|p| dir.join(p)))
        .filter(|p| p == dir || p.exists())
        .find_map(|p| match access(&p, Access::WRITE_OK) {
            Ok(()) => None,
            Err(e) => {
                let io = std::io::Error::from(e);
                crate::error::is_environment(&io).then_some((p, io))
            }
        })
}

/// A private copy of a ledger directory, removed on drop.
#[derive(Debug)]
pub struct ReadCopy {
    dir: PathBuf,
}

impl Drop for ReadCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The regular files of `dir` below it (relative paths), with their total
/// size; directories are walked to `READ_COPY_DEPTH_MAX` levels; `skip`
/// names top-level entries left out. Anything else (a symbolic link, a
/// FIFO, a device) is refused: a ledger directory holds none.
fn files_of(dir: &Path, skip: &[&str]) -> Result<(Vec<PathBuf>, u64)> {
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut todo = vec![(PathBuf::new(), 0usize)];
    while let Some((rel, depth)) = todo.pop() {
        let here = dir.join(&rel);
        let entries =
            fs::read_dir(&here).map_err(|e| Error::io(format!("read {}", here.display()), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(format!("read {}", here.display()), e))?;
            let name = rel.join(entry.file_name());
            if depth == 0 && skip.iter().any(|s| entry.file_name() == **s) {
                continue;
            }
            let kind = entry
                .file_type()
                .map_err(|e| Error::io(format!("stat {}", entry.path().display()), e))?;
            if kind.is_dir() && depth >= READ_COPY_DEPTH_MAX {
                return Err(Error::input(format!(
                    "{} lies deeper than {READ_COPY_DEPTH_MAX} levels in the ledger directory; a ledger holds no such directory",
                    entry.path().display()
                )));
            } else if kind.is_dir() {
                todo.push((name, depth + 1));
            } else if kind.is_file() {
                let len = entry
                    .metadata()
                    .map_err(|e| Error::io(format!("stat {}", entry.path().display()), e))?
                    .len();
                total = total.saturating_add(len);
                files.push(name);
            } else {
                return Err(Error::input(format!(
                    "{} is not a regular file or a directory; a ledger directory holds only those",
                    entry.path().display()
                )));
            }
        }
    }
    Ok((files, total))
}

/// The writer lock of `dir`, taken through a descriptor opened for reading
/// (a read-only mount allows it), waiting up to `wait`; `None` when there
/// is no lock file this process can open (then no writer can be running
/// through it either, or the copy cannot be protected: said on stderr).
fn read_lock(dir: &Path, lock_file: &str, wait: Duration) -> Result<Option<File>> {
    let path = dir.join(lock_file);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            tracing::warn!(
                "cannot open {} to take the writer lock ({e}); a writer appending now could leave the copy torn",
                path.display()
            );
            return Ok(None);
        }
    };
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("lock {}", path.display()), e))
            }
        }
        let waited = start.elapsed();
        if waited >= wait {
            return Err(Error::LockTimeout {
                dir: dir.display().to_string(),
                waited_ms: waited.as_millis() as u64,
            });
        }
        std::thread::sleep(Duration::from_millis(LOCK_POLL_MS).min(wait - waited));
    }
}

/// Bytes free to this process in `dir`, when the file system says.
fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

impl ReadCopy {
    /// The copy's directory: a ledger directory like the original.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies the ledger directory `dir` (not writable here: `why`) into a
    /// fresh private directory of `scratch`, under the writer lock (waiting
    /// up to `wait`) and leaving out `lock_file`. Copies a dead process
    /// left in `scratch` are removed first. Refused (exit 4, saying what
    /// to do) past `READ_COPY_BYTES_MAX` or the free space of `scratch`.
    pub fn make(
        dir: &Path,
        scratch: &Path,
        lock_file: &str,
        wait: Duration,
        why: &(PathBuf, std::io::Error),
    ) -> Result<ReadCopy> {
        Self::make_within(dir, scratch, lock_file, wait, why, READ_COPY_BYTES_MAX)
    }

    /// `make` with the size bound `max` (tests).
    fn make_within(
        dir: &Path,
        scratch: &Path,
        lock_file: &str,
        wait: Duration,
        why: &(PathBuf, std::io::Error),
        max: u64,
    ) -> Result<ReadCopy> {
        let target = scratch.join(COPY_TARGET);
        crate::log::staging::remove_stale(&target, COPY_TAG);
        let _lock = read_lock(dir, lock_file, wait)?;
        let (files, total) = files_of(dir, &[lock_file])?;
        let cannot = |what: String, source: std::io::Error| {
            Error::io(
                format!(
                    "ledger {} cannot be written here ({}: {}), so a read verb reads a private copy of it in {}; {what}; run the verb on a writable copy of the ledger, or set TMPDIR to a directory with room",
                    dir.display(),
                    why.0.display(),
                    why.1,
                    scratch.display()
                ),
                source,
            )
        };
        use std::io::ErrorKind::{FileTooLarge, StorageFull};
        if total > max {
            return Err(cannot(
                format!("the copy would be {total} bytes, past the limit of {max} bytes (READ_COPY_BYTES_MAX)"),
                FileTooLarge.into(),
            ));
        }
        if let Some(free) = free_bytes(scratch).filter(|free| *free < total) {
            return Err(cannot(
                format!("the copy needs {total} bytes and {free} are free there"),
                StorageFull.into(),
            ));
        }
        let copy = ReadCopy {
            dir: crate::log::staging::temp_beside(&target, COPY_TAG)?,
        };
        copy.fill(dir, &files)
            .map_err(|e| cannot("the copy failed".to_string(), e))?;
        Ok(copy)
    }

    /// Creates the copy's directories owner-only and copies `files` into
    /// them, each owner-writable (sled opens its files read-write).
    fn fill(&self, from: &Path, files: &[PathBuf]) -> std::io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let mkdir = |p: &Path| fs::DirBuilder::new().recursive(true).mode(0o700).create(p);
        mkdir(&self.dir)?;
        for rel in files {
            let to = self.dir.join(rel);
            if let Some(parent) = to.parent() {
                mkdir(parent)?;
            }
            fs::copy(from.join(rel), &to)?;
            fs::set_permissions(&to, fs::Permissions::from_mode(0o600))?;
        }
        // Empty directories (sled's `blobs/`) are part of the layout too.
        for entry in walk_dirs(from)? {
            mkdir(&self.dir.join(entry))?;
        }
        Ok(())
    }
}

/// The directories below `dir` (relative), to `READ_COPY_DEPTH_MAX` levels.
fn walk_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![(PathBuf::new(), 0usize)];
    while let Some((rel, depth)) = todo.pop() {
        for entry in fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            if entry.file_type()?.is_dir() && depth < READ_COPY_DEPTH_MAX {
                let name = rel.join(entry.file_name());
                out.push(name.clone());
                todo.push((name, depth + 1));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why() -> (PathBuf, std::io::Error) {
        (
            PathBuf::from("ledger"),
            std::io::ErrorKind::ReadOnlyFilesystem.into(),
        )
    }

    /// A ledger-like directory: a lock file, `sled/db` of `len` bytes, an
    /// empty `sled/blobs/`.
    fn ledger_like(len: u64) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sled/blobs")).unwrap();
        std::fs::write(d.path().join("benchledger.lock"), "").unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(d.path().join("sled/db"), bytes).unwrap();
        d
    }

    #[test]
    fn a_copy_at_its_bound_is_made_private_and_removed_and_one_past_is_refused() {
        // READ_COPY_BYTES_MAX, at the bound and one past (a bound passed in
        // so the test stays small).
        let src = ledger_like(1000);
        let scratch = tempfile::tempdir().unwrap();
        let wait = Duration::from_secs(1);
        let copy = ReadCopy::make_within(
            src.path(),
            scratch.path(),
            "benchledger.lock",
            wait,
            &why(),
            1000,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(copy.dir()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the copy is owner-only");
        assert_eq!(
            std::fs::read(copy.dir().join("sled/db")).unwrap(),
            std::fs::read(src.path().join("sled/db")).unwrap()
        );
        assert!(
            copy.dir().join("sled/blobs").is_dir(),
            "empty directories too"
        );
        assert!(
            !copy.dir().join("benchledger.lock").exists(),
            "not the lock"
        );
        let dir = copy.dir().to_path_buf();
        drop(copy);
        assert!(!dir.exists(), "removed on drop");
        let past = ReadCopy::make_within(
            src.path(),
            scratch.path(),
            "benchledger.lock",
            wait,
            &why(),
            999,
        )
        .unwrap_err();
        assert!(
            matches!(&past, Error::Io { .. })
                && past.to_string().contains("past the limit of 999 bytes"),
            "{past}"
        );
        assert_eq!(
            std::fs::read_dir(scratch.path()).unwrap().count(),
            0,
            "nothing left"
        );
    }

    #[test]
    fn directories_to_the_depth_bound_are_copied_and_a_link_is_refused() {
        // READ_COPY_DEPTH_MAX, at the bound and one past.
        let src = ledger_like(10);
        let mut at = src.path().to_path_buf();
        for level in 0..READ_COPY_DEPTH_MAX {
            at = at.join(format!("d{level}"));
        }
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("f"), "x").unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let wait = Duration::from_secs(1);
        let copy =
            ReadCopy::make(src.path(), scratch.path(), "benchledger.lock", wait, &why()).unwrap();
        let rel = at.strip_prefix(src.path()).unwrap();
        assert_eq!(std::fs::read(copy.dir().join(rel).join("f")).unwrap(), b"x");
        drop(copy);
        std::fs::create_dir(at.join("deeper")).unwrap();
        let past = ReadCopy::make(src.path(), scratch.path(), "benchledger.lock", wait, &why())
            .unwrap_err();
        assert!(past.to_string().contains("deeper than"), "{past}");
        std::fs::remove_dir(at.join("deeper")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.path().join("sled/link")).unwrap();
        let link = ReadCopy::make(src.path(), scratch.path(), "benchledger.lock", wait, &why())
            .unwrap_err();
        assert!(link.to_string().contains("not a regular file"), "{link}");
        assert_eq!(
            std::fs::read_dir(scratch.path()).unwrap().count(),
            0,
            "nothing left"
        );
    }

    #[test]
    fn a_writable_ledger_is_read_in_place_and_never_appended_to() {
        use crate::log::ledger::{Draft, Ledger};
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("l");
        let (l, _) = Ledger::create(&dir, Duration::from_secs(5), [3; 16], "t", 1).unwrap();
        drop(l);
        let scratch = tempfile::tempdir().unwrap();
        let l = Ledger::open_read(&dir, Duration::from_secs(5), scratch.path()).unwrap();
        assert!(
            l.read_copy().is_none(),
            "a writable directory is read in place"
        );
        let note = Draft {
            actor: "t".into(),
            event: crate::schema::events::Event::OperatorNoted(
                crate::schema::events::OperatorNoted {
                    lineage: None,
                    text: "x".into(),
                },
            ),
            idempotency_key: None,
        };
        let refused = l.append(&[note], 2).unwrap_err();
        assert_eq!(
            refused.class(),
            crate::error::ExitClass::Environment,
            "{refused}"
        );
        assert_eq!(l.head().unwrap().seq, 0, "nothing appended");
    }
}
