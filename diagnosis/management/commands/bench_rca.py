"""`manage.py bench_rca --nezha DIR [--system ob|tt] [--limit N] [--cases ID…]`: root-cause accuracy
on the Nezha benchmark (FSE'23), read where its data lie.

Per day a real Prometheus over the day's metrics (Debian's `promtool` and `prometheus`), per
injected fault the product asked "根因是哪个服务？" in-process on a throwaway database, its first
candidate scored against the injected pod's service: one line per case, then AS@1 / AS@3 per system
and fault type, product beside a simple baseline and Nezha's published figures, and the wall time
per case. See `diagnosis.evaluation.nezha.bench`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from diagnosis.evaluation.database import throwaway_database
from diagnosis.evaluation.nezha.bench import (
    ASKED_AFTER,
    BASELINE,
    SYSTEMS,
    BenchOptions,
    bench_run,
    case_line,
    report_lines,
)
from diagnosis.evaluation.nezha.data import NezhaDataError
from diagnosis.evaluation.nezha.prometheus import PrometheusError


class Command(BaseCommand):
    help = "Root-cause accuracy (AS@1, AS@3) on the Nezha benchmark, product beside a baseline and Nezha."

    def add_arguments(self, parser):
        parser.add_argument(
            "--nezha", required=True, type=Path, help="the Nezha data folder (holding rca_data/)"
        )
        parser.add_argument("--system", choices=sorted(SYSTEMS), action="append", help="default: both")
        parser.add_argument("--limit", type=int, help="at most N faults per system")
        parser.add_argument("--cases", nargs="+", default=[], help="case ids such as 2022-08-22T035354")
        parser.add_argument(
            "--asked-after", type=int, default=int(ASKED_AFTER.total_seconds() // 60),
            help="minutes after the injection the question is asked",
        )  # fmt: skip
        parser.add_argument(
            "--baseline", type=int, default=int(BASELINE.total_seconds() // 60),
            help="minutes before the onset the baseline compares with",
        )  # fmt: skip
        parser.add_argument("--engine", choices=["rules", "llm"], default="rules")
        parser.add_argument(
            "--nezha-repo", type=Path,
            help="the Nezha repository (a folder or its bare git directory): its traces as span metrics (and TrainTicket's as service-graph latency), its log files behind a Loki stand-in",
        )  # fmt: skip

    def _case_written(self, outcome, options) -> None:
        self.stdout.write(case_line(outcome))
        # Verbose: the conclusion the ranking was read from.
        if options["verbosity"] >= 2:
            self.stdout.write(f"    {outcome.conclusion}")

    def handle(self, *args, **options):
        root = options["nezha"]
        root = root / "rca_data" if (root / "rca_data").is_dir() else root
        repository = options["nezha_repo"]
        if repository is not None and not repository.is_dir():
            raise CommandError(f"找不到 Nezha 仓库：{repository}")
        if not root.is_dir():
            raise CommandError(f"找不到 Nezha 数据目录：{options['nezha']}")
        bench = BenchOptions(
            root=root,
            systems=options["system"] or list(SYSTEMS),
            limit=options["limit"],
            cases=options["cases"],
            asked_after=timedelta(minutes=options["asked_after"]),
            baseline=timedelta(minutes=options["baseline"]),
            engine=options["engine"],
            repository=options["nezha_repo"],
        )
        try:
            with throwaway_database(on_disk=True):
                outcomes = bench_run(bench, on_case=lambda outcome: self._case_written(outcome, options))
        except (NezhaDataError, PrometheusError) as error:
            raise CommandError(str(error)) from error
        if not outcomes:
            raise CommandError("没有选中的故障（--cases 的编号形如 2022-08-22T035354）")
        for line in report_lines(outcomes):
            self.stdout.write(line)
