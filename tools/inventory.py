"""What one source knows now: services, alert names, runbook names.

Every source says it with `inventory(*, now) -> SourceInventory` (`tools.evidence.source.Source`);
`tools.sources.sources_inventory` asks each source the tools would use and unites the answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SourceInventory:
    # Service names as the sources spell them (values of the service labels, log records' service).
    services: set[str] = field(default_factory=set)
    # Alert names: the alert list, the alerting rules, the runbooks' alert terms.
    alerts: set[str] = field(default_factory=set)
    # Runbook document names (file stems or titles).
    runbooks: set[str] = field(default_factory=set)
    # Metric names the metrics source holds series of (`node_load1`): a question may name one.
    metrics: set[str] = field(default_factory=set)

    def united(self, other: SourceInventory) -> SourceInventory:
        return SourceInventory(
            services=self.services | other.services,
            alerts=self.alerts | other.alerts,
            runbooks=self.runbooks | other.runbooks,
            metrics=self.metrics | other.metrics,
        )
