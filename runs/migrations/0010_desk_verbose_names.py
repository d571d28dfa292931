# The desk names the table where starting a workflow is granted for what it is ("who may start
# workflows"); the catalog's "Workflows" is the one list of workflows. Names only: no schema change.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0009_operator_preference'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='workflowentry',
            options={'ordering': ['name'], 'permissions': [('start_workflow', 'Can start this workflow')], 'verbose_name': 'who may start a workflow', 'verbose_name_plural': 'who may start workflows'},
        ),
    ]
