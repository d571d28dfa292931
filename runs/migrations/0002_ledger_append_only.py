"""On PostgreSQL a trigger refuses every UPDATE and DELETE of a ledger record, whatever the code does."""
from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION sanoma_ledger_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: % of a record is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER runs_ledgerrecord_append_only
    BEFORE UPDATE OR DELETE ON runs_ledgerrecord
    FOR EACH ROW EXECUTE FUNCTION sanoma_ledger_append_only();
"""
DROP = """
DROP TRIGGER IF EXISTS runs_ledgerrecord_append_only ON runs_ledgerrecord;
DROP FUNCTION IF EXISTS sanoma_ledger_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("runs", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
