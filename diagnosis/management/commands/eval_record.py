"""`manage.py eval_record WORLD --prometheus URL [...]`: record a world from live sources for the eval.

Every question of the cases that use `world: WORLD` (and any `--question`) is asked once with each
engine its cases use (the llm engine against the fake server's honest model, the eval's) against the
live sources through a recording proxy, on a throwaway database and with
the clock pinned; what the sources answered is written to `worlds/WORLD/recording.json`, beside the
runbooks and vocabulary the sessions read, so `manage.py eval` replays the world offline.
`make record-world` starts the integration stack and records the shipped `recorded` world.
"""

from __future__ import annotations

import json
import shutil
from contextlib import nullcontext
from pathlib import Path

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test.utils import override_settings
from django.utils import timezone

from diagnosis.evaluation.database import logs_quiet, throwaway_database
from diagnosis.evaluation.fake_llm import fake_llm_environment
from diagnosis.evaluation.fixtures import VOCABULARY_FILE, WORLDS_DIR, cases_discover
from diagnosis.evaluation.recording import RecordingProxy, recording_subjects
from diagnosis.services.sessions import session_start

WORLD_FILE = "world.yaml"
RUNBOOKS = "runbooks"


def _model(engine: str):
    """The eval's model for an llm case without a script: the fake server's honest one."""
    return fake_llm_environment() if engine == "llm" else nullcontext()


class Command(BaseCommand):
    help = "Record a world for the eval from live Prometheus / Alertmanager / Loki."

    def add_arguments(self, parser):
        parser.add_argument("world", help="the world's folder name under diagnosis/evaluation/worlds")
        parser.add_argument("--prometheus", required=True, help="Prometheus base URL")
        parser.add_argument("--alertmanager", help="Alertmanager base URL")
        parser.add_argument("--loki", help="Loki base URL")
        parser.add_argument("--loki-tenant", help="Loki X-Scope-OrgID")
        parser.add_argument("--runbooks", type=Path, help="runbooks folder, copied into the world")
        parser.add_argument("--vocabulary", type=Path, help="vocabulary file, copied into the world")
        parser.add_argument(
            "--question", action="append", default=[], help="a question to ask besides the cases'"
        )
        parser.add_argument("--out", type=Path, help="the world folder to write (default: worlds/WORLD)")

    def handle(self, *args, **options):
        folder = options["out"] or WORLDS_DIR / options["world"]
        questions = list(
            dict.fromkeys(
                [(case.question, case.engine) for case in cases_discover() if case.world == options["world"]]
                + [(question, "rules") for question in options["question"]]
            )
        )
        if not questions:
            raise CommandError(f"no case uses world {options['world']!r} and no --question was given")
        upstreams = {
            source: url
            for source, url in (
                ("prometheus", options["prometheus"]),
                ("alertmanager", options["alertmanager"]),
                ("loki", options["loki"]),
            )
            if url
        }
        folder.mkdir(parents=True, exist_ok=True)
        self._copy(options["runbooks"], folder / RUNBOOKS)
        if options["vocabulary"]:
            shutil.copyfile(options["vocabulary"], folder / VOCABULARY_FILE)
        recorded_at = timezone.now().replace(microsecond=0)
        with (
            RecordingProxy(upstreams) as proxy,
            throwaway_database(),
            logs_quiet(quiet=options["verbosity"] < 2),
        ):
            overrides = {
                "PROMETHEUS_URL": proxy.url("prometheus"),
                "ALERTMANAGER_URL": proxy.url("alertmanager") if "alertmanager" in upstreams else None,
                "LOKI_URL": proxy.url("loki") if "loki" in upstreams else None,
                "LOKI_TENANT": options["loki_tenant"],
                "RUNBOOKS_DIR": str(folder / RUNBOOKS) if (folder / RUNBOOKS).is_dir() else None,
                "VOCABULARY_FILE": str(folder / VOCABULARY_FILE)
                if (folder / VOCABULARY_FILE).is_file()
                else None,
                "DEMO_NOW": recorded_at.isoformat(),
                "SOURCE_CLASSES": {},
            }
            with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
                for question, engine in questions:
                    # Rolled back like an eval case: the recording is the product, not the sessions.
                    with transaction.atomic(), _model(engine):
                        session = session_start(query=question, engine=engine, run_inline=True)
                        self.stdout.write(f"{session.status:<9} {engine:<5} {question}")
                        transaction.set_rollback(True)
            recording = proxy.recording(recorded_at=recorded_at)
        path = recording.write(folder)
        self._world_file(folder, recording=recording, tenant=options["loki_tenant"])
        self.stdout.write(f"{len(recording.exchanges)} exchanges from {', '.join(upstreams)} → {path}")

    @staticmethod
    def _copy(runbooks: Path | None, target: Path) -> None:
        if runbooks is None or runbooks.resolve() == target.resolve():
            return
        if not runbooks.is_dir():
            raise CommandError(f"--runbooks {runbooks}: not a folder")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(runbooks, target)

    @staticmethod
    def _world_file(folder: Path, *, recording, tenant: str | None) -> None:
        services, alert_services = recording_subjects(
            recording, service_labels=tuple(settings.DIAGNOSIS["SERVICE_LABELS"])
        )
        world = {
            "recording": {"loki_tenant": tenant} if tenant else {},
            "subjects": {
                "services": sorted(services),
                "alerts": [list(pair) for pair in sorted(alert_services)],
            },
        }
        header = (
            "# Recorded by `manage.py eval_record` (see `make record-world`) from live sources at "
            f"{recording.recorded_at.isoformat()}; cases say `world: {folder.name}`.\n"
        )
        (folder / WORLD_FILE).write_text(
            header + yaml.safe_dump(json.loads(json.dumps(world)), allow_unicode=True, sort_keys=False),
            encoding="utf-8",
        )
