"""`manage.py bench`: pipeline throughput and overhead on a throwaway database (prints numbers).

For each engine it runs the demo world's questions inline and reports sessions/s, the p50/p95 of the
pipeline's own overhead per session (wall time minus time spent waiting for the model), database
queries per session and, for the llm engine, prompt tokens per stage. The llm engine runs against the
local fake OpenAI-compatible server with zero latency, so what it measures is our overhead.
"""

import statistics
import time
from contextlib import nullcontext

from django.core.management.base import BaseCommand
from django.db import connection
from django.db.models import Avg, Sum
from django.test.utils import CaptureQueriesContext

from diagnosis.evaluation.database import throwaway_database
from diagnosis.evaluation.fake_llm import fake_llm_environment
from diagnosis.models import AgentStep
from diagnosis.services.sessions import session_start
from tools.world import demo_questions

QUESTIONS = demo_questions()


class Command(BaseCommand):
    help = "Benchmark the diagnosis pipeline (rules and llm engines) and print the numbers."

    def add_arguments(self, parser):
        parser.add_argument("--sessions", type=int, default=30, help="sessions per engine")
        parser.add_argument("--engine", choices=["rules", "llm"], action="append")

    def handle(self, *args, **options):
        engines = options["engine"] or ["rules", "llm"]
        with throwaway_database():
            for engine in engines:
                with fake_llm_environment() if engine == "llm" else nullcontext():
                    self._bench(engine, options["sessions"])

    def _bench(self, engine: str, count: int) -> None:
        session_start(query=QUESTIONS[0], engine=engine, run_inline=True)  # warm-up: imports, caches
        overheads, queries, pks = [], [], []
        started = time.perf_counter()
        for i in range(count):
            with CaptureQueriesContext(connection) as captured:
                t0 = time.perf_counter()
                session = session_start(query=QUESTIONS[i % len(QUESTIONS)], engine=engine, run_inline=True)
                wall_ms = (time.perf_counter() - t0) * 1000
            waited = AgentStep.objects.filter(session=session).aggregate(w=Sum("llm_wait_ms"))["w"] or 0
            overheads.append(wall_ms - waited)
            queries.append(len(captured))
            pks.append(session.pk)
        elapsed = time.perf_counter() - started
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
        if engine == "llm":
            for row in tokens:
                self.stdout.write(f"  prompt tokens {row['agent']:<10} {row['prompt']:8.0f} per step")


def _percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]
