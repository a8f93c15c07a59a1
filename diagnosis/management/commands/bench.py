"""`manage.py bench`: pipeline throughput and overhead on a throwaway database (prints numbers).

The database is a real one: a temporary SQLite file (never SQLite's in-memory test database, whose
writes cost nothing), or PostgreSQL's `test_<name>` when `DATABASE_URL` points there. For each engine
it runs the demo world's questions inline and reports sessions/s, the p50/p95 of the pipeline's own
overhead per session (wall time minus the model wait measured at the socket, so the SDK's CPU counts
as ours), wall / model time, committed write transactions and queries per session and, for the llm
engine, prompt and completion tokens per stage against the stage's budget and cap, and per session. The llm engine runs against the local fake OpenAI-compatible server
with zero latency, so what it measures is our overhead.

With `--model-latency-ms` (every model reply takes that long), `--tool-latency-ms` (every tool call
takes that long) and `--fan-out` (tool calls in the executor's one tool turn) it also reports how
close a session comes to the time it cannot avoid: wall / (model time + the slowest call of each
tool turn). 1.0 means the tool calls of a turn ran fully in parallel and nothing else cost anything.
"""

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from django.core.management.base import BaseCommand
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from diagnosis.engines.llm.engine import STAGE_SCHEMAS
from diagnosis.evaluation.database import throwaway_database
from diagnosis.evaluation.fake_llm import fake_llm_environment
from diagnosis.evaluation.measure import CommitCounter, SocketWait, server_commits
from diagnosis.models import AgentStep
from diagnosis.services.sessions import session_start
from tools.demo_questions import demo_questions
from tools.evidence.tool import all_tools

QUESTIONS = demo_questions()


class Command(BaseCommand):
    help = "Benchmark the diagnosis pipeline (rules and llm engines) and print the numbers."

    def add_arguments(self, parser):
        parser.add_argument("--sessions", type=int, default=30, help="sessions per engine")
        parser.add_argument("--engine", choices=["rules", "llm"], action="append")
        parser.add_argument("--model-latency-ms", type=float, default=0.0, help="fake model reply latency")
        parser.add_argument("--tool-latency-ms", type=float, default=0.0, help="latency added to every tool")
        parser.add_argument("--fan-out", type=int, default=1, help="tool calls in the executor's tool turn")

    def handle(self, *args, **options):
        engines = options["engine"] or ["rules", "llm"]
        self.tool_latency_ms = options["tool_latency_ms"]
        fake_options = {"latency_s": options["model_latency_ms"] / 1000, "fan_out": options["fan_out"]}
        with throwaway_database(on_disk=True) as name, _slow_tools(self.tool_latency_ms / 1000):
            self.stdout.write(f"database {connection.vendor} {name}")
            for engine in engines:
                with fake_llm_environment(**fake_options) if engine == "llm" else nullcontext():
                    self._bench(engine, options["sessions"])

    def _bench(self, engine: str, count: int) -> None:
        session_start(query=QUESTIONS[0], engine=engine, run_inline=True)  # warm-up: imports, caches
        overheads, queries, commits, pks, ratios = [], [], [], [], []
        wall_total = wait_total = 0.0
        server_before = server_commits()
        started = time.perf_counter()
        for i in range(count):
            counter, socket = CommitCounter(), SocketWait()
            with CaptureQueriesContext(connection) as captured, counter.counting(), socket.measuring():
                t0 = time.perf_counter()
                session = session_start(query=QUESTIONS[i % len(QUESTIONS)], engine=engine, run_inline=True)
                wall_ms = (time.perf_counter() - t0) * 1000
            overheads.append(wall_ms - socket.waited_ms)
            wall_total += wall_ms
            wait_total += socket.waited_ms
            if self.tool_latency_ms:
                ratios.append(wall_ms / (socket.waited_ms + _tool_turns_ms(session)))
            queries.append(len(captured))
            commits.append(counter.commits)
            pks.append(session.pk)
        elapsed = time.perf_counter() - started
        server_after = server_commits()
        self.stdout.write(f"engine={engine} sessions={count}")
        self.stdout.write(f"  sessions/s            {count / elapsed:8.1f}")
        self.stdout.write(f"  overhead p50 (ms)     {_percentile(overheads, 50):8.1f}")
        self.stdout.write(f"  overhead p95 (ms)     {_percentile(overheads, 95):8.1f}")
        self.stdout.write(f"  queries/session mean  {statistics.mean(queries):8.1f}   max {max(queries)}")
        self.stdout.write(f"  commits/session mean  {statistics.mean(commits):8.1f}   max {max(commits)}")
        if server_before is not None and server_after is not None:
            # The server counts every transaction, autocommit reads too, and this command's own queries.
            per_session = (server_after - server_before) / count
            self.stdout.write(f"  pg xact_commit/session {per_session:7.1f}   (reads included)")
        if wait_total:
            self.stdout.write(
                f"  wall / model wait     {wall_total / wait_total:8.2f}   (model wait at the socket)"
            )
        if ratios:
            self.stdout.write(
                f"  wall/(model+tool turns) p50 {_percentile(ratios, 50):6.3f}   p95 {_percentile(ratios, 95):6.3f}"
            )
        if engine == "llm":
            self._tokens(pks)

    def _tokens(self, pks: list[int]) -> None:
        """Per stage (one step = a stage in one round, all its model calls), prompt and completion
        tokens against the stage's budget and cap, then each session's total."""
        steps = AgentStep.objects.filter(session__pk__in=pks, llm_calls__gt=0)
        self.stdout.write(
            f"  {'tokens per step':<16}{'prompt mean':>12}{'max':>7}{'budget':>8}"
            f"{'completion mean':>17}{'max':>7}{'cap/call':>10}"
        )
        for stage, schema in STAGE_SCHEMAS.items():
            rows = list(steps.filter(agent=stage).values_list("prompt_tokens", "completion_tokens"))
            if not rows:
                continue
            prompts, completions = [row[0] for row in rows], [row[1] for row in rows]
            over = "  over budget" if max(prompts) > schema.prompt_tokens else ""
            self.stdout.write(
                f"  {stage:<16}{statistics.mean(prompts):12.0f}{max(prompts):7d}{schema.prompt_tokens:8d}"
                f"{statistics.mean(completions):17.0f}{max(completions):7d}"
                f"{schema.max_completion_tokens:10d}{over}"
            )
        totals = list(
            steps.values("session").annotate(prompt=Sum("prompt_tokens")).values_list("prompt", flat=True)
        )
        if totals:
            self.stdout.write(
                f"  prompt tokens/session  median {statistics.median(totals):6.0f}   "
                f"mean {statistics.mean(totals):6.0f}   max {max(totals)}"
            )


def _percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _tool_turns_ms(session) -> float:
    """The least time the session's tool calls could take: per tool turn, its slowest call (as the
    invocation recorded it). The rules engine calls tools one by one: every call is its own turn."""
    latency = dict(session.tool_invocations.values_list("pk", "latency_ms"))
    total = 0.0
    for step in AgentStep.objects.filter(session=session, agent=AgentStep.Agent.EXECUTOR):
        calls = (step.model_output or {}).get("tool_calls")
        if calls is None:
            total += sum(
                session.tool_invocations.filter(round=step.round).values_list("latency_ms", flat=True)
            )
            continue
        turns: dict[int, float] = {}
        for call in calls:
            turn = call.get("turn", 0)
            turns[turn] = max(turns.get(turn, 0.0), latency.get(call.get("invocation_id"), 0.0))
        total += sum(turns.values())
    return total


@contextmanager
def _slow_tools(latency_s: float) -> Iterator[None]:
    """Every tool takes `latency_s` longer, as a remote source would (the demo world answers at once)."""
    if not latency_s:
        yield
        return
    tools = all_tools()
    for tool in tools:
        tool.run = _delayed(tool.run, latency_s)
    try:
        yield
    finally:
        for tool in tools:
            del tool.run  # the instance attribute; the class's method shows through again


def _delayed(run, latency_s: float):
    def delayed_run(*args, **kwargs):
        time.sleep(latency_s)
        return run(*args, **kwargs)

    return delayed_run
