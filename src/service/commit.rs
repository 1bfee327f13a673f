//! Group commit. Concurrent writes (single POSTs and batches, notifications
//! and events) queue here; each of a few committers takes everything that
//! queued while it was busy, writes it in one transaction (one fsync),
//! indexes the new rows in the due index (Redis: one command; in-process
//! in the embedded mode), and answers each caller.
//! There is no batching window: a lone request is committed at once, and
//! 201 still means committed. Several committers keep commits pipelined,
//! so one big batch does not hold up the rest.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{Service, ServiceError};
use crate::store::writes::{Committed, Writes};
use crate::store::StoreError;

/// Most rows (notifications, event deliveries) gathered into one commit;
/// one request bigger than this is still committed whole.
const MAX_ROWS: usize = 5000;
/// Commits in flight at once. Two keep one commit's fsync overlapping the
/// next one's gathering; more only split a moderate load into smaller
/// commits (measured at 4,000 single creates/s: four committers took ~4
/// rows per commit), and each commit costs a pool checkout, a statement
/// and a Redis write, whatever its size.
pub const COMMITTERS: usize = 2;

struct Job {
    writes: Writes,
    reply: oneshot::Sender<Result<Committed, Arc<StoreError>>>,
}

/// Handle to the committers. Cheap to clone.
#[derive(Clone)]
pub(super) struct Committer {
    jobs: mpsc::Sender<Job>,
}

/// The committers' end of the queue.
pub(super) struct Queue(Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>);

impl Committer {
    pub(super) fn channel() -> (Committer, Queue) {
        let (jobs, queue) = mpsc::channel(4096);
        (
            Committer { jobs },
            Queue(Arc::new(tokio::sync::Mutex::new(queue))),
        )
    }

    /// Commits `writes` (with whatever else is queued) and returns their
    /// fate, in the order given.
    pub(super) async fn submit(&self, writes: Writes) -> Result<Committed, ServiceError> {
        if writes.is_empty() {
            return Ok(Committed::default());
        }
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { writes, reply })
            .await
            .map_err(|_| ServiceError::Lost)?;
        match answer.await {
            Ok(Ok(committed)) => Ok(committed),
            Ok(Err(error)) => Err(ServiceError::Store(error)),
            Err(_) => Err(ServiceError::Lost),
        }
    }
}

/// Starts the committers. Each holds a handle to the service, and so to its
/// own queue: they run as long as the runtime does.
pub(super) fn spawn(service: Service, queue: Queue) {
    for _ in 0..COMMITTERS {
        tokio::spawn(run(service.clone(), queue.0.clone()));
    }
}

async fn run(service: Service, queue: Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>) {
    loop {
        // Take what is queued, then commit without holding the queue, so the
        // next committer can gather the jobs that arrive meanwhile.
        let jobs = {
            let mut queue = queue.lock().await;
            let Some(first) = queue.recv().await else {
                return;
            };
            let mut rows = first.writes.rows();
            let mut jobs = vec![first];
            while rows < MAX_ROWS {
                match queue.try_recv() {
                    Ok(job) => {
                        rows += job.writes.rows();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
            jobs
        };
        // Move the items out of their jobs: bodies are never copied.
        let mut writes = Writes::default();
        let mut replies = Vec::with_capacity(jobs.len());
        for job in jobs {
            replies.push((job.writes.counts(), job.reply));
            writes.append(job.writes);
        }
        let handing = service.handing_off(&writes);
        writes.endpoint_versions = handing.is_some();
        match service.store.commit(writes).await {
            Ok(committed) => {
                let due = committed.due();
                metrics::counter!("hookd_notifications_created_total").increment(due.len() as u64);
                match handing {
                    Some(due_by) => service.index_or_hand_off(due, &committed, due_by).await,
                    None => service.index_due(&due).await,
                }
                service.signal_pull(&committed.pulled()).await;
                let counts: Vec<_> = replies.iter().map(|(counts, _)| *counts).collect();
                let mut committed = committed.split(counts.into_iter());
                for (_, reply) in replies {
                    let _ = reply.send(Ok(committed.next().unwrap_or_default()));
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
