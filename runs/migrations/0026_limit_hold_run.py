"""A kept start time names its run (`LimitHold.run_id`), so a worker can tell a queued run that will
call at once (new work it should not keep waiting) from one that goes to wait for its own turn.

The holds kept when this runs get their run from their holder (`<run id>:<step>`)."""
from django.db import migrations, models


def name_the_runs(apps, schema_editor):
    hold = apps.get_model("runs", "LimitHold")
    for row in hold.objects.filter(run_id="").only("pk", "holder").iterator():
        row.run_id = row.holder.rpartition(":")[0]
        row.save(update_fields=["run_id"])


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0025_ledger_link_supplied"),
    ]

    operations = [
        migrations.AddField(
            model_name="limithold",
            name="run_id",
            field=models.CharField(db_index=True, default="", max_length=200),
        ),
        migrations.RunPython(name_the_runs, migrations.RunPython.noop),
    ]
