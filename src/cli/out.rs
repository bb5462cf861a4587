//! stdout as the reader's: when the reader closes the pipe (`| head`), the
//! rest of the output is dropped quietly and the verb finishes with its own
//! exit code. Nothing here can panic (`println!` does on a closed pipe).
//! Appends are announced on stderr first (`announce`), so a reader who
//! closed stdout never hides whether a record was written.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);
static QUIET: AtomicBool = AtomicBool::new(false);

/// `-q/--quiet`: no append announcements, progress or warnings on stderr
/// (errors, a refusal's reason and every output on stdout still print).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `-q/--quiet` was given.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether the reader closed stdout; long outputs stop producing then.
pub(crate) fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// stdout, dropping what a closed pipe would refuse.
pub(crate) struct Out;

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if closed() {
            return Ok(buf.len());
        }
        match io::stdout().lock().write(buf) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                CLOSED.store(true, Ordering::Relaxed);
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if closed() {
            return Ok(());
        }
        match io::stdout().lock().flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                CLOSED.store(true, Ordering::Relaxed);
                Ok(())
            }
            other => other,
        }
    }
}

/// `println!` that returns the write's error instead of panicking, and
/// drops output once the reader closed the pipe.
macro_rules! outln {
    () => { std::io::Write::write_all(&mut $crate::cli::out::Out, b"\n") };
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut $crate::cli::out::Out, format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// `print!` likewise.
macro_rules! out {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut $crate::cli::out::Out, format_args!($($arg)*))
    };
}
pub(crate) use out;
