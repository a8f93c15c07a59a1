"""`manage.py vocabulary --from-prometheus` against the live Prometheus: the file it
writes passes `--check` and, with no hand editing, answers a topic question with the live value; on
the exporter stack it has a topic for each golden signal and resource, and every template it writes
finds series there, on every subject and on the label that carries one."""

import json

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from tests.integration.test_answers_live import answer_of
from tools.numbers import number_text, series_name
from tools.promql import subject_query
from tools.series import SeriesLabels
from tools.sources.prometheus import PrometheusSource

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_a_vocabulary_written_from_prometheus_checks_and_answers_a_memory_question(
    team_sources, settings, stack, tmp_path, capsys
):
    out = tmp_path / "vocabulary.json"

    call_command("vocabulary", "--from-prometheus", "--out", str(out))
    call_command("vocabulary", "--check", str(out))
    capsys.readouterr()
    written = json.loads(out.read_text(encoding="utf-8"))
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(out)}
    trace, [conclusion] = answer_of("主机内存还剩多少", capsys)

    assert "内存" in written["groups"]["memory"]
    assert written["alert_topics"]["HighMemoryUsage"] == "memory"
    assert trace["session"]["output_type"] == "NORMAL"
    [available] = [
        i for i in trace["tool_invocations"] if i["input"].get("query") == "node_memory_MemAvailable_bytes"
    ]
    assert len(available["output"]["series"]) == 3
    for sample in available["output"]["series"]:
        at, value = sample["value"]
        [truth] = stack.prometheus("/api/v1/query", query=series_name(sample["metric"]), time=at)["result"]
        assert truth["value"][1] == value
        # Each series by the job that tells it apart, its number in bytes as Prometheus returned it.
        assert f"（{sample['metric']['job']}" in conclusion
        assert f"：{number_text(value)} 字节" in conclusion


def test_on_the_exporter_stack_every_topic_is_written_and_every_template_finds_series(
    exporter_sources, exporter_stack, tmp_path, capsys
):
    out = tmp_path / "vocabulary.json"

    call_command("vocabulary", "--from-prometheus", "--out", str(out))
    call_command("vocabulary", "--check", str(out))
    capsys.readouterr()
    written = json.loads(out.read_text(encoding="utf-8"))
    topics = written["promql_topics"]

    assert written["extends"] is True
    assert {
        "requests", "error", "slow", "connection_pool", "locks", "evictions", "hit_ratio", "rollbacks",
        "probes", "saturation", "memory", "cpu", "disk", "availability",
    } <= set(topics)  # fmt: skip
    assert topics["slow"][0] == (
        "histogram_quantile(0.99, sum by (le, job) "
        '(rate(prometheus_http_request_duration_seconds_bucket{job="{service}"}[5m])))'
    )
    for not_latency in ("probe_", "scrape_", "pg_settings_"):
        assert not_latency not in " ".join(topics["slow"])
    for templates in topics.values():
        for template in templates:
            assert exporter_stack.query(subject_query(template, subject="", carrier=None)), template
    # Asked of one database, the deadlocks are on the label that carries it.
    source = PrometheusSource(exporter_stack.prometheus_url)
    labels = SeriesLabels(
        source,
        service_labels=django_settings.DIAGNOSIS["SERVICE_LABELS"],
        metrics=source.label_values("__name__"),
    )
    on_shop = subject_query(topics["locks"][0], subject="shop", carrier=labels.carrier)
    assert on_shop == 'sum by (datname) (rate(pg_stat_database_deadlocks{datname="shop"}[5m]))'
    assert exporter_stack.query(on_shop)
