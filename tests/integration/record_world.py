"""`make record-world`: start the integration stack (real Prometheus, Alertmanager, node_exporter and
the test Loki server over the second world's lines) and record the eval's `recorded` world from it
with `manage.py eval_record`, then write its `rec-*` cases with the values the recording holds
(`recorded_cases.py`). Run it again after changing what the tools ask."""

import os
import sys

import django


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DIAGNOSIS_DEV", "1")
    django.setup()
    from django.core.management import call_command

    from tests.integration.recorded_cases import WORLD as WORLD_FOLDER
    from tests.integration.recorded_cases import Recorded, cases_write
    from tests.integration.stack import team_sources_running

    with team_sources_running() as sources:
        call_command("eval_record", "recorded", *sources, *sys.argv[1:])
    written = cases_write(Recorded(WORLD_FOLDER))
    print(f"{written} rec-* cases written from the recording")


if __name__ == "__main__":
    main()
