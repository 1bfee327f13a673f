//! A task that repeats (every second, every tick) and fails while a store
//! is down says so once per run of failures, not every time it tries: the
//! failure that begins a run at WARN, the rest at DEBUG, and the success
//! that ends it at INFO. A database down for ten minutes is then a few
//! lines, not thousands.

/// Whether a repeated task's last try failed.
#[derive(Debug, Default)]
pub struct FailureRun {
    failing: bool,
}

impl FailureRun {
    /// Notes a failure; true if it begins a run (the one to warn of).
    pub fn failed(&mut self) -> bool {
        !std::mem::replace(&mut self.failing, true)
    }

    /// Notes a success; true if it ends a run (say it works again).
    #[must_use]
    pub fn succeeded(&mut self) -> bool {
        std::mem::take(&mut self.failing)
    }
}

/// `tracing::warn!` for the failure that begins a run of `$run`
/// (`FailureRun::failed`), `tracing::debug!` for the rest.
macro_rules! warn_once_per_run {
    ($run:expr, $($arg:tt)+) => {
        if $run.failed() {
            ::tracing::warn!($($arg)+)
        } else {
            ::tracing::debug!($($arg)+)
        }
    };
}
pub(crate) use warn_once_per_run;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_failures_begins_once_and_ends_once() {
        let mut run = FailureRun::default();
        assert!(!run.succeeded(), "no run to end");
        assert!(run.failed(), "the first failure begins a run");
        assert!(!run.failed(), "the second goes on with it");
        assert!(run.succeeded(), "a success ends it");
        assert!(!run.succeeded());
        assert!(run.failed(), "the next failure begins a new run");
    }
}
