"""Cases get a review status (issue 14). Existing rows:

- MANUAL (a reviewer promoted the session) → approved, reviewed by whoever created it;
- AUTO (a user's "useful", never reviewed) → candidate, and its title, until now the raw question, is
  rebuilt from its first verified root cause; an AUTO row without a root cause has nothing verified
  to serve → rejected.
"""

from django.db import migrations, models

# diagnosis.services.cases.TITLE_CHARS at the time of writing (migrations keep their own copy).
TITLE_CHARS = 100


def _title_from_root_cause(root_cause: str) -> str:
    first = next((line.strip() for line in root_cause.splitlines() if line.strip()), "")
    return first.removeprefix("- ").strip()[:TITLE_CHARS]


def statuses_for_existing_cases(apps, schema_editor):
    CaseLibrary = apps.get_model("caselib", "CaseLibrary")
    for case in CaseLibrary.objects.filter(source_type="MANUAL"):
        CaseLibrary.objects.filter(pk=case.pk).update(
            status="approved", reviewed_by=case.created_by, reviewed_at=case.created_at
        )
    for case in CaseLibrary.objects.filter(source_type="AUTO"):
        title = _title_from_root_cause(case.root_cause)
        if title:
            CaseLibrary.objects.filter(pk=case.pk).update(status="candidate", title=title)
        else:
            CaseLibrary.objects.filter(pk=case.pk).update(status="rejected", title="（无已核实的结论）")


class Migration(migrations.Migration):

    dependencies = [
        ('caselib', '0001_initial'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='caselibrary',
            options={'ordering': ['-created_at'], 'permissions': [('review_case', 'Can approve or reject candidate cases')], 'verbose_name': '案例', 'verbose_name_plural': '案例库'},
        ),
        migrations.AddField(
            model_name='caselibrary',
            name='reviewed_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='审核时间'),
        ),
        migrations.AddField(
            model_name='caselibrary',
            name='reviewed_by',
            field=models.CharField(blank=True, default='', max_length=150, verbose_name='审核人'),
        ),
        migrations.AddField(
            model_name='caselibrary',
            name='status',
            field=models.CharField(choices=[('candidate', '待审核'), ('approved', '已批准'), ('rejected', '已驳回')], db_index=True, default='candidate', max_length=16, verbose_name='审核状态'),
        ),
        migrations.RunPython(statuses_for_existing_cases, migrations.RunPython.noop),
    ]
