"""Evaluation fixtures: the shipped cases load and cover what they must; broken files say where."""

from pathlib import Path

import pytest
import yaml

from diagnosis.evaluation.fixtures import CASES_DIR, CaseFileError, case_load, cases_discover
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.gatekeeper import RULE_SEVERITY

SEED_003_QUESTIONS = {
    "只确认 payment-service 当前是否存在 HighCPUUsage 告警",
    "只确认 order-service 是否存在 HighMemoryUsage 告警",
    "只确认 user-service 是否存在 SlowResponse 告警和慢请求日志",
    "确认 order-service 是否存在 HikariCP 连接池耗尽",
    "确认 inventory-service 是否存在 HikariCP 连接池耗尽",
    "只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service",
}
VALID = {
    "question": "只确认 order-service 是否存在 HighMemoryUsage 告警",
    "tags": ["positive"],
    "expect": {"verdict": "PASS"},
}


def write_case(folder: Path, data: dict | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, allow_unicode=True)
    (folder / "case.yaml").write_text(text, encoding="utf-8")
    return folder


def test_at_least_forty_shipped_cases_load_with_unique_names():
    cases = cases_discover()

    assert len(cases) >= 40
    assert len({case.name for case in cases}) == len(cases)
    assert all(case.tags for case in cases)


def test_shipped_cases_cover_the_seed_003_matrix():
    questions = {case.question for case in cases_discover()}

    assert questions >= SEED_003_QUESTIONS


def test_shipped_cases_expect_every_gatekeeper_rule():
    expected_rules = set()
    for case in cases_discover():
        expected_rules |= set(case.expect.failed_rules or []) | set(case.expect.warnings_include)

    assert set(RULE_SEVERITY) <= expected_rules


def test_shipped_cases_cover_both_engines_and_the_required_situations():
    cases = cases_discover()
    tags = {tag for case in cases for tag in case.tags}

    assert {case.engine for case in cases} == {"rules", "llm"}
    assert {
        "positive",
        "negative",
        "adversarial",
        "fabricated",
        "narrow",
        "retry",
        "english",
        "tool_failure",
        "injection",
        "unknown",
        "parse",
        "composer",
        "verifier",
    } <= tags


def test_a_case_is_named_after_its_folder(tmp_path):
    case = case_load(write_case(tmp_path / "memory-alert", VALID))

    assert case.name == "memory-alert"
    assert case.engine == "rules"
    assert case.now.isoformat() == "2026-11-29T15:00:00+08:00"


def test_an_invalid_value_is_reported_with_the_file_and_the_field(tmp_path):
    folder = write_case(tmp_path / "bad", VALID | {"expect": {"verdict": "MAYBE"}})

    with pytest.raises(CaseFileError) as error:
        case_load(folder)

    assert str(folder / "case.yaml") in str(error.value)
    assert "expect.verdict" in str(error.value)


def test_an_unknown_field_is_reported_by_its_path(tmp_path):
    folder = write_case(tmp_path / "typo", VALID | {"tools": {"query_logs": {"logz": []}}})

    with pytest.raises(CaseFileError, match=r"tools\.query_logs\.logz"):
        case_load(folder)


def test_a_case_naming_the_alerts_tool_by_its_former_name_reads_as_one_naming_it_now(tmp_path):
    disk = {
        "alert_name": "HighDiskUsage",
        "service": "order-service",
        "started_minutes_ago": 5,
        "description": "磁盘 93%",
    }

    def written_with(tool_name):
        expect = {
            "verdict": "PASS",
            "evidence_status": {tool_name: "supported"},
            "a_claim_cites": [tool_name],
        }
        data = VALID | {"tools": {tool_name: {"alerts": [disk]}}, "expect": expect}
        return case_load(write_case(tmp_path / tool_name, data))

    former, current = written_with("query_metrics"), written_with("query_alerts")

    assert former.model_dump() == current.model_dump()
    assert (
        former.tool_overrides().source_data()["query_alerts"]["records"][0]["alert_name"] == "HighDiskUsage"
    )
    assert (former.expect.evidence_status, former.expect.a_claim_cites) == (
        {"query_alerts": "supported"},
        ["query_alerts"],
    )


def test_an_unknown_tag_lists_the_known_ones(tmp_path):
    folder = write_case(tmp_path / "tag", VALID | {"tags": ["fabricted"]})

    with pytest.raises(CaseFileError, match=r"unknown tag.*fabricted.*known"):
        case_load(folder)


def test_an_unknown_rule_name_is_rejected(tmp_path):
    folder = write_case(
        tmp_path / "rule", VALID | {"expect": {"verdict": "REJECT", "failed_rules": ["excerpt"]}}
    )

    with pytest.raises(CaseFileError, match=r"expect\.failed_rules.*unknown rule"):
        case_load(folder)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_case_may_expect_the_slot_of_every_registered_ask_kind(tmp_path, kind):
    slot = {"ask": kind, "answer_contains": ["91%"]}
    case = case_load(write_case(tmp_path / "slot", VALID | {"expect": {"verdict": "PASS", "slot": slot}}))

    assert case.expect.slot.ask == kind


def test_a_case_states_the_slot_it_expects(tmp_path):
    slot = {"ask": "value", "answer_contains": ["91%"]}
    case = case_load(write_case(tmp_path / "slot", VALID | {"expect": {"verdict": "PASS", "slot": slot}}))

    assert (case.expect.slot.ask, case.expect.slot.answer_contains) == ("value", ["91%"])
    # Filled on the answer's `结论` line unless the case says otherwise.
    assert case.expect.slot.conclusion is True


@pytest.mark.parametrize(
    ("slot", "problem"),
    [
        ({"ask": "valeu", "answer_contains": ["91%"]}, r"expect\.slot\.ask: Input should be 'existence'"),
        ({"ask": "value", "answer_contains": []}, r"expect\.slot: .*answer_contains or answer_numbers"),
        ({"ask": "value"}, r"expect\.slot: .*answer_contains or answer_numbers"),
        ({"ask": "value", "answer_numbers": [{"value": 1}]}, r"expect\.slot\.answer_numbers\.0\.tolerance"),
    ],
)
def test_a_broken_slot_is_reported_with_the_file_and_the_field(tmp_path, slot, problem):
    folder = write_case(tmp_path / "slot", VALID | {"expect": {"verdict": "PASS", "slot": slot}})

    with pytest.raises(CaseFileError, match=problem) as error:
        case_load(folder)

    assert str(folder / "case.yaml") in str(error.value)


def test_expected_subjects_must_be_subjects_of_the_case_world(tmp_path):
    demo = VALID | {"expect": {"verdict": "PASS", "subjects": ["payment-service", "SlowResponse"]}}
    shop = demo | {"world": "shop"}

    assert case_load(write_case(tmp_path / "demo", demo)).expect.subjects == [
        "payment-service",
        "SlowResponse",
    ]
    with pytest.raises(
        CaseFileError, match=r"no subject of the case's world: \['SlowResponse', 'payment-service'\]"
    ):
        case_load(write_case(tmp_path / "shop", shop))


@pytest.mark.parametrize(
    ("world", "question", "expect", "problem"),
    [
        (
            None,
            "只确认 order-service 是否存在 HighMemoryUsage 告警",
            {"answer_contains": ["HighMemoryUsage", "91%"]},
            r"'HighMemoryUsage' is in the question",
        ),
        (
            "shop",
            "只确认 checkout 是否存在 KubePodCrashLooping 告警",
            {"slot": {"ask": "existence", "answer_contains": ["KUBEPODCRASHLOOPING", "18m"]}},
            r"'KUBEPODCRASHLOOPING' is in the question",
        ),
        (
            None,
            "只确认 order-service 是否存在 HighMemoryUsage 告警",
            {"answer_contains": ["当前缺口", "91%"]},
            r"'当前缺口' is in the fixed text '当前缺口：'",
        ),
        (
            "shop",
            "只确认 checkout 是否存在 KubePodCrashLooping 告警",
            {"slot": {"ask": "existence", "answer_contains": ["结论", "18m"]}},
            r"'结论' is in the fixed text",
        ),
    ],
)
def test_an_answer_check_that_cannot_fail_is_rejected(tmp_path, world, question, expect, problem):
    data = VALID | {"question": question, "expect": {"verdict": "PASS", **expect}}
    folder = write_case(tmp_path / "weak", data | ({"world": world} if world else {}))

    with pytest.raises(CaseFileError, match=problem) as error:
        case_load(folder)

    assert str(folder / "case.yaml") in str(error.value)


def test_answer_checks_taken_from_the_evidence_load(tmp_path):
    demo = VALID | {"expect": {"verdict": "PASS", "answer_contains": ["91%", "15m"]}}
    shop = VALID | {
        "world": "shop",
        "question": "只确认 checkout 是否存在 KubePodCrashLooping 告警",
        "expect": {"verdict": "PASS", "slot": {"ask": "existence", "answer_contains": ["18m", "critical"]}},
    }

    assert case_load(write_case(tmp_path / "demo", demo)).expect.answer_contains == ["91%", "15m"]
    assert case_load(write_case(tmp_path / "shop", shop)).expect.slot.answer_contains == ["18m", "critical"]


def test_a_script_needs_the_llm_engine(tmp_path):
    folder = write_case(tmp_path / "script", VALID | {"script": {"composer": [{"answer": "x"}]}})

    with pytest.raises(CaseFileError, match="script is only for engine: llm"):
        case_load(folder)


def test_a_fabricated_case_must_expect_reject(tmp_path):
    folder = write_case(tmp_path / "fabricated", VALID | {"tags": ["fabricated"]})

    with pytest.raises(CaseFileError, match="fabricated must expect verdict REJECT"):
        case_load(folder)


def test_a_completed_case_must_expect_something(tmp_path):
    folder = write_case(tmp_path / "empty", VALID | {"expect": {"rounds": 1}})

    with pytest.raises(CaseFileError, match="expected verdict or output_type"):
        case_load(folder)


def test_broken_yaml_names_the_file(tmp_path):
    folder = write_case(tmp_path / "yaml", "question: [unclosed\n")

    with pytest.raises(CaseFileError, match="not valid YAML") as error:
        case_load(folder)

    assert str(folder / "case.yaml") in str(error.value)


def test_discovery_takes_folders_of_cases_single_cases_and_files(tmp_path):
    write_case(tmp_path / "suite" / "b-case", VALID)
    write_case(tmp_path / "suite" / "a-case", VALID)
    single = write_case(tmp_path / "single", VALID)

    found = cases_discover([tmp_path / "suite", single, single / "case.yaml"])

    assert [case.name for case in found] == ["a-case", "b-case", "single"]


def test_discovery_of_a_missing_path_says_so(tmp_path):
    with pytest.raises(CaseFileError, match="no such case"):
        cases_discover([tmp_path / "nowhere"])


def test_the_default_is_the_shipped_cases_folder():
    assert {case.path for case in cases_discover()} == {str(path) for path in CASES_DIR.rglob("case.yaml")}
