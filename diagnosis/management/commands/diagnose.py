"""`manage.py diagnose "<question>"`: run one session inline and print the answer or the trace JSON."""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from diagnosis.engines import ENGINE_NAMES
from diagnosis.management.migrations_state import require_migrated_database
from diagnosis.models import DiagnosisSession
from diagnosis.selectors.trace import session_trace
from diagnosis.serializers import TraceSerializer
from diagnosis.services.sessions import session_start


class Command(BaseCommand):
    help = "Run one diagnosis inline; exit 0 when the session completed (any output type), 1 when it failed."

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument("--engine", choices=ENGINE_NAMES)
        parser.add_argument("--json", action="store_true", help="print the trace JSON instead of the answer")
        parser.add_argument("--session-id")

    def handle(self, *args, **options):
        require_migrated_database()
        try:
            session = session_start(
                query=options["question"],
                engine=options["engine"],
                session_id=options["session_id"],
                run_inline=True,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    TraceSerializer(session_trace(session=session)).data,
                    ensure_ascii=False,
                    indent=2,
                    default=str,
                )
            )
        else:
            self.stdout.write(self._text(session))
        if session.status != DiagnosisSession.Status.COMPLETED:
            raise SystemExit(1)

    def _text(self, session: DiagnosisSession) -> str:
        """A header to read at a glance (what the answer is worth, verdict, groundedness), then the answer."""
        outcome = session.get_output_type_display() or session.get_status_display()
        score = "-" if session.groundedness_score is None else f"{session.groundedness_score:.2f}"
        header = (
            f"{outcome} · 结论 {session.verdict or '-'} · 证据支撑 {score}"
            f"\n[{session.session_id}] {session.status} · {session.output_type or '-'} · 引擎 {session.engine}"
        )
        return f"{header}\n\n{session.answer}"
