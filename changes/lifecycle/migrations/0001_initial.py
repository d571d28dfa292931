# The life of a change was part of the declared state (`changes`): its table stays, and this app
# takes the model over in state only.

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
                    name='ChangeRun',
                    fields=[
                        ('run_id', models.CharField(max_length=200, primary_key=True, serialize=False)),
                        ('repo_url', models.CharField(max_length=500)),
                        ('branch', models.CharField(max_length=200)),
                        ('base', models.CharField(default='main', max_length=200)),
                        ('title', models.CharField(max_length=200)),
                        ('description', models.TextField(blank=True, default='')),
                        ('pull_request', models.CharField(blank=True, default='', max_length=500)),
                        ('opened_by', models.CharField(max_length=150)),
                        ('opened_at', models.DateTimeField()),
                        ('change_code', models.CharField(max_length=64)),
                        ('state', models.CharField(choices=[('opened', 'opened'), ('checking', 'checking'), ('checks_failed', 'checks failed'), ('checks_passed', 'checks passed'), ('merged', 'merged'), ('deployed', 'deployed')], default='opened', max_length=32)),
                        ('head_sha', models.CharField(blank=True, default='', max_length=64)),
                        ('checks', models.JSONField(blank=True, default=dict)),
                        ('plan', models.JSONField(blank=True, default=dict)),
                        ('merged_sha', models.CharField(blank=True, default='', max_length=64)),
                        ('deployed_revision', models.CharField(blank=True, default='', max_length=64)),
                        ('deployed_version', models.CharField(blank=True, default='', max_length=200)),
                        ('updated_at', models.DateTimeField()),
                    ],
                    options={
                        'db_table': 'changes_changerun',
                        'verbose_name': 'change',
                        'verbose_name_plural': 'changes',
                        'ordering': ['-opened_at'],
                        'indexes': [models.Index(fields=['branch', '-opened_at'], name='change_branch')],
                    },
                ),
            ],
            database_operations=[],
        ),
        # Its content type (and so its permissions) follows it to this app's label.
        migrations.RunPython(relabel(["changerun"], old="changes", new="lifecycle"),
                             relabel(["changerun"], old="lifecycle", new="changes")),
    ]
