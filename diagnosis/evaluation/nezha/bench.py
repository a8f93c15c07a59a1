"""`manage.py bench_rca --nezha DIR`: the product asked for the root cause of each injected fault of
the Nezha benchmark, its first candidate scored against the injected pod's service.

Per day: the day's metrics as OpenMetrics (`openmetrics`), shifted by whole minutes so the day ends
shortly before now (`present_shift`), loaded into a real Prometheus (`prometheus`); with the Nezha
repository, the day's span files in that Prometheus too as Tempo's span metrics (each service's
operations) and, where the day has no per-edge latency of its own (TrainTicket), service-graph
histograms (`traces`), and the day's log files shifted alike behind a Loki stand-in (`logs`), the
only log source. Per fault, with the repository, the span files of the case's read window behind a
Tempo stand-in (`spans`), the only trace source, the window's log lines as the events of the spans
they were written in. Per fault:
the clock pinned a few minutes after the injection (an engineer asking while it happens), the question
"<namespace> 从 HH:MM 开始出现异常（<entry> 延迟升高），根因是哪个服务？" asked of the rules engine
in-process with that Prometheus as the only metrics source and that Loki as the only log source (no
runbooks: the data have none), and the services its first `结论` line names, in order, are its ranking. The baseline
(`baseline`) ranks the same rows by their largest robust change.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from diagnosis.evaluation.nezha import openmetrics
from diagnosis.evaluation.nezha.baseline import baseline_ranking
from diagnosis.evaluation.nezha.data import Day, Fault, NezhaDataError, day_read, faults_read
from diagnosis.evaluation.nezha.logs import log_files, log_files_between, log_streams, logs_served
from diagnosis.evaluation.nezha.prometheus import blocks_created, metadata_exposition, prometheus_serving
from diagnosis.evaluation.nezha.spans import spans_served, tempo_spans
from diagnosis.evaluation.nezha.traces import TraceMinutes, trace_files, trace_files_between, trace_minutes
from diagnosis.evaluation.observe import session_observe
from diagnosis.evaluation.tempo import TempoSpan
from diagnosis.services.sessions import session_start
from tools.evidence.registry import LOG_PATTERNS, LOG_SERIES, SERIES

# The day ends this long before the real now.
END_BEFORE_NOW = timedelta(minutes=2)
# The question is asked this long after the injection; the baseline reaches this far before it.
ASKED_AFTER = timedelta(minutes=5)
BASELINE = timedelta(minutes=30)
QUESTION = "{namespace} 从 {onset} 开始出现异常（{entry} 延迟升高），根因是哪个服务？"
CONCLUSION_LINE = re.compile(r"^[ \t*#>-]*结论[:：]", re.MULTILINE)
CANDIDATES = "根因候选："
# The benchmark's data carry no runbooks (nor logs without the repository): those tools answer nothing
# rather than the demo world's records (`tools.sources.fixture`, replace mode with no records).
NO_RECORDS = {"mode": "replace", "records": []}
FIXTURE = "tools.sources.fixture.FixtureSource"


@dataclass(frozen=True)
class System:
    key: str
    name: str
    namespace: str
    days: tuple[str, ...]
    # Nezha's own service-level AS@1 and AS@3 (%), from its README.
    published: tuple[float, float]


SYSTEMS = {
    "ob": System("ob", "OnlineBoutique", "hipster", ("2022-08-22", "2022-08-23"), (92.86, 96.43)),
    "tt": System("tt", "TrainTicket", "ts", ("2023-01-29", "2023-01-30"), (86.67, 97.78)),
}


@dataclass
class CaseOutcome:
    system: str
    fault: Fault
    question: str
    product: list[str]
    baseline: list[str]
    seconds: float
    conclusion: str
    verdict: str
    # PromQL queries the session sent (its investigation's range queries among them), LogQL metric
    # queries (its error lines a minute) and line-pattern queries (one a service).
    queries: int = 0
    log_queries: int = 0
    pattern_queries: int = 0
    # The services of the system the investigation looked over (the inventory's).
    services: int = 0
    # Candidates the conclusion names that are no service of the data.
    strangers: tuple[str, ...] = ()
    # Whether an earlier fault of its day was injected at its service within its baseline: that one's
    # moves are in the baseline it is compared with.
    follows_own: bool = False

    @property
    def truth(self) -> str:
        return self.fault.service

    def hit(self, ranking: Sequence[str], k: int) -> bool:
        return self.truth in ranking[:k]


@dataclass
class BenchOptions:
    root: Path
    systems: Sequence[str]
    limit: int | None = None
    cases: Sequence[str] = ()
    asked_after: timedelta = ASKED_AFTER
    baseline: timedelta = BASELINE
    engine: str = "rules"
    # The Nezha repository (a folder or its bare git directory): its span files and log files.
    repository: Path | None = None


@dataclass
class Selected:
    system: System
    day: str
    faults: list[Fault] = field(default_factory=list)
    # Every fault of the day, asked or not: an earlier one at the same service is in an asked one's baseline.
    day_faults: list[Fault] = field(default_factory=list)


def cases_selected(options: BenchOptions) -> list[Selected]:
    """The days to load and their faults to ask about, in time order: `cases` (ids such as
    `2022-08-22T035354`) if given, else every fault, at most `limit` per system."""
    selected = []
    for key in options.systems:
        system = SYSTEMS[key]
        left = options.limit
        for day in system.days:
            folder = options.root / day
            if not folder.is_dir():
                raise NezhaDataError(
                    f"找不到 {folder}：--nezha 应指向 Nezha 的 rca_data 的上一级目录或 rca_data 本身"
                )
            day_faults = faults = faults_read(folder)
            if options.cases:
                faults = [fault for fault in faults if fault.case_id in options.cases]
            elif left is not None:
                faults, left = faults[:left], max(0, left - len(faults))
            if faults:
                selected.append(Selected(system, day, faults, day_faults))
    return selected


def bench_run(
    options: BenchOptions, *, on_case: Callable[[CaseOutcome], None] = lambda _: None
) -> list[CaseOutcome]:
    outcomes = []
    for chosen in cases_selected(options):
        day = day_read(options.root / chosen.day)
        traces = _day_traces(options, day)
        namespace = chosen.system.namespace
        with (
            day_served(day, namespace=namespace, traces=traces) as (url, shift),
            logs_served(_day_streams(options, chosen.day, namespace=namespace, shift=shift)) as loki,
        ):
            for fault in chosen.faults:
                with spans_served(case_spans(options, chosen.day, fault, shift=shift)) as tempo:
                    outcome = case_asked(
                        day,
                        fault,
                        system=chosen.system,
                        url=url,
                        shift=shift,
                        options=options,
                        loki=loki,
                        tempo=tempo,
                    )
                outcome.follows_own = follows_own(fault, chosen.day_faults, within=options.baseline)
                outcomes.append(outcome)
                on_case(outcome)
    return outcomes


def follows_own(fault: Fault, faults: Iterable[Fault], *, within: timedelta) -> bool:
    """Whether another of the faults was injected at the fault's service in the `within` before it."""
    return any(
        other.service == fault.service and fault.at - within <= other.at < fault.at for other in faults
    )


@contextmanager
def day_served(
    day: Day, *, namespace: str, traces: TraceMinutes | None = None
) -> Iterator[tuple[str, timedelta]]:
    """A Prometheus over the day shifted to end shortly before now (with the traces' span metrics and
    service-graph latency, if given); yields its URL and the shift."""
    shift = present_shift(day.end, now=timezone.now())
    with tempfile.TemporaryDirectory(prefix="nezha-") as folder:
        work = Path(folder)
        text = openmetrics.openmetrics_write(
            day, namespace=namespace, shift=shift, path=work / "day.om.txt", traces=traces
        )
        tsdb = blocks_created(text, into=work / "tsdb")
        text.unlink()
        with prometheus_serving(
            tsdb, metadata=metadata_exposition(openmetrics.day_families(day, traces=traces)), workdir=work
        ) as url:
            yield url, shift


def present_shift(end: datetime, *, now: datetime) -> timedelta:
    """How far a day ending at `end` is moved to end shortly before `now`: whole minutes, so that every
    minute of the data stays a clock minute (the sources' windows and steps follow the clock) and two
    runs read the same minutes the same way."""
    return timedelta(minutes=(now - END_BEFORE_NOW - end) // timedelta(minutes=1))


def _day_traces(options: BenchOptions, day: Day) -> TraceMinutes | None:
    """The day's span files, if the repository is given: every span counted per operation; per-edge
    latency only where the day has none of its own (its own is every minute's)."""
    if options.repository is None:
        return None
    return trace_minutes(trace_files(options.repository, day.name), edges=not day.edge_latency)


def _day_streams(options: BenchOptions, day: str, *, namespace: str, shift: timedelta) -> list:
    if options.repository is None:
        return []
    return log_streams(log_files(options.repository, day), namespace=namespace, shift=shift)


def case_spans(options: BenchOptions, day: str, fault: Fault, *, shift: timedelta) -> list[TempoSpan]:
    """The spans of the case's read window, if the repository is given: from the baseline's start
    before the injection to the question (a day's spans are more than a case should hold), each with
    the log lines of the window written in it as its events."""
    if options.repository is None:
        return []
    start = fault.at.replace(second=0, microsecond=0) - options.baseline
    end = fault.at + options.asked_after
    files = trace_files_between(options.repository, day, start, end)
    logs = log_files_between(options.repository, day, start, end)
    return tempo_spans(files, shift=shift, logs=logs)


def case_asked(
    day: Day,
    fault: Fault,
    *,
    system: System,
    url: str,
    shift: timedelta,
    options: BenchOptions,
    loki: str | None = None,
    tempo: str | None = None,
) -> CaseOutcome:
    onset = fault.at + shift
    asked_at = onset + options.asked_after
    question = QUESTION.format(
        namespace=system.namespace,
        onset=timezone.localtime(onset).strftime("%H:%M"),
        entry=entry_service(day),
    )
    with _sources(url, loki=loki, tempo=tempo, now=asked_at):
        started = time.perf_counter()
        session = session_start(query=question, engine=options.engine, run_inline=True)
        seconds = time.perf_counter() - started
        observed = session_observe(session=session)
        queries = len(observed.evidence_statuses.get(SERIES.tool, []))
        log_queries = len(observed.evidence_statuses.get(LOG_SERIES.tool, []))
        pattern_queries = len(observed.evidence_statuses.get(LOG_PATTERNS.tool, []))
    conclusion = first_conclusion(observed.answer)
    baseline_minute = onset.replace(second=0, microsecond=0)
    return CaseOutcome(
        system=system.key,
        fault=fault,
        question=question,
        product=candidates_named(conclusion, day.services),
        baseline=baseline_ranking(
            day,
            onset=baseline_minute - shift,
            baseline_start=baseline_minute - shift - options.baseline,
            end=asked_at - shift,
        ),
        seconds=seconds,
        conclusion=conclusion,
        verdict=observed.verdict,
        queries=queries,
        log_queries=log_queries,
        pattern_queries=pattern_queries,
        services=len(day.services),
        strangers=tuple(name for name in candidate_subjects(conclusion) if name not in day.services),
    )


def entry_service(day: Day) -> str:
    """The service the load enters by: a caller no service calls that has metrics of its own."""
    called = {callee for _, callee in day.edges}
    services = set(day.services)
    roots = [caller for caller, _ in day.edges if caller not in called and caller in services]
    return roots[0] if roots else "入口服务"


def first_conclusion(answer: str) -> str:
    match = CONCLUSION_LINE.search(answer or "")
    if match is None:
        return ""
    return answer[match.start() :].split("\n", 1)[0].strip()


def candidates_named(conclusion: str, services: Iterable[str]) -> list[str]:
    """The ranking a conclusion line states: §23's candidates (`根因候选：A（…）；其次：B（…）；C（…）`),
    each the text before its parenthesis; any other line, the services it names in order."""
    body = conclusion.split(CANDIDATES, 1)[1] if CANDIDATES in conclusion else ""
    if not body:
        return services_named(conclusion, services)
    known = set(services)
    return list(dict.fromkeys(name for name in candidate_subjects(conclusion) if name in known))


def candidate_subjects(conclusion: str) -> list[str]:
    """Every subject §23's candidate list names, known to the data or not."""
    body = conclusion.split(CANDIDATES, 1)[1] if CANDIDATES in conclusion else ""
    return [name for part in re.split(r"；(?:其次：)?", body) if (name := part.split("（", 1)[0].strip())]


def services_named(text: str, services: Iterable[str]) -> list[str]:
    """The services a text names, in the order it first names them (a name inside a longer name, as
    `ts-food-service` in `ts-station-food-service`, does not count)."""
    found = []
    for service in services:
        match = re.search(rf"(?<![A-Za-z0-9_-]){re.escape(service)}(?![A-Za-z0-9_-])", text)
        if match:
            found.append((match.start(), service))
    return [service for _, service in sorted(found)]


@contextmanager
def _sources(url: str, *, loki: str | None, tempo: str | None, now: datetime) -> Iterator[None]:
    """Prometheus (and Loki and Tempo, given them) as the only sources; logs without Loki answer nothing."""
    diagnosis = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": url,
        "ALERTMANAGER_URL": None,
        "LOKI_URL": loki,
        "LOKI_TENANT": None,
        "TEMPO_URL": tempo,
        "RUNBOOKS_DIR": None,
        "SERVICE_LABELS": ["service"],
        # In local time: the question's clock time ("从 07:35") is the reader's.
        "DEMO_NOW": timezone.localtime(now).isoformat(),
        "SOURCE_CLASSES": {"knowledge": FIXTURE} | ({} if loki else {"logs": FIXTURE}),
        "FIXTURE_TOOL_DATA": {"lookup_knowledge": NO_RECORDS} | ({} if loki else {"query_logs": NO_RECORDS}),
        "KNOWLEDGE_SOURCES": [],
    }
    with override_settings(DIAGNOSIS=diagnosis):
        yield


# --- The report --------------------------------------------------------------------------------


def case_line(outcome: CaseOutcome) -> str:
    mark = "✓" if outcome.hit(outcome.product, 1) else ("·" if outcome.hit(outcome.product, 3) else "✗")
    return (
        f"{mark} {outcome.fault.case_id} {outcome.fault.kind:<15} {outcome.truth:<32} "
        f"product={','.join(outcome.product[:3]) or '-'}  baseline={','.join(outcome.baseline[:3])}  "
        f"{outcome.seconds:.1f}s {outcome.queries}q{f'+{outcome.log_queries}l' if outcome.log_queries else ''}"
        f"{f'+{outcome.pattern_queries}p' if outcome.pattern_queries else ''} "
        f"{outcome.verdict}"
    )


def lead_mechanism(conclusion: str) -> str:
    """What the first candidate's mechanism names, without its caller (`CPU 使用升高`, `被调用延迟升高`)."""
    body = conclusion.split(CANDIDATES, 1)[1] if CANDIDATES in conclusion else ""
    mechanism = body.split("（", 1)[1].split("，", 1)[0] if "（" in body else ""
    # An operation's calls: whose, and which, are the case's own.
    if "」调用它（" in mechanism:
        return "调用方在其应答后的后续调用占比下降"
    if "」调用 " in mechanism:
        return f"调用占比{mechanism[-2:]}"
    for said_of_other in (" 看到的", " 的"):
        if said_of_other in mechanism:
            return mechanism.split(said_of_other, 1)[1]
    return mechanism


def report_lines(outcomes: Sequence[CaseOutcome]) -> list[str]:
    lines = [
        f"{'system / fault type':<34}{'n':>4}  {'product AS@1':>13}{'AS@3':>8}  {'baseline AS@1':>14}{'AS@3':>8}"
        f"  {'Nezha AS@1':>11}{'AS@3':>8}"
    ]
    for key, system in SYSTEMS.items():
        mine = [o for o in outcomes if o.system == key]
        if not mine:
            continue
        groups = [(system.name, mine)] + [
            (f"  {kind}", [o for o in mine if o.fault.kind == kind])
            for kind in sorted({o.fault.kind for o in mine})
        ]
        # A baseline holding an earlier fault at the same service moved with it already.
        groups += [
            (label, group)
            for label, group in (
                ("  first at its service", [o for o in mine if not o.follows_own]),
                ("  after one at its service", [o for o in mine if o.follows_own]),
            )
            if group
        ]
        for label, group in groups:
            published = system.published if label == system.name else None
            lines.append(_row(label, group, published))
    seconds = [o.seconds for o in outcomes]
    if seconds:
        queries = [o.queries for o in outcomes]
        patterns = [o.pattern_queries for o in outcomes]
        services = ", ".join(
            f"{system.name} {max(o.services for o in outcomes if o.system == key)}"
            for key, system in SYSTEMS.items()
            if any(o.system == key for o in outcomes)
        )
        lines.append(
            f"wall time per case: median {statistics.median(seconds):.2f}s, max {max(seconds):.2f}s "
            f"(n={len(seconds)}); PromQL queries per case: median {statistics.median(queries):g}, max {max(queries)}; "
            f"line-pattern queries per case: median {statistics.median(patterns):g}, max {max(patterns)}; "
            f"services investigated: {services}"
        )
        verdicts = Counter(o.verdict for o in outcomes)
        strangers = sorted({name for o in outcomes for name in o.strangers})
        lines.append(
            f"verdicts: {', '.join(f'{v} {n}' for v, n in verdicts.most_common())}; candidates naming no "
            f"service of the data: {sum(len(o.strangers) for o in outcomes)}{f' ({strangers})' if strangers else ''}"
        )
    lines.append("what the first candidate rested on where it was right (per system and fault type):")
    for key, system in SYSTEMS.items():
        for kind in sorted({o.fault.kind for o in outcomes if o.system == key}):
            hits = [o for o in outcomes if o.system == key and o.fault.kind == kind and o.hit(o.product, 1)]
            counted = Counter(lead_mechanism(o.conclusion) for o in hits).most_common()
            said = "、".join(f"{mechanism or '-'} ×{count}" for mechanism, count in counted) or "-"
            lines.append(f"  {system.name} {kind}: {said}")
    return lines


def _row(label: str, group: Sequence[CaseOutcome], published: tuple[float, float] | None) -> str:
    def share(ranking: Callable[[CaseOutcome], Sequence[str]], k: int) -> str:
        hits = sum(o.hit(ranking(o), k) for o in group)
        return f"{hits}/{len(group)} {100 * hits / len(group):5.1f}%"

    nezha = f"{published[0]:>10.2f}%{published[1]:>7.2f}%" if published else f"{'-':>11}{'-':>8}"
    return (
        f"{label:<34}{len(group):>4}  {share(lambda o: o.product, 1):>13} {share(lambda o: o.product, 3):>13}"
        f"  {share(lambda o: o.baseline, 1):>13} {share(lambda o: o.baseline, 3):>13}  {nezha}"
    )
