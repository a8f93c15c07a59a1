"""`manage.py sources`: one line per evidence tool: tool, source, URL or folder, `ok` or
`unreachable: <cause>`, and how many runbook files were skipped. Exits 1 when a configured source
is unreachable."""

from django.core.management.base import BaseCommand

from tools.sources_report import source_lines


class Command(BaseCommand):
    help = "Show the evidence source of each tool and whether it is reachable."

    def handle(self, *args, **options) -> None:
        lines = source_lines()
        for line in lines:
            self.stdout.write(
                f"{line.tool:<18} {line.source:<24} {line.location:<40} {line.status}"
                + (f" {line.note}" if line.note else "")
            )
        if any(line.configured and not line.ok for line in lines):
            raise SystemExit(1)
