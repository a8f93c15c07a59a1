"""`manage.py replay SESSION_ID`: a line per recorded call with same / changed / failed, the
differences under it, a count; exit 1 (CommandError) when a call failed or the session is unknown."""

import pytest
from django.core.management import CommandError, call_command

from tests.tools.support import BrokenLogs, pin_demo_now, record, use_source
from tools.evidence.logs.source import LogSource

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pinned_clock(settings):
    pin_demo_now(settings)


def test_an_unchanged_session_prints_same_for_each_call_and_exits_zero(either_world, session, capsys):
    alerts = record(session, "query_alerts")
    logs = record(session, "query_logs", query="error")

    call_command("replay", session.session_id)

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"#{alerts.pk} query_alerts {{}} · ") and lines[0].endswith(": same")
    assert lines[1].startswith(f'#{logs.pk} query_logs {{"query": "error"}} · ') and lines[1].endswith(
        ": same"
    )
    assert lines[2] == "2 个调用：2 same，0 changed，0 failed"


def test_a_failed_call_prints_its_error_and_exits_non_zero(session, settings, capsys):
    alerts = record(session, "query_alerts", service="order-service")
    logs = record(session, "query_logs", query="timeout", service="order-service")
    use_source(settings, BrokenLogs, LogSource)

    with pytest.raises(CommandError, match="1 个调用重放失败"):
        call_command("replay", session.session_id)

    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0]
        == f'#{alerts.pk} query_alerts {{"service": "order-service"}} · 演示数据 tools/data/demo_world: same'
    )
    assert lines[1].startswith(f"#{logs.pk} query_logs ") and lines[1].endswith(": failed")
    assert lines[2] == "    ConnectionError: 日志服务连接超时"
    assert lines[3] == "2 个调用：1 same，0 changed，1 failed"


def test_an_unknown_session_is_refused():
    with pytest.raises(CommandError, match="会话 no-such-session 不存在"):
        call_command("replay", "no-such-session")
