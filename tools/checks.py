"""System checks of the evidence sources (`manage.py check`)."""

from django.conf import settings
from django.core.checks import Warning, register

from tools.evidence.alerts.source import AlertSource
from tools.sources import is_demo, source_for

WEBHOOK_ON_DEMO = "tools.W001"


@register()
def webhook_alerts_from_demo_world(app_configs, **kwargs) -> list[Warning]:
    """Real alerts arriving while query_alerts answers from the demo world would be "verified"
    with demo evidence."""
    if settings.DIAGNOSIS.get("ALERTMANAGER_TOKEN") and is_demo(source_for(AlertSource)):
        return [
            Warning(
                "The Alertmanager webhook is enabled (DIAGNOSIS_ALERTMANAGER_TOKEN) but alerts come from "
                "the demo world.",
                hint="Set DIAGNOSIS_PROMETHEUS_URL and/or DIAGNOSIS_ALERTMANAGER_URL.",
                id=WEBHOOK_ON_DEMO,
            )
        ]
    return []
