"""`make record-world`: start the integration stack (real Prometheus, Alertmanager, node_exporter and
the test Loki server over the second world's lines) and record the eval's `recorded` world from it
with `manage.py eval_record`, then write its `rec-*` cases with the values the recording holds
(`recorded_cases.py`). Run it again after changing what the tools ask."""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import django

WORLD = Path(__file__).resolve().parents[1] / "world"
# Long enough for a flapping rule to flap and for range queries to have points.
SETTLE_SECONDS = 90


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DIAGNOSIS_DEV", "1")
    django.setup()
    from django.core.management import call_command

    from tests.integration.recorded_cases import WORLD as WORLD_FOLDER
    from tests.integration.recorded_cases import Recorded, cases_write
    from tests.integration.stack import stack_start
    from tests.loki_server import FakeLoki

    with tempfile.TemporaryDirectory(prefix="record-world-") as folder:
        stack = stack_start(Path(folder))
        try:
            time.sleep(SETTLE_SECONDS)
            streams = json.loads((WORLD / "loki_streams.json").read_text())
            with FakeLoki(streams, tenant="team-a") as loki:
                call_command(
                    "eval_record",
                    "recorded",
                    "--prometheus",
                    stack.prometheus_url,
                    "--alertmanager",
                    stack.alertmanager_url,
                    "--loki",
                    loki.url,
                    "--loki-tenant",
                    "team-a",
                    "--runbooks",
                    str(WORLD / "runbooks"),
                    "--vocabulary",
                    str(WORLD / "vocabulary.json"),
                    *sys.argv[1:],
                )
        finally:
            stack.stop()
    written = cases_write(Recorded(WORLD_FOLDER))
    print(f"{written} rec-* cases written from the recording")


if __name__ == "__main__":
    main()
