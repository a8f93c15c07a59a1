"""Failed sessions carry an error id (issue 14): users see a stable message naming it, staff the raw
`error`. Sessions that failed before get an id and that message too, so no raw exception text stays
in an answer users read."""

import secrets

from django.db import migrations, models

# diagnosis.services.session_lifecycle.FAILED_ANSWERS at the time of writing.
FAILED_ANSWERS = {
    "chat": "诊断执行失败（错误编号 {error_id}），请稍后重试或联系管理员。",
    "aiops": "告警分析执行失败（错误编号 {error_id}），请稍后重试或联系管理员。",
}


def error_ids_for_failed_sessions(apps, schema_editor):
    DiagnosisSession = apps.get_model("diagnosis", "DiagnosisSession")
    failed = DiagnosisSession.objects.filter(status="FAILED", error_id="").exclude(error="")
    for pk, kind in failed.values_list("pk", "kind").iterator():
        error_id = secrets.token_hex(4)
        DiagnosisSession.objects.filter(pk=pk).update(
            error_id=error_id, answer=FAILED_ANSWERS.get(kind, FAILED_ANSWERS["chat"]).format(error_id=error_id)
        )


class Migration(migrations.Migration):

    dependencies = [
        ('diagnosis', '0006_desk_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='diagnosissession',
            name='error_id',
            field=models.CharField(blank=True, db_index=True, default='', max_length=16, verbose_name='错误编号'),
        ),
        migrations.RunPython(error_ids_for_failed_sessions, migrations.RunPython.noop),
    ]
