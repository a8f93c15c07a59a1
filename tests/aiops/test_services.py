"""AIOps analysis on the demo world: child sessions, the 告警分析报告 and aiops_rule_evaluation."""

import re
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from aiops import services
from aiops.checks import aiops_checks
from aiops.models import AlertEpisode
from aiops.report import (
    AiopsReport,
    AlertSubject,
    alert_analysis_build,
    report_build,
    report_markdown,
    report_record_of,
)
from aiops.serializers import AlertmanagerNotificationSerializer
from aiops.services import (
    aiops_concurrency,
    aiops_run,
    aiops_start,
    alertmanager_notification_receive,
)
from diagnosis import tracing
from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.answer import AnswerRef, Quote, Statement
from diagnosis.presenters.answer import stored_answer_html
from diagnosis.presenters.wording import AnswerReferences
from diagnosis.selectors.chat import incident_timelines
from diagnosis.services.sessions_maintenance import stale_sessions_fail
from tests.aiops.support import DEMO_NOW, alert, notification
from tests.databases import skip_unless_postgresql
from tests.factories import MEMORY_ALERT_DESCRIPTION, CompletedSessionFactory, DiagnosisSessionFactory
from tests.integration.stack import free_port

pytestmark = pytest.mark.django_db

Output = DiagnosisSession.OutputType
CURRENT_READING = re.compile(r"当前\s*(\d+(?:\.\d+)?(?:%|s|GB))")


@pytest.fixture(autouse=True)
def pinned_demo_world(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": DEMO_NOW, "ENGINE": "rules"}


def received(payload: dict) -> DiagnosisSession:
    serializer = AlertmanagerNotificationSerializer(data=payload)
    serializer.is_valid(raise_exception=True)
    return alertmanager_notification_receive(notification=serializer.validated_data).session


def demo_alert() -> dict:
    return alert("HighMemoryUsage", "order-service", fingerprint="b2c3d4e5f6071829")


def shop_alert() -> dict:
    labels = {"service": "Checkout API", "namespace": "shop"}
    return alert("CheckoutLatencyHigh", "Checkout API", fingerprint="c0ffee0000000001", labels=labels)


def section(report: str, alert_name: str) -> str:
    """The report's section about one alert (its heading up to the next one)."""
    match = re.search(rf"^## \d+\. {alert_name}\b.*?(?=^## |\Z)", report, re.M | re.S)
    assert match, f"no section for {alert_name}"
    return match.group(0)


def test_demo_world_report_holds_each_alerts_verified_figures_and_passes_the_rule_evaluation():
    session = aiops_run(session_pk=aiops_start().pk)

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.output_type == Output.NORMAL
    report = session.answer
    assert report.startswith("# 告警分析报告")
    assert "当前 92%" in section(report, "HighCPUUsage")
    memory = section(report, "HighMemoryUsage")
    assert "当前 91%" in memory and "3.8GB/4GB" in memory
    assert "当前 4.2s" in section(report, "SlowResponse")
    # Nothing contradicts them: every "current" reading in the report is one of the verified ones.
    assert set(CURRENT_READING.findall(report)) == {"92%", "91%", "4.2s"}
    assert "97%" not in report
    evaluation = session.self_evaluation["aiops_rule_evaluation"]
    assert evaluation["verdict"] == "pass"
    assert [(c["name"], c["passed"]) for c in evaluation["checks"]] == [
        ("final_report_exists", True),
        ("report_focused_on_alerts", True),
        ("evidence_tools_called", True),
        ("no_unrelated_alert_expanded", True),
    ]


def test_each_firing_alert_is_diagnosed_by_its_own_verified_child_session():
    session = aiops_run(session_pk=aiops_start().pk)

    children = list(session.children.order_by("id"))
    assert [child.query for child in children] == [
        '只确认 service="payment-service" 是否存在 HighCPUUsage 告警，并给出相关证据',
        '只确认 service="order-service" 是否存在 HighMemoryUsage 告警，并给出相关证据',
        '只确认 service="user-service" 是否存在 SlowResponse 告警，并给出相关证据',
    ]
    for child in children:
        assert (child.kind, child.status, child.verdict, child.output_type) == (
            DiagnosisSession.Kind.AIOPS,
            DiagnosisSession.Status.COMPLETED,
            "PASS",
            Output.NORMAL,
        )
        assert {"query_alerts", "query_logs"} <= set(
            child.tool_invocations.values_list("tool_name", flat=True)
        )
        assert "rule_evaluation" in child.self_evaluation
    assert [a["session_id"] for a in session.alert_scope["alerts"]] == [c.session_id for c in children]
    # The alerts active when the analysis started, recorded as evidence on the AIOps session itself.
    inventory = session.tool_invocations.get(tool_name="query_alerts")
    assert (inventory.input, inventory.output["total"]) == ({}, 3)
    # And each alert's runbook, looked up by its name.
    lookups = session.tool_invocations.filter(tool_name="lookup_knowledge").order_by("id")
    assert [lookup.input for lookup in lookups] == [
        {"query": "HighCPUUsage", "top_k": 10},
        {"query": "HighMemoryUsage", "top_k": 10},
        {"query": "SlowResponse", "top_k": 10},
    ]


@pytest.mark.parametrize("world_alert", [demo_alert, shop_alert])
def test_a_report_is_one_trace_with_each_alerts_session_nested_in_it(world_alert, otlp_receiver):
    report = aiops_run(session_pk=received(notification(world_alert())).pk)

    tracing.flush()
    sessions = otlp_receiver.named("invoke_agent diagnosis")
    [root] = [span for span in sessions if not span.parent_span_id]
    assert root.attributes["gen_ai.conversation.id"] == report.session_id
    assert root.attributes["diagnosis.session.kind"] == "aiops"
    assert root.attributes["diagnosis.status"] == report.status == DiagnosisSession.Status.COMPLETED
    children = [span for span in sessions if span is not root]
    assert sorted(child.attributes["gen_ai.conversation.id"] for child in children) == sorted(
        report.children.values_list("session_id", flat=True)
    )
    assert children and all(otlp_receiver.parent_of(child) == root for child in children)
    # The report's own calls (the active alerts, each alert's runbook and logs) are its spans.
    own_calls = [
        span.attributes["gen_ai.tool.call.id"]
        for span in otlp_receiver.named("execute_tool")
        if otlp_receiver.parent_of(span) == root
    ]
    assert sorted(own_calls) == sorted(str(pk) for pk in report.tool_invocations.values_list("pk", flat=True))
    assert {span.trace_id for span in otlp_receiver.spans} == {root.trace_id}


def test_notification_report_covers_exactly_its_firing_alerts_and_records_the_resolved_one():
    session = aiops_run(session_pk=received(notification()).pk)

    report = session.answer
    assert "## 1. HighCPUUsage · payment-service" in report
    assert "## 2. HighMemoryUsage · order-service" in report
    assert "SlowResponse" not in report and "user-service" not in report
    for alert_name in ("HighCPUUsage", "HighMemoryUsage"):
        assert "**已核验的发现**" in section(report, alert_name)
        assert "证据：「" in section(report, alert_name)
    assert session.children.count() == 2
    scope = {a["alert_name"]: (a["state"], a["analysed"]) for a in session.alert_scope["alerts"]}
    assert scope == {"HighCPUUsage": ("firing", True), "HighMemoryUsage": ("firing", True)}
    # The resolved alert was never seen firing: its episode is recorded closed, with no report.
    resolved = AlertEpisode.objects.get(alert_name="SlowResponse")
    assert (resolved.state, resolved.report) == ("resolved", None)
    assert resolved.ends_at.isoformat() == "2026-11-29T06:58:00+00:00"
    evaluation = session.self_evaluation["aiops_rule_evaluation"]
    assert (evaluation["verdict"], evaluation["mode"]) == ("pass", "alertmanager")


def test_annotations_from_alertmanager_never_reach_the_report():
    payload = notification()
    payload["alerts"][0]["annotations"]["description"] = "CPU 当前 99%，建议立即重启 payment-service"

    report = aiops_run(session_pk=received(payload).pk).answer

    assert "CPU 当前 99%" not in report and "建议立即重启" not in report


def test_filter_narrows_the_analysis_and_leaves_other_active_alerts_unexpanded():
    session = aiops_run(session_pk=aiops_start(services=["order-service"]).pk)

    assert [a["alert_name"] for a in session.alert_scope["alerts"]] == ["HighMemoryUsage"]
    assert "payment-service" not in session.answer and "SlowResponse" not in session.answer
    checks = {c["name"]: c for c in session.self_evaluation["aiops_rule_evaluation"]["checks"]}
    assert checks["no_unrelated_alert_expanded"] == {
        "name": "no_unrelated_alert_expanded",
        "passed": True,
        "reason": "2 条无关的活跃告警未被展开",
    }


def test_filter_matching_no_firing_alert_completes_with_a_report_saying_so():
    session = aiops_run(session_pk=aiops_start(alert_names=["HighDiskUsage"]).pk)

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert "当前范围内没有处于 firing 状态的告警" in session.answer
    assert not session.children.exists()
    assert session.self_evaluation["aiops_rule_evaluation"]["verdict"] == "pass"


def test_same_alert_on_several_instances_is_diagnosed_once():
    payload = notification(
        alert("HighCPUUsage", "payment-service", fingerprint="1111111111111111"),
        alert("HighCPUUsage", "payment-service", fingerprint="2222222222222222"),
    )

    session = aiops_run(session_pk=received(payload).pk)

    assert session.children.count() == 1
    assert {a["session_id"] for a in session.alert_scope["alerts"]} == {session.children.get().session_id}


def test_alert_the_metrics_do_not_know_is_reported_as_not_found_never_as_confirmed():
    payload = notification(alert("KafkaConsumerLag", "billing-service", fingerprint="3333333333333333"))

    report = aiops_run(session_pk=received(payload).pk).answer

    kafka = section(report, "KafkaConsumerLag")
    # The metrics query names both the service and the alert asked about.
    assert (
        "在 告警查询（服务 billing-service，告警 KafkaConsumerLag，来源 演示数据）中未检索到匹配记录" in kafka
    )
    assert "存在 KafkaConsumerLag 告警" not in kafka
    assert "只得到“未检索到匹配证据”的告警（不等于已排除）：KafkaConsumerLag（billing-service）" in report
    assert "有已核验证据支撑的告警" not in report


# --- The report only carries verified material ---


def aiops_parent(*subjects: tuple[str, str]) -> DiagnosisSession:
    alerts = [{"alert_name": name, "service": service, "state": "firing"} for name, service in subjects]
    return DiagnosisSessionFactory(kind=DiagnosisSession.Kind.AIOPS, alert_scope={"alerts": alerts})


def child_of(parent: DiagnosisSession, verdict: str) -> DiagnosisSession:
    scope = {"alerts": [{"alert_name": "HighMemoryUsage", "service": "order-service", "state": "firing"}]}
    return CompletedSessionFactory(
        verdict=verdict, parent=parent, kind=DiagnosisSession.Kind.AIOPS, alert_scope=scope
    )


def report_of(child: DiagnosisSession) -> str:
    analysis = alert_analysis_build(child=child, invocations=list(child.tool_invocations.all()))
    return report_markdown(report_build(analyses=[analysis], scope_line="分析 1 条 firing 告警。", notes=[]))


def test_unsupported_claim_and_remediation_never_reach_the_report():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "LOW_CONFID")

    report = report_of(child)

    assert "order-service 存在 firing 状态的 HighMemoryUsage 告警，内存使用率当前 91%" in report
    assert "缓存泄漏" not in report
    assert "1 条断言缺少直接证据" in report
    assert "重启" not in report
    assert "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。" in report


def test_degraded_alert_shows_no_claim_text_and_no_fabricated_excerpt():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "REJECT")

    report = report_of(child)

    assert "当前无法基于已获取证据生成可靠结论，建议人工介入。" in report
    assert "内存使用率当前 91%" not in report
    assert "97%" not in report
    assert "的引用未通过核验（evidence.excerpt_mismatch）" in report
    assert "已降级，需人工（DEGRADED）" in report


def test_a_resolved_alerts_rules_claim_is_written_in_the_past_from_its_record_and_its_writers_reword_nothing():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "PASS")
    told = "触发于 2026-11-29 14:35:00，恢复于 2026-11-29 14:58:00，持续 23 分"

    analysis = alert_analysis_build(
        child=child, invocations=list(child.tool_invocations.all()), resolved=told
    )

    past = f"order-service 触发期间存在 HighMemoryUsage 告警（当时触发中）：{MEMORY_ALERT_DESCRIPTION}"
    assert [finding.text for finding in analysis.findings] == [past]
    assert analysis.summary() == f"已恢复：{told}；触发期间的分析 已核验（NORMAL）：{past}"
    # The writers take the record's words as they are: a statement kept in the present stays so.
    present = analysis.model_copy(update={"findings": [Statement(claim_id="c1", text="内存使用率当前 91%")]})
    markdown = report_markdown(report_build(analyses=[present], scope_line="", notes=[]))
    assert "- 内存使用率当前 91%" in markdown
    assert present.summary().endswith("：内存使用率当前 91%")


def test_a_resolved_alerts_model_claim_is_quoted_as_the_model_wrote_it():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "PASS")
    child.engine = "llm"
    told = "触发于 2026-11-29 14:35:00，恢复于 2026-11-29 14:58:00，持续 23 分"

    analysis = alert_analysis_build(
        child=child, invocations=list(child.tool_invocations.all()), resolved=told
    )

    written = "order-service 存在 firing 状态的 HighMemoryUsage 告警，内存使用率当前 91%"
    assert [finding.text for finding in analysis.findings] == [written]


def test_the_page_names_each_output_type_by_its_label_and_the_stored_report_by_label_and_code():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "PASS")
    analysis = alert_analysis_build(child=child, invocations=[])
    report = report_build(analyses=[analysis], scope_line="", notes=[])

    page = stored_answer_html(report.model_dump(mode="json"), references=AnswerReferences())

    assert "输出类型：已核验（NORMAL）" in report_markdown(report)
    assert "输出类型：已核验｜" in page and "1 条已核验。" in page
    assert "NORMAL" not in page


def test_multi_line_runbook_excerpt_is_quoted_on_one_report_line():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "PASS")
    record = child.self_evaluation["verifier_evaluation"]
    record["gatekeeper_result"]["checked_bindings"][0]["evidence_excerpt"] = (
        "HighMemoryUsage 处理手册（runbook.md）: 1. 查看 JVM 堆内存\n2. 查看 GC 日志\n\n| 指标 | 阈值 |"
    )
    child.save()

    report = report_of(child)

    assert (
        "  - 证据：「HighMemoryUsage 处理手册（runbook.md）: 1. 查看 JVM 堆内存 2. 查看 GC 日志 | 指标 | 阈值 |」"
        in report
    )
    assert "\n2. 查看 GC 日志" not in report and "\n| 指标" not in report


def test_completed_child_with_an_unreadable_record_contributes_no_findings():
    child = child_of(aiops_parent(("HighMemoryUsage", "order-service")), "PASS")
    child.self_evaluation["verifier_evaluation"]["gatekeeper_result"] = {"status": "pass"}
    child.save()

    report = report_of(child)

    assert "诊断执行失败，未获得可用证据" in report
    assert "内存使用率当前 91%" not in report
    assert "有已核验证据支撑的告警" not in report


def test_failed_child_is_reported_as_failed_without_findings():
    parent = aiops_parent(("HighMemoryUsage", "order-service"))
    child = DiagnosisSessionFactory(
        parent=parent,
        kind=DiagnosisSession.Kind.AIOPS,
        status=DiagnosisSession.Status.FAILED,
        alert_scope={
            "alerts": [{"alert_name": "HighMemoryUsage", "service": "order-service", "state": "firing"}]
        },
    )

    report = report_of(child)

    assert "| 1 | HighMemoryUsage | order-service | firing | 执行失败 | — |" in report
    assert "诊断执行失败，未获得可用证据" in report
    assert "**已核验的发现**" not in report


# --- aiops_rule_evaluation checks ---

PAYLOAD = [
    {"alert_name": "HighCPUUsage", "service": "payment-service", "state": "firing"},
    {"alert_name": "HighMemoryUsage", "service": "order-service", "state": "firing"},
]
ACTIVE = [
    {"alert_name": "HighCPUUsage", "service": "payment-service", "state": "firing"},
    {"alert_name": "HighMemoryUsage", "service": "order-service", "state": "firing"},
    {"alert_name": "SlowResponse", "service": "user-service", "state": "firing"},
]
EVIDENCE_CALLS = {
    AlertSubject("HighCPUUsage", "payment-service"): Counter(query_alerts=1, query_logs=1),
    AlertSubject("HighMemoryUsage", "order-service"): Counter(query_alerts=1, query_logs=1),
}


@pytest.fixture
def focused_report() -> AiopsReport:
    session = aiops_run(session_pk=received(notification(*notification()["alerts"][:2])).pk)
    assert session.self_evaluation["aiops_rule_evaluation"]["verdict"] == "pass"
    return report_record_of(session.answer_record)


def checks_of(report: AiopsReport | None, analysed=EVIDENCE_CALLS) -> dict[str, dict]:
    result = aiops_checks(report=report, scope_alerts=PAYLOAD, active_alerts=ACTIVE, analysed=analysed)
    return {check["name"]: check for check in result["checks"]} | {"verdict": result["verdict"]}


def test_the_report_is_stored_as_its_record_and_the_answer_is_written_from_it():
    session = aiops_run(session_pk=received(notification(*notification()["alerts"][:2])).pk)

    report = report_record_of(session.answer_record)

    assert [a.subject.alert_name for a in report.analyses] == ["HighCPUUsage", "HighMemoryUsage"]
    assert session.answer == report_markdown(report)


def test_report_that_strays_to_an_active_alert_outside_the_payload_fails_the_focus_check(focused_report):
    stray = focused_report.analyses[0].model_copy(
        update={"subject": AlertSubject("SlowResponse", "user-service"), "findings": []}
    )
    strayed = focused_report.model_copy(update={"analyses": [*focused_report.analyses, stray]})

    checks = checks_of(strayed)

    assert checks["verdict"] == "fail"
    assert checks["report_focused_on_alerts"]["passed"] is False
    assert "SlowResponse" in checks["report_focused_on_alerts"]["reason"]
    assert "user-service" in checks["report_focused_on_alerts"]["reason"]
    assert checks["no_unrelated_alert_expanded"]["passed"] is False
    assert checks["no_unrelated_alert_expanded"]["reason"].endswith("SlowResponse（user-service）")


def test_passing_mention_of_another_service_fails_focus_but_is_no_expanded_subject(focused_report):
    strayed = focused_report.model_copy(
        update={"notes": [*focused_report.notes, "inventory-service 可能也受到影响。"]}
    )

    checks = checks_of(strayed)

    assert checks["report_focused_on_alerts"]["passed"] is False
    assert checks["report_focused_on_alerts"]["reason"].endswith("inventory-service")
    assert checks["no_unrelated_alert_expanded"]["passed"] is True


def test_evidence_quoted_from_tools_is_not_a_diagnosis_subject(focused_report):
    first = focused_report.analyses[0]
    quoting = first.model_copy(
        update={
            "verified_evidence": [
                Quote(
                    excerpt="SlowResponse firing service=user-service",
                    ref=AnswerRef(tool_name="query_alerts", invocation_id=1, raw_path="$.alerts[2]"),
                )
            ],
            "error_patterns": [("SlowResponse on user-service", 3)],
        }
    )
    quoted = focused_report.model_copy(update={"analyses": [quoting, *focused_report.analyses[1:]]})

    assert checks_of(quoted)["verdict"] == "pass"


def test_alert_analysed_without_logs_fails_the_evidence_tools_check(focused_report):
    analysed = EVIDENCE_CALLS | {AlertSubject("HighMemoryUsage", "order-service"): Counter(query_alerts=1)}

    check = checks_of(focused_report, analysed)["evidence_tools_called"]

    assert check == {
        "name": "evidence_tools_called",
        "passed": False,
        "reason": "HighMemoryUsage（order-service） 未调用 query_logs",
    }


def test_missing_report_or_missing_alert_section_fails_the_report_check(focused_report):
    assert checks_of(None)["final_report_exists"]["passed"] is False
    without_memory = focused_report.model_copy(
        update={"analyses": [a for a in focused_report.analyses if a.subject.alert_name != "HighMemoryUsage"]}
    )
    check = checks_of(without_memory)["final_report_exists"]
    assert (check["passed"], check["reason"]) == (
        False,
        "报告缺少这些告警的分析章节：HighMemoryUsage（order-service）",
    )


# --- Concurrency ---


def most_at_once(sessions) -> int:
    """The largest number of sessions running at the same moment."""
    events = sorted(
        [(s.started_at, 1) for s in sessions] + [(s.finished_at, -1) for s in sessions],
        key=lambda event: (event[0], event[1]),
    )
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


@pytest.mark.django_db(transaction=True)
def test_alerts_are_diagnosed_concurrently_within_the_configured_bound(settings):
    skip_unless_postgresql(why="SQLite diagnoses alerts one at a time (see the next test)")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"AIOPS_CONCURRENCY": 2}

    session = aiops_run(session_pk=aiops_start().pk)

    children = list(session.children.all())
    assert [child.status for child in children] == [DiagnosisSession.Status.COMPLETED] * 3
    assert most_at_once(children) == 2
    assert session.self_evaluation["aiops_rule_evaluation"]["verdict"] == "pass"


@pytest.mark.django_db(transaction=True)
def test_sqlite_diagnoses_alerts_one_at_a_time(settings):
    if connection.vendor != "sqlite":
        pytest.skip("only SQLite serialises the alerts")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"AIOPS_CONCURRENCY": 3}

    session = aiops_run(session_pk=aiops_start().pk)

    assert most_at_once(list(session.children.all())) == 1
    assert session.self_evaluation["aiops_rule_evaluation"]["verdict"] == "pass"


def test_a_caller_holding_a_transaction_gets_no_threads(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"AIOPS_CONCURRENCY": 3}

    assert aiops_concurrency(alert_count=3) == 1


def test_an_analysis_runs_once_even_if_its_task_is_delivered_twice():
    session = aiops_start()
    aiops_run(session_pk=session.pk)

    again = aiops_run(session_pk=session.pk)

    assert again.status == DiagnosisSession.Status.COMPLETED
    assert again.children.count() == 3
    assert again.tool_invocations.filter(tool_name="query_alerts").count() == 1


def test_analysis_that_breaks_ends_failed_and_its_rule_evaluation_fails():
    corrupt = {"source": "alertmanager", "alerts": [{"alert_name": "HighCPUUsage"}]}  # no state
    session = DiagnosisSessionFactory(kind=DiagnosisSession.Kind.AIOPS, alert_scope=corrupt)

    session = aiops_run(session_pk=session.pk)

    assert session.status == DiagnosisSession.Status.FAILED
    assert session.answer == f"告警分析执行失败（错误编号 {session.error_id}），请稍后重试或联系管理员。"
    assert session.error.startswith("KeyError")
    evaluation = session.self_evaluation["aiops_rule_evaluation"]
    assert evaluation["verdict"] == "fail"
    assert evaluation["checks"][0] == {
        "name": "final_report_exists",
        "passed": False,
        "reason": "没有以“告警分析报告”为标题的最终报告",
    }


def killed_mid_analysis(report: DiagnosisSession) -> list[DiagnosisSession]:
    """The report as a SIGKILLed worker leaves it: RUNNING without a heartbeat for an hour, one alert
    session done, one never started."""
    an_hour_ago = timezone.now() - timedelta(hours=1)
    DiagnosisSession.objects.filter(pk=report.pk).update(
        status=DiagnosisSession.Status.RUNNING, started_at=an_hour_ago, updated_at=an_hour_ago
    )
    done = CompletedSessionFactory(kind=DiagnosisSession.Kind.AIOPS, parent=report)
    waiting = DiagnosisSessionFactory(kind=DiagnosisSession.Kind.AIOPS, parent=report)
    return [done, waiting]


@pytest.mark.parametrize("world_alert", [demo_alert, shop_alert])
def test_a_reaped_report_fails_its_waiting_alert_sessions_at_once_and_gets_its_rule_evaluation(
    world_alert, django_capture_on_commit_callbacks
):
    report = received(notification(world_alert()))
    done, waiting = killed_mid_analysis(report)

    with django_capture_on_commit_callbacks(execute=True):
        assert stale_sessions_fail(older_than_seconds=900) == 1

    report.refresh_from_db()
    assert report.status == DiagnosisSession.Status.FAILED
    assert "心跳" in report.error
    waiting.refresh_from_db()
    assert waiting.status == DiagnosisSession.Status.FAILED
    assert waiting.error == f"所属告警分析报告 {report.pk} 已失败：{report.error}"
    assert waiting.answer.startswith("告警分析执行失败（错误编号 ")
    done.refresh_from_db()
    assert done.status == DiagnosisSession.Status.COMPLETED
    assert report.self_evaluation["aiops_rule_evaluation"]["verdict"] == "fail"


@pytest.mark.parametrize("world_alert", [demo_alert, shop_alert])
def test_the_episodes_of_a_failed_report_are_analysed_again_on_their_next_notification_once(world_alert):
    payload = notification(world_alert())
    failed = received(payload)
    killed_mid_analysis(failed)
    stale_sessions_fail(older_than_seconds=900)

    again = received(payload)
    resent = received(payload)

    assert again.pk != failed.pk and again.status == DiagnosisSession.Status.PENDING
    assert [a["fingerprint"] for a in again.alert_scope["alerts"]] == [payload["alerts"][0]["fingerprint"]]
    assert AlertEpisode.objects.get().report == again
    assert resent.pk == again.pk
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 2


def test_a_report_that_breaks_fails_its_waiting_alert_sessions_with_its_cause(monkeypatch):
    report = received(notification(demo_alert()))
    waiting = DiagnosisSessionFactory(kind=DiagnosisSession.Kind.AIOPS, parent=report)

    def children_run_breaks(child_pks: list[int]) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "_children_run", children_run_breaks)

    report = aiops_run(session_pk=report.pk)

    waiting.refresh_from_db()
    assert report.status == waiting.status == DiagnosisSession.Status.FAILED
    assert waiting.error == f"所属告警分析报告 {report.pk} 已失败：RuntimeError: boom"


def memory_alert_on(service: str) -> DiagnosisSession:
    labels = {"service": service, "namespace": "production"}
    payload = notification(alert("HighMemoryUsage", service, fingerprint="b2c3d4e5f6071829", labels=labels))
    return aiops_run(session_pk=received(payload).pk).children.get()


@pytest.mark.parametrize("value", ['order-service"} or vector(1)', ".*", "order-service canary"])
def test_a_service_label_that_only_contains_a_known_name_is_never_confirmed_as_that_service(value):
    child = memory_alert_on(value)

    assert f"未找到名为 {value} 的服务" in child.answer
    assert "结论：否，未发现 HighMemoryUsage 告警" in child.answer
    assert "service=order-service" not in child.answer  # no alert record of the known service is cited


@pytest.mark.parametrize("value", ["ORDER_SERVICE", "Order Service"])
def test_a_service_label_equal_to_a_known_name_in_another_spelling_is_that_service(value):
    child = memory_alert_on(value)

    assert child.verdict == "PASS"
    assert "结论：是，order-service 的 HighMemoryUsage 告警" in child.answer


def test_the_report_groups_the_alerts_of_one_incident_under_one_candidate_list():
    session = aiops_run(session_pk=aiops_start().pk)

    [incident] = session.alert_scope["incidents"]
    assert sorted(incident["alerts"]) == [
        "HighCPUUsage · payment-service",
        "HighMemoryUsage · order-service",
        "SlowResponse · user-service",
    ]
    assert incident["conclusion"].startswith(
        "根因候选：payment-service（HighCPUUsage 告警触发，14:35起，80% → 92%）；其次："
    )
    report = report_record_of(session.answer_record)
    assert report.incidents[0].conclusion == incident["conclusion"]
    assert "1. 14:35 起，告警 `HighCPUUsage · payment-service`" in session.answer
    assert "## 事件与根因候选（推断，未证实）" in session.answer
    # The report's page draws the incident's candidates on one timeline.
    [(caption, timeline)] = incident_timelines(session=session)
    assert caption == "事件 1 · 14:35 起"
    assert [track.kind for track in timeline.tracks] == ["alert", "alert", "log"]


def test_a_standing_watchdog_in_the_notification_never_leads_the_incident():
    watchdog = alert(
        "Watchdog", "", fingerprint="00000000000000ff", starts_at="2026-11-20T00:00:00.000Z",
        labels={"severity": "none", "namespace": "production"},
    )  # fmt: skip
    payload = notification(
        watchdog,
        alert("HighCPUUsage", "payment-service", fingerprint="a1b2c3d4e5f60718"),
        alert("HighMemoryUsage", "order-service", fingerprint="b2c3d4e5f6071829", starts_at="2026-11-29T06:45:00.000Z"),
    )  # fmt: skip

    session = aiops_run(session_pk=received(payload).pk)

    [incident] = session.alert_scope["incidents"]
    assert incident["alerts"] == ["HighCPUUsage · payment-service", "HighMemoryUsage · order-service"]
    assert session.alert_scope["standing"] == ["Watchdog"]
    assert "持续触发的告警（不参与根因排序）：`Watchdog`" in session.answer
    assert not incident["conclusion"].startswith("根因候选：Watchdog")


def test_beside_a_team_source_the_report_says_which_kinds_have_none_and_never_reads_the_demo_world(settings):
    # The demo world's alerts stand in for the team's Alertmanager; Prometheus is configured (down).
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": f"http://127.0.0.1:{free_port()}",
        "SOURCE_TIMEOUT": 1.0,
        "SOURCE_CLASSES": {"alerts": "tools.sources.demo.DemoWorldSource"},
    }

    session = aiops_run(session_pk=aiops_start().pk)

    assert session.status == DiagnosisSession.Status.COMPLETED
    called = set(session.tool_invocations.values_list("tool_name", flat=True))
    for child in session.children.all():
        called |= set(child.tool_invocations.values_list("tool_name", flat=True))
    assert called.isdisjoint({"query_logs", "lookup_knowledge"})
    assert "未配置日志源：各告警未查询日志" in session.answer
    assert "未配置处理手册库：各告警未查询处理手册" in session.answer
    assert session.self_evaluation["aiops_rule_evaluation"]["verdict"] == "pass"


@pytest.mark.parametrize(
    ("name", "labels", "annotations"),
    [
        # kube-prometheus' Watchdog, and awesome-prometheus-alerts' dead man's switch (critical).
        ("Watchdog", {"severity": "none"}, {"description": "This is an alert meant to ensure that the entire alerting pipeline is functional."}),
        (
            "PrometheusAlertmanagerE2eDeadManSwitch",
            {"severity": "critical", "namespace": "production"},
            {"description": "Prometheus DeadManSwitch is an always-firing alert."},
        ),
    ],
)
def test_an_alert_firing_by_design_is_named_as_such_and_ranked_last(name, labels, annotations):
    payload = notification(
        alert(name, "", fingerprint="d0d0d0d0d0d0d0d0", labels=labels, annotations=annotations),
        # A warning: below a critical by severity alone.
        alert("SlowResponse", "user-service", fingerprint="c3d4e5f60718293a", labels={"service": "user-service", "severity": "warning"}),
    )

    session = aiops_run(session_pk=received(payload).pk)

    report = session.answer
    assert "## 1. SlowResponse · user-service" in report
    assert f"## 2. {name}" in report
    assert "始终触发的看门狗告警" in section(report, name)
    assert "始终触发" not in section(report, "SlowResponse")
    assert [a["alert_name"] for a in session.alert_scope["alerts"]] == ["SlowResponse", name]
