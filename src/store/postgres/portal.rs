//! Portal links' revocation: each endpoint's generation, and each owner's
//! (`portal_owners`), which a revoke raises and nothing lowers, so that a
//! link issued before stays refused whatever becomes of the endpoints.
//! Each revoke is one statement: the raise and the owner's row together.

use uuid::Uuid;

use super::PgStore;
use crate::store::endpoints::EndpointRef;
use crate::store::StoreError;

impl PgStore {
    /// See `WriteStore::revoke_portal_links`. Not a change of what a
    /// delivery uses: the version stays.
    pub async fn revoke_portal_links(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<(Uuid, i32)>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let (id, uid) = by.as_params();
        Ok(sqlx::query_as(
            "WITH raised AS ( \
                 UPDATE endpoints e SET portal_generation = GREATEST(e.portal_generation, \
                     COALESCE((SELECT max(o.portal_generation) FROM endpoints o \
                         WHERE o.owner = e.owner AND o.deleted_at IS NULL AND NOT o.managed), 0), \
                     COALESCE((SELECT p.generation FROM portal_owners p WHERE p.owner = e.owner), 0)) + 1 \
                 WHERE (e.id = $1 OR e.uid = $2) AND e.deleted_at IS NULL AND NOT e.managed \
                 RETURNING e.id, e.owner, e.portal_generation \
             ), kept AS ( \
                 INSERT INTO portal_owners AS p (owner, generation) \
                 SELECT owner, portal_generation FROM raised WHERE owner IS NOT NULL \
                 ON CONFLICT (owner) DO UPDATE SET generation = GREATEST(p.generation, EXCLUDED.generation) \
             ) SELECT id, portal_generation FROM raised",
        )
        .bind(id)
        .bind(uid)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// See `WriteStore::revoke_owner_portal_links`.
    pub async fn revoke_owner_portal_links(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        let raised: Option<i32> = sqlx::query_scalar(
            "WITH raised AS ( \
                 UPDATE endpoints SET portal_generation = GREATEST( \
                     (SELECT max(o.portal_generation) FROM endpoints o \
                         WHERE o.owner = $1 AND o.deleted_at IS NULL AND NOT o.managed), \
                     COALESCE((SELECT p.generation FROM portal_owners p WHERE p.owner = $1), 0)) + 1 \
                 WHERE owner = $1 AND deleted_at IS NULL AND NOT managed \
                 RETURNING portal_generation \
             ) INSERT INTO portal_owners AS p (owner, generation) \
             SELECT $1, max(portal_generation) FROM raised HAVING count(*) > 0 \
             ON CONFLICT (owner) DO UPDATE SET generation = GREATEST(p.generation, EXCLUDED.generation) \
             RETURNING generation",
        )
        .bind(owner)
        .fetch_optional(&self.pool)
        .await?;
        Ok(raised)
    }

    /// See `WriteStore::owner_portal_generation`.
    pub async fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT CASE WHEN count(*) > 0 THEN GREATEST(max(e.portal_generation), \
                 COALESCE((SELECT p.generation FROM portal_owners p WHERE p.owner = $1), 0)) END \
             FROM endpoints e WHERE e.owner = $1 AND e.deleted_at IS NULL AND NOT e.managed",
        )
        .bind(owner)
        .fetch_one(&self.pool)
        .await?)
    }
}
