"""The evaluation summary: how often the verdict is right, how well the guards hold, what it costs."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from diagnosis.evaluation.runner import CaseResult

FABRICATED, GROUNDED = "fabricated", "grounded"


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
    forbidden_leaks: int
    # PASS verdicts with a kept claim about a subject the question did not ask.
    off_topic_pass: int
    leaking_cases: int
    mean_rounds: float | None
    llm_sessions: int
    llm_calls_per_session: float | None
    tokens_per_session: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def summary_build(results: list[CaseResult]) -> Summary:
    with_verdict = [r for r in results if r.expected_verdict]
    fabricated = [r for r in results if FABRICATED in r.tags]
    grounded = [r for r in results if GROUNDED in r.tags]
    llm = [r for r in results if r.engine == "llm"]
    latencies = [r.latency_ms for r in results]
    return Summary(
        cases=len(results),
        passed=sum(r.passed for r in results),
        failed=sum(not r.passed for r in results),
        verdict_cases=len(with_verdict),
        verdict_accuracy=_share(with_verdict, lambda r: r.verdict == r.expected_verdict),
        fabricated_cases=len(fabricated),
        fabricated_reject_recall=_share(fabricated, lambda r: r.verdict == "REJECT"),
        grounded_cases=len(grounded),
        grounded_false_reject_rate=_share(grounded, lambda r: r.verdict == "REJECT"),
        forbidden_leaks=sum(len(r.leaks) for r in results),
        off_topic_pass=sum(r.off_topic for r in results),
        leaking_cases=sum(bool(r.leaks) for r in results),
        mean_rounds=_mean([r.rounds for r in results if r.rounds]),
        llm_sessions=len(llm),
        llm_calls_per_session=_mean([r.llm_calls for r in llm]),
        tokens_per_session=_mean([r.tokens for r in llm]),
        latency_p50_ms=_percentile(latencies, 50),
        latency_p95_ms=_percentile(latencies, 95),
    )


def summary_lines(summary: Summary) -> list[str]:
    def ratio(value: float | None, count: int) -> str:
        return "-" if value is None else f"{value:.1%}  (n={count})"

    def number(value: float | None, unit: str = "") -> str:
        return "-" if value is None else f"{value:,.1f}{unit}"

    return [
        f"cases                          {summary.passed}/{summary.cases} passed, {summary.failed} failed",
        f"verdict accuracy               {ratio(summary.verdict_accuracy, summary.verdict_cases)}",
        f"REJECT recall (fabricated)     {ratio(summary.fabricated_reject_recall, summary.fabricated_cases)}",
        f"false-reject rate (grounded)   {ratio(summary.grounded_false_reject_rate, summary.grounded_cases)}",
        f"forbidden-term leaks           {summary.forbidden_leaks} in {summary.leaking_cases} case(s)",
        f"off-topic PASS                 {summary.off_topic_pass}",
        f"mean rounds                    {number(summary.mean_rounds)}",
        f"LLM calls / session (llm)      {number(summary.llm_calls_per_session)}  (n={summary.llm_sessions})",
        f"tokens / session (llm)         {number(summary.tokens_per_session)}",
        f"latency p50 / p95              {number(summary.latency_p50_ms, ' ms')} / {number(summary.latency_p95_ms, ' ms')}",
    ]


def _share(results: list[CaseResult], hit) -> float | None:
    return sum(bool(hit(r)) for r in results) / len(results) if results else None


def _mean(values: list[float]) -> float | None:
    return statistics.mean(values) if values else None


def _percentile(values: list[float], pct: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]
