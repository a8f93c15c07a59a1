"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.metric_catalog.source import MetricCatalogSource

# A helper: it says which metrics exist and how to query them, never what a metric's value is (that
# is `query_promql`'s evidence), so it has no record list and is never cited.
CATALOG = EvidenceKind(
    package="metric_catalog",
    tool="search_metrics",
    label="指标目录检索",
    noun="指标目录",
    source=MetricCatalogSource,
)
