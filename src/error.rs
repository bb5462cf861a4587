//! Error classes and the CLI exit codes they map to (design.md section 4).

use std::fmt;

/// The exit-code class of a failure. Every library error maps to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitClass {
    /// 1: a check ran and does not hold (damage found, verdict not accepted).
    CheckFailed,
    /// 2: bad input or usage; nothing appended.
    BadInput,
    /// 3: refused by a rule of the method; nothing appended.
    Refused,
    /// 4: environment failure (I/O, lock wait timed out); nothing appended.
    Environment,
}

impl ExitClass {
    /// The process exit code of this class.
    pub fn code(self) -> u8 {
        match self {
            ExitClass::CheckFailed => 1,
            ExitClass::BadInput => 2,
            ExitClass::Refused => 3,
            ExitClass::Environment => 4,
        }
    }
}

impl fmt::Display for ExitClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ExitClass::CheckFailed => "check failed",
            ExitClass::BadInput => "bad input",
            ExitClass::Refused => "refused",
            ExitClass::Environment => "environment failure",
        };
        f.write_str(s)
    }
}

/// Errors of the ledger library. Messages are lowercase and name the field,
/// file or rule concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input that cannot be accepted as written (a malformed file, a value out
    /// of bounds, an unknown field value).
    #[error("{0}")]
    Input(String),
    /// A rule of the method refuses the command; `rule` is its id (e.g.
    /// `CASE-2`) or `LEDGER-*` for ledger-level rules.
    #[error("refused by rule {rule}: {message}")]
    Refused {
        /// The rule id (method.md, or a LEDGER-* rule of SPEC.md).
        rule: crate::schema::rule::Rule,
        /// What was refused and why.
        message: String,
    },
    /// Stored bytes that do not verify (damage, corruption, tampering).
    #[error("ledger damage: {0}")]
    Damage(String),
    /// A check of something given to the ledger (a checkpoint note, a
    /// proof) does not hold against it: exit 1 like damage, but the ledger
    /// itself is not damaged, so it is not called that.
    #[error("{0}")]
    NotHeld(String),
    /// The writer lock could not be taken within the wait.
    #[error("ledger {dir} is locked by another process; waited {waited_ms} ms (raise --lock-timeout to wait longer)")]
    LockTimeout {
        /// The ledger directory.
        dir: String,
        /// How long the wait lasted, in milliseconds.
        waited_ms: u64,
    },
    /// Another writer moved the head between read and append.
    #[error("the ledger head moved during the append (expected seq {expected}, found {found}); nothing was appended")]
    HeadMoved {
        /// The head seq the append was built on (or "none").
        expected: String,
        /// The head seq found in the store.
        found: String,
    },
    /// The environment failed: the file system or the storage engine could
    /// not do what was asked (no space, no permission, a read-only file
    /// system, a device error while writing). Stored bytes that cannot be
    /// read back are `Damage`, not this.
    ///
    /// The message names the context only; the reason is the `source` (an
    /// `std::io::Error` whose kind is kept: `StorageFull` for ENOSPC,
    /// `PermissionDenied` for EACCES, ...). Print the error with its chain
    /// (`{:#}` through anyhow, or walk `source()`).
    #[error("storage failure at {context}")]
    Io {
        /// What was being done (e.g. `flush`, `open ./ledger`).
        context: String,
        /// The underlying error, its kind preserved.
        #[source]
        source: std::io::Error,
    },
}

/// A rule's refusal as the method's pure deciders return it (the rule
/// and why), for the CLI to report without deciding anything itself.
impl From<(crate::schema::rule::Rule, String)> for Error {
    fn from((rule, message): (crate::schema::rule::Rule, String)) -> Self {
        Error::Refused { rule, message }
    }
}

impl Error {
    /// The exit class this error maps to.
    pub fn class(&self) -> ExitClass {
        match self {
            Error::Input(_) => ExitClass::BadInput,
            Error::Refused { .. } => ExitClass::Refused,
            Error::Damage(_) | Error::NotHeld(_) => ExitClass::CheckFailed,
            Error::LockTimeout { .. } | Error::HeadMoved { .. } | Error::Io { .. } => {
                ExitClass::Environment
            }
        }
    }

    /// Shorthand for an input error.
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }

    /// A refusal with its message rewritten by `f`, its rule kept: the CLI
    /// adds the file and line it was reading without deciding anything
    /// itself. Any other error is returned as it is.
    pub fn refusal_in_context(self, f: impl FnOnce(&str) -> String) -> Self {
        match self {
            Error::Refused { rule, message } => Error::Refused {
                message: f(&message),
                rule,
            },
            other => other,
        }
    }

    /// Whether a rule of the method refused (exit 3).
    pub fn is_refused(&self) -> bool {
        matches!(self, Error::Refused { .. })
    }

    /// Shorthand for an I/O error with its context. An `std::io::Error` is
    /// kept as the source as it is (its kind preserved); any other error
    /// becomes an `std::io::Error` of kind `Other` carrying its message.
    pub fn io<E: fmt::Display + 'static>(context: impl Into<String>, err: E) -> Self {
        let mut slot = Some(err);
        let any: &mut dyn std::any::Any = &mut slot;
        let source = match any.downcast_mut::<Option<std::io::Error>>() {
            Some(io) => io.take(),
            None => None,
        }
        .unwrap_or_else(|| {
            let text = slot.take().map(|e| e.to_string()).unwrap_or_default();
            std::io::Error::other(text)
        });
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The kind of the I/O error inside, if this is one.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// Whether an I/O error is the environment's (exit 4: no space, no
/// permission, a read-only file system, a busy or locked file, too many open
/// files, out of memory, interrupted) rather than stored bytes that cannot
/// be read (damage, exit 1: an unexpected end of file, invalid data, a
/// device read error).
pub fn is_environment(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    // Linux ENFILE and EMFILE (too many open files) have no stable kind.
    const TOO_MANY_OPEN_FILES: [i32; 2] = [23, 24];
    matches!(
        e.kind(),
        PermissionDenied
            | StorageFull
            | QuotaExceeded
            | ReadOnlyFilesystem
            | FileTooLarge
            | WouldBlock
            | ResourceBusy
            | Interrupted
            | TimedOut
            | OutOfMemory
            | BrokenPipe
    ) || e
        .raw_os_error()
        .is_some_and(|n| TOO_MANY_OPEN_FILES.contains(&n))
}

/// Opens a file the ledger reads (a manifest, a key, a note, an evidence
/// file, an export) for reading: only a regular file of at most `max` bytes
/// (symlinks followed). A FIFO, a device, a socket or a directory is refused
/// at once (the open itself does not wait for a FIFO's writer), and so is a
/// larger file; both are bad input (exit 2) naming the file and what it is.
/// Every layer that reads a file goes through this, so the bound and the
/// refusal are one; the caller names its bound (a `limits` constant).
/// Returns the open file and its size.
pub fn open_regular(path: &std::path::Path, max: u64) -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::input(format!("cannot read {shown}: {e}")),
            _ if is_environment(&e) => Error::io(format!("open {shown}"), e),
            _ => Error::input(format!("cannot read {shown}: {e}")),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("stat {shown}"), e))?;
    let t = meta.file_type();
    let what = if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    };
    if let Some(what) = what {
        return Err(Error::input(format!(
            "{shown}: {what}, not a regular file; benchledger reads only regular files"
        )));
    }
    if meta.len() > max {
        return Err(Error::input(format!(
            "{shown}: {} bytes, longer than the limit of {max} bytes for this file",
            meta.len()
        )));
    }
    Ok((file, meta.len()))
}

/// Reads a whole file through [`open_regular`]: a regular file of at most
/// `max` bytes, read with the bound held even if the file grows meanwhile.
pub fn read_regular(path: &std::path::Path, max: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let (file, len) = open_regular(path, max)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    if bytes.len() as u64 > max {
        return Err(Error::input(format!(
            "{}: grew past the limit of {max} bytes for this file while being read",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The size and BLAKE3 of a regular file of at most `max` bytes, streamed
/// through [`open_regular`] (nothing kept; a FIFO or a device refused at
/// once, a file that grows past the bound while read refused).
pub fn blake3_regular(path: &std::path::Path, max: u64) -> Result<(u64, String)> {
    use std::io::Read;
    let (file, _) = open_regular(path, max)?;
    let mut h = blake3::Hasher::new();
    let bytes = std::io::copy(&mut file.take(max.saturating_add(1)), &mut h)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    if bytes > max {
        return Err(Error::input(format!(
            "{}: grew past the limit of {max} bytes for this file while being read",
            path.display()
        )));
    }
    Ok((bytes, h.finalize().to_hex().to_string()))
}

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_its_kind_and_is_the_source() {
        use std::error::Error as _;
        for kind in [
            std::io::ErrorKind::StorageFull,
            std::io::ErrorKind::PermissionDenied,
            std::io::ErrorKind::BrokenPipe,
        ] {
            let e = Error::io("flush", std::io::Error::from(kind));
            assert_eq!(e.io_kind(), Some(kind));
            assert_eq!(e.class(), ExitClass::Environment);
            let source = e.source().expect("a source");
            let io = source
                .downcast_ref::<std::io::Error>()
                .expect("an io::Error");
            assert_eq!(io.kind(), kind);
        }
        let enospc = Error::io("append", std::io::Error::from_raw_os_error(28));
        assert_eq!(enospc.io_kind(), Some(std::io::ErrorKind::StorageFull));
        let chain = format!("{:#}", anyhow::Error::from(enospc));
        assert!(
            chain.contains("storage failure at append")
                && chain.contains("No space left on device"),
            "{chain}"
        );
        // anything else that displays becomes an Other io error with its text
        let other = Error::io("aws", "throttled".to_string());
        assert_eq!(other.io_kind(), Some(std::io::ErrorKind::Other));
        assert_eq!(other.source().unwrap().to_string(), "throttled");
    }

    #[test]
    fn a_read_is_bounded_and_only_of_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_regular(&f, 5).unwrap(), b"12345", "at the bound");
        let past = read_regular(&f, 4).unwrap_err();
        assert_eq!(past.class(), ExitClass::BadInput);
        assert!(
            past.to_string()
                .contains("longer than the limit of 4 bytes"),
            "{past}"
        );
        for (path, what) in [
            (std::path::PathBuf::from("/dev/zero"), "a character device"),
            (dir.path().to_path_buf(), "a directory"),
        ] {
            let e = read_regular(&path, 1 << 30).unwrap_err();
            assert_eq!(e.class(), ExitClass::BadInput);
            assert!(e.to_string().contains(what), "{e}");
        }
        let missing = read_regular(&dir.path().join("none"), 1).unwrap_err();
        assert_eq!(missing.class(), ExitClass::BadInput, "{missing}");
    }

    #[test]
    fn the_environment_is_no_space_no_permission_a_lock_not_unreadable_bytes() {
        use std::io::{Error as E, ErrorKind as K};
        for env in [28, 122, 13, 1, 30, 11, 16, 12, 24, 23, 4] {
            assert!(is_environment(&E::from_raw_os_error(env)), "errno {env}");
        }
        for damage in [K::UnexpectedEof, K::InvalidData, K::NotFound, K::Other] {
            assert!(!is_environment(&E::from(damage)), "{damage:?}");
        }
        // EIO: a block the device cannot read back
        assert!(!is_environment(&E::from_raw_os_error(5)));
    }
}
