"""The engineer's page speaks Chinese (issue 25 item 5): references named for the engineer with the raw
reference in a tooltip, verdicts, output types and states as words, excerpts quoted as the source has
them, on the demo world and on the shop world."""

import copy

import pytest
from django.test import override_settings
from django.urls import reverse
from django.utils.html import strip_tags

from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from diagnosis.services.sessions import session_start
from diagnosis.templatetags.engineer_text import engineer_markdown, engineer_words
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

DEVELOPER_TOKENS = ("PASS", "NORMAL", "LOW_CONFID", "$.", "相似度", "query_alerts", "query_logs")
SHOP_QUESTION = "只确认 checkout 是否存在 KubePodCrashLooping 告警"
DEMO_QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"


def test_text_code_wrote_is_shown_as_written_tool_and_source_names_included():
    """Code writes tool and source names in words when it writes the text; what it stored before is
    not rewritten on the page."""
    assert (
        engineer_words("在 query_metrics（来源 loki）中未检索到") == "在 query_metrics（来源 loki）中未检索到"
    )
    assert engineer_markdown("query_logs：查询 query_logs #8 $.logs[0]") == (
        "<p>query_logs：查询 query_logs #8 $.logs[0]</p>"
    )


def test_tokens_become_words_outside_quotes_and_stay_inside_them():
    text = "HighCPUUsage 告警（firing）｜PASS（支撑度 1.00）｜NORMAL｜「alert firing PASS」"

    assert (
        engineer_words(text)
        == "HighCPUUsage 告警（触发中）｜核验通过（支撑度 1.00）｜已核验｜「alert firing PASS」"
    )


def test_an_output_type_in_the_text_reads_as_its_badge_does():
    text = "结果：DEGRADED，另一条 LOW_CONFID_WITH_DISCLAIMER"

    assert engineer_words(text) == "结果：已降级，需人工，另一条有证据缺口"


def test_words_inside_names_and_code_are_left_alone():
    assert engineer_words("PASSWORD_RESET firing_total") == "PASSWORD_RESET firing_total"
    assert "<code>state=firing</code>" in engineer_markdown("`state=firing`")


def test_markup_in_a_tool_calls_result_is_escaped():
    html = engineer_markdown('<script>x</script> query_logs #1 $.logs[0]"><b>')

    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html


@pytest.fixture
def shop_world(settings):
    """The shop world (its own names); its checkout alert without a description."""
    data = copy.deepcopy(world_tools("shop").source_data())
    for record in data["query_alerts"]["records"]:
        if record["alert_name"] == "KubePodCrashLooping":
            record["description"] = ""
    overrides = {
        "VOCABULARY_FILE": str(WORLDS_DIR / "shop" / "vocabulary.json"),
        **fixture_sources(data, config=settings.DIAGNOSIS),
    }
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
        yield


@pytest.fixture(params=["demo", "shop"])
def world_question(request, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "ENGINE": "rules"}
    if request.param == "shop":
        request.getfixturevalue("shop_world")
        return SHOP_QUESTION
    return DEMO_QUESTION


def test_the_answer_page_carries_no_developer_token_in_its_text(client, world_question):
    engineer = UserFactory()
    client.force_login(engineer)
    session = session_start(query=world_question, owner=engineer, engine="rules", run_inline=True)
    assert session.verdict == "PASS"

    page = client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()
    main = page.split('<main class="main">')[1]
    text = strip_tags(main)

    assert [token for token in DEVELOPER_TOKENS if token in text] == []
    assert "校验结论 核验通过" in " ".join(text.split())
    assert "关键事实中有已核验证据支撑的比例" in text
    # The raw reference is there for reviewers, in the tooltip of its name.
    assert 'title="query_alerts #' in main
    assert "：，" not in text
    assert "（触发中）" in text
    if world_question == SHOP_QUESTION:
        # The alert without a description: its state, then its value, nothing empty between.
        assert "KubePodCrashLooping 告警（触发中），当前值 6" in text
