//! Portal links' revocation: each endpoint's generation, and each owner's
//! (`portal_owners`), which a revoke raises and nothing lowers, so that a
//! link issued before stays refused whatever becomes of the endpoints.

use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, SqliteConnection};
use uuid::Uuid;

use super::endpoints::{bind_named, named};
use super::errors::cause;
use super::{store_error, SqliteStore};
use crate::store::endpoints::EndpointRef;
use crate::store::StoreError;

impl SqliteStore {
    /// See `WriteStore::revoke_portal_links`. Not a change of what a
    /// delivery uses: the version stays.
    pub async fn revoke_portal_links(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<(Uuid, i32)>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let sql = format!(
            "UPDATE endpoints SET portal_generation = MAX(portal_generation, \
                 COALESCE((SELECT MAX(o.portal_generation) FROM endpoints o \
                     WHERE o.owner = endpoints.owner AND o.deleted_at IS NULL AND o.managed = 0), 0), \
                 COALESCE((SELECT p.generation FROM portal_owners p WHERE p.owner = endpoints.owner), 0)) + 1 \
             WHERE {} RETURNING id, owner, portal_generation",
            named(by)
        );
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let row = bind_named(sqlx::query(AssertSqlSafe(sql)), by)
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let (id, owner, generation) =
            <(Uuid, Option<String>, i32) as sqlx::FromRow<SqliteRow>>::from_row(&row)
                .map_err(|e| StoreError::Database(cause(e)))?;
        // Its owner's links are refused too, and stay so once it is gone.
        if let Some(owner) = &owner {
            keep_owner_generation(&mut tx, owner, generation).await?;
        }
        tx.commit().await.map_err(store_error)?;
        Ok(Some((id, generation)))
    }

    /// See `WriteStore::revoke_owner_portal_links`.
    pub async fn revoke_owner_portal_links(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let raised: Vec<i32> = sqlx::query_scalar(
            "UPDATE endpoints SET portal_generation = MAX( \
                 (SELECT MAX(o.portal_generation) FROM endpoints o \
                     WHERE o.owner = ?1 AND o.deleted_at IS NULL AND o.managed = 0), \
                 IFNULL((SELECT p.generation FROM portal_owners p WHERE p.owner = ?1), 0)) + 1 \
             WHERE owner = ?1 AND deleted_at IS NULL AND managed = 0 \
             RETURNING portal_generation",
        )
        .bind(owner)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
        let Some(&generation) = raised.iter().max() else {
            return Ok(None);
        };
        let kept = keep_owner_generation(&mut tx, owner, generation).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(Some(kept))
    }

    /// See `WriteStore::owner_portal_generation`.
    pub async fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        sqlx::query_scalar(
            "SELECT CASE WHEN COUNT(*) > 0 THEN MAX(MAX(e.portal_generation), \
                 IFNULL((SELECT p.generation FROM portal_owners p WHERE p.owner = ?1), 0)) END \
             FROM endpoints e WHERE e.owner = ?1 AND e.deleted_at IS NULL AND e.managed = 0",
        )
        .bind(owner)
        .fetch_one(&self.reader)
        .await
        .map_err(store_error)
    }
}

/// Raises `owner`'s portal generation (`portal_owners`) to `generation` if
/// it is lower, in the revoke's transaction; the owner's generation now.
async fn keep_owner_generation(
    tx: &mut SqliteConnection,
    owner: &str,
    generation: i32,
) -> Result<i32, StoreError> {
    sqlx::query_scalar(
        "INSERT INTO portal_owners (owner, generation) VALUES (?1, ?2) \
         ON CONFLICT (owner) DO UPDATE SET generation = MAX(generation, excluded.generation) \
         RETURNING generation",
    )
    .bind(owner)
    .bind(generation)
    .fetch_one(&mut *tx)
    .await
    .map_err(store_error)
}
