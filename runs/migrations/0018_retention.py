"""Retention: `runs_prunedrun` records each run exported and removed, with its chain's head; the
ledger's refusal of DELETE (both databases) then lets through the records of such a run only.
UPDATE and TRUNCATE stay refused. The SQL is `runs.retention.triggers`'."""
from django.db import migrations, models

from runs.retention import triggers


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(triggers.PG_APPEND_ONLY, params=None)
    elif vendor == "sqlite":
        for statement in (*triggers.SQLITE_DROP, *triggers.SQLITE_CREATE):
            schema_editor.execute(statement, params=None)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(triggers.PG_APPEND_ONLY_BEFORE, params=None)
    elif vendor == "sqlite":
        old = __import__("importlib").import_module("runs.migrations.0005_ledger_chain")
        for statement in (*old.SQLITE_DROP, *old.SQLITE_CREATE):
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("runs", "0017_ledger_verification")]

    operations = [
        migrations.CreateModel(
            name="PrunedRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("run_id", models.CharField(db_index=True, max_length=200)),
                ("workflow", models.CharField(max_length=200)),
                ("status", models.CharField(max_length=16)),
                ("ended_at", models.DateTimeField()),
                ("records", models.IntegerField(help_text="how many ledger records its chain had")),
                ("head", models.CharField(blank=True, default="", help_text="its chain's last hash", max_length=64)),
                ("export_file", models.CharField(help_text="the export file's name, in the retention folder",
                                                 max_length=300)),
                ("pruned_at", models.DateTimeField()),
            ],
            options={"verbose_name": "pruned run", "ordering": ["-pruned_at", "-id"]},
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(condition=models.Q(("ended_at__isnull", False)), fields=["ended_at", "id"],
                               name="run_ended"),
        ),
        migrations.RunPython(forwards, backwards),
    ]
