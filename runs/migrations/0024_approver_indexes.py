
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0023_approval_rules'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='approval',
            index=models.Index(condition=models.Q(('status', 'pending')), fields=['approver', '-requested_at', '-id'], name='approval_approver_pending'),
        ),
        migrations.AddIndex(
            model_name='approval',
            index=models.Index(fields=['approver', '-requested_at', '-id'], include=('run',), name='approval_approver'),
        ),
    ]
