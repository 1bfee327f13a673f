//! How far a copy is, on stderr: a progress bar (`indicatif`) when stderr
//! is a terminal; otherwise (a log file, a CI job, a test) plain lines, one
//! when a table starts and ends and one every few seconds between, so that
//! a long copy still says it is alive without filling a log.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Plain lines at most this often within a table.
const LINE_EVERY: Duration = Duration::from_secs(5);

pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    table: &'static str,
    /// Rows of the current table done, and in all.
    done: u64,
    rows: u64,
    last_line: Instant,
}

impl Progress {
    /// Progress over `total` rows of every table.
    pub(crate) fn new(total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template(
                "{msg:>16} [{bar:40}] {human_pos}/{human_len} rows, {elapsed} (eta {eta})",
            )
            .expect("a valid template")
            .progress_chars("=> ");
            ProgressBar::new(total).with_style(style)
        });
        Self {
            bar,
            table: "",
            done: 0,
            rows: 0,
            last_line: Instant::now(),
        }
    }

    /// A table of `rows` rows starts.
    pub(crate) fn start(&mut self, table: &'static str, rows: u64) {
        self.table = table;
        self.done = 0;
        self.rows = rows;
        self.last_line = Instant::now();
        match &self.bar {
            Some(bar) => bar.set_message(table),
            None => eprintln!("hookd copy: {table}: {rows} rows to read"),
        }
    }

    /// `rows` more rows of the current table are done.
    pub(crate) fn advance(&mut self, rows: u64) {
        self.done += rows;
        match &self.bar {
            Some(bar) => bar.inc(rows),
            None if self.last_line.elapsed() >= LINE_EVERY => {
                self.last_line = Instant::now();
                eprintln!(
                    "hookd copy: {}: {}/{} rows",
                    self.table, self.done, self.rows
                );
            }
            None => {}
        }
    }

    /// The current table is done: `copied` rows written, `skipped` there
    /// already.
    pub(crate) fn finish_table(&mut self, copied: u64, skipped: u64) {
        let line = format!(
            "hookd copy: {}: {copied} copied, {skipped} already there",
            self.table
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar (the summary follows on stdout).
    pub(crate) fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
