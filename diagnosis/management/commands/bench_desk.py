"""`manage.py bench_desk`: the reviewer's desk and the session API over a long history (prints a table).

On a throwaway database it writes `--sessions` finished sessions (COPY on PostgreSQL), then opens
the admin list, each filter, the searches, a deep page and the API's first and a deep page, and
prints per request the best and median wall time of `--runs` runs, the queries made, the slowest
query's time and the most table and index pages one query reads (PostgreSQL). Meant for PostgreSQL
(`DATABASE_URL`); on SQLite it runs, but says so.
"""

import time

from django.core.management.base import BaseCommand
from django.db import connection

from diagnosis.evaluation.database import throwaway_database
from diagnosis.management.desk_load import desk_measure, desk_requests, desk_reviewer_client, sessions_seed


class Command(BaseCommand):
    help = "Time the reviewers' admin and the session API over many sessions and print the table."

    def add_arguments(self, parser):
        parser.add_argument("--sessions", type=int, default=100_000)
        parser.add_argument("--runs", type=int, default=5, help="timed runs per request (after one warm-up)")
        parser.add_argument("--payload-bytes", type=int, default=2000, help="size of each self_evaluation")

    def handle(self, *args, **options):
        with throwaway_database():
            started = time.perf_counter()
            sessions_seed(count=options["sessions"], payload_bytes=options["payload_bytes"])
            self.stdout.write(
                f"{connection.vendor}: {options['sessions']} sessions written in "
                f"{time.perf_counter() - started:.1f} s"
            )
            results = desk_measure(
                client=desk_reviewer_client(),
                requests=desk_requests(sessions=options["sessions"]),
                runs=options["runs"],
            )
        width = max(len(result.request.name) for result in results)
        self.stdout.write(
            f"{'request':<{width}}  status  best ms  median ms  queries  slowest SQL ms  most pages"
        )
        for result in results:
            self.stdout.write(
                f"{result.request.name:<{width}}  {result.status_code:>6}  {result.best_ms:>7.1f}"
                f"  {result.median_ms:>9.1f}  {result.queries:>7}  {result.query_ms:>14.1f}"
                f"  {'–' if result.most_pages is None else result.most_pages:>10}"
            )
