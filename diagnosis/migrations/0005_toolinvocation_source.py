from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("diagnosis", "0004_verbose_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="toolinvocation",
            name="source",
            field=models.CharField(blank=True, default="", max_length=64, verbose_name="来源"),
        ),
        migrations.AddField(
            model_name="toolinvocation",
            name="source_location",
            field=models.CharField(blank=True, default="", max_length=500, verbose_name="来源地址"),
        ),
    ]
