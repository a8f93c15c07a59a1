"""Running cases: expectations are really checked, and the suite notices when a guard breaks."""

import dataclasses

import pytest

from diagnosis.evaluation import runner
from diagnosis.evaluation.answer import off_topic_subjects, slot_found
from diagnosis.evaluation.fixtures import CASES_DIR, EvalCase, SlotExpectation, case_load, cases_discover
from diagnosis.evaluation.metrics import summary_build, summary_lines
from diagnosis.evaluation.runner import CaseResult, case_run, cases_run, forbidden_leaks
from diagnosis.models import DiagnosisSession
from diagnosis.pipeline import gatekeeper, guards

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
                "evidence_status": {"query_alerts": "no_evidence"},
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
        "evidence_status[query_alerts]：期望全部为 no_evidence，实际 ['supported']",
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
    fabricated = [c for c in cases_discover() if "fabricated" in c.tags]
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


def answering(monkeypatch, answer: str) -> None:
    """Every session's answer is this text; everything else as the pipeline recorded it."""
    observe = runner.session_observe
    monkeypatch.setattr(
        runner,
        "session_observe",
        lambda *, session: dataclasses.replace(observe(session=session), answer=answer),
    )


MEMORY_SLOT = {"ask": "existence", "answer_contains": ["HighMemoryUsage", "91%"]}
# In a case the question's own names prove nothing (the loader rejects them): the state and the value.
MEMORY_CASE_SLOT = {"ask": "existence", "answer_contains": ["firing", "91%"]}
PASS = {"verdict": "PASS"}


def test_a_pass_whose_answer_lacks_the_expected_slot_fails_and_is_a_false_pass(monkeypatch):
    # The value is there, but in a finding below, not on the conclusion line the ask needs.
    answering(
        monkeypatch, "结论：order-service 有告警\n\n**已确认的发现**\n- HighMemoryUsage firing，当前 91%"
    )

    missed = case_run(case(expect=PASS | {"slot": MEMORY_CASE_SLOT}))

    assert (missed.verdict, missed.slot_found, missed.passed) == ("PASS", False, False)
    assert missed.failures == ["所问未回答（existence）：没有一行「结论」同时包含 ['firing', '91%']"]
    summary = summary_build([missed])
    assert (summary.slot_cases, summary.answered_rate, summary.false_pass) == (1, 0.0, 1)


def test_a_filled_slot_is_answered_and_no_false_pass(monkeypatch):
    answering(monkeypatch, "**结论**：order-service 当前存在 HighMemoryUsage 告警（firing），当前 91%")

    answered = case_run(case(expect=PASS | {"slot": MEMORY_CASE_SLOT}))

    assert answered.passed, answered.failures
    summary = summary_build([answered])
    assert (summary.answered_rate, summary.false_pass) == (1.0, 0)


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("结论：order-service 存在 HighMemoryUsage 告警，当前 91%", True),
        ("**结论**：HighMemoryUsage firing，当前 91%", True),
        ("- **结论：** HighMemoryUsage 当前 91%", True),
        ("1. 结论：HighMemoryUsage 当前 91%\n2. 结论：下一问", True),
        # On a line below the conclusion, or split over two conclusion lines: not filled.
        ("**结论**\n- order-service 存在 HighMemoryUsage 告警，当前 91%", False),
        ("结论：存在 HighMemoryUsage 告警\n结论：当前 91%", False),
        ("- 证据：结论 HighMemoryUsage 当前 91%", False),
        ("", False),
    ],
)
def test_a_slot_is_filled_on_one_conclusion_line(answer, found):
    assert slot_found(slot=SlotExpectation.model_validate(MEMORY_SLOT), answer=answer) is found


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("结论：nginx 每秒 3.4 次请求 · 来源 prometheus", True),
        ("结论：nginx 每秒3.61次请求", True),
        ("结论：nginx 每秒 3.8 次请求", False),
        # The digits of a name are no number stated.
        ("结论：nginx 的 p3 请求数未知", False),
        ("结论：nginx_http_requests_total 共 3,500 次", False),
    ],
)
def test_a_slot_number_is_stated_within_its_tolerance(answer, found):
    slot = SlotExpectation.model_validate(
        {"ask": "value", "answer_contains": ["nginx"], "answer_numbers": [{"value": 3.5, "tolerance": 0.2}]}
    )

    assert slot_found(slot=slot, answer=answer) is found


def test_a_slot_number_reads_thousands_separators():
    slot = SlotExpectation.model_validate(
        {"ask": "value", "answer_numbers": [{"value": 4194304, "tolerance": 0}]}
    )

    assert slot_found(slot=slot, answer="结论：redis_memory_max_bytes 当前值 4,194,304 字节")


def test_a_slot_expects_a_term_or_a_number():
    with pytest.raises(ValueError, match="answer_contains or answer_numbers"):
        SlotExpectation.model_validate({"ask": "value"})


def test_a_slot_that_is_not_a_conclusion_is_filled_anywhere_in_the_answer():
    slot = SlotExpectation.model_validate(MEMORY_SLOT | {"conclusion": False})

    assert slot_found(slot=slot, answer="**已确认的发现**\n- HighMemoryUsage firing\n  - 当前 91%")
    assert not slot_found(slot=slot, answer="- HighMemoryUsage firing")


def test_a_pass_naming_another_subject_of_the_world_is_off_topic(monkeypatch):
    answering(monkeypatch, "结论：order-service 的 HighMemoryUsage 当前 91%；payment-service 的 CPU 当前 92%")

    off_topic = case_run(case(expect=PASS))

    assert off_topic.off_topic_subjects == ["payment-service"]
    assert "PASS 的回答提到问题之外的主题（expect.subjects 也未列出）：payment-service" in off_topic.failures
    assert summary_build([off_topic]).off_topic_pass == 1


def test_off_topic_is_judged_from_the_case_file_not_by_the_focus_guard(monkeypatch):
    shipped_case = shipped("focus-llm-claim-about-other-service-blocked")
    assert case_run(shipped_case).off_topic_subjects == []

    monkeypatch.setattr(
        guards, "CLAIM_GUARDS", tuple(g for g in guards.CLAIM_GUARDS if not isinstance(g, guards.FocusGuard))
    )
    unguarded = case_run(shipped_case)

    assert unguarded.verdict == "PASS"
    assert unguarded.off_topic_subjects == ["HighCPUUsage", "payment-service"]


@pytest.mark.parametrize(
    ("answer", "off_topic"),
    [
        ("checkout 当前存在 KubePodCrashLooping 告警；payments 就绪", ["payments"]),
        # A source's words quoted (「…」) are not the answer naming a subject.
        ("checkout 超时\n  - 证据：「call to payments timed out after 5000ms」", []),
        # Inside a longer name (a pod, an alert) is not the subject itself.
        ("pod checkout-6f7d9-abcde；PostgresReplicationLag 不相关", ["PostgresReplicationLag"]),
        ("CATALOG 的 HighRequestLatency", ["HighRequestLatency", "catalog"]),
    ],
)
def test_off_topic_subjects_are_the_worlds_names_the_question_does_not_ask(answer, off_topic):
    crashloop = case(question="只确认 checkout 是否存在 KubePodCrashLooping 告警", world="shop", expect=PASS)

    assert off_topic_subjects(case=crashloop, answer=answer) == off_topic


def test_subjects_the_case_lists_or_ties_to_the_question_are_in_scope():
    listed = case(question="现在有哪些告警", expect=PASS | {"subjects": ["order-service"]})
    by_alert = case(question="只确认 HighCPUUsage", expect=PASS)
    by_service_and_alert = case(question="order-service 是否存在 HighCPUUsage 告警", expect=PASS)

    # A listed service brings its alerts; the others are still off topic.
    assert off_topic_subjects(case=listed, answer="order-service HighMemoryUsage；user-service") == [
        "user-service"
    ]
    # An alert asked alone is about the service it fires on ...
    assert off_topic_subjects(case=by_alert, answer="payment-service 存在 HighCPUUsage") == []
    # ... not when the question pairs it with another service.
    assert off_topic_subjects(case=by_service_and_alert, answer="payment-service 存在 HighCPUUsage") == [
        "payment-service"
    ]


def test_the_world_subjects_include_the_case_own_tool_data():
    disk = {
        "alert_name": "HighDiskUsage",
        "service": "inventory-service",
        "started_minutes_ago": 5,
        "description": "磁盘 93%",
    }
    with_disk = case(tools={"query_alerts": {"alerts": [disk]}}, expect=PASS)

    assert off_topic_subjects(case=with_disk, answer="order-service 91%；HighDiskUsage 93%") == [
        "HighDiskUsage"
    ]
    assert off_topic_subjects(case=case(expect=PASS), answer="order-service 91%；HighDiskUsage 93%") == []


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
        slot_found=extra.get("slot_found"),
        world=extra.get("world", "demo"),
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


def test_accuracy_is_reported_apart_for_engine_cases_and_code_over_a_scripted_model():
    results = [
        result("rules-right", expected="PASS", verdict="PASS"),
        result("rules-fabricated-caught", expected="REJECT", verdict="REJECT", tags=["fabricated"]),
        result("scripted-right", expected="PASS", verdict="PASS", engine="llm"),
        result("scripted-wrong", expected="REJECT", verdict="PASS", tags=["fabricated"], engine="llm"),
        result("scripted-unchecked", expected=None, verdict="PASS", engine="llm"),
    ]

    summary = summary_build(results)

    assert (summary.verdict_accuracy, summary.fabricated_reject_recall) == (0.75, 0.5)
    assert (summary.engine_cases.verdict_accuracy, summary.engine_cases.verdict_cases) == (1.0, 2)
    assert summary.engine_cases.fabricated_reject_recall == 1.0
    assert (summary.scripted_cases.verdict_accuracy, summary.scripted_cases.verdict_cases) == (0.5, 2)
    assert summary.scripted_cases.fabricated_reject_recall == 0.0
    lines = summary_lines(summary)
    verdict_at = lines.index("verdict accuracy               75.0%  (n=4)")
    assert lines[verdict_at + 1 : verdict_at + 3] == [
        "  engine cases (rules)         100.0%  (n=2)",
        "  code over a scripted model   50.0%  (n=2)",
    ]
    assert "  code over a scripted model   0.0%  (n=1)" in lines


def test_answered_rate_and_false_pass_count_only_cases_with_a_slot():
    results = [
        result("answered", expected="PASS", verdict="PASS", slot_found=True),
        result("false-pass", expected="PASS", verdict="PASS", slot_found=False),
        result("capped", expected="LOW_CONFID", verdict="LOW_CONFID", slot_found=False),
        result("no-slot", expected="PASS", verdict="PASS"),
    ]

    summary = summary_build(results)

    assert (summary.slot_cases, summary.answered_rate, summary.false_pass) == (3, 1 / 3, 1)
    lines = summary_lines(summary)
    assert "answered rate (expected slot)  33.3%  (n=3)" in lines
    assert "false PASS (slot not filled)   1" in lines
    assert "answered rate (expected slot)  -" in summary_lines(summary_build(results[3:]))


def test_the_metrics_are_reported_per_world_and_engine_kind():
    results = [
        result("demo-rules-right", expected="PASS", verdict="PASS", tags=["grounded"], slot_found=True),
        result("demo-rules-false-pass", expected="LOW_CONFID", verdict="PASS", slot_found=False),
        result(
            "demo-scripted-caught", expected="REJECT", verdict="REJECT", tags=["fabricated"], engine="llm"
        ),
        result("shop-rules-false-reject", expected="PASS", verdict="REJECT", tags=["grounded"], world="shop"),
        result(
            "shop-scripted-missed",
            expected="REJECT",
            verdict="PASS",
            tags=["fabricated"],
            engine="llm",
            world="shop",
        ),
    ]
    results[-1].off_topic_subjects = ["inventory"]

    groups = {(g.world, g.engine_kind): g for g in summary_build(results).groups}

    assert list(groups) == [
        ("demo", "code over a scripted model"),
        ("demo", "rules engine"),
        ("shop", "code over a scripted model"),
        ("shop", "rules engine"),
    ]
    demo_rules = groups["demo", "rules engine"]
    assert (demo_rules.cases, demo_rules.failed, demo_rules.accuracy.verdict_accuracy) == (2, 1, 0.5)
    assert (demo_rules.answered_rate, demo_rules.slot_cases, demo_rules.false_pass) == (0.5, 2, 1)
    assert groups["demo", "code over a scripted model"].accuracy.fabricated_reject_recall == 1.0
    assert groups["shop", "rules engine"].grounded_false_reject_rate == 1.0
    shop_scripted = groups["shop", "code over a scripted model"]
    assert (shop_scripted.accuracy.fabricated_reject_recall, shop_scripted.off_topic_pass) == (0.0, 1)
    lines = summary_lines(summary_build(results))
    assert "per world and engine kind" in lines
    assert any(
        line.startswith("shop / code over a scripted model") and "0.0% (1)" in line and line.endswith("1")
        for line in lines
    )
    assert any(line.startswith("demo / rules engine") and "50.0% (2)" in line for line in lines)
