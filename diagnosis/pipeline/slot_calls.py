"""The calls the asks need: made by code before the executor, whichever engine
runs, so its plan holds them and it starts from their results."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.asks import Ask, only_actions
from diagnosis.pipeline.interfaces import Toolbox, ToolboxWrapper, call_key
from diagnosis.pipeline.slots import (
    MAX_RANGE_MINUTES,
    STEP_INTENTS,
    SlotWorld,
    alert_arguments,
    alert_on_topic,
    alerts_of,
    on_topic,
    runbook_names,
)
from tools.promql import comparison_of, quoted, series_query

Call = tuple[str, dict]


def slot_calls_run(
    asks: Sequence[Ask], *, toolbox: Toolbox, world: SlotWorld, prior: Sequence[dict]
) -> list[dict]:
    """The calls the asks need, in two turns (the alerts first: their `expr` names the series), each
    call once; a call an earlier round made is reused, not repeated."""
    earlier = {call_key(m["tool_name"], m.get("arguments") or {}): m for m in prior}
    messages = _turn([c for ask in asks for c in _alert_calls(ask)], toolbox, earlier)
    second = [c for ask in asks for c in _evidence_calls(ask, alerts=alerts_of(ask, messages), world=world)]
    return [*messages, *_turn(second, toolbox, earlier)]


def plan_tools(asks: Sequence[Ask], messages: Sequence[dict]) -> list[str]:
    """The tools of the asks' calls that the plan holds. An action's calls (its subject's alerts, their
    runbook) serve the code-written answer only: an action is answered without findings about its
    subject, so they are not the executor's."""
    if only_actions(asks):
        return []
    return list(dict.fromkeys(m["tool_name"] for m in messages))


def _turn(calls: list[Call], toolbox: Toolbox, earlier: dict[str, dict]) -> list[dict]:
    unique = {call_key(tool, arguments): (tool, arguments) for tool, arguments in calls}
    fresh = [call for key, call in unique.items() if key not in earlier]
    fresh = fresh[: max(0, toolbox.remaining_calls)]
    recorded = toolbox.call_many(fresh) if fresh else []
    by_key = {call_key(tool, arguments): m for (tool, arguments), m in zip(fresh, recorded, strict=True)}
    return [m for key in unique if (m := by_key.get(key) or earlier.get(key))]


def _alert_calls(ask: Ask) -> list[Call]:
    if ask.kind in ("health", "logs"):
        return []
    # A runbook or an action is about a named subject's alerts (their runbooks), never all alerts.
    if ask.kind in ("runbook", "action") and not (ask.subject and ask.subject_kind in ("alert", "service")):
        return []
    if ask.kind in ("value", "trend") and ask.subject_kind == "series":
        return []
    if ask.kind == "history" and ask.subject_kind != "service":
        return []
    return [("query_metrics", alert_arguments(ask))]


def _evidence_calls(ask: Ask, *, alerts: list[dict], world: SlotWorld) -> list[Call]:
    promql = "query_promql" in world.tools
    minutes = min(MAX_RANGE_MINUTES, ask.window.minutes + ask.window.end_minutes_ago)
    if ask.kind in ("value", "trend") and promql:
        range_minutes = minutes if ask.kind == "trend" else 0
        return [
            ("query_promql", {"query": query, "minutes": range_minutes})
            for query in _series_queries(ask, alerts, world)
        ]
    if ask.kind == "history" and promql:
        return [("query_promql", {"query": _history_query(ask, world), "minutes": 0})]
    if ask.kind == "health" and "query_targets" in world.tools:
        return [("query_targets", {})]
    if ask.kind in ("logs", "cause"):
        service = ask.service or next((a["service"] for a in alerts if a.get("service")), "")
        if ask.topic:
            term = world.vocabulary.canonical_term(ask.topic)
        else:
            # A plain logs ask about a service wants its recent lines: searched by its name alone.
            term = service if ask.kind == "logs" and ask.service else "error"
        return [("query_logs", {"query": term} | ({"service": service} if service else {}))]
    if ask.kind in ("runbook", "action"):
        names = sorted(runbook_names(ask, alerts) - {ask.subject})
        topic = world.vocabulary.canonical_term(ask.topic) if ask.topic else ""
        # The steps' intents, so the sections with steps rank first of the subject's sections: one
        # block per intent is what the slot quotes (the rest is left to the engine's own search).
        steps = [terms[0] for intent in STEP_INTENTS if (terms := world.vocabulary.intents.get(intent))]
        words = [ask.subject, *names, topic, ask.word, *steps]
        query = " ".join(dict.fromkeys(w for w in words if w))[:200] or ask.kind
        return [("lookup_knowledge", {"query": query, "top_k": len(STEP_INTENTS)})]
    return []


def _series_queries(ask: Ask, alerts: list[dict], world: SlotWorld) -> list[str]:
    """The asked series: the metric the question names; else the asked alert's own series (its `expr`
    without the comparison); else, for a topic, the series of the subject's alerts on that topic, or
    the vocabulary's queries of the topic (on the asked service, or on every series without one)."""
    if ask.subject_kind == "series":
        return [series_query(ask.subject, subject=ask.service, carrier=world.carrier, values=ask.values)]
    about = on_topic(alerts, ask, world.vocabulary)
    templated = bool(
        ask.topic and ask.subject_kind != "alert" and world.vocabulary.promql_topics.get(ask.topic)
    )
    topic_queries = (
        world.vocabulary.topic_queries(ask.topic, service=ask.service, carrier=world.carrier)[:2]
        if templated
        else []
    )
    # A topic is that topic's series, not whatever the subject's other alerts watch; asked of every
    # subject ("主机内存还剩多少"), it is the topic's series, not the few some alert rules watch.
    if templated and ask.subject_kind == "all":
        return topic_queries
    if templated and not any(
        alert_on_topic(a.get("alert_name", ""), ask.topic, world.vocabulary) for a in about
    ):
        return topic_queries
    own = [c.series for a in about if (c := comparison_of(a.get("expr") or ""))]
    return list(dict.fromkeys(own))[:3] or topic_queries


def _history_query(ask: Ask, world: SlotWorld) -> str:
    """`ALERTS_FOR_STATE` holds each active alert's activeAt, a new value per episode: its changes over
    the window, plus one, count the episodes exactly, whatever the range query's step would miss."""
    window = f"[{min(MAX_RANGE_MINUTES, ask.window.minutes)}m]"
    offset = f" offset {ask.window.end_minutes_ago}m" if ask.window.end_minutes_ago else ""
    if ask.subject_kind == "alert":
        selectors = [f'alertname="{quoted(ask.subject)}"']
    elif ask.subject_kind == "service" and ask.subject:
        selectors = [f'{label}="{quoted(ask.subject)}"' for label in world.service_labels]
    else:
        selectors = [""]
    return " or ".join(f"changes(ALERTS_FOR_STATE{{{s}}}{window}{offset})" for s in selectors)


class CallsReused(ToolboxWrapper):
    """The executor's toolbox over the asks' calls: a call code already made is answered with its
    recorded message, not made again (so one search is one invocation, whoever asked for it)."""

    def __init__(self, toolbox: Toolbox, messages: Sequence[dict]) -> None:
        super().__init__(toolbox)
        self._made = {call_key(m["tool_name"], m.get("arguments") or {}): m for m in messages}

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[dict]:
        fresh = [call for call in calls if call_key(*call) not in self._made]
        recorded = iter(self._toolbox.call_many(fresh) if fresh else [])
        return [self._made.get(call_key(*call)) or next(recorded) for call in calls]
