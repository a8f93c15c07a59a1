"""`manage.py bench_bounds`: one PromQL call over a huge answer, unbounded and bounded (prints a table).

A loopback HTTP server answers `/api/v1/query` with a Prometheus answer of `--megabytes` MB (every
series of one high-cardinality metric; the server ignores the query's `limit`). Twice, each in a child process of its own
(so each has its own RSS) on a throwaway database: with the output bounds made huge (as before they
existed), then as configured. Each child makes `--calls` MCP `query_promql` calls through the real
recording path, reads the last session back through the API's trace and MCP `session_trace`, and
reports the stored bytes per invocation, the bytes returned to the MCP client, the trace bytes, the
seconds per call and its RSS; the table puts both side by side with their ratio.
"""

import json
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import override_settings

from diagnosis.evaluation.database import throwaway_database
from mcp_server.management.bounds_load import MB, bounds_measure, prometheus_answer, prometheus_serving

# The bounds as good as absent: what a call stored before they existed.
UNBOUNDED = {
    "OUTPUT_MAX_SERIES": 10**12,
    "OUTPUT_MAX_POINTS": 10**12,
    "OUTPUT_MAX_LINES": 10**12,
    "OUTPUT_MAX_RECORDS": 10**12,
    "OUTPUT_MAX_BYTES": 10**15,
}
MODES = ("unbounded", "bounded")
ROWS = (
    ("stored per invocation", "stored_bytes"),
    ("returned to the MCP client", "returned_bytes"),
    ("API trace (page 1)", "api_trace_bytes"),
    ("MCP session_trace", "mcp_trace_bytes"),
)


class Command(BaseCommand):
    help = "Measure a PromQL call over a huge answer with the output bounds huge and as configured."

    def add_arguments(self, parser):
        parser.add_argument("--megabytes", type=float, default=15.0, help="size of the Prometheus answer")
        parser.add_argument("--calls", type=int, default=3, help="query_promql calls per setting")
        # The child's side: one setting measured against the parent's server, printed as JSON.
        parser.add_argument("--child", choices=MODES, help="internal: measure one setting")
        parser.add_argument("--prometheus-url", help="internal: the parent's server")

    def handle(self, *args, **options):
        if options["child"]:
            self._child(mode=options["child"], url=options["prometheus_url"], calls=options["calls"])
            return
        answer, series = prometheus_answer(megabytes=options["megabytes"], at=time.time())
        with prometheus_serving(answer) as url:
            results = {mode: self._run_child(mode=mode, url=url, calls=options["calls"]) for mode in MODES}
        self.stdout.write(
            f"{connection.vendor}: Prometheus answer {len(answer) / MB:.1f} MB, {series} series; "
            f"{options['calls']} calls each; bounded = OUTPUT_MAX_BYTES "
            f"{settings.DIAGNOSIS['OUTPUT_MAX_BYTES']}, {settings.DIAGNOSIS['OUTPUT_MAX_SERIES']} series"
        )
        self.stdout.write(f"{'':<34}{'unbounded':>14}{'bounded':>14}{'ratio':>10}")
        for label, key in ROWS:
            before, after = results["unbounded"][key], results["bounded"][key]
            self.stdout.write(
                f"{label + ' (MB)':<34}{before / MB:>14.3f}{after / MB:>14.3f}{before / max(after, 1):>9.0f}x"
            )
        for label, key in (
            ("seconds per call", "seconds_per_call"),
            ("RSS before the calls (MB)", "rss_before_mb"),
            ("peak RSS (MB)", "peak_rss_mb"),
        ):
            before, after = results["unbounded"][key], results["bounded"][key]
            self.stdout.write(f"{label:<34}{before:>14.2f}{after:>14.2f}{before / after:>9.1f}x")
        self.stdout.write(
            f"{'truncated':<34}{results['unbounded']['truncated']!s:>14}{results['bounded']['truncated']!s:>14}"
        )

    def _run_child(self, *, mode: str, url: str, calls: int) -> dict:
        done = subprocess.run(
            [
                sys.executable,
                str(settings.BASE_DIR / "manage.py"),
                "bench_bounds",
                "--child",
                mode,
                "--prometheus-url",
                url,
                "--calls",
                str(calls),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise CommandError(f"{mode} run failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def _child(self, *, mode: str, url: str, calls: int) -> None:
        overrides = {"PROMETHEUS_URL": url, "SOURCE_CLASSES": {}, "TRACE_RATE": "1000/min"}
        if mode == "unbounded":
            overrides |= UNBOUNDED
        with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides), throwaway_database(on_disk=True):
            measure = bounds_measure(calls=calls)
        self.stdout.write(json.dumps(measure.as_dict()))
