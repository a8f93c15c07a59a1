"""The evaluation summary: how often the verdict is right, whether the question was answered, how well
the guards hold, what it costs. Each metric comes from the cases' own expectations."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from diagnosis.evaluation.runner import CaseResult

FABRICATED, GROUNDED = "fabricated", "grounded"
# Every llm case runs against the fake server replaying its script: it tests our code over a scripted
# model, not a model's accuracy, so it is reported apart from the rules engine's cases.
SCRIPTED_ENGINE = "llm"
ENGINE_KIND, SCRIPTED_KIND = "rules engine", "code over a scripted model"


@dataclass
class Accuracy:
    """Verdict accuracy and REJECT recall over one kind of case."""

    verdict_cases: int
    verdict_accuracy: float | None
    fabricated_cases: int
    fabricated_reject_recall: float | None


@dataclass
class GroupMetrics:
    """The verdict and answer metrics over the cases of one world and one engine kind."""

    world: str
    engine_kind: str
    cases: int
    failed: int
    accuracy: Accuracy
    grounded_cases: int
    grounded_false_reject_rate: float | None
    slot_cases: int
    answered_rate: float | None
    false_pass: int
    off_topic_pass: int


@dataclass
class Summary:
    cases: int
    passed: int
    failed: int
    verdict_cases: int
    verdict_accuracy: float | None
    fabricated_cases: int
    # Share of fabricated-citation cases that ended REJECT.
    fabricated_reject_recall: float | None
    grounded_cases: int
    # Share of grounded cases that ended REJECT anyway.
    grounded_false_reject_rate: float | None
    # The rules engine's cases, and the cases of code over a scripted model.
    engine_cases: Accuracy
    scripted_cases: Accuracy
    slot_cases: int
    # Share of the cases expecting a slot whose answer fills it.
    answered_rate: float | None
    # PASS verdicts whose expected slot the answer does not fill: a false PASS.
    false_pass: int
    forbidden_leaks: int
    # PASS verdicts whose answer names a world subject the case does not ask about.
    off_topic_pass: int
    leaking_cases: int
    mean_rounds: float | None
    llm_sessions: int
    llm_calls_per_session: float | None
    tokens_per_session: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    # The same metrics per world (the case's `world`, else the demo world) and engine kind.
    groups: list[GroupMetrics]

    def as_dict(self) -> dict:
        return asdict(self)


def summary_build(results: list[CaseResult]) -> Summary:
    overall = _accuracy(results)
    grounded = [r for r in results if GROUNDED in r.tags]
    with_slot = [r for r in results if r.slot_found is not None]
    llm = [r for r in results if r.engine == SCRIPTED_ENGINE]
    latencies = [r.latency_ms for r in results]
    return Summary(
        cases=len(results),
        passed=sum(r.passed for r in results),
        failed=sum(not r.passed for r in results),
        verdict_cases=overall.verdict_cases,
        verdict_accuracy=overall.verdict_accuracy,
        fabricated_cases=overall.fabricated_cases,
        fabricated_reject_recall=overall.fabricated_reject_recall,
        grounded_cases=len(grounded),
        grounded_false_reject_rate=_share(grounded, lambda r: r.verdict == "REJECT"),
        engine_cases=_accuracy([r for r in results if r.engine != SCRIPTED_ENGINE]),
        scripted_cases=_accuracy(llm),
        slot_cases=len(with_slot),
        answered_rate=_share(with_slot, lambda r: r.slot_found),
        false_pass=_false_pass(results),
        forbidden_leaks=sum(len(r.leaks) for r in results),
        off_topic_pass=_off_topic_pass(results),
        leaking_cases=sum(bool(r.leaks) for r in results),
        mean_rounds=_mean([r.rounds for r in results if r.rounds]),
        llm_sessions=len(llm),
        llm_calls_per_session=_mean([r.llm_calls for r in llm]),
        tokens_per_session=_mean([r.tokens for r in llm]),
        latency_p50_ms=_percentile(latencies, 50),
        latency_p95_ms=_percentile(latencies, 95),
        groups=_groups(results),
    )


def summary_lines(summary: Summary) -> list[str]:
    def ratio(value: float | None, count: int) -> str:
        return "-" if value is None else f"{value:.1%}  (n={count})"

    def number(value: float | None, unit: str = "") -> str:
        return "-" if value is None else f"{value:,.1f}{unit}"

    engine, scripted = summary.engine_cases, summary.scripted_cases
    return [
        f"cases                          {summary.passed}/{summary.cases} passed, {summary.failed} failed",
        f"verdict accuracy               {ratio(summary.verdict_accuracy, summary.verdict_cases)}",
        f"  engine cases (rules)         {ratio(engine.verdict_accuracy, engine.verdict_cases)}",
        f"  code over a scripted model   {ratio(scripted.verdict_accuracy, scripted.verdict_cases)}",
        f"REJECT recall (fabricated)     {ratio(summary.fabricated_reject_recall, summary.fabricated_cases)}",
        f"  engine cases (rules)         {ratio(engine.fabricated_reject_recall, engine.fabricated_cases)}",
        f"  code over a scripted model   {ratio(scripted.fabricated_reject_recall, scripted.fabricated_cases)}",
        f"false-reject rate (grounded)   {ratio(summary.grounded_false_reject_rate, summary.grounded_cases)}",
        f"answered rate (expected slot)  {ratio(summary.answered_rate, summary.slot_cases)}",
        f"false PASS (slot not filled)   {summary.false_pass}",
        f"forbidden-term leaks           {summary.forbidden_leaks} in {summary.leaking_cases} case(s)",
        f"off-topic PASS                 {summary.off_topic_pass}",
        f"mean rounds                    {number(summary.mean_rounds)}",
        f"LLM calls / session (llm)      {number(summary.llm_calls_per_session)}  (n={summary.llm_sessions})",
        f"tokens / session (llm)         {number(summary.tokens_per_session)}",
        f"latency p50 / p95              {number(summary.latency_p50_ms, ' ms')} / {number(summary.latency_p95_ms, ' ms')}",
        *group_lines(summary.groups),
    ]


GROUP_COLUMNS = (
    ("world / engine kind", 40),
    ("cases", 6),
    ("failed", 7),
    ("verdict accuracy", 18),
    ("REJECT recall", 15),
    ("false-reject", 15),
    ("answered", 15),
    ("false PASS", 11),
    ("off-topic PASS", 14),
)


def group_lines(groups: list[GroupMetrics]) -> list[str]:
    """One row per world and engine kind; a ratio is `share (n)`, `-` when no case of the row counts."""

    def ratio(value: float | None, count: int) -> str:
        return "-" if value is None else f"{value:.1%} ({count})"

    def row(cells: list[str]) -> str:
        return "  ".join(
            f"{cell:<{width}}" for cell, (_, width) in zip(cells, GROUP_COLUMNS, strict=True)
        ).rstrip()

    return [
        "",
        "per world and engine kind",
        row([title for title, _ in GROUP_COLUMNS]),
        *(
            row(
                [
                    f"{group.world} / {group.engine_kind}",
                    str(group.cases),
                    str(group.failed),
                    ratio(group.accuracy.verdict_accuracy, group.accuracy.verdict_cases),
                    ratio(group.accuracy.fabricated_reject_recall, group.accuracy.fabricated_cases),
                    ratio(group.grounded_false_reject_rate, group.grounded_cases),
                    ratio(group.answered_rate, group.slot_cases),
                    str(group.false_pass),
                    str(group.off_topic_pass),
                ]
            )
            for group in groups
        ),
    ]


def _groups(results: list[CaseResult]) -> list[GroupMetrics]:
    keys = sorted({(r.world, _engine_kind(r)) for r in results})
    groups = []
    for world, kind in keys:
        members = [r for r in results if (r.world, _engine_kind(r)) == (world, kind)]
        grounded = [r for r in members if GROUNDED in r.tags]
        with_slot = [r for r in members if r.slot_found is not None]
        groups.append(
            GroupMetrics(
                world=world,
                engine_kind=kind,
                cases=len(members),
                failed=sum(not r.passed for r in members),
                accuracy=_accuracy(members),
                grounded_cases=len(grounded),
                grounded_false_reject_rate=_share(grounded, lambda r: r.verdict == "REJECT"),
                slot_cases=len(with_slot),
                answered_rate=_share(with_slot, lambda r: r.slot_found),
                false_pass=_false_pass(members),
                off_topic_pass=_off_topic_pass(members),
            )
        )
    return groups


def _engine_kind(result: CaseResult) -> str:
    return SCRIPTED_KIND if result.engine == SCRIPTED_ENGINE else ENGINE_KIND


def _false_pass(results: list[CaseResult]) -> int:
    return sum(r.verdict == "PASS" and r.slot_found is False for r in results)


def _off_topic_pass(results: list[CaseResult]) -> int:
    return sum(bool(r.off_topic_subjects) for r in results)


def _accuracy(results: list[CaseResult]) -> Accuracy:
    with_verdict = [r for r in results if r.expected_verdict]
    fabricated = [r for r in results if FABRICATED in r.tags]
    return Accuracy(
        verdict_cases=len(with_verdict),
        verdict_accuracy=_share(with_verdict, lambda r: r.verdict == r.expected_verdict),
        fabricated_cases=len(fabricated),
        fabricated_reject_recall=_share(fabricated, lambda r: r.verdict == "REJECT"),
    )


def _share(results: list[CaseResult], hit) -> float | None:
    return sum(bool(hit(r)) for r in results) / len(results) if results else None


def _mean(values: list[float]) -> float | None:
    return statistics.mean(values) if values else None


def _percentile(values: list[float], pct: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]
