"""`query_targets` (the `health` ask): one ref per scrape target naming its job, instance and
health, and for a failing one Prometheus's own `lastError`; only with a Prometheus source."""

import pytest

from diagnosis.services.toolbox import RecordingToolbox
from tests.tools.support import record, use_source
from tools.evidence.targets.source import TargetSource

pytestmark = pytest.mark.django_db
REFUSED = 'Get "http://127.0.0.1:9/metrics": dial tcp 127.0.0.1:9: connect: connection refused'


def target(job: str, instance: str, health: str, last_error: str = "") -> dict:
    return {
        "job": job,
        "instance": instance,
        "health": health,
        "last_error": last_error,
        "last_scrape": "2026-11-29 14:59:58",
        "scrape_url": f"http://{instance}/metrics",
        "labels": {"job": job, "instance": instance},
    }


class TwoJobsPrometheus(TargetSource):
    def targets(self) -> list[dict]:
        return [
            target("payments-exporter", "127.0.0.1:9", "down", REFUSED),
            target("node", "web-1:9100", "up"),
            target("node", "web-2:9100", "unknown"),
        ]


@pytest.fixture
def session(settings):
    from tests.factories import DiagnosisSessionFactory

    use_source(settings, TwoJobsPrometheus, TargetSource)
    return DiagnosisSessionFactory()


def test_each_target_is_a_ref_with_its_health_and_a_failing_ones_error(session):
    invocation = record(session, "query_targets")

    assert invocation.success
    assert invocation.output["total"] == 3
    assert invocation.evidence_refs == [
        {
            "raw_path": "$.targets[0]",
            "text": f'job="payments-exporter" instance="127.0.0.1:9" health=down lastError: {REFUSED}',
        },
        {"raw_path": "$.targets[1]", "text": 'job="node" instance="web-1:9100" health=up'},
        {"raw_path": "$.targets[2]", "text": 'job="node" instance="web-2:9100" health=unknown'},
    ]


def test_down_keeps_only_the_failing_targets_and_job_one_job(session):
    down = record(session, "query_targets", state="down")
    node = record(session, "query_targets", job="Node")

    assert [t["instance"] for t in down.output["targets"]] == ["127.0.0.1:9"]
    assert [t["instance"] for t in node.output["targets"]] == ["web-1:9100", "web-2:9100"]


def test_no_matching_target_is_no_evidence(session):
    invocation = record(session, "query_targets", job="ledger", state="down")

    assert invocation.success
    assert invocation.evidence_status == "no_evidence"


def test_without_prometheus_the_tool_is_not_offered_and_a_call_says_what_to_configure(db):
    from tests.factories import DiagnosisSessionFactory

    session = DiagnosisSessionFactory()
    toolbox = RecordingToolbox(session=session, round=1, max_calls=1)

    assert "query_targets" not in {tool["function"]["name"] for tool in toolbox.tool_definitions()}
    invocation = record(session, "query_targets")
    assert not invocation.success
    assert invocation.evidence_status == "failed"
    assert "DIAGNOSIS_PROMETHEUS_URL" in invocation.error


def test_with_prometheus_configured_the_tool_is_offered(settings, db):
    from tests.factories import DiagnosisSessionFactory

    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": "http://prom:9090"}
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(), round=1, max_calls=1)

    assert "query_targets" in {tool["function"]["name"] for tool in toolbox.tool_definitions()}
