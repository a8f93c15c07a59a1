"""`manage.py vocabulary`: a starter vocabulary from the configured Prometheus (`--from-prometheus
[--out FILE]`; it extends the shipped vocabulary; metric and alert names that are not names are left
out), a file checked against the format and each PromQL template parsed, its own and those of the file
it extends (`--check FILE`, naming the line of an error), or the format itself as JSON Schema
(`--schema`, the file `tools/data/vocabulary.schema.json`)."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tools.sources.http import SourceError
from tools.sources.prometheus import PrometheusSource
from tools.vocabulary import vocabulary_checked, vocabulary_schema
from tools.vocabulary_source import vocabulary_from_source


class Command(BaseCommand):
    help = "Write a starter vocabulary from Prometheus, check a vocabulary file, or print its JSON Schema."

    def add_arguments(self, parser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--from-prometheus", action="store_true", help="read DIAGNOSIS_PROMETHEUS_URL")
        action.add_argument(
            "--check", metavar="FILE", help="validate a vocabulary file and parse its PromQL templates"
        )
        action.add_argument("--schema", action="store_true", help="print the file format (JSON Schema)")
        parser.add_argument("--out", metavar="FILE", help="with --from-prometheus: write here, not stdout")

    def handle(self, *args, **options) -> None:
        if options["check"]:
            problems = vocabulary_checked(Path(options["check"]))
            if problems:
                raise CommandError("\n".join(problems))
            self.stdout.write(f"{options['check']}: ok")
        elif options["schema"]:
            self.stdout.write(json.dumps(vocabulary_schema(), ensure_ascii=False, indent=2))
        else:
            self._from_prometheus(options["out"])

    def _from_prometheus(self, out: str | None) -> None:
        url = settings.DIAGNOSIS["PROMETHEUS_URL"]
        if not url:
            raise CommandError("--from-prometheus needs DIAGNOSIS_PROMETHEUS_URL")
        source = PrometheusSource(url)
        try:
            # Many small reads of one server (the labels of the metrics a template is written for).
            with source.one_client():
                vocabulary = vocabulary_from_source(
                    metadata=source.data("/api/v1/metadata") or {},
                    metric_names=source.label_values("__name__"),
                    rules=source.alerting_rules(),
                    label_names=lambda series: frozenset(source.label_names(match=series)),
                    quantile_values=lambda summary: source.label_values("quantile", match=summary),
                    service_labels=settings.DIAGNOSIS["SERVICE_LABELS"],
                )
        except SourceError as exc:
            raise CommandError(str(exc)) from exc
        text = json.dumps(
            vocabulary.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, indent=2
        )
        if out:
            Path(out).write_text(text + "\n", encoding="utf-8")
            templates = sum(len(queries) for queries in vocabulary.promql_topics.values())
            self.stdout.write(
                f"{out}: {len(vocabulary.groups)} topics, {templates} templates,"
                f" {len(vocabulary.alert_topics)} alerts (extends the shipped vocabulary)"
            )
        else:
            self.stdout.write(text)
