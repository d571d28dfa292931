# The life of a change became an app of its own (`lifecycle`), keeping its table: it leaves this
# app's state only.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('changes', '0005_credentials_app'),
        ('lifecycle', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='ChangeRun'),
            ],
            database_operations=[],
        ),
    ]
