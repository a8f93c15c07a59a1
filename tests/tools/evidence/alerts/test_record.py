"""What an alert is about: its service, else the labels its rule kept, never an empty name."""

import pytest

from diagnosis.pipeline.asks.shared import alert_text
from tools.evidence.alerts.record import AlertRecord


@pytest.mark.parametrize(
    ("labels", "service", "subject"),
    [
        # A rule aggregated by database keeps only that label (the exporter stack's rollback rule).
        (
            {"alertname": "PostgresHighRollbackRate", "severity": "warning", "datname": "shop"},
            "",
            "datname=shop",
        ),
        # The demo world's alerts carry their service.
        ({"alertname": "HighCPUUsage", "service": "payment-service"}, "payment-service", "payment-service"),
        # Another world's alert aggregated by queue and vhost.
        (
            {"alertname": "QueueBacklog", "severity": "critical", "vhost": "/", "queue": "invoices"},
            "",
            "queue=invoices,vhost=/",
        ),
        ({"alertname": "Watchdog", "severity": "none"}, "", ""),
    ],
)
def test_an_alert_is_about_its_service_else_the_labels_its_rule_kept(labels, service, subject):
    record = AlertRecord(alert_name=labels["alertname"], service=service, state="firing", labels=labels)

    assert record.subject() == subject


def test_an_alert_about_nothing_named_is_stated_without_an_empty_owner():
    aggregated = AlertRecord(
        alert_name="Watchdog", state="firing", severity="none", labels={"alertname": "Watchdog"}
    )
    owned = AlertRecord(alert_name="LedgerLag", service="ledger-service", state="firing", labels={})

    assert alert_text(aggregated) == "Watchdog 告警（firing，none）"
    assert alert_text(owned) == "ledger-service 的 LedgerLag 告警（firing）"
