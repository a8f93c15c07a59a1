"""`make record-exporter-world`: start the exporter stack, let its traffic run, then record the eval's
`exporters` world: the questions of `exporter_cases` through `manage.py eval_record` (the product's
requests and the sources' answers, `recording.json`), and the recorder's own truth at the same pinned
instant (`truth.json`: the PromQL of `TRUTH_QUERIES` / `TRUTH_RANGES` and every log line of the
window, asked directly of Prometheus and the Loki server); then write the `rec2-*` cases from both.

    python -m tests.integration.record_exporter_world [--settle SECONDS]
"""

import argparse
import json
import os
import time
from datetime import timedelta

import django
import httpx2


def truth_record(stack, *, at, window_minutes: int) -> dict:
    from tests.integration.exporter_cases import TRUTH_LOG_JOBS, TRUTH_QUERIES, TRUTH_RANGES
    from tests.integration.exporter_stack import LOKI_TENANT

    instant = at.timestamp()
    queries = {
        name: stack.prometheus("/api/v1/query", query=promql, time=instant) | {"query": promql}
        for name, promql in TRUTH_QUERIES.items()
    }
    ranges = {
        name: stack.prometheus(
            "/api/v1/query_range", query=promql, start=instant - minutes * 60, end=instant, step=step
        )
        | {"query": promql, "minutes": minutes}
        for name, (promql, minutes, step) in TRUTH_RANGES.items()
    }
    logs = {}
    for job in TRUTH_LOG_JOBS:
        response = httpx2.get(
            f"{stack.loki.url}/loki/api/v1/query_range",
            params={
                "query": f'{{job="{job}"}}',
                "start": str(int((at - timedelta(minutes=window_minutes)).timestamp() * 1e9)),
                "end": str(int(instant * 1e9)),
                "limit": 1_000_000,
                "direction": "forward",
            },
            headers={"X-Scope-OrgID": LOKI_TENANT},
            timeout=30,
        )
        response.raise_for_status()
        logs[job] = response.json()["data"]
    return {"at": at.isoformat(), "queries": queries, "ranges": ranges, "logs": logs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settle", type=float, default=360.0, help="seconds of traffic before recording")
    settle = parser.parse_args().settle
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DIAGNOSIS_DEV", "1")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from diagnosis.evaluation.recording import Recording
    from tests.integration.exporter_cases import (
        CASES_OF_THE_WORLD,
        TRUTH_FILE,
        WORLD,
        WORLD_NAME,
        Truth,
        cases_write,
        world_subjects,
    )
    from tests.integration.exporter_stack import LOKI_TENANT, RUNBOOKS, exporter_stack_running

    with exporter_stack_running() as stack:
        print(f"exporter stack ready in {stack.start_seconds:.1f} s; traffic for {settle:g} s", flush=True)
        time.sleep(settle)
        questions = [option for case in CASES_OF_THE_WORLD for option in ("--question", case.question)]
        call_command(
            "eval_record", WORLD_NAME,
            "--prometheus", stack.prometheus_url,
            "--alertmanager", stack.alertmanager_url,
            "--loki", stack.loki.url,
            "--loki-tenant", LOKI_TENANT,
            "--runbooks", str(RUNBOOKS),
            *questions,
        )  # fmt: skip
        at = Recording.read(WORLD).recorded_at
        truth = truth_record(stack, at=at, window_minutes=settings.DIAGNOSIS["LOGS_WINDOW_MINUTES"])
    (WORLD / TRUTH_FILE).write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    written = cases_write(Truth.read(WORLD), subjects=world_subjects())
    print(f"{written} rec2-* cases written from the recording and the truth at {at.isoformat()}")


if __name__ == "__main__":
    main()
