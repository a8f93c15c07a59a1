"""The llm engine beside the rules engine on the same questions (contracts §20): each question is
asked once with each engine, inline, and the two sessions are compared on what the answer must
hold (the asks' slots filled), the verdict, the model's tokens and the wall time; and on whether a
tool call with a name the sources do not know reached a source unresolved (from the recorded
invocations). `manage.py llm_real` prints the table against a real local model.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import Sum

from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.focus import folded_name
from diagnosis.pipeline.records import RoundRecord, verifier_record_read
from diagnosis.services.sessions import session_start

# Tool arguments that carry a name of the inventory: argument → the inventory's list of such names.
NAMED_ARGUMENTS = {"service": "services", "alert_name": "alerts"}
HEADER = (
    f"{'#':>2} {'slots llm/rules':>15} {'verdict llm/rules':<23} {'tokens':>7} "
    f"{'wall s llm/rules':>17} {'unresolved':>10}  question"
)


@dataclass(frozen=True)
class EngineRun:
    engine: str
    session: DiagnosisSession
    status: str
    verdict: str
    output_type: str
    slots_filled: int
    slots: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    tool_calls: int
    # Recorded calls whose service or alert name the sources do not know and the question did not ask.
    unresolved_names: int
    # The engine whose backend failed, when the rules engine answered instead.
    answered_instead: bool
    error: str = ""

    @property
    def verdict_label(self) -> str:
        label = self.verdict or self.status
        return f"{label}*" if self.answered_instead else label


@dataclass(frozen=True)
class Comparison:
    number: int
    question: str
    llm: EngineRun
    rules: EngineRun

    @property
    def slots_below_rules(self) -> bool:
        return self.llm.slots_filled < self.rules.slots_filled

    def lines(self) -> Iterator[str]:
        """The question's row of the table (under HEADER), then what failed, if anything did."""
        slots = f"{self.llm.slots_filled}/{self.rules.slots_filled} of {self.llm.slots}"
        verdicts = f"{self.llm.verdict_label}/{self.rules.verdict_label}"
        wall = f"{self.llm.wall_s:.1f}/{self.rules.wall_s:.1f}"
        yield (
            f"{self.number:>2} {slots:>15} {verdicts:<23} {self.llm.prompt_tokens:>7} "
            f"{wall:>17} {self.llm.unresolved_names:>10}  {self.question}"
        )
        for run in (self.llm, self.rules):
            if run.error:
                yield f"   {run.engine} failed: {run.error}"


def engine_run(question: str, *, engine: str) -> EngineRun:
    started = time.perf_counter()
    session = session_start(query=question, engine=engine, run_inline=True)
    wall = time.perf_counter() - started
    record = verifier_record_read((session.self_evaluation or {}).get("verifier_evaluation"))
    slots = record.slots if record else []
    usage = session.steps.aggregate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
    return EngineRun(
        engine=engine,
        session=session,
        status=session.status,
        verdict=session.verdict or "",
        output_type=session.output_type or "",
        slots_filled=sum(slot.filled for slot in slots),
        slots=len(slots),
        prompt_tokens=usage["prompt"] or 0,
        completion_tokens=usage["completion"] or 0,
        wall_s=wall,
        tool_calls=session.tool_invocations.count(),
        unresolved_names=unresolved_names(session, record),
        answered_instead=bool(record and record.engine_fallback),
        error="" if session.status == DiagnosisSession.Status.COMPLETED else session.error or "",
    )


def engines_compared(question: str, *, number: int) -> Comparison:
    return Comparison(
        number=number,
        question=question,
        llm=engine_run(question, engine="llm"),
        rules=engine_run(question, engine="rules"),
    )


def unresolved_names(session: DiagnosisSession, record: RoundRecord | None) -> int:
    """Recorded calls with a service or alert name the inventory lacks and the question did not ask
    about (a name asked about is searched as written, and the answer says it is unknown)."""
    if record is None:
        return 0
    asked = {folded_name(unknown["name"]) for unknown in record.focus.get("unknown", [])}
    count = 0
    for arguments in session.tool_invocations.values_list("input", flat=True):
        for argument, kind in NAMED_ARGUMENTS.items():
            known = record.inventory.get(kind) or []
            name = (arguments or {}).get(argument)
            if (
                known
                and isinstance(name, str)
                and name
                and name not in known
                and folded_name(name) not in asked
            ):
                count += 1
    return count


def summary_lines(comparisons: list[Comparison]) -> Iterator[str]:
    if not comparisons:
        return
    llm = [c.llm for c in comparisons]
    passed = sum(run.verdict == "PASS" and not run.answered_instead for run in llm)
    below = [c.number for c in comparisons if c.slots_below_rules]
    yield (
        f"llm PASS {passed}/{len(llm)}; slots below the rules engine on {len(below)} question(s)"
        + (f" ({', '.join(map(str, below))})" if below else "")
    )
    yield (
        f"llm prompt tokens/session median {statistics.median(r.prompt_tokens for r in llm):.0f}; "
        f"wall median {statistics.median(r.wall_s for r in llm):.1f} s "
        f"(rules {statistics.median(c.rules.wall_s for c in comparisons):.1f} s); "
        f"calls with an unresolved name {sum(r.unresolved_names for r in llm)}; "
        f"answered by the rules engine instead (*) {sum(r.answered_instead for r in llm)}"
    )
