"""Alerts that fire by design: a dead man's switch or watchdog keeps firing so that its absence
tells the alerting pipeline is broken. It is named as such and never ranked first (the alert lists,
which fired first, AI Ops).

Recognised by data, never by an alert's name in code: `severity="none"`, a rule whose `expr` is a
constant (`vector(1)`), or the vocabulary's `always_firing` words in its name's parts, its
description or its annotations ("This is an alert meant to ensure that the entire alerting pipeline
is functional", "dead man's switch", "始终触发").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tools.evidence.alerts.record import AlertRecord
from tools.terms import name_parts, term_pattern
from tools.vocabulary import Vocabulary

ALWAYS_FIRING = "始终触发的看门狗告警，用于确认告警链路本身正常"
NO_SEVERITY = "none"
# A rule that holds whatever happens: `vector(1)`, `1`.
CONSTANT_EXPR = re.compile(r"^\s*(?:vector\s*\(\s*[0-9.]+\s*\)|[0-9.]+)\s*$")


def fires_always(
    *, name: str, severity: str = "", expr: str = "", texts: Iterable[str] = (), vocabulary: Vocabulary
) -> bool:
    """Whether an alert with these parts fires by design (`texts`: its description and annotations)."""
    if str(severity).strip().lower() == NO_SEVERITY or CONSTANT_EXPR.match(expr or ""):
        return True
    said = [" ".join(name_parts(name)).lower(), *(str(text).lower() for text in texts)]
    return any(term_pattern(term).search(text) for term in vocabulary.always_firing_terms() for text in said)


def record_fires_always(record: AlertRecord, vocabulary: Vocabulary) -> bool:
    return fires_always(
        name=record.alert_name,
        severity=str(record.severity or ""),
        expr=record.expr or "",
        texts=[record.description, *(record.annotations or {}).values()],
        vocabulary=vocabulary,
    )
