# Credentials were part of the declared state (`changes`): their tables stay, and this app takes
# the models over in state only.

from django.db import migrations, models

from changes.relabel import relabel


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("changes", "0004_resources_page_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Credential',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=128, unique=True)),
                        ('ciphertext', models.TextField()),
                        ('key_id', models.CharField(max_length=32)),
                        ('updated_at', models.DateTimeField()),
                        ('updated_by', models.CharField(max_length=150)),
                    ],
                    options={
                        'db_table': 'changes_credential',
                        'ordering': ['name'],
                        'permissions': [('manage_credentials', "Can set and clear connectors' credentials")],
                    },
                ),
                migrations.CreateModel(
                    name='CredentialChange',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=128)),
                        ('action', models.CharField(choices=[('set', 'set'), ('cleared', 'cleared')], max_length=16)),
                        ('by', models.CharField(max_length=150)),
                        ('at', models.DateTimeField()),
                    ],
                    options={
                        'db_table': 'changes_credentialchange',
                        'ordering': ['-id'],
                        'indexes': [models.Index(fields=['name', '-id'], name='credential_change_name')],
                    },
                ),
            ],
            database_operations=[],
        ),
        # Their content types (and so their permissions) follow them to this app's label.
        migrations.RunPython(relabel(["credential", "credentialchange"], old="changes", new="credentials"),
                             relabel(["credential", "credentialchange"], old="credentials", new="changes")),
    ]
