"""The session's `World`, built where Django is: the configured vocabulary file,
what the configured sources know now, and `DIAGNOSIS_SERVICE_LABELS`. The session runner builds
it once per session and hands it to the Django-free pipeline as plain data."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings

from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import ExecutorOutput
from diagnosis.pipeline.focus import Inventory, World
from diagnosis.pipeline.scope import out_of_focus, record_subjects
from tools.clock import now
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.series.source import LabelledSeriesSource, SeriesSource
from tools.series import SeriesLabels
from tools.signal_roles import MetricFamily
from tools.sources import source_for, sources_catalog, sources_inventory
from tools.sources.http import SourceError

logger = logging.getLogger(__name__)


def world_current() -> World:
    """The world now: asks every configured source for its inventory and the metrics source for its
    catalog (once)."""
    vocabulary = current_vocabulary()
    known = sources_inventory(now=now())
    service_labels = tuple(settings.DIAGNOSIS["SERVICE_LABELS"])
    labels = _series_labels(service_labels=service_labels, metrics=known.metrics)
    return World(
        vocabulary=vocabulary,
        inventory=Inventory.build(
            services=known.services,
            alerts=known.alerts,
            runbooks=known.runbooks,
            metrics=known.metrics,
            vocabulary=vocabulary,
        ),
        service_labels=service_labels,
        now=now(),
        logs_window_minutes=settings.DIAGNOSIS["LOGS_WINDOW_MINUTES"],
        carrier=labels.carrier if labels else None,
        label_names=labels.label_names if labels else None,
        families=_families(),
        metric_catalog=sources_catalog(now=now()),
        series_queried=source_for(SeriesSource) is not None,
    )


def _series_labels(*, service_labels: tuple[str, ...], metrics: set[str]) -> SeriesLabels | None:
    """The series labels of the source PromQL goes to, when it can tell them."""
    source = source_for(SeriesSource)
    if not isinstance(source, LabelledSeriesSource):
        return None
    return SeriesLabels(source, service_labels=service_labels, metrics=metrics)


def _families() -> tuple[MetricFamily, ...]:
    """The metric families the PromQL source states (none when it states none or fails: an
    investigation then says it read no key signal)."""
    source = source_for(SeriesSource)
    if not isinstance(source, SeriesSource):
        return ()
    try:
        return tuple(source.metric_families())
    except SourceError:
        logger.warning("metric metadata of the PromQL source unknown: the source failed", exc_info=True)
        return ()


def world_recorded(record: dict) -> World:
    """The world a round record was read against (its `inventory`), with the configured vocabulary:
    judging a finished session again never asks the sources."""
    vocabulary = current_vocabulary()
    known = record.get("inventory") or {}
    return World(
        vocabulary=vocabulary,
        inventory=Inventory.build(
            services=known.get("services", ()),
            alerts=known.get("alerts", ()),
            runbooks=known.get("runbooks", ()),
            metrics=known.get("metrics", ()),
            vocabulary=vocabulary,
        ),
        service_labels=tuple(settings.DIAGNOSIS["SERVICE_LABELS"]),
    )


def off_topic_claims(*, query: str, record: dict, invocations: Sequence[ToolInvocation]) -> list[str]:
    """Ids of the kept claims of a round record that are about a subject the question did not ask
    (verified means quoted and on topic), judged afresh from the question, the
    recorded tool calls and the recorded inventory, not from the guard's own record."""
    if not record.get("executor_structured_output"):
        return []
    world = world_recorded(record)
    result = out_of_focus(
        executor_output=ExecutorOutput.model_validate(record["executor_structured_output"]),
        focus=world.focus_of(query=query, excluded=record.get("excluded_topics") or []),
        subjects=record_subjects(
            invocations=[invocation.tool_result() for invocation in invocations],
            inventory=world.inventory,
            service_labels=world.service_labels,
        ),
        inventory=world.inventory,
    )
    return list(dict.fromkeys(warning.claim_id or "" for warning in result.warnings))
