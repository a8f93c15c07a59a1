"""Every kind of the exporter world asked live of both engines, each answer held against the truth.

    python -m tests.integration.exporter_kinds [--settle SECONDS] [--case NAME ...] [--json FILE]

starts the exporter stack once (bounded traffic), lets the traffic run `--settle` seconds, then asks
the question of every case of `exporter_cases.CASES_OF_THE_WORLD` through both engines in this
process against the live sources: the rules engine, and the llm engine over the local fake
OpenAI-compatible server (no script: its honest model) through the real openai SDK. Per case it
prints the kind, the question, and per engine the verdict, the conclusion lines, the PromQL and LogQL
the session sent (its invocations' receipts), the truth computed by the case's expectation from what
Prometheus, Alertmanager and the Loki server answered this module at the session's instant, and
whether a conclusion line holds that truth within the case's tolerance; then per engine how many
kinds were answered and how many PASS verdicts were given to an unanswered one (false PASS).

The judgment reads the answer's text only: it never calls the product's code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

ENGINES = ("rules", "llm")
# A `结论` line after optional markdown (`**结论**：`, `- 结论：`, `1. 结论：`).
CONCLUSION_LINE = re.compile(r"^[\s>#*_+\-]*(?:\d+[.)][\s*_]*)?结论")
# A number as an answer writes it (`-3`, `0.25`, `4,194,304`), not the digits of a name (`p99`, `v1`).
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![A-Za-z0-9_]|\.\d)")
SETTLE_SECONDS = 180.0
# The traffic stops by itself this long after the settle, whatever happens to this process.
TRAFFIC_AFTER_SETTLE_SECONDS = 3600.0


@dataclass
class Row:
    case: str
    kind: str
    question: str
    engine: str
    verdict: str
    output_type: str
    conclusions: list[str]
    sent: list[str]
    truth_contains: list[str]
    truth_numbers: list[tuple[float, float]]
    expected_verdict: str
    answered: bool
    seconds: float
    answer: str = field(repr=False, default="")

    @property
    def false_pass(self) -> bool:
        return self.verdict == "PASS" and not self.answered


def conclusion_lines(answer: str) -> list[str]:
    """The answer's `结论` lines that say something (not a bare `**结论**` heading)."""
    return [
        line.strip()
        for line in answer.splitlines()
        if (match := CONCLUSION_LINE.match(line)) and line[match.end() :].strip(" *_:：")
    ]


def holds(*, contains: list[str], numbers: list[tuple[float, float]], line: str) -> bool:
    """Every expected term on the line, and every expected number within its tolerance of one stated."""
    stated = [float(number.replace(",", "")) for number in NUMBER.findall(line)]
    return all(term in line for term in contains) and all(
        any(abs(number - value) <= tolerance for number in stated) for value, tolerance in numbers
    )


def answered(
    *, case, contains: list[str], numbers: list[tuple[float, float]], verdict: str, answer: str
) -> bool:
    """A kind with a truth: one conclusion line holds all of it. A question the stack cannot answer
    (no expectation): answered when the verdict is the case's (LOW_CONFID, said unknown)."""
    if case.expected is None:
        return verdict == case.verdict
    return any(holds(contains=contains, numbers=numbers, line=line) for line in conclusion_lines(answer))


def truth_at(stack, at: datetime):
    """The recorder's truth (`truth.json`'s shape) read from the live sources at that instant."""
    from django.conf import settings

    from tests.integration.exporter_cases import Truth
    from tests.integration.record_exporter_world import truth_record

    raw = truth_record(stack, at=at, window_minutes=settings.DIAGNOSIS["LOGS_WINDOW_MINUTES"])
    return Truth(raw, alertmanager_alerts=stack.alertmanager_alerts())


def queries_sent(session) -> list[str]:
    """The PromQL and LogQL of every request the session's calls sent, in order, once each."""
    sent = []
    for invocation in session.tool_invocations.all():
        receipt = invocation.receipt_record
        for request in receipt.requests if receipt else []:
            if request.query:
                sent.append(f"{request.source}: {request.query}")
    return list(dict.fromkeys(sent))


def asked_at(session) -> datetime:
    """The instant the session's first call asked its source about (the asks' calls come first, and
    their slot is the conclusion): the truth is read at the same instant. A session that called
    nothing: when it was created."""
    instants = [
        receipt.evaluated_at
        for invocation in session.tool_invocations.all()
        if (receipt := invocation.receipt_record) and receipt.requests
    ]
    return min(instants, default=session.created_at)


@contextmanager
def stack_sources(stack) -> Iterator[None]:
    """The stack as a team's sources, with the product's own vocabulary; the llm engine's model is the
    fake server's honest one (no script)."""
    from django.conf import settings
    from django.test import override_settings

    from diagnosis.evaluation.fake_llm import fake_llm_environment

    sources = stack.settings() | {"VOCABULARY_FILE": None, "DEMO_NOW": None}
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | sources), fake_llm_environment():
        yield


def case_ask(stack, case, engine: str) -> Row:
    """Ask the case's question of one engine (sources already set) and judge the answer."""
    from diagnosis.services.sessions import session_start

    started = time.perf_counter()
    session = session_start(query=case.question, engine=engine, run_inline=True)
    seconds = time.perf_counter() - started
    contains, numbers = case.expected(truth_at(stack, asked_at(session))) if case.expected else ([], [])
    verdict = session.verdict or session.status
    return Row(
        case=case.name,
        kind=case.ask or "unknown",
        question=case.question,
        engine=engine,
        verdict=verdict,
        output_type=session.output_type,
        conclusions=conclusion_lines(session.answer),
        sent=queries_sent(session),
        truth_contains=contains,
        truth_numbers=numbers,
        expected_verdict=case.verdict,
        answered=answered(
            case=case, contains=contains, numbers=numbers, verdict=verdict, answer=session.answer
        ),
        seconds=round(seconds, 1),
        answer=session.answer,
    )


def kinds_ask(stack, cases: Iterable, engines: Iterable[str] = ENGINES, *, on_row=None) -> list[Row]:
    rows = []
    with stack_sources(stack):
        for case in cases:
            for engine in engines:
                row = case_ask(stack, case, engine)
                rows.append(row)
                if on_row:
                    on_row(row)
    return rows


def _truth_text(row: Row) -> str:
    if not (row.truth_contains or row.truth_numbers):
        return f"verdict {row.expected_verdict} (the stack has no such subject)"
    numbers = [f"{value:g}±{tolerance:g}" for value, tolerance in row.truth_numbers]
    return " · ".join([*(f"「{term}」" for term in row.truth_contains), *numbers])


def row_text(row: Row, *, first: bool) -> str:
    lines = [f"== {row.case} [{row.kind}] {row.question}"] if first else []
    mark = "answered" if row.answered else ("FALSE PASS" if row.false_pass else "unanswered")
    lines.append(
        f"  {row.engine:<5} {row.verdict:<10} {mark:<10} truth {_truth_text(row)}  ({row.seconds:g} s)"
    )
    lines += [f"        {line}" for line in row.conclusions or ["(no 结论 line)"]]
    lines += [f"        sent {query}" for query in row.sent]
    return "\n".join(lines)


def summary_text(rows: list[Row]) -> str:
    lines = []
    by_case = {}
    for row in rows:
        by_case.setdefault(row.case, {})[row.engine] = row
    for engine in dict.fromkeys(row.engine for row in rows):
        mine = [row for row in rows if row.engine == engine]
        lines.append(
            f"{engine}: answered {sum(r.answered for r in mine)}/{len(mine)}, "
            f"false PASS {sum(r.false_pass for r in mine)}"
            + (
                f" ({', '.join(r.case for r in mine if r.false_pass)})"
                if any(r.false_pass for r in mine)
                else ""
            )
        )
    behind = [
        name
        for name, pair in by_case.items()
        if len(pair) == 2 and pair["rules"].answered and not pair["llm"].answered
    ]
    ahead = [
        name
        for name, pair in by_case.items()
        if len(pair) == 2 and pair["llm"].answered and not pair["rules"].answered
    ]
    lines.append(
        f"llm below rules: {', '.join(behind) or 'none'}; llm above rules: {', '.join(ahead) or 'none'}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--settle", type=float, default=SETTLE_SECONDS, help="seconds of traffic before asking"
    )
    parser.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    parser.add_argument("--engine", action="append", choices=ENGINES, help="only this engine (repeatable)")
    parser.add_argument("--json", type=Path, help="write the rows (with the full answers) to this file")
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DIAGNOSIS_DEV", "1")
    import django

    django.setup()
    from diagnosis.evaluation.database import throwaway_database
    from tests.integration.exporter_cases import CASES_OF_THE_WORLD
    from tests.integration.exporter_stack import exporter_stack_running, missing_packages

    if missing := missing_packages():
        sys.exit(f"Debian packages missing: {', '.join(missing)} (`make sources-stack` installs them)")
    cases = [case for case in CASES_OF_THE_WORLD if not options.case or case.name in options.case]
    if unknown := set(options.case) - {case.name for case in cases}:
        sys.exit(f"no such case: {', '.join(sorted(unknown))}")
    seen: set[str] = set()

    def printed(row: Row) -> None:
        print(row_text(row, first=row.case not in seen), flush=True)
        seen.add(row.case)

    with (
        exporter_stack_running(trickle_seconds=options.settle + TRAFFIC_AFTER_SETTLE_SECONDS) as stack,
        throwaway_database(),
    ):
        print(
            f"exporter stack ready in {stack.start_seconds:.1f} s; traffic for {options.settle:g} s",
            flush=True,
        )
        time.sleep(options.settle)
        rows = kinds_ask(stack, cases, options.engine or ENGINES, on_row=printed)
    print(summary_text(rows))
    if options.json:
        options.json.write_text(
            json.dumps(
                [asdict(row) | {"false_pass": row.false_pass} for row in rows], ensure_ascii=False, indent=1
            ),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
