from django.db import migrations, models

# A run suspending with a wake time tells listening workers to re-arm their timer (PostgreSQL only).
DEADLINE_TRIGGER = """
CREATE OR REPLACE FUNCTION sanoma_notify_deadline() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('sanoma_deadline', NEW.wake_at::text);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS sanoma_run_deadline ON runs_run;
CREATE TRIGGER sanoma_run_deadline AFTER INSERT OR UPDATE OF wake_at ON runs_run
FOR EACH ROW WHEN (NEW.wake_at IS NOT NULL) EXECUTE FUNCTION sanoma_notify_deadline();
"""
DROP_TRIGGER = """
DROP TRIGGER IF EXISTS sanoma_run_deadline ON runs_run;
DROP FUNCTION IF EXISTS sanoma_notify_deadline();
"""


def add_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DEADLINE_TRIGGER)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_TRIGGER)


class Migration(migrations.Migration):
    initial = True

    dependencies = [("runs", "0001_initial")]

    operations = [
        migrations.CreateModel(
            name="WakeupRow",
            fields=[
                ("id", models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                ("at", models.DateTimeField(blank=True, help_text="the next deadline registered with the wakeup",
                                            null=True)),
                ("stopped_at", models.DateTimeField(blank=True, help_text="when the worker last stopped itself",
                                                    null=True)),
                ("last_error", models.TextField(blank=True, default="",
                                                help_text="why the last registration failed")),
            ],
            options={
                "verbose_name": "wakeup",
                "verbose_name_plural": "wakeup",
                "db_table": "sanoma_wakeup",
                "constraints": [models.CheckConstraint(condition=models.Q(("id", 1)), name="sanoma_wakeup_one_row")],
            },
        ),
        migrations.CreateModel(
            name="ScheduleState",
            fields=[
                ("workflow", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("last_fire_at", models.DateTimeField(blank=True, null=True)),
                ("last_run_id", models.CharField(blank=True, default="", max_length=200)),
                ("skipped", models.PositiveIntegerField(default=0,
                                                        help_text="fires skipped: the last run was unfinished")),
                ("last_skip_at", models.DateTimeField(blank=True, null=True)),
                ("backfilled", models.PositiveIntegerField(default=0,
                                                           help_text="missed fires run late, within catch-up")),
                ("missed", models.PositiveIntegerField(default=0,
                                                       help_text="missed fires older than catch-up: not run")),
                ("last_missed_at", models.DateTimeField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={"ordering": ["workflow"]},
        ),
        migrations.RunPython(add_trigger, drop_trigger),
    ]
