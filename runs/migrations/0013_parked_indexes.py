"""Runs listed by status, newest first, from an index (status, created_at DESC, id DESC): the first
page of a status stays one index range however many runs are parked in other statuses (or in it),
and the status' counts read the index alone. It replaces status' own index, which it begins with."""

from django.db import migrations, models

STATUSES = [("queued", "Queued"), ("running", "Running"), ("waiting", "Waiting"), ("finished", "Finished"),
            ("failed", "Failed"), ("cancelled", "Cancelled")]


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0012_deploys_and_versions"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(choices=STATUSES, default="queued", max_length=16),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["status", "-created_at", "-id"], name="run_status_created"),
        ),
    ]
