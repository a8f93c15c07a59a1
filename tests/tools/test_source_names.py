"""A source is written under the name people read, wherever code names it."""

from tools.source_names import DEMO, DEMO_LABEL, source_name


def test_a_known_source_is_named_as_people_call_it_and_the_demo_world_as_demo_data():
    assert source_name("loki") == "Loki"
    assert source_name("alertmanager+prometheus") == "Alertmanager"
    assert source_name(DEMO) == DEMO_LABEL == "演示数据"


def test_another_source_keeps_the_name_it_was_recorded_under():
    assert source_name("team-runbooks/oncall.md") == "team-runbooks/oncall.md"
