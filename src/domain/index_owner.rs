//! One due index per database. In server mode each dispatcher claims from
//! the Redis index at `redis.url` (or `.cluster`, `.sentinels`) under
//! `redis.prefix`, and its housekeeping re-adds to that index whatever
//! PostgreSQL holds pending and the index lacks. Two processes on the same
//! database but another Redis or another prefix are two indexes, each
//! re-adding what the other leased: every notification goes out twice.
//! Nothing in either index shows it.
//!
//! So each index names itself (a random identity kept in Redis beside its
//! keys, `due::Recovery::identity`), and every server-mode process writes
//! a row of its own with its index's name into the database once a second
//! (`store::seams::HousekeepingStore::beat_index`, under a lock: beats are
//! one at a time), and deletes it when it stops. Of the indexes seen
//! lately (`LIVE_FOR`), the one seen longest without a break owns the
//! database: a new index (or one back after a break) is
//! first seen after every live one, whatever the clocks of their hosts
//! say (`Beat::apply`). A process on another index refuses every command
//! of its index (`AnotherIndex`): its deliveries pause, and `/readyz`
//! says why, until the owner goes unseen for `LIVE_FOR`. A process whose
//! beats stop reaching the database for `BLIND_AFTER` pauses too
//! (`OwnerUnknown`): by `LIVE_FOR` another index could own it.
//!
//! A Redis that lost its data names its index anew. A process on it that
//! saw the old name says it is gone (`Beat::gone`), and the new name takes
//! the old one's place (its first sighting) at once. Processes that all
//! started after the loss never saw the old name: they wait `LIVE_FOR`
//! behind its last beat.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

/// How long an index stays the owner after its last beat: many beats
/// (one a second), so that a slow tick or a clock a few seconds off
/// between hosts does not hand the database to another index while
/// the owner runs.
pub const LIVE_FOR: Duration = Duration::seconds(30);

/// A process whose last beat that reached the database is this old
/// pauses: well within `LIVE_FOR`, after which another index may own the
/// database.
pub const BLIND_AFTER: std::time::Duration = std::time::Duration::from_secs(15);

/// After this long without a beat an index's row is deleted.
pub const FORGET_AFTER: Duration = Duration::days(1);

/// What a process writes each second: its index's name, the name it saw
/// before when that changed (the same index lost its data), the process's
/// own id, and the time.
#[derive(Debug, Clone)]
pub struct Beat {
    pub identity: String,
    pub process: Uuid,
    pub gone: Option<String>,
    pub now: DateTime<Utc>,
    /// Whether the process claims from its index (it runs a dispatcher).
    /// One that does not (`--role api`) only reads: it writes no row, so
    /// it never keeps its index the owner (an API process on the wrong
    /// prefix must not leave the database to an index nobody claims
    /// from), and pauses its hand-offs while another index owns it.
    pub claims: bool,
}

impl Beat {
    /// Rows seen before this are deleted.
    pub fn forget_before(&self) -> DateTime<Utc> {
        self.now - FORGET_AFTER
    }

    /// The name this beat says is gone, unless it is its own.
    pub fn gone(&self) -> Option<&str> {
        self.gone.as_deref().filter(|gone| *gone != self.identity)
    }

    /// Given every row `stored` (read under the store's lock), what this
    /// beat writes (`Applied`). Its first sighting is its index's:
    /// - that of a live row of its index (its own, or another process's);
    /// - else that of a live row of the index it names gone (the same
    ///   index, named anew);
    /// - else now, and after every live index, so that a newcomer never
    ///   goes before an index already serving, whatever the clocks of
    ///   their hosts say.
    ///
    /// The rows of the gone index go, and any other row of this process
    /// (it beats for one index), and every row unseen since
    /// `forget_before`. `seen_at` never moves back (a host whose clock is
    /// behind). A process that does not claim writes and deletes nothing.
    pub fn apply(&self, stored: &[IndexSeen]) -> Applied {
        let gone = self.gone();
        let live = live(stored, self.now);
        let first_of = |identity: &str| {
            live.iter()
                .filter(|s| s.identity == identity)
                .map(|s| s.first_seen)
                .min()
        };
        let first_seen = first_of(&self.identity)
            .or_else(|| gone.and_then(first_of))
            .unwrap_or_else(|| {
                live.iter()
                    .map(|s| s.first_seen + Duration::microseconds(1))
                    .fold(self.now, DateTime::max)
            });
        if !self.claims {
            return Applied {
                write: None,
                delete: Vec::new(),
                live: live.into_iter().cloned().collect(),
            };
        }
        let own = stored
            .iter()
            .find(|s| s.identity == self.identity && s.process == self.process);
        let written = IndexSeen {
            identity: self.identity.clone(),
            process: self.process,
            first_seen,
            seen_at: own.map_or(self.now, |own| own.seen_at.max(self.now)),
        };
        let forget_before = self.forget_before();
        let delete = stored
            .iter()
            .filter(|s| {
                s.seen_at < forget_before
                    || (s.identity != self.identity
                        && (Some(s.identity.as_str()) == gone || s.process == self.process))
            })
            .cloned()
            .collect();
        let mut after: Vec<IndexSeen> = live
            .into_iter()
            .filter(|s| s.process != self.process && Some(s.identity.as_str()) != gone)
            .cloned()
            .collect();
        after.push(written.clone());
        Applied {
            write: Some(written),
            delete,
            live: after,
        }
    }
}

/// What a beat does to the rows (`Beat::apply`); the store writes it in
/// the transaction that read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The beat's own row (none for a process that does not claim).
    pub write: Option<IndexSeen>,
    /// The rows to delete, by index and process.
    pub delete: Vec<IndexSeen>,
    /// The live rows after the beat, its own among them, for
    /// `another_owner` to choose the owner.
    pub live: Vec<IndexSeen>,
}

/// The rows `process` deletes as it stops: its own, unless an index other
/// than its row's is live. A restart must not hand the database to a
/// process paused on another index: the row goes unseen in `LIVE_FOR`, and
/// a process of the same index started meanwhile keeps its sighting.
pub fn ending(process: Uuid, now: DateTime<Utc>, stored: &[IndexSeen]) -> Vec<IndexSeen> {
    let live = live(stored, now);
    stored
        .iter()
        .filter(|s| s.process == process)
        .filter(|own| !live.iter().any(|s| s.identity != own.identity))
        .cloned()
        .collect()
}

/// The live rows of `stored`: seen within `LIVE_FOR` of the latest row
/// (of `now`, at the latest), so that after an outage of the database in
/// which no beat got through, the index serving before it still comes
/// first; and never a row unseen since `FORGET_AFTER`.
fn live(stored: &[IndexSeen], now: DateTime<Utc>) -> Vec<&IndexSeen> {
    let latest = stored.iter().map(|s| s.seen_at).max();
    let live_after = latest.map_or(now, |latest| latest.min(now)) - LIVE_FOR;
    let forget_before = now - FORGET_AFTER;
    stored
        .iter()
        .filter(|s| s.seen_at > live_after && s.seen_at >= forget_before)
        .collect()
}

/// A process's row, as the database saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSeen {
    pub identity: String,
    pub process: Uuid,
    pub first_seen: DateTime<Utc>,
    pub seen_at: DateTime<Utc>,
}

/// Another index owns the database: this process's deliveries pause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "another due index serves this database: a hookd with another Redis (redis.url, \
     redis.cluster or redis.sentinels) or another redis.prefix has served it since {since} \
     (last seen {seen_at}), and two indexes would each deliver what the other leased; \
     this process's deliveries pause until that index goes unseen for {live_for} s. \
     Give every hookd on this database the same Redis and redis.prefix"
)]
pub struct AnotherIndex {
    pub since: DateTime<Utc>,
    pub seen_at: DateTime<Utc>,
    pub live_for: i64,
}

/// This process cannot tell which index owns the database: it has not
/// written its index's name there yet, or not for `BLIND_AFTER`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this process has not told the database which due index it uses {when} (the database or \
     Redis does not answer): its deliveries pause, since another index could serve the \
     database meanwhile"
)]
pub struct OwnerUnknown {
    pub when: &'static str,
}

/// The owner among `seen` (the live rows, this process's own among them),
/// when it is not `own`: the index first seen (its rows' earliest), ties
/// broken by name so that every process reads the same owner.
pub fn another_owner(own: &str, seen: &[IndexSeen]) -> Option<AnotherIndex> {
    let owner = seen
        .iter()
        .min_by(|a, b| (a.first_seen, &a.identity).cmp(&(b.first_seen, &b.identity)))?;
    let seen_at = seen
        .iter()
        .filter(|s| s.identity == owner.identity)
        .map(|s| s.seen_at)
        .max()
        .unwrap_or(owner.seen_at);
    (owner.identity != own).then(|| AnotherIndex {
        since: owner.first_seen,
        seen_at,
        live_for: LIVE_FOR.num_seconds(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    /// Process `n`'s row of index `identity`.
    fn seen(identity: &str, n: u128, first: i64, last: i64) -> IndexSeen {
        IndexSeen {
            identity: identity.into(),
            process: Uuid::from_u128(n),
            first_seen: at(first),
            seen_at: at(last),
        }
    }

    fn beat(identity: &str, n: u128, gone: Option<&str>, now: i64) -> Beat {
        Beat {
            identity: identity.into(),
            process: Uuid::from_u128(n),
            gone: gone.map(str::to_owned),
            now: at(now),
            claims: true,
        }
    }

    /// `apply` of a process that claims: its row.
    fn wrote(beat: &Beat, stored: &[IndexSeen]) -> (IndexSeen, Vec<IndexSeen>) {
        let applied = beat.apply(stored);
        let written = applied.write.expect("a process that claims writes its row");
        (written, applied.live)
    }

    #[test]
    fn the_index_first_seen_owns_the_database() {
        let rows = [seen("b", 2, 20, 30), seen("a", 1, 10, 30)];
        assert_eq!(another_owner("a", &rows), None);
        let other = another_owner("b", &rows).expect("a owns it");
        assert_eq!(other.since, at(10));
        assert!(other.to_string().contains("redis.prefix"), "{other}");
    }

    #[test]
    fn two_indexes_first_seen_at_once_agree_on_one_owner() {
        let rows = [seen("b", 2, 10, 20), seen("a", 1, 10, 20)];
        assert_eq!(another_owner("a", &rows), None);
        assert!(another_owner("b", &rows).is_some());
    }

    #[test]
    fn an_index_alone_owns_the_database() {
        assert_eq!(another_owner("a", &[seen("a", 1, 10, 10)]), None);
        assert_eq!(another_owner("a", &[]), None);
    }

    #[test]
    fn a_newcomer_goes_after_every_live_index_though_its_clock_is_behind() {
        // a's host is 5 s ahead of b's.
        let stored = [seen("a", 1, 100, 100)];
        let (written, live) = wrote(&beat("b", 2, None, 96), &stored);
        assert!(written.first_seen > at(100), "{written:?}");
        assert_eq!(live.len(), 2);
        assert!(another_owner("b", &live).is_some());
        assert_eq!(another_owner("a", &live), None);
    }

    #[test]
    fn a_process_joining_a_live_index_takes_its_first_sighting() {
        let stored = [seen("a", 1, 10, 50), seen("b", 2, 20, 50)];
        let (written, live) = wrote(&beat("a", 3, None, 51), &stored);
        assert_eq!((written.first_seen, written.seen_at), (at(10), at(51)));
        assert_eq!(live.len(), 3);
        assert_eq!(another_owner("a", &live), None);
    }

    #[test]
    fn a_live_index_keeps_its_first_sighting_and_one_back_after_a_break_starts_again() {
        let stored = [seen("a", 1, 10, 50), seen("b", 2, 20, 50)];
        let (written, _) = wrote(&beat("a", 1, None, 51), &stored);
        assert_eq!((written.first_seen, written.seen_at), (at(10), at(51)));
        // a unseen for longer than LIVE_FOR, b beating on: b owns it, and
        // a comes back after it.
        let stored = [seen("a", 1, 10, 50), seen("b", 2, 20, 90)];
        let (written, live) = wrote(&beat("a", 1, None, 90), &stored);
        assert!(written.first_seen > at(20), "{written:?}");
        assert!(another_owner("a", &live).is_some());
    }

    #[test]
    fn an_index_named_anew_takes_the_first_sighting_of_the_name_it_says_is_gone() {
        let stored = [
            seen("a", 1, 10, 50),
            seen("a", 3, 10, 50),
            seen("x", 2, 20, 50),
        ];
        let (written, live) = wrote(&beat("c", 1, Some("a"), 51), &stored);
        assert_eq!(written.first_seen, at(10));
        let mut names: Vec<&str> = live.iter().map(|s| s.identity.as_str()).collect();
        names.sort();
        assert_eq!(names, ["c", "x"], "a is gone, every process's row of it");
        assert_eq!(another_owner("c", &live), None);
        // A gone name unseen for LIVE_FOR hands nothing on.
        let stored = [seen("a", 1, 10, 15), seen("x", 2, 20, 50)];
        let (written, _) = wrote(&beat("c", 1, Some("a"), 51), &stored);
        assert!(written.first_seen > at(20));
    }

    #[test]
    fn after_an_outage_no_beat_got_through_the_index_serving_before_comes_first() {
        // Both unseen for 60 s: the database was down. b beats first.
        let stored = [seen("a", 1, 10, 50), seen("b", 2, 20, 50)];
        let (written, live) = wrote(&beat("b", 2, None, 110), &stored);
        assert_eq!(written.first_seen, at(20));
        assert!(another_owner("b", &live).is_some(), "a still comes first");
        // A Redis emptied meanwhile: c, the index's new name, waits one
        // beat behind the old rows, then its own beat is the latest.
        let stored = [seen("a", 1, 10, 50)];
        let (written, live) = wrote(&beat("c", 3, None, 110), &stored);
        assert!(another_owner("c", &live).is_some());
        let (_, live) = wrote(&beat("c", 3, None, 111), &[seen("a", 1, 10, 50), written]);
        assert_eq!(another_owner("c", &live), None);
    }

    #[test]
    fn a_process_that_does_not_claim_writes_nothing_and_never_keeps_its_index_the_owner() {
        let api = Beat {
            claims: false,
            ..beat("b", 2, None, 60)
        };
        // b's dispatchers gone: only an API process on b is left beside a.
        let stored = [seen("a", 1, 10, 59), seen("b", 3, 5, 20)];
        let applied = api.apply(&stored);
        assert_eq!((applied.write, applied.delete), (None, vec![]));
        assert!(another_owner("b", &applied.live).is_some(), "a serves");
        // Alone: nothing owns the database, and it hands off.
        assert_eq!(another_owner("b", &api.apply(&[]).live), None);
    }

    #[test]
    fn a_row_seen_later_than_the_beat_is_not_moved_back() {
        let (written, _) = wrote(&beat("a", 1, None, 40), &[seen("a", 1, 10, 45)]);
        assert_eq!(written.seen_at, at(45));
    }

    #[test]
    fn a_beat_deletes_its_gone_index_its_rows_of_another_index_and_day_old_rows() {
        let now = 2 * 86_400;
        let stored = [
            seen("a", 1, 10, now - 5),         // the gone name, this process
            seen("a", 2, 10, now - 5),         // the gone name, another process
            seen("x", 1, 10, now - 5),         // this process's row of another index
            seen("b", 3, 20, now - 5),         // another live index: kept
            seen("z", 4, 0, now - 86_400 - 1), // unseen for a day
            seen("c", 1, 10, now - 5),         // its own row: written over, not deleted
        ];
        let applied = beat("c", 1, Some("a"), now).apply(&stored);
        let mut deleted: Vec<(&str, u128)> = applied
            .delete
            .iter()
            .map(|s| (s.identity.as_str(), s.process.as_u128()))
            .collect();
        deleted.sort();
        assert_eq!(deleted, [("a", 1), ("a", 2), ("x", 1), ("z", 4)]);
    }

    #[test]
    fn a_process_that_stops_keeps_its_row_while_another_index_is_live() {
        let stored = [seen("a", 1, 10, 100), seen("b", 2, 20, 99)];
        assert_eq!(ending(Uuid::from_u128(1), at(100), &stored), vec![]);
        // b unseen for LIVE_FOR behind a's last beat: a's row goes.
        let stored = [seen("a", 1, 10, 100), seen("b", 2, 20, 60)];
        assert_eq!(
            ending(Uuid::from_u128(1), at(100), &stored),
            [stored[0].clone()]
        );
        // Another process of its own index does not keep it.
        let stored = [seen("a", 1, 10, 100), seen("a", 2, 10, 100)];
        assert_eq!(
            ending(Uuid::from_u128(1), at(100), &stored),
            [stored[0].clone()]
        );
    }
}
