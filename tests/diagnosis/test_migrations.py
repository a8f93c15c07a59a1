"""The diagnosis data migrations: error ids for earlier failures (0007), the alerts tool's new name (0011)."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def latest_schema_after():
    """Each test migrates back; the tests after it (in the same database) need every migration."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def migrated(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


def migrate(target):
    return migrated(target).get_model("diagnosis", "DiagnosisSession")


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


def test_recorded_alert_calls_take_the_tools_new_name_and_the_reverse_gives_the_old_one_back():
    before, after = ("diagnosis", "0010_session_kind_tool"), ("diagnosis", "0011_alerts_tool_renamed")
    old = migrated(before)
    session = old.get_model("diagnosis", "DiagnosisSession").objects.create(session_id="s", query="q")
    calls = old.get_model("diagnosis", "ToolInvocation").objects
    alerts = calls.create(session=session, tool_name="query_metrics").pk
    series = calls.create(session=session, tool_name="query_promql").pk

    def names(apps):
        invocations = apps.get_model("diagnosis", "ToolInvocation").objects
        return dict(invocations.values_list("pk", "tool_name"))

    assert names(migrated(after)) == {alerts: "query_alerts", series: "query_promql"}
    assert names(migrated(before)) == {alerts: "query_metrics", series: "query_promql"}
    assert names(migrated(after)) == {alerts: "query_alerts", series: "query_promql"}
