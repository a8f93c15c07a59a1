"""`manage.py bench_resend`: Alertmanager re-sending a large group to the webhook (prints a table).

On a throwaway database, for each `--alerts` count: the first delivery of a notification with that
many firing alerts, then its re-send (nothing new), through the real webhook view; wall time and
RSS growth of each (re-sends: the fastest of `--resends` and the largest growth). Meant for PostgreSQL (`DATABASE_URL`); on SQLite it runs too.
"""

from django.core.management.base import BaseCommand
from django.db import connection

from aiops.management.resend_load import Delivery, resend_measure
from diagnosis.evaluation.database import throwaway_database


class Command(BaseCommand):
    help = "Time the webhook's first delivery and re-send of large notifications and print the table."

    def add_arguments(self, parser):
        parser.add_argument("--alerts", type=int, nargs="+", default=[300, 1000, 5000])
        parser.add_argument(
            "--resends", type=int, default=3, help="re-sends per count: the fastest time and the largest RSS"
        )

    def handle(self, *args, **options):
        with throwaway_database():
            self.stdout.write(f"{connection.vendor}")
            self.stdout.write("alerts  delivery  status       s  RSS growth MB  episodes")
            for count in options["alerts"]:
                result = resend_measure(
                    alerts=count,
                    tag=f"n{count}",
                    on_first=lambda first, count=count: self._row(count, "first", first),
                )
                self._row(count, "re-send", result.resend)

    def _row(self, count: int, name: str, delivery: Delivery) -> None:
        # Flushed row by row: a slow re-send still shows its first delivery.
        self.stdout.write(
            f"{count:>6}  {name:<8}  {delivery.status_code:>6}  {delivery.seconds:>6.2f}"
            f"  {delivery.rss_growth_mb:>13.1f}  {delivery.body.get('episodes')}"
        )
        self.stdout.flush()
