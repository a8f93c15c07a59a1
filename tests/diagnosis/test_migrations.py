"""Sessions that failed before error ids existed get one, and the stable message (diagnosis 0006)."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps.get_model("diagnosis", "DiagnosisSession")


def test_earlier_failures_lose_their_raw_answer_and_keep_the_cause_for_staff():
    old = migrate(("diagnosis", "0006_desk_indexes"))
    raw = "AttributeError: 'str' object has no attribute 'message'"
    old.objects.create(
        session_id="failed", query="q", status="FAILED", error=raw, answer=f"诊断执行失败：{raw}。"
    )
    old.objects.create(session_id="done", query="q", status="COMPLETED", answer="结论")

    new = migrate(("diagnosis", "0007_session_error_id"))
    failed, done = new.objects.get(session_id="failed"), new.objects.get(session_id="done")

    assert failed.answer == f"诊断执行失败（错误编号 {failed.error_id}），请稍后重试或联系管理员。"
    assert len(failed.error_id) == 8
    assert failed.error == raw
    assert (done.answer, done.error_id) == ("结论", "")
