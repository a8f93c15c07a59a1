"""The chat page's example questions come from the world the sources serve."""

import pytest
from django.core.cache import cache

from diagnosis.presenters.examples import PRIORITY_QUESTION, AskExamples, ask_examples
from diagnosis.selectors.examples import ask_subjects
from tests.tools.support import use_source
from tools.demo_questions import demo_examples
from tools.evidence.alerts.source import AlertSource

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def examples_offered() -> AskExamples:
    """What the page offers now: the selector's subjects, worded."""
    return ask_examples(subjects=ask_subjects())


class DownSource(AlertSource):
    def provenance(self):
        return "prometheus", "http://127.0.0.1:9"

    def query_alerts(self, **call):
        raise ConnectionError("connection refused")


def test_the_demo_world_offers_its_own_examples(settings):
    examples = examples_offered()

    assert examples.questions == demo_examples()
    assert examples.placeholder == "例如：只确认 order-service 是否存在 HighMemoryUsage 告警"


def test_a_world_with_its_own_sources_is_asked_about_its_firing_alerts_most_severe_first(either_world):
    examples = examples_offered()

    if either_world == "demo":
        assert examples.questions == demo_examples()
        return
    # The shop world fires KubePodCrashLooping (critical) on checkout, then two warnings (by name).
    assert examples.questions == [
        "只确认 checkout 是否存在 KubePodCrashLooping 告警",
        "catalog 的 HighRequestLatency 告警为什么触发？",
        PRIORITY_QUESTION,
    ]
    assert examples.placeholder == "例如：只确认 checkout 是否存在 KubePodCrashLooping 告警"
    page_text = " ".join([*examples.questions, examples.placeholder])
    assert "order-service" not in page_text
    assert "HighMemoryUsage" not in page_text


def test_a_source_that_is_down_leaves_generic_examples_and_the_page_working(settings):
    use_source(settings, DownSource, AlertSource)

    examples = examples_offered()

    assert examples.questions[0] == PRIORITY_QUESTION
    assert examples.placeholder == f"例如：{PRIORITY_QUESTION}"
