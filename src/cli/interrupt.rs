//! Ctrl-C (SIGINT) and SIGTERM. A verb with nothing to undo ends at the
//! first signal with exit 130 (`install_default`: waiting for the writer
//! lock, reading `-` from stdin, anywhere). The verbs that write temporary
//! files (`import`, `export --jsonl -o`) and `run` take the signals over
//! (`verb_cleans_up`): the first signal sets a flag that the verb's
//! reader or writer turns into an error, so the verb removes its temporary
//! files on the way out (exit 4); a second ends the process at once (exit
//! 130), and the next run removes what it left (`log::staging`). A read
//! verb reading a private copy of a ledger it cannot write
//! (`log::read_copy`), or stdin spooled to a file (`common::InputFile`),
//! removes it on the first signal and ends (exit 130): it has nothing else
//! to undo.

use std::io::{self, BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a signal ends the process at once (exit 130): until a verb
/// takes the signals over.
fn ends_at_once() -> &'static Arc<AtomicBool> {
    static AT_ONCE: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    AT_ONCE.get_or_init(|| Arc::new(AtomicBool::new(true)))
}

/// Whether the process started with `signal` ignored (a shell's
/// background job, `nohup`): the kernel's `SigIgn` mask in
/// `/proc/self/status` (bit `signal - 1`), read within
/// `PROC_FILE_BYTES_MAX`. Unknown (no such file or line) is not ignored.
fn inherited_ignored(signal: i32) -> bool {
    use std::io::Read;
    let mut text = String::new();
    let read = std::fs::File::open("/proc/self/status").and_then(|f| {
        f.take(crate::limits::PROC_FILE_BYTES_MAX as u64)
            .read_to_string(&mut text)
    });
    if read.is_err() || signal < 1 {
        return false;
    }
    text.lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1u64 << (signal - 1)) != 0)
}

/// Every verb: SIGINT or SIGTERM ends the process with exit 130 until
/// the verb calls `verb_cleans_up`. Installed before the verb runs; a
/// signal the process started with ignored stays ignored, as it was before
/// any handler existed (a background job keeps running on the terminal's
/// Ctrl-C).
pub(crate) fn install_default() {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if inherited_ignored(signal) {
            continue;
        }
        // Failing to install leaves the default: the signal ends the
        // process, as the shell reports with 130 too.
        let _ = signal_hook::flag::register_conditional_shutdown(
            signal,
            130,
            Arc::clone(ends_at_once()),
        );
    }
}

/// The verb has something to undo on a signal and installs its own
/// handlers: from now on the first signal no longer ends the process.
pub(crate) fn verb_cleans_up() {
    ends_at_once().store(false, Ordering::SeqCst);
}

/// The flag the handlers set.
pub(crate) struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Installs the handlers for this process.
    pub(crate) fn install() -> Interrupt {
        verb_cleans_up();
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Failing to install leaves the default (the process ends and the
            // next run cleans up), so errors are ignored.
            let _ =
                signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag));
            let _ = signal_hook::flag::register(signal, Arc::clone(&flag));
        }
        Interrupt(flag)
    }

    /// An error once a signal arrived.
    fn check(&self) -> io::Result<()> {
        if self.0.load(Ordering::SeqCst) {
            return Err(io::Error::other(
                "interrupted by a signal; the temporary files were removed",
            ));
        }
        Ok(())
    }
}

/// A reader or writer that fails once the process was interrupted.
pub(crate) struct Interruptible<'a, T> {
    inner: T,
    interrupt: &'a Interrupt,
}

impl<'a, T> Interruptible<'a, T> {
    /// `inner`, watching `interrupt`.
    pub(crate) fn new(inner: T, interrupt: &'a Interrupt) -> Self {
        Interruptible { inner, interrupt }
    }

    /// The reader or writer inside.
    pub(crate) fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: Read> Read for Interruptible<'_, T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.interrupt.check()?;
        let n = self.inner.read(buf)?;
        self.interrupt.check()?;
        Ok(n)
    }
}

impl<T: BufRead> BufRead for Interruptible<'_, T> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.interrupt.check()?;
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }
}

impl<T: Write> Write for Interruptible<'_, T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.interrupt.check()?;
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.interrupt.check()?;
        self.inner.flush()
    }
}

/// How often the watcher of a read copy looks at its flag, in ms.
const READ_COPY_WATCH_MS: u64 = 50;

/// Removes `path` (a private read copy, a directory; or stdin spooled to
/// a file, `what` naming it) and ends the process (exit 130) on the first
/// SIGINT or SIGTERM; a second ends it at once (the next verb that makes
/// one then removes what is left).
pub(crate) fn remove_on_interrupt(path: std::path::PathBuf, what: &'static str) {
    let Interrupt(flag) = Interrupt::install();
    let watch = std::thread::Builder::new()
        .name("private-file-interrupt".into())
        .spawn(move || loop {
            if flag.load(Ordering::SeqCst) {
                let _ = match path.is_dir() {
                    true => std::fs::remove_dir_all(&path),
                    false => std::fs::remove_file(&path),
                };
                eprintln!("benchledger: interrupted; the {what} was removed");
                std::process::exit(130);
            }
            std::thread::sleep(std::time::Duration::from_millis(READ_COPY_WATCH_MS));
        });
    if let Err(e) = watch {
        tracing::warn!(
            "cannot watch for Ctrl-C ({e}); an interrupted read leaves its copy to the next run"
        );
    }
}
