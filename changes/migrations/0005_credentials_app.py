# Credentials became an app of their own (`credentials`), keeping their tables: they leave this
# app's state only.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('changes', '0004_resources_page_name'),
        ('credentials', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='Credential'),
                migrations.DeleteModel(name='CredentialChange'),
            ],
            database_operations=[],
        ),
    ]
