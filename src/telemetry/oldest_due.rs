//! `hookd_oldest_due_seconds{endpoint, attempted}`, rendered by hookd
//! beside the exporter's text rather than through it.
//!
//! The series name the endpoints among the top ten of the last reading
//! (`dispatcher::due_age`). The Prometheus exporter cannot drop a series,
//! so a gauge per endpoint would keep one for every endpoint that was ever
//! among the ten, for the life of the process: on a busy install, one per
//! endpoint. Here each scrape shows the last reading's rows and nothing
//! else; an endpoint that left the ten is gone from the next scrape.
//! The last reading is process-wide, as the exporter's recorder is: the
//! housekeeping task sets it and `/metrics` reads it.

use std::fmt::Write as _;
use std::sync::Mutex;

use uuid::Uuid;

const NAME: &str = "hookd_oldest_due_seconds";
const HELP: &str = "How long the oldest due push notification has waited, for the 10 endpoints of each kind (attempted before or not) that waited longest; read once a minute, the same in every process";

/// One series: an endpoint, whether its oldest due row was attempted
/// before, and how long that row has waited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OldestDue {
    pub endpoint: Uuid,
    pub attempted: bool,
    pub seconds: f64,
}

static LATEST: Mutex<Vec<OldestDue>> = Mutex::new(Vec::new());

/// Replaces the rows the next scrape shows.
pub fn set(rows: Vec<OldestDue>) {
    *LATEST
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = rows;
}

/// Appends the family in Prometheus text format: its help and type
/// always, one line per row of the last reading.
pub fn render(out: &mut String) {
    let rows = LATEST
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    let _ = writeln!(out, "# HELP {NAME} {HELP}");
    let _ = writeln!(out, "# TYPE {NAME} gauge");
    for row in rows {
        let _ = writeln!(
            out,
            "{NAME}{{endpoint=\"{}\",attempted=\"{}\"}} {}",
            row.endpoint, row.attempted, row.seconds
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_shows_only_the_last_readings_endpoints() {
        let (left, stays) = (Uuid::now_v7(), Uuid::now_v7());
        set(vec![
            OldestDue {
                endpoint: left,
                attempted: false,
                seconds: 12.5,
            },
            OldestDue {
                endpoint: stays,
                attempted: true,
                seconds: 3.0,
            },
        ]);
        set(vec![OldestDue {
            endpoint: stays,
            attempted: true,
            seconds: 63.0,
        }]);
        let mut text = String::new();
        render(&mut text);
        assert!(
            text.starts_with("# HELP hookd_oldest_due_seconds "),
            "{text}"
        );
        assert!(
            text.contains("# TYPE hookd_oldest_due_seconds gauge\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "hookd_oldest_due_seconds{{endpoint=\"{stays}\",attempted=\"true\"}} 63\n"
            )),
            "{text}"
        );
        assert!(!text.contains(&left.to_string()), "{text}");
    }
}
