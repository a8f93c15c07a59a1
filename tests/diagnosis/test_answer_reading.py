"""An answer read in ten seconds: what it is worth, what was searched and not found, each excerpt once,
one badge per claim, example questions one click away, and a live line while it runs."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import session_start
from tests.factories import DiagnosisSessionFactory, ToolInvocationFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineer(client):
    user = UserFactory()
    client.force_login(user)
    return user


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


@pytest.fixture
def shop_world(settings):
    data = world_tools("shop").source_data()
    overrides = {
        "VOCABULARY_FILE": str(WORLDS_DIR / "shop" / "vocabulary.json"),
        **fixture_sources(data, config=settings.DIAGNOSIS),
    }
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
        yield


def page_of(client, session: DiagnosisSession) -> str:
    response = client.get(reverse("chat-conversation", args=[session.session_id]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(
    ("output_type", "label"),
    [("NORMAL", "已核验"), ("LOW_CONFID_WITH_DISCLAIMER", "有证据缺口"), ("DEGRADED", "已降级，需人工")],
)
def test_the_output_type_is_named_for_what_the_answer_is_worth(output_type, label):
    session = DiagnosisSessionFactory(output_type=output_type)

    assert session.get_output_type_display() == label
    assert "正常" not in label


def test_nothing_found_reads_as_a_sentence_of_what_was_searched_and_where_once(client, engineer):
    session = session_start(
        query="确认 inventory-service 是否存在 HikariCP 连接池耗尽", owner=engineer, run_inline=True
    )
    sentence = "在 日志查询（关键词 HikariCP，服务 inventory-service，来源 演示数据）中未检索到匹配记录"

    assert session.answer.count(sentence) == 1
    assert "query_logs(query=" not in session.answer
    page = page_of(client, session)
    evidence = page.split('aria-label="证据"')[1]
    assert evidence.count(sentence) == 1
    assert 'data-claim-type="negative_observation">未找到记录</span>' in evidence


def test_a_second_worlds_no_hit_names_its_own_service_and_source(shop_world):
    session = session_start(query="只确认 payments 是否存在 KubePodCrashLooping 告警", run_inline=True)

    assert "在 告警查询（服务 payments，告警 KubePodCrashLooping，来源 评测数据" in session.answer
    assert "中未检索到匹配记录" in session.answer


def test_each_claim_has_one_badge_and_a_verified_binding_no_second_status_badge(client, engineer):
    session = session_start(
        query="只确认 order-service 是否存在 HighMemoryUsage 告警", owner=engineer, run_inline=True
    )
    evidence = page_of(client, session).split('aria-label="证据"')[1]

    claims = evidence.split('<article class="claim">')[1:]
    assert claims
    for claim in claims:
        head = claim.split('<p class="claim-head">')[1].split("</p>")[0]
        assert head.count('class="badge') == 1
        assert "引用已核验" not in claim


def test_example_questions_are_forms_that_ask_them(client, engineer):
    page = client.get(reverse("chat")).content.decode()

    examples = page.split('<ul class="examples">')[1].split("</ul>")[0]
    assert examples.count(f'action="{reverse("chat-ask")}"') == 3
    assert 'name="message" value="order-service 数据库连接池是否耗尽？"' in examples
    assert "<script" not in examples

    asked = client.post(reverse("chat-ask"), {"message": "order-service 数据库连接池是否耗尽？"})
    assert asked.status_code == 302
    assert DiagnosisSession.objects.get(owner=engineer).query == "order-service 数据库连接池是否耗尽？"


def test_a_running_session_shows_its_stage_tool_calls_and_elapsed_time(client, engineer):
    session = DiagnosisSessionFactory(
        owner=engineer,
        status=DiagnosisSession.Status.RUNNING,
        current_stage="verifier",
        rounds=1,
        started_at=timezone.now() - timedelta(seconds=12),
    )
    ToolInvocationFactory.create_batch(3, session=session)

    panel = client.get(reverse("chat-panel", args=[session.session_id])).content.decode()

    line = panel.split('<p class="progress-line"')[1].split("</p>")[0]
    assert 'data-stage="verifier"' in line
    assert "第 1 轮 · 校验中 · 已调用工具 3 次 · 已用时 1" in line
    # The stages before the current one are done, though their steps are written with the round.
    assert panel.count('data-state="done"') == 3
    assert 'data-agent="verifier" data-state="active"' in panel
