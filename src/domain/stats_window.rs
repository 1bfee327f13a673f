//! The overview's windows and how per-minute rows become its columns: a
//! window is a number of steps ending with the current, partial one (the
//! last hour in 60 steps of a minute, the last day in 144 of ten minutes),
//! each step the sum of the minutes in it.

use chrono::{DateTime, Utc};

use super::lateness::p99_ms;
use super::minute_stats::Counts;

/// A window the overview answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Hour,
    Day,
}

impl Window {
    /// Every window, as the API document lists their names.
    pub const ALL: [Window; 2] = [Window::Hour, Window::Day];

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|window| window.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Window::Hour => "1h",
            Window::Day => "24h",
        }
    }

    pub fn step_seconds(self) -> i64 {
        match self {
            Window::Hour => 60,
            Window::Day => 600,
        }
    }

    pub fn steps(self) -> usize {
        match self {
            Window::Hour => 60,
            Window::Day => 144,
        }
    }

    /// The start of the first step (unix seconds) of the window that ends
    /// with the step `now` is in. Steps are aligned to multiples of their
    /// length since the epoch, so every caller sees the same steps.
    pub fn first_step(self, now: DateTime<Utc>) -> i64 {
        let step = self.step_seconds();
        let current = now.timestamp().div_euclid(step) * step;
        current - (self.steps() as i64 - 1) * step
    }

    /// The earliest minute the window reads.
    pub fn since(self, now: DateTime<Utc>) -> DateTime<Utc> {
        DateTime::from_timestamp(self.first_step(now), 0).unwrap_or(now)
    }
}

/// The window's columns, oldest step first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub time: Vec<i64>,
    pub counts: Vec<Counts>,
    /// The last pending sample taken in each step.
    pub pending: Vec<Option<i64>>,
    /// Every step added up.
    pub total: Counts,
}

impl Series {
    /// Successful attempts over attempts per step; `None` with none.
    pub fn success_ratio(&self) -> Vec<Option<f64>> {
        self.counts.iter().map(success_ratio).collect()
    }

    pub fn lateness_p99_ms(&self) -> Vec<Option<i64>> {
        self.counts
            .iter()
            .map(|c| p99_ms(&c.lateness, c.lateness_max_ms))
            .collect()
    }
}

/// Successful attempts over attempts; `None` with none.
pub fn success_ratio(counts: &Counts) -> Option<f64> {
    (counts.attempts > 0)
        .then(|| (counts.attempts - counts.failed_attempts) as f64 / counts.attempts as f64)
}

/// Folds per-minute rows (`minutes`: any order, at most one per minute or
/// several to add up) and pending samples (a minute and the count then)
/// into the window's steps at `now`. Rows outside the window are left out.
pub fn series(
    window: Window,
    now: DateTime<Utc>,
    minutes: &[(DateTime<Utc>, Counts)],
    pending: &[(DateTime<Utc>, i64)],
) -> Series {
    let (first, step, steps) = (
        window.first_step(now),
        window.step_seconds(),
        window.steps(),
    );
    let index = |at: DateTime<Utc>| {
        let offset = at.timestamp() - first;
        (offset >= 0 && offset / step < steps as i64).then_some((offset / step) as usize)
    };
    let mut counts = vec![Counts::default(); steps];
    let mut total = Counts::default();
    for (minute, row) in minutes {
        if let Some(i) = index(*minute) {
            counts[i].add(row);
            total.add(row);
        }
    }
    let mut latest: Vec<Option<(DateTime<Utc>, i64)>> = vec![None; steps];
    for &(minute, count) in pending {
        if let Some(i) = index(minute) {
            if latest[i].is_none_or(|(seen, _)| minute >= seen) {
                latest[i] = Some((minute, count));
            }
        }
    }
    Series {
        time: (0..steps as i64).map(|i| first + i * step).collect(),
        counts,
        pending: latest.into_iter().map(|l| l.map(|(_, c)| c)).collect(),
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A multiple of 600 s: a day step starts there.
    const T0: i64 = 1_764_133_200;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(T0 + seconds, 0).unwrap()
    }

    fn attempts(n: i64, failed: i64) -> Counts {
        Counts {
            attempts: n,
            failed_attempts: failed,
            ..Counts::default()
        }
    }

    #[test]
    fn windows_are_parsed_from_their_names_only() {
        assert_eq!(Window::parse("1h"), Some(Window::Hour));
        assert_eq!(Window::parse("24h"), Some(Window::Day));
        for bad in ["", "1H", "60m", "1d", "24h "] {
            assert_eq!(Window::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_last_step_is_the_current_one_and_steps_are_aligned() {
        let now = at(3_600 + 15);
        let hour = Window::Hour;
        assert_eq!(hour.first_step(now), T0 + 60);
        let s = series(hour, now, &[], &[]);
        assert_eq!(s.time.len(), 60);
        assert_eq!(*s.time.last().unwrap(), T0 + 3_600);
        let day = Window::Day;
        let s = series(day, at(599), &[], &[]);
        assert_eq!(s.time.len(), 144);
        assert_eq!(*s.time.last().unwrap(), T0);
        assert_eq!(s.time[1] - s.time[0], 600);
        assert_eq!(day.since(at(599)), at(-143 * 600));
    }

    #[test]
    fn a_day_step_adds_up_its_ten_minutes_and_leaves_out_what_is_outside() {
        let now = at(599);
        let minutes = [
            (at(0), attempts(3, 1)),
            (at(540), attempts(2, 0)),
            (at(-600), attempts(7, 7)),
            (at(-143 * 600 - 60), attempts(100, 100)),
        ];
        let s = series(Window::Day, now, &minutes, &[]);
        assert_eq!(s.counts[143].attempts, 5);
        assert_eq!(s.counts[142].attempts, 7);
        assert_eq!(
            s.total.attempts, 12,
            "the minute before the window is left out"
        );
        assert_eq!(s.success_ratio()[143], Some(0.8));
        assert_eq!(s.success_ratio()[142], Some(0.0));
        assert_eq!(s.success_ratio()[0], None);
        assert_eq!(s.lateness_p99_ms()[143], None);
    }

    #[test]
    fn pending_is_the_last_sample_of_each_step_and_none_without_one() {
        let pending = [(at(540), 9), (at(0), 4), (at(-600), 1)];
        let s = series(Window::Day, at(599), &[], &pending);
        assert_eq!(s.pending[143], Some(9));
        assert_eq!(s.pending[142], Some(1));
        assert_eq!(s.pending[141], None);
    }
}
