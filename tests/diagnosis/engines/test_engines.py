"""Engine selection by name: each name builds its engine; the llm engine falls back on the rules one."""

import pytest

from diagnosis.engines import ENGINE_NAMES, engine_fallback_get, engine_get


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_each_name_builds_the_engine_of_that_name(name):
    assert engine_get(name).name == name


def test_an_unknown_name_says_which_ones_exist():
    with pytest.raises(ValueError, match="unknown diagnosis engine 'gpt'; expected one of rules, llm"):
        engine_get("gpt")


def test_only_the_llm_engine_has_a_fallback_and_it_is_the_rules_engine():
    assert engine_fallback_get("llm").name == "rules"
    assert engine_fallback_get("rules") is None
