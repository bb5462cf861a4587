//! Progress of the long verbs (`verify`, `import`, `export`, `replay`,
//! `report`) on stderr, drawn with indicatif only when stderr is a terminal
//! (and `TERM` is not `dumb`): silent when piped or redirected, and never on
//! stdout, which carries only the verb's data. The library draws nothing:
//! it exposes counters (the seq of each folded record, the bytes an import
//! consumed, the lines an export wrote) that feed a [`Progress`] here.
//!
//! A bar appears only once its work has run for [`SHOW_AFTER`], so quick
//! verbs on small ledgers never flicker.

use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before its bar is drawn.
pub(crate) const SHOW_AFTER: Duration = Duration::from_millis(400);

/// Whether progress may be drawn: stderr is a terminal and `-q` was not
/// given.
pub(crate) fn enabled() -> bool {
    io::stderr().is_terminal() && !crate::cli::out::quiet()
}

/// What a bar counts.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Records,
    Bytes,
}

/// `run`'s bar on stderr: the group's cases done of its identities, with
/// the cases running and left, the next step and the lineage's spend
/// against the safety limit; hidden when stderr is not a terminal.
pub(crate) struct RunProgress {
    bar: Option<ProgressBar>,
}

/// What `run`'s bar shows at one step.
pub(crate) struct RunStanding<'a> {
    pub done: u64,
    pub total: u64,
    pub running: u64,
    pub left: u64,
    pub step: &'a str,
    pub spend_micro_usd: u64,
    pub limit_micro_usd: u64,
}

impl RunProgress {
    /// A bar labelled `label`, drawn only when `shown` and stderr is a
    /// terminal.
    pub(crate) fn new(label: &str, shown: bool) -> RunProgress {
        if !shown || !enabled() {
            return RunProgress { bar: None };
        }
        let style = ProgressStyle::with_template(
            "{prefix}: {bar:24} {pos}/{len} cases done ({elapsed}, {eta} left) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::new(0)
            .with_style(style)
            .with_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(500));
        RunProgress { bar: Some(bar) }
    }

    /// Shows `s`.
    pub(crate) fn update(&self, s: &RunStanding<'_>) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(s.total);
        bar.set_position(s.done);
        bar.set_message(format!(
            "running {}, left {}; next: {}; spend {} of {}",
            s.running,
            s.left,
            s.step,
            dollars(s.spend_micro_usd),
            dollars(s.limit_micro_usd)
        ));
    }

    /// Prints `line` on stderr above the bar (or plainly without one).
    pub(crate) fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}

impl Drop for RunProgress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Micro-USD as dollars and cents, for a reader (rounded down).
fn dollars(micro_usd: u64) -> String {
    format!(
        "${}.{:02}",
        micro_usd / 1_000_000,
        micro_usd % 1_000_000 / 10_000
    )
}

/// One verb's progress on stderr; hidden when stderr is not a terminal.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: std::cell::Cell<bool>,
}

impl Progress {
    fn new(label: &str, total: Option<u64>, unit: Unit) -> Progress {
        if !enabled() {
            return Progress::hidden();
        }
        let template = match (total, unit) {
            (Some(_), Unit::Records) => {
                "{prefix}: {bar:32} {pos}/{len} records ({elapsed}, {eta} left)"
            }
            (Some(_), Unit::Bytes) => {
                "{prefix}: {bar:32} {bytes}/{total_bytes} ({elapsed}, {eta} left)"
            }
            (None, Unit::Records) => "{prefix}: {spinner} {pos} records ({elapsed}) {msg}",
            (None, Unit::Bytes) => "{prefix}: {spinner} {bytes} ({elapsed}) {msg}",
        };
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden())
            .with_style(style)
            .with_prefix(label.to_string());
        Progress {
            bar: Some(bar),
            started: Instant::now(),
            shown: std::cell::Cell::new(false),
        }
    }

    /// Nothing is drawn.
    pub(crate) fn hidden() -> Progress {
        Progress {
            bar: None,
            started: Instant::now(),
            shown: std::cell::Cell::new(false),
        }
    }

    /// A bar over `total` records (`replay`, `export`, the replay of a
    /// `report`).
    pub(crate) fn records(label: &str, total: u64) -> Progress {
        Progress::new(label, Some(total), Unit::Records)
    }

    /// A bar over `total` bytes, or a byte counter when the size is not
    /// known (an import from stdin).
    pub(crate) fn bytes(label: &str, total: Option<u64>) -> Progress {
        Progress::new(label, total, Unit::Bytes)
    }

    /// A spinner with the elapsed time, for work without a counter (the
    /// link walk of `verify`): drawn at once and ticking by itself.
    pub(crate) fn spinner(label: &str, what: &str) -> Progress {
        let progress = Progress::new(label, None, Unit::Records);
        if let Some(bar) = &progress.bar {
            bar.set_style(
                ProgressStyle::with_template("{prefix}: {spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(what.to_string());
            progress.show();
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        progress
    }

    fn show(&self) {
        if let (Some(bar), false) = (&self.bar, self.shown.get()) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown.set(true);
        }
    }

    /// The count so far.
    pub(crate) fn set(&self, position: u64) {
        if let Some(bar) = &self.bar {
            if !self.shown.get() && self.started.elapsed() >= SHOW_AFTER {
                self.show();
            }
            bar.set_position(position);
        }
    }

    /// Clears the line (the verb's own stderr messages follow).
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A reader that reports the bytes consumed through it.
pub(crate) struct CountingReader<'p, R> {
    inner: R,
    consumed: u64,
    progress: &'p Progress,
}

impl<'p, R> CountingReader<'p, R> {
    /// `inner`, reporting to `progress`.
    pub(crate) fn new(inner: R, progress: &'p Progress) -> Self {
        CountingReader {
            inner,
            consumed: 0,
            progress,
        }
    }
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        self.progress.set(self.consumed);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for CountingReader<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
        self.consumed += amount as u64;
        self.progress.set(self.consumed);
    }
}

/// A writer that reports the lines written through it.
pub(crate) struct LineCountingWriter<'p, W> {
    inner: W,
    lines: u64,
    progress: &'p Progress,
}

impl<'p, W> LineCountingWriter<'p, W> {
    /// `inner`, reporting to `progress`.
    pub(crate) fn new(inner: W, progress: &'p Progress) -> Self {
        LineCountingWriter {
            inner,
            lines: 0,
            progress,
        }
    }

    /// The writer inside.
    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for LineCountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let lines = buf[..n].iter().filter(|byte| **byte == b'\n').count() as u64;
        if lines > 0 {
            self.lines += lines;
            self.progress.set(self.lines);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counters pass every byte through unchanged and count what
    /// crossed them; a hidden progress draws nothing.
    #[test]
    fn the_counters_pass_bytes_through() {
        let progress = Progress::hidden();
        let mut reader = CountingReader::new(io::BufReader::new(&b"a\nbc\n"[..]), &progress);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!((line.as_str(), reader.consumed), ("a\n", 2));
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!((rest.as_slice(), reader.consumed), (&b"bc\n"[..], 5));
        let mut writer = LineCountingWriter::new(Vec::new(), &progress);
        writer.write_all(b"x\ny\nz").unwrap();
        assert_eq!(writer.lines, 2);
        assert_eq!(writer.into_inner(), b"x\ny\nz");
    }

    /// Under `cargo test` stderr is captured, not a terminal: nothing is
    /// drawn.
    #[test]
    fn progress_is_hidden_when_stderr_is_not_a_terminal() {
        if !enabled() {
            assert!(Progress::records("replay", 10).bar.is_none());
            assert!(Progress::spinner("verify", "links").bar.is_none());
        }
    }
}
