"""Running cases: expectations are really checked, and the suite notices when a guard breaks."""

import pytest

from diagnosis.evaluation.fixtures import CASES_DIR, EvalCase, case_load, cases_discover
from diagnosis.evaluation.metrics import summary_build, summary_lines
from diagnosis.evaluation.runner import CaseResult, case_run, cases_run, forbidden_leaks
from diagnosis.models import DiagnosisSession
from diagnosis.pipeline import gatekeeper

pytestmark = pytest.mark.django_db

MEMORY_QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"


def shipped(name: str) -> EvalCase:
    return case_load(CASES_DIR / name)


def case(**fields) -> EvalCase:
    return EvalCase.model_validate({"question": MEMORY_QUESTION, "tags": ["positive"]} | fields)


def test_a_shipped_case_passes_and_reports_what_it_measured():
    result = case_run(shipped("seed003-highmemory-narrow-no-leak"))

    assert result.passed, result.failures
    assert (result.expected, result.got) == ("PASS/NORMAL", "PASS/NORMAL")
    assert result.rounds == 1
    assert result.latency_ms > 0
    assert "91%" in result.answer


def test_cases_leave_no_sessions_behind():
    case_run(shipped("seed003-highcpu-narrow"))

    assert DiagnosisSession.objects.count() == 0


def test_every_unmet_expectation_is_a_failure_line():
    result = case_run(
        case(
            expect={
                "verdict": "REJECT",
                "output_type": "DEGRADED",
                "rounds": 2,
                "failed_rules": ["evidence.excerpt_mismatch"],
                "evidence_status": {"query_metrics": "no_evidence"},
                "answer_contains": ["内存泄漏"],
            }
        )
    )

    assert not result.passed
    assert result.got == "PASS/NORMAL"
    assert result.failures == [
        "output_type：期望 DEGRADED，实际 NORMAL",
        "verdict：期望 REJECT，实际 PASS",
        "failed_rules：期望 ['evidence.excerpt_mismatch']，实际 -",
        "rounds：期望 2，实际 1",
        "evidence_status[query_metrics]：期望全部为 no_evidence，实际 ['supported']",
        "回答中缺少：内存泄漏",
    ]


def test_a_forbidden_term_in_the_answer_is_a_leak():
    result = case_run(case(expect={"verdict": "PASS", "forbidden": ["3.8gb/4GB"]}))

    assert result.leaks == ["3.8gb/4GB"]
    assert "用户可见内容出现禁止词：3.8gb/4GB" in result.failures


def changed(original: EvalCase, *, script: dict | None = None, **expect) -> EvalCase:
    """The case with more scripted replies and some expectations changed."""
    return original.model_copy(
        update={
            "script": original.script | (script or {}),
            "expect": original.expect.model_copy(update=expect),
        }
    )


def test_a_forbidden_term_only_in_the_composer_material_is_a_leak_too():
    # The composer leaves the gap out of its answer; it was still material it was allowed to use.
    terse = {"answer": "order-service 存在 HighMemoryUsage 告警，当前 91%。"}
    result = case_run(
        changed(
            shipped("verifier-inference-with-direct-passes"),
            script={"composer": [terse]},
            forbidden=["只有间接支持"],
        )
    )

    assert "只有间接支持" not in result.answer
    assert result.leaks == ["只有间接支持"]


def test_the_question_itself_is_not_a_leak():
    result = case_run(shipped("seed003-exclusion-highcpu-only"))

    assert result.passed, result.failures


def test_a_scripted_reply_left_unused_fails_the_case():
    extra = {"answer": "从未被请求的回答"}
    # Nothing is confirmed in this case, so the composer is never asked.
    result = case_run(changed(shipped("gk-empty-bindings"), script={"composer": [extra]}))

    assert "脚本中 composer 的 1 条回复未被使用（流程与用例设想不符）" in result.failures


def test_a_stage_that_must_not_be_called_fails_the_case_when_it_is():
    lenient = {"claim_checks": [], "facts_checked": [], "rationale": "…"}
    result = case_run(
        changed(
            shipped("gk-tolerant-excerpt-passes"), script={"verifier": [lenient]}, not_called=["verifier"]
        )
    )

    assert any(failure.startswith("verifier 不应被调用") for failure in result.failures)


def test_breaking_the_excerpt_guard_turns_fabricated_cases_red(monkeypatch):
    fabricated = [c for c in cases_discover() if "fabricated" in c.tags and "known_bug" not in c.tags]
    healthy = cases_run(fabricated)
    assert all(result.passed for result in healthy)

    monkeypatch.setattr(
        gatekeeper, "excerpt_match", lambda excerpt, ref_text: gatekeeper.ExcerptMatch("exact", 1.0)
    )
    broken = cases_run(fabricated)

    red = {result.name for result in broken if not result.passed}
    assert {
        "gk-excerpt-altered-number",
        "gk-excerpt-invented-text",
        "gk-one-fabricated-among-real",
        "injection-log-line-obeyed-is-rejected",
    } <= red
    assert (
        summary_build(broken).fabricated_reject_recall
        < summary_build(healthy).fabricated_reject_recall
        == 1.0
    )


def test_forbidden_terms_are_found_case_insensitively_across_texts():
    assert forbidden_leaks(["HikariCP", "OOM", "泄漏"], ["hikaricp pool", "正常", "无 oom"]) == [
        "HikariCP",
        "OOM",
    ]


def result(
    name: str, *, expected: str | None, verdict: str, tags=(), engine="rules", leaks=(), **extra
) -> CaseResult:
    return CaseResult(
        name=name,
        path=f"{name}/case.yaml",
        engine=engine,
        tags=list(tags),
        expected=expected or "",
        got=verdict,
        failures=[] if expected in (None, verdict) and not leaks else ["x"],
        leaks=list(leaks),
        expected_verdict=expected,
        verdict=verdict,
        rounds=extra.get("rounds", 1),
        latency_ms=extra.get("latency_ms", 10.0),
        llm_calls=extra.get("llm_calls", 0),
        tokens=extra.get("tokens", 0),
        session_id=name,
    )


def test_the_summary_measures_accuracy_guards_and_cost():
    results = [
        result("a", expected="PASS", verdict="PASS", tags=["grounded"], latency_ms=10.0),
        result("b", expected="PASS", verdict="REJECT", tags=["grounded"], latency_ms=30.0),
        result(
            "c",
            expected="REJECT",
            verdict="REJECT",
            tags=["fabricated"],
            engine="llm",
            llm_calls=3,
            tokens=900,
        ),
        result(
            "d",
            expected="REJECT",
            verdict="LOW_CONFID",
            tags=["fabricated"],
            engine="llm",
            llm_calls=5,
            tokens=1100,
            rounds=2,
        ),
        result("e", expected=None, verdict="", rounds=0, leaks=["OOM", "连接池"], latency_ms=50.0),
    ]

    summary = summary_build(results)

    assert (summary.cases, summary.passed, summary.failed) == (5, 2, 3)
    assert summary.verdict_accuracy == 0.5
    assert summary.fabricated_reject_recall == 0.5
    assert summary.grounded_false_reject_rate == 0.5
    assert (summary.forbidden_leaks, summary.leaking_cases) == (2, 1)
    assert summary.mean_rounds == 1.25
    assert (summary.llm_sessions, summary.llm_calls_per_session, summary.tokens_per_session) == (2, 4, 1000)
    assert summary.latency_p50_ms == 10.0
    lines = "\n".join(summary_lines(summary))
    assert "REJECT recall (fabricated)     50.0%  (n=2)" in lines
    assert "forbidden-term leaks           2 in 1 case(s)" in lines
