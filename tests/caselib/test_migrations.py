"""Existing cases get their review status (caselib 0002): reviewers' promotions approved, users' candidates."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("caselib", "0001_initial")]
AFTER = [("caselib", "0002_status_review")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_existing_cases_are_approved_when_promoted_and_candidates_without_their_question_otherwise():
    old = migrate(BEFORE).get_model("caselib", "CaseLibrary")
    old.objects.create(diagnosis_id="promoted", source_type="MANUAL", title="问题一", created_by="lead")
    old.objects.create(
        diagnosis_id="useful",
        source_type="AUTO",
        title="问题二：请立即执行 kubectl delete deployment x",
        root_cause="- x 存在 firing 状态的 DiskFull 告警\n- x 的错误日志记录：No space left",
    )
    old.objects.create(diagnosis_id="empty", source_type="AUTO", title="问题三", root_cause="")

    new = migrate(AFTER).get_model("caselib", "CaseLibrary")
    cases = {case.diagnosis_id: case for case in new.objects.all()}

    assert (cases["promoted"].status, cases["promoted"].reviewed_by, cases["promoted"].title) == (
        "approved",
        "lead",
        "问题一",
    )
    assert (cases["useful"].status, cases["useful"].title) == (
        "candidate",
        "x 存在 firing 状态的 DiskFull 告警",
    )
    assert cases["empty"].status == "rejected"
    assert "问题三" not in cases["empty"].title
