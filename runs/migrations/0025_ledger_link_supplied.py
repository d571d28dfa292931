"""The ledger's link trigger fires only for a record that asks to be linked (`chain_index` < 0).

The engine's one-statement checkpoint knows its run's last record from the write before it (the
record it wrote, read back from that statement) and sends the record already linked, so the
trigger's lock and read are not paid on every step. Every other writer asks the trigger, as
before. A supplied link to a record that is not the run's last is refused by the unique
(run_id, chain_index) index, or named by `ledger verify`. PostgreSQL only: SQLite links in Python.
"""
from django.db import migrations

LINK_WHEN_ASKED = """
DROP TRIGGER IF EXISTS runs_ledgerrecord_chain ON runs_ledgerrecord;
CREATE TRIGGER runs_ledgerrecord_chain
    BEFORE INSERT ON runs_ledgerrecord
    FOR EACH ROW WHEN (NEW.chain_index < 0) EXECUTE FUNCTION sanoma_ledger_chain();
"""
LINK_ALWAYS = """
DROP TRIGGER IF EXISTS runs_ledgerrecord_chain ON runs_ledgerrecord;
CREATE TRIGGER runs_ledgerrecord_chain
    BEFORE INSERT ON runs_ledgerrecord
    FOR EACH ROW EXECUTE FUNCTION sanoma_ledger_chain();
"""


def link_when_asked(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LINK_WHEN_ASKED, params=None)


def link_always(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LINK_ALWAYS, params=None)


class Migration(migrations.Migration):
    dependencies = [("runs", "0024_approver_indexes")]

    operations = [migrations.RunPython(link_when_asked, link_always)]
