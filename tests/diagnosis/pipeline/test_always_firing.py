"""Alerts that fire by design are recognised by data: `severity="none"`, a constant rule, or the
vocabulary's always-firing words in the name's parts, the description or the annotations."""

from __future__ import annotations

import pytest

from diagnosis.pipeline.always_firing import fires_always, record_fires_always
from tools.evidence.alerts.record import AlertRecord
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, Vocabulary, vocabulary_load

VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)
# The public rules' own words: kube-prometheus' Watchdog and awesome-prometheus-alerts' dead man's switch.
WATCHDOG = (
    "This is an alert meant to ensure that the entire alerting pipeline is functional. "
    "This alert is always firing, therefore it should always be firing in Alertmanager"
)
DEAD_MANS_SWITCH = "Prometheus DeadManSwitch is an always-firing alert. It's used as an end-to-end test of Prometheus through the Alertmanager."


@pytest.mark.parametrize(
    "parts",
    [
        {"name": "PipelineHeartbeat", "severity": "none"},
        {"name": "PipelineHeartbeat", "expr": "vector(1)"},
        {"name": "Heartbeat", "texts": [WATCHDOG]},
        {"name": "PrometheusAlertmanagerE2eDeadManSwitch", "severity": "critical", "texts": [DEAD_MANS_SWITCH]},
        {"name": "DeadMansSwitch", "severity": "critical"},
        {"name": "告警链路心跳", "texts": ["用于确认告警链路正常，始终触发"]},
    ],
)
def test_an_alert_firing_by_design_is_recognised_by_its_data(parts):
    assert fires_always(**parts, vocabulary=VOCABULARY)


@pytest.mark.parametrize(
    "parts",
    [
        {"name": "CheckoutErrorRatio", "severity": "critical", "expr": "checkout:error_ratio > 0.023"},
        {"name": "HighCPUUsage", "severity": "warning", "texts": ["CPU使用率持续超过80%"]},
        {"name": "KubePodCrashLooping", "severity": "warning", "texts": ["Pod is restarting, always check logs"]},
    ],
)
def test_an_ordinary_alert_is_not(parts):
    assert not fires_always(**parts, vocabulary=VOCABULARY)


def test_a_worlds_own_words_add_to_the_shipped_ones():
    own = Vocabulary(always_firing=["链路探针"])
    record = AlertRecord(alert_name="PipelineProbe", severity="critical", description="链路探针，持续触发")

    assert record_fires_always(record, own)
    assert "watchdog" in own.always_firing_terms()
