//! What a pass over the server mode's daily partitions did (docs/design.md §13,
//! docs/partitioning.md): the store makes the days ahead and drops the days
//! retention lets go; housekeeping reports it. A store without partitions
//! (SQLite) does nothing and reports nothing.

/// One pass of partition upkeep.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PartitionUpkeep {
    /// Partitions made (of every table).
    pub created: usize,
    /// The partitions of `notifications` dropped, with those of `attempts`
    /// that go with them.
    pub dropped: Vec<String>,
    /// Whether a DEFAULT partition holds rows: ids outside every day's
    /// range (a partition missing, a clock far off, old rows copied in).
    /// Nothing is refused, but those rows are only purged row by row.
    pub default_rows: bool,
    /// Whether another process held the upkeep (it did the pass instead).
    pub skipped: bool,
    /// The dropped days' key rows deleted, after their tables were dropped
    /// (a row-by-row delete, in batches: the one part of retention that
    /// grows with the day's rows), and how long that took.
    pub keys_deleted: u64,
    pub keys_took: std::time::Duration,
}
