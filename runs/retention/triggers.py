"""The ledger's refusals of UPDATE and DELETE, as retention leaves them: a DELETE passes only for a
record of a run whose export is recorded in `runs_prunedrun` (its head covers the record)."""
from __future__ import annotations

_REFUSED = "the ledger is append-only: % of a record is refused"

PG_APPEND_ONLY = """
CREATE OR REPLACE FUNCTION sanoma_ledger_append_only() RETURNS trigger AS $$
BEGIN
    -- Retention removes a run's records once their export is recorded with the chain's head.
    IF TG_OP = 'DELETE' AND EXISTS (
        SELECT 1 FROM runs_prunedrun p WHERE p.run_id = OLD.run_id AND OLD.chain_index < p.records
    ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the ledger is append-only: % of a record is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""
PG_APPEND_ONLY_BEFORE = """
CREATE OR REPLACE FUNCTION sanoma_ledger_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: % of a record is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS runs_ledgerrecord_no_update",
    "DROP TRIGGER IF EXISTS runs_ledgerrecord_no_delete",
]
SQLITE_CREATE = [
    """CREATE TRIGGER IF NOT EXISTS runs_ledgerrecord_no_update BEFORE UPDATE ON runs_ledgerrecord
       BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE of a record is refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS runs_ledgerrecord_no_delete BEFORE DELETE ON runs_ledgerrecord
       WHEN NOT EXISTS (SELECT 1 FROM runs_prunedrun p WHERE p.run_id = OLD.run_id AND OLD.chain_index < p.records)
       BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE of a record is refused'); END""",
]
