"""`lookup_knowledge` from a runbook folder (contracts §11): plain Markdown works, front matter is
optional, the file stem names an alert, a malformed file is skipped with a warning."""

import logging
from pathlib import Path

import pytest

from tests.tools.support import record

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
