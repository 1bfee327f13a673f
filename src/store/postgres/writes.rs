//! The write path's commit in PostgreSQL: notifications and events of a
//! batch in one transaction.

use super::PgStore;
use crate::store::writes::Committed;
use crate::store::writes::Writes;
use crate::store::StoreError;

impl PgStore {
    /// Writes everything in one transaction. One kind without business keys
    /// needs no explicit transaction (and saves its `BEGIN`/`COMMIT` round
    /// trips): its insert is one statement, events with their deliveries
    /// included. A key may meet an existing row, which a second statement
    /// reads; that read is in the insert's transaction, so when it fails
    /// nothing of the commit is stored and the error every caller gets is
    /// true (a producer sending again would otherwise duplicate the rows
    /// without keys that were committed beside it). An ordered row takes
    /// its place in its key's order in statements after the insert, under
    /// its key's row lock (`store::ordering`): a transaction too, or a
    /// predecessor ending between them would never release it.
    pub async fn commit(&self, writes: Writes) -> Result<Committed, StoreError> {
        if !writes.keyed()
            && !writes.ordered()
            && (writes.events.is_empty() || writes.notifications.is_empty())
        {
            let mut conn = self.pool.acquire().await?;
            let (notifications, mut endpoint_versions) = self
                .insert_notifications(&mut conn, writes.notifications, writes.endpoint_versions)
                .await?;
            let events = if writes.events.is_empty() {
                Vec::new()
            } else {
                let (events, versions) = self
                    .insert_events(&mut conn, writes.events, writes.endpoint_versions)
                    .await?;
                endpoint_versions.extend(versions);
                events
            };
            return Ok(Committed {
                notifications,
                events,
                endpoint_versions,
            });
        }
        let mut tx = self.pool.begin().await?;
        let (notifications, mut endpoint_versions) = self
            .insert_notifications(&mut tx, writes.notifications, writes.endpoint_versions)
            .await?;
        let (events, versions) = self
            .insert_events(&mut tx, writes.events, writes.endpoint_versions)
            .await?;
        endpoint_versions.extend(versions);
        tx.commit().await?;
        Ok(Committed {
            notifications,
            events,
            endpoint_versions,
        })
    }
}
