"""The world vocabulary is data: a file replaces or extends the shipped one; a new group needs no
code; a broken file is a clear error naming the file and the field."""

from __future__ import annotations

import json

import pytest

from tools.configured_vocabulary import current_vocabulary
from tools.matching import group_term, groups_in
from tools.vocabulary import FALLBACK_LABEL, VocabularyError


def write(path, data):
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_the_demo_world_file_carries_the_tables_python_held(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": None}
    vocabulary = current_vocabulary()

    assert vocabulary.label("connection_pool") == "数据库连接池"
    assert vocabulary.related("memory") == ["gc", "oom"]
    assert vocabulary.categories[0].category == "CONNECTION_POOL"


def test_an_extending_file_adds_a_group_with_no_code(settings, tmp_path):
    path = write(tmp_path / "v.json", {"extends": True, "groups": {"broker": ["RabbitMQ", "消息队列"]}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    assert "broker" in groups_in("RabbitMQ 消息积压")
    assert group_term("broker") == "RabbitMQ"
    assert current_vocabulary().label("broker") == FALLBACK_LABEL
    assert "connection_pool" in groups_in("HikariCP")  # the shipped groups are still there


def test_a_replacing_file_is_the_whole_vocabulary(settings, tmp_path):
    path = write(tmp_path / "v.json", {"groups": {"crashloop": ["CrashLoopBackOff"]}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    assert groups_in("HikariCP CrashLoopBackOff") == {"crashloop"}


def test_a_broken_file_names_the_file_and_field(settings, tmp_path):
    path = write(tmp_path / "v.json", {"groups": {"cpu": "CPU"}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    with pytest.raises(VocabularyError, match=r"v\.json: groups\.cpu"):
        current_vocabulary()


def test_a_file_without_ask_words_reads_the_shipped_ones(settings, tmp_path):
    path = write(tmp_path / "v.json", {"groups": {"crashloop": ["CrashLoopBackOff"]}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    assert "报警" in current_vocabulary().asks.alerts
    assert "why" in current_vocabulary().asks.cause


def test_a_replacing_file_keeps_the_shipped_intents_and_adds_its_own(settings, tmp_path):
    path = write(
        tmp_path / "v.json",
        {"groups": {"crashloop": ["CrashLoopBackOff"]}, "intents": {"mitigation": ["止损"]}},
    )
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    # A runbook's "Diagnosis" and "处置措施" headings name its steps in any world.
    assert groups_in("Diagnosis", "intents") == {"investigation"}
    assert groups_in("处置措施", "intents") == {"mitigation"}
    assert groups_in("止损方案", "intents") == {"mitigation"}


def test_bilingual_ops_terms_are_data_of_either_kind_of_file(settings, tmp_path):
    path = write(tmp_path / "v.json", {"extends": True, "ops_terms": {"ledger": ["账本", "ledger"]}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    assert groups_in("账本写入落后", "ops_terms") == {"ledger", "behind"}
    assert groups_in("the filesystem is almost full", "ops_terms") >= {"disk", "full"}


def test_an_extending_file_adds_ask_words_and_keeps_the_kinds_it_leaves_out(settings, tmp_path):
    write(tmp_path / "base.json", {"asks": {"alerts": ["告警"], "cause": ["为什么"]}})
    path = write(tmp_path / "v.json", {"extends": "base.json", "asks": {"alerts": ["通知"]}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    asks = current_vocabulary().asks
    assert (asks.alerts, asks.cause) == (["告警", "通知"], ["为什么"])


def test_an_unknown_kind_of_ask_names_the_file_and_field(settings, tmp_path):
    path = write(tmp_path / "v.json", {"asks": {"narrow": ["只看"]}})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    with pytest.raises(VocabularyError, match=r"v\.json: asks\.narrow"):
        current_vocabulary()


def test_the_demo_worlds_templates_and_names_apply_to_the_demo_world_only(settings, tmp_path):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": None, "PROMETHEUS_URL": ""}
    demo = current_vocabulary()

    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": "http://prometheus.example:9090"}
    assert demo.promql_topics["memory"] and current_vocabulary().promql_topics == {}
    # Its services' other names would make them known in a world that has none of them.
    assert demo.service_aliases and current_vocabulary().service_aliases == {}
    # So would its alert names: an alert a world's rules do not have is no alert of that world.
    assert demo.alert_topics and current_vocabulary().alert_topics == {}

    own = {"ledger_heap_used_bytes": ['ledger_heap_used_bytes{app="{service}"}']}
    path = write(tmp_path / "v.json", {"extends": True, "promql_topics": own})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}
    assert current_vocabulary().promql_topics == own
    assert current_vocabulary().alert_topics == {}
    assert "connection_pool" in current_vocabulary().groups  # the shipped words stay
