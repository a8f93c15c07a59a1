"""`manage.py vocabulary --from-prometheus` against the live Prometheus: the file it
writes passes `--check` and, with no hand editing, answers a topic question with the live value."""

import json

import pytest
from django.core.management import call_command

from tests.integration.test_answers_live import answer_of
from tools.numbers import number_text, series_name

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
