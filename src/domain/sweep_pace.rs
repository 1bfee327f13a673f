//! How much of PostgreSQL the sweep for rows the due index lost reads
//! while it finds none (#35). A throttled backlog of 100,000 stays overdue
//! in PostgreSQL (the index holds each at its slot), and reading it every
//! two seconds to learn that nothing is missing was most of what a waiting
//! hookd cost. Two rules:
//! - the check of what fell overdue lately starts after the last row it
//!   already found indexed: a row the index held after it fell overdue was
//!   not lost at its commit, and any later loss is the walk's;
//! - the walk of everything overdue, after a round that found nothing,
//!   spreads its next round over `QUIET_ROUND` (one page per two seconds
//!   at least, one per `QUIET_GAP_MAX` at most), and goes back to a page
//!   each sweep the moment a page finds a row missing.
//!
//! So a pending row the index lost is re-added within seconds of its due
//! time when it was lost at its commit, and otherwise within
//! `max(QUIET_ROUND, 2 s × pages)` of its loss while the backlog holds
//! steady (plus a round at a page per two seconds after a master change,
//! which restarts the walk unpaced).

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A quiet round of the walk is spread over at least this long.
pub const QUIET_ROUND: Duration = Duration::from_secs(300);
/// A quiet walk's pages are never further apart than this: a small backlog
/// is still walked every few tens of seconds.
pub const QUIET_GAP_MAX: Duration = Duration::from_secs(30);

/// Where the check of rows overdue since `fresh_since` starts: after
/// `checked` (the last row it found in the index) when that is later.
pub fn fresh_from(
    fresh_since: DateTime<Utc>,
    checked: Option<(DateTime<Utc>, Uuid)>,
) -> (DateTime<Utc>, Uuid) {
    match checked {
        Some(cursor) if cursor.0 >= fresh_since => cursor,
        _ => (fresh_since, Uuid::nil()),
    }
}

/// The walk's pace: how long after a page the next one is read.
#[derive(Debug, Default, Clone)]
pub struct WalkPace {
    /// Pages read in the round under way, and whether one found a row missing.
    pages: u32,
    found: bool,
    /// Pages of the last round, when it found nothing missing.
    quiet: Option<u32>,
}

impl WalkPace {
    /// A page was read: `missing` rows of it re-added, `round_ended` when
    /// it was the last overdue page.
    pub fn read(&mut self, missing: usize, round_ended: bool) {
        self.pages += 1;
        if missing > 0 {
            self.found = true;
            self.quiet = None;
        }
        if round_ended {
            self.quiet = (!self.found).then_some(self.pages);
            self.pages = 0;
            self.found = false;
        }
    }

    /// A master change (or anything that may have lost rows): the next
    /// round goes at full pace.
    pub fn restart(&mut self) {
        *self = Self::default();
    }

    /// How long after the last page the next is read, given the sweep's
    /// own interval. A round grown past the last quiet one's pages speeds
    /// up as it grows, so its length stays near `QUIET_ROUND`.
    pub fn gap(&self, interval: Duration) -> Duration {
        match self.quiet {
            None => interval,
            Some(pages) => {
                let pages = pages.max(self.pages).max(1);
                (QUIET_ROUND / pages).clamp(interval, QUIET_GAP_MAX.max(interval))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: Duration = Duration::from_secs(2);

    #[test]
    fn a_walk_goes_a_page_per_sweep_until_a_round_has_found_nothing() {
        let mut pace = WalkPace::default();
        assert_eq!(pace.gap(TWO), TWO);
        for _ in 0..19 {
            pace.read(0, false);
            assert_eq!(pace.gap(TWO), TWO);
        }
        pace.read(0, true);
        assert_eq!(
            pace.gap(TWO),
            Duration::from_secs(15),
            "20 pages over 5 min"
        );
    }

    #[test]
    fn a_page_that_finds_a_row_missing_brings_the_walk_back_to_full_pace() {
        let mut pace = WalkPace::default();
        pace.read(0, true);
        assert_eq!(pace.gap(TWO), QUIET_GAP_MAX);
        pace.read(1, false);
        assert_eq!(pace.gap(TWO), TWO);
        // The round that found one is not quiet, the next one is.
        pace.read(0, true);
        assert_eq!(pace.gap(TWO), TWO);
        pace.read(0, true);
        assert_eq!(pace.gap(TWO), QUIET_GAP_MAX);
    }

    #[test]
    fn a_quiet_round_lasts_about_the_quiet_round_whatever_the_backlog() {
        for (pages, gap) in [(1, 30), (10, 30), (20, 15), (100, 3), (150, 2), (1000, 2)] {
            let mut pace = WalkPace::default();
            for page in 1..=pages {
                pace.read(0, page == pages);
            }
            assert_eq!(pace.gap(TWO), Duration::from_secs(gap), "{pages} pages");
        }
    }

    #[test]
    fn a_round_grown_past_the_last_quiet_one_speeds_up() {
        let mut pace = WalkPace::default();
        for page in 1..=20 {
            pace.read(0, page == 20);
        }
        for _ in 0..60 {
            pace.read(0, false);
        }
        assert_eq!(pace.gap(TWO), Duration::from_secs(5));
    }

    #[test]
    fn a_restart_walks_at_full_pace() {
        let mut pace = WalkPace::default();
        pace.read(0, true);
        pace.restart();
        assert_eq!(pace.gap(TWO), TWO);
    }

    #[test]
    fn the_fresh_check_starts_after_what_it_found_indexed_within_its_window() {
        let now = Utc::now();
        let since = now - chrono::Duration::seconds(60);
        let id = Uuid::now_v7();
        assert_eq!(fresh_from(since, None), (since, Uuid::nil()));
        let checked = (now - chrono::Duration::seconds(5), id);
        assert_eq!(fresh_from(since, Some(checked)), checked);
        let old = (now - chrono::Duration::seconds(61), id);
        assert_eq!(fresh_from(since, Some(old)), (since, Uuid::nil()));
    }
}
