"""AIOps in the chat page (the "AI Ops" button), the trace JSON and the reviewers' admin."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils.html import strip_tags
from django_q.conf import Conf
from rest_framework.test import APIClient

from aiops.serializers import AlertmanagerNotificationSerializer
from aiops.services import aiops_run, aiops_start, alertmanager_notification_receive
from diagnosis.models import DiagnosisSession
from diagnosis.selectors.chat import chat_conversation
from tests.aiops.support import DEMO_NOW, alert, notification
from tests.factories import DiagnosisSessionFactory, ReviewerFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pinned_demo_world(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": DEMO_NOW, "ENGINE": "rules"}


@pytest.fixture
def analysis() -> DiagnosisSession:
    """A finished analysis of the demo world's three firing alerts, owned by an engineer."""
    return aiops_run(session_pk=aiops_start(owner=UserFactory()).pk)


def test_ai_ops_button_starts_an_analysis_and_shows_its_report(
    client, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(Conf, "SYNC", True)
    client.force_login(UserFactory())
    assert f'action="{reverse("chat-ai-ops")}"' in client.get("/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("chat-ai-ops"))

    session = DiagnosisSession.objects.get(parent__isnull=True)
    assert response.status_code == 302
    assert response.url == reverse("chat-conversation", args=[session.session_id])
    page = client.get(response.url).content.decode()
    assert "<th>告警</th>" in page and "<td>HighCPUUsage</td>" in page
    assert 'class="stages"' not in page  # the analysis runs no stages itself; its alerts' sessions do
    for child in session.children.all():
        assert reverse("chat-conversation", args=[child.session_id]) in page


def answer_on_page(client, session: DiagnosisSession) -> str:
    client.force_login(session.owner)
    page = client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()
    return page.split('<article class="answer">')[1].split("</article>")[0]


def test_report_page_names_each_reference_from_the_reports_record(client, analysis):
    analysis.answer = "旧的文本 query_alerts #1"
    analysis.save(update_fields=["answer"])

    answer = answer_on_page(client, analysis)

    assert "旧的文本" not in answer

    assert 'class="ref" title="query_alerts #' in answer
    assert "query_alerts #" not in strip_tags(answer)


def test_report_stored_before_records_renders_its_markdown_without_reading_references(client, analysis):
    analysis.answer_record = {}
    analysis.answer = "- 「x」（来源：query_logs #8 $.logs[0]） <b>"
    analysis.save(update_fields=["answer_record", "answer"])

    assert (
        answer_on_page(client, analysis)
        == "<ul>\n<li>「x」（来源：query_logs #8 $.logs[0]） &lt;b&gt;</li>\n</ul>"
    )


def test_sidebar_shows_the_analysis_but_not_its_per_alert_sessions(client, analysis):
    client.force_login(analysis.owner)

    conversations = client.get("/").context["page"].conversations

    assert [c.session_id for c in conversations] == [analysis.session_id]


def test_ai_ops_button_over_the_rate_limit_shows_why_and_starts_nothing(client, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "5/min"}
    engineer = UserFactory()
    DiagnosisSessionFactory(owner=engineer)
    client.force_login(engineer)

    response = client.post(reverse("chat-ai-ops"), follow=True)

    assert response.redirect_chain == [(reverse("chat"), 302)]
    assert "发起诊断过于频繁（每分钟最多 5 次）" in response.content.decode()
    assert not DiagnosisSession.objects.filter(kind=DiagnosisSession.Kind.AIOPS).exists()


def test_analysis_panel_lists_its_alert_sessions_in_order(analysis):
    conversation = chat_conversation(user=analysis.owner, session_id=analysis.session_id)

    assert conversation.alert_sessions == list(analysis.children.order_by("id"))
    assert len(conversation.alert_sessions) == 3
    first_alert = conversation.alert_sessions[0]
    assert chat_conversation(user=analysis.owner, session_id=first_alert.session_id).alert_sessions == []


def test_ai_ops_button_needs_a_signed_in_post(client):
    assert client.post(reverse("chat-ai-ops")).status_code == 302
    client.force_login(UserFactory())
    assert client.get(reverse("chat-ai-ops")).status_code == 405
    assert not DiagnosisSession.objects.exists()


def test_trace_of_an_analysis_lists_each_alerts_session_and_the_rule_evaluation(analysis):
    client = APIClient()
    client.force_authenticate(analysis.owner)

    trace = client.get(reverse("api-session-trace", args=[analysis.session_id])).json()

    assert trace["hasAiOpsRuleEvaluation"] is True
    assert trace["self_evaluation"]["aiops_rule_evaluation"]["verdict"] == "pass"
    children = trace["aiops"]["children"]
    assert [(c["alert_name"], c["service"], c["verdict"], c["output_type"]) for c in children] == [
        ("HighCPUUsage", "payment-service", "PASS", "NORMAL"),
        ("HighMemoryUsage", "order-service", "PASS", "NORMAL"),
        ("SlowResponse", "user-service", "PASS", "NORMAL"),
    ]
    child_trace = client.get(reverse("api-session-trace", args=[children[0]["session_id"]])).json()
    assert child_trace["aiops"]["parent_session_id"] == analysis.session_id
    assert child_trace["hasVerifierEvaluation"] is True


def test_admin_change_page_shows_per_alert_results_and_the_aiops_checks(client, analysis):
    client.force_login(StaffUserFactory(is_superuser=True))

    page = client.get(reverse("admin:diagnosis_diagnosissession_change", args=[analysis.pk])).content.decode()

    assert "各告警的诊断" in page
    for child in analysis.children.all():
        assert reverse("admin:diagnosis_diagnosissession_change", args=[child.pk]) in page
    assert "HighMemoryUsage · order-service" in page
    assert "分析范围内的告警" in page
    for check in ("final_report_exists", "report_focused_on_alerts", "evidence_tools_called"):
        assert check in page


def test_admin_page_of_a_per_alert_session_links_its_analysis(client, analysis):
    client.force_login(StaffUserFactory(is_superuser=True))
    child = analysis.children.first()

    page = client.get(reverse("admin:diagnosis_diagnosissession_change", args=[child.pk])).content.decode()

    assert reverse("admin:diagnosis_diagnosissession_change", args=[analysis.pk]) in page
    assert "各告警的诊断" not in page


def test_admin_list_filters_analyses_by_kind(client, analysis):
    client.force_login(StaffUserFactory(is_superuser=True))

    response = client.get(reverse("admin:diagnosis_diagnosissession_changelist") + "?kind=aiops")

    assert len(response.context["cl"].result_list) == 4


# --- Alertmanager's reports: who sees them, and the report page ---


@pytest.fixture
def webhook_report(settings) -> DiagnosisSession:
    """A finished analysis of a notification (no owner), in a world with other names."""
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ONCALL_GROUP": "oncall-sre"}
    payload = notification(
        alert(
            "CheckoutLatencyHigh",
            "Checkout API",
            fingerprint="c0ffee0000000001",
            labels={"service": "Checkout API", "pod": "checkout-7d9f"},
        ),
        alert("HighMemoryUsage", "order-service", fingerprint="b2c3d4e5f6071829"),
    )
    serializer = AlertmanagerNotificationSerializer(data=payload)
    serializer.is_valid(raise_exception=True)
    session = alertmanager_notification_receive(notification=serializer.validated_data).session
    return aiops_run(session_pk=session.pk)


def oncall_member():
    user = UserFactory()
    user.groups.add(Group.objects.get_or_create(name="oncall-sre")[0])
    return user


@pytest.mark.parametrize("who", ["oncall", "reviewer"])
def test_webhook_reports_are_in_the_sidebar_of_oncall_members_and_reviewers(client, webhook_report, who):
    user = oncall_member() if who == "oncall" else ReviewerFactory()
    client.force_login(user)

    conversations = client.get("/").context["page"].conversations
    page = client.get(reverse("chat-conversation", args=[webhook_report.session_id]))

    assert [c.session_id for c in conversations] == [webhook_report.session_id]
    assert page.status_code == 200


@pytest.mark.parametrize("other", [UserFactory, StaffUserFactory])
def test_other_engineers_never_see_webhook_reports_a_staff_flag_alone_included(client, webhook_report, other):
    client.force_login(other())

    assert client.get("/").context["page"].conversations == []
    assert client.get(reverse("chat-conversation", args=[webhook_report.session_id])).status_code == 404
    child = webhook_report.children.first()
    assert client.get(reverse("chat-conversation", args=[child.session_id])).status_code == 404


def test_report_page_leads_with_the_status_and_links_each_alerts_session_and_back(client, webhook_report):
    client.force_login(oncall_member())

    page = client.get(reverse("chat-conversation", args=[webhook_report.session_id])).content.decode()

    head = page.index('class="report-status"')
    assert head < page.index('class="answer"')
    children = list(webhook_report.children.order_by("id"))
    verified = sum(child.output_type == "NORMAL" for child in children)
    assert f'data-verified="{verified}"' in page
    assert f"{verified} 条已核验" in page
    assert '<span class="alert-name">CheckoutLatencyHigh</span>' in page
    assert "<code>pod=checkout-7d9f</code>" in page
    assert "证据来源：" in page and "演示数据" in page
    for child in children:
        assert f'data-verdict="{child.verdict}"' in page
        assert reverse("chat-conversation", args=[child.session_id]) in page
        child_page = client.get(reverse("chat-conversation", args=[child.session_id])).content.decode()
        assert reverse("chat-conversation", args=[webhook_report.session_id]) in child_page
        assert "返回所属的告警分析报告" in child_page


@pytest.mark.parametrize(
    ("name", "service"), [("HighMemoryUsage", "order-service"), ("CheckoutLatencyHigh", "Checkout API")]
)
def test_a_500_kb_label_value_is_cut_in_the_report_and_kept_whole_in_its_scope(client, name, service):
    huge = "x" * 500_000
    payload = notification(
        alert(
            name,
            service + huge,
            fingerprint="d00d000000000001",
            labels={"service": service + huge, "pod": huge},
        )
    )
    serializer = AlertmanagerNotificationSerializer(data=payload)
    serializer.is_valid(raise_exception=True)
    report = aiops_run(
        session_pk=alertmanager_notification_receive(notification=serializer.validated_data).session.pk
    )
    client.force_login(ReviewerFactory())

    page = client.get(reverse("chat-conversation", args=[report.session_id]))

    assert report.status == DiagnosisSession.Status.COMPLETED
    assert len(report.answer) < 20_000 and len(report.children.get().query) < 1000
    assert page.status_code == 200 and len(page.content) < 200_000, len(page.content)
    assert f"{service}{'x' * 50}" in page.content.decode() and "x" * 1000 not in page.content.decode()
    assert report.alert_scope["alerts"][0]["labels"]["pod"] == huge
