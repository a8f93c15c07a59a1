"""The chat page's example questions and placeholder (contracts §18): the demo world's own examples
on the demo world; with real sources, questions about what those sources have firing now (most
severe first) and the services they know."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.core.cache import cache

from diagnosis.pipeline.slots import SEVERITY_RANK
from tools.clock import now
from tools.sources import is_demo, source_for, sources_inventory
from tools.sources.kinds import AlertSource
from tools.world import demo_examples

logger = logging.getLogger(__name__)

# The page asks the sources at most this often: a chat page view must not wait on them each time.
EXAMPLES_CACHE_SECONDS = 60
EXAMPLE_COUNT = 3
FIRING = "firing"
PRIORITY_QUESTION = "现在有哪些告警，先处理哪个？"
HEALTH_QUESTION = "有没有抓取目标挂了？"


@dataclass(frozen=True)
class AskExamples:
    questions: list[str]
    placeholder: str


def ask_examples() -> AskExamples:
    """What the page offers to ask: from the source that answers alert questions, cached briefly."""
    source = source_for(AlertSource)
    if source is None or is_demo(source):
        return _examples(demo_examples())
    key = "ask-examples:" + ":".join(source.provenance()).encode().hex()
    examples = cache.get(key)
    if examples is None:
        examples = _examples(_live_questions(source))
        cache.set(key, examples, EXAMPLES_CACHE_SECONDS)
    return examples


def _examples(questions: list[str]) -> AskExamples:
    return AskExamples(questions=questions[:EXAMPLE_COUNT], placeholder=f"例如：{questions[0]}")


def _live_questions(source: AlertSource) -> list[str]:
    try:
        alerts = source.query_alerts(service=None, alert_name=None, now=now())
    except Exception:  # a source being down must not stop the chat page; its tool calls say why
        logger.warning("examples: the alert source %s failed", source.provenance(), exc_info=True)
        return [PRIORITY_QUESTION, HEALTH_QUESTION]
    firing = sorted(
        (alert for alert in alerts if alert.get("state") == FIRING and alert.get("alert_name")),
        key=lambda alert: (
            SEVERITY_RANK.get(str(alert.get("severity", "")).lower(), len(SEVERITY_RANK)),
            alert["alert_name"],
            alert.get("service") or "",
        ),
    )
    subjects = list(dict.fromkeys((alert["alert_name"], alert.get("service") or "") for alert in firing))
    questions = []
    if subjects:
        alert, service = subjects[0]
        questions.append(f"只确认 {service} 是否存在 {alert} 告警" if service else f"是否存在 {alert} 告警")
        alert, service = subjects[1] if len(subjects) > 1 else subjects[0]
        questions.append(f"{service} 的 {alert} 告警为什么触发？" if service else f"{alert} 告警为什么触发？")
        questions.append(PRIORITY_QUESTION)
        return questions
    services = sorted(sources_inventory(now=now()).services)
    questions += [f"{service} 最近 15 分钟有错误日志吗？" for service in services[:2]]
    return [*questions, PRIORITY_QUESTION, HEALTH_QUESTION]
