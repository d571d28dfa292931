"""The ledger as hash chains, and triggers that refuse changing it on both databases.

- Each record gets `chain_index`, `prev_hash` and `hash` (see `runs.ledger`); records written
  before this migration are linked here, per run in (seq, id) order.
- PostgreSQL: a BEFORE INSERT trigger links every new record into its run's chain (under the run
  row's lock), and a BEFORE TRUNCATE trigger refuses truncation, beside 0002's refusal of UPDATE
  and DELETE. The runtime's role may not alter the table, so it cannot disable them
  (`manage.py db_roles`).
- SQLite: triggers refuse UPDATE and DELETE of a record. A later migration that rebuilds this table
  on SQLite (most AlterField) drops them: it must create them again (the tests check they exist).
"""
from django.db import migrations, models

PG_CREATE = """
CREATE OR REPLACE FUNCTION sanoma_ledger_chain() RETURNS trigger AS $$
DECLARE
    last_hash text;
    last_index integer;
BEGIN
    -- The run's chain has one writer at a time: the run row's lock, held to the end of the
    -- transaction. The query below runs after the lock is granted and, in a trigger, sees every
    -- record committed by then.
    PERFORM 1 FROM runs_run WHERE id = NEW.run_id FOR NO KEY UPDATE;
    SELECT hash, chain_index INTO last_hash, last_index FROM runs_ledgerrecord
        WHERE run_id = NEW.run_id ORDER BY chain_index DESC LIMIT 1;
    NEW.chain_index := COALESCE(last_index + 1, 0);
    NEW.prev_hash := COALESCE(last_hash, '');
    -- The insert carries the record's content digest in `hash`; the stored hash chains it.
    NEW.hash := encode(sha256(convert_to(NEW.prev_hash || NEW.hash, 'UTF8')), 'hex');
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER runs_ledgerrecord_chain
    BEFORE INSERT ON runs_ledgerrecord
    FOR EACH ROW EXECUTE FUNCTION sanoma_ledger_chain();
CREATE OR REPLACE FUNCTION sanoma_ledger_no_truncate() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: TRUNCATE is refused'
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER runs_ledgerrecord_no_truncate
    BEFORE TRUNCATE ON runs_ledgerrecord
    FOR EACH STATEMENT EXECUTE FUNCTION sanoma_ledger_no_truncate();
"""
PG_DROP = """
DROP TRIGGER IF EXISTS runs_ledgerrecord_chain ON runs_ledgerrecord;
DROP FUNCTION IF EXISTS sanoma_ledger_chain();
DROP TRIGGER IF EXISTS runs_ledgerrecord_no_truncate ON runs_ledgerrecord;
DROP FUNCTION IF EXISTS sanoma_ledger_no_truncate();
"""
SQLITE_CREATE = [
    """CREATE TRIGGER IF NOT EXISTS runs_ledgerrecord_no_update BEFORE UPDATE ON runs_ledgerrecord
       BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE of a record is refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS runs_ledgerrecord_no_delete BEFORE DELETE ON runs_ledgerrecord
       BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE of a record is refused'); END""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS runs_ledgerrecord_no_update",
    "DROP TRIGGER IF EXISTS runs_ledgerrecord_no_delete",
]


def link_existing(apps, schema_editor):
    """Records written before the chain: linked per run in (seq, id) order."""
    from runs.ledger_chain import CONTENT_FIELDS, content_digest, link

    connection = schema_editor.connection
    record_model = apps.get_model("runs", "LedgerRecord")
    rows = list(record_model.objects.using(connection.alias).order_by("run_id", "seq", "id")
                .values("id", *CONTENT_FIELDS))
    if not rows:
        return
    if connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER runs_ledgerrecord_append_only")
    run_id, index, prev = None, 0, ""
    with connection.cursor() as cursor:
        for row in rows:
            if row["run_id"] != run_id:
                run_id, index, prev = row["run_id"], 0, ""
            digest = link(prev, content_digest(row))
            cursor.execute("UPDATE runs_ledgerrecord SET chain_index = %s, prev_hash = %s, hash = %s WHERE id = %s",
                           [index, prev, digest, row["id"]])
            index, prev = index + 1, digest
    if connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER runs_ledgerrecord_append_only")


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_CREATE, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_DROP, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("runs", "0004_vocabulary_choices")]

    operations = [
        migrations.AddField(model_name="ledgerrecord", name="chain_index", field=models.IntegerField(default=0)),
        migrations.AddField(model_name="ledgerrecord", name="hash",
                            field=models.CharField(default="", max_length=64)),
        migrations.AddField(model_name="ledgerrecord", name="prev_hash",
                            field=models.CharField(blank=True, default="", max_length=64)),
        migrations.AlterField(model_name="ledgerrecord", name="run_id", field=models.CharField(max_length=200)),
        migrations.RunPython(link_existing, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="ledgerrecord",
            constraint=models.UniqueConstraint(fields=("run_id", "chain_index"), name="ledger_run_chain"),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
