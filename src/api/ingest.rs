//! Group commit for notification creation. Concurrent creates (single POSTs
//! and batches) queue here; each of a few committers takes everything that
//! queued while it was busy, writes it in one statement (one fsync), indexes
//! the new rows in Redis in one command, and answers each caller. There is
//! no batching window: a lone request is committed at once, and 201 still
//! means committed. Several committers keep commits pipelined, so one big
//! batch does not hold up the rest.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::error::ApiError;
use super::AppState;
use crate::store::notifications::{Inserted, NewNotification};
use crate::store::StoreError;

/// Most notifications written in one statement.
const MAX_ITEMS: usize = 2000;
/// Commits in flight at once.
pub const COMMITTERS: usize = 4;

struct Job {
    items: Vec<NewNotification>,
    reply: oneshot::Sender<Result<Vec<Inserted>, Arc<StoreError>>>,
}

/// Handle to the committer. Cheap to clone.
#[derive(Clone)]
pub struct Ingest {
    jobs: mpsc::Sender<Job>,
}

/// The committers' end of the queue.
pub struct Queue(Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>);

impl Ingest {
    /// A handle and the queue for `run`.
    pub fn channel() -> (Ingest, Queue) {
        let (jobs, queue) = mpsc::channel(4096);
        (
            Ingest { jobs },
            Queue(Arc::new(tokio::sync::Mutex::new(queue))),
        )
    }

    /// Commits `items` (with whatever else is queued) and returns their fate.
    pub async fn submit(&self, items: Vec<NewNotification>) -> Result<Vec<Inserted>, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { items, reply })
            .await
            .map_err(|_| ApiError::Internal)?;
        match answer.await {
            Ok(Ok(results)) => Ok(results),
            Ok(Err(error)) => Err(ApiError::from(&*error)),
            Err(_) => Err(ApiError::Internal),
        }
    }
}

/// Starts the committers. Their `state` holds a handle to their own queue,
/// so they run as long as the runtime does.
pub fn spawn(state: AppState, queue: Queue) {
    for _ in 0..COMMITTERS {
        tokio::spawn(run(state.clone(), queue.0.clone()));
    }
}

async fn run(state: AppState, queue: Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>) {
    loop {
        // Take what is queued, then commit without holding the queue, so the
        // next committer can gather the jobs that arrive meanwhile.
        let jobs = {
            let mut queue = queue.lock().await;
            let Some(first) = queue.recv().await else {
                return;
            };
            let mut count = first.items.len();
            let mut jobs = vec![first];
            while count < MAX_ITEMS {
                match queue.try_recv() {
                    Ok(job) => {
                        count += job.items.len();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
            jobs
        };
        // Move the items out of their jobs: bodies are never copied.
        let mut items = Vec::with_capacity(jobs.iter().map(|j| j.items.len()).sum());
        let mut replies = Vec::with_capacity(jobs.len());
        for job in jobs {
            replies.push((job.items.len(), job.reply));
            items.extend(job.items);
        }
        match state.store.insert_notifications(items).await {
            Ok(results) => {
                let due: Vec<_> = results
                    .iter()
                    .filter_map(|r| match r {
                        Inserted::Created(n) => n.next_attempt_at.map(|at| (n.id, at)),
                        _ => None,
                    })
                    .collect();
                metrics::counter!("hookd_notifications_created_total").increment(due.len() as u64);
                state.index_due(&due).await;
                let mut results = results.into_iter();
                for (count, reply) in replies {
                    let mine: Vec<Inserted> = results.by_ref().take(count).collect();
                    let _ = reply.send(Ok(mine));
                }
            }
            Err(error) => {
                let error = Arc::new(error);
                for (_, reply) in replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
}
