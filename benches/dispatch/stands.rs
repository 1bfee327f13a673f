//! "Where hookd stands" (#51): the figures BENCHMARKS.md opens with, each a
//! ratio measured side by side in this run (modes alternated, or a client
//! beside hookd), written as rows of a Markdown table to the file named by
//! `BENCH_SUMMARY` for `scripts/bench summary`, which puts them into
//! BENCHMARKS.md.

use crate::median;

/// The rows this run measured, in the table's order.
#[derive(Default)]
pub struct Stands {
    /// Per figure: its name, the per-run values and how to show them.
    rows: Vec<Row>,
}

struct Row {
    figure: &'static str,
    values: Vec<f64>,
    unit: Unit,
    target: &'static str,
}

/// How a row's median reads.
#[derive(Clone, Copy)]
pub enum Unit {
    /// A plain ratio, `0.81`.
    Ratio,
    /// A multiple, `3.8×`.
    Times,
}

impl Stands {
    /// Keeps a figure's per-run values; the table shows their median and
    /// range.
    pub fn add(
        &mut self,
        figure: &'static str,
        values: Vec<f64>,
        unit: Unit,
        target: &'static str,
    ) {
        if !values.is_empty() {
            self.rows.push(Row {
                figure,
                values,
                unit,
                target,
            });
        }
    }

    /// Writes the rows to `BENCH_SUMMARY`'s file, if it is set.
    pub fn write(&self) {
        let Ok(path) = std::env::var("BENCH_SUMMARY") else {
            return;
        };
        let date = chrono::Utc::now().format("%Y-%m-%d");
        let mut text = String::new();
        for row in &self.rows {
            let show = |v: f64| match row.unit {
                Unit::Ratio => format!("{v:.2}"),
                Unit::Times => format!("{v:.1}×"),
            };
            let (low, high) = row
                .values
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            text.push_str(&format!(
                "| {} | **{}** ({}–{}, {} runs, {date}) | {} | `scripts/bench summary` |\n",
                row.figure,
                show(median(row.values.clone())),
                show(low),
                show(high),
                row.values.len(),
                row.target,
            ));
        }
        std::fs::write(&path, text).expect("BENCH_SUMMARY names a file the bench can write");
    }
}
