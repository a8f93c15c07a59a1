"""`manage.py replay SESSION_ID`: the session's calls asked again of today's sources, each with its
recorded request (same query, same time range); per call `same`, `changed` with what differs, or
`failed` with why. Exit 1 when any call failed (or the session does not exist), else 0. Writes nothing."""

import json

from django.core.management.base import BaseCommand, CommandError

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.services.replay import CHANGED, FAILED, SAME, session_replay
from tools.source_names import source_name

# A call's arguments as its line shows them; the receipt on the audit page has the request whole.
ARGUMENTS_CHARS = 120


def call_text(invocation: ToolInvocation) -> str:
    """`#12 query_promql {"query": "up"} · Prometheus http://…`"""
    arguments = json.dumps(invocation.input, ensure_ascii=False)
    if len(arguments) > ARGUMENTS_CHARS:
        arguments = arguments[: ARGUMENTS_CHARS - 1] + "…"
    where = " ".join(part for part in (source_name(invocation.source), invocation.source_location) if part)
    return f"#{invocation.pk} {invocation.tool_name} {arguments}" + (f" · {where}" if where else "")


class Command(BaseCommand):
    help = (
        "Re-run a session's tool calls against today's sources with their recorded requests and print, per "
        "call, same / changed (with the difference) / failed (with the error). Exit 1 if any failed."
    )

    def add_arguments(self, parser):
        parser.add_argument("session_id")

    def handle(self, *args, **options):
        try:
            session = DiagnosisSession.objects.get(session_id=options["session_id"])
        except DiagnosisSession.DoesNotExist:
            raise CommandError(f"会话 {options['session_id']} 不存在") from None
        replays = session_replay(session=session)
        for replay in replays:
            self.stdout.write(f"{call_text(replay.invocation)}: {replay.status}")
            for line in replay.differences:
                self.stdout.write(f"    {line}")
        counts = {status: sum(r.status == status for r in replays) for status in (SAME, CHANGED, FAILED)}
        self.stdout.write(
            f"{len(replays)} 个调用：{counts[SAME]} same，{counts[CHANGED]} changed，{counts[FAILED]} failed"
        )
        if counts[FAILED]:
            raise CommandError(f"{counts[FAILED]} 个调用重放失败")
