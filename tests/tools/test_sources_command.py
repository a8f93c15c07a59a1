"""`manage.py sources` and the webhook-on-demo system check."""

import socket

import pytest
from django.core import checks
from django.core.management import call_command

from tools.checks import WEBHOOK_ON_DEMO

RUNBOOKS = "tests/world/runbooks"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.django_db
def test_with_the_demo_world_every_line_is_ok_or_not_configured_and_it_exits_zero(capsys):
    call_command("sources")

    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [
        "query_alerts",
        "query_promql",
        "query_targets",
        "query_logs",
        "count_logs",
        "query_logql",
        "query_log_patterns",
        "query_trace_calls",
        "query_trace_paths",
        "lookup_knowledge",
        "search_metrics",
    ]
    assert lines[0].split()[1:] == ["demo", "tools/data/demo_world", "ok"]
    assert "unavailable: 需要 DIAGNOSIS_PROMETHEUS_URL" in lines[1]
    assert "unavailable: 需要 DIAGNOSIS_PROMETHEUS_URL" in lines[2]
    # LogQL metric queries need Loki: the demo world's lines are no series.
    assert "unavailable: 需要 DIAGNOSIS_LOKI_URL" in lines[5]
    # Nor are they traces.
    assert "unavailable: 需要 DIAGNOSIS_TEMPO_URL" in lines[7]


@pytest.mark.django_db
def test_an_unreachable_configured_source_is_named_with_its_cause_and_exits_one(settings, capsys):
    down = closed_port_url()
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": down, "RUNBOOKS_DIR": RUNBOOKS}

    with pytest.raises(SystemExit) as exit_info:
        call_command("sources")

    assert exit_info.value.code == 1
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["query_alerts"].split()[1:3] == ["prometheus", down]
    assert "unreachable: 无法连接" in lines["query_alerts"]
    # The folder's malformed runbook is skipped, and said so.
    assert lines["lookup_knowledge"].split()[1:] == [
        "runbooks",
        RUNBOOKS,
        "ok",
        "（跳过",
        "1",
        "个文件，原因见日志警告）",
    ]


@pytest.mark.django_db
def test_runbook_files_the_source_will_not_read_are_counted(settings, capsys, tmp_path):
    folder = tmp_path / "runbooks"
    (folder / "team").mkdir(parents=True)
    (folder / "team" / "disk-full.md").write_text("# Disk full\n\n## Mitigation\n\n1. Free space.\n")
    (folder / "environ.md").symlink_to("/proc/self/environ")
    (folder / "passwd.md").symlink_to("/etc/passwd")
    (folder / "huge.md").write_text("# huge\n" + "x" * 1_000_001)
    (folder / "alias.md").symlink_to(folder / "team" / "disk-full.md")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"RUNBOOKS_DIR": str(folder)}

    call_command("sources")

    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    # Two symlinks out of the folder and one oversized file; the symlink inside it is read.
    assert lines["lookup_knowledge"].split()[1:] == [
        "runbooks",
        str(folder),
        "ok",
        "（跳过",
        "3",
        "个文件，原因见日志警告）",
    ]


@pytest.mark.django_db
def test_a_folder_with_nothing_skipped_is_just_ok(settings, capsys, tmp_path):
    (tmp_path / "disk-full.md").write_text("# Disk full\n\n## Mitigation\n\n1. Free space.\n")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"RUNBOOKS_DIR": str(tmp_path)}

    call_command("sources")

    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["lookup_knowledge"].split()[1:] == ["runbooks", str(tmp_path), "ok"]


def test_the_webhook_with_demo_alerts_is_warned_about(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_TOKEN": "secret"}

    assert WEBHOOK_ON_DEMO in {message.id for message in checks.run_checks()}


def test_the_webhook_with_a_real_alert_source_is_fine(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "ALERTMANAGER_TOKEN": "secret",
        "ALERTMANAGER_URL": "http://am:9093",
    }

    assert WEBHOOK_ON_DEMO not in {message.id for message in checks.run_checks()}
