"""What the configured sources know now (contracts §12): services, alert names, runbook names.

The inventory protocol: a backend class (the dotted paths of `DIAGNOSIS["TOOL_BACKENDS"]`) may
offer `inventory(*, now) -> SourceInventory`. Each distinct configured backend that does is asked
once; their answers are united. A backend that fails is left out with a logged warning (the tool
call itself will then fail and say so); a backend without the method contributes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


@dataclass
class SourceInventory:
    # Service names as the sources spell them (values of the service labels, log records' service).
    services: set[str] = field(default_factory=set)
    # Alert names: the alert list, the alerting rules, the runbooks' alert terms.
    alerts: set[str] = field(default_factory=set)
    # Runbook document names (file stems or titles).
    runbooks: set[str] = field(default_factory=set)

    def united(self, other: SourceInventory) -> SourceInventory:
        return SourceInventory(
            services=self.services | other.services,
            alerts=self.alerts | other.alerts,
            runbooks=self.runbooks | other.runbooks,
        )


def sources_inventory(*, now: datetime) -> SourceInventory:
    inventory = SourceInventory()
    for path in dict.fromkeys(settings.DIAGNOSIS["TOOL_BACKENDS"].values()):
        backend = import_string(path)()
        if not hasattr(backend, "inventory"):
            continue
        try:
            inventory = inventory.united(backend.inventory(now=now))
        except Exception:  # a source being down must not stop the session; its tool call reports it
            logger.warning("inventory of %s failed", path, exc_info=True)
    return inventory
