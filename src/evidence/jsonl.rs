//! The bounded streaming JSON Lines reader: one line in memory at a time,
//! each at most [`INGEST_LINE_BYTES_MAX`] bytes, at most
//! [`INGEST_ROWS_PER_FILE_MAX`] rows, blank lines refused, progress reported
//! through a [`Progress`] hook.

use std::io::{BufRead, Read};

use super::{FieldError, Progress, INGEST_LINE_BYTES_MAX, INGEST_ROWS_PER_FILE_MAX};
use crate::error::{Error, Result};

/// Reads JSON Lines from `r` one bounded line at a time and calls `f` with
/// each line's number (from 1) and bytes (without the `\n`). Returns the
/// number of rows.
///
/// Refused, as `Error::Input("<source>: line <n>: field (line): ...")`: a
/// line longer than [`INGEST_LINE_BYTES_MAX`], a blank (empty or
/// whitespace-only) line, and a row past [`INGEST_ROWS_PER_FILE_MAX`]. An
/// empty file has 0 rows; a last line without a newline is a row. Errors of
/// `f` stop the read and are returned as they are. Read failures are
/// [`Error::Io`].
pub fn for_each_jsonl_row(
    r: &mut dyn BufRead,
    source: &str,
    f: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    for_each_jsonl_row_with_progress(r, source, None, f)
}

/// [`for_each_jsonl_row`] with an optional [`Progress`] hook (a terminal
/// progress bar, a log line).
pub fn for_each_jsonl_row_with_progress(
    r: &mut dyn BufRead,
    source: &str,
    mut progress: Option<Progress<'_>>,
    f: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let mut buf: Vec<u8> = Vec::new();
    let mut rows: u64 = 0;
    let mut bytes: u64 = 0;
    loop {
        buf.clear();
        let n = Read::take(&mut *r, INGEST_LINE_BYTES_MAX as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(format!("read {source}"), e))?;
        if n == 0 {
            break;
        }
        let line_no = rows + 1;
        let line: &[u8] = if buf.last() == Some(&b'\n') {
            buf.get(..buf.len() - 1).unwrap_or(&[])
        } else if buf.len() > INGEST_LINE_BYTES_MAX {
            return Err(FieldError::line(format!(
                "line is longer than the limit of {INGEST_LINE_BYTES_MAX} bytes"
            ))
            .at_line(source, line_no));
        } else {
            &buf
        };
        if line_no > INGEST_ROWS_PER_FILE_MAX {
            return Err(FieldError::line(format!(
                "more than {INGEST_ROWS_PER_FILE_MAX} rows in one file"
            ))
            .at_line(source, line_no));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return Err(
                FieldError::line("blank line; every line must hold one json object")
                    .at_line(source, line_no),
            );
        }
        f(line_no, line)?;
        rows = line_no;
        bytes += n as u64;
        if let Some(p) = progress.as_mut() {
            if p.every_rows > 0 && rows.is_multiple_of(p.every_rows) {
                (p.report)(rows, bytes);
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A `BufRead` over generated lines: `rows` copies of `line` plus `\n`,
    /// produced one at a time (never the whole file in memory).
    pub(crate) struct Generated<F: FnMut(u64, &mut Vec<u8>)> {
        rows: u64,
        next: u64,
        make: F,
        cur: Vec<u8>,
        pos: usize,
    }

    impl<F: FnMut(u64, &mut Vec<u8>)> Generated<F> {
        pub(crate) fn new(rows: u64, make: F) -> Self {
            Generated {
                rows,
                next: 0,
                make,
                cur: Vec::new(),
                pos: 0,
            }
        }
    }

    impl<F: FnMut(u64, &mut Vec<u8>)> Read for Generated<F> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            self.consume(n);
            Ok(n)
        }
    }

    impl<F: FnMut(u64, &mut Vec<u8>)> BufRead for Generated<F> {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            if self.pos >= self.cur.len() && self.next < self.rows {
                self.cur.clear();
                (self.make)(self.next, &mut self.cur);
                self.cur.push(b'\n');
                self.next += 1;
                self.pos = 0;
            }
            Ok(&self.cur[self.pos.min(self.cur.len())..])
        }

        fn consume(&mut self, amt: usize) {
            self.pos += amt;
        }
    }

    fn count(input: &mut dyn BufRead) -> Result<u64> {
        for_each_jsonl_row(input, "t.jsonl", &mut |_, _| Ok(()))
    }

    #[test]
    fn reader_numbers_lines_and_accepts_a_last_line_without_newline() {
        let mut seen = Vec::new();
        let rows = for_each_jsonl_row(&mut &b"{\"a\":1}\n{\"a\":2}"[..], "t.jsonl", &mut |n, l| {
            seen.push((n, l.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(rows, 2);
        assert_eq!(seen[0], (1, b"{\"a\":1}".to_vec()));
        assert_eq!(seen[1], (2, b"{\"a\":2}".to_vec()));
        assert_eq!(count(&mut &b""[..]).unwrap(), 0);
    }

    #[test]
    fn blank_lines_are_refused_with_their_line_number() {
        for input in [&b"{}\n\n{}\n"[..], &b"{}\n   \n"[..], &b"{}\n\r\n"[..]] {
            let err = count(&mut &input[..]).unwrap_err().to_string();
            assert_eq!(
                err,
                "t.jsonl: line 2: field (line): blank line; every line must hold one json object"
            );
        }
    }

    #[test]
    fn line_bytes_at_the_bound_and_one_past() {
        // INGEST_LINE_BYTES_MAX, streamed from io::repeat (not a Vec)
        let at = std::io::repeat(b'x').take(INGEST_LINE_BYTES_MAX as u64);
        let mut r = std::io::BufReader::new(at.chain(&b"\n"[..]));
        let mut len = 0;
        let rows = for_each_jsonl_row(&mut r, "big.jsonl", &mut |_, l| {
            len = l.len();
            Ok(())
        })
        .unwrap();
        assert_eq!((rows, len), (1, INGEST_LINE_BYTES_MAX));
        let past = std::io::repeat(b'x').take(INGEST_LINE_BYTES_MAX as u64 + 1);
        let mut r = std::io::BufReader::new(b"{}\n".chain(past).chain(&b"\n"[..]));
        assert_eq!(
            count(&mut r).unwrap_err().to_string(),
            format!("t.jsonl: line 2: field (line): line is longer than the limit of {INGEST_LINE_BYTES_MAX} bytes")
        );
        // a last line at the bound without a newline is accepted too
        let mut r =
            std::io::BufReader::new(std::io::repeat(b'x').take(INGEST_LINE_BYTES_MAX as u64));
        assert_eq!(count(&mut r).unwrap(), 1);
    }

    #[test]
    fn rows_per_file_at_the_bound_and_one_past() {
        let mut at = Generated::new(INGEST_ROWS_PER_FILE_MAX, |_, buf| {
            buf.extend_from_slice(b"{}")
        });
        assert_eq!(count(&mut at).unwrap(), INGEST_ROWS_PER_FILE_MAX);
        let mut past = Generated::new(INGEST_ROWS_PER_FILE_MAX + 1, |_, buf| {
            buf.extend_from_slice(b"{}")
        });
        assert_eq!(
            count(&mut past).unwrap_err().to_string(),
            format!(
                "t.jsonl: line {}: field (line): more than {INGEST_ROWS_PER_FILE_MAX} rows in one file",
                INGEST_ROWS_PER_FILE_MAX + 1
            )
        );
    }

    #[test]
    fn progress_is_reported_every_n_rows() {
        let mut reports = Vec::new();
        let mut report = |rows: u64, bytes: u64| reports.push((rows, bytes));
        let mut input = Generated::new(25, |_, buf| buf.extend_from_slice(b"{}"));
        let rows = for_each_jsonl_row_with_progress(
            &mut input,
            "t.jsonl",
            Some(Progress {
                every_rows: 10,
                report: &mut report,
            }),
            &mut |_, _| Ok(()),
        )
        .unwrap();
        assert_eq!(rows, 25);
        assert_eq!(reports, vec![(10, 30), (20, 60)]);
    }

    #[test]
    fn callback_errors_stop_the_read() {
        let mut calls = 0;
        let err = for_each_jsonl_row(&mut &b"{}\n{}\n{}\n"[..], "t.jsonl", &mut |n, _| {
            calls += 1;
            if n == 2 {
                Err(FieldError::new("x", "bad").at_line("t.jsonl", n))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "t.jsonl: line 2: field x: bad");
        assert_eq!(calls, 2);
        assert_eq!(err.class(), crate::error::ExitClass::BadInput);
    }

    #[test]
    fn read_failures_are_io_errors() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk gone"))
            }
        }
        let err = count(&mut std::io::BufReader::new(Failing)).unwrap_err();
        assert_eq!(err.class(), crate::error::ExitClass::Environment);
        assert!(err.to_string().contains("read t.jsonl"), "{err}");
    }
}
