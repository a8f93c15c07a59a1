"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.alerts.record import AlertRecord
from tools.evidence.alerts.source import AlertSource
from tools.evidence.kind import EvidenceKind

ALERTS = EvidenceKind(
    package="alerts",
    tool="query_alerts",
    label="告警查询",
    noun="告警",
    collection_key="alerts",
    plannable=True,
    other_path_noun="指标",
    # Its name until issue 35: it returns alerts, the metrics tool is query_promql.
    former_names=("query_metrics",),
    counted_as="alerts",
    one_topic_a_round=True,
    record=AlertRecord,
    source=AlertSource,
    unconfigured="未配置告警源",
)
