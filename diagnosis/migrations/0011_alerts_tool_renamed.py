"""The alerts tool is `query_alerts` (issue 35): it was `query_metrics`, a name that said metrics while it
returned alerts. Recorded calls take the new name, so filters by tool name (the admin, the selectors)
find old and new calls alike; the old name still reads everywhere else (`tools.evidence.registry`)."""

from django.db import migrations

# The names at the time of writing; the migration must not follow later renames.
FORMER, CURRENT = "query_metrics", "query_alerts"


def calls_renamed(apps, schema_editor):
    ToolInvocation = apps.get_model("diagnosis", "ToolInvocation")
    ToolInvocation.objects.filter(tool_name=FORMER).update(tool_name=CURRENT)


def calls_named_back(apps, schema_editor):
    ToolInvocation = apps.get_model("diagnosis", "ToolInvocation")
    ToolInvocation.objects.filter(tool_name=CURRENT).update(tool_name=FORMER)


class Migration(migrations.Migration):

    dependencies = [
        ('diagnosis', '0010_session_kind_tool'),
    ]

    operations = [
        migrations.RunPython(calls_renamed, calls_named_back),
    ]
