//! How long-running work reports progress without knowing who shows it: the CLI turns these calls
//! into indicatif bars; tests pass [`NoProgress`].

/// Receives progress of a long run. Implementations must be cheap: substrates may call `advance`
/// on every event.
pub trait Progress: Sync {
    /// A new stage begins with `total` units of work (0 when unknown).
    fn stage(&self, _name: &str, _total: u64) {}
    /// The current stage's length changed (an estimate was corrected), keeping its position.
    fn set_total(&self, _total: u64) {}
    /// `done` units of the current stage are complete (absolute, not a delta).
    fn advance(&self, _done: u64) {}
    /// A short status line (for example the current tab count).
    fn message(&self, _msg: &str) {}
}

/// Progress that goes nowhere.
pub struct NoProgress;

impl Progress for NoProgress {}
