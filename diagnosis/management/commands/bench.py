"""`manage.py bench`: pipeline throughput and overhead on a throwaway database (prints numbers).

The database is a real one: a temporary SQLite file (never SQLite's in-memory test database, whose
writes cost nothing), or PostgreSQL's `test_<name>` when `DATABASE_URL` points there. For each engine
it runs the demo world's questions inline and reports sessions/s, the p50/p95 of the pipeline's own
overhead per session (wall time minus the model wait measured at the socket, so the SDK's CPU counts
as ours), wall / model time, committed write transactions and queries per session and, for the llm
engine, prompt tokens per stage. The llm engine runs against the local fake OpenAI-compatible server
with zero latency, so what it measures is our overhead.
"""

import statistics
import time
from contextlib import nullcontext
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import connection
from django.db.models import Avg
from django.test.utils import CaptureQueriesContext

from diagnosis.evaluation.database import throwaway_database
from diagnosis.evaluation.fake_llm import fake_llm_environment
from diagnosis.evaluation.measure import CommitCounter, SocketWait, server_commits
from diagnosis.models import AgentStep
from diagnosis.services.sessions import session_start

# The demo world's questions are data, next to the world they ask about.
QUESTIONS_FILE = Path(__file__).resolve().parents[3] / "tools" / "data" / "demo_world" / "bench_questions.txt"
QUESTIONS = [
    line.strip()
    for line in QUESTIONS_FILE.read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]


class Command(BaseCommand):
    help = "Benchmark the diagnosis pipeline (rules and llm engines) and print the numbers."

    def add_arguments(self, parser):
        parser.add_argument("--sessions", type=int, default=30, help="sessions per engine")
        parser.add_argument("--engine", choices=["rules", "llm"], action="append")

    def handle(self, *args, **options):
        engines = options["engine"] or ["rules", "llm"]
        with throwaway_database(on_disk=True) as name:
            self.stdout.write(f"database {connection.vendor} {name}")
            for engine in engines:
                with fake_llm_environment() if engine == "llm" else nullcontext():
                    self._bench(engine, options["sessions"])

    def _bench(self, engine: str, count: int) -> None:
        session_start(query=QUESTIONS[0], engine=engine, run_inline=True)  # warm-up: imports, caches
        overheads, queries, commits, pks = [], [], [], []
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
            queries.append(len(captured))
            commits.append(counter.commits)
            pks.append(session.pk)
        elapsed = time.perf_counter() - started
        server_after = server_commits()
        tokens = (
            AgentStep.objects.filter(session__pk__in=pks)
            .values("agent")
            .annotate(prompt=Avg("prompt_tokens"))
            .order_by("agent")
        )
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
        if engine == "llm":
            for row in tokens:
                self.stdout.write(f"  prompt tokens {row['agent']:<10} {row['prompt']:8.0f} per step")


def _percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]
