"""`manage.py vocabulary`: the format as a JSON Schema generated from the model, `--check` naming the
line of an error, and a starter vocabulary read from what a Prometheus server says of its metrics."""

import json

import pytest
from django.core.management import CommandError, call_command

from tools.vocabulary import DEFAULT_VOCABULARY_FILE, SCHEMA_FILE, vocabulary_checked, vocabulary_schema
from tools.vocabulary_source import vocabulary_from_source

WORLD_FILE = DEFAULT_VOCABULARY_FILE.parents[3] / "tests" / "world" / "vocabulary.json"


def test_the_schema_in_the_repo_is_the_one_generated_from_the_model():
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == vocabulary_schema()


@pytest.mark.parametrize("path", [DEFAULT_VOCABULARY_FILE, WORLD_FILE], ids=["demo", "second-world"])
def test_the_shipped_files_check(path, capsys):
    call_command("vocabulary", "--check", str(path))

    assert capsys.readouterr().out.strip() == f"{path}: ok"


def test_a_field_of_the_wrong_type_is_named_with_its_line(tmp_path):
    bad = tmp_path / "vocabulary.json"
    bad.write_text('{\n  "groups": {\n    "ledger": ["账本"]\n  },\n  "topic_labels": {"ledger": 3}\n}\n')

    assert vocabulary_checked(bad) == [f"{bad}:5: topic_labels.ledger: Input should be a valid string"]
    with pytest.raises(CommandError, match=r":5: topic_labels\.ledger"):
        call_command("vocabulary", "--check", str(bad))


def test_a_file_that_is_not_json_is_named_with_its_line(tmp_path):
    bad = tmp_path / "vocabulary.json"
    bad.write_text('{\n  "groups": {\n    "memory": ["内存",]\n  }\n}\n')

    [problem] = vocabulary_checked(bad)
    assert problem.startswith(f"{bad}:3: not valid JSON")


def test_from_prometheus_needs_a_prometheus(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": ""}

    with pytest.raises(CommandError, match="DIAGNOSIS_PROMETHEUS_URL"):
        call_command("vocabulary", "--from-prometheus")


# Two servers' metadata: a node_exporter host, and a world of its own names.
NODE = {
    "node_memory_MemAvailable_bytes": [
        {"type": "gauge", "help": "Memory information field MemAvailable_bytes."}
    ],
    "node_memory_Active_bytes": [{"type": "gauge", "help": "Memory information field Active_bytes."}],
    "node_load1": [{"type": "gauge", "help": "1m load average."}],
    "node_filesystem_avail_bytes": [
        {"type": "gauge", "help": "Filesystem space available to non-root users in bytes."}
    ],
    "go_goroutines": [{"type": "gauge", "help": "Number of goroutines that currently exist."}],
}
NODE_RULES = [{"name": "HostOutOfMemory", "query": "node_memory_MemAvailable_bytes < 1e9"}]
LEDGER = {
    "ledger_heap_used_bytes": [{"type": "gauge", "help": "Heap in use."}],
    "ledger_posting_failures_total": [{"type": "counter", "help": "Postings that failed."}],
    "ledger_request_latency_seconds": [{"type": "histogram", "help": "Request latency."}],
}
LEDGER_RULES = [{"name": "LedgerPostingsFailing", "query": "rate(ledger_posting_failures_total[5m]) > 0.1"}]


def test_a_node_exporters_metrics_become_topics_with_chinese_and_english_words():
    vocabulary = vocabulary_from_source(metadata=NODE, metric_names=NODE, rules=NODE_RULES)

    assert {"memory", "内存"} <= set(vocabulary.groups["memory"])
    assert vocabulary.promql_topics["memory"][0] == 'node_memory_MemAvailable_bytes{service="{service}"}'
    assert vocabulary.promql_topics["cpu"] == ['node_load1{service="{service}"}']
    assert "负载" in vocabulary.groups["cpu"] and vocabulary.topic_labels["disk"] == "磁盘"
    assert vocabulary.alert_topics == {"HostOutOfMemory": "memory"}
    assert "go_goroutines" not in json.dumps(vocabulary.promql_topics)


def test_another_worlds_metrics_are_read_by_their_name_and_help_words():
    vocabulary = vocabulary_from_source(
        metadata=LEDGER, metric_names=[*LEDGER, "ledger_heap_used_bytes"], rules=LEDGER_RULES
    )

    assert vocabulary.promql_topics == {
        "memory": ['ledger_heap_used_bytes{service="{service}"}'],
        "error": ['sum by (service) (rate(ledger_posting_failures_total{service="{service}"}[5m]))'],
    }
    assert vocabulary.alert_topics == {"LedgerPostingsFailing": "error"}


# What a hostile or careless server may say: metric names no PromQL selector can write unquoted, and
# rule names that are commands or carry quotes and line breaks.
HOSTILE = {
    'node_memory"} or vector(1) #_bytes': [{"type": "gauge", "help": "Memory in use."}],
    "node_memory_evil\nbytes": [{"type": "gauge", "help": "Memory in use."}],
    "node.memory.utf8_bytes": [{"type": "gauge", "help": "Memory in use."}],
    "node_memory_Active_bytes": [{"type": "gauge", "help": "Memory information field Active_bytes."}],
}
HOSTILE_RULES = [
    {"name": "kubectl delete ns prod", "query": "node_memory_Active_bytes > 1e9"},
    {"name": 'Memory"High', "query": "node_memory_Active_bytes > 1e9"},
    {"name": "MemoryHigh\nrm -rf /", "query": "node_memory_Active_bytes > 1e9"},
    {"name": "HostMemoryHigh", "query": "node_memory_Active_bytes > 1e9"},
    {"name": "内存告警", "query": "node_memory_Active_bytes > 2e9"},
]


def test_the_starter_keeps_only_metric_names_and_alert_names_that_are_names(tmp_path):
    vocabulary = vocabulary_from_source(metadata=HOSTILE, metric_names=HOSTILE, rules=HOSTILE_RULES)

    assert vocabulary.promql_topics == {"memory": ['node_memory_Active_bytes{service="{service}"}']}
    assert vocabulary.alert_topics == {"HostMemoryHigh": "memory", "内存告警": "memory"}
    written = tmp_path / "vocabulary.json"
    written.write_text(
        json.dumps(vocabulary.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)
    )
    assert vocabulary_checked(written) == []


def test_check_parses_every_template_and_names_the_line_of_one_that_is_not_promql(tmp_path):
    bad = tmp_path / "vocabulary.json"
    bad.write_text(
        "{\n"
        '  "groups": {"memory": ["内存"], "disk": ["磁盘"]},\n'
        '  "promql_topics": {\n'
        '    "memory": ["node_memory_Active_bytes{service=\\"{service}\\"}"],\n'
        '    "disk": [\n'
        '      "node_filesystem_avail_bytes{service=\\"{service}\\"}",\n'
        '      "rate(node_disk_io_time_seconds_total{service=\\"{service}\\"}[5m]"\n'
        "    ]\n"
        "  }\n"
        "}\n"
    )

    assert vocabulary_checked(bad) == [
        f"{bad}:5: promql_topics.disk.1: not PromQL: unclosed left parenthesis"
    ]
    with pytest.raises(CommandError, match="unclosed left parenthesis"):
        call_command("vocabulary", "--check", str(bad))


def test_check_parses_the_templates_of_the_file_a_vocabulary_extends(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(
        "{\n"
        '  "groups": {"disk": ["磁盘"]},\n'
        '  "promql_topics": {\n'
        '    "disk": ["rate(node_disk_io_time_seconds_total{service=\\"{service}\\"}[5m]"]\n'
        "  }\n"
        "}\n"
    )
    team = tmp_path / "team.json"
    team.write_text('{"extends": "base.json", "groups": {"memory": ["内存"]}}\n')

    assert vocabulary_checked(team) == [
        f"{base}:4: promql_topics.disk.0: not PromQL: unclosed left parenthesis"
    ]


def test_check_names_a_file_it_extends_that_cannot_be_read_and_files_that_extend_each_other(tmp_path):
    team = tmp_path / "team.json"
    team.write_text('{"extends": "missing.json"}\n')
    [problem] = vocabulary_checked(team)
    assert problem.startswith(f"{tmp_path / 'missing.json'}: cannot read")

    (tmp_path / "a.json").write_text('{"extends": "b.json"}\n')
    (tmp_path / "b.json").write_text('{"extends": "a.json"}\n')
    assert vocabulary_checked(tmp_path / "a.json") == [
        f"{tmp_path / 'a.json'}: extends: the files extend each other"
    ]
