-- A notification a closing circuit released goes out on its endpoint's
-- backlog lane, as ../20261219000065_released_by_circuit.sql.
ALTER TABLE notifications ADD COLUMN released_by_circuit INTEGER NOT NULL DEFAULT 0
    CHECK (released_by_circuit IN (0, 1));
