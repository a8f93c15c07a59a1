"""`manage.py eval [PATH…]`: run the evaluation cases on a throwaway database and print the results.

Every case runs inline through the real pipeline (demo clock pinned, the case's own tool data and,
for the llm engine, its scripted model on the local fake OpenAI-compatible server). Prints one row
per case (expected, got, pass), the failures, and a summary; exits non-zero when any case failed.
"""

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from diagnosis.engines import ENGINE_NAMES
from diagnosis.evaluation.database import logs_quiet, throwaway_database
from diagnosis.evaluation.fixtures import CaseFileError, cases_discover
from diagnosis.evaluation.metrics import summary_build, summary_lines
from diagnosis.evaluation.runner import CaseResult, cases_run

# Wide enough for "LOW_CONFID/LOW_CONFID_WITH_DISCLAIMER".
LABEL = 37


class Command(BaseCommand):
    help = "Run the diagnosis evaluation cases and print verdict accuracy, guard metrics and cost."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*", type=Path, help="case folders or case.yaml files")
        parser.add_argument("--engine", choices=ENGINE_NAMES, help="only the cases of this engine")
        parser.add_argument(
            "--tag", action="append", default=[], help="only cases with this tag (repeatable)"
        )
        parser.add_argument(
            "--exclude-tag", action="append", default=[], help="skip cases with this tag (repeatable)"
        )
        parser.add_argument("--json", type=Path, metavar="FILE", help="also write every result as JSON")

    def handle(self, *args, **options):
        try:
            cases = cases_discover(options["paths"] or None)
        except CaseFileError as exc:
            raise CommandError(str(exc)) from exc
        cases = [
            case
            for case in cases
            if (not options["engine"] or case.engine == options["engine"])
            and (not options["tag"] or set(options["tag"]) & set(case.tags))
            and not set(options["exclude_tag"]) & set(case.tags)
        ]
        if not cases:
            raise CommandError("没有符合条件的用例")

        width = max(len(case.name) for case in cases)
        self.stdout.write(f"{'case':<{width}}  {'engine':<6}  {'expected':<{LABEL}}  {'got':<{LABEL}}  pass")
        started = time.perf_counter()
        with throwaway_database(), logs_quiet(quiet=options["verbosity"] < 2):
            results = cases_run(cases, on_result=lambda result: self._row(result, width))
        elapsed = time.perf_counter() - started

        failed = [result for result in results if not result.passed]
        for result in failed:
            self.stdout.write(self.style.ERROR(f"\n✗ {result.name} ({result.path})"))
            for failure in result.failures:
                self.stdout.write(f"    - {failure}")
        summary = summary_build(results)
        self.stdout.write("")
        for line in [*summary_lines(summary), f"wall time                      {elapsed:.1f} s"]:
            self.stdout.write(line)
        if options["json"]:
            options["json"].write_text(
                json.dumps(
                    {"summary": summary.as_dict(), "cases": [result.as_dict() for result in results]},
                    ensure_ascii=False,
                    indent=2,
                ),
                encoding="utf-8",
            )
        if failed:
            raise CommandError(f"{len(failed)} 个用例未通过：{', '.join(result.name for result in failed)}")

    def _row(self, result: CaseResult, width: int) -> None:
        mark = self.style.SUCCESS("ok") if result.passed else self.style.ERROR("FAIL")
        self.stdout.write(
            f"{result.name:<{width}}  {result.engine:<6}  {result.expected:<{LABEL}}  {result.got:<{LABEL}}  {mark}"
        )
