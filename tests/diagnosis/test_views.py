import pytest
from django.urls import reverse

from caselib.models import CaseLibrary
from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.scope import FOCUS_RULE
from diagnosis.services.session_lifecycle import session_execute
from diagnosis.services.sessions import session_start
from feedback.models import BadCase
from tests.factories import (
    AgentStepFactory,
    AlertInvocationFactory,
    CompletedSessionFactory,
    DiagnosisSessionFactory,
    ReviewerFactory,
    StaffUserFactory,
    UserFactory,
    claim_blocked,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineer(client):
    user = UserFactory()
    client.force_login(user)
    return user


def page_of(client, session: DiagnosisSession) -> str:
    response = client.get(reverse("chat-conversation", args=[session.session_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_chat_page_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.url.startswith("/login")


def test_login_page_is_chinese_and_logs_in(client):
    UserFactory(username="alice")
    page = client.get("/login").content.decode()
    assert "登录" in page
    assert 'lang="zh-hans"' in page
    response = client.post("/login", {"username": "alice", "password": "pw-for-tests-123"})
    assert response.status_code == 302
    assert response.url == reverse("chat")


def test_sidebar_lists_only_the_users_own_conversations(client, engineer):
    CompletedSessionFactory(owner=engineer, query="order-service 内存告警")
    CompletedSessionFactory(query="别人的问题 payment-service")
    page = client.get("/").content.decode()
    assert "我的对话" in page
    assert "order-service 内存告警" in page
    assert "别人的问题" not in page


def test_asking_starts_a_session_and_opens_its_conversation(client, engineer):
    response = client.post(
        reverse("chat-ask"), {"message": "只确认 order-service 是否存在 HighMemoryUsage 告警"}
    )
    session = DiagnosisSession.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("chat-conversation", args=[session.session_id])
    assert session.owner == engineer
    assert session.status == DiagnosisSession.Status.PENDING


def test_asking_an_empty_question_shows_the_error(client, engineer):
    response = client.post(reverse("chat-ask"), {"message": ""})
    assert response.status_code == 400
    assert "问题不能为空" in response.content.decode()
    assert not DiagnosisSession.objects.exists()


def test_asking_over_the_rate_limit_shows_why_and_keeps_the_question(client, engineer, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "1/min"}
    DiagnosisSessionFactory(owner=engineer)
    response = client.post(reverse("chat-ask"), {"message": "order-service 连接池是否耗尽？"})
    page = response.content.decode()
    assert response.status_code == 429
    assert "发起诊断过于频繁（每分钟最多 1 次）" in page
    assert "order-service 连接池是否耗尽？</textarea>" in page
    assert DiagnosisSession.objects.count() == 1


def test_ask_form_carries_a_csrf_token(client, engineer):
    assert 'name="csrfmiddlewaretoken"' in client.get("/").content.decode()


def test_live_session_polls_and_shows_each_stage(client, engineer):
    session = DiagnosisSessionFactory(
        owner=engineer, status=DiagnosisSession.Status.RUNNING, current_stage="executor"
    )
    AgentStepFactory(session=session, agent=AgentStep.Agent.PLANNER)
    panel = client.get(reverse("chat-panel", args=[session.session_id])).content.decode()
    assert 'hx-trigger="every 1s"' in panel
    assert 'data-agent="planner" data-state="done"' in panel
    assert 'data-agent="executor" data-state="active"' in panel
    assert 'data-agent="composer" data-state="pending"' in panel
    for label in ("规划", "取证", "核验引用", "校验", "撰写"):
        assert label in panel
    assert "诊断中" in panel


def test_finished_session_stops_polling_and_updates_its_sidebar_entry(client, engineer):
    session = CompletedSessionFactory(owner=engineer)
    panel = client.get(reverse("chat-panel", args=[session.session_id])).content.decode()
    assert "hx-trigger" not in panel
    assert panel.count('data-state="done"') == 5
    assert (
        f'<span id="conversation-meta-{session.pk}" class="conversation-meta" hx-swap-oob="true">已核验'
        in panel
    )


def test_normal_answer_shows_type_score_and_evidence_with_the_excerpt_marked(client, engineer):
    session = CompletedSessionFactory(owner=engineer, verdict="PASS")
    page = page_of(client, session)
    assert 'data-output-type="NORMAL"' in page
    assert "已核验" in page
    assert "证据支撑度 <strong>1.00</strong>" in page
    assert "<h4>结论</h4>" in page
    assert "<strong>HighMemoryUsage</strong>" in page
    # The page says the state in words; the quoted excerpt keeps the source's own "firing".
    assert "order-service 存在触发中状态的 HighMemoryUsage 告警" in page
    assert "<mark>HighMemoryUsage firing service=order-service</mark>: 内存使用率持续超过85%" in page
    assert 'data-verification="direct_observation"' in page
    assert 'data-claim-type="observation">已证实</span>' in page
    assert "有用" in page
    assert "没用" in page


def test_disclaimer_answer_hides_the_unsupported_claim(client, engineer):
    session = CompletedSessionFactory(owner=engineer, verdict="LOW_CONFID")
    page = page_of(client, session)
    assert "有证据缺口" in page
    assert "以下结论基于当前已获取证据" in page
    assert "内存升高由订单缓存泄漏引起" not in page
    assert "1 条断言未通过校验，未展示" in page


def test_a_blocked_claim_is_not_shown_and_the_page_says_which_guard_blocked_it(client, engineer):
    session = CompletedSessionFactory(owner=engineer, verdict="LOW_CONFID")
    claim_blocked(session, claim_id="c1", rule=FOCUS_RULE)
    page = page_of(client, session)
    assert "状态的 HighMemoryUsage 告警" not in page
    assert "1 条断言涉及问题之外的对象，已拦截，未展示。" in page
    assert "1 条断言未通过校验，未展示" in page


def test_degraded_answer_never_shows_executor_claim_text(client, engineer):
    session = CompletedSessionFactory(owner=engineer, verdict="REJECT")
    page = page_of(client, session)
    assert "已降级，需人工" in page
    assert "当前无法基于已获取证据生成可靠结论" in page
    assert "状态的 HighMemoryUsage 告警" not in page
    assert "当前 97%" not in page


DIRECT_CLAIM = "order-service 存在 HighMemoryUsage 告警，内存使用率当前 91%"
CONTRADICTED_CLAIM = "order-service 的 HighMemoryUsage 告警已经恢复"
ALERT_BINDING = {
    "tool_name": "query_alerts",
    "source_invocation_id": "{{inv:query_alerts}}",
    "raw_path": "$.alerts[0]",
    "evidence_excerpt": "{{ref:query_alerts:0:$.alerts[0]}}",
}


def claim(claim_id: str, text: str) -> dict:
    return {
        "claim_id": claim_id,
        "claim_type": "observation",
        "claim_text": text,
        "evidence_bindings": [ALERT_BINDING],
    }


def check(claim_id: str, verification: str) -> dict:
    return {"claim_id": claim_id, "verification": verification, "detail": "…", "evidence_refs": []}


@pytest.fixture
def mixed_reject(fake_llm, settings, engineer):
    """A real session through the pipeline: one directly observed claim and one contradicted one,
    so REJECT and DEGRADED although a claim was verified."""
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}
    fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
                {
                    "answer_version": "executor_evidence_v2",
                    "claims": [claim("claim-1", DIRECT_CLAIM), claim("claim-2", CONTRADICTED_CLAIM)],
                    "hypotheses": [],
                    "missing_info": [],
                    "recommended_actions": [],
                    "diagnosis_summary": "告警存在",
                    "user_facing_answer": DIRECT_CLAIM,
                },
            ],
            "verifier": [
                {
                    "claim_checks": [
                        check("claim-1", "direct_observation"),
                        check("claim-2", "contradicted"),
                    ],
                    "facts_checked": [],
                    "rationale": "第二条断言与告警状态矛盾",
                }
            ],
        }
    )
    session = session_start(
        query="只确认 order-service 是否存在 HighMemoryUsage 告警",
        owner=engineer,
        engine="llm",
        run_inline=True,
    )
    assert (session.verdict, session.output_type) == ("REJECT", DiagnosisSession.OutputType.DEGRADED)
    return session


def test_a_degraded_panel_shows_no_claim_text_not_even_a_directly_observed_one(client, mixed_reject):
    page = page_of(client, mixed_reject)

    assert "当前无法基于已获取证据生成可靠结论" in page
    assert DIRECT_CLAIM not in page
    assert CONTRADICTED_CLAIM not in page
    assert "2 条断言未通过校验，未展示" in page
    # Only the gatekeeper-verified excerpt is listed, as the degraded template quotes it.
    assert "HighMemoryUsage firing service=order-service" in page


def test_failed_session_shows_the_stable_message_with_its_error_id_never_the_exception(client, engineer):
    session = session_start(query="order-service 内存", owner=engineer)

    def broken(_session):
        raise AttributeError("'str' object has no attribute 'message'")

    session = session_execute(session_pk=session.pk, body=broken)
    page = page_of(client, session)

    assert "诊断失败" in page
    assert f"诊断执行失败（错误编号 {session.error_id}），请稍后重试或联系管理员。" in page
    assert "AttributeError" not in page
    assert "has no attribute" not in page


def test_model_and_tool_text_is_escaped(client, engineer):
    session = CompletedSessionFactory(
        owner=engineer,
        query="<script>alert('q')</script>",
        answer="## 结论\n<img src=x onerror=alert(1)> **ok**",
    )
    invocation = session.tool_invocations.get()
    invocation.retrieval_details["evidence_refs"][0]["text"] = (
        "<b>HighMemoryUsage firing service=order-service</b><script>alert('tool')</script>"
    )
    invocation.save()
    page = page_of(client, session)
    assert "<script>alert(" not in page
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt; <strong>ok</strong>" in page
    assert "&lt;script&gt;alert(&#x27;q&#x27;)&lt;/script&gt;" in page
    assert "&lt;b&gt;<mark>HighMemoryUsage firing service=order-service</mark>&lt;/b&gt;" in page


def test_another_users_conversation_is_not_found(client, engineer):
    session = CompletedSessionFactory()
    assert client.get(reverse("chat-conversation", args=[session.session_id])).status_code == 404
    assert client.get(reverse("chat-panel", args=[session.session_id])).status_code == 404


def test_a_staff_flag_alone_does_not_open_another_users_conversation(client):
    client.force_login(StaffUserFactory())
    session = CompletedSessionFactory()
    assert client.get(reverse("chat-conversation", args=[session.session_id])).status_code == 404
    assert client.get(reverse("chat-panel", args=[session.session_id])).status_code == 404


def test_a_reviewer_reads_another_users_conversation_without_its_feedback_bar(client):
    client.force_login(ReviewerFactory())
    session = CompletedSessionFactory()
    page = page_of(client, session)
    assert "HighMemoryUsage" in page
    assert 'name="feedback"' not in page
    response = client.post(reverse("chat-feedback", args=[session.session_id]), {"feedback": "useful"})
    assert response.status_code == 404
    assert not CaseLibrary.objects.exists()


def test_useful_button_through_htmx_saves_a_case_and_shows_the_message(client, engineer):
    session = CompletedSessionFactory(owner=engineer)
    response = client.post(
        reverse("chat-feedback", args=[session.session_id]), {"feedback": "useful"}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "反馈已记录" in body
    assert 'value="useful" class="feedback-button chosen"' in body
    assert CaseLibrary.objects.get().diagnosis_id == session.session_id


def test_not_useful_button_without_javascript_redirects_back(client, engineer):
    session = CompletedSessionFactory(owner=engineer)
    response = client.post(reverse("chat-feedback", args=[session.session_id]), {"feedback": "not_useful"})
    assert response.status_code == 302
    assert BadCase.objects.get().session == session
    assert "已转人工审核" in client.get(response.url).content.decode()


def test_failed_session_offers_feedback_and_useful_is_recorded_without_a_case(client, engineer):
    session = DiagnosisSessionFactory(owner=engineer, status=DiagnosisSession.Status.FAILED)
    assert 'name="feedback" value="useful"' in page_of(client, session)
    response = client.post(
        reverse("chat-feedback", args=[session.session_id]), {"feedback": "useful"}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "反馈已记录；失败的诊断不沉淀为案例" in body
    assert 'value="useful" class="feedback-button chosen"' in body
    assert not CaseLibrary.objects.exists()


def test_feedback_on_another_users_session_is_not_found(client, engineer):
    session = CompletedSessionFactory()
    response = client.post(reverse("chat-feedback", args=[session.session_id]), {"feedback": "useful"})
    assert response.status_code == 404


def test_feedback_with_an_unknown_value_shows_an_error(client, engineer):
    session = CompletedSessionFactory(owner=engineer)
    response = client.post(
        reverse("chat-feedback", args=[session.session_id]), {"feedback": "maybe"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert "反馈只能是" in response.content.decode()


def test_page_loads_htmx_from_the_app_and_no_cdn(client, engineer):
    page = client.get("/").content.decode()
    assert "/static/vendor/htmx.min.js" in page
    assert "http://" not in page
    assert "https://" not in page


def test_unchecked_citation_to_a_foreign_invocation_is_flagged(client, engineer):
    session = CompletedSessionFactory(owner=engineer, verdict="PASS")
    foreign = AlertInvocationFactory()
    evaluation = session.self_evaluation["verifier_evaluation"]
    evaluation["gatekeeper_result"]["checked_bindings"][0]["source_invocation_id"] = foreign.pk
    session.save()
    page = page_of(client, session)
    assert "引用的工具输出不属于本会话" in page
