import html
import re
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession, SessionReview
from diagnosis.pipeline.answer import AnswerRecord, AnswerRef, Quote, Statement
from diagnosis.pipeline.scope import SCOPE_RULE
from diagnosis.selectors.sessions import ROW_QUERY_CHARS
from diagnosis.services.reviewers import reviewer_group_ensure
from feedback.models import BadCase
from tests.factories import (
    AgentStepFactory,
    CompletedSessionFactory,
    DiagnosisSessionFactory,
    StaffUserFactory,
    ToolInvocationFactory,
    UserFactory,
    claim_blocked,
)
from tools.evidence.receipt import Receipt, SourceRequest, output_digest

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:diagnosis_diagnosissession_changelist")
# auth session, user, user + group permissions, the (capped) page count, the page of rows: whatever the
# table size; above the cap PostgreSQL's estimate replaces the count (one EXPLAIN more).
CHANGELIST_QUERIES = 6


def change_url(session: DiagnosisSession) -> str:
    return reverse("admin:diagnosis_diagnosissession_change", args=[session.pk])


@pytest.fixture
def reviewer(client):
    user = StaffUserFactory()
    user.groups.add(reviewer_group_ensure())
    client.force_login(user)
    return user


@pytest.fixture
def superuser(client):
    user = StaffUserFactory(is_superuser=True)
    client.force_login(user)
    return user


def listed_ids(client, query: str = "") -> set[str]:
    response = client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    return {session.session_id for session in response.context["cl"].result_list}


@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_changelist_shows_every_output_type_with_its_columns(client, reviewer, verdict):
    session = CompletedSessionFactory(verdict=verdict, feedback="useful")
    page = client.get(CHANGELIST).content.decode()
    label = {"PASS": "通过", "LOW_CONFID": "低置信", "REJECT": "拒绝"}[verdict]
    assert f'<span class="verdict-badge verdict-{verdict}" title="{verdict}">{label}</span>' in page
    assert session.get_output_type_display() in page
    assert "证据支撑度" in page
    assert "引用核验" in page
    assert "已审核" in page


def test_changelist_renders_sessions_still_running_or_failed(client, reviewer):
    DiagnosisSessionFactory(session_id="running", status=DiagnosisSession.Status.RUNNING)
    DiagnosisSessionFactory(session_id="failed", status=DiagnosisSession.Status.FAILED, error="boom")
    assert listed_ids(client) == {"running", "failed"}


@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_change_page_lays_out_claims_bindings_and_verdicts(client, reviewer, verdict):
    session = CompletedSessionFactory(verdict=verdict)
    page = client.get(change_url(session)).content.decode()
    assert "断言、引用核验与校验结论" in page
    assert "order-service 存在 firing 状态的 HighMemoryUsage 告警" in page
    assert 'data-round="1"' in page
    assert f"verdict-{verdict}" in page
    assert "规则评分" in page
    assert "有成功的证据工具调用" in page
    assert "工具调用摘要" in page
    assert "&quot;claim_id&quot;" not in page
    if verdict == "REJECT":
        assert "evidence.excerpt_mismatch" in page
        assert "与证据矛盾" in page
    else:
        assert "<mark>HighMemoryUsage firing service=order-service</mark>" in page
        assert "直接观测" in page


def test_change_page_says_which_guard_blocked_a_claim(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS")
    claim_blocked(session, claim_id="c1", rule=SCOPE_RULE)
    page = client.get(change_url(session)).content.decode()
    assert "order-service 存在 firing 状态的 HighMemoryUsage 告警" in page
    assert "已拦截，未展示：涉及用户排除的主题" in page
    assert "已向用户展示" not in page


def test_change_page_puts_both_rounds_of_a_retried_session_side_by_side(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS", retried=True)
    page = client.get(change_url(session)).content.decode()
    assert 'data-round="1"' in page
    assert 'data-round="2"' in page
    assert "内存升高由订单缓存泄漏引起" in page
    assert "补充取证上下文" in page
    assert "仅补充以上断言相关证据" in page


def test_change_page_shows_steps_and_invocations_read_only(client, reviewer):
    session = CompletedSessionFactory()
    page = client.get(change_url(session)).content.decode()
    invocation = session.tool_invocations.get()
    assert f"#{invocation.pk}" in page
    assert "service=order-service" in page
    assert 'name="steps-0-thought"' not in page
    assert 'type="submit" value="保存"' not in page


@pytest.mark.parametrize("sessions", [30, 300])
def test_changelist_costs_a_fixed_number_of_queries(
    client, reviewer, django_assert_max_num_queries, sessions
):
    owner = UserFactory()
    created = DiagnosisSessionFactory.create_batch(sessions, owner=owner, verdict="REJECT")
    SessionReview.objects.bulk_create(
        SessionReview(session=session, opinion="agree") for session in created[::3]
    )
    with django_assert_max_num_queries(CHANGELIST_QUERIES):
        response = client.get(f"{CHANGELIST}?needs_review=yes")
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == min(50, sessions - len(created[::3]))


def test_changelist_query_count_does_not_grow_with_rows(client, reviewer):
    DiagnosisSessionFactory.create_batch(3, owner=reviewer)
    with CaptureQueriesContext(connection) as few:
        client.get(CHANGELIST)
    DiagnosisSessionFactory.create_batch(60, owner=reviewer)
    with CaptureQueriesContext(connection) as many:
        client.get(CHANGELIST)
    assert len(many) == len(few)


def test_the_reviewers_list_shows_a_bounded_question(client, reviewer):
    # A tool call's arguments as stored before they were bounded, in the reviewers' queue.
    DiagnosisSessionFactory(kind="tool", verdict="REJECT", query="query_logs " + "x" * 1_500_000)

    response = client.get(f"{CHANGELIST}?needs_review=yes")

    assert response.status_code == 200
    assert len(response.content) < 100_000
    assert "query_logs " + "x" * (ROW_QUERY_CHARS - 20) in response.content.decode()


def test_needs_review_lists_unreviewed_low_verdicts_and_open_user_reports(client, reviewer):
    CompletedSessionFactory(session_id="reject", verdict="REJECT")
    CompletedSessionFactory(session_id="low", verdict="LOW_CONFID")
    CompletedSessionFactory(session_id="pass", verdict="PASS")
    reported = CompletedSessionFactory(session_id="reported", verdict="PASS", feedback="not_useful")
    BadCase.objects.create(session=reported)
    reviewed = CompletedSessionFactory(session_id="reviewed", verdict="REJECT")
    SessionReview.objects.create(session=reviewed, opinion="agree", expected_verdict="REJECT")
    assert listed_ids(client, "needs_review=yes") == {"reject", "low", "reported"}


def test_recording_a_review_takes_the_session_out_of_the_queue(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS", feedback="not_useful")
    BadCase.objects.create(session=session)
    response = client.post(
        reverse("admin:diagnosis_diagnosissession_review", args=[session.pk]),
        {"opinion": "disagree", "expected_verdict": "LOW_CONFID", "note": "回答没有回答内存原因"},
    )
    assert response.status_code == 302
    review = SessionReview.objects.get()
    assert (review.reviewer, review.opinion, review.expected_verdict) == (reviewer, "disagree", "LOW_CONFID")
    assert listed_ids(client, "needs_review=yes") == set()
    assert listed_ids(client, "needs_review=disagreed") == {session.session_id}
    page = client.get(change_url(session)).content.decode()
    assert "不同意校验结论" in page
    assert "回答没有回答内存原因" in page


def test_a_disagreement_without_another_verdict_is_refused(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS")
    response = client.post(
        reverse("admin:diagnosis_diagnosissession_review", args=[session.pk]),
        {"opinion": "disagree", "expected_verdict": "PASS"},
        follow=True,
    )
    assert "不同意时，期望结论必须与校验结论不同" in response.content.decode()
    assert not SessionReview.objects.exists()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=FAILED", {"failed"}),
        ("output_type=DEGRADED", {"reject"}),
        ("verdict=PASS", {"pass"}),
        ("gatekeeper_severity=reject", {"reject"}),
        ("feedback=useful", {"pass"}),
        ("feedback=none", {"reject", "failed"}),
        ("engine=llm", {"failed"}),
        ("q=reject", {"reject"}),
    ],
)
def test_changelist_filters_and_search(client, reviewer, query, expected):
    CompletedSessionFactory(session_id="pass", verdict="PASS", feedback="useful")
    CompletedSessionFactory(session_id="reject", verdict="REJECT")
    DiagnosisSessionFactory(session_id="failed", status=DiagnosisSession.Status.FAILED, engine="llm")
    assert listed_ids(client, query) == expected


def test_an_exact_session_id_finds_that_session_alone(client, reviewer):
    CompletedSessionFactory(session_id="4f2a")
    CompletedSessionFactory(session_id="4f2a-retry")
    CompletedSessionFactory(session_id="other", query="为什么 4f2a 会话失败")
    assert listed_ids(client, "q=4f2a") == {"4f2a"}


def test_a_search_that_is_no_session_id_matches_id_prefixes_and_question_words(client, reviewer):
    CompletedSessionFactory(session_id="4f2a-1")
    CompletedSessionFactory(session_id="4f2a-2")
    CompletedSessionFactory(session_id="x-4f2a")
    CompletedSessionFactory(session_id="gc", query="order-service 为什么频繁 Full GC")
    assert listed_ids(client, "q=4f2a") == {"4f2a-1", "4f2a-2"}
    assert listed_ids(client, "q=full gc") == {"gc"}
    assert listed_ids(client, "q=频繁") == {"gc"}


def test_a_deep_page_lists_the_same_sessions_as_plain_paging(client, reviewer, monkeypatch):
    DiagnosisSessionFactory.create_batch(120, verdict="REJECT")
    plain = [listed_ids(client, f"verdict=REJECT&p={number}") for number in (1, 2, 3)]
    monkeypatch.setattr("diagnosis.admin.DEEP_PAGE_OFFSET", 50)
    deep = client.get(f"{CHANGELIST}?verdict=REJECT&p=2").context["cl"].result_list
    assert [session.session_id for session in deep] == [
        session.session_id for session in DiagnosisSession.objects.order_by("-created_at", "-id")[50:100]
    ]
    assert {session.session_id for session in deep} == plain[1]
    assert listed_ids(client, "verdict=REJECT&p=3") == plain[2]
    assert len(plain[2]) == 20


def test_small_lists_are_counted_exactly(client, reviewer, monkeypatch):
    monkeypatch.setattr("diagnosis.admin.EXACT_COUNT_LIMIT", 5)
    DiagnosisSessionFactory.create_batch(4, verdict="REJECT")
    assert client.get(f"{CHANGELIST}?verdict=REJECT").context["cl"].result_count == 4


def test_above_the_cap_postgresql_estimates_the_count_instead_of_counting(
    client, reviewer, monkeypatch, postgres_only
):
    monkeypatch.setattr("diagnosis.admin.EXACT_COUNT_LIMIT", 5)
    DiagnosisSessionFactory.create_batch(60, verdict="REJECT")
    with CaptureQueriesContext(connection) as captured:
        changelist = client.get(CHANGELIST).context["cl"]
    statements = [query["sql"] for query in captured.captured_queries]
    assert any(sql.startswith("EXPLAIN") for sql in statements)
    assert not any(
        sql.startswith('SELECT COUNT(*) AS "__count" FROM "diagnosis_diagnosissession"') for sql in statements
    )
    # The estimate comes from the planner's statistics, never below what was counted.
    assert changelist.result_count > 5
    assert len(changelist.result_list) == min(50, changelist.result_count)


def test_reviewers_cannot_edit_add_or_delete_sessions(client, reviewer):
    session = CompletedSessionFactory()
    response = client.post(change_url(session), {"query": "changed", "status": "FAILED"})
    assert response.status_code == 403
    assert client.get(reverse("admin:diagnosis_diagnosissession_add")).status_code == 403
    assert (
        client.post(reverse("admin:diagnosis_diagnosissession_delete", args=[session.pk])).status_code == 403
    )
    session.refresh_from_db()
    assert session.query != "changed"
    assert session.status == DiagnosisSession.Status.COMPLETED


def test_sessions_are_audit_records_nobody_deletes_not_even_a_superuser(client, superuser):
    session = CompletedSessionFactory()
    AgentStepFactory(session=session)
    delete_url = reverse("admin:diagnosis_diagnosissession_delete", args=[session.pk])
    assert client.post(delete_url, {"post": "yes"}).status_code == 403
    changelist = client.get(CHANGELIST)
    assert "delete_selected" not in dict(changelist.context["action_form"].fields["action"].choices)
    response = client.post(CHANGELIST, {"action": "delete_selected", "_selected_action": [session.pk]})
    assert response.status_code == 302
    inlines = client.get(change_url(session)).context["inline_admin_formsets"]
    assert inlines and not any(inline.has_delete_permission for inline in inlines)
    assert DiagnosisSession.objects.filter(pk=session.pk).exists()
    assert session.steps.exists()


def test_reviewers_cannot_promote_sessions_to_cases(client, reviewer):
    session = CompletedSessionFactory()
    response = client.post(reverse("admin:diagnosis_diagnosissession_promote", args=[session.pk]))
    assert response.status_code == 403
    assert "沉淀到案例库" not in client.get(change_url(session)).content.decode()
    assert not CaseLibrary.objects.exists()


def test_people_without_the_review_permission_cannot_review(client):
    client.force_login(StaffUserFactory())
    session = CompletedSessionFactory()
    response = client.post(
        reverse("admin:diagnosis_diagnosissession_review", args=[session.pk]), {"opinion": "agree"}
    )
    assert response.status_code == 403
    assert not SessionReview.objects.exists()


def test_promoting_from_the_change_page_creates_a_manual_case(client, superuser):
    session = CompletedSessionFactory()
    response = client.post(reverse("admin:diagnosis_diagnosissession_promote", args=[session.pk]))
    case = CaseLibrary.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("admin:caselib_caselibrary_change", args=[case.pk])
    assert (case.diagnosis_id, case.source_type, case.created_by) == (
        session.session_id,
        CaseLibrary.SourceType.MANUAL,
        superuser.username,
    )


def test_promote_action_creates_cases_for_completed_sessions_only(client, superuser):
    completed = CompletedSessionFactory()
    running = DiagnosisSessionFactory(status=DiagnosisSession.Status.RUNNING)
    response = client.post(
        CHANGELIST,
        {"action": "promote_to_case_library", "_selected_action": [completed.pk, running.pk]},
        follow=True,
    )
    assert CaseLibrary.objects.get().diagnosis_id == completed.session_id
    page = response.content.decode()
    assert "已创建 1 个案例" in page
    assert "只有已完成的诊断才能沉淀为案例" in page


def test_reviewers_see_cases_and_bad_cases(client, reviewer):
    session = CompletedSessionFactory()
    CaseLibrary.objects.create(
        diagnosis_id=session.session_id, title="order-service 内存告警", service="order-service"
    )
    BadCase.objects.create(session=CompletedSessionFactory(query="没用的回答"), reported_by=session.owner)
    cases = client.get(reverse("admin:caselib_caselibrary_changelist")).content.decode()
    assert "order-service 内存告警" in cases
    bad_cases = client.get(reverse("admin:feedback_badcase_changelist")).content.decode()
    assert "没用的回答" in bad_cases


def test_the_change_page_marks_the_claims_the_user_was_shown(client, reviewer):
    shown = CompletedSessionFactory(verdict="PASS")
    degraded = CompletedSessionFactory(verdict="REJECT")

    assert "已向用户展示" in client.get(change_url(shown)).content.decode()
    assert "已向用户展示" not in client.get(change_url(degraded)).content.decode()


def visible_text(page: str) -> str:
    """The words a reviewer reads: no markup, scripts, styles or attribute values."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_the_desk_is_branded_in_chinese_without_django(client, reviewer):
    for url in (reverse("admin:index"), CHANGELIST):
        text = visible_text(client.get(url).content.decode())
        assert "诊断审核台" in text
        assert "Django" not in text
        for english in ("Model name", "Add link", "Change or view list link"):
            assert english not in text


def test_the_audit_page_shows_codes_and_record_keys_in_chinese(client, reviewer):
    session = CompletedSessionFactory(verdict="LOW_CONFID", retried=True, current_stage="done")
    text = visible_text(client.get(change_url(session)).content.decode())
    for raw in (
        "offending_tokens",
        "planner_output",
        "trace_ref",
        "no_hit_invocation_count",
        "LOW_CONFID",
        "(done)",
        "has_successful_tool_call",
        "traceability_version",
        " none",
        "rules",
    ):
        assert raw not in text, raw
    for words in ("越界内容", "轨迹编号", "未命中次数", "低置信", "已结束", "规则引擎", "无问题"):
        assert words in text, words


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "Europe/Berlin"])
def test_every_time_on_the_desk_is_local_with_its_zone_named(client, reviewer, settings, zone):
    settings.TIME_ZONE = zone
    session = CompletedSessionFactory()
    DiagnosisSession.objects.filter(pk=session.pk).update(
        created_at=datetime(2026, 11, 29, 5, 31, 5, tzinfo=UTC),
        started_at=datetime(2026, 11, 29, 5, 31, 6, tzinfo=UTC),
    )
    local = {"Asia/Shanghai": ("13:31:05", "UTC+08:00"), "Europe/Berlin": ("06:31:05", "UTC+01:00")}[zone]
    audit = visible_text(client.get(change_url(session)).content.decode())
    assert f"2026-11-29 {local[0]}" in audit
    assert f"{zone}（{local[1]}）" in audit
    assert "05:31:05" not in audit
    listing = visible_text(client.get(CHANGELIST).content.decode())
    assert f"2026-11-29 {local[0]}" in listing


def test_the_audit_page_puts_claims_first_and_the_raw_records_last_folded(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS")
    page = client.get(change_url(session)).content.decode()
    claims = page.index("断言、引用核验与校验结论")
    answer = page.index("展示给用户的回答")
    steps = page.index("阶段记录")
    raw = page.index('<details class="module audit raw-records">')
    assert claims < answer < steps < raw
    assert page.index("工具调用摘要") > raw
    assert page.index("<h3>规则评分</h3>") > raw


def test_case_library_and_bad_case_pages_have_chinese_headings(client, superuser):
    session = CompletedSessionFactory()
    case = CaseLibrary.objects.create(diagnosis_id=session.session_id, title="order-service 内存告警")
    bad_case = BadCase.objects.create(session=CompletedSessionFactory(query="没用的回答"))
    pages = [
        reverse("admin:caselib_caselibrary_changelist"),
        reverse("admin:caselib_caselibrary_change", args=[case.pk]),
        reverse("admin:feedback_badcase_changelist"),
        reverse("admin:feedback_badcase_change", args=[bad_case.pk]),
    ]
    english = re.compile(
        r"\b(Title|Fault category|Service|Alert name|Error code|Root cause|Solution|Source type|Created by|"
        r"Created at|Case id|Reported by|Resolved|Comment|By [a-z ]+|bad case)\b"
    )
    for url in pages:
        text = visible_text(client.get(url).content.decode())
        assert english.findall(text) == [], url
    case_page = visible_text(client.get(pages[1]).content.decode())
    for heading in ("标题", "故障类别", "服务", "告警", "错误码", "根因", "解决方案", "来源", "创建人"):
        assert heading in case_page


def test_reviewers_see_a_failed_sessions_error_id_and_raw_cause(client, reviewer):
    session = DiagnosisSessionFactory(
        status=DiagnosisSession.Status.FAILED,
        error="AttributeError: 'str' object has no attribute 'message'",
        error_id="ab12cd34",
    )
    page = client.get(change_url(session)).content.decode()
    assert "错误编号" in page
    assert "ab12cd34" in page
    assert "AttributeError: &#x27;str&#x27; object has no attribute &#x27;message&#x27;" in page


AUDIT_PAGE_BYTES = 2 * 1024 * 1024


def promql_series(count: int, *, service: str, label_value: str = "") -> dict:
    """One query_promql call's record: `count` series and a ref each, as the tool records them."""
    series = [
        {
            "metric": {"__name__": "up", "service": service, "pod": f"{label_value}p{n}"},
            "value": [1764399600, "1"],
        }
        for n in range(count)
    ]
    refs = [
        {"raw_path": f"$.series[{n}]", "text": f'up{{pod="{label_value}p{n}",service="{service}"}} 当前值 1'}
        for n in range(count)
    ]
    return {
        "tool_name": "query_promql",
        "input": {"query": f'up{{service="{service}"}}'},
        "output": {
            "success": True,
            "result_type": "vector",
            "series": series,
            "message": f"返回 {count} 条时间序列",
        },
        "retrieval_details": {"evidence_status": "supported", "evidence_refs": refs},
    }


@pytest.mark.parametrize("service", ["order-service", "checkout"])
def test_the_audit_page_of_a_session_with_10000_series_stays_small_and_links_the_full_trace(
    client, reviewer, service
):
    session = CompletedSessionFactory(owner=reviewer)
    for _ in range(5):
        ToolInvocationFactory(session=session, **promql_series(10_000, service=service))

    response = client.get(change_url(session))

    assert response.status_code == 200
    assert len(response.content) < AUDIT_PAGE_BYTES, len(response.content)
    page = response.content.decode()
    assert page.count("pod=&quot;p9999&quot;") == 0
    assert "另有 9980 条" in page
    assert f'href="/api/sessions/{session.session_id}/trace"' in page


def test_a_huge_label_value_is_cut_on_the_audit_page_with_the_full_text_in_the_trace(client, reviewer):
    session = CompletedSessionFactory(owner=reviewer)
    ToolInvocationFactory(session=session, **promql_series(1, service="checkout", label_value="x" * 500_000))

    response = client.get(change_url(session))

    assert len(response.content) < 200_000, len(response.content)
    assert "x" * 1000 not in response.content.decode()


def test_the_audit_page_renders_the_answer_from_its_record_with_raw_references(client, reviewer):
    record = AnswerRecord(
        output_type="NORMAL",
        findings=[
            Statement(
                claim_id="c1",
                text="order-service 存在告警",
                quotes=[
                    Quote(
                        excerpt="HighMemoryUsage firing",
                        ref=AnswerRef(tool_name="query_logs", invocation_id=4),
                    )
                ],
            )
        ],
    )
    session = CompletedSessionFactory(
        verdict="PASS", answer="旧的文本", answer_record=record.model_dump(mode="json")
    )

    page = client.get(change_url(session)).content.decode()

    assert "「HighMemoryUsage firing」（来源：query_logs #4）" in page
    assert "旧的文本" not in page


def test_the_audit_page_shows_each_cited_calls_receipt_escaped(client, reviewer):
    session = CompletedSessionFactory()
    invocation = session.tool_invocations.get()
    request = SourceRequest(
        source="prometheus",
        base_url="http://prometheus.ops:9090",
        path="/api/v1/query",
        query='up{job="<script>alert(1)</script>"}',
        time="1764399600",
        limit="1000",
        params=[("timeout", "10")],
    )
    invocation.receipt = Receipt(
        source="prometheus",
        location="http://prometheus.ops:9090",
        evaluated_at=datetime(2026, 11, 29, 7, 0, tzinfo=UTC),
        requests=[request],
        output_sha256=output_digest(invocation.output),
    ).stored()
    invocation.save()

    page = client.get(change_url(session)).content.decode()

    assert "<script>alert(1)</script>" not in page
    # Beside the claim that cites it, and in the call's row.
    assert page.count(html.escape(request.text())) == 2
    assert page.count(output_digest(invocation.output)) == 2
    assert f"证据回执 #{invocation.pk}" in page


def test_a_call_recorded_before_receipts_says_it_has_none(client, reviewer):
    session = CompletedSessionFactory()

    page = client.get(change_url(session)).content.decode()

    assert "没有证据回执（记录于回执功能之前）" in page
