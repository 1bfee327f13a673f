//! Wiring: connect the stores, bind the listener, run the API and the
//! dispatcher until shutdown. Tests build an `App` on port 0 the same way.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::api::{self, AppState};
use crate::config::{Mode, Settings};
use crate::dispatcher::stop::stop_within;
use crate::dispatcher::Dispatcher;
use crate::due::memory::MemoryIndex;
use crate::due::SharedIndex;
use crate::limiter::SharedLimiter;
use crate::sender::Sender;
use crate::service::recover::Recovery;
use crate::service::Service;
#[cfg(feature = "server")]
use crate::store::postgres::PgStore;
#[cfg(feature = "server")]
use crate::store::replica::ReplicaReads;
use crate::store::sealing::Sealing;
use crate::store::seams::{
    BreakerStore, DeliveryStore, HousekeepingStore, OperationStore, PullStore, ReadStore,
    ResealRows, SharedBreaker, SharedDelivery, SharedHousekeeping, SharedReads, WriteStore,
};

mod embedded;

use embedded::forgetting_old_values;
pub use embedded::open_embedded;

/// Which parts of hookd this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// API and dispatcher.
    All,
    /// The REST API only.
    Api,
    /// The dispatcher only (plus /healthz and /readyz).
    Dispatcher,
}

impl Role {
    /// As written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Role::All => "all",
            Role::Api => "api",
            Role::Dispatcher => "dispatcher",
        }
    }
}

/// A store hookd can run on: every seam, and the rows a reseal walks.
/// PostgreSQL (`PgStore`) and SQLite (`SqliteStore`) are two; the app sees
/// either only through the seams, behind the sealing wrapper.
pub trait Backend:
    WriteStore
    + ReadStore
    + DeliveryStore
    + HousekeepingStore
    + PullStore
    + ResealRows
    + BreakerStore
    + OperationStore
    + Clone
{
}

impl<T> Backend for T where
    T: WriteStore
        + ReadStore
        + DeliveryStore
        + HousekeepingStore
        + PullStore
        + ResealRows
        + BreakerStore
        + OperationStore
        + Clone
{
}

/// The background walk that reseals rows under the current key, made for
/// the backend the app was built on.
type Reseal = Box<dyn FnOnce(CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

pub struct App {
    state: AppState,
    /// The store, sealing at rest, as the dispatcher sees it.
    delivery: SharedDelivery,
    housekeeping: SharedHousekeeping,
    breaker: SharedBreaker,
    /// The rate limiter, shared as widely as the due index is.
    limiter: SharedLimiter,
    reseal: Reseal,
    listener: TcpListener,
    /// `server.metrics_listen`, bound.
    metrics_listener: Option<TcpListener>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    role: Role,
    /// Opened by `build`: closed when `run` ends.
    owns_store: bool,
}

impl App {
    /// Opens the store the settings choose (`Settings::mode`): in server
    /// mode connects to PostgreSQL (failing if unreachable) and prepares the
    /// Redis index; in embedded mode locks and opens the SQLite file and
    /// makes an index in this process. Migrations are applied if configured
    /// (always, embedded). Then binds the listener.
    pub async fn build(settings: Settings, role: Role) -> anyhow::Result<Self> {
        for warning in settings.warnings() {
            tracing::warn!("{warning}");
        }
        let mode = settings.mode()?;
        if mode != Mode::Server && role != Role::All {
            anyhow::bail!(
                "--role {} needs server mode (database.url and redis.url): in embedded mode one process runs the API and the dispatcher",
                role.name()
            );
        }
        let address = settings.bind_address();
        if settings.api.tokens.is_empty() {
            tracing::warn!(
                configured = %settings.server.listen, %address,
                "api.tokens is empty: the API has no authentication, so hookd listens on loopback only"
            );
        }
        let app = match mode {
            #[cfg(feature = "server")]
            Mode::Server => {
                let store = PgStore::connect(&settings.database)
                    .await
                    .context("cannot use the database (database.url)")?
                    .counting_minutes(settings.stats.count_minutes);
                let due: SharedIndex = crate::due::redis::open(&settings.redis).await?;
                let probe = due.clone();
                tokio::spawn(async move {
                    for warning in probe.warnings().await {
                        tracing::warn!("{warning}");
                    }
                });
                let listener = listen(&settings, address)?;
                Self::try_with_parts(settings, store, due, listener, role)?
            }
            // `Settings::mode` chooses no server mode in this build.
            #[cfg(not(feature = "server"))]
            Mode::Server => anyhow::bail!(crate::config::NO_SERVER_MODE),
            Mode::Embedded { path } => {
                let store = open_embedded(&settings, &path, true).await?;
                tracing::info!(database = %path.display(), "embedded mode: SQLite, the due index in this process");
                let due: SharedIndex = Arc::new(MemoryIndex::new());
                let listener = listen(&settings, address)?;
                let sealing = !settings.secrets.keys.is_empty();
                let mut app = Self::try_with_parts(settings, store.clone(), due, listener, role)?;
                if sealing {
                    app.reseal = forgetting_old_values(app.reseal, store);
                }
                app
            }
        };
        Ok(Self {
            owns_store: true,
            ..app
        })
    }

    /// Builds from parts made elsewhere: tests inject their own pool and a
    /// listener on port 0. Call it inside a Tokio runtime: it starts the
    /// group-commit task.
    pub fn with_parts(
        settings: Settings,
        store: impl Backend,
        due: SharedIndex,
        listener: TcpListener,
        role: Role,
    ) -> Self {
        Self::try_with_parts(settings, store, due, listener, role)
            .expect("server.metrics_listen and the TLS files can be used")
    }

    /// `with_parts`, failing when `server.metrics_listen` cannot be bound
    /// or the TLS files cannot be read.
    pub fn try_with_parts<S: Backend>(
        settings: Settings,
        store: S,
        due: SharedIndex,
        listener: TcpListener,
        role: Role,
    ) -> anyhow::Result<Self> {
        let tls = crate::server::tls_acceptor(&settings.server).map_err(anyhow::Error::msg)?;
        let metrics_listener = match settings.server.metrics_listen {
            Some(address) => {
                let listener = crate::server::listen(address, settings.server.listen_backlog)
                    .with_context(|| {
                        format!("cannot listen on {address} (server.metrics_listen)")
                    })?;
                Some(listener)
            }
            None => None,
        };
        crate::telemetry::metrics();
        // Every part sees the store through the wrapper: PostgreSQL holds
        // only ciphertext, the parts only plaintext.
        let store = Sealing::new(store, settings.keyring());
        let reads = replica_reads(&settings, &store)?;
        let settings = Arc::new(settings);
        let service = Service::start(
            Arc::new(store.clone()),
            Arc::new(store.clone()),
            due.clone(),
            settings.clone(),
        );
        let limiter = crate::limiter::beside(&*due);
        let spans = crate::telemetry::spans::Spans::start(&settings.telemetry)?;
        let state = AppState::new(crate::api::Handles {
            recovery: Recovery::new(Arc::new(store.clone()), service.clone()),
            service,
            store: reads,
            breaker: Arc::new(store.clone()),
            due,
            limiter: limiter.clone(),
            auth: Arc::new(crate::api::auth::Auth::new(&settings.api)),
            settings,
            readiness: Default::default(),
            in_flight: Default::default(),
            spans,
        });
        let resealed = store.clone();
        Ok(Self {
            state,
            delivery: Arc::new(store.clone()),
            breaker: Arc::new(store.clone()),
            housekeeping: Arc::new(store),
            limiter,
            reseal: Box::new(move |token| {
                Box::pin(crate::store::sealing::reseal::run(resealed, token))
            }),
            listener,
            metrics_listener,
            tls,
            role,
            owns_store: false,
        })
    }

    /// Where `server.metrics_listen` is bound, if it is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves (and dispatches, by role) until `shutdown` completes. Then the
    /// API stops accepting requests and finishes those in progress, and the
    /// dispatcher stops claiming, finishes or gives back its deliveries and
    /// flushes their outcomes.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (address, metrics) = (self.local_addr(), self.metrics_addr());
        let token = CancellationToken::new();
        let trigger = token.clone();
        tokio::spawn(async move {
            shutdown.await;
            trigger.cancel();
        });
        // An index held in this process starts empty: it is filled from the
        // store before anything is claimed (Redis heals itself instead, in
        // housekeeping, when its marker says it lost what it held).
        if self.state.due.recovery().is_none() {
            let filled =
                crate::dispatcher::refill::fill(&*self.state.due, &*self.housekeeping, &token)
                    .await
                    .context("cannot fill the due index from the store")?;
            if let Some(filled) = filled {
                tracing::info!(
                    pending = filled.added,
                    took_ms = filled.took.as_millis() as u64,
                    "filled the due index from the store"
                );
            }
        }
        // Rows written before keys were set (or under a retired key) are
        // sealed under the current key while hookd serves.
        let resealing = tokio::spawn((self.reseal)(token.clone()));
        // Which due index owns the database (`domain::index_owner`): in
        // every process on a shared index, the API's hand-offs too. The
        // beats end after the dispatcher stopped: until its last delivery
        // ended, no other index may take the database over.
        let beats_end = CancellationToken::new();
        let settings = self.state.settings.clone();
        let dispatching =
            matches!(self.role, Role::All | Role::Dispatcher) && settings.dispatcher.enabled;
        let beating = crate::dispatcher::index_owner::start(
            self.housekeeping.clone(),
            self.state.due.clone(),
            dispatching,
            beats_end.clone(),
        )
        .await;
        // Pull consumers' signals and leases: wherever the API or the
        // dispatcher runs.
        let pulling = tokio::spawn(self.state.service.clone().run_pull(token.clone()));
        // Recover operations: in every process, one at a time each under
        // a lease, so that any process left running finishes them.
        let sole = self.state.store.kind() == crate::store::StoreKind::Sqlite;
        let recovering = tokio::spawn(self.state.recovery.clone().run(token.clone(), sole));
        let dispatcher = if dispatching {
            let sender = Sender::new(&settings.sender)?
                .with_clock(self.delivery.clock().clone())
                .with_spans(self.state.spans.clone());
            let dispatcher = Dispatcher::new(
                self.delivery.clone(),
                self.housekeeping.clone(),
                self.state.due.clone(),
                self.limiter.clone(),
                sender,
                settings.clone(),
                self.state.service.wake(),
                self.state.service.handoff(),
                self.breaker.clone(),
            );
            Some(tokio::spawn(dispatcher.run(token.clone())))
        } else {
            None
        };
        let router = match self.role {
            // The console's files need no token: they hold no data.
            Role::All | Role::Api => api::router(self.state.clone(), crate::console::router()),
            Role::Dispatcher => api::operations_only_router(self.state.clone()),
        };
        tracing::info!(%address, metrics = ?metrics, tls = self.tls.is_some(), role = ?self.role, dispatching, "hookd ready");
        let operations = self.metrics_listener.map(|listener| {
            let router = api::operations_only_router(self.state.clone());
            let (settings, token) = (settings.clone(), token.clone());
            tokio::spawn(async move {
                crate::server::serve(listener, router, &settings.server, None, token).await;
            })
        });
        crate::server::serve(
            self.listener,
            router,
            &settings.server,
            self.tls,
            token.clone(),
        )
        .await;
        token.cancel();
        if let Some(operations) = operations {
            let _ = operations.await;
        }
        let dispatched = match dispatcher {
            Some(dispatcher) => dispatcher.await.context("dispatcher task failed"),
            None => Ok(()),
        };
        beats_end.cancel();
        dispatched?;
        let grace = Duration::from_millis(settings.server.shutdown_timeout_ms);
        // The spans of the last requests and attempts, before they are
        // lost; a collector that hangs holds shutdown 5 s at most.
        self.state
            .spans
            .flush(grace.min(Duration::from_secs(5)))
            .await;
        // Each stops at its next step, unless a store keeps that step
        // waiting (a stalled PostgreSQL holds a query for as long as it
        // stalls): shutdown waits for none of them past the grace.
        stop_within(grace, "resealing", resealing).await;
        stop_within(grace, "pull", pulling).await;
        stop_within(grace, "recover", recovering).await;
        stop_within(grace, "the due index's beats", beating).await;
        // Last, when this app opened the store: every part that wrote is
        // done. (A store given to `with_parts` may outlive the app.) A
        // connection a stalled query still holds is not waited for.
        if self.owns_store
            && tokio::time::timeout(grace, self.state.store.close())
                .await
                .is_err()
        {
            tracing::warn!("the store did not close in time (a query does not answer)");
        }
        Ok(())
    }
}

/// The store the API reads through: `database.read_url`'s replica where it
/// is set (server mode), read-your-writes falling back to `store`;
/// `store` itself otherwise.
fn replica_reads<S: Backend>(
    settings: &Settings,
    store: &Sealing<S>,
) -> anyhow::Result<SharedReads> {
    #[cfg(feature = "server")]
    if let Some(replica) =
        PgStore::replica(&settings.database).context("invalid database.read_url")?
    {
        return Ok(Arc::new(ReplicaReads::new(
            Sealing::new(replica, settings.keyring()),
            store.clone(),
        )));
    }
    #[cfg(not(feature = "server"))]
    let _ = settings;
    Ok(Arc::new(store.clone()))
}

fn listen(settings: &Settings, address: SocketAddr) -> anyhow::Result<TcpListener> {
    crate::server::listen(address, settings.server.listen_backlog)
        .with_context(|| format!("cannot listen on {address} (server.listen)"))
}

/// Completes on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown requested");
}
