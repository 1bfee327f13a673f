//! A recording that finds the one writer held by a create rides in the
//! create's transaction instead of waiting for it to end.
//!
//! An ordered key moves one step per recorded success, and a create of
//! 1,000 holds the writer about 20 ms, most of it its commit and the
//! trips around its statements: the recorder waited that long behind each
//! create while a producer posted (`BENCHMARKS.md`, #48). So a recording
//! that cannot take the writer at once leaves its batch here; a create
//! that holds the writer takes it before its commit and writes it in a
//! savepoint of its transaction (`SqliteStore::commit`), so that both are
//! on disk with one sync. The recording waits for whichever comes first:
//! the create's answer, or the writer itself, in which case it takes its
//! batch back and writes it as before. A recording that fails in the
//! create's transaction is rolled back to its savepoint and leaves the
//! create alone; a create that fails takes the recording with it, and the
//! recorder writes the batch again, as after any failed write.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqlitePool};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::store_error;
use crate::domain::health::Health;
use crate::store::recording::{AttemptRecord, Recorded};
use crate::store::StoreError;

/// A recording left for the writer's holder.
pub(super) struct Rider {
    pub records: Vec<AttemptRecord>,
    pub health: Vec<(Uuid, Health)>,
    done: oneshot::Sender<Result<Recorded, StoreError>>,
}

impl Rider {
    /// Answers the recording that left it.
    pub fn answer(self, result: Result<Recorded, StoreError>) {
        let _ = self.done.send(result);
    }
}

/// The one recording waiting for the writer, if any, and how many a
/// create took.
#[derive(Clone, Default)]
pub(super) struct Riders {
    waiting: Arc<Mutex<Option<Rider>>>,
    taken: Arc<AtomicU64>,
}

impl std::fmt::Debug for Riders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Riders").finish_non_exhaustive()
    }
}

/// How a recording that found the writer held went on.
pub(super) enum Waited {
    /// A create wrote it, and this is what it recorded.
    Recorded(Recorded),
    /// It has the writer, to write itself.
    Writer(PoolConnection<Sqlite>),
}

impl Riders {
    /// The recording waiting, for the writer's holder to write before it
    /// commits.
    pub fn take(&self) -> Option<Rider> {
        // One whose recording stopped waiting (the recorder ended) is left
        // unwritten, as an unfinished write would be.
        let rider = self.take_back().filter(|rider| !rider.done.is_closed());
        if rider.is_some() {
            self.taken.fetch_add(1, Ordering::Relaxed);
        }
        rider
    }

    /// How many recordings a create took (`take`).
    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// The recording waiting, taken back by the recording itself.
    fn take_back(&self) -> Option<Rider> {
        self.waiting.lock().expect("riders lock").take()
    }

    /// Leaves `records` for the writer's holder, and waits for its answer
    /// or for the writer, whichever comes first. With another recording
    /// already waiting, waits for the writer alone.
    pub async fn wait(
        &self,
        records: &[AttemptRecord],
        health: &[(Uuid, Health)],
        writer: &SqlitePool,
    ) -> Result<Waited, StoreError> {
        let (done, mut answer) = oneshot::channel();
        let left = {
            let mut slot = self.waiting.lock().expect("riders lock");
            // One whose recording stopped waiting is replaced.
            let free = slot.as_ref().is_none_or(|rider| rider.done.is_closed());
            if free {
                *slot = Some(Rider {
                    records: records.to_vec(),
                    health: health.to_vec(),
                    done,
                });
            }
            free
        };
        if !left {
            let conn = writer.acquire().await.map_err(store_error)?;
            return Ok(Waited::Writer(conn));
        }
        tokio::select! {
            biased;
            recorded = &mut answer => return recorded_by_create(recorded),
            conn = writer.acquire() => {
                if self.take_back().is_some() {
                    // No create took it: written here, as before.
                    return Ok(Waited::Writer(conn.map_err(store_error)?));
                }
            }
        }
        // A create took it and has committed (it gave the writer back):
        // its answer is on its way.
        recorded_by_create(answer.await)
    }
}

fn recorded_by_create(
    answer: Result<Result<Recorded, StoreError>, oneshot::error::RecvError>,
) -> Result<Waited, StoreError> {
    match answer {
        Ok(recorded) => recorded.map(Waited::Recorded),
        Err(_) => Err(StoreError::Unavailable(
            "the create that took this recording ended before its commit".into(),
        )),
    }
}
