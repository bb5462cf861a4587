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
    /// The storage engine or the file system failed.
    #[error("storage failure at {context}: {message}")]
    Io {
        /// What was being done (e.g. `flush`, `open ./ledger`).
        context: String,
        /// The underlying error.
        message: String,
    },
}

impl Error {
    /// The exit class this error maps to.
    pub fn class(&self) -> ExitClass {
        match self {
            Error::Input(_) => ExitClass::BadInput,
            Error::Refused { .. } => ExitClass::Refused,
            Error::Damage(_) => ExitClass::CheckFailed,
            Error::LockTimeout { .. } | Error::HeadMoved { .. } | Error::Io { .. } => {
                ExitClass::Environment
            }
        }
    }

    /// Shorthand for an input error.
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }

    /// Shorthand for an I/O error with its context.
    pub fn io(context: impl Into<String>, err: impl fmt::Display) -> Self {
        Error::Io {
            context: context.into(),
            message: err.to_string(),
        }
    }
}

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
