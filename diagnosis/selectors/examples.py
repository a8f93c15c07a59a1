"""What the chat page's example questions are about: the demo world's own examples on
the demo world; with real sources, what those sources have firing now (most severe first) and the
services they know. `diagnosis.presenters.examples` words them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.core.cache import cache

from diagnosis.pipeline.asks.listing import SEVERITY_RANK
from tools.clock import now
from tools.demo_questions import demo_examples
from tools.evidence.alerts.source import AlertSource
from tools.sources import is_demo, source_for, sources_inventory

logger = logging.getLogger(__name__)

# The page asks the sources at most this often: a chat page view must not wait on them each time.
EXAMPLES_CACHE_SECONDS = 60
FIRING = "firing"


@dataclass(frozen=True)
class AskSubjects:
    # The world's own example questions; None for a world with real sources.
    world_questions: list[str] | None = None
    # The firing alerts as (alert name, service), most severe first, each once.
    alerts: list[tuple[str, str]] = field(default_factory=list)
    # The services the sources know, when nothing fires; none when the alert source is down.
    services: list[str] = field(default_factory=list)


def ask_subjects() -> AskSubjects:
    """From the source that answers alert questions, cached briefly."""
    source = source_for(AlertSource)
    if source is None or is_demo(source):
        return AskSubjects(world_questions=demo_examples())
    key = "ask-subjects:" + ":".join(source.provenance()).encode().hex()
    subjects = cache.get(key)
    if subjects is None:
        subjects = _live_subjects(source)
        cache.set(key, subjects, EXAMPLES_CACHE_SECONDS)
    return subjects


def _live_subjects(source: AlertSource) -> AskSubjects:
    try:
        alerts = source.query_alerts(service=None, alert_name=None, now=now())
    except Exception:  # a source being down must not stop the chat page; its tool calls say why
        logger.warning("examples: the alert source %s failed", source.provenance(), exc_info=True)
        return AskSubjects()
    firing = sorted(
        (alert for alert in alerts if alert.get("state") == FIRING and alert.get("alert_name")),
        key=lambda alert: (
            SEVERITY_RANK.get(str(alert.get("severity", "")).lower(), len(SEVERITY_RANK)),
            alert["alert_name"],
            alert.get("service") or "",
        ),
    )
    subjects = list(dict.fromkeys((alert["alert_name"], alert.get("service") or "") for alert in firing))
    if subjects:
        return AskSubjects(alerts=subjects)
    return AskSubjects(services=sorted(sources_inventory(now=now()).services))
