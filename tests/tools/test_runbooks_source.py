"""`lookup_knowledge` from a runbook folder: plain Markdown works, front matter is
optional, the file stem names an alert, a malformed file is skipped with a warning."""

import logging
import os
import threading
from pathlib import Path

import pytest

from tests.tools.support import record, use_source
from tools.evidence.alerts.source import AlertSource
from tools.sources.runbooks import RunbooksSource, runbooks_read

pytestmark = pytest.mark.django_db
RUNBOOKS = Path(__file__).parents[1] / "world" / "runbooks"


@pytest.fixture
def session():
    from tests.factories import DiagnosisSessionFactory

    return DiagnosisSessionFactory()


@pytest.fixture(autouse=True)
def runbooks(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"RUNBOOKS_DIR": str(RUNBOOKS)}


def test_a_plain_markdown_runbook_is_found_by_its_file_stem(session):
    invocation = record(session, "lookup_knowledge", query="KubePodCrashLooping what to check")

    assert (invocation.source, invocation.source_location) == ("runbooks", str(RUNBOOKS))
    blocks = invocation.output["evidence_blocks"]
    assert blocks[0]["source_document"] == "runbooks/KubePodCrashLooping.md"
    assert blocks[0]["retrieval_layer"] == "L0"
    assert {block["title"] for block in blocks} >= {"Pod is crash looping · Diagnosis"}


def test_front_matter_alerts_and_sub_folders_are_read(session):
    invocation = record(session, "lookup_knowledge", query="PostgresReplicationLag")

    documents = {block["source_document"] for block in invocation.output["evidence_blocks"]}
    assert documents == {"runbooks/databases/postgres-replication.md"}
    assert invocation.output["evidence_blocks"][0]["title"].startswith("Postgres replication lag · ")


def test_an_alerts_runbook_url_names_its_runbook(session):
    invocation = record(
        session, "lookup_knowledge", query="https://wiki.example.org/runbooks/kubepodcrashlooping"
    )

    assert invocation.output["evidence_blocks"][0]["source_document"] == "runbooks/KubePodCrashLooping.md"


def test_a_malformed_runbook_is_skipped_with_a_warning_and_the_others_still_answer(session, caplog):
    with caplog.at_level(logging.WARNING, logger="tools.sources.runbooks"):
        invocation = record(session, "lookup_knowledge", query="KubePodCrashLooping")

    assert invocation.success
    assert any("broken.md" in message for message in caplog.messages)
    assert "runbooks/broken.md" not in {b["source_document"] for b in invocation.output["evidence_blocks"]}


def test_a_missing_folder_is_a_failed_call_naming_it(session, settings, tmp_path):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"RUNBOOKS_DIR": str(tmp_path / "nowhere")}

    invocation = record(session, "lookup_knowledge", query="KubePodCrashLooping")

    assert not invocation.success
    assert f"runbooks {tmp_path / 'nowhere'}" in invocation.error


def test_files_outside_the_folder_special_files_and_oversized_ones_are_never_read(
    session, settings, tmp_path
):
    folder = tmp_path / "runbooks"
    folder.mkdir()
    (folder / "CartLatency.md").write_text("# Cart latency\n\n## Diagnosis\n\n1. Check the p99 panel.\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("OPENAI_API_KEY=sk-leaked\n")
    (folder / "environ.md").symlink_to(secret)
    (folder / "passwd.md").symlink_to("/etc/passwd")
    (folder / "huge.md").write_text("# huge\n" + "x" * 1_000_001)
    (folder / "inside.md").symlink_to(folder / "CartLatency.md")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"RUNBOOKS_DIR": str(folder)}

    for query in ("environ 怎么处理？", "passwd", "huge", "CartLatency"):
        invocation = record(session, "lookup_knowledge", query=query)
        dumped = repr(invocation.output)
        assert "sk-leaked" not in dumped and "root:x:0" not in dumped and "xxxxxxxx" not in dumped
    documents = {b["source_document"] for b in invocation.output["evidence_blocks"]}
    assert documents <= {"runbooks/CartLatency.md", "runbooks/inside.md"}
    assert "runbooks/CartLatency.md" in documents


def test_a_runbook_swapped_with_a_link_out_of_the_folder_is_never_read_through_it(tmp_path):
    """A thread swaps the first runbook of a team's 100 for a link to a file outside and back while the
    folder is read 100 times: the outside file's text is never returned. (Checking each path, then
    reading each, read it about 30 times in 100: the check of the other 99 is the window.)"""
    folder = tmp_path / "runbooks"
    folder.mkdir()
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nOPENAI_API_KEY=sk-outside-the-folder\n")
    runbook, text = folder / "AppLatency.md", "# App latency\n\n1. Check the p99 panel.\n"
    runbook.write_text(text)
    for index in range(100):
        (folder / f"team-{index:03}.md").write_text(f"# Runbook {index}\n\n1. Check panel {index}.\n")
    stop = threading.Event()

    def swap() -> None:
        link, copy = folder / ".swap-link", folder / ".swap-file"
        while not stop.is_set():
            link.symlink_to(outside)
            os.replace(link, runbook)
            copy.write_text(text)
            os.replace(copy, runbook)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        reads = [RunbooksSource(str(folder)).knowledge_blocks() for _ in range(100)]
    finally:
        stop.set()
        swapper.join()

    contents = [block.content for blocks in reads for block in blocks]
    assert not [content for content in contents if "sk-outside-the-folder" in content]
    assert any("p99 panel" in content for content in contents)


def test_links_are_read_as_the_runbook_of_the_folder_they_name_and_linked_folders_not_at_all(
    tmp_path, caplog
):
    folder, outside = tmp_path / "runbooks", tmp_path / "elsewhere"
    (folder / "team").mkdir(parents=True)
    outside.mkdir()
    (folder / "team" / "disk-full.md").write_text("# Disk full\n\n1. Free space.\n")
    (outside / "secret.md").write_text("# Secret\n\nsk-in-a-linked-folder\n")
    (folder / "DiskFull.md").symlink_to("team/disk-full.md")
    (folder / "team" / "up.md").symlink_to("../../elsewhere/secret.md")
    (folder / "linked").symlink_to(outside)

    with caplog.at_level(logging.WARNING, logger="tools.sources.runbooks"):
        blocks, skipped = runbooks_read(folder)

    assert {block.source_document: block.content for block in blocks} == {
        "runbooks/DiskFull.md": "1. Free space.",
        "runbooks/team/disk-full.md": "1. Free space.",
    }
    assert skipped == 2
    assert any("team/up.md" in message for message in caplog.messages)
    assert any("linked" in message and "links are not followed" in message for message in caplog.messages)


# --- Whole sessions: an alert's runbook_url, and a hostile folder ----------------------------------

# An alert whose runbook file's name does not name it, on two worlds of names.
RUNBOOK_URL_WORLDS = {
    "cart": ("CartApiHighLatency", "cart-api", "team-cart/cart-latency-7f3a.md"),
    "ledger": ("LedgerWriteErrors", "ledger", "finance/ledger/write-errors.md"),
}


class UrlAlerts(AlertSource):
    """A team's alert source (a plugin, as sources are): one firing alert whose `runbook_url` names
    a file of the runbook folder, set by `settings.DIAGNOSIS["TEST_RUNBOOK_ALERT"]`."""

    def provenance(self) -> tuple[str, str]:
        return "test-alerts", "tests"

    def _alert(self) -> tuple[str, str, str]:
        from django.conf import settings

        return settings.DIAGNOSIS["TEST_RUNBOOK_ALERT"]

    def query_alerts(self, *, service, alert_name, now):
        from tools.records import labelled_alert_record

        name, owner, url = self._alert()
        if (service and service != owner) or (alert_name and alert_name != name):
            return []
        return [
            labelled_alert_record(
                labels={"alertname": name, "service": owner, "severity": "warning"},
                annotations={"description": f"{name} firing", "runbook_url": url},
                state="firing",
                started=now,
                now=now,
                value="1",
            )
        ]

    def inventory(self, *, now):
        from tools.inventory import SourceInventory

        name, owner, _ = self._alert()
        return SourceInventory(services={owner}, alerts={name})


def trace_text(session) -> str:
    import json

    from diagnosis.selectors.trace import session_trace
    from diagnosis.serializers import TraceSerializer

    return json.dumps(TraceSerializer(session_trace(session=session)).data, ensure_ascii=False, default=str)


@pytest.mark.parametrize("world", RUNBOOK_URL_WORLDS, ids=list(RUNBOOK_URL_WORLDS))
def test_a_runbook_question_about_an_alert_follows_its_runbook_url_and_quotes_the_first_step(
    world, settings, tmp_path
):
    from diagnosis.services.sessions import session_start

    alert, owner, relative = RUNBOOK_URL_WORLDS[world]
    runbook = tmp_path / relative
    runbook.parent.mkdir(parents=True)
    runbook.write_text(
        "# Latency or errors\n\n## Meaning\n\nRequests are slow or fail.\n\n"
        "## Diagnosis\n\n1. Check the p99 panel of the service.\n2. Compare with the last deploy.\n"
    )
    (tmp_path / "other.md").write_text("# Other\n\n## Diagnosis\n\n1. Check another thing for latency.\n")
    url = f"https://git.example.org/ops/runbooks/blob/main/{relative.upper()}"
    use_source(settings, UrlAlerts, AlertSource)
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "RUNBOOKS_DIR": str(tmp_path),
        "TEST_RUNBOOK_ALERT": (alert, owner, url),
    }

    session = session_start(query=f"{alert} 的 runbook 第一步要检查什么？", engine="rules", run_inline=True)

    conclusion = session.answer.splitlines()[0]
    assert conclusion.startswith("结论：处理手册《Latency or errors · Diagnosis》：1. Check the p99 panel")
    assert f"来源 runbooks/{relative}" in conclusion
    assert session.verdict == "PASS"


def test_symlinked_secrets_never_reach_an_answer_or_a_trace(settings, tmp_path):
    from diagnosis.services.sessions import session_start

    folder = tmp_path / "runbooks"
    folder.mkdir()
    (folder / "CartLatency.md").write_text("# Cart latency\n\n## Diagnosis\n\n1. Check the p99 panel.\n")
    secret = tmp_path / "environ"
    secret.write_text("OPENAI_API_KEY=sk-leaked-through-runbooks\nDJANGO_SECRET_KEY=do-not-show\n")
    (folder / "environ.md").symlink_to(secret)
    (folder / "passwd.md").symlink_to("/etc/passwd")
    url = "https://git.example.org/ops/runbooks/blob/main/passwd"
    use_source(settings, UrlAlerts, AlertSource)
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "RUNBOOKS_DIR": str(folder),
        "TEST_RUNBOOK_ALERT": ("CartApiHighLatency", "cart-api", url),
    }

    for question in (
        "environ 怎么处理？",
        "passwd 的 runbook",
        "CartApiHighLatency 的 runbook 第一步要检查什么？",
    ):
        session = session_start(query=question, engine="rules", run_inline=True)

        shown = session.answer + trace_text(session)
        assert session.status == session.Status.COMPLETED
        for leaked in ("sk-leaked-through-runbooks", "do-not-show", "root:x:0", "environ.md", "passwd.md"):
            assert leaked not in shown, (question, leaked)
