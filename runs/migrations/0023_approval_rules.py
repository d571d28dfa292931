from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0022_approval_announcements'),
    ]

    operations = [
        migrations.AddField(
            model_name='approval',
            name='rules',
            field=models.JSONField(blank=True, default=list),
        ),
    ]
