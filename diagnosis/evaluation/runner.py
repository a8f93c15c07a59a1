"""Running evaluation cases: each one inline through the real pipeline, with its own settings, tool
data and (llm engine) scripted model, inside a transaction rolled back afterwards so cases never see
each other's sessions. Use it on a throwaway database (`diagnosis.evaluation.database`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.test import override_settings

from diagnosis.evaluation.answer import off_topic_subjects, slot_failure, slot_found
from diagnosis.evaluation.fake_llm import FakeOpenAIServer, fake_llm_environment
from diagnosis.evaluation.fixtures import DEMO_WORLD, EvalCase, Expectation, fixture_sources, world_file
from diagnosis.evaluation.observe import Observation, session_observe
from diagnosis.evaluation.recording import ReplayServer, replayed
from diagnosis.services.sessions import session_start

# A scripted model answers at once; a case that hangs should fail fast, not stall the suite.
EVAL_LLM_TIMEOUT = 10.0


@dataclass
class CaseResult:
    name: str
    path: str
    engine: str
    tags: list[str]
    expected: str
    got: str
    failures: list[str]
    leaks: list[str]
    expected_verdict: str | None
    verdict: str
    rounds: int
    latency_ms: float
    llm_calls: int
    tokens: int
    session_id: str
    answer: str = field(repr=False, default="")
    # A PASS naming world subjects the case does not ask about: always a failure.
    off_topic_subjects: list[str] = field(default_factory=list)
    # Whether the answer fills the case's expected slot; None when the case expects none.
    slot_found: bool | None = None
    # The case's world (`world:`), the demo world when it names none.
    world: str = DEMO_WORLD

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict:
        return asdict(self) | {"passed": self.passed}


def case_run(case: EvalCase) -> CaseResult:
    # The one place a transaction spans model calls, on purpose: the throwaway eval database is rolled
    # back after each case so cases never see each other, and the "model" is the local fake server.
    with _case_settings(case), _model_endpoint(case) as server, transaction.atomic():
        started = time.perf_counter()
        session = session_start(query=case.question, engine=case.engine, run_inline=True)
        latency_ms = (time.perf_counter() - started) * 1000
        observed = session_observe(session=session)
        transaction.set_rollback(True)
    leaks = forbidden_leaks(case.expect.forbidden, observed.user_facing)
    failures = expectation_failures(case.expect, observed) + [
        f"用户可见内容出现禁止词：{term}" for term in leaks
    ]
    off_topic = off_topic_subjects(case=case, answer=observed.answer) if observed.verdict == "PASS" else []
    if off_topic:
        failures.append(f"PASS 的回答提到问题之外的主题（expect.subjects 也未列出）：{'、'.join(off_topic)}")
    if server is not None:
        failures += _script_failures(case, server)
    return CaseResult(
        name=case.name,
        path=case.path,
        engine=case.engine,
        tags=case.tags,
        expected=case.expected_label,
        got=_got_label(observed),
        failures=failures,
        leaks=leaks,
        expected_verdict=case.expect.verdict,
        verdict=observed.verdict,
        rounds=observed.rounds,
        latency_ms=round(latency_ms, 1),
        llm_calls=observed.llm_calls,
        tokens=observed.tokens,
        session_id=session.session_id,
        answer=observed.answer,
        off_topic_subjects=off_topic,
        slot_found=slot_found(slot=case.expect.slot, answer=observed.answer) if case.expect.slot else None,
        world=case.world or DEMO_WORLD,
    )


def cases_run(
    cases: list[EvalCase], *, on_result: Callable[[CaseResult], None] | None = None
) -> list[CaseResult]:
    results = []
    for case in cases:
        result = case_run(case)
        results.append(result)
        if on_result:
            on_result(result)
    return results


def expectation_failures(expect: Expectation, observed: Observation) -> list[str]:
    """Every way the session differs from the expectation, in Chinese, one line each."""
    failures = []

    def differs(label: str, expected, got) -> None:
        if expected is not None and expected != got:
            failures.append(f"{label}：期望 {expected}，实际 {got or '-'}")

    differs("status", expect.status, observed.status)
    if observed.status != expect.status:
        failures.append(f"error：{observed.error.splitlines()[0] if observed.error else '-'}")
    differs("output_type", expect.output_type, observed.output_type)
    differs("verdict", expect.verdict, observed.verdict)
    differs("gatekeeper_severity", expect.gatekeeper_severity, observed.gatekeeper_severity)
    if expect.failed_rules is not None:
        differs("failed_rules", sorted(expect.failed_rules), sorted(observed.failed_rules))
    missing_warnings = [rule for rule in expect.warnings_include if rule not in observed.warning_rules]
    if missing_warnings:
        failures.append(f"warnings：缺少 {missing_warnings}，实际 {observed.warning_rules}")
    differs("rounds", expect.rounds, observed.rounds)
    differs("composer_status", expect.composer_status, observed.composer_status)
    differs("executor_parse_status", expect.executor_parse_status, observed.executor_parse_status)
    for tool, status in expect.evidence_status.items():
        got = observed.evidence_statuses.get(tool, [])
        if not got or any(s != status for s in got):
            failures.append(f"evidence_status[{tool}]：期望全部为 {status}，实际 {got or '未调用'}")
    if expect.claims is not None:
        low, high = expect.claims.min, expect.claims.max
        if observed.kept_claims < low or (high is not None and observed.kept_claims > high):
            failures.append(
                f"claims：期望 {low}–{high if high is not None else '∞'} 条，实际 {observed.kept_claims}"
            )
    if expect.a_claim_cites and not any(set(expect.a_claim_cites) <= tools for tools in observed.cited_tools):
        failures.append(
            f"a_claim_cites：没有一条断言同时引用 {expect.a_claim_cites}，实际 {[sorted(t) for t in observed.cited_tools]}"
        )
    failures += [f"回答中缺少：{term}" for term in expect.answer_contains if term not in observed.answer]
    failures += [f"错误信息中缺少：{term}" for term in expect.error_contains if term not in observed.error]
    if expect.slot and not slot_found(slot=expect.slot, answer=observed.answer):
        failures.append(slot_failure(slot=expect.slot))
    return failures


def forbidden_leaks(terms: list[str], texts: list[str]) -> list[str]:
    """The forbidden terms found (case-insensitively) in any of the texts."""
    folded = "\n".join(texts).casefold()
    return [term for term in terms if term.casefold() in folded]


def _script_failures(case: EvalCase, server: FakeOpenAIServer) -> list[str]:
    failures = []
    for stage, replies in case.script.items():
        requests = len(server.requests_for(stage))
        if stage in case.expect.not_called:
            if requests:
                failures.append(f"{stage} 不应被调用，实际调用 {requests} 次")
        elif requests < len(replies):
            failures.append(
                f"脚本中 {stage} 的 {len(replies) - requests} 条回复未被使用（流程与用例设想不符）"
            )
    return failures


def _got_label(observed: Observation) -> str:
    if observed.status != "COMPLETED":
        return observed.status
    return "/".join(part for part in (observed.verdict, observed.output_type) if part)


@contextmanager
def _case_settings(case: EvalCase) -> Iterator[None]:
    config = settings.DIAGNOSIS
    vocabulary_file = case.vocabulary_file()
    overrides = {
        "VOCABULARY_FILE": str(vocabulary_file) if vocabulary_file else config.get("VOCABULARY_FILE"),
        "DEMO_NOW": case.now.isoformat(),
        "LLM_TIMEOUT": min(config["LLM_TIMEOUT"], EVAL_LLM_TIMEOUT),
        **case.settings.overrides(),
        **fixture_sources(case.tool_overrides().source_data(), config=config),
    }
    recorded = case.recorded_world()
    if recorded is None:
        with override_settings(DIAGNOSIS=config | overrides | case.settings.unset()):
            yield
        return
    with (
        replayed(recorded) as replay,
        override_settings(
            DIAGNOSIS=config | overrides | _replayed_sources(case, recorded, replay) | case.settings.unset()
        ),
    ):
        yield


def _replayed_sources(case: EvalCase, folder: Path, replay: ReplayServer) -> dict:
    """The recorded world's sources, served by the replay at the recording's pinned clock."""
    world = world_file(case.world)
    recording = replay.recording
    runbooks = folder / "runbooks"
    return {
        "PROMETHEUS_URL": replay.url("prometheus"),
        "ALERTMANAGER_URL": replay.url("alertmanager") if "alertmanager" in recording.sources else None,
        "LOKI_URL": replay.url("loki") if "loki" in recording.sources else None,
        "LOKI_TENANT": world.recording.loki_tenant,
        "RUNBOOKS_DIR": str(runbooks) if runbooks.is_dir() else None,
        "DEMO_NOW": recording.recorded_at.isoformat(),
    }


@contextmanager
def _model_endpoint(case: EvalCase) -> Iterator[FakeOpenAIServer | None]:
    """For the llm engine: the local fake OpenAI-compatible server playing the case's script."""
    if case.engine != "llm":
        yield None
        return
    with fake_llm_environment(case.script) as server:
        yield server
