"""`manage.py export_case SESSION_ID [--out DIR]`: write a reviewed session as an evaluation case."""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from diagnosis.evaluation.case_export import case_export
from diagnosis.evaluation.fixtures import CASE_FILE, CASES_DIR
from diagnosis.models import DiagnosisSession


class Command(BaseCommand):
    help = "Export a completed (ideally reviewed) session as a regression case for `manage.py eval`."

    def add_arguments(self, parser):
        parser.add_argument("session_id")
        parser.add_argument(
            "--out",
            type=Path,
            default=CASES_DIR,
            help="folder to create the case folder in (default: shipped cases)",
        )

    def handle(self, *args, **options):
        try:
            session = DiagnosisSession.objects.get(session_id=options["session_id"])
        except DiagnosisSession.DoesNotExist:
            raise CommandError(f"会话 {options['session_id']} 不存在") from None
        try:
            exported = case_export(session=session)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        path = options["out"] / exported.name / CASE_FILE
        if path.exists():
            raise CommandError(f"{path} 已存在；删除它或用 --out 换个目录")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(exported.text, encoding="utf-8")
        self.stdout.write(str(path))
